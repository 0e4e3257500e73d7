"""Per-core memory is decided by allocation, and views are resolved to it (issue 26):
every buffer the kernel allocates, whatever its scope (fragments and ``T.alloc_buffer``'s
"global" included), is core-private; a view (``T.reshape``, ``T.view``,
``T.decl_buffer(data=...)``, ``access_ptr``) is its allocation seen with its own shape,
strides, offset and dtype. Each test here was silently wrong or crashed before."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
from tvm import tirx  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel, lower_mesh_comm, mesh_comm  # noqa: E402

pytestmark = pytest.mark.slow
MC = mesh_comm({"x": 4})


def run(kernel, *arrays):
    k = compile_mesh_kernel(kernel, compile_flags=["-O0"])
    ts = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]
    k(*ts)
    return [t.numpy() for t in ts]


# -- views --------------------------------------------------------------------------------------
def test_a_reshape_of_a_comm_dst_is_read_with_its_own_shape():
    @T.prim_func
    def k(Y: T.Tensor((4, 8), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((2, 4), "int32", scope="shared")
            D = T.alloc_shared((2, 4), "int32", scope="shared")
            for i, j in T.grid(2, 4):
                S[i, j] = bx * 8 + i * 4 + j
            MC.shift(S, D, ["x"], "x", 1, rotate=True)
            V = T.reshape(D, (4, 2))
            for i, j in T.grid(4, 2):
                Y[bx, i * 2 + j] = V[i, j]
    y, = run(k, np.zeros((4, 8), np.int32))
    assert y.tolist() == np.roll(np.arange(32).reshape(4, 8), 1, axis=0).tolist()


def test_a_2d_reshape_of_a_1d_comm_dst():
    """(crashed: "Buffer D is 1-dimensional, cannot be indexed with 2-dimensional indices")"""
    @T.prim_func
    def k(Y: T.Tensor((4, 8), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((8,), "int32", scope="shared")
            D = T.alloc_shared((8,), "int32", scope="shared")
            for i in T.serial(8):
                S[i] = bx * 8 + i
            MC.shift(S, D, ["x"], "x", 1, rotate=True)
            V = T.reshape(D, (2, 4))
            for i, j in T.grid(2, 4):
                Y[bx, i * 4 + j] = V[i, j]
    y, = run(k, np.zeros((4, 8), np.int32))
    assert y.tolist() == np.roll(np.arange(32).reshape(4, 8), 1, axis=0).tolist()


def test_a_region_of_a_view_as_the_comm_source():
    @T.prim_func
    def k(Y: T.Tensor((4, 4), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((8,), "int32", scope="shared")
            W = T.alloc_shared((2, 2), "int32", scope="shared")
            for i in T.serial(8):
                S[i] = bx * 8 + i
            V = T.reshape(S, (2, 4))
            MC.shift(V[0:2, 1:3], W[0:2, 0:2], ["x"], "x", 1, rotate=True)
            for i, j in T.grid(2, 2):
                Y[bx, i * 2 + j] = W[i, j]
    y, = run(k, np.zeros((4, 4), np.int32))
    src = (np.arange(32).reshape(4, 2, 4)[:, :, 1:3]).reshape(4, 4)
    assert y.tolist() == np.roll(src, 1, axis=0).tolist()  # core 1: [1, 2, 5, 6]


def test_a_view_in_another_dtype_as_the_comm_source():
    """(crashed: "dtype mismatch on BufferStore")"""
    @T.prim_func
    def k(Y: T.Tensor((4, 2), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((4,), "int16", scope="shared")
            D = T.alloc_shared((2,), "int32", scope="shared")
            for i in T.serial(4):
                S[i] = T.Cast("int16", bx * 4 + i)
            V = T.view(S, (2,), dtype="int32")
            MC.shift(V, D, ["x"], "x", 1, rotate=True)
            for i in T.serial(2):
                Y[bx, i] = D[i]
    y, = run(k, np.zeros((4, 2), np.int32))
    want = np.arange(16, dtype=np.int16).reshape(4, 4).view(np.int32)
    assert y.tolist() == np.roll(want, 1, axis=0).tolist()


def test_declared_views_with_offsets_as_both_operands():
    @T.prim_func
    def k(Y: T.Tensor((4, 8), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((8,), "int32", scope="shared")
            D = T.alloc_shared((8,), "int32", scope="shared")
            for i in T.serial(8):
                S[i] = bx * 8 + i
                D[i] = -1
            E = T.decl_buffer((2, 2), "int32", data=D.data, elem_offset=4, scope="shared")
            V = T.decl_buffer((2, 2), "int32", data=S.data, elem_offset=2, scope="shared")
            MC.shift(V, E, ["x"], "x", 1, rotate=True)
            for i in T.serial(8):
                Y[bx, i] = D[i]
    y, = run(k, np.zeros((4, 8), np.int32))
    want = np.full((4, 8), -1)
    want[:, 4:] = np.roll(np.arange(32).reshape(4, 8)[:, 2:6], 1, axis=0)
    assert y.tolist() == want.tolist()


def test_a_view_past_its_allocation_is_refused():
    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((8,), "int32", scope="shared")
            D = T.alloc_shared((8,), "int32", scope="shared")
            E = T.decl_buffer((2, 4), "int32", data=D.data, elem_offset=4, scope="shared")
            MC.shift(T.reshape(S, (2, 4)), E, ["x"], "x", 1, rotate=True)
    with pytest.raises(ValueError, match=r"'E', a view of 'D', covers bytes \[16, 47\] of an "
                                         r"allocation of 32 bytes"):
        lower_mesh_comm(k)


def test_access_ptr_after_a_comm_op_points_at_the_cores_own_copy():
    """``D.access_ptr`` after an exchange was ``tvm_access_ptr(D_all, 0, ...)``: every
    core wrote core 0's copy. It is now the core's pointer into the shared array."""
    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((4,), "int32", scope="shared")
            D = T.alloc_shared((4,), "int32", scope="shared")
            MC.shift(S, D, ["x"], "x", 1, rotate=True)
            T.evaluate(T.call_extern("int32", "consume", D.access_ptr("w")))
    low = lower_mesh_comm(k)
    binds, ptrs = {}, []

    def visit(n):
        if isinstance(n, tirx.Bind):
            binds[n.var.name] = n.value
        if isinstance(n, tirx.Call) and getattr(n.op, "name", "") == "tirx.tvm_access_ptr":
            ptrs.append(n.args[1])

    tirx.stmt_functor.post_order_visit(low.body, visit)
    [data] = ptrs
    assert data.name == "D_core"
    # the core's copy: the address of its first element in the shared array
    assert str(binds["D_core"]) == "T.address_of(D_all[core_x * 4])"


# -- buffers allocated in the kernel are per-core, whatever their scope ---------------------------
def test_a_region_start_read_from_an_in_kernel_global_buffer_is_refused():
    """(was evaluated once, with the last core's value: [15, 3, 7, 11])"""
    mc = mesh_comm({"x": 16})

    @T.prim_func
    def k(Y: T.Tensor((16,), "int32")):
        with T.Kernel(16, threads=1) as bx:
            G = T.alloc_buffer((1,), "int32")
            S = T.alloc_shared((4,), "int32", scope="shared")
            D = T.alloc_shared((1,), "int32", scope="shared")
            G[0] = bx
            mc.shift(S[G[0] % 4: G[0] % 4 + 1], D, ["x"], "x", 1, rotate=True)
            Y[bx] = D[0]
    with pytest.raises(ValueError, match=r"the start G\[0\] % 4 of the src region of 'S' "
                                         r"\(dim 0\) reads a per-core buffer"):
        compile_mesh_kernel(k)


def test_a_let_of_an_in_kernel_global_buffer_across_a_comm_op():
    """(crashed: "Load memory in places other than store")"""
    @T.prim_func
    def k(Y: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=1) as bx:
            G = T.alloc_buffer((1,), "int32")
            S = T.alloc_shared((1,), "int32", scope="shared")
            G[0] = bx * 10
            v = G[0]
            S[0] = bx
            MC.shift(S, S, ["x"], "x", 1, rotate=True)
            G[0] = 0
            Y[bx] = v + S[0]
    y, = run(k, np.zeros(4, np.int32))
    assert y.tolist() == [3, 10, 21, 32]


def test_a_comm_op_under_a_condition_on_an_in_kernel_global_buffer_is_refused():
    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            G = T.alloc_buffer((1,), "int32")
            S = T.alloc_shared((1,), "int32", scope="shared")
            G[0] = bx
            if G[0] >= 2:
                MC.shift(S, S, ["x"], "x", 1, rotate=True)
    with pytest.raises(ValueError, match=r"is under `if G\[0\] >= 2`, a condition that "
                                         r"depends on the core"):
        lower_mesh_comm(k)


# -- fragments ----------------------------------------------------------------------------------
def test_a_k_split_gemm_all_reduces_its_fragment_accumulator():
    """TileLang's standard accumulator, a fragment, in a comm op (was refused)."""
    @T.prim_func
    def k(A: T.Tensor((16, 32), "float32"), B: T.Tensor((32, 16), "float32"),
          C: T.Tensor((16, 16), "float32")):
        with T.Kernel(4, threads=1) as bx:
            As = T.alloc_shared((16, 8), "float32", scope="shared")
            Bs = T.alloc_shared((8, 16), "float32", scope="shared")
            P = T.alloc_fragment((16, 16), "float32")
            Q = T.alloc_fragment((16, 16), "float32")
            for i, j in T.Parallel(16, 16):
                P[i, j] = 0.0
            T.copy(A[0, bx * 8], As)
            T.copy(B[bx * 8, 0], Bs)
            T.gemm(As, Bs, P)
            MC.all_reduce(P, Q, ["x"])
            if bx == 0:
                T.copy(Q, C[0, 0])
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (16, 32)).astype(np.float32)  # sums exact in float32
    b = rng.integers(-3, 4, (32, 16)).astype(np.float32)
    *_, c = run(k, a, b, np.zeros((16, 16), np.float32))
    assert np.array_equal(c, a @ b)


# -- every evaluation in the expression's own dtype --------------------------------------------
def test_a_dst_start_that_wraps_in_int16_is_refused():
    """``T.Cast("int16", k * 20000) // 20000`` is 0, 1, 2 in int64 but -2 at k = 2 in C:
    core c wrote before its own ``D`` (into another buffer), silently."""
    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((1,), "int32", scope="shared")
            D = T.alloc_shared((4,), "int32", scope="shared")
            for kk in T.serial(3):
                start = T.Cast("int16", kk * 20000) // 20000
                MC.shift(S, D[start:start + 1], ["x"], "x", 1, rotate=True)
    with pytest.raises(ValueError, match=r"dst region of 'D' runs outside dim 0 of size 4: "
                                         r"start .* takes values in \[-2, 1\]"):
        lower_mesh_comm(k)


def test_a_root_that_wraps_in_int16_is_refused():
    mc = mesh_comm({"x": 4, "y": 4})

    @T.prim_func
    def k():
        with T.Kernel(4, 4, threads=1) as (bx, by):
            S = T.alloc_shared((1,), "int32", scope="shared")
            for kk in T.serial(3):
                mc.broadcast(S, S, ["y"], root=[T.Cast("int16", kk * 16384) // 16384])
    with pytest.raises(ValueError, match=r"root coordinate .* takes values in \[-2, 1\], out "
                                         r"of range \[0, 4\)"):
        lower_mesh_comm(k)


def test_a_start_that_wraps_into_range_runs():
    """``T.Cast("uint8", k * 256 + 1)`` is 1 for every k, as the C code computes it (it
    was refused: 257 and 513 in int64)."""
    @T.prim_func
    def k(Y: T.Tensor((4, 4), "int32")):
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((1,), "int32", scope="shared")
            D = T.alloc_shared((4,), "int32", scope="shared")
            for i in T.serial(4):
                D[i] = -1
            S[0] = bx
            for kk in T.serial(40):  # not unrolled: TileLang folds the cast of a constant
                start = T.Cast("int32", T.Cast("uint8", kk * 256 + 1))
                MC.shift(S, D[start:start + 1], ["x"], "x", 1, rotate=True)
            for i in T.serial(4):
                Y[bx, i] = D[i]
    y, = run(k, np.zeros((4, 4), np.int32))
    assert y[:, 1].tolist() == [3, 0, 1, 2] and (y[:, [0, 2, 3]] == -1).all()


def test_a_start_that_overflows_int32_is_refused():
    """Signed overflow is undefined in C: no value is right, so the op is refused."""
    @T.prim_func
    def k():
        with T.Kernel(4, threads=1) as bx:
            S = T.alloc_shared((1,), "int32", scope="shared")
            D = T.alloc_shared((4,), "int32", scope="shared")
            for kk in T.serial(3):
                MC.shift(S, D[(kk * 1500000000) % 4:(kk * 1500000000) % 4 + 1], ["x"], "x", 1,
                         rotate=True)
    with pytest.raises(ValueError, match=r"mesh_comm.shift \(comm op #0\): .*kk \* 1500000000 "
                                         r"overflows int32 \(undefined in C\)"):
        lower_mesh_comm(k)


def test_wrap_narrowing_casts_before_after():
    """A narrowing cast's wrap is written out in the wider type (TVM folded the cast of
    a known value into an out-of-range literal and TileLang stopped)."""
    from meshtensor.tilelang.transform.wrap_casts import wrap_narrowing_casts
    import tvm

    @T.prim_func
    def before(Y: T.Tensor((4,), "int32")):
        for k in T.serial(4):
            Y[k] = T.Cast("int32", T.Cast("int16", k * 20000)) + T.Cast("int32", T.Cast("uint8", k))

    @T.prim_func
    def expected(Y: T.Tensor((4,), "int32")):
        for k in T.serial(4):
            Y[k] = T.Cast("int32", T.Cast("int16", T.bitwise_and(k * 20000 + 32768, 65535) - 32768)) \
                + T.Cast("int32", T.Cast("uint8", T.bitwise_and(k, 255)))

    tvm.ir.assert_structural_equal(wrap_narrowing_casts(before),
                                   expected.with_attr("global_symbol", "before"))
