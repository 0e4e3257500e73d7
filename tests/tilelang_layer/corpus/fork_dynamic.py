"""The older fork's dynamic-shape codegen kernels (T.dynamic sizes in T.MeshTensor), verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/target/test_sunmmio_codegen_base_dynamic_opt_validate.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/target/test_sunmmio_codegen_base_dynamic_opt_validate.py::dynamic_allocate_copy_mma_kernel (line 71)
def dynamic_allocate_copy_mma_kernel(
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
):
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")
    # A_layout = make_zz_layout((M, K))
    # B_layout = make_zz_layout((K, N))
    # C_layout = make_zz_layout((M, N))

    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols
    grid_m = T.ceildiv(M, block_M)
    grid_n = T.ceildiv(N, block_N)

    shard_policy = T.MeshShardingPolicy()

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, device_mesh_config, dtype),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.copy(A[by * block_M, 0], A_shared)
                    T.copy(B[0, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared, transpose_B=True)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


# testing/python/target/test_sunmmio_codegen_base_dynamic_opt_validate.py::dynamic_zz_allocate_copy_mma_kernel (line 113)
def dynamic_zz_allocate_copy_mma_kernel(
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
):
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols
    grid_m = T.ceildiv(M, block_M)
    grid_n = T.ceildiv(N, block_N)

    shard_policy = T.MeshShardingPolicy()

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, device_mesh_config, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.copy(A[by * block_M, 0], A_shared)
                    T.copy(B[0, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared, transpose_B=True)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main
