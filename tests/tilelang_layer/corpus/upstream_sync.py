"""The current SUNMMIO/Tilelang's pipeline sync kernel, verbatim.

Source: SUNMMIO/Tilelang, ``testing/python/sunmmio/pipeline/test_sync.py`` at commit
78ce40a336e3219a21aef834e767673b0a2a9af8. Only import lines differ: ``target`` (the
tests' ``@target("Sunmmio")``) comes from the corpus harness, and ``tm.enable``
provides SUNMMIO's names. It is run by ``tools/corpus_sync_kernels.py``, not by the
suite (a 1024^3 ``T.gemm`` per core and tile: minutes here).
"""
# flake8: noqa
import sys

import tilelang.language as T
from tilelang.layout import make_zz_layout

target = sys.modules["tm_corpus_harness"].target  # the tests' @target("Sunmmio")


@target("Sunmmio")
def kernel_sync(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)

    A_shape = (M, K)
    B_shape = (M, K)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel() as _cid:
            sharded_M, _ = A.local_shape
            _, sharded_N = C.local_shape

            A_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")
            E_shared = T.alloc_shared((1024, 1024), dtype, scope="shared.rsram")

            for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                for _by in T.serial(T.ceildiv(sharded_M, block_M)):
                    T.gemm(A_shared, B_shared, C_shared)
                    if bx <= 2:
                        T.clear(D_shared)

                    for i in range(5):
                        C_shared[i, 0] = C_shared[i, 0] + 1.0

                    for _i in range(10):
                        T.comm.broadcast(D_shared, E_shared, (0, 0), direction="h")
                        E_shared[0, 0] = E_shared[0, 0] + 1.0
                        T.comm.broadcast(E_shared, D_shared, (0, 0), direction="h")

    return kernel
