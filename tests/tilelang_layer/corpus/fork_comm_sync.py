"""The older fork's comm and sync codegen kernels, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::comm_broadcast_kernel (line 22)
@target("Sunmmio")
def comm_broadcast_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float16"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            T.copy(A[0, bx * block_N], A_shared)
            T.comm.broadcast(A_shared, B_shared, (0, 0), direction="h")
            T.copy(B_shared, B[0, bx * block_N])

    return main


# testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::comm_put_kernel (line 40)
@target("Sunmmio")
def comm_put_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            T.copy(A[0, bx * block_N], A_shared)
            T.comm.put(A_shared, B_shared, (1, 2), (2, 3))

    return main


# testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::comm_all_gather_kernel (line 54)
@target("Sunmmio")
def comm_all_gather_kernel(
    *,
    M=128,
    N=128,
    block_M=32,
    block_N=32,
    dtype="float16",
    direction="all",
    axis=None,
):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            if axis == 0:
                R_shared = T.alloc_shared((16 * block_M, block_N), dtype, scope="shared.rsram")
            elif axis == -1:
                extent = 4 * block_N if direction in ("h", "horizontal") else 16 * block_N
                R_shared = T.alloc_shared((block_M, extent), dtype, scope="shared.rsram")
            else:
                R_shared = T.alloc_shared((16, block_M, block_N), dtype, scope="shared.rsram")

            T.copy(A[0, bx * block_N], A_shared)
            if axis is None:
                T.comm.all_gather(A_shared, R_shared, direction=direction)
            else:
                T.comm.all_gather(A_shared, R_shared, direction=direction, axis=axis)

    return main


# testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::sync_if_broadcast_kernel (line 132)
@target("Sunmmio")
def sync_if_broadcast_kernel(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype="float16",
    accum_dtype="float32",
):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0, 0], A_shared)
            T.copy(B[0, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_shared)

            if bx == 0:
                T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")

    return main


# testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::sync_loop_broadcast_kernel (line 165)
@target("Sunmmio")
def sync_loop_broadcast_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float32"):
    @T.prim_func
    def main(C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            D_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(C[0, bx * block_N], D_shared)
            for _i in range(2):
                T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")
                T.comm.broadcast(D_shared, C_shared, (0, 0), direction="h")

    return main
