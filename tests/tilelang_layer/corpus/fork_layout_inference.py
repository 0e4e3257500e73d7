"""The older fork's layout inference test kernels that use T.comm or T.MeshTensor, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::broadcast_zz_kernel (line 597)
def broadcast_zz_kernel():
    """Gemm produces ZZ on C_shared (RSRAM), broadcast to B_shared (RSRAM)."""
    M, N, K = 128, 128, 64
    block_M, block_N, block_K = 64, 64, 32
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C_bcast = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared, transpose_B=False)

            T.comm.broadcast(C_shared, C_bcast, (1, 2), direction="all")
            T.copy(C_bcast, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::broadcast_zn_kernel (line 643)
def broadcast_zn_kernel():
    """Annotate src with ZN, broadcast to dst — dst should get ZN."""
    block_M, block_N = 64, 64
    dtype = T.float16

    zn_layout = make_zn_layout((block_M, block_N), axes=[0, 1], block_shape=[32, 32])

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_N), dtype),
        B: T.Tensor((block_M, block_N), dtype),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            T.annotate_layout({A_shared: zn_layout})
            T.copy(A[0, 0], A_shared)
            T.comm.broadcast(A_shared, B_shared, (1, 2), direction="all")
            T.copy(B_shared, B[0, 0])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::broadcast_from_global_to_rsram_kernel (line 676)
def broadcast_from_global_to_rsram_kernel():
    """Broadcast directly from a global input into RSRAM."""
    block_M, block_N = 64, 64
    dtype = T.float16

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_N), dtype),
        B: T.Tensor((block_M, block_N), dtype),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            T.comm.broadcast(A, B_shared, (1, 2), direction="h")
            T.copy(B_shared, B[0, 0])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::put_zz_kernel (line 718)
def put_zz_kernel():
    """Gemm produces ZZ on C_shared, put to C_put — C_put should get ZZ."""
    M, N, K = 128, 128, 64
    block_M, block_N, block_K = 64, 64, 32
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C_put = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared, transpose_B=False)

            T.comm.put(C_shared, C_put, (1, 2), (2, 3))
            T.copy(C_put, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::allgather_zz_kernel (line 763)
def allgather_zz_kernel():
    """Gemm produces ZZ on C_shared, allgather to C_gather (3D)."""
    M, N, K = 128, 128, 64
    block_M, block_N, block_K = 64, 64, 32
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C_gather = T.alloc_shared((16, block_M, block_N), accum_dtype, scope="shared.rsram")

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared, transpose_B=False)

            T.comm.all_gather(C_shared, C_gather, direction="all")

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::allgather_row_major_kernel (line 807)
def allgather_row_major_kernel():
    """Row-major src, allgather to 3D recv — recv should be row-major."""
    block_M, block_N = 64, 64
    dtype = T.float16

    from tilelang.layout.sunmmio_layouts import make_row_major

    rm_layout = make_row_major([block_M, block_N])

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_N), dtype),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            A_gather = T.alloc_shared((16, block_M, block_N), dtype, scope="shared.rsram")

            T.annotate_layout({A_shared: rm_layout})
            T.copy(A[0, 0], A_shared)
            T.comm.all_gather(A_shared, A_gather, direction="all")

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::dram_zn_to_asram_kernel (line 967)
def dram_zn_to_asram_kernel():
    """DRAM buffer with ZN layout (via MeshTensor) copied to ASRAM → IsZZLike check should fail."""
    from tilelang.language.mesh_tensor import MeshShardingPolicy, MeshReplicationType

    M, K, N = 64, 32, 64
    block_M, block_K, block_N = 64, 32, 64
    dtype = "float16"
    accum_dtype = "float32"

    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)

    # ZN layout on DRAM — incompatible with ASRAM (Gemm.A requires ZZ-like)
    zn_dram = make_zn_layout((M, K), axes=[0, 1], block_shape=[32, 32])

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, dtype=dtype, layout=zn_dram)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, dtype=dtype)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, dtype=accum_dtype)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.copy(A[0, 0], A_shared)
            T.copy(B[0, 0], B_shared)
            T.gemm(A_shared, B_shared, C_shared, transpose_B=False)
            T.copy(C_shared, C[0, 0])

    return tvm.IRModule({"main": kernel})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::dram_zn_to_wsram_kernel (line 1022)
def dram_zn_to_wsram_kernel():
    """DRAM buffer with ZN layout (via MeshTensor) copied to WSRAM → IsZZLike check should fail."""
    from tilelang.language.mesh_tensor import MeshShardingPolicy, MeshReplicationType

    M, K, N = 64, 32, 64
    block_M, block_K, block_N = 64, 32, 64
    dtype = "float16"
    accum_dtype = "float32"

    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)

    # ZN layout on DRAM B — incompatible with WSRAM DMA (requires ZZ-like)
    zn_dram = make_zn_layout((K, N), axes=[0, 1], block_shape=[32, 32])

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, dtype=dtype)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, dtype=dtype, layout=zn_dram)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, dtype=accum_dtype)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.copy(A[0, 0], A_shared)
            T.copy(B[0, 0], B_shared)
            T.gemm(A_shared, B_shared, C_shared, transpose_B=False)
            T.copy(C_shared, C[0, 0])

    return tvm.IRModule({"main": kernel})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::broadcast_mismatched_layouts_kernel (line 1192)
def broadcast_mismatched_layouts_kernel():
    """Annotate src with ZZ and dst with ZN — both immutable, broadcast derives conflict."""
    block_M, block_N = 64, 64
    dtype = T.float16

    zz_layout = make_zz_layout((block_M, block_N), axes=[0, 1], block_shape=[32, 32])
    zn_layout = make_zn_layout((block_M, block_N), axes=[0, 1], block_shape=[32, 32])

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_N), dtype),
        B: T.Tensor((block_M, block_N), dtype),
    ):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            T.annotate_layout({A_shared: zz_layout, B_shared: zn_layout})
            T.copy(A[0, 0], A_shared)
            T.comm.broadcast(A_shared, B_shared, (1, 2), direction="all")
            T.copy(B_shared, B[0, 0])

    return tvm.IRModule({"main": main})


# testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::matmul_persistent (line 1310)
def matmul_persistent(M, N, K, block_M, block_N, block_K, num_stages, dtype=T.bfloat16, accum_dtype=T.float32):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, accum_dtype, layout=C_layout),
    ):
        with T.Kernel(ncores) as (_cid):
            sharded_M, sharded_K = A.shape
            _, sharded_N = B.shape

            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            # Each core iterates its own sharded tile grid with plain nested
            # loops. The MeshTensor sharding already distributes A/B/C across
            # the core mesh, so no persistent core-distribution loop is used.
            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=num_stages):
                        # Stage each A/B tile into a shared buffer, then
                        # all-gather it across the core row / column.
                        # all_gather needs a Buffer source (not an indexed
                        # element) and an explicit concat axis.
                        T.copy(A[bx * block_M, k * block_K], A_shared)
                        T.comm.all_gather(A_shared, A_shared_dist, direction="horizontal", axis=-1)
                        T.copy(B[k * block_K, by * block_N], B_shared)
                        T.comm.all_gather(B_shared, B_shared_dist, direction="vertical", axis=0)
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)

                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return tvm.IRModule({"main": main})
