"""SUNMMIO/Tilelang's GEMM example on a 1x1 T.MeshTensor mesh, verbatim.

Source: SUNMMIO/Tilelang, ``examples/gemm/example_gemm_with_mesh_tensor.py`` at commit
5101cfe472bda40bda98213eb44caec73614d37b (the factory ``matmul``; the file's ``main``
runs it on CUDA). Only import lines differ: ``tilelang`` is the corpus harness's
stand-in whose ``jit`` returns the factory's ``T.prim_func`` (the corpus compiles it
for the mesh; ``out_idx=[-1]`` is C, which the corpus passes); ``tm.enable`` provides
``T.MeshTensor`` and ``T.placement``.
"""
# flake8: noqa
import sys

import tilelang.language as T

tilelang = sys.modules["tm_corpus_harness"].tilelang_jit  # the example's `import tilelang`


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    mesh_device_config = (1, 1)

    @T.prim_func
    def gemm(
        A: T.MeshTensor((M, K), T.placement.full_shard(0, 1), mesh_device_config, dtype),
        B: T.MeshTensor((K, N), T.placement.full_shard(0, 1), mesh_device_config, dtype),
        C: T.MeshTensor((M, N), T.placement.full_shard(0, 1), mesh_device_config, dtype),
    ):
        sharded_M, sharded_K = A.shape
        _, sharded_N = B.shape
        print(sharded_M, sharded_K, sharded_N)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm
