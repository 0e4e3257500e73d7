"""``OneDynamicShared``: a kernel with several ``shared.dyn`` buffers compiles on the C
back end (TileLang 0.1.15 allows one dynamic allocation per kernel), with each buffer
and its views moved to ``shared`` and the values unchanged."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402
import tvm  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.transform.shared_scope import one_dynamic_shared  # noqa: E402


def _pair(scope_a, scope_b):
    @T.prim_func
    def k(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A = T.alloc_shared((8,), "float32", scope=scope_a)
            B = T.alloc_shared((2, 4), "float32", scope=scope_b)
            V = T.reshape(A, (2, 4))
            for i in T.serial(8):
                A[i] = X[i]
            for i, j in T.grid(2, 4):
                B[i, j] = V[i, j] * 2
            for i in T.serial(8):
                Y[i] = B[i // 4, i % 4] + A[i]
    return k


def test_two_shared_dyn_buffers_become_shared_before_after():
    got = one_dynamic_shared(_pair("shared.dyn", "shared.dyn"))
    tvm.ir.assert_structural_equal(got, _pair("shared", "shared"))


def test_one_shared_dyn_buffer_is_left_as_written():
    k = _pair("shared.dyn", "shared")
    assert one_dynamic_shared(k).same_as(k)


@pytest.mark.slow
def test_two_shared_dyn_buffers_run_on_the_c_back_end():
    """Stock tilelang.compile stops ('Only one dynamic shared memory allocation');
    compile_mesh_kernel runs it with the values the kernel means."""
    k = _pair("shared.dyn", "shared.dyn")
    with pytest.raises(Exception, match="dynamic shared memory"):
        tilelang.compile(k, target="c")
    x = np.arange(8, dtype=np.float32)
    y = torch.zeros(8)
    compile_mesh_kernel(k)(torch.from_numpy(x), y)
    assert y.numpy().tolist() == (3 * x).tolist()
