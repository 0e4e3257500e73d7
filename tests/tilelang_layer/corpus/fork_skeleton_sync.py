"""The older fork's codegen-skeleton sync kernel, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/target/test_sunmmio_codegen_skeleton.py`` at commit cf1114396fadf4e751239cb02436e143c8bdcb9a (branch pipeline_rebase). Each kernel factory below is
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


# testing/python/target/test_sunmmio_codegen_skeleton.py::func_sync_kernel (line 199)
def func_sync_kernel(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((M, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=1) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            E_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")

            T.gemm(A_shared, B_shared, C_shared)
            if by <= 2:
                T.copy(C_shared, D_shared)

            if bx <= 2:
                T.clear(D_shared)

            for i in range(5):
                C_shared[i, 0] = C_shared[i, 0] + 1.0

            for _i in range(10):
                T.comm.broadcast(D_shared, E_shared, (0, 0), direction="h")
                E_shared[0, 0] = E_shared[0, 0] + 1.0
                T.comm.broadcast(E_shared, D_shared, (0, 0), direction="h")

    return kernel
