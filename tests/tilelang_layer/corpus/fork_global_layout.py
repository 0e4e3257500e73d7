"""The older fork's global-layout test kernels, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::test_global_buffer_layout_populated_for_sunmmio (line 62)
def test_global_buffer_layout_populated_for_sunmmio():
    """
    Test that global buffer layouts from tensor_meta are populated into layout_map
    during SunmmioLayoutInference pass for Sunmmio target.
    """
    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)

    M, N, K = 64, 64, 64
    block_M, block_N, block_K = 32, 32, 32

    A_layout = make_row_major((M, K))
    B_layout = make_row_major((K, N))
    C_layout = make_row_major((M, N))

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, dtype="float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, dtype="float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, dtype="float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])
    return kernel


# testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::test_row_major_global_layout_values (line 154)
def test_row_major_global_layout_values():
    """
    Test that the layout created from tensor_meta produces correct forward index mapping.
    """
    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)

    M, N, K = 64, 64, 64
    block_M, block_N, block_K = 32, 32, 32

    A_layout = make_row_major((M, K))
    B_layout = make_row_major((K, N))
    C_layout = make_row_major((M, N))

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, dtype="float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, dtype="float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, dtype="float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])
    return kernel


# testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::test_dynamic_shape_global_buffer_layout (line 212)
def test_dynamic_shape_global_buffer_layout():
    """
    Test that ParseGlobalBufferLayout correctly handles symbolic (dynamic) shapes.
    """
    M_var = tir.Var("M", "int32")
    K_var = tir.Var("K", "int32")

    block_M, block_N, block_K = 32, 32, 32

    policy = MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    device_mesh = (2, 2)

    A_tensor = T.MeshTensor((M_var, K_var), policy, device_mesh, dtype="float16")
    B_tensor = T.MeshTensor((K_var, 64), policy, device_mesh, dtype="float16")
    C_tensor = T.MeshTensor((M_var, 64), policy, device_mesh, dtype="float32")

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(T.ceildiv(64, block_N), T.ceildiv(M_var, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")

            for k in T.Pipelined(T.ceildiv(K_var, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[by * block_M, bx * block_N])
    return kernel
