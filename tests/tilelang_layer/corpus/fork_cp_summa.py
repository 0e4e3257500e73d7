"""The older fork's compile-pipeline SUMMA, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/compile_pipeline/test_summa.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/compile_pipeline/test_summa.py::summa_matmul (line 10)
@target("Sunmmio")
def summa_matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    """
    SUMMA (Scalable Universal Matrix Multiplication Algorithm)
    for a 4x4 mesh.

    Grid size: (N/block_N, M/block_M) = (4, 4)
    """
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
    ):
        # Assume the current is a 4x4 processor grid (Mesh)
        # Each core is responsible for outputting a 32x32 block of matrix C
        with T.Kernel(ncores) as _cid:
            sharded_M, sharded_K = A.shape
            _, sharded_N = B.shape

            # Allocate local SRAM cache
            # A_shared is placed in ASRAM (usually used for A matrix cache)
            # B_shared is placed in WSRAM (usually used for B matrix cache)
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)

            # Local accumulator, placed in RSRAM
            C_local = T.alloc_shared((block_M, block_N), accum_dtype)
            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_local)

                    # Number of iterations in K dimension.
                    K_steps = T.ceildiv(sharded_K, block_K)

                    # Core loop of SUMMA algorithm
                    for k_tile in range(K_steps):
                        # --- Step 1: Broadcast row block of matrix A ---
                        # Broadcast directly from DRAM to asram of each core
                        T.comm.broadcast(
                            A[
                                bx * block_M : bx * block_M + block_M,
                                k_tile * block_K : k_tile * block_K + block_K,
                            ],
                            A_shared,
                            (0, 0),
                            direction="h",
                        )

                        # --- Step 2: Broadcast column block of matrix B ---
                        # Broadcast directly from DRAM to wsram of each core
                        T.comm.broadcast(
                            B[
                                k_tile * block_K : k_tile * block_K + block_K,
                                by * block_N : by * block_N + block_N,
                            ],
                            B_shared,
                            (0, 0),
                            direction="v",
                        )

                        # --- Step 3: Local computation ---
                        # Each core performs local GEMM using broadcasted A_shared and B_shared
                        T.gemm(A_shared, B_shared, C_local)

                    # After the loop ends, write local computation result back to DRAM
                    T.copy(C_local, C[bx * block_M, by * block_N])

    return kernel
