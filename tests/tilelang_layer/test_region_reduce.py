"""RegionReductions: a tile reduction over part of a buffer reduces that part (TileLang's
CPU lowering read and wrote whole buffers: a silent wrong value)."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.transform.region_reduce import region_reductions  # noqa: E402


def _kernel():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), M: T.Tensor((4,), "float32"),
          S: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            a = T.alloc_fragment((4, 8), "float32")
            m = T.alloc_fragment((4,), "float32")
            s = T.alloc_fragment((8,), "float32")
            T.copy(A, a)
            T.copy(S, s)
            T.reduce_max(a[0:4, 1:4], m, dim=1, clear=True)
            T.reduce_sum(a[1:3, 2:6], s[2:6], dim=0, clear=False)
            T.copy(m, M)
            T.copy(s, S)
    return k


@pytest.mark.slow
def test_a_reduction_over_a_region_reduces_that_region():
    """Before: TileLang's layout inference stopped on these fragments (InternalError);
    on SUNMMIO's scopes (the upstream's sinkhorn kernel, corpus case
    upstream_codegen_hybrid_tail_predicate_mask) the whole rows were read: a silent
    wrong maximum."""
    a = -np.arange(32, dtype=np.float32).reshape(4, 8)
    a[:, 6] = 9
    s0 = np.arange(8, dtype=np.float32) * 0.5
    m, s = torch.zeros(4), torch.from_numpy(s0.copy())
    compile_mesh_kernel(_kernel(), compile_flags=["-O1"])(torch.from_numpy(a), m, s)
    np.testing.assert_array_equal(m.numpy(), a[:, 1:4].max(axis=1))
    want = s0.copy()
    want[2:6] = s0[2:6] + (np.float32(0) + a[1, 2:6] + a[2, 2:6])
    np.testing.assert_array_equal(s.numpy(), want)


def test_whole_buffer_reductions_are_left_to_tilelang():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=1) as bx:
            a = T.alloc_fragment((4, 8), "float32")
            m = T.alloc_fragment((4,), "float32")
            T.reduce_max(a, m, dim=1)
    assert region_reductions(k).same_as(k)


def test_a_region_reduction_becomes_its_loops():
    text = region_reductions(_kernel()).script()
    assert "T.reduce(" not in text
    assert "for ri in range(3)" in text and "for ri in range(2)" in text
