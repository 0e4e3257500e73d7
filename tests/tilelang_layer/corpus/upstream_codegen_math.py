"""Kernels of the current SUNMMIO/Tilelang codegen tests
(``testing/python/sunmmio/codegen/``) that use ``T.MeshTensor`` or ``T.comm`` and whose
steps call C math functions (``T.exp``, ``T.exp2``, ``T.log``, ``T.log2``, ``T.rsqrt``,
``T.ieee_frcp``), verbatim; each names its source file and the commit it was read at.
Import lines only differ: ``target`` (the tests' ``@target("Sunmmio")``, from
``testing.python.sunmmio.common.compile_pipeline``) comes from the corpus harness;
``tm.enable`` provides SUNMMIO's names (``T.MeshTensor``, ``T.placement``, ``T.Tiles``,
the layout makers). The tests' codegen checks are not ported: the corpus runs the
kernels.
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang
import tilelang.language as T
from tilelang.carver.arch import driver
from tilelang.layout import make_aligned_row_major, make_row_major, make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/codegen/test_softplus_1d_dynamic_opt_validate.py
# @ ebc40d2763423a150627d396d30e5657275bae31

@target("Sunmmio")
def softplus_1d_dynamic(block_N=256, in_dtype=T.float32, out_dtype=T.float32):
    """Original form: bind the RSRAM load to a scalar before using it."""
    N = T.dynamic("n")

    row_major_layout = make_row_major((N,))
    placement = T.placement.mesh_as_line(0)

    @T.prim_func
    def elem_softplus(
        A: T.MeshTensor((N,), placement, dtype=in_dtype, layout=row_major_layout),  # type: ignore
        B: T.MeshTensor((N,), placement, dtype=out_dtype, layout=row_major_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_N,), in_dtype)
            B_shared = T.alloc_shared((block_N,), out_dtype)

            for bx in T.serial(T.ceildiv(A.get_local_extent()[0], block_N)):
                T.copy(A[bx * block_N : (bx + 1) * block_N], A_shared)
                for i in T.Tiles([T.min(block_N, A.get_local_extent()[0] - bx * block_N)]):
                    value = A_shared[i]
                    B_shared[i] = T.max(value, 0) + T.log(1 + T.exp(-T.abs(value)))
                T.copy(B_shared, B[bx * block_N : (bx + 1) * block_N])

    return elem_softplus


@target("Sunmmio")
def softplus_1d_dynamic_inline(block_N=256, in_dtype=T.float32, out_dtype=T.float32):
    """Inline form: repeat the same RSRAM load expression at each use site."""
    N = T.dynamic("n")

    row_major_layout = make_row_major((N,))
    placement = T.placement.mesh_as_line(0)

    @T.prim_func
    def elem_softplus_inline(
        A: T.MeshTensor((N,), placement, dtype=in_dtype, layout=row_major_layout),  # type: ignore
        B: T.MeshTensor((N,), placement, dtype=out_dtype, layout=row_major_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_N,), in_dtype)
            B_shared = T.alloc_shared((block_N,), out_dtype)

            for bx in T.serial(T.ceildiv(A.get_local_extent()[0], block_N)):
                T.copy(A[bx * block_N : (bx + 1) * block_N], A_shared)
                for i in T.Tiles([T.min(block_N, A.get_local_extent()[0] - bx * block_N)]):
                    B_shared[i] = T.max(A_shared[i], 0) + T.log(1 + T.exp(-T.abs(A_shared[i])))
                T.copy(B_shared, B[bx * block_N : (bx + 1) * block_N])

    return elem_softplus_inline


# ---- testing/python/sunmmio/codegen/test_tile_ops_opt_validate.py
# @ 14d16e110bd5ad5caf1afa844857c8a6847d40e3

@target("Sunmmio")
def tile_elementwise_ops_test(
    batch=2,
    m=256,
    n=128,
    block_b=2,
    block_m=256,
    block_n=128,
    dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    tensor_shape = (batch, m, n)
    tensor_layout = make_zz_layout(tensor_shape, [1, 2], (32, 32))
    grid_b = T.ceildiv(batch, block_b)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        B: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        C: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_b, block_m, block_n), dtype)

            for bz in T.serial(grid_b):
                for by in T.serial(grid_m):
                    for bx in T.serial(grid_n):
                        for bb in T.serial(block_b):
                            T.copy(
                                A[
                                    bz * block_b + bb,
                                    by * block_m : (by + 1) * block_m,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                                A_shared[bb, :, :],
                            )
                            T.copy(
                                B[
                                    bz * block_b + bb,
                                    by * block_m : (by + 1) * block_m,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                                B_shared[bb, :, :],
                            )

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            x = T.max(A_shared[b, i, j], B_shared[b, i, j])
                            y = T.min(x, T.exp(B_shared[b, i, j]))
                            z = T.log(T.abs(y) + T.float32(1.0))
                            C_shared[b, i, j] = T.if_then_else(
                                z > T.float32(0.5),
                                T.rsqrt(z + T.float32(1.0)),
                                T.ieee_frcp(z + T.float32(2.0)),
                            )

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            neg_a = T.float32(0.0) - T.Cast("float32", A_shared[b, i, j])
                            rem_b = T.fmod(T.Cast("float32", B_shared[b, i, j]), T.float32(3.0))
                            C_shared[b, i, j] = (
                                T.ceil(C_shared[b, i, j])
                                + T.floor(A_shared[b, i, j])
                                + T.round(B_shared[b, i, j])
                                + T.trunc(A_shared[b, i, j])
                                + neg_a
                                + rem_b
                            )

                        for bb in T.serial(block_b):
                            T.copy(
                                C_shared[bb, :, :],
                                C[
                                    bz * block_b + bb,
                                    by * block_m : (by + 1) * block_m,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                            )

    return main


@target("Sunmmio")
def tile_elementwise_ops_2d_test(
    m=256,
    n=1024,
    block_m=256,
    block_n=512,
    dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    tensor_shape = (m, n)
    tensor_layout = make_zz_layout(tensor_shape, [0, 1], (32, 32))
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        B: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        C: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_m, block_n), dtype)

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.copy(
                        A[
                            by * block_m : (by + 1) * block_m,
                            bx * block_n : (bx + 1) * block_n,
                        ],
                        A_shared,
                    )
                    T.copy(
                        B[
                            by * block_m : (by + 1) * block_m,
                            bx * block_n : (bx + 1) * block_n,
                        ],
                        B_shared,
                    )

                    for i, j in T.Tiles(A_shared, parallel=True):
                        x = T.max(A_shared[i, j], B_shared[i, j])
                        y = T.min(x, T.exp(B_shared[i, j]))
                        z = T.log(T.abs(y) + T.float32(1.0))
                        C_shared[i, j] = T.if_then_else(
                            z > T.float32(0.5),
                            T.rsqrt(z + T.float32(1.0)),
                            T.ieee_frcp(z + T.float32(2.0)),
                        )

                    for i, j in T.Tiles(A_shared, parallel=True):
                        neg_a = T.float32(0.0) - T.Cast("float32", A_shared[i, j])
                        rem_b = T.fmod(T.Cast("float32", B_shared[i, j]), T.float32(3.0))
                        C_shared[i, j] = (
                            T.ceil(C_shared[i, j])
                            + T.floor(A_shared[i, j])
                            + T.round(B_shared[i, j])
                            + T.trunc(A_shared[i, j])
                            + neg_a
                            + rem_b
                        )

                    T.copy(
                        C_shared,
                        C[
                            by * block_m : (by + 1) * block_m,
                            bx * block_n : (bx + 1) * block_n,
                        ],
                    )

    return main


# ---- testing/python/sunmmio/codegen/test_hybrid_loop_opt_validate.py
# @ 60b0c120d27f3f23e5e917b0fa0c106fb1357c94

@target("Sunmmio")
def softmax_dynamic(block_M=128, block_N=128, in_dtype=T.float32, out_dtype=T.float32):
    """JIT kernel factory for dynamic-(M, N) row-wise softmax."""
    M = T.dynamic("m")
    N = T.dynamic("n")
    mesh_cols = 4

    zz_layout = make_zz_layout((M, N), [0, 1], (32, 32))
    placement = T.placement.full_shard(0, 1)

    accum_dtype = T.float32
    scale = 1.44269504

    @T.prim_func
    def softmax(
        X: T.MeshTensor((M, N), placement, in_dtype, layout=zz_layout),
        Y: T.MeshTensor((M, N), placement, out_dtype, layout=zz_layout),
    ):
        with T.Kernel():
            sharded_M, sharded_N = X.local_shape

            X_shared = T.alloc_shared((block_M, block_N), in_dtype)
            Y_shared = T.alloc_shared((block_M, block_N), out_dtype)
            exp_x = T.alloc_shared((block_M, block_N), accum_dtype)
            tile_max = T.alloc_shared((block_M,), accum_dtype)
            tile_sum = T.alloc_shared((block_M,), accum_dtype)
            local_lse = T.alloc_shared((block_M,), accum_dtype)
            lse_dist = T.alloc_shared((mesh_cols, block_M), accum_dtype)
            lse_max = T.alloc_shared((block_M,), accum_dtype)
            global_lse = T.alloc_shared((block_M,), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.fill(local_lse, -T.infinity(accum_dtype))
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(
                        X[
                            bx * block_M : (bx + 1) * block_M,
                            by * block_N : (by + 1) * block_N,
                        ],
                        X_shared,
                    )
                    T.reduce_max(X_shared, tile_max, dim=1, clear=True)
                    for i, j in T.Tiles([block_M, block_N]):
                        exp_x[i, j] = T.exp2(X_shared[i, j] * scale - tile_max[i] * scale)
                    T.reduce_sum(exp_x, tile_sum, dim=1, clear=True)
                    for i in T.Tiles([block_M]):
                        local_lse[i] = tile_max[i] * scale + T.log2(T.exp2(local_lse[i] - tile_max[i] * scale) + tile_sum[i])

                T.comm.all_gather(local_lse, lse_dist, direction="h")
                T.reduce_max(lse_dist, lse_max, dim=0, clear=True)
                for i, j in T.Tiles([mesh_cols, block_M]):
                    lse_dist[i, j] = T.exp2(lse_dist[i, j] - lse_max[j])
                T.reduce_sum(lse_dist, global_lse, dim=0, clear=True)
                for i in T.Tiles([block_M]):
                    global_lse[i] = lse_max[i] + T.log2(global_lse[i])

                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(
                        X[
                            bx * block_M : (bx + 1) * block_M,
                            by * block_N : (by + 1) * block_N,
                        ],
                        X_shared,
                    )
                    for i, j in T.Tiles([block_M, block_N]):
                        Y_shared[i, j] = T.exp2(X_shared[i, j] * scale - global_lse[i])
                    T.copy(
                        Y_shared,
                        Y[
                            bx * block_M : (bx + 1) * block_M,
                            by * block_N : (by + 1) * block_N,
                        ],
                    )

    return softmax


# ---- testing/python/sunmmio/codegen/test_hybrid_tail_predicate_mask_opt_validate.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4

SUNMMIO_A4E_NCORES = 16


@target("Sunmmio")
def hybrid_tail_predicate_mask_kernel(
    num_tokens=4096,
    hc=4,
    mix_pad=32,
    comb_pad=32,
    sqrsum_align_bytes=1024,
    accum_dtype=T.float32,
):
    """MHC-like sinkhorn subgraph for hybrid tail predicate mask lowering.

    The important pattern is a small logical `(hc, hc)` tile-domain over a
    physical `(hc, 32)` RSRAM buffer, interleaved with `T.reduce_sum/max`.
    Before the canonical-mask fix, the hybrid scope lowered predicates such as
    `j * 32 + kj < 4` to `tile<1x32xi1>` and then emitted an illegal bool
    `tile.broadcast` to `tile<4x32xi1>`.
    """

    local_token_capacity = num_tokens // SUNMMIO_A4E_NCORES
    assert num_tokens % SUNMMIO_A4E_NCORES == 0
    assert local_token_capacity * 4 == sqrsum_align_bytes
    assert hc * 2 + hc * hc <= mix_pad
    assert hc <= comb_pad
    assert mix_pad % 32 == 0
    assert comb_pad % 32 == 0

    token_policy = T.placement.mesh_as_line(0)
    replicated_policy = T.placement.replicated()

    gemm_mul_shape = (num_tokens, mix_pad)
    sqrsum_shape = (num_tokens,)
    scale_shape = (1, mix_pad)
    base_shape = (1, mix_pad)
    comb_shape = (num_tokens, hc, comb_pad)

    gemm_mul_layout = make_zz_layout(gemm_mul_shape, [0, 1], (32, 32))
    sqrsum_layout = make_aligned_row_major(sqrsum_shape, accum_dtype, align_bytes=sqrsum_align_bytes)
    scale_layout = make_zz_layout(scale_shape, [0, 1], (32, 32))
    base_layout = make_zz_layout(base_shape, [0, 1], (32, 32))
    comb_layout = make_zz_layout(comb_shape, [1, 2], (32, 32))

    row_layout = make_zz_layout((1, mix_pad), [0, 1], (32, 32))
    vector_layout = make_aligned_row_major((mix_pad,), accum_dtype, align_bytes=64)
    sqrsum_stage_layout = make_aligned_row_major(
        (local_token_capacity,),
        accum_dtype,
        align_bytes=sqrsum_align_bytes,
    )
    cm_layout = make_zz_layout((hc, mix_pad), [0, 1], (32, 32))

    @T.prim_func
    def main(
        GemmOutMul: T.MeshTensor(gemm_mul_shape, token_policy, accum_dtype, layout=gemm_mul_layout),  # type: ignore
        GemmOutSqrsum: T.MeshTensor(sqrsum_shape, token_policy, accum_dtype, layout=sqrsum_layout),  # type: ignore
        HcScale: T.MeshTensor(scale_shape, replicated_policy, accum_dtype, layout=scale_layout),  # type: ignore
        HcBase: T.MeshTensor(base_shape, replicated_policy, accum_dtype, layout=base_layout),  # type: ignore
        CombMix: T.MeshTensor(comb_shape, token_policy, accum_dtype, layout=comb_layout),  # type: ignore
    ):
        with T.Kernel():
            scale_shared = T.alloc_shared((1, mix_pad), accum_dtype)
            base_shared = T.alloc_shared((1, mix_pad), accum_dtype)
            gemm_mul_shared = T.alloc_shared((1, mix_pad), accum_dtype)
            sqrsum_stage_shared = T.alloc_shared((local_token_capacity,), accum_dtype)
            sqrsum_norm_shared = T.alloc_shared((mix_pad,), accum_dtype)
            rms_shared = T.alloc_shared((mix_pad,), accum_dtype)
            mixes_shared = T.alloc_shared((mix_pad,), accum_dtype)
            cm = T.alloc_shared((hc, mix_pad), accum_dtype)
            row_max = T.alloc_shared((hc,), accum_dtype)
            row_sum = T.alloc_shared((hc,), accum_dtype)
            col_sum = T.alloc_shared((mix_pad,), accum_dtype)

            T.annotate_layout(
                {
                    scale_shared: row_layout,
                    base_shared: row_layout,
                    gemm_mul_shared: row_layout,
                    sqrsum_stage_shared: sqrsum_stage_layout,
                    sqrsum_norm_shared: vector_layout,
                    rms_shared: vector_layout,
                    mixes_shared: vector_layout,
                    cm: cm_layout,
                }
            )

            T.copy(HcScale[0:1, 0:mix_pad], scale_shared)
            T.copy(HcBase[0:1, 0:mix_pad], base_shared)
            T.copy(GemmOutSqrsum[0:local_token_capacity], sqrsum_stage_shared)

            scale2 = T.alloc_var(accum_dtype)
            sqrsum_value = T.alloc_var(accum_dtype)
            mix_value = T.alloc_var(accum_dtype)
            base_value = T.alloc_var(accum_dtype)
            scale2 = scale_shared[0, 2]

            for token in T.serial(1):
                T.copy(GemmOutMul[token : token + 1, 0:mix_pad], gemm_mul_shared)

                sqrsum_value = sqrsum_stage_shared[token]
                for m in T.Tiles([mix_pad]):
                    sqrsum_norm_shared[m] = sqrsum_value / T.float32(512.0) + T.float32(1.0e-6)
                for m in T.Tiles([mix_pad]):
                    rms_shared[m] = T.rsqrt(sqrsum_norm_shared[m])
                for m in T.Tiles([mix_pad]):
                    mixes_shared[m] = gemm_mul_shared[0, m] * rms_shared[m]

                T.fill(cm, 0)
                for i in T.serial(hc):
                    for j in T.serial(hc):
                        mix_value = mixes_shared[2 * hc + i * hc + j]
                        base_value = base_shared[0, 2 * hc + i * hc + j]
                        cm[i, j] = mix_value * scale2 + base_value

                T.reduce_max(cm[0:hc, 0:hc], row_max[0:hc], dim=1, clear=True)
                for i, j in T.Tiles([hc, hc]):
                    cm[i, j] = T.exp(cm[i, j] - row_max[i])

                T.reduce_sum(cm[0:hc, 0:hc], row_sum[0:hc], dim=1, clear=True)
                for i, j in T.Tiles([hc, hc]):
                    cm[i, j] = cm[i, j] / (row_sum[i] + T.float32(1.0e-6))

                T.reduce_sum(cm[0:hc, 0:hc], col_sum[0:hc], dim=0, clear=True)
                for i, j in T.Tiles([hc, hc]):
                    cm[i, j] = cm[i, j] / (col_sum[j] + T.float32(1.0e-6))

                T.copy(cm, CombMix[token, 0:hc, 0:comb_pad])

    return main


# ---- testing/python/sunmmio/codegen/test_flash_attention_gqa_fwd_bhsd_opt_validate.py
# @ 3cb87329421b9e8cb1727fe4ba3d4dafba5dba76

@target("Sunmmio")
def flashattn_gqa_fwd_bhsd(
    batch=1,
    heads=4,
    seq_len=128,
    dim=64,
    groups=1,
    block_M=64,
    block_N=64,
    num_stages=0,
):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    dtype = T.bfloat16
    accum_dtype = T.float32

    shard_policy = T.MeshShardingPolicy(y=0, x=2)

    Q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    K_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    V_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    O_layout = make_zz_layout(q_shape, [1, 3], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor(q_shape, shard_policy, dtype, layout=Q_layout),  # type: ignore
        K: T.MeshTensor(kv_shape, shard_policy, dtype, layout=K_layout),  # type: ignore
        V: T.MeshTensor(kv_shape, shard_policy, dtype, layout=V_layout),  # type: ignore
        Output: T.MeshTensor(q_shape, shard_policy, dtype, layout=O_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_batch = Q.local_shape[0]
            sharded_heads = Q.local_shape[2]

            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_shared([block_M, block_N], accum_dtype, scope="shared.rsram")
            acc_s_cast_local = T.alloc_shared([block_M, block_N], dtype)
            acc_s_cast = T.alloc_shared([block_M, block_N], dtype)
            acc_o = T.alloc_shared([block_M, dim], accum_dtype)
            scores_max = T.alloc_shared([block_M], accum_dtype)
            scores_max_prev = T.alloc_shared([block_M], accum_dtype)
            scores_scale = T.alloc_shared([block_M], accum_dtype)
            scores_sum = T.alloc_shared([block_M], accum_dtype)
            logsum = T.alloc_shared([block_M], accum_dtype)

            for bz in T.serial(sharded_batch):
                for by in T.serial(sharded_heads):
                    for bx in T.serial(T.ceildiv(seq_len, block_M)):
                        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                        T.fill(acc_o, 0)
                        T.fill(logsum, 0)
                        T.fill(scores_max, -T.infinity(accum_dtype))

                        loop_range = T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                        for k in T.Pipelined(loop_range, num_stages=num_stages):
                            T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s[i, j] = T.if_then_else(
                                    bx * block_M + i >= k * block_N + j,
                                    0,
                                    -T.infinity(acc_s.dtype),
                                )
                            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)

                            T.copy(scores_max, scores_max_prev)
                            T.fill(scores_max, -T.infinity(accum_dtype))
                            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                            for i in T.Tiles([block_M]):
                                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                            for i in T.Tiles([block_M]):
                                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                            T.reduce_sum(acc_s, scores_sum, dim=1)
                            for i in T.Tiles([block_M]):
                                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s_cast_local[i, j] = acc_s[i, j]
                            T.copy(acc_s_cast_local, acc_s_cast)

                            for i, j in T.Tiles([block_M, dim]):
                                acc_o[i, j] *= scores_scale[i]

                            T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                            T.gemm(acc_s_cast, V_shared, acc_o)

                        for i, j in T.Tiles([block_M, dim]):
                            acc_o[i, j] /= logsum[i]
                        T.copy(acc_o, O_shared)
                        T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


# ---- testing/python/sunmmio/codegen/test_sliding_window_attention_gqa_fwd_bhsd_opt_validate.py
# @ b7b0ca69a400deff86ff903cb71a658d5e510ab4

SLIDING_WINDOW_ATTENTION_GQA_FWD_BHSD_CASES = [
    (1, 32, 8, 128, 128, 4, 64),
    (1, 48, 8, 128, 128, 4, 96),
]


@target("Sunmmio")
def sliding_window_attention_gqa_fwd_bhsd(
    batch=1,
    q_heads=32,
    kv_heads=8,
    seq_len=128,
    dim=128,
    global_window=4,
    local_window=1024,
    block_M=64,
    block_N=64,
    num_stages=0,
):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    groups = q_heads // kv_heads
    q_shape = [batch, seq_len, q_heads, dim]
    kv_shape = [batch, seq_len, kv_heads, dim]
    dtype = T.bfloat16
    accum_dtype = T.float32

    assert q_heads % kv_heads == 0
    assert global_window <= seq_len
    assert global_window <= block_N

    shard_policy = T.placement.full_shard(0, 2)

    Q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    K_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    V_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    O_layout = make_zz_layout(q_shape, [1, 3], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor(q_shape, shard_policy, dtype, layout=Q_layout),  # type: ignore
        K: T.MeshTensor(kv_shape, shard_policy, dtype, layout=K_layout),  # type: ignore
        V: T.MeshTensor(kv_shape, shard_policy, dtype, layout=V_layout),  # type: ignore
        Output: T.MeshTensor(q_shape, shard_policy, dtype, layout=O_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_batch = Q.local_shape[0]
            sharded_heads = Q.local_shape[2]

            Q_shared = T.alloc_shared([block_M, dim], dtype)
            Q_shared_stage = T.alloc_shared([block_M, dim], dtype, scope="shared.rsram")
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_shared([block_M, block_N], accum_dtype, scope="shared.rsram")
            acc_s_cast_local = T.alloc_shared([block_M, block_N], dtype)
            acc_s_cast = T.alloc_shared([block_M, block_N], dtype)
            acc_o = T.alloc_shared([block_M, dim], accum_dtype)
            scores_max = T.alloc_shared([block_M], accum_dtype)
            scores_max_prev = T.alloc_shared([block_M], accum_dtype)
            scores_scale = T.alloc_shared([block_M], accum_dtype)
            scores_sum = T.alloc_shared([block_M], accum_dtype)
            logsum = T.alloc_shared([block_M], accum_dtype)

            for bz in T.serial(sharded_batch):
                for by in T.serial(sharded_heads):
                    for bx in T.serial(T.ceildiv(seq_len, block_M)):
                        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared_stage)
                        T.copy(Q_shared_stage, Q_shared)
                        T.fill(acc_o, 0)
                        T.fill(logsum, 0)
                        T.fill(scores_max, -T.infinity(accum_dtype))

                        loop_range = T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                        # for k in T.Pipelined(loop_range, num_stages=num_stages):
                        for k in T.serial(loop_range):
                            T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                            for i, j in T.Tiles([block_M, block_N]):
                                q_pos = bx * block_M + i
                                k_pos = k * block_N + j
                                acc_s[i, j] = T.if_then_else(
                                    q_pos >= k_pos,
                                    T.if_then_else(
                                        k_pos > q_pos - local_window,
                                        0,
                                        -T.infinity(acc_s.dtype),
                                    ),
                                    -T.infinity(acc_s.dtype),
                                )
                            if k == 0 and bx > 0:
                                for i, j in T.Tiles([block_M, block_N]):
                                    acc_s[i, j] = T.if_then_else(
                                        j + i < global_window + i,
                                        0,
                                        acc_s[i, j],
                                    )
                            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)

                            T.copy(scores_max, scores_max_prev)
                            T.fill(scores_max, -T.infinity(accum_dtype))
                            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                            for i in T.Tiles([block_M]):
                                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                            for i in T.Tiles([block_M]):
                                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                            T.reduce_sum(acc_s, scores_sum, dim=1)
                            for i in T.Tiles([block_M]):
                                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s_cast_local[i, j] = acc_s[i, j]
                            T.copy(acc_s_cast_local, acc_s_cast)

                            for i, j in T.Tiles([block_M, dim]):
                                acc_o[i, j] *= scores_scale[i]

                            T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                            T.gemm(acc_s_cast, V_shared, acc_o)

                        for i, j in T.Tiles([block_M, dim]):
                            acc_o[i, j] /= logsum[i]
                        T.copy(acc_o, O_shared)
                        T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


# ---- testing/python/sunmmio/codegen/test_gqa_decode_pr223_opt_validate.py
# @ 4a06af7abcdef131abea29b5fca9a445169cdbe5

@target("Sunmmio")
def gqa_decode_pr223(
    batch=1,
    heads=4,
    kv_heads=1,
    seqlen_kv=128,
    dim=64,
    block_N=128,
    enable_mask=True,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape_q = [batch, heads, dim]
    shape_kv = [batch, seqlen_kv, kv_heads, dim]
    shape_o = [batch, heads, dim]
    dtype = T.float16
    accum_dtype = T.float32
    kv_group_num = heads // kv_heads
    block_H = kv_group_num

    @T.prim_func
    def main(
        Q: T.MeshTensor(shape_q, T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, make_zz_layout(shape_q)),  # type: ignore
        K: T.MeshTensor(shape_kv, T.MeshShardingPolicy(y=0, x=2), device_mesh_config, dtype, make_zz_layout(shape_kv, axes=(1, 3))),  # type: ignore
        V: T.MeshTensor(shape_kv, T.MeshShardingPolicy(y=0, x=2), device_mesh_config, dtype, make_zz_layout(shape_kv, axes=(1, 3))),  # type: ignore
        mask: T.MeshTensor(
            [batch, seqlen_kv],
            T.MeshShardingPolicy(y=0, replicate=T.MeshReplicationType.ROW),
            device_mesh_config,
            "uint16",
            make_row_major([batch, seqlen_kv]),
        ),  # type: ignore
        Output: T.MeshTensor(shape_o, T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, make_zz_layout(shape_o)),  # type: ignore
    ):
        with T.Kernel(ncores):
            sharded_batch, sharded_heads, _ = Q.shape

            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_shared([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_shared([block_H, block_N], dtype)
            mask_local = T.alloc_shared([block_N], "uint16")
            acc_o = T.alloc_shared([block_H, dim], accum_dtype)
            acc_o_cast = T.alloc_shared([block_H, dim], dtype)
            scores_max = T.alloc_shared([block_H], accum_dtype)
            scores_max_prev = T.alloc_shared([block_H], accum_dtype)
            scores_scale = T.alloc_shared([block_H], accum_dtype)
            scores_sum = T.alloc_shared([block_H], accum_dtype)
            logsum = T.alloc_shared([block_H], accum_dtype)

            for bid in T.serial(sharded_batch):
                for hid in T.serial(T.ceildiv(sharded_heads, block_H)):
                    cur_kv_head = hid
                    T.copy(Q[bid, hid * block_H : (hid + 1) * block_H, :], Q_shared)
                    T.fill(acc_o, 0)
                    T.fill(logsum, 0)
                    T.fill(scores_max, -T.infinity(accum_dtype))

                    loop_range = T.ceildiv(seqlen_kv, block_N)
                    for k in T.serial(loop_range):
                        T.copy(K[bid, k * block_N : (k + 1) * block_N, cur_kv_head, :], K_shared)
                        T.copy(mask[bid, k * block_N : (k + 1) * block_N], mask_local)
                        T.gemm(Q_shared, K_shared, acc_s, clear_accum=True, transpose_B=True)
                        if enable_mask:
                            for i, j in T.Tiles([block_H, block_N]):
                                acc_s[i, j] = T.if_then_else(mask_local[j] != 0, acc_s[i, j], -T.infinity(accum_dtype))
                        T.copy(scores_max, scores_max_prev)
                        T.fill(scores_max, -T.infinity(accum_dtype))
                        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                        for i in T.Tiles([block_H]):
                            scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                        for i in T.Tiles([block_H]):
                            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                        for i, j in T.Tiles([block_H, block_N]):
                            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                        T.reduce_sum(acc_s, scores_sum, dim=1)
                        for i in T.Tiles([block_H]):
                            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                        T.copy(acc_s, acc_s_cast)
                        for i, j in T.Tiles([block_H, dim]):
                            acc_o[i, j] *= scores_scale[i]
                        T.copy(V[bid, k * block_N : (k + 1) * block_N, cur_kv_head, :], V_shared)
                        T.gemm(acc_s_cast, V_shared, acc_o)

                    for i, j in T.Tiles([block_H, dim]):
                        acc_o_cast[i, j] = acc_o[i, j] / logsum[i]
                    T.copy(acc_o_cast, Output[bid, hid * block_H : (hid + 1) * block_H, :])

    return main


# ---- examples/sunmmio/elementwise/mixed_precision_mul.py, the stored version with
# dtype arguments that testing/python/sunmmio/codegen/test_mixed_precision_tiles_opt_
# validate.py (@ 89a2375c6aec8ad34715f5102b38a8f5280e6ef5) imports (the index names no
# commit for this version; the older one, @ 11b567a9, is in upstream_current.py)

@tilelang.jit(target="sunmmio", execution_backend="sunmmio_sunsim")
def mixed_precision_mul(M=256, N=512, block_M=64, block_N=128, a_dtype="bfloat16", b_dtype="bfloat16", out_dtype="float32"):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def mixed_mul(
        A: T.MeshTensor((M, N), placement, a_dtype),
        B: T.MeshTensor((M, N), placement, b_dtype),
        C: T.MeshTensor((M, N), placement, out_dtype),
    ):
        with T.Kernel():
            local_m, local_n = A.local_shape
            A_shared = T.alloc_shared((block_M, block_N), a_dtype)
            B_shared = T.alloc_shared((block_M, block_N), b_dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            for bm in T.serial(T.ceildiv(local_m, block_M)):
                for bn in T.serial(T.ceildiv(local_n, block_N)):
                    T.copy(A[bm * block_M, bn * block_N], A_shared)
                    T.copy(B[bm * block_M, bn * block_N], B_shared)
                    for i, j in T.Tiles(A_shared):
                        C_shared[i, j] = A_shared[i, j] * B_shared[i, j]
                    T.copy(C_shared, C[bm * block_M, bn * block_N])

    return mixed_mul
