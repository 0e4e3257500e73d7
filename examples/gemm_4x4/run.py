"""The GEMMs on a 4x4 mesh: the global-view ones (local-shard, SUMMA, Cannon) and the
distributed-memory ones (summa_comm, cannon_comm, ksplit_comm: every core loads only its
own shards, all other data moves through comm ops; splitk_comm and cannon25d_comm, for
shapes the mesh divides). Compile on CPU, check against NumPy and print each one's
communication report.

    python examples/gemm_4x4/run.py [M N K]

The kernels are in ``meshtensor/tilelang/kernels/gemm.py``, written with
``mesh_tensor_functions`` and ``mesh_comm``; ``meshtensor demo`` runs SUMMA alone with
more detail.
"""
import sys

from meshtensor.tilelang.kernels.gemm import ALGORITHMS, COMM_ALGORITHMS, build_gemm, run_gemm
from meshtensor.tilelang.logs import quiet_tilelang
from meshtensor.tilelang import analyze_mesh_communication, verify_mesh_tensors


def main() -> None:
    M, N, K = (int(v) for v in sys.argv[1:4]) if len(sys.argv) > 3 else (200, 120, 96)
    for alg in ALGORITHMS + COMM_ALGORITHMS:
        try:
            func = build_gemm(alg, M, N, K)
        except ValueError as err:  # split-K and 2.5D need shapes the mesh divides
            print(f"== {alg}: skipped for {M}x{N}x{K} ({err})")
            continue
        # the comm kernels touch only their own shards of global memory
        assert verify_mesh_tensors(func, owner_only=alg in COMM_ALGORITHMS) == []
        report = analyze_mesh_communication(func)
        with quiet_tilelang():  # no TileLang INFO lines; MESHTENSOR_TILELANG_LOG=INFO shows them
            run = run_gemm(alg, M, N, K, repeat=1)
        print(f"== {alg}: {M}x{N}x{K}, max error {run.max_abs_error:.1e}, "
              f"remote bytes {report.remote_bytes}, comm bytes {report.comm_bytes}, "
              f"local bytes {report.local_bytes}")
        print(report.table())


if __name__ == "__main__":
    main()
