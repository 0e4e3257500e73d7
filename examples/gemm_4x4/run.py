"""The three GEMMs on a 4x4 mesh (local-shard, SUMMA, Cannon): compile on CPU, check
against NumPy and print each one's communication report.

    python examples/gemm_4x4/run.py [M N K]

The kernels are in ``meshtensor/tilelang/gemm.py``, written with
``mesh_tensor_functions``; ``meshtensor demo`` runs SUMMA alone with more detail.
"""
import sys

from meshtensor.tilelang.gemm import ALGORITHMS, build_gemm, run_gemm
from meshtensor.tilelang.passes import analyze_mesh_communication, verify_mesh_tensors


def main() -> None:
    M, N, K = (int(v) for v in sys.argv[1:4]) if len(sys.argv) > 3 else (200, 120, 96)
    for alg in ALGORITHMS:
        func = build_gemm(alg, M, N, K)
        assert verify_mesh_tensors(func) == []
        report = analyze_mesh_communication(func)
        run = run_gemm(alg, M, N, K, repeat=1)
        print(f"== {alg}: {M}x{N}x{K}, max error {run.max_abs_error:.1e}, "
              f"remote bytes {report.remote_bytes}, local bytes {report.local_bytes}")
        print(report.table())


if __name__ == "__main__":
    main()
