"""Indices that stock TileLang 0.1.15 folds into other values run exactly (issue 26): its
iterator-map simplification turns ``((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3`` over
``[0, 6)`` into ``(b + 3) % 6`` and the copy start ``(s % 2) * 2 + (s + 1) % 2`` into
``((s + 1) % 2) * 3``. ``ProtectFoldedIndices`` (run by ``compile_mesh_kernel``)
computes such an index into a variable first. Each run test failed before."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
import tvm  # noqa: E402
from tvm.script import tirx as TS  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel, mesh_comm  # noqa: E402
from meshtensor.tilelang.transform.protect_indices import protect_folded_indices  # noqa: E402


def run(kernel, *arrays):
    k = compile_mesh_kernel(kernel)  # the default -O3 flags: what users get
    ts = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]
    k(*ts)
    return [t.numpy() for t in ts]


def folded(b):
    return ((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3


@pytest.mark.slow
def test_the_core_id_of_a_1d_mesh_in_a_folded_index():
    """On ``mesh_comm({"x": 6})`` the core id is one loop variable once lowered: it gave
    ``[12, 13, 14, 15, 10, 11]``."""
    mc = mesh_comm({"x": 6})

    @T.prim_func
    def k(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(6, threads=1) as b:
            S = T.alloc_shared((1,), "int32", scope="shared")
            D = T.alloc_shared((1,), "int32", scope="shared")
            S[0] = X[b]
            mc.shift(S, D, ["x"], "x", 1, rotate=True)
            Y[((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3] = D[0]
    x = np.arange(10, 16, dtype=np.int32)
    _, y = run(k, x, np.zeros(6, np.int32))
    want = np.zeros(6, np.int32)
    want[[folded(b) for b in range(6)]] = np.roll(x, 1)
    assert y.tolist() == want.tolist() == [14, 12, 13, 11, 15, 10]


@pytest.mark.slow
@pytest.mark.parametrize("loop", ["serial", "parallel"])
def test_a_loop_variable_in_a_folded_index_without_comm_ops(loop):
    @T.prim_func
    def serial(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(6):
                Y[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3] = X[i]

    @T.prim_func
    def parallel(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.Parallel(6):
                Y[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3] = X[i]

    x = np.arange(10, 16, dtype=np.int32)
    _, y = run(serial if loop == "serial" else parallel, x, np.zeros(6, np.int32))
    want = np.zeros(6, np.int32)
    want[[folded(i) for i in range(6)]] = x
    assert y.tolist() == want.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["if", "let", "while"])
def test_a_folded_index_in_a_condition_or_a_let(where):
    """A load in an ``if`` or ``while`` condition or a let's value is an index too: the
    let and the while failed before; a condition is how the checked run reads its shadow record (the fuzzer's
    reproducer checked_run_folded_store_index: a false race on core -1)."""
    @T.prim_func
    def in_if(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(6):
                if X[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3] > 12:
                    Y[i] = 1
                else:
                    Y[i] = 0

    @T.prim_func
    def in_let(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(6):
                v = X[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3]
                Y[i] = v

    @T.prim_func
    def in_while(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            C = T.alloc_local((1,), "int32")
            for i in T.serial(6):
                C[0] = 0
                while C[0] < X[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3]:
                    C[0] = C[0] + 1
                Y[i] = C[0]

    x = np.arange(10, 16, dtype=np.int32)
    k = {"if": in_if, "let": in_let, "while": in_while}[where]
    _, y = run(k, x, np.zeros(6, np.int32))
    got = x[[folded(i) for i in range(6)]]
    assert y.tolist() == ((got > 12).astype(np.int32) if where == "if" else got).tolist()


@pytest.mark.slow
@pytest.mark.parametrize("start", ["s % 2 * 2 + (s + 1) % 2", "(s // 2 + s % 2 + 1) % 2 * 4"])
def test_copy_starts_mixing_div_and_mod(start):
    """The case docs/comm.md listed as silently wrong (decision 72)."""
    f = eval(f"lambda s: {start}")  # noqa: S307 (a fixed test table)

    @T.prim_func
    def k(X: T.Tensor((16,), "float32"), Y: T.Tensor((4, 4), "float32")):
        with T.Kernel(4, threads=1) as s:
            S = T.alloc_shared((4,), "float32", scope="shared")
            T.copy(X[f(s): f(s) + 4], S)
            T.copy(S, Y[s, 0:4])
    x = np.arange(16, dtype=np.float32)
    _, y = run(k, x, np.zeros((4, 4), np.float32))
    assert y.tolist() == [x[f(s): f(s) + 4].tolist() for s in range(4)]


def test_protect_folded_indices_before_after():
    """Only the index that folds wrongly is computed first; the others stay as written."""
    @T.prim_func
    def before(X: T.Tensor((6,), "int32"), Y: T.Tensor((6,), "int32")):
        for i in T.serial(6):
            Y[((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3] = X[(i // 3) * 3 + i % 3]

    @TS.prim_func
    def expected(X_handle: TS.handle, Y_handle: TS.handle):
        X = TS.match_buffer(X_handle, (6,), "int32", strides=(1,))
        Y = TS.match_buffer(Y_handle, (6,), "int32", strides=(1,))
        for i in range(6):
            index = TS.alloc_buffer((1,), "int32", scope="local")
            index[0] = ((i // 3 + 1) % 2) * 3 + (i % 3 + 1) % 3
            Y[index[0]] = X[(i // 3) * 3 + i % 3]

    tvm.ir.assert_structural_equal(protect_folded_indices(before),
                                   expected.with_attr("global_symbol", "before"))


def test_a_kernel_whose_indices_fold_rightly_is_unchanged():
    from meshtensor.tilelang.kernels.gemm import build_gemm
    f = build_gemm("summa_comm", 32, 32, 32)
    assert protect_folded_indices(f).same_as(f)
