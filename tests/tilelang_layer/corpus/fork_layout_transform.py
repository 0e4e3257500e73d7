"""The older fork's layout-transform pass test kernels, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
the source's text unchanged (a kernel written inside a test function is that function's
statements up to its ``@T.prim_func``, returned); only import lines differ:
``tm.enable`` provides SUNMMIO's names (``T.comm``, ``T.MeshTensor``, the layout makers,
``driver.get_sunmmio_device_mesh_config``, ``tilelang.language.mesh_tensor``).
"""
# flake8: noqa
import tilelang
import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.carver.arch import driver
from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
from tilelang.layout import make_row_major, make_tileview, make_zn_layout, make_zz_layout
from tvm import tirx as tir

import sys

target = sys.modules["tm_corpus_harness"].target  # the tests' @target("Sunmmio")

M, N = 128, 128
DTYPE = T.float16
def _dram(shape, layout):
    """A DRAM tensor on the Sunmmio device mesh, carrying an explicit layout —
    the T.MeshTensor declaration style of sunmmio_example_gemm.py.

    A fully-replicated policy keeps each core's buffer at the declared shape:
    these are single-core layout tests (unlike the sharded GEMM example), so
    sharding must not perturb the shapes the assertions rely on.
    """
    mesh = driver.get_sunmmio_device_mesh_config()
    policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    return T.MeshTensor(shape, policy, mesh, DTYPE, layout=layout)

# testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py::mismatched_copy_kernel (line 105)
def mismatched_copy_kernel():
    """Row-major DRAM <-> ZZ RSRAM (default), both directions — combos 1 & 2."""

    @T.prim_func
    def main(
        A: _dram((M, N), make_row_major((M, N))),
        B: _dram((M, N), make_row_major((M, N))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.copy(A, A_shared)  # DRAM(row-major) -> RSRAM(ZZ default)
            T.copy(A_shared, B)  # RSRAM(ZZ) -> DRAM(row-major)

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py::zz_dram_kernel (line 121)
def zz_dram_kernel():
    """ZZ DRAM <-> row-major RSRAM, both directions — combos 3 & 4."""

    @T.prim_func
    def main(
        A: _dram((M, N), make_zz_layout((M, N), [0, 1], (32, 32))),
        B: _dram((M, N), make_zz_layout((M, N), [0, 1], (32, 32))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: make_row_major((M, N))})
            T.copy(A, A_shared)  # DRAM(ZZ) -> RSRAM(row-major)
            T.copy(A_shared, B)  # RSRAM(row-major) -> DRAM(ZZ)

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py::matched_copy_kernel (line 138)
def matched_copy_kernel():
    """Row-major DRAM and row-major RSRAM (annotated) — layouts match, so the
    copy stays a plain dma_copy."""

    @T.prim_func
    def main(A: _dram((M, N), make_row_major((M, N)))):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((M, N), DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: make_row_major((M, N))})
            T.copy(A, A_shared)  # DRAM(row-major) -> RSRAM(row-major), matched

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py::zz_dram_reduce_kernel (line 152)
def zz_dram_reduce_kernel():
    """End-to-end: ZZ DRAM (3x256x256) -> RSRAM, axis-2 reduction -> row-major
    RSRAM (3x256), copied back to ZZ DRAM (3x256).

    Out_sh needs no annotation: the reduction is over axis 2 — a blocked dim
    of the ZZ layout — so ReduceOp::InferLayout assigns Out_sh a row-major
    layout, making the final store a ZZ <- row-major transform.  The matched
    ZZ->ZZ load stays a plain dma_copy.
    """
    b, h, w = 3, 256, 256

    @T.prim_func
    def main(
        A: _dram((b, h, w), make_zz_layout((b, h, w), [1, 2], (32, 32))),
        Out: _dram((b, h), make_zz_layout((b, h), [0, 1], (32, 32))),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_sh = T.alloc_shared((b, h, w), DTYPE, scope="shared.rsram")
            Out_sh = T.alloc_shared((b, h), DTYPE, scope="shared.rsram")
            T.copy(A, A_sh)  # ZZ DRAM -> ZZ RSRAM (matched)
            T.reduce_sum(A_sh, Out_sh, dim=2)  # axis-2 reduce -> row-major Out_sh
            T.copy(Out_sh, Out)  # row-major RSRAM -> ZZ DRAM (transform)

    return tvm.IRModule({"main": main})
