"""Every demo's output fits 80 columns by default and ``--width`` when given (it was up
to 252 columns wide)."""
import pytest

pytest.importorskip("tilelang")
from meshtensor.cli import main  # noqa: E402

DEMOS = {
    "summa_comm": ["demo", "--size", "64", "--repeat", "1"],
    "cannon_comm": ["demo", "--size", "64", "--repeat", "1", "--algorithm", "cannon_comm"],
    "spmdize-cannon": ["demo", "--size", "64", "--repeat", "1", "--spmdize",
                       "--algorithm", "cannon"],
    "tilelang-mesh": ["demo", "--size", "64", "--repeat", "1", "--tilelang-mesh"],
}


@pytest.mark.slow
@pytest.mark.parametrize("argv", DEMOS.values(), ids=DEMOS.keys())
@pytest.mark.parametrize("width", [None, 60])
def test_demo_output_fits_its_width(argv, width, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(argv + (["--width", str(width)] if width else [])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 10
    assert max(map(len, lines)) <= (width or 80), [ln for ln in lines if len(ln) > (width or 80)]


@pytest.mark.slow
def test_demo_memory_bound_covers_every_demo_kernel():
    """`demo --size` is refused when DEMO_BYTES_PER_ELEMENT * size**2 bytes are not
    available: that constant must cover the host matrices (7 float32) plus the
    per-core workspace of every kernel a demo mode compiles."""
    import tvm
    from meshtensor.cli import DEMO_ALGORITHMS, DEMO_BYTES_BY_ALGORITHM, DEMO_BYTES_PER_ELEMENT
    from meshtensor.tilelang.engine import prepare_tilelang_mesh
    from meshtensor.tilelang.kernels.gemm import build_gemm
    from meshtensor.tilelang.kernels.tilelang_mesh_gemm import matmul
    from meshtensor.tilelang.language import tilelang_mesh as tm
    from meshtensor.tilelang.transform.lower_comm import WORKSPACE_ATTR, LowerMeshComm
    from meshtensor.tilelang.transform.spmdize import spmdize

    n = 256
    funcs = {a: build_gemm(a, n, n, n, 4) for a in DEMO_ALGORITHMS}
    funcs.update({f"spmdize-{a}": spmdize(build_gemm(a, n, n, n, 4))
                  for a in ("summa", "cannon")})
    tm.enable(mesh=(4, 4))  # as the demo does
    funcs["tilelang-mesh"] = prepare_tilelang_mesh(matmul(n, n, n, 32, 32, 16,
                                                          num_stages=2)).func
    for name, f in funcs.items():
        low = LowerMeshComm(workspace="argument")(tvm.IRModule({"main": f}))["main"]
        ws = int(low.attrs[WORKSPACE_ATTR]) if WORKSPACE_ATTR in (low.attrs or {}) else 0
        per = DEMO_BYTES_BY_ALGORITHM.get(name, DEMO_BYTES_PER_ELEMENT)
        assert 7 * 4 * n * n + ws <= per * n * n, (name, ws)
