"""GEMM kernels on a 4x4 mesh and the passes that read mesh_tensor_info."""
import re

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import tvm  # noqa: E402

from meshtensor import Mesh, chunk_bounds  # noqa: E402
from meshtensor.tilelang import mesh_tensor_functions  # noqa: E402
from meshtensor.tilelang.kernels.gemm import build_gemm, run_gemm  # noqa: E402
from meshtensor.tilelang import (AnalyzeMeshCommunication, VerifyMeshTensors,  # noqa: E402
                                        analyze_mesh_communication, verify_mesh_tensors)

MESH = Mesh({"x": 4, "y": 4})
# K = 50: a k tile of 13 runs one unrolled block of the micro-kernel (KU = 8) and 5 tail steps
SIZES = [(64, 64, 64), (30, 22, 50), (50, 37, 19)]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["local", "summa", "cannon"])
@pytest.mark.parametrize("shape", SIZES, ids=["64", "30x22x50", "50x37x19"])
def test_gemm_runs_and_matches_numpy(algorithm, shape):
    r = run_gemm(algorithm, *shape, repeat=1)
    assert r.max_abs_error < 1e-4


def closed_form(algorithm, M, N, K, itemsize=4):
    """Per core (linear order): (local read, remote read, write) bytes, by the algorithm's
    definition, from the ceil-div blocks of A (MxK) and B (KxN)."""
    rm, ck, rk, cn = (np.diff(chunk_bounds(v, 4)) for v in (M, K, K, N))
    out = []
    for i in range(4):
        for j in range(4):
            if algorithm == "local":
                local, remote = rm[i] * K + K * cn[j], 0
            else:  # core (i, j) reads A(i, k) for all k, B(k, j) for all k
                local = rm[i] * ck[j] + rk[i] * cn[j]
                remote = sum(rm[i] * ck[k] + rk[k] * cn[j] for k in range(4)) - local
            out.append((local * itemsize, remote * itemsize, rm[i] * cn[j] * itemsize))
    return out


@pytest.mark.parametrize("algorithm", ["local", "summa", "cannon"])
@pytest.mark.parametrize("shape", SIZES, ids=["64", "30x22x50", "50x37x19"])
def test_communication_matches_closed_form(algorithm, shape):
    r = analyze_mesh_communication(build_gemm(algorithm, *shape))
    pc = r.per_core()
    for c, (local, remote, write) in enumerate(closed_form(algorithm, *shape)):
        assert pc["local_read"][c] == local
        assert pc["remote_read"][c] == remote
        assert pc["local_write"][c] == write and pc["remote_write"][c] == 0
    if algorithm == "summa" and shape == (64, 64, 64):
        # Each core receives (n-1)/n of its A row panel and B column panel.
        panel = 16 * 64 * 4
        assert all(pc["remote_read"] == 2 * panel * 3 // 4)
        # Core (1, 2) reads A(1, k) from (1, k) and B(k, 2) from (k, 2), one block each.
        assert r.by_peer((1, 2)) == {(0, 2): 1024, (1, 0): 1024, (1, 1): 1024, (1, 3): 1024,
                                      (2, 2): 1024, (3, 2): 1024}
        assert r.by_hops((0, 0)) == {0: 2048 + 1024, 1: 2048, 2: 2048, 3: 2048}


def test_summa_and_cannon_move_the_same_bytes_in_another_order():
    s = analyze_mesh_communication(build_gemm("summa", 64, 64, 64))
    c = analyze_mesh_communication(build_gemm("cannon", 64, 64, 64))
    assert s.by_hops() == c.by_hops()
    assert np.array_equal(s.per_core()["remote_read"], c.per_core()["remote_read"])


def test_gemm_kernels_verify_clean():
    for alg in ["local", "summa", "cannon"]:
        assert verify_mesh_tensors(build_gemm(alg, 30, 22, 26)) == []


def misaligned_kernel():
    f = mesh_tensor_functions({"x": 4, "y": 4})
    annotate, mcopy, init = f["annotate_mesh_tensor_info"], f["mesh_tensor_copy"], f["init_mesh_tensor_info"]

    @T.prim_func
    def shifted(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16)), B: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            T.copy(A[bx * 16 + 8:bx * 16 + 24, by * 16:by * 16 + 16], S)  # half a block off
            mcopy(S, B, dst_coord=(bx, by))

    return shifted


def test_misaligned_copy_is_reported():
    issues = verify_mesh_tensors(misaligned_kernel())
    kinds = {i.kind for i in issues}
    assert kinds == {"misaligned", "crosses_cores", "outside"}
    cross = next(i for i in issues if i.kind == "crosses_cores")
    assert cross.buffer == "A" and cross.program == (0, 0) and cross.cores == ((0, 0), (1, 0))
    assert cross.count == 12  # programs of rows 0-2 span two cores; row 3 runs off the tensor
    assert "copy 0 reads A[8:24, 0:16] on program (0, 0)" in cross.message
    mod = tvm.IRModule({"main": misaligned_kernel()})
    with pytest.raises(ValueError, match=r"VerifyMeshTensors: copy 0 reads A\[8:24, 0:16\]"):
        VerifyMeshTensors()(mod)
    with pytest.warns(UserWarning) as caught:
        out = VerifyMeshTensors(on_error="warn")(mod)
    assert len(caught) == 3 and any("spans the shards of cores" in str(w.message) for w in caught)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_unannotated_kernel_is_a_no_op():
    @T.prim_func
    def plain(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1) as (bx,):
            T.copy(A, B)

    mod = tvm.IRModule({"main": plain})
    got = []
    out = AnalyzeMeshCommunication(got.append)(VerifyMeshTensors()(mod))
    tvm.ir.assert_structural_equal(out["main"], plain)
    assert got == [] and analyze_mesh_communication(plain) is None
    assert verify_mesh_tensors(plain) == []


@pytest.mark.slow
def test_passes_run_before_compile_and_attach_summary():
    f = build_gemm("summa", 64, 64, 64)
    reports = []
    mod = AnalyzeMeshCommunication(reports.append)(VerifyMeshTensors()(tvm.IRModule({"gemm": f})))
    (report,) = reports
    attr = mod["gemm"].attrs["mesh_communication"]
    assert int(attr["remote_bytes"]) == report.remote_bytes == 16 * 6144
    kernel = tilelang.compile(mod["gemm"], target="c", compile_flags=["-O3", "-march=native"])
    assert run_gemm("summa", 64, 64, 64, repeat=1, kernel=kernel).max_abs_error < 1e-4
    assert "total" in report.table()


def test_launch_grid_must_match_mesh():
    f = mesh_tensor_functions({"x": 4, "y": 4})

    @T.prim_func
    def wrong(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        f["annotate_mesh_tensor_info"]({A: f["init_mesh_tensor_info"]({"x": 0}, (16, 64))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_shared((16, 64), "float32")
            f["mesh_tensor_copy"](A, S, src_coord=(bx, 0))
            T.copy(S, B[0, 0])

    with pytest.raises(ValueError, match=r"the launch grid \(2, 2\) does not match the mesh \{'x': 4, 'y': 4\}: launch T.Kernel\(4, 4\)"):
        analyze_mesh_communication(wrong)


@pytest.mark.slow
def test_demo_command_runs_the_comm_summa(capsys):
    from meshtensor.cli import main
    assert main(["demo", "--size", "64", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    text = " ".join(out.split())  # prose is wrapped at 80 columns
    assert "summa_comm GEMM" in text and "(ok)" in text
    assert "VerifyMeshTensors(owner_only=True): ok" in text
    assert "comm recv" in text and "'N hop' columns:" in text and "XY routing" in text
    assert "comm 0: broadcast Ao -> Ar over ('y',)" in text and "max link" in text
    assert "A (64, 64) sharding [['x'], ['y']]" in text
    assert "[TileLang" not in out and "pid" not in out
    rate = re.search(r"time ([0-9.]+) (us|ms), ([0-9.e+-]+) GFLOP/s", text)
    assert rate and float(rate.group(3)) > 0 and rate.group(3) != "0.0"
    grid = [line for line in out.splitlines() if line.startswith("   [")][:4]  # A's 4 rows
    starts = {tuple(m.start() for m in re.finditer(r"\[", line)) for line in grid}
    assert len(grid) == 4 and len(starts) == 1  # every row's cells start in the same columns


def test_rate_has_digits_for_tiny_runs():
    from meshtensor.tilelang.demos.gemm_demo import _rate
    assert _rate(2 * 1 ** 3, 2e-6) == "2.0 us, 0.001 GFLOP/s"
    assert _rate(2 * 512 ** 3, 0.0125) == "12.50 ms, 21.5 GFLOP/s"


def test_quiet_tilelang_hides_info_lines_unless_asked(capsys, monkeypatch):
    import logging

    from meshtensor.tilelang.logs import quiet_tilelang
    log = logging.getLogger("tilelang.jit.kernel")
    monkeypatch.delenv("MESHTENSOR_TILELANG_LOG", raising=False)
    with quiet_tilelang():
        log.info("begins to compile (hidden)")
        log.warning("a warning (shown)")
        logging.getLogger("tilelang.cache.kernel_cache").warning(
            "Found kernel 'k' in memory cache. For better performance, ... (hidden)")
    log.info("after the block (shown)")
    monkeypatch.setenv("MESHTENSOR_TILELANG_LOG", "info")
    with quiet_tilelang():
        log.info("asked for (shown)")
    out = capsys.readouterr()
    text = out.out + out.err
    assert "hidden" not in text
    assert all(w in text for w in ("a warning", "after the block", "asked for"))
    assert logging.getLogger("tilelang").level == logging.INFO  # restored
    monkeypatch.setenv("MESHTENSOR_TILELANG_LOG", "LOUD")
    with pytest.raises(ValueError, match="quiet_tilelang: unknown log level 'LOUD'"):
        with quiet_tilelang():
            pass


def test_symbolic_shapes_are_not_silently_skipped():
    f = mesh_tensor_functions({"x": 4, "y": 4})
    m = T.dynamic("m")

    @T.prim_func
    def dyn(A: T.Tensor((m, 16), "float32"), B: T.Tensor((m, 16), "float32")):
        f["annotate_mesh_tensor_info"]({A: f["init_mesh_tensor_info"]({"x": 0}, (4, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((4, 16), "float32")
            f["mesh_tensor_copy"](A, S, src_coord=(bx, 0))
            T.copy(S, B[0, 0])

    with pytest.warns(UserWarning, match="buffer 'A' has a symbolic shape .* its copies are not checked"):
        assert verify_mesh_tensors(dyn) == []
    with pytest.raises(ValueError, match="buffer 'A' has a symbolic shape .* analyse a specialised kernel"):
        analyze_mesh_communication(dyn)
