"""The distributed-memory GEMMs (summa_comm, cannon_comm, ksplit_comm): their comm ops
and, on CPU, results against NumPy for sizes that do and do not divide by the mesh."""
import pytest

pytest.importorskip("tilelang")
from meshtensor.tilelang import find_comm_ops, read_mesh_tensor_info  # noqa: E402
from meshtensor.tilelang.kernels.gemm import (ALGORITHMS, COMM_ALGORITHMS, build_gemm,  # noqa: E402
                                      layouts, run_gemm)
from meshtensor.tilelang import MeshKernel  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", COMM_ALGORITHMS)
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
], ids=COMM_ALGORITHMS)
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
