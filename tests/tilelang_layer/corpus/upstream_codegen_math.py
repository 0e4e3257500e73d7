"""Kernels of the current SUNMMIO/Tilelang codegen tests
(``testing/python/sunmmio/codegen/``) that use ``T.MeshTensor`` or ``T.comm`` and whose
steps call C math functions (``T.exp``, ``T.exp2``, ``T.log``, ``T.log2``, ``T.rsqrt``,
``T.ieee_frcp``), verbatim; each names its source file and the commit it was read at.
Import lines only differ: ``target`` (the tests' ``@target("Sunmmio")``, from
``testing.python.sunmmio.common.compile_pipeline``) comes from the corpus harness;
``tm.enable`` provides SUNMMIO's names (``T.MeshTensor``, ``T.placement``, ``T.Tiles``,
the layout makers). The tests' codegen checks are not ported: the corpus runs the
kernels.
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang
import tilelang.language as T
from tilelang.layout import make_aligned_row_major, make_row_major, make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/codegen/test_softplus_1d_dynamic_opt_validate.py
# @ ebc40d2763423a150627d396d30e5657275bae31

@target("Sunmmio")
def softplus_1d_dynamic(block_N=256, in_dtype=T.float32, out_dtype=T.float32):
    """Original form: bind the RSRAM load to a scalar before using it."""
    N = T.dynamic("n")

    row_major_layout = make_row_major((N,))
    placement = T.placement.mesh_as_line(0)

    @T.prim_func
    def elem_softplus(
        A: T.MeshTensor((N,), placement, dtype=in_dtype, layout=row_major_layout),  # type: ignore
        B: T.MeshTensor((N,), placement, dtype=out_dtype, layout=row_major_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_N,), in_dtype)
            B_shared = T.alloc_shared((block_N,), out_dtype)

            for bx in T.serial(T.ceildiv(A.get_local_extent()[0], block_N)):
                T.copy(A[bx * block_N : (bx + 1) * block_N], A_shared)
                for i in T.Tiles([T.min(block_N, A.get_local_extent()[0] - bx * block_N)]):
                    value = A_shared[i]
                    B_shared[i] = T.max(value, 0) + T.log(1 + T.exp(-T.abs(value)))
                T.copy(B_shared, B[bx * block_N : (bx + 1) * block_N])

    return elem_softplus


@target("Sunmmio")
def softplus_1d_dynamic_inline(block_N=256, in_dtype=T.float32, out_dtype=T.float32):
    """Inline form: repeat the same RSRAM load expression at each use site."""
    N = T.dynamic("n")

    row_major_layout = make_row_major((N,))
    placement = T.placement.mesh_as_line(0)

    @T.prim_func
    def elem_softplus_inline(
        A: T.MeshTensor((N,), placement, dtype=in_dtype, layout=row_major_layout),  # type: ignore
        B: T.MeshTensor((N,), placement, dtype=out_dtype, layout=row_major_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_N,), in_dtype)
            B_shared = T.alloc_shared((block_N,), out_dtype)

            for bx in T.serial(T.ceildiv(A.get_local_extent()[0], block_N)):
                T.copy(A[bx * block_N : (bx + 1) * block_N], A_shared)
                for i in T.Tiles([T.min(block_N, A.get_local_extent()[0] - bx * block_N)]):
                    B_shared[i] = T.max(A_shared[i], 0) + T.log(1 + T.exp(-T.abs(A_shared[i])))
                T.copy(B_shared, B[bx * block_N : (bx + 1) * block_N])

    return elem_softplus_inline
