"""Comm ops inside TileLang kernels: the TIR statement each op makes, what it reads back
as (find_comm_ops), the flows it sends (comm_flows), its argument errors, and on CPU the
exact result of every op against meshtensor.collectives."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
from tvm import tirx  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from meshtensor import Mesh, MeshArray  # noqa: E402
from meshtensor import collectives as C  # noqa: E402
from meshtensor.sharding import chunk_bounds  # noqa: E402
from meshtensor.tilelang import (COMM_OPS, comm_flows, compile_mesh_kernel,  # noqa: E402
                                 find_comm_ops, mesh_comm)

SENTINEL = -7.0
# These kernels check values, not speed: gcc's -O3 on them costs 5x the compile time of
# -O0, and exchanges are copies and in-order reductions that no flag changes.
CHECK_FLAGS = ["-O0"]


# -- one kernel running every op ----------------------------------------------------------
def op_table(mesh: Mesh, r: int, c: int):
    """(name, kwargs, dst shape, host function) for every op on an r x c tile; ``kwargs``
    also says whether dst starts as a copy of src (ops that may leave dst unchanged)."""
    a0, aL = mesh.axis_names[0], mesh.axis_names[-1]
    n0, nL, n = mesh.shape[0], mesh.shape[-1], mesh.size
    every = list(reversed(mesh.axis_names))
    rs = int(np.diff(chunk_bounds(r, nL))[0])
    cs = int(np.diff(chunk_bounds(c, n0))[0])
    rng = np.random.default_rng(n)
    dsts = rng.permutation(n)[: n // 2]
    srcs = rng.integers(0, n, size=len(dsts))
    pairs = [(int(s), int(d)) for s, d in zip(srcs, dsts)]
    return [
        ("broadcast", dict(mesh_axes=[aL], root=[nL - 1]), (r, c),
         lambda x: C.broadcast(x, [aL], [nL - 1])),
        ("broadcast", dict(mesh_axes=[aL, a0], root=[0, n0 - 1]), (r, c),
         lambda x: C.broadcast(x, [aL, a0], [0, n0 - 1])),
        ("all_gather", dict(mesh_axes=[aL, a0], gather_axis=1), (r, nL * n0 * c),
         lambda x: C.all_gather(x, [aL, a0], 1)),
        ("all_reduce", dict(mesh_axes=every), (r, c), lambda x: C.all_reduce(x, every)),
        ("all_reduce", dict(mesh_axes=[a0], reduction="max"), (r, c),
         lambda x: C.all_reduce(x, [a0], "max")),
        ("all_reduce", dict(mesh_axes=[aL], reduction="min"), (r, c),
         lambda x: C.all_reduce(x, [aL], "min")),
        ("all_reduce", dict(mesh_axes=[a0], reduction="prod"), (r, c),
         lambda x: C.all_reduce(x, [a0], "prod")),
        ("reduce_scatter", dict(mesh_axes=[aL], scatter_axis=0), (rs, c),
         lambda x: C.reduce_scatter(x, [aL], 0)),
        ("all_to_all", dict(mesh_axes=[a0], split_axis=1, concat_axis=0), (n0 * r, cs),
         lambda x: C.all_to_all(x, [a0], 1, 0)),
        ("all_to_all", dict(mesh_axes=[aL], split_axis=0, concat_axis=0), (nL * rs, c),
         lambda x: C.all_to_all(x, [aL], 0, 0)),
        ("shift", dict(mesh_axes=[a0], shift_axis=a0, offset=1, keep=True), (r, c),
         lambda x: C.shift(x, [a0], a0, 1)),
        ("shift", dict(mesh_axes=[aL, a0], shift_axis=aL, offset=-1, rotate=True), (r, c),
         lambda x: C.shift(x, [aL, a0], aL, -1, rotate=True)),
        ("permute", dict(pairs=pairs, keep=True), (r, c), lambda x: C.permute(x, pairs)),
    ]


def all_ops_kernel(mesh: Mesh, launch_1d: bool, sizes):
    """One kernel for several tile sizes: for each ``(r, c)`` in ``sizes`` the cores load
    tile X[size, core], run every op of :func:`op_table` and store each result in
    O[size, op, core]; a broadcast from a loop-variable root, summed over the loop, runs
    on the first size's tile."""
    mc = mesh_comm(mesh)
    tables = [op_table(mesh, r, c) for r, c in sizes]
    nops, n, m = len(tables[0]) + 1, mesh.size, len(sizes)
    R = max(s[0] for t in tables for _, _, s, _ in t)
    W = max(s[1] for t in tables for _, _, s, _ in t)
    RX, CX = max(r for r, _ in sizes), max(c for _, c in sizes)
    a0, n0 = mesh.axis_names[0], mesh.shape[0]
    grid = (n,) if launch_1d else tuple(mesh.shape)
    r0, c0 = sizes[0]

    def run_ops(X, O, lin):  # a plain Python helper: comm ops are emitted where called
        for si, ((r, c), table) in enumerate(zip(sizes, tables)):
            S = T.alloc_local((r, c), "float32")
            T.evaluate(T.copy(X[si, lin, 0:r, 0:c], S))
            for i, (name, kw, shape, _) in enumerate(table):
                kw = dict(kw)
                D = T.alloc_local(shape, "float32")
                if kw.pop("keep", False):
                    T.evaluate(T.copy(S, D))
                else:
                    T.evaluate(T.fill(D, SENTINEL))
                getattr(mc, name)(S, D, **kw)
                T.evaluate(T.copy(D, O[si, i, lin, 0:shape[0], 0:shape[1]]))
        mc.barrier()

    @T.prim_func
    def kernel(X: T.Tensor((m, n, RX, CX), "float32"),
               O: T.Tensor((m, nops, n, R, W), "float32")):
        with T.Kernel(*grid, threads=1) as cores:
            lin = cores if launch_1d else _linear(cores, mesh.shape)
            S = T.alloc_local((r0, c0), "float32")
            D = T.alloc_local((r0, c0), "float32")
            E = T.alloc_local((r0, c0), "float32")
            T.copy(X[0, lin, 0:r0, 0:c0], S)
            T.clear(E)
            for s in T.serial(n0):
                mc.broadcast(S, D, [a0], root=[s])
                for i, j in T.grid(r0, c0):
                    E[i, j] = E[i, j] + D[i, j]
            T.copy(E, O[0, nops - 1, lin, 0:r0, 0:c0])
            run_ops(X, O, lin)

    hosts = [[f for _, _, _, f in t] for t in tables]
    hosts[0].append(lambda x: C.all_reduce(x, [a0]))
    shapes = [[s for _, _, s, _ in t] for t in tables]
    shapes[0].append((r0, c0))
    return kernel, hosts, shapes


def _linear(coords, shape):
    lin = coords[0]
    for v, s in zip(coords[1:], shape[1:]):
        lin = lin * s + v
    return lin


# axis names users pick, in orders that are not alphabetical (a sorted dict would swap
# them), with n-D and 1-D launches
MESHES = {
    "4x4": (Mesh({"x": 4, "y": 4}), False),
    "row2-col4": (Mesh({"row": 2, "col": 4}), False),
    "row2-col4-1d-launch": (Mesh({"row": 2, "col": 4}), True),
    "z2-a2-q2-3d-launch": (Mesh({"z": 2, "a": 2, "q": 2}), False),
    "z2-a2-q2-1d-launch": (Mesh({"z": 2, "a": 2, "q": 2}), True),
}
# tiles that divide by every group size and tiles that do not (uneven pieces, 1 x 1)
SIZES = [(4, 8), (5, 3), (1, 1), (6, 5)]


def check_all_ops(mesh: Mesh, launch_1d: bool, sizes, seeds=(0, 1)) -> None:
    kernel, hosts, shapes = all_ops_kernel(mesh, launch_1d, sizes)
    compiled = compile_mesh_kernel(kernel, compile_flags=CHECK_FLAGS)
    n, m = mesh.size, len(sizes)
    RX, CX = max(r for r, _ in sizes), max(c for _, c in sizes)
    R = max(s[0] for ss in shapes for s in ss)
    W = max(s[1] for ss in shapes for s in ss)
    for seed in seeds:
        x = np.random.default_rng(seed).uniform(0.5, 1.5, (m, n, RX, CX)).astype(np.float32)
        out = torch.zeros((m, len(hosts[0]), n, R, W))
        compiled(torch.from_numpy(x), out)
        o = out.numpy()
        for si, (r, c) in enumerate(sizes):
            arr = MeshArray.from_locals(mesh, list(x[si, :, :r, :c]))
            for i, (f, shape) in enumerate(zip(hosts[si], shapes[si])):
                want = f(arr)
                for d in range(n):
                    w = want.local(d)
                    got = o[si, i, d, :shape[0], :shape[1]]
                    lead = got[:w.shape[0], :w.shape[1]]
                    assert np.array_equal(lead, w), ((r, c), i, d, lead, w)
                    rest = got.copy()
                    rest[:w.shape[0], :w.shape[1]] = SENTINEL
                    # nothing written past the piece
                    assert np.all(rest == SENTINEL), ((r, c), i, d, got)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MESHES))
def test_every_op_matches_host_collectives(name):
    mesh, launch_1d = MESHES[name]
    check_all_ops(mesh, launch_1d, SIZES)


@pytest.mark.slow
@settings(max_examples=3, deadline=None)
@given(name=st.sampled_from(sorted(MESHES)),
       sizes=st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=2, max_size=3,
                      unique=True))
def test_every_op_matches_host_collectives_at_random_sizes(name, sizes):
    mesh, launch_1d = MESHES[name]
    check_all_ops(mesh, launch_1d, sizes, seeds=(2,))


@pytest.mark.parametrize("name", list(MESHES))
def test_every_op_lowers_to_well_formed_tir(name):
    from tvm.tirx.analysis import verify_well_formed

    from meshtensor.tilelang import lower_mesh_comm
    mesh, launch_1d = MESHES[name]
    kernel, _, _ = all_ops_kernel(mesh, launch_1d, [(5, 3)])
    assert len(find_comm_ops(kernel)) == 15  # 13 ops, the loop-root broadcast, a barrier
    low = lower_mesh_comm(kernel)
    assert find_comm_ops(low) == [] and verify_well_formed(low)


# -- the statement and what it reads back as ------------------------------------------------
def small_kernel(mc, op, **kw):
    @T.prim_func
    def k(X: T.Tensor((16, 4), "float32")):
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            D = T.alloc_local((4, 16), "float32")
            T.copy(X[bx * 4:bx * 4 + 4, 0:4], S)
            for s in T.serial(4):
                getattr(mc, op)(S, D[0:4, 0:4] if op != "all_gather" else D, **kw)
    return k


@pytest.mark.parametrize("op,kw,params", [
    ("broadcast", dict(mesh_axes=["y"], root=[2]), {}),
    ("all_gather", dict(mesh_axes=["x"], gather_axis=1), {"gather_axis": 1}),
    ("all_reduce", dict(mesh_axes=["x", "y"], reduction="max"), {"reduction": "max"}),
    ("shift", dict(mesh_axes=["x"], shift_axis="x", offset=-1, rotate=True),
     {"shift_axis": 0, "offset": -1, "rotate": True}),
], ids=["broadcast", "all_gather", "all_reduce", "shift"])
def test_statement_carries_op_mesh_axes_and_params(op, kw, params):
    k = small_kernel(mesh_comm(), op, **kw)
    [found] = find_comm_ops(k)
    call = found.call
    assert call.args[0].value == f"meshtensor_comm_{op}"
    # the mesh is spelled out in axis order: "mesh", ndim, name, size, ...
    head = [a.value if isinstance(a, tirx.StringImm) else int(a) for a in call.args[1:7]]
    assert head == ["mesh", 2, "x", 4, "y", 4]
    got = {k: v for k, v in found.params.items() if k != "root"}
    assert found.op == op and got == params
    assert found.mesh_axes == tuple(Mesh({"x": 4, "y": 4}).axes_indices(kw["mesh_axes"]))
    assert found.src.buffer.name == "S" and found.dst.buffer.name == "D"
    assert [lp.loop_var.name for lp in found.loops] == ["bx", "by", "s"]
    if op == "broadcast":
        assert [int(r) for r in found.root] == [2]
    else:
        assert found.root is None


def test_loop_variable_root_is_kept_as_an_expression():
    mc = mesh_comm()

    @T.prim_func
    def k(X: T.Tensor((16, 4), "float32")):
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            for s in T.serial(4):
                mc.broadcast(S, S, ["y"], root=[s])

    [found] = find_comm_ops(k)
    assert found.root[0].same_as(found.loops[-1].loop_var)


def test_intimm_root_is_a_static_root():
    mc = mesh_comm({"x": 2, "y": 2})
    ONE = tirx.IntImm("int32", 1)

    @T.prim_func
    def k(X: T.Tensor((4, 4), "float32")):
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((2, 2), "float32")
            D = T.alloc_local((2, 2), "float32")
            mc.broadcast(S, D, ["y"], root=[ONE])

    [found] = find_comm_ops(k)
    assert [int(r) for r in found.root] == [1]
    with pytest.raises(ValueError, match="root"):
        mc.broadcast(None, None, ["y"], root=[tirx.IntImm("int32", 2)])


def test_permute_and_barrier_statements():
    mc = mesh_comm({"x": 2, "y": 2})

    @T.prim_func
    def k():
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4,), "float32")
            mc.permute(S, S, [((0, 0), (1, 1)), (3, 0)])
            mc.barrier()

    p, b = find_comm_ops(k)
    assert (p.op, p.index, dict(p.params)) == ("permute", 0, {"pairs": ((0, 3), (3, 0))})
    assert (b.op, b.index, b.src, b.mesh_axes) == ("barrier", 1, None, (0, 1))
    assert set(COMM_OPS) >= {p.op, b.op}


# -- flows --------------------------------------------------------------------------------
def flows_of(op, mesh_shape={"x": 4, "y": 4}, shape=(4, 4), dshape=None, **kw):
    mc = mesh_comm(mesh_shape)
    n = int(np.prod(list(mesh_shape.values())))
    dshape = dshape or shape

    @T.prim_func
    def k():
        with T.Kernel(n, threads=1) as bx:
            S = T.alloc_local(shape, "float32")
            D = T.alloc_local(dshape, "float32")
            getattr(mc, op)(S, D, **kw)

    return [a.tolist() for a in comm_flows(find_comm_ops(k)[0])]


def test_flows_broadcast_row_group():
    s, r, b = flows_of("broadcast", mesh_axes=["y"], root=[1])
    assert sorted(zip(s, r)) == sorted((4 * i + 1, 4 * i + j) for i in range(4)
                                       for j in range(4) if j != 1)
    assert set(b) == {64}


def test_flows_reduce_scatter_uneven_pieces():
    # 5 rows over 2 cores: pieces of 3 and 2 rows (ceil rule), 4 floats a row
    s, r, b = flows_of("reduce_scatter", {"x": 2}, (5, 4), (3, 4), mesh_axes=["x"],
                       scatter_axis=0)
    assert sorted(zip(s, r, b)) == [(0, 1, 2 * 16), (1, 0, 3 * 16)]


def test_flows_all_reduce_is_reduce_scatter_plus_all_gather():
    s, r, b = flows_of("all_reduce", {"x": 2}, (5,), mesh_axes=["x"])
    # 5 floats: pieces 3 and 2; each sends the other's piece, then its own reduced piece
    assert sorted(zip(s, r, b)) == [(0, 1, 4 * 2 + 4 * 3), (1, 0, 4 * 3 + 4 * 2)]


def test_flows_shift_without_rotate_and_permute_skip_self():
    s, r, _ = flows_of("shift", {"x": 4}, (2,), mesh_axes=["x"], shift_axis="x", offset=1)
    assert list(zip(s, r)) == [(0, 1), (1, 2), (2, 3)]
    s, r, _ = flows_of("permute", {"x": 4}, (2,), pairs=[(0, 0), (1, 2)])
    assert list(zip(s, r)) == [(1, 2)]


def test_flows_all_gather_and_all_to_all_totals():
    s, r, b = flows_of("all_gather", {"x": 2, "y": 2}, (3, 2), (3, 8), mesh_axes=["x", "y"],
                       gather_axis=1)
    assert len(s) == 12 and sum(b) == 12 * 24
    s, r, b = flows_of("all_to_all", {"x": 4}, (2, 4), (8, 1), mesh_axes=["x"], split_axis=1,
                       concat_axis=0)
    assert len(s) == 12 and set(b) == {8}


def test_flows_broadcast_with_loop_root_needs_a_root():
    mc = mesh_comm({"x": 2})

    @T.prim_func
    def k():
        with T.Kernel(2, threads=1) as bx:
            S = T.alloc_local((4,), "float32")
            for s in T.serial(2):
                mc.broadcast(S, S, ["x"], root=[s])

    op = find_comm_ops(k)[0]
    with pytest.raises(ValueError, match="not static; pass root="):
        comm_flows(op)
    assert [a.tolist() for a in comm_flows(op, root=[1])] == [[1], [0], [16]]


# -- bad input: one clear error each ------------------------------------------------------
def test_error_comm_op_on_a_global_buffer():
    mc = mesh_comm({"x": 2})
    with pytest.raises(ValueError, match=r"mesh_comm.broadcast: src 'A' is a global-memory "
                                         r"buffer"):
        @T.prim_func
        def k(A: T.Tensor((4,), "float32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((4,), "float32")
                mc.broadcast(A, S, ["x"], root=[0])


def test_error_mismatched_src_dst_shapes():
    mc = mesh_comm({"x": 2})
    with pytest.raises(ValueError, match=r"mesh_comm.all_gather: dst 'D' has extents \(4,\), "
                                         r"but src 'S' extents \(4,\) over groups of 2 need "
                                         r"\(8,\)"):
        @T.prim_func
        def k():
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((4,), "float32")
                D = T.alloc_local((4,), "float32")
                mc.all_gather(S, D, ["x"], 0)


def test_error_unknown_mesh_axis():
    mc = mesh_comm({"x": 2})
    with pytest.raises(ValueError, match=r"mesh_comm.all_reduce: unknown mesh axis 'z'"):
        @T.prim_func
        def k():
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_local((4,), "float32")
                mc.all_reduce(S, S, ["z"])


def test_error_static_root_out_of_range():
    mc = mesh_comm({"x": 2, "y": 3})
    with pytest.raises(ValueError, match=r"mesh_comm.broadcast: root coordinate 3 on mesh "
                                         r"axis 1 out of range \[0, 3\)"):
        @T.prim_func
        def k():
            with T.Kernel(2, 3, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                mc.broadcast(S, S, ["y"], root=[3])


@pytest.mark.parametrize("call,match", [
    (lambda mc, S, D: mc.reduce_scatter(S, D, ["x"], scatter_axis=2),
     r"mesh_comm.reduce_scatter: scatter_axis 2 out of range \[0, 1\)"),
    (lambda mc, S, D: mc.all_reduce(S, D, ["x"], reduction="mean"),
     r"mesh_comm.all_reduce: .*mean"),
    (lambda mc, S, D: mc.shift(S, D, ["x"], "y", 1), r"mesh_comm.shift: .*not among mesh_axes"),
    (lambda mc, S, D: mc.permute(S, D, [(0, 1), (1, 1)]),
     r"mesh_comm.permute: destination \(0, 1\) receives from both"),
    (lambda mc, S, D: mc.broadcast(S, D, ["x", "y"], root=[0]),
     r"mesh_comm.broadcast: root \[0\] has 1 coordinates"),
], ids=["tensor-axis", "reduction", "shift-axis", "permute-twice", "root-length"])
def test_other_argument_errors_follow_collectives(call, match):
    mc = mesh_comm({"x": 2, "y": 2})
    with pytest.raises(ValueError, match=match):
        @T.prim_func
        def k():
            with T.Kernel(2, 2, threads=1) as (bx, by):
                S = T.alloc_local((4,), "float32")
                D = T.alloc_local((4,), "float32")
                call(mc, S, D)
