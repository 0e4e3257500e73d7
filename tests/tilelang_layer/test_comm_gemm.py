"""The distributed-memory GEMMs (summa_comm, cannon_comm, ksplit_comm, splitk_comm,
cannon25d_comm, and the tiled forms of SUMMA and Cannon): their comm ops and, on CPU,
results against NumPy for sizes that do and do not divide by the mesh, square and
rectangular, on even and odd meshes."""
import pytest

pytest.importorskip("tilelang")
from meshtensor.tilelang import find_comm_ops, read_mesh_tensor_info  # noqa: E402
from meshtensor.tilelang.kernels.gemm import (ALGORITHMS, GemmTiles, build_gemm,  # noqa: E402
                                              layouts, run_gemm)
from meshtensor.tilelang import verify_mesh_tensors  # noqa: E402

WHOLE_TILE = ("summa_comm", "cannon_comm", "ksplit_comm")  # any shape
from meshtensor.tilelang import MeshKernel  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", WHOLE_TILE)
@pytest.mark.parametrize("shape", [(64, 64, 64), (50, 37, 19), (1, 1, 1)],
                         ids=["64", "50x37x19", "1x1x1"])
def test_comm_gemm_matches_numpy(algorithm, shape):
    r = run_gemm(algorithm, *shape, repeat=1)
    assert isinstance(r.kernel, MeshKernel)
    assert r.max_abs_error < 1e-4
    # the compiled kernel still shows its source: comm ops and shardings intact
    assert find_comm_ops(r.kernel) and set(read_mesh_tensor_info(r.kernel)) == {"A", "B", "C"}


@pytest.mark.parametrize("algorithm,ops", [
    ("summa_comm", [("broadcast", (1,)), ("broadcast", (0,))]),
    # (the rotations alternate between two pairs of buffers: two shift sites per operand)
    ("cannon_comm", [("permute", (0, 1)), ("permute", (0, 1)), ("shift", (1,)),
                     ("shift", (0,)), ("shift", (1,)), ("shift", (0,))]),
    ("ksplit_comm", [("reduce_scatter", (1,))]),
], ids=WHOLE_TILE)
def test_comm_gemm_ops(algorithm, ops):
    found = find_comm_ops(build_gemm(algorithm, 50, 37, 19))
    assert [(o.op, o.mesh_axes) for o in found] == ops


def test_summa_comm_broadcasts_tiles_from_step_k():
    a, b = find_comm_ops(build_gemm("summa_comm", 64, 64, 64))
    k = a.loops[-1].loop_var
    assert a.root[0].same_as(k) and b.root[0].same_as(k)
    assert a.static_extents() == (16, 16) and b.static_extents() == (16, 16)


@pytest.mark.slow
@pytest.mark.parametrize("mesh", [2, 3])
def test_cannon_comm_on_even_and_odd_meshes(mesh):
    # the last product reads the second pair of buffers when the mesh side is even
    r = run_gemm("cannon_comm", 40, 30, 50, mesh=mesh, repeat=1)
    assert r.max_abs_error < 1e-4


@pytest.mark.slow
def test_ksplit_comm_on_a_wide_panel():
    # B's 512 x 2048 row panel lives on the C stack: a second full copy of it (an
    # earlier chunked layout) overflowed the 8 MiB stack; one 256-column chunk does not
    r = run_gemm("ksplit_comm", 8, 2048, 2048, repeat=1)
    assert r.max_abs_error < 1e-3


def test_cannon_comm_skew_and_rotation():
    pa, pb, sa, sb, sa2, sb2 = find_comm_ops(build_gemm("cannon_comm", 64, 64, 64, mesh=3))
    # row i of A moves left by i: core (i, j) receives from (i, i + j mod 3)
    assert (1 * 3 + 2, 1 * 3 + 1) in pa.params["pairs"]
    assert (2 * 3 + 1, 1 * 3 + 1) in pb.params["pairs"]  # B: (i + j mod 3, j)
    for a, b in ((sa, sb), (sa2, sb2)):  # into the second buffers, and back
        assert dict(a.params) == {"shift_axis": 1, "offset": -1, "rotate": True}
        assert dict(b.params) == {"shift_axis": 0, "offset": -1, "rotate": True}
    assert (sa.src.buffer.name, sa.dst.buffer.name) == ("Ar", "A2")
    assert (sa2.src.buffer.name, sa2.dst.buffer.name) == ("A2", "Ar")


def test_global_view_kernels_keep_their_names_and_layouts():
    assert ALGORITHMS == ("local", "summa", "cannon")
    assert layouts("summa_comm") == layouts("summa")
    assert layouts("ksplit_comm")["B"] == {"x": None, "y": 0}
    with pytest.raises(ValueError, match="unknown GEMM algorithm 'fox'"):
        build_gemm("fox", 8, 8, 8)


# -- the tiled, pipelined forms, split-K and 2.5D ----------------------------------------
TILED_CASES = [
    ("summa_comm", (64, 64, 64), 2, (16, 16, 8)),       # 2 x 2 C blocks, 8 panels
    ("summa_comm", (48, 96, 72), 3, (8, 16, 4)),        # rectangular, odd mesh
    ("summa_comm", (32, 32, 32), 1, (16, 16, 16)),      # one core
    ("cannon_comm", (64, 64, 64), 2, (16, 32, 1)),
    ("cannon_comm", (48, 96, 72), 3, (8, 16, 1)),
    ("splitk_comm", (64, 32, 64), 2, (16, 16, 4)),      # 8 blocks: both buffer pairs
    ("splitk_comm", (36, 40, 54), 3, (18, 8, 2)),
]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,shape,mesh,tiles", TILED_CASES,
                         ids=[f"{a}-{'x'.join(map(str, s))}-{n}" for a, s, n, _ in TILED_CASES])
def test_tiled_gemms_match_numpy(algorithm, shape, mesh, tiles):
    r = run_gemm(algorithm, *shape, mesh=mesh, tiles=tiles, repeat=1)
    assert r.max_abs_error < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("shape,mesh,copies", [((32, 32, 64), 4, 4), ((48, 32, 64), 4, 4),
                                               ((64, 64, 128), 8, 4), ((32, 64, 256), 8, 16),
                                               ((32, 16, 32), 4, 1)],
                         ids=["4x4-c4", "4x4-c4-rect", "8x8-c4", "8x8-c16", "4x4-c1"])
def test_cannon25d_matches_numpy(shape, mesh, copies):
    from meshtensor.tilelang.kernels.gemm import compile_mesh_kernel
    import numpy as np
    import torch
    k = compile_mesh_kernel(build_gemm("cannon25d_comm", *shape, mesh=mesh, copies=copies))
    M, N, K = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = torch.zeros((M, N))
    k(torch.from_numpy(a), torch.from_numpy(b), c)
    assert np.abs(c.numpy() - a @ b).max() < 1e-4


def test_tiled_kernels_comm_ops_and_layouts():
    f = build_gemm("summa_comm", 64, 64, 64, mesh=2, tiles=(16, 16, 8))
    ops = find_comm_ops(f)
    # the first panel's pair, then the pairs into each buffer (double-buffered)
    assert [(o.op, o.mesh_axes) for o in ops] == [("broadcast", (1,)), ("broadcast", (0,))] * 3
    assert [(o.src.buffer.name, o.dst.buffer.name) for o in ops] == [
        ("As0", "Ar0"), ("Bs0", "Br0"), ("As1", "Ar1"), ("Bs1", "Br1"), ("As0", "Ar0"),
        ("Bs0", "Br0")]
    assert verify_mesh_tensors(f, owner_only=True) == []  # roots load their own shards
    c = build_gemm("cannon_comm", 64, 64, 64, mesh=2, tiles=(16, 32, 1))
    assert [o.op for o in find_comm_ops(c)] == ["permute"] * 2 + ["shift"] * 4
    assert verify_mesh_tensors(c, owner_only=True) == []
    k = build_gemm("splitk_comm", 64, 32, 64, mesh=2)
    (rs,) = find_comm_ops(k)[:1]
    assert (rs.op, rs.mesh_axes, dict(rs.params)) == ("reduce_scatter", (0, 1),
                                                      {"scatter_axis": 0, "reduction": "sum"})
    assert layouts("splitk_comm") == {"A": {"x": 1, "y": 1}, "B": {"x": 0, "y": 0}}
    d = build_gemm("cannon25d_comm", 64, 64, 128, mesh=4, copies=4)
    assert [o.op for o in find_comm_ops(d)] == ["permute"] * 6  # 2 rotation sites x 2, 2 rounds


@pytest.mark.parametrize("call,message", [
    pytest.param(lambda: build_gemm("summa_comm", 64, 64, 64, mesh=4, tiles=(12, 16, 16)),
                 r"summa_comm: tile bm = 12 must divide 16 .the per-core extent it blocks.; "
                 r"e.g. bm = 8", id="tile-not-dividing"),
    pytest.param(lambda: build_gemm("summa_comm", 50, 64, 64, mesh=4, tiles=(8, 8, 8)),
                 "summa_comm with tiles: M = 50 must be multiples of the mesh side 4",
                 id="shape-not-dividing"),
    pytest.param(lambda: build_gemm("splitk_comm", 64, 64, 60, mesh=4),
                 r"splitk_comm: K = 60 must be a multiple of the 16 cores .* e.g. K = 64",
                 id="splitk-K"),
    pytest.param(lambda: build_gemm("splitk_comm", 64, 64, 64, mesh=4, tiles=(8, 64, 4)),
                 "splitk_comm: tile bm = 8 must be a multiple of the 16 cores",
                 id="splitk-bm"),
    pytest.param(lambda: build_gemm("ksplit_comm", 64, 64, 64, tiles=(8, 8, 8)),
                 "build_gemm: ksplit_comm takes no tiles", id="untiled"),
    pytest.param(lambda: build_gemm("cannon25d_comm", 64, 64, 64, mesh=4, copies=2),
                 "cannon25d_comm: copies = 2 must be the square of a power of two that "
                 "divides the mesh side 4", id="copies-not-square"),
    pytest.param(lambda: build_gemm("cannon25d_comm", 64, 64, 60, mesh=4, copies=4),
                 r"cannon25d_comm with 4 copies .2x2 layers.: K = 60 must be a multiple of 8",
                 id="copies-K"),
    pytest.param(lambda: build_gemm("summa_comm", 64, 64, 64, copies=4),
                 "copies= is for cannon25d_comm", id="copies-elsewhere"),
    pytest.param(lambda: GemmTiles(0, 8, 8), "GemmTiles: bm must be a positive int, got 0",
                 id="zero-tile"),
])
def test_bad_tiles_and_copies(call, message):
    with pytest.raises(ValueError, match=message):
        call()
