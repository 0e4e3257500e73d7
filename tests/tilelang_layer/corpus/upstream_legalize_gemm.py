"""The current SUNMMIO/Tilelang's LegalizeSunmmioGemm test kernels (bf16 GEMMs over
T.MeshTensor shards), verbatim.

Source: SUNMMIO/Tilelang, ``testing/python/sunmmio/transform/test_legalize_gemm.py`` at
commit 25478d65c294999489ec184bbab56326f125b169. Each kernel factory below is the
source's text unchanged; only import lines differ: ``tm.enable`` provides SUNMMIO's
names (``T.comm``, ``T.MeshTensor``, ``T.mesh_ncores``, the layout makers,
``driver.get_sunmmio_device_mesh_config``). The module reads the mesh when it is loaded
(as the source does), so ``tm.enable`` comes first.
"""
# flake8: noqa
import tilelang.language as T
from tilelang.carver.arch import driver


_MESH_NROWS, _MESH_NCOLS = driver.get_sunmmio_device_mesh_config()


def bf16_gemm_with_allgather(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A minimal bf16 GEMM kernel whose A-operand writer is comm.all_gather."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * _MESH_NCOLS), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * _MESH_NROWS, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(A[0, k * block_K], A_shared)
                T.comm.all_gather(A_shared, A_shared_dist, direction="h", axis=-1)
                T.copy(B[k * block_K, 0], B_shared)
                T.comm.all_gather(B_shared, B_shared_dist, direction="v", axis=0)
                T.gemm(A_shared_dist, B_shared_dist, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_copy_to_asram(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A minimal bf16 GEMM whose A_dist writer is a plain T.copy (no
    all_gather / HLink). After LegalizeSunmmioDataPath stages the DRAM->ASRAM
    transfer through an RSRAM buffer, the direct writer of A_dist becomes a
    *RSRAM->ASRAM* T.copy. This is the case the user-facing C++ kernels
    (compiler-samples/05_matmul, 06_matmul) use when A is staged through
    RSRAM and then sent to ASRAM without HLink broadcast."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            # A staged via direct copy (no all_gather): full DRAM->ASRAM transfer.
            A_dist = T.alloc_shared((block_M, block_K * _MESH_NCOLS), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * _MESH_NROWS, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                # Direct copy of an A slice into A_dist (ASRAM).
                T.copy(A[0, k * block_K], A_dist[0:block_M, 0:block_K])
                T.copy(B[k * block_K, 0], B_shared)
                T.comm.all_gather(B_shared, B_shared_dist, direction="v", axis=0)
                T.gemm(A_dist, B_shared_dist, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_hoisted_copy_writer(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A minimal bf16 GEMM whose A-operand writer is HOISTED out of the
    K-loop — the flash-attention pattern. The single T.copy(A → A_shared)
    runs once at kernel scope; the gemm sits inside a T.Pipelined loop and
    reuses A_shared across iterations. After LegalizeSunmmioDataPath stages
    DRAM→ASRAM through an RSRAM buffer, the direct writer of A_shared is a
    RSRAM→ASRAM copy at kernel scope, while the gemm is in the inner
    loop's scope. HoistedShadow should kick in."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            # A is loaded ONCE at kernel scope, before the K-loop. The
            # whole-K stripe of A is brought in; B is streamed inside the loop.
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0:block_M, 0:block_K], A_shared)  # hoisted A writer
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_hoisted_copy_writer_bf16_acc(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16"):
    """Same hoisted-copy pattern as above but with a bf16 accumulator
    instead of fp32. The accOffsetByte formula
    (block_h/2)*block_w*sizeof(C_dtype) gives 1024 for bf16 acc with a
    32x32 block, vs 2048 for fp32 acc — this exercises the dtype-dependent
    arithmetic in ComputeAccOffsetBytes."""
    accum_dtype = dtype
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0:block_M, 0:block_K], A_shared)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_two_independent_hoisted_writers(
    M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"
):
    """Two ASRAM A operands, each loaded by its own hoisted T.copy at
    kernel scope, each consumed by a distinct gemm in the same K-loop.
    Exercises the case where a single kernel needs multiple independent
    HoistedShadow rewrites — each A_dist must get its own shadow buffer
    co-located with it in the kernel Block's alloc_buffers."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        A2: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
        C2: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A2_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C2_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0:block_M, 0:block_K], A_shared)  # hoisted writer #1
            T.copy(A2[0:block_M, 0:block_K], A2_shared)  # hoisted writer #2
            T.clear(C_shared)
            T.clear(C2_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                T.gemm(A2_shared, B_shared, C2_shared)

            T.copy(C_shared, C[0, 0])
            T.copy(C2_shared, C2[0, 0])

    return main


def bf16_gemm_with_hoisted_writer_dirty_source(
    M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"
):
    """Hoisted bf16 ASRAM A writer whose RSRAM source buffer is mutated
    inside the K-loop. Forces the cleanliness analyzer to flag the
    source as dirty so Phase 3 picks HoistedShadow instead of
    HoistedDirect.

    The kernel is synthetic — real flash-attention kernels don't write
    back into the hoisted writer's source inside the K-loop. But it
    exercises the exact code path that protects correctness when the
    source IS mutated (e.g., if a future kernel re-stages A on each
    iteration without re-issuing the ASRAM writer)."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            # User-declared RSRAM scratch — visible by name to the test so
            # we can verify cleanliness detects writes to it.
            A_rsram = T.alloc_shared((block_M, block_K), dtype, scope="shared.rsram")
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0:block_M, 0:block_K], A_rsram)  # initial source population
            T.copy(A_rsram, A_shared)  # hoisted writer (reads A_rsram)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(A[0:block_M, 0:block_K], A_rsram)  # MUTATES the writer's source per iter
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_hoisted_allgather(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """bf16 GEMM whose A-operand writer is a HOISTED comm.all_gather. A is
    copied and gathered once at kernel scope; the gemm in the inner K-loop
    reuses the gathered A_shared_dist. The all_gather's source (A_shared) is
    written once before the gather and never mutated — clean — so the pass
    should pick HoistedDirect and re-issue the all_gather inside the loop."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * _MESH_NCOLS), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * _MESH_NROWS, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            # A loaded + gathered ONCE, hoisted out of the K-loop.
            T.copy(A[0, 0], A_shared)
            T.comm.all_gather(A_shared, A_shared_dist, direction="h", axis=-1)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.comm.all_gather(B_shared, B_shared_dist, direction="v", axis=0)
                T.gemm(A_shared_dist, B_shared_dist, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_with_hoisted_allgather_dirty_source(
    M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"
):
    """Hoisted Allgather whose source (A_shared) is mutated inside the
    K-loop. The cleanliness analyzer must flag the source dirty so the
    pass picks HoistedShadow: snapshot A_shared into an RSRAM stage, then
    re-issue the all_gather from the stage inside the loop."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * _MESH_NCOLS), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * _MESH_NROWS, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(A[0, 0], A_shared)
            T.comm.all_gather(A_shared, A_shared_dist, direction="h", axis=-1)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(A[0, 0], A_shared)  # mutates the all_gather's source
                T.copy(B[k * block_K, 0], B_shared)
                T.comm.all_gather(B_shared, B_shared_dist, direction="v", axis=0)
                T.gemm(A_shared_dist, B_shared_dist, C_shared)

            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_multi_consumer_groupable(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """Two bf16 gemms that share one ASRAM A operand and sit back-to-back
    (textually adjacent) in the K-loop — a multi-B fan-out. The shared
    A_shared is written by a single co-scoped copy. Groupable: the pass
    should emit one [G1, G2, W', G1', G2'] block."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
        C2: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C2_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.clear(C2_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(A[0, k * block_K], A_shared)
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)  # consumer 1
                T.gemm(A_shared, B_shared, C2_shared)  # consumer 2 — adjacent

            T.copy(C_shared, C[0, 0])
            T.copy(C2_shared, C2[0, 0])

    return main


def bf16_gemm_multi_consumer_non_groupable(
    M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"
):
    """Two bf16 gemms sharing one ASRAM A operand, but with a copy between
    them — NOT textually adjacent. Non-groupable: the pass must fall back
    to per-gemm Reissue (each self-restores), and emit a warning."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        B2: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
        C2: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B2_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            C2_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            T.clear(C2_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(A[0, k * block_K], A_shared)
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)  # consumer 1
                T.copy(B2[k * block_K, 0], B2_shared)  # breaks adjacency
                T.gemm(A_shared, B2_shared, C2_shared)  # consumer 2

            T.copy(C_shared, C[0, 0])
            T.copy(C2_shared, C2[0, 0])

    return main


def bf16_flash_attention_shaped(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A flash-attention-shaped kernel: the QK→PV gemm skeleton that
    LegalizeSunmmioGemm must handle. Two bf16 gemms share one K-loop:

      * QK gemm — A operand Q_shared is copied ONCE outside the K-loop
        (hoisted, like flash attention's Q). Its source is clean, so the
        pass picks ReissueDirect. QK accumulates into a bf16 buffer, so the
        cloned gemm's accOffsetByte is 1024.
      * PV gemm — A operand S_cast is written by a copy INSIDE the K-loop
        (co-scoped, like flash attention's acc_s_cast). The pass picks
        InPlace. PV accumulates into an fp32 buffer → accOffsetByte 2048.

    The softmax between the two gemms in real flash attention is omitted —
    it does not affect the legalization (the pass only cares about which
    scope each A-operand writer lives in). The shipped example
    examples/flash_attention/sunmmio_example_gqa_fwd_bhsd.py is currently
    stale against the T.Persistent / T.Tiles APIs and does not lower; this
    self-contained kernel exercises the same two legalization patterns."""
    from tilelang.layout import make_zz_layout

    Q_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    Kt_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    V_layout = make_zz_layout((N, N), [0, 1], (32, 32))
    O_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=Q_layout),
        Kt: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=Kt_layout),
        V: T.MeshTensor((N, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=V_layout),
        O: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=O_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = Q.local_shape
            Q_shared = T.alloc_shared((block_M, block_K), dtype)  # hoisted A (Q)
            K_shared = T.alloc_shared((block_K, block_N), dtype)
            S_shared = T.alloc_shared((block_M, block_N), dtype)  # bf16 QK output
            S_cast = T.alloc_shared((block_M, block_N), dtype)  # co-scoped A (PV)
            V_shared = T.alloc_shared((block_N, block_N), dtype)
            O_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.copy(Q[0:block_M, 0:block_K], Q_shared)  # hoisted Q writer
            T.clear(S_shared)
            T.clear(O_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(Kt[k * block_K, 0], K_shared)
                T.gemm(Q_shared, K_shared, S_shared)  # QK gemm: A = Q (hoisted)
                T.copy(S_shared, S_cast)  # RSRAM->ASRAM move, co-scoped
                T.copy(V[0, 0], V_shared)
                T.gemm(S_cast, V_shared, O_shared)  # PV gemm: A = S_cast (in-place)
            T.copy(O_shared, O[0, 0])

    return main


def bf16_gemm_no_reaching_writer(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A bf16 ASRAM gemm whose A operand is never written — no reaching
    writer. Phase 1 records the gemm with reaching-def NONE; Phase 2 must
    reject it."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)  # never written
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_multiple_writers(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """A bf16 ASRAM gemm whose A operand is written by divergent writers in
    the two branches of an if/else. Phase 1 joins them to reaching-def
    MULTIPLE; Phase 2 must reject it (per-branch legalization unsupported)."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        A2: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel(T.mesh_ncores()) as cid:
            sharded_M, sharded_K = A.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                if cid > 0:
                    T.copy(A[0, k * block_K], A_shared)  # writer in then
                else:
                    T.copy(A2[0, k * block_K], A_shared)  # writer in else
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[0, 0])

    return main


def bf16_gemm_diverging_scopes(M=128, N=128, K=128, block_M=32, block_N=32, block_K=32, dtype="bfloat16", accum_dtype="float32"):
    """The A-operand writer is in one loop; the gemm is in a separate
    sibling loop. The writer reaches the gemm (UNIQUE), but their scope
    paths diverge — neither is a prefix of the other — so Phase 3 cannot
    classify it as InPlace or hoisted, and must reject."""
    from tilelang.layout import make_zz_layout

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            T.clear(C_shared)
            for _i in T.serial(1):
                T.copy(A[0, 0], A_shared)  # writer in loop _i
            for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                T.copy(B[k * block_K, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)  # gemm in sibling loop k
            T.copy(C_shared, C[0, 0])

    return main
