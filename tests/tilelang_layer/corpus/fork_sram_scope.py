"""The older fork's SRAM scope inference test kernels, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/transform/test_tilelang_transform_sunmmio_infer_sram_scope.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/transform/test_tilelang_transform_sunmmio_infer_sram_scope.py::matmul (line 784)
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    tile_size = (8, 8)
    index_map = (-2, -1)

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.annotate_tileview({A_shared: make_tileview(A_shared, tile_size, index_map)})
            T.annotate_tileview({B_shared: make_tileview(B_shared, tile_size, index_map)})
            T.annotate_tileview({C_shared: make_tileview(C_shared, tile_size, index_map)})

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=4):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# testing/python/transform/test_tilelang_transform_sunmmio_infer_sram_scope.py::auto_insert_copy_matmul (line 885)
def auto_insert_copy_matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (M, K),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (K, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (M, N),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=4):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                T.gemm(C_shared, B_shared, C_shared)
                T.gemm(A_shared, C_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# testing/python/transform/test_tilelang_transform_sunmmio_infer_sram_scope.py::sliced_conflict_matmul (line 964)
def sliced_conflict_matmul(dtype="float16", accum_dtype="float"):
    A_layout = make_zz_layout((128, 128), [0, 1], (32, 32))
    B_layout = make_zz_layout((128, 128), [0, 1], (32, 32))
    C_layout = make_zz_layout((128, 128), [0, 1], (32, 32))

    @T.prim_func
    def gemm(
        A: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=A_layout,
        ),
        B: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=dtype,
            layout=B_layout,
        ),
        C: T.MeshTensor(
            (128, 128),
            sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
            device_mesh_config=(2, 2),
            dtype=accum_dtype,
            layout=C_layout,
        ),
    ):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_shared = T.alloc_shared((32, 32), dtype)
            B_shared = T.alloc_shared((32, 32), dtype)
            C_shared = T.alloc_shared((32, 32), accum_dtype)

            T.copy(A[0:32, 0:32], A_shared)
            T.copy(B[0:32, 0:32], B_shared)
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(B_shared[0:16, 4:20], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], B_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], A_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], B_shared[0:16, 4:20], A_shared[0:16, 0:16])
            T.gemm(C_shared[0:16, 0:16], B_shared[0:16, 4:20], C_shared[0:16, 0:16])
            T.gemm(A_shared[0:16, 0:16], C_shared[0:16, 4:20], C_shared[0:16, 0:16])

    return gemm
