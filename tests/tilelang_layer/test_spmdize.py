"""SpmdizeMeshCopies: global-view copies become comm ops from each tile's owner.

Classification and the rewritten TIR are checked on PrimFuncs without compiling; a few
kernels per class run on CPU (``slow``) and must equal NumPy / the input kernel bit for
bit.
"""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401
import tilelang.language as T  # noqa: E402
import tvm  # noqa: E402
from hypothesis import example, given, settings, strategies as st  # noqa: E402

from meshtensor import Mesh  # noqa: E402
from meshtensor.tilelang import mesh_tensor_functions  # noqa: E402
from meshtensor.tilelang import find_comm_ops  # noqa: E402
from meshtensor.tilelang.ir.evaluate import eval_np  # noqa: E402
from meshtensor.tilelang.kernels.gemm import build_gemm  # noqa: E402
from meshtensor.tilelang import analyze_mesh_communication, verify_mesh_tensors  # noqa: E402
from meshtensor.tilelang.transform.spmdize import SpmdizeMeshCopies, plan_mesh_copies, spmdize  # noqa: E402

LAYOUT = {"x": 0, "y": 1}


def reader(mesh_shape, coord, steps=1, launch="grid", tile=(4, 4)):
    """Every core reads ``steps`` blocks of A (block ``coord(core..., s)``), folds them
    into ``acc = 3 * acc + block`` and writes ``acc`` to its own tile of B.

    ``launch="grid"``: ``T.Kernel(*mesh)`` and ``coord(bx, by, s)`` (``coord(bx, s)`` on a
    1-D mesh); ``"linear"``: a 1-D launch of ``mesh.size`` blocks and ``coord(b, s)``.
    """
    mesh = Mesh(mesh_shape)
    F = mesh_tensor_functions(mesh_shape)
    annotate, mcopy, init = (F["annotate_mesh_tensor_info"], F["mesh_tensor_copy"],
                             F["init_mesh_tensor_info"])
    lay = {n: d for n, d in zip(mesh.axis_names, range(mesh.ndim))}
    shape = tuple(n * t for n, t in zip(mesh.shape, tile)) + tuple(tile[mesh.ndim:])
    grid = mesh.shape if launch == "grid" else (mesh.size,)

    def at(blk, s):
        return coord(*blk, s) if isinstance(blk, (tuple, list)) else coord(blk, s)

    def own(blk):
        if isinstance(blk, (tuple, list)):
            return tuple(blk)
        return (blk, 0) if mesh.ndim == 1 else (blk // mesh.shape[1], blk % mesh.shape[1])

    @T.prim_func
    def k(A: T.Tensor(shape, "float32"), B: T.Tensor(shape, "float32")):
        annotate({A: init(lay, tile), B: init(lay, tile)})
        with T.Kernel(*grid, threads=1) as blk:
            S = T.alloc_local(tile, "float32")
            acc = T.alloc_local(tile, "float32")
            T.clear(acc)
            for s in T.serial(steps):
                mcopy(A, S, src_coord=at(blk, s))
                for i, j in T.grid(*tile):
                    acc[i, j] = acc[i, j] * 3.0 + S[i, j]
            mcopy(acc, B, dst_coord=own(blk))
    return k


def expected(mesh_shape, coord, steps, launch, tile=(4, 4)):
    """NumPy: ``(A, B)`` for ``reader``'s kernel."""
    mesh = Mesh(mesh_shape)
    shape = tuple(n * t for n, t in zip(mesh.shape, tile)) + tuple(tile[mesh.ndim:])
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 97
    b = np.zeros(shape, dtype=np.float32)
    for lin in range(mesh.size):
        c = mesh.multi_index(lin)
        grid = launch == "grid" and mesh.ndim == 2
        acc = np.zeros(tile, dtype=np.float32)
        for s in range(steps):
            blk = coord(*c, s) if grid else coord(lin, s)
            acc = acc * np.float32(3) + a[tuple(slice(i * t, (i + 1) * t)
                                                for i, t in zip(blk, tile))]
        own = c if mesh.ndim == 2 else (lin, 0)
        b[tuple(slice(i * t, (i + 1) * t) for i, t in zip(own, tile))] = acc
    return a, b


def _table(i, values):
    """``values[i]`` as nested ``T.if_then_else`` (a table of a launch variable, in TIR;
    plain ints in the NumPy model)."""
    if isinstance(i, int):
        return values[i]
    e = values[-1]
    for k in reversed(range(len(values) - 1)):
        e = T.if_then_else(i == k, values[k], e)
    return e


def _min(a, b):
    return min(a, b) if isinstance(a, int) else T.min(a, b)


def _max(a, b):
    return max(a, b) if isinstance(a, int) else T.max(a, b)


# name: (mesh, coord, steps, launch, kind, [(op, mesh_axes, params or root)])
CASES = {
    # a clamped stencil: the senders' tile starts are a per-core table, which TileLang
    # vectorized into a gather its C back end cannot build (issue 26: spmdize's output
    # no longer compiled; it is now a table of tiles times the tile size)
    "permute-4x4-clamp": ({"x": 4, "y": 4}, lambda x, y, s: (x, _max(y - 1, 0)), 1, "grid",
                          "permute", None),
    "permute-4x4-clamp-both": ({"x": 4, "y": 4}, lambda x, y, s: (_min(x + 1, 3),
                                                                  _max(y - 1, 0)), 1, "grid",
                               "permute", None),
    "broadcast-2x2-row": ({"x": 2, "y": 2}, lambda x, y, s: (x, 0), 1, "grid", "broadcast",
                          "A[bx, 0] -> broadcast over y from core (x, 0)"),
    "broadcast-4x4-summa": ({"x": 4, "y": 4}, lambda x, y, s: (x, s), 4, "grid", "broadcast",
                            "A[bx, s] -> broadcast over y from core (x, s)"),
    "broadcast-2x4-everyone": ({"x": 2, "y": 4}, lambda x, y, s: (1, 2), 1, "grid",
                               "broadcast", "A[1, 2] -> broadcast over x, y from core (1, 2)"),
    "broadcast-2x2-linear-launch": ({"x": 2, "y": 2}, lambda b, s: (b // 2, s), 2, "linear",
                                    "broadcast", "A[bx // 2, s] -> broadcast over y from core (x, s)"),
    "shift-2x4": ({"x": 2, "y": 4}, lambda x, y, s: (x, (y + 1) % 4), 1, "grid", "shift",
                  "A[bx, (by + 1) % 4] -> shift along y by -1 (rotate): core (x, y) receives "
                  "from (x, y+1)"),
    "shift-1d": ({"x": 4}, lambda b, s: ((b + 3) % 4, 0), 1, "grid", "shift",
                 "A[(bx + 3) % 4, 0] -> shift along x by 1 (rotate): core (x) receives from (x-1)"),
    # a 1-D launch: the sender's load composes the linear id with the mod (found by the
    # fuzzer's spmdize mode; TileLang's copy lowering folded the nest wrongly)
    "shift-4x2-linear-launch": ({"x": 4, "y": 2}, lambda b, s: ((b // 2 + 3) % 4, b % 2), 1,
                                "linear", "shift", None),
    "carried-4x2-linear-ring": ({"x": 4, "y": 2}, lambda b, s: ((b // 2 + s + 1) % 4, b % 2),
                                4, "linear", "carried", None),
    "permute-2x2-transpose": ({"x": 2, "y": 2}, lambda x, y, s: (y, x), 1, "grid", "permute",
                              "A[by, bx] -> permute of 2 tiles ((0, 1)->(1, 0), (1, 0)->(0, 1))"),
    "permute-4x4-transpose": ({"x": 4, "y": 4}, lambda x, y, s: (y, x), 2, "grid", "permute",
                              "A[by, bx] -> permute of 12 tiles ((0, 1)->(1, 0), (0, 2)->(2, 0), "
                              "(0, 3)->(3, 0), ...)"),
    # the reader picks its tile through tables of its coordinates (branches): found
    # timing the fuzzer's spmdize mode, see test_a_permute_sender_loads_its_own_tile
    "permute-4x3-table": ({"row": 4, "col": 3}, lambda x, y, s: (_table(x, (0, 2, 1, 3)),
                                                                 _table(y, (2, 0, 1))),
                          1, "grid", "permute", None),
    "permute-4x3-table-linear-launch": ({"row": 4, "col": 3}, lambda b, s: (
        _table(b // 3, (0, 2, 1, 3)), _table(b % 3, (2, 0, 1))), 1, "linear", "permute", None),
    # the senders' coordinates are affine ((-x) mod 3); only the reader's own
    # T.if_then_else branches
    "permute-3x2-table": ({"row": 3, "col": 2}, lambda x, y, s: (_table(x, (0, 2, 1)), y),
                          1, "grid", "permute", None),
    "local-2x4": ({"x": 2, "y": 4}, lambda x, y, s: (x, y), 2, "grid", "local",
                  "A[bx, by] -> local (own shard)"),
    "carried-1d-ring": ({"x": 4}, lambda b, s: ((b + s) % 4, 0), 4, "grid", "carried",
                        "A[(bx + s) % 4, 0] -> at s = 0: local (own shard); then shift along x "
                        "by -1 (rotate): core (x) receives from (x+1) what it held"),
    "carried-2x4-skew": ({"x": 2, "y": 4}, lambda x, y, s: (x, (x + y + s) % 4), 4, "grid",
                         "carried", None),
    "carried-2x4-broadcast-first": ({"x": 2, "y": 4}, lambda x, y, s: ((x + s) % 2, 0), 3,
                                    "grid", "carried",
                                    "A[(bx + s) % 2, 0] -> at s = 0: broadcast over y from core "
                                    "(x, 0); then shift along x by 1 (rotate): core (x, y) "
                                    "receives from (x-1, y) what it held"),
}


def build(name):
    mesh, coord, steps, launch, _, _ = CASES[name]
    return reader(mesh, coord, steps, launch)


@pytest.mark.parametrize("name", list(CASES))
def test_classification_and_its_one_line_description(name):
    _, _, _, _, kind, text = CASES[name]
    plans = plan_mesh_copies(build(name))
    assert [p.kind for p in plans] == [kind, "local"]  # the read, then the own-tile write
    if text is not None:
        assert str(plans[0]) == text


COMM = {  # the comm statements each class leaves in the TIR: (op, mesh_axes, params)
    "broadcast-2x2-row": [("broadcast", (1,), {}, [0])],
    "broadcast-4x4-summa": [("broadcast", (1,), {}, ["s"])],
    "broadcast-2x4-everyone": [("broadcast", (0, 1), {}, [1, 2])],
    "broadcast-2x2-linear-launch": [("broadcast", (1,), {}, ["s"])],
    "shift-2x4": [("shift", (1,), {"shift_axis": 1, "offset": -1, "rotate": True}, None)],
    "shift-1d": [("shift", (0,), {"shift_axis": 0, "offset": 1, "rotate": True}, None)],
    "permute-2x2-transpose": [("permute", (0, 1), {"pairs": ((0, 0), (1, 2), (2, 1), (3, 3))},
                               None)],
    "local-2x4": [],
    "carried-1d-ring": [("shift", (0,), {"shift_axis": 0, "offset": -1, "rotate": True}, None)],
    "carried-2x4-skew": [("permute", (0, 1), None, None),
                         ("shift", (1,), {"shift_axis": 1, "offset": -1, "rotate": True}, None)],
    "carried-2x4-broadcast-first": [
        ("broadcast", (1,), {}, [0]),
        ("shift", (0,), {"shift_axis": 0, "offset": 1, "rotate": True}, None)],
}


@pytest.mark.parametrize("name", list(COMM))
def test_comm_statements_in_the_output_tir(name):
    out = spmdize(build(name))
    ops = find_comm_ops(out)
    assert [o.op for o in ops] == [c[0] for c in COMM[name]]
    for o, (_, axes, params, root) in zip(ops, COMM[name]):
        assert o.mesh_axes == axes
        if params is not None:
            assert {k: v for k, v in o.params.items() if k != "root"} == params
        if root is not None:
            assert [str(r) for r in o.root] == [str(r) for r in root]
    assert verify_mesh_tensors(out, owner_only=True) == []


@pytest.mark.parametrize("name", ["permute-4x3-table", "permute-4x3-table-linear-launch",
                                  "permute-3x2-table"])
def test_a_permute_sender_loads_its_own_tile(name):
    """The reader picks its tile through tables of its coordinates; each sender loads
    the tile its reader wants, which is its own: the load's start is affine in the
    sender's coordinates, not the reader's tables with the inverse permutation put into
    each branch (on such a start TileLang's copy lowering took 33 s instead of 1 s)."""
    out = spmdize(build(name))
    loads = [ln.strip() for ln in out.script().splitlines() if "T.copy(T.region(A[" in ln]
    assert len(loads) == 1, loads
    want = "A[bx // 3 * 4, bx % 3 * 4]" if name.endswith("launch") else "A[bx * 4, by * 4]"
    assert loads[0].startswith(f"T.copy(T.region({want}, 1, 4, 4)"), loads[0]
    assert verify_mesh_tensors(out, owner_only=True) == []


def test_a_start_branching_only_with_if_then_else_is_tabulated():
    """A start whose per-core values fit no affine form becomes a table when it
    branches; ``T.if_then_else`` counts (its op is ``tirx.if_then_else`` in TileLang's
    TVM, which the first version missed: it kept such starts as they were)."""
    from meshtensor.tilelang.transform.spmdize import _branches
    x = tvm.tirx.Var("x", "int32")
    assert _branches(tvm.tirx.if_then_else(x == 0, 1, 2) * 3)
    assert _branches(tvm.tirx.Select(x == 0, 1, 2))
    assert not _branches(x * 3 + 1)


def test_a_fold_that_changes_a_start_is_refused(monkeypatch):
    """The sender's start after _fold_mods (TVM's simplifier inside) must have the
    substituted start's values everywhere: a simplifier error refuses the copy."""
    from meshtensor.tilelang.transform import spmdize as sp
    real = sp._fold_mods

    def off_by_one(call, ana):
        out = real(call, ana)
        load = out.args[0]
        return tvm.tirx.Call(out.dtype, out.op, [tvm.tirx.BufferLoad(
            load.buffer, [load.indices[0] + 1, *load.indices[1:]]), *out.args[1:]])
    monkeypatch.setattr(sp, "_fold_mods", off_by_one)
    with pytest.raises(ValueError, match="changes its value on some core"):
        spmdize(build("shift-2x4"))


def test_skew_permute_sends_each_row_its_skewed_tile():
    """Cannon's first step on 2x4: core (i, j) gets A(i, (i + j) % 4) from its owner."""
    ops = find_comm_ops(spmdize(build("carried-2x4-skew")))
    mesh = Mesh({"x": 2, "y": 4})
    want = sorted((mesh.linear_index((i, (i + j) % 4)), mesh.linear_index((i, j)))
                  for i in range(2) for j in range(4))
    assert sorted(ops[0].params["pairs"]) == want


@pytest.mark.parametrize("alg", ["summa", "cannon"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (50, 37, 19)], ids=["64^3", "50x37x19"])
def test_gemm_output_is_a_distributed_memory_kernel(alg, shape):
    f = build_gemm(alg, *shape)
    out = spmdize(f)
    assert any(i.kind == "remote" for i in verify_mesh_tensors(f, owner_only=True))
    assert verify_mesh_tensors(out, owner_only=True) == []
    ops = [o.op for o in find_comm_ops(out)]
    assert ops == (["broadcast", "broadcast"] if alg == "summa" else
                   ["permute", "shift", "permute", "shift"])


def test_summa_received_bytes_equal_the_input_remote_bytes():
    f = build_gemm("summa", 64, 64, 64)
    before, after = analyze_mesh_communication(f), analyze_mesh_communication(spmdize(f))
    assert after.remote_bytes == before.remote_bytes == 16 * 3 * 2 * 16 * 16 * 4


def test_cannon_receives_the_skew_plus_n_minus_1_rotations():
    """Closed form on n x n (tiles of b bytes): the skew permute moves n(n-1) tiles of A
    and of B, each of n-1 rotations n^2; the global view reads n^2(n-1) remote tiles of
    each. The extra n(n-1) per operand are tiles that come back to their owner around
    the ring (a collective shift moves every core's tile)."""
    n, b = 4, 16 * 16 * 4
    f = build_gemm("cannon", 64, 64, 64)
    before, after = analyze_mesh_communication(f), analyze_mesh_communication(spmdize(f))
    assert before.remote_bytes == 2 * n * n * (n - 1) * b
    assert after.remote_bytes == 2 * (n * (n - 1) + (n - 1) * n * n) * b


def test_pass_form_equals_function_form():
    f = build_gemm("summa", 64, 64, 64)
    mod = SpmdizeMeshCopies()(tvm.IRModule({"gemm": f}))
    tvm.ir.assert_structural_equal(mod["gemm"], spmdize(f))


# -- property: each plan delivers every core the tile it read -------------------------------
def _sources(plan, step, mesh):
    """The core each reader receives its tile from at ``step``, by the plan's ops."""
    cs = mesh.coords
    env = {}
    for lp in plan.copy.loops:
        tag = lp.thread_binding.thread_tag if lp.thread_binding is not None else None
        env[lp.loop_var] = cs[:, 0] if tag == "blockIdx.x" else cs[:, 1] if tag == "blockIdx.y" \
            else np.full(mesh.size, step)
    src = cs.copy()
    if plan.kind == "broadcast":
        for a, r in zip(plan.mesh_axes, plan.root):
            src[:, a] = eval_np(r, env)
    elif plan.kind == "shift":
        a = plan.shift_axis
        src[:, a] = (src[:, a] - plan.offset) % mesh.shape[a]
    elif plan.kind == "permute":
        lin = np.arange(mesh.size)
        for pairs in plan.rounds:
            for s, d in pairs:
                lin[d] = s
        return lin
    return np.ravel_multi_index(src.T, mesh.shape)


@settings(max_examples=25, deadline=None)
@example([1, 0, 0, 0], [0, 0], 1)  # a carried copy whose first step is a broadcast
@given(st.lists(st.sampled_from([0, 1, 3]), min_size=4, max_size=4),
       st.lists(st.integers(0, 3), min_size=2, max_size=2), st.integers(0, 2))
def test_every_plan_delivers_each_core_the_tile_it_read(mul, add, moving):
    """Affine reads ``((a x + b y + d) mod 4, (e x + f y + h) mod 4)`` on a 4x4 mesh, with
    the step ``s`` added to neither, the first or the second coordinate: either refused,
    or the chosen ops bring every core, at every step, the tile it read from that tile's
    owner (``carried``: the tile the neighbour held one step before)."""
    a, b, e, f = mul
    d, h = add
    mesh = Mesh({"x": 4, "y": 4})

    def coord(x, y, s):
        return ((a * x + b * y + d + (s if moving == 1 else 0)) % 4,
                (e * x + f * y + h + (s if moving == 2 else 0)) % 4)

    try:
        plan = plan_mesh_copies(reader({"x": 4, "y": 4}, coord, 3))[0]
    except ValueError as err:
        assert "cannot be expressed with broadcast, shift or permute" in str(err)
        return
    blocks = np.array([[coord(*mesh.multi_index(i), s) for i in range(mesh.size)]
                       for s in range(3)])
    owner = blocks[..., 0] * 4 + blocks[..., 1]
    if plan.kind != "carried":
        for s in range(3):
            assert _sources(plan, s, mesh).tolist() == owner[s].tolist()
        return
    assert _sources(plan.first, 0, mesh).tolist() == owner[0].tolist()
    ax = plan.shift_axis
    prev = np.roll(blocks.reshape(3, 4, 4, 2), plan.offset, axis=1 + ax).reshape(3, 16, 2)
    assert np.array_equal(blocks[1:], prev[:-1])


# -- unchanged --------------------------------------------------------------------------------
def test_unannotated_kernel_passes_through_unchanged():
    @T.prim_func
    def plain(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            T.copy(A[by * 4, bx * 4], S)
            T.copy(S, B[bx * 4, by * 4])

    assert plan_mesh_copies(plain) == []
    out = SpmdizeMeshCopies()(tvm.IRModule({"plain": plain}))["plain"]
    tvm.ir.assert_structural_equal(out, plain)


def test_kernel_with_only_local_copies_passes_through_unchanged():
    f = build("local-2x4")
    out = SpmdizeMeshCopies()(tvm.IRModule({"k": f}))["k"]
    tvm.ir.assert_structural_equal(out, f)
    local = build_gemm("local", 64, 64, 64)
    tvm.ir.assert_structural_equal(spmdize(local), local)
    summa_comm = build_gemm("summa_comm", 64, 64, 64)  # already explicit: a fixed point
    assert spmdize(summa_comm) is summa_comm


# -- refusals ---------------------------------------------------------------------------------
M2 = {"x": 2, "y": 2}
F2 = mesh_tensor_functions(M2)
annotate2, mcopy2, init2 = (F2["annotate_mesh_tensor_info"], F2["mesh_tensor_copy"],
                            F2["init_mesh_tensor_info"])


def test_refuses_a_data_dependent_index():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), Idx: T.Tensor((4,), "int32"),
          B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            mcopy2(A, S, src_coord=(Idx[bx * 2 + by], by))
            mcopy2(S, B, dst_coord=(bx, by))

    with pytest.raises(ValueError, match=r"copy 0 \(A -> S\) cannot be classified: .*"
                                         r"data-dependent index"):
        spmdize(k)


def test_refuses_an_owner_pattern_no_op_expresses():
    """Step 0: everyone reads core 0's tile; step 1: its own; step 2: core 0's again."""
    f = reader({"x": 4}, lambda b, s: ((b * s) % 4 * (s % 2), 0), 3)
    with pytest.raises(ValueError, match=r"copy 0 \(A -> S\) cannot be expressed with "
                                         r"broadcast, shift or permute: core \(1,\) reads A "
                                         r"from cores \[\(0,\), \(1,\)\] at step 0, step 1"):
        spmdize(f)


def test_refuses_a_rotation_of_a_tensor_the_kernel_writes():
    F = mesh_tensor_functions({"x": 4})
    lay = F["init_mesh_tensor_info"]({"x": 0}, (4, 4))

    @T.prim_func
    def k(A: T.Tensor((16, 4), "float32")):
        F["annotate_mesh_tensor_info"]({A: lay})
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_local((4, 4), "float32")
            for s in T.serial(4):
                F["mesh_tensor_copy"](A, S, src_coord=((bx + s) % 4, 0))
                F["mesh_tensor_copy"](S, A, dst_coord=(bx, 0))

    with pytest.raises(ValueError, match=r"copy 0 \(A -> S\) reads A as a rotation of the "
                                         r"tiles read one iteration before, but the kernel "
                                         r"also writes A"):
        spmdize(k)


def test_refuses_a_remote_read_under_a_core_dependent_condition():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            T.clear(S)
            if bx == 1:
                mcopy2(A, S, src_coord=(0, by))
            mcopy2(S, B, dst_coord=(bx, by))

    with pytest.raises(ValueError, match=r"copy 0 \(A -> S\) reads remote tiles on cores "
                                         r"\[\(1, 0\), \(1, 1\)\], but the cores do not all "
                                         r"run it at the same steps \(runs per core: "
                                         r"\[0, 0, 1, 1\]\)"):
        spmdize(k)


def test_refuses_a_remote_read_whose_comm_op_would_break_the_collective_rule():
    """Every core runs the read (the mesh axis of ``b0`` has size 1), but its comm op
    would sit under ``if b0 == 0``, which the lowering refuses: spmdize refuses it
    itself (found by the fuzzer's spmdize mode: it returned a kernel that did not
    compile)."""
    F = mesh_tensor_functions({"tp": 1, "w": 2})
    annotate, mcopy, init = (F["annotate_mesh_tensor_info"], F["mesh_tensor_copy"],
                             F["init_mesh_tensor_info"])

    @T.prim_func
    def k(X: T.Tensor((2, 4), "float32"), Y: T.Tensor((2, 4), "float32")):
        annotate({X: init({"tp": None, "w": 1}, (2, 2)), Y: init({"tp": None, "w": 1}, (2, 2))})
        with T.Kernel(1, 2, threads=1) as (b0, b1):
            S = T.alloc_local((2, 2), "float32")
            T.clear(S)
            if b0 == 0:
                mcopy(X, S, src_coord=(0, 0))
            mcopy(S, Y, dst_coord=(0, b1))
    with pytest.raises(ValueError, match="SpmdizeMeshCopies: a remote read sits where its "
                                         "comm op cannot go: .*broadcast.*if bx == 0"):
        spmdize(k)


def test_refuses_a_tile_that_spans_two_shards():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            T.copy(A[2, by * 4], S)
            mcopy2(S, B, dst_coord=(bx, by))

    with pytest.raises(ValueError, match=r"copy 0 \(A -> S\) reads A\[2:6, 0:4\] on core "
                                         r"\(0, 0\), which spans the shards of cores "
                                         r"\[\(0, 0\), \(1, 0\)\]"):
        spmdize(k)


def test_refuses_writes_to_another_cores_tile():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            mcopy2(A, S, src_coord=(bx, by))
            mcopy2(S, B, dst_coord=(by, bx))

    with pytest.raises(ValueError, match=r"copy 1 \(S -> B\) writes B's tile owned by core "
                                         r"\(1, 0\) from core \(0, 1\) \(2 remote writes\)"):
        spmdize(k)


def test_refuses_a_copy_between_two_global_tensors():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            mcopy2(A[by * 4:by * 4 + 4, bx * 4:bx * 4 + 4], B[bx * 4:bx * 4 + 4, by * 4:by * 4 + 4])

    with pytest.raises(ValueError, match=r"copy 0 \(A -> B\) copies between two annotated "
                                         r"global tensors"):
        spmdize(k)


def test_refuses_an_element_wise_remote_read():
    """An access outside T.copy is not rewritten, so it must not be kept silently."""
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            for i, j in T.grid(4, 4):
                S[i, j] = A[(1 - bx) * 4 + i, by * 4 + j]
            mcopy2(S, B, dst_coord=(bx, by))

    with pytest.raises(ValueError, match=r"reads the annotated tensor 'A' outside T.copy "
                                         r"\(A\[\(1 - bx\) \* 4 \+ i, by \* 4 \+ j\], 1 such"):
        spmdize(k)


def test_refuses_a_remote_read_into_an_unannotated_global_tensor():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            T.copy(A[(1 - bx) * 4, by * 4], B[bx * 4:bx * 4 + 4, by * 4:by * 4 + 4])

    with pytest.raises(ValueError, match=r"copy 0 \(A -> B\) reads remote tiles of A straight "
                                         r"into the global tensor 'B'"):
        spmdize(k)


def test_refuses_an_element_wise_write():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        annotate2({A: init2(LAYOUT, (4, 4)), B: init2(LAYOUT, (4, 4))})
        with T.Kernel(2, 2, threads=1) as (bx, by):
            S = T.alloc_local((4, 4), "float32")
            mcopy2(A, S, src_coord=(bx, by))
            for i, j in T.grid(4, 4):
                B[(1 - bx) * 4 + i, by * 4 + j] = S[i, j]

    with pytest.raises(ValueError, match=r"writes the annotated tensor 'B' outside T.copy"):
        spmdize(k)


def test_spmdize_wants_a_primfunc():
    with pytest.raises(TypeError, match="spmdize: expected a PrimFunc, got str"):
        spmdize("summa")


# -- CPU runs ---------------------------------------------------------------------------------
def _run(kernel, *arrays):
    import torch
    ts = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    kernel(*ts)
    return [t.numpy() for t in ts]


RUN = list(CASES)  # every plan kind's output compiles and runs (spmdize never emits a
# kernel that compile_mesh_kernel refuses)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUN)
def test_spmdized_kernel_runs_on_cpu_and_matches_numpy(name):
    from meshtensor.tilelang import compile_mesh_kernel
    mesh, coord, steps, launch, _, _ = CASES[name]
    a, want = expected(mesh, coord, steps, launch)
    out = spmdize(build(name))
    _, b = _run(compile_mesh_kernel(out), a, np.zeros_like(a))
    np.testing.assert_array_equal(b, want)


@pytest.mark.slow
@pytest.mark.parametrize("alg", ["summa", "cannon"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (50, 37, 19)], ids=["64^3", "50x37x19"])
def test_spmdized_gemm_equals_the_global_view_kernel_bit_for_bit(alg, shape):
    from meshtensor.tilelang import compile_mesh_kernel
    M, N, K = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    f = build_gemm(alg, M, N, K)
    _, _, want = _run(compile_mesh_kernel(f), a, b, np.zeros((M, N), np.float32))
    _, _, got = _run(compile_mesh_kernel(spmdize(f)), a, b, np.zeros((M, N), np.float32))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


# -- meshtensor demo --spmdize -----------------------------------------------------------------
@pytest.mark.slow
def test_demo_shows_one_line_per_copy_and_runs_both(capsys):
    """Issue 30: `demo --spmdize` printed about 60 lines of TIR by default; --tir asks."""
    from meshtensor.cli import main
    argv = ["demo", "--spmdize", "--size", "64", "--algorithm", "summa", "--repeat", "1"]
    assert main(argv + ["--tir"]) == 0
    assert "def gemm(" in capsys.readouterr().out  # the input kernel
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "def gemm(" not in out and "T.copy" not in out and "--tir prints its TIR" in out
    assert len(out.splitlines()) < 30
    assert "copy 0: A[bx, s] -> broadcast over y from core (x, s)" in out
    assert "copy 1: B[s, by] -> broadcast over x from core (s, y)" in out
    assert "VerifyMeshTensors(owner_only=True): input 2 issue(s)" in out
    assert "output ok" in out
    assert "input reads 98304 remote bytes, output receives 98304" in out
    assert "output equals the input kernel bit for bit" in out


def test_demo_refuses_an_algorithm_without_a_global_view():
    from meshtensor.tilelang.demos.spmdize_demo import main
    with pytest.raises(ValueError, match=r"demo --spmdize: algorithm 'ksplit_comm' has no "
                                         r"global-view kernel"):
        main(64, "ksplit_comm")


def test_a_refusal_of_spmdizes_output_says_it_is_spmdizes_fault(monkeypatch):
    """spmdize promises kernels the layer accepts; should the layer refuse one, the
    message says whose bug it is (the user's kernel is not at fault)."""
    from meshtensor.tilelang import compile_mesh_kernel
    from meshtensor.tilelang import engine
    from meshtensor.tilelang.transform.spmdize import SPMDIZED_ATTR

    def refuse(*args):
        raise ValueError("LowerMeshComm: something it cannot lower")

    k = build("shift-2x4")
    out = spmdize(k)
    assert bool(out.attrs[SPMDIZED_ATTR]) and SPMDIZED_ATTR not in (k.attrs or {})
    monkeypatch.setattr(engine, "find_races", refuse)
    with pytest.raises(ValueError, match=r"^compile_mesh_kernel refuses a kernel that spmdize "
                                         r"wrote, which is a bug in spmdize, not in your kernel "
                                         r".*: LowerMeshComm: something it cannot lower$"):
        compile_mesh_kernel(out)
    with pytest.raises(ValueError, match=r"^LowerMeshComm: something it cannot lower$"):
        compile_mesh_kernel(k)
