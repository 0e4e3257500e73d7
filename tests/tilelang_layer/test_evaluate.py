"""The NumPy evaluator of TIR offsets and iteration spaces behind the mesh passes.

The first tests pin four bugs of the first evaluator (each failed on it): copies under
``if`` counted as always executed, loop bounds that depend on outer loops or lets
rejected as symbolic, comparisons / logic / ``Select`` / ``if_then_else`` not evaluable,
and ``Div``/``Mod`` through floats.
"""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401
import tilelang.language as T  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402
from tvm import tirx  # noqa: E402

from meshtensor import Mesh  # noqa: E402
from meshtensor.tilelang import mesh_tensor_functions  # noqa: E402
from meshtensor.tilelang.ir.scope import find_copies  # noqa: E402
from meshtensor.tilelang import analyze_mesh_communication, verify_mesh_tensors  # noqa: E402
from meshtensor.tilelang.ir.evaluate import Overflow, eval_np  # noqa: E402
from meshtensor.tilelang.ir.launch import Launch  # noqa: E402

MESH = Mesh({"x": 4, "y": 4})
F = mesh_tensor_functions({"x": 4, "y": 4})
annotate, mcopy, init = F["annotate_mesh_tensor_info"], F["mesh_tensor_copy"], F["init_mesh_tensor_info"]
TILE = 16 * 16 * 4  # bytes of one 16x16 float32 block


def received(kernel):
    """Bytes each core reads of A, as a 4x4 grid."""
    pc = analyze_mesh_communication(kernel).per_core()
    return (pc["local_read"] + pc["remote_read"]).reshape(4, 4)


# -- bug 1: a copy under `if` runs only where its condition holds ----------------------------
def test_copy_under_if_counts_only_where_the_condition_holds():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            if bx < 2:
                mcopy(A, S, src_coord=(0, by))
            else:
                mcopy(A, S, src_coord=(bx, by))
                mcopy(A, S, src_coord=(bx, by))
            T.copy(S, B[0, 0])

    r = analyze_mesh_communication(k)
    pc = r.per_core()
    assert (pc["local_read"] + pc["remote_read"]).reshape(4, 4).tolist() == \
        [[TILE] * 4] * 2 + [[2 * TILE] * 4] * 2
    assert pc["remote_read"].reshape(4, 4)[1].tolist() == [TILE] * 4  # row 1 reads row 0
    assert pc["remote_read"].reshape(4, 4)[[0, 2, 3]].sum() == 0


# -- bug 2: loop bounds from outer loops and let-bindings ------------------------------------
def test_ragged_loop_bounds_are_evaluated_in_the_enclosing_environment():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            m: T.int32 = bx + 1
            for i in T.serial(m):           # bound from a let
                for j in T.serial(i + 1):   # bound from the outer loop
                    mcopy(A, S, src_coord=(j, by))
            T.copy(S, B[0, 0])

    # core (x, y) runs sum_{i <= x} (i + 1) copies
    want = np.array([[sum(i + 1 for i in range(x + 1)) * TILE] * 4 for x in range(4)])
    assert received(k).tolist() == want.tolist()
    assert verify_mesh_tensors(k) == []


# -- bug 3: comparisons, And/Or/Not, Select and if_then_else ----------------------------------
def test_conditional_offsets_are_evaluated():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            mcopy(A, S, src_coord=(T.if_then_else(bx < 2, bx, 3 - bx),
                                   T.Select(T.Or(T.And(bx >= 1, T.Not(by == 0)), bx > 5), by, 0)))
            T.copy(S, B[0, 0])

    r = analyze_mesh_communication(k)
    rows = np.where(np.arange(4) < 2, np.arange(4), 3 - np.arange(4))
    for x in range(4):
        for y in range(4):
            owner = (int(rows[x]), y if (x >= 1 and y != 0) else 0)
            want = {} if owner == (x, y) else {owner: TILE}
            assert r.by_peer((x, y)) == want, (x, y)


# -- bug 4: exact int64 truncating division ---------------------------------------------------
BIG = 2 ** 53 + 1


@pytest.mark.parametrize("a, b", [(BIG, 1), (3 * BIG, 3), (-7, 2), (7, -2), (-7, -2), (2 ** 62 + 3, 7)],
                         ids=["2^53+1/1", "3(2^53+1)/3", "-7/2", "7/-2", "-7/-2", "2^62+3/7"])
def test_div_and_mod_are_exact_and_truncate(a, b):
    ia, ib = tirx.IntImm("int64", a), tirx.IntImm("int64", b)
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    r = a - q * b
    assert int(eval_np(tirx.Div(ia, ib), {})) == q
    assert int(eval_np(tirx.Mod(ia, ib), {})) == r
    assert int(eval_np(tirx.FloorDiv(ia, ib), {})) == a // b
    assert int(eval_np(tirx.FloorMod(ia, ib), {})) == a % b


INT64 = st.integers(-2 ** 63 + 1, 2 ** 63 - 1)


@settings(max_examples=200, deadline=None)
@given(a=INT64, b=INT64.filter(lambda b: b != 0))
def test_division_matches_python_on_all_int64(a, b):
    ia, ib = tirx.IntImm("int64", a), tirx.IntImm("int64", b)
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    if -2 ** 63 <= q < 2 ** 63:
        assert eval_np(tirx.Div(ia, ib), {}) == q and eval_np(tirx.Mod(ia, ib), {}) == a - q * b
    if -2 ** 63 <= a // b < 2 ** 63:
        assert eval_np(tirx.FloorDiv(ia, ib), {}) == a // b
        assert eval_np(tirx.FloorMod(ia, ib), {}) == a % b


def test_eval_np_over_arrays_and_its_errors():
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    env = {i: np.arange(-3, 4)}
    assert eval_np(tirx.Div(i, 2), env).tolist() == [-1, -1, 0, 0, 0, 1, 1]
    assert eval_np(tirx.FloorMod(i, 2), env).tolist() == [1, 0, 1, 0, 1, 0, 1]
    assert eval_np(tirx.Cast("int32", i > 0), env).tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert eval_np(tirx.Let(j, i * 2, j + 1), env).tolist() == [-5, -3, -1, 1, 3, 5, 7]
    assert eval_np(tirx.IntImm("int32", 5) * 3, {}) == 15
    with pytest.raises(ValueError, match="free variable j"):
        eval_np(i + j, env)
    with pytest.raises(ValueError, match=r"division by zero in T.Div\(7, i\)"):
        eval_np(tirx.Div(tirx.IntImm("int32", 7), i), env)
    with pytest.raises(ValueError, match="cannot evaluate FloatImm"):
        eval_np(tirx.FloatImm("float32", 1.5), {})


def test_select_evaluates_each_branch_only_where_it_is_taken():
    """A guarded division (``k > 0 ? 8 // k : 0``) was refused as a division by zero,
    since both branches were evaluated at every point."""
    k = tirx.Var("k", "int32")
    env = {k: np.arange(-1, 3)}
    guarded = tirx.Select(k > 0, tirx.FloorDiv(8, k), k * 10)
    assert eval_np(guarded, env).tolist() == [-10, 0, 8, 4]
    ite = tirx.if_then_else(k != 0, tirx.Div(8, k), -1)
    assert eval_np(ite, env).tolist() == [-8, -1, 8, 4]
    assert eval_np(tirx.Select(k > 5, 1, 2), env).tolist() == [2, 2, 2, 2]
    with pytest.raises(ValueError, match=r"division by zero in 8 // k"):
        eval_np(tirx.Select(k >= 0, tirx.FloorDiv(8, k), 0), env)  # taken at k == 0


def test_iteration_space_of_a_1d_launch_with_else_branch_and_lets():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(16, threads=1) as bid:
            S = T.alloc_shared((16, 16), "float32")
            r: T.int32 = bid // 4
            if r % 2 == 0:
                T.copy(S, B[0, 0])
            else:
                for s in T.serial(r):
                    mcopy(A, S, src_coord=(s, bid % 4))

    from meshtensor.tilelang.ir.evaluate import iteration_space, region_box
    found = find_copies(k)[1]
    space = iteration_space(found, Launch.of(k, MESH, "test"), "test")
    # rows 1 and 3 run r = 1 and r = 3 copies per core
    assert space.size == 4 * 1 + 4 * 3
    assert np.bincount(space.core, minlength=16).tolist() == [0] * 4 + [1] * 4 + [0] * 4 + [3] * 4
    lo, hi = region_box(found.src, space, "test")
    assert lo.shape == (16, 2) and (hi - lo == 16).all()
    assert sorted(set(map(tuple, lo[space.core == 12].tolist()))) == [(0, 0), (16, 0), (32, 0)]


def test_condition_on_an_unbound_variable_is_refused():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            tx = T.get_thread_binding()
            if tx == 0:
                mcopy(A, S, src_coord=(bx, by))
            T.copy(S, B[0, 0])

    with pytest.raises(ValueError, match="AnalyzeMeshCommunication: cannot evaluate the condition"):
        analyze_mesh_communication(k)


def test_a_copy_inside_a_while_loop_is_refused():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            while bx < 2:
                mcopy(A, S, src_coord=(bx, by))
            T.copy(S, B[0, 0])

    from meshtensor.tilelang.ir.scope import WhileLoop
    assert isinstance(find_copies(k)[0].scope[-1], WhileLoop)
    with pytest.raises(ValueError, match=r"VerifyMeshTensors: a statement inside `while bx < 2` "
                                         r"runs a data-dependent number of times"):
        verify_mesh_tensors(k)


def test_bitwise_calls_evaluate_as_c_computes_them():
    """WrapNarrowingCasts writes ``T.Cast("uint8", x)`` as ``bitwise_and(x, 255)``: the
    evaluator reads it (a comm-op start was 'cannot be shown to stay in range')."""
    i = tirx.Var("i", "int32")
    pts = {i: np.arange(40)}
    assert eval_np(tirx.bitwise_and(i * 256 + 1, 255), pts).tolist() == [1] * 40
    assert eval_np(tirx.bitwise_or(i, 1), pts).tolist() == (np.arange(40) | 1).tolist()
    assert eval_np(tirx.bitwise_xor(i, 3), pts).tolist() == (np.arange(40) ^ 3).tolist()
    assert eval_np(tirx.shift_right(i, 2), pts).tolist() == (np.arange(40) >> 2).tolist()
    with pytest.raises(Overflow, match="overflows int32"):
        eval_np(tirx.shift_left(i, 27), pts)
    # a shift by the operand's width or more is undefined in C (x86 masks the amount)
    n = tirx.Var("n", "int32")  # a variable amount: TVM refuses a constant one itself
    with pytest.raises(Overflow, match="by 32 or more"):
        eval_np(tirx.shift_right(i, n), {i: np.arange(4), n: np.full(4, 40)})
    # an unsigned right shift is logical
    w = tirx.Var("w", "uint64")
    assert eval_np(tirx.shift_right(w, tirx.const(1, "uint64")),
                   {w: np.array([-(2 ** 63)], dtype=np.int64)}).tolist() == [2 ** 62]
