"""Kernels of the current SUNMMIO/Tilelang's ``testing/python/sunmmio/ops/``,
``language/``, ``jit/`` tests and ``examples/sunmmio/`` that use T.comm or T.MeshTensor
and are not yet elsewhere in the corpus, verbatim; each names its source file and the
commit it was read at. Import lines only differ: ``target`` (the tests'
``@target("Sunmmio")``) comes from the corpus harness; ``tm.enable`` provides SUNMMIO's
names (``T.MeshTensor``, ``T.MeshShardingPolicy``, the layout makers).
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

from typing import Callable

import tilelang
import tilelang.language as T
from tilelang.carver.arch import driver
from tilelang.language.mesh_tensor import MeshReplicationType, MeshShardingPolicy
from tilelang.layout import make_row_major, make_zn_layout, make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/ops/test_transpose.py
# @ 3c56f2709f972fae02e0248f1e5565c5586e9841

@target("Sunmmio")
def mesh_transpose_kernel(
    m,
    n,
    dtype,
    layout_family,
    control_flow="plain",
    expect_transposed=True,
):
    """Build a replicated transpose with matching DRAM and RSRAM layouts."""
    placement = T.MeshShardingPolicy(replicate=T.MeshReplicationType.ALL)
    src_layout = make_zz_layout((m, n)) if layout_family == "zz" else make_zn_layout((m, n), [0, 1], (32, 32))
    transposed_layout = make_zz_layout((n, m)) if layout_family == "zz" else make_zn_layout((n, m), [0, 1], (32, 32))
    output_shape = (n, m) if expect_transposed else (m, n)
    output_layout = transposed_layout if expect_transposed else src_layout

    @T.prim_func
    def main(
        a: T.MeshTensor((m, n), placement, dtype, layout=src_layout),
        b: T.MeshTensor(output_shape, placement, dtype, layout=output_layout),
    ):
        with T.Kernel():
            src = T.alloc_shared((m, n), dtype, scope="shared.rsram")
            dst = T.alloc_shared((n, m), dtype, scope="shared.rsram")
            if layout_family == "zn":
                T.annotate_layout({src: make_zn_layout((m, n), [0, 1], (32, 32))})
            T.copy(a, src)

            if control_flow == "loop":
                # Each loop iteration performs a round trip. The odd case adds
                # one final transpose, while the even case leaves src unchanged.
                for _ in T.serial(2):
                    T.transpose(src, dst)
                    T.transpose(dst, src)
                if expect_transposed:
                    T.transpose(src, dst)
            else:
                T.transpose(src, dst)

            if expect_transposed:
                T.copy(dst, b)
            else:
                T.copy(src, b)

    return main


# ---- testing/python/sunmmio/language/test_copy_legality.py
# @ 14d16e110bd5ad5caf1afa844857c8a6847d40e3

@target("Sunmmio")
def _make_let_bound_mesh_copy_kernel():
    global_shape = (256, 256)
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    tensor_layout = make_zz_layout(global_shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(global_shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            local_m, local_n = A.local_shape
            A_shared = T.alloc_shared((local_m, local_n), T.bfloat16)
            T.copy(A, A_shared)

    return kernel


@target("Sunmmio")
def _make_mismatched_let_bound_mesh_copy_kernel():
    global_shape = (256, 256)
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    tensor_layout = make_zz_layout(global_shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(global_shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            local_m, local_n = A.local_shape
            A_shared = T.alloc_shared((local_m, local_n + 1), T.bfloat16)
            T.copy(A, A_shared)

    return kernel


# ---- testing/python/sunmmio/language/test_mesh_tensor.py
# @ 5ede4cf4fe79f1b17efec99edbfcb90af1ed4eb6

# ::test_mesh_tensor_in_kernel (its statements up to the kernel, returned)
def test_mesh_tensor_in_kernel():
    """MeshTensor with layout flows through kernel definition correctly."""
    policy = MeshShardingPolicy(y=0, x=1, replicate=MeshReplicationType.NONE)
    device_mesh = (2, 2)
    M, N, K = 128, 128, 128

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    A_tensor = T.MeshTensor((M, K), policy, device_mesh, "float16", layout=A_layout)
    B_tensor = T.MeshTensor((K, N), policy, device_mesh, "float16", layout=B_layout)
    C_tensor = T.MeshTensor((M, N), policy, device_mesh, "float32", layout=C_layout)

    @T.prim_func
    def kernel(A: A_tensor, B: B_tensor, C: C_tensor):
        sharded_M, sharded_K = A.local_shape
        _, sharded_N = B.local_shape

    return kernel


# ---- testing/python/sunmmio/jit/test_jit.py
# @ 04931c88946e12daab467135d05ed5f0973a1ad6

@tilelang.jit(target="sunmmio", out_idx=[2])
def elementwise_add_jit(M, N, block_M, block_N, in_dtype, out_dtype):
    """JIT version of examples/sunmmio/elementwise/elementwise_add.py."""

    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def elem_add(
        A: T.MeshTensor((M, N), placement, in_dtype, layout=zz_layout),
        B: T.MeshTensor((M, N), placement, in_dtype, layout=zz_layout),
        C: T.MeshTensor((M, N), placement, out_dtype, layout=zz_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_N = A.local_shape

            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(A[bx * block_M, by * block_N], A_shared)
                    T.copy(B[bx * block_M, by * block_N], B_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        C_shared[i, j] = A_shared[i, j] + B_shared[i, j]
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return elem_add


# ---- examples/sunmmio/elementwise/elementwise_exp2_dynamic.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369

def _elementwise_exp2_prim_func(block_M, block_N, in_dtype, out_dtype):
    M = T.dynamic("m")
    N = T.dynamic("n")

    device_mesh_config = driver.get_sunmmio_device_mesh_config()

    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def elem_exp2(
        A: T.MeshTensor((M, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        B: T.MeshTensor((M, N), placement, device_mesh_config, out_dtype, layout=zz_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_N = A.local_shape

            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), out_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(A[bx * block_M, by * block_N], A_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        B_shared[i, j] = T.exp2(A_shared[i, j])
                    T.copy(B_shared, B[bx * block_M, by * block_N])

    return elem_exp2


# ---- examples/flash_attention/sunmmio_example_gqa_fwd_bhsd.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4

def flashattn(batch, heads, seq_len, dim, groups=1, block_M=64, block_N=64, num_stages=0):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    dtype = T.bfloat16
    accum_dtype = T.float32

    shard_policy = T.placement.full_shard(0, 2)

    Q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    K_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    V_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    O_layout = make_zz_layout(q_shape, [1, 3], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor(q_shape, shard_policy, dtype, layout=Q_layout),
        K: T.MeshTensor(kv_shape, shard_policy, dtype, layout=K_layout),
        V: T.MeshTensor(kv_shape, shard_policy, dtype, layout=V_layout),
        Output: T.MeshTensor(q_shape, shard_policy, dtype, layout=O_layout),
    ):
        with T.Kernel() as _cid:
            # Get sharded logical shapes
            sharded_batch = Q.local_shape[0]
            sharded_heads = Q.local_shape[2]

            # Declare shared memory buffers
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_shared([block_M, block_N], accum_dtype)
            # RSRAM-resident dtype-cast staging for the PV gemm input. A
            # Sunmmio DMA copy cannot change dtype, so the fp32->dtype cast
            # is done here by the Tile unit (in RSRAM) and only then DMA'd
            # into acc_s_cast (ASRAM, the PV gemm's A operand).
            acc_s_cast_local = T.alloc_shared([block_M, block_N], dtype)
            acc_s_cast = T.alloc_shared([block_M, block_N], dtype)
            acc_o = T.alloc_shared([block_M, dim], accum_dtype)
            scores_max = T.alloc_shared([block_M], accum_dtype)
            scores_max_prev = T.alloc_shared([block_M], accum_dtype)
            scores_scale = T.alloc_shared([block_M], accum_dtype)
            scores_sum = T.alloc_shared([block_M], accum_dtype)
            logsum = T.alloc_shared([block_M], accum_dtype)

            # Each core iterates its own sharded work domain with plain
            # nested loops. The MeshTensor sharding already distributes data
            # (batch / heads) across the core mesh, so no persistent
            # core-distribution loop is needed here.
            for bz in T.serial(sharded_batch):
                for by in T.serial(sharded_heads):
                    for bx in T.serial(T.ceildiv(seq_len, block_M)):
                        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                        T.fill(acc_o, 0)
                        T.fill(logsum, 0)
                        T.fill(scores_max, -T.infinity(accum_dtype))

                        loop_range = T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))

                        # loop over K/V blocks
                        for k in T.Pipelined(loop_range, num_stages=num_stages):
                            T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
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
                            # Cast fp32 probabilities -> dtype with the Tile
                            # unit in RSRAM, then DMA the same-dtype result
                            # into ASRAM.
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


# ---- examples/sunmmio/flash_decoding/example_gqa_decode.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369

def gqa_flashattn(batch, heads, kv_heads, seqlen_kv, dim, block_N=128):
    # Device configurations
    mesh = driver.get_sunmmio_device_mesh_config()

    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape_q = [batch, heads, dim]
    shape_k = [batch, seqlen_kv, kv_heads, dim]
    shape_v = [batch, seqlen_kv, kv_heads, dim]
    shape_o = [batch, heads, dim]
    dtype = T.float16
    accum_dtype = T.float32
    kv_group_num = heads // kv_heads
    assert heads % kv_heads == 0, "GQA requires kv_heads is the multiple of heads"

    block_H = kv_group_num

    @T.prim_func
    def main(
        Q: T.MeshTensor(shape_q, T.MeshShardingPolicy(y=0, x=1), mesh, dtype, make_zz_layout(shape_q)),
        K: T.MeshTensor(shape_k, T.MeshShardingPolicy(y=0, x=2), mesh, dtype, make_zz_layout(shape_k, axes=(1, 3))),
        V: T.MeshTensor(shape_v, T.MeshShardingPolicy(y=0, x=2), mesh, dtype, make_zz_layout(shape_k, axes=(1, 3))),
        mask: T.MeshTensor(
            [batch, seqlen_kv],
            T.MeshShardingPolicy(y=0, replicate=T.MeshReplicationType.ROW),
            mesh,
            "uint16",
            make_row_major([batch, seqlen_kv]),
        ),
        Output: T.MeshTensor(shape_o, T.MeshShardingPolicy(y=0, x=1), mesh, dtype, make_zz_layout(shape_o)),
    ):
        with T.Kernel() as (_cid):
            sharded_batch, sharded_heads, _ = Q.local_shape

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
                        T.gemm(Q_shared, K_shared, acc_s, clear_accum=True, transpose_B=True)  # Not accmulate
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


# ---- examples/sunmmio/deepseek_mla/mla_decode.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369

def mla_decode(batch, heads, kv_heads, seqlen_kv, dim, pe_dim, block_N=64, block_H=16) -> "Callable":
    mesh = driver.get_sunmmio_device_mesh_config()
    _, ncols = mesh

    assert kv_heads == 1, "MLA shares a single latent KV across all query heads"
    assert heads % ncols == 0, "heads must be divisible by the mesh column count"
    assert heads % block_H == 0, "heads must be divisible by block_H"
    assert (heads // ncols) % block_H == 0, "heads/ncols must be divisible by block_H"
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504  # log2(e)

    shape_q = [batch, heads, dim]
    shape_qpe = [batch, heads, pe_dim]
    shape_kv = [batch, seqlen_kv, kv_heads, dim]
    shape_kpe = [batch, seqlen_kv, kv_heads, pe_dim]
    shape_o = [batch, heads, dim]
    dtype = T.float16
    accum_dtype = T.float32

    heads_per_col = heads // ncols

    # Q, Q_pe and Output all share the same policy: batch on the rows (y=0), the
    # head axis sharded across the columns (x=1). KV/K_pe split the sequence
    # axis across the columns (x=1) -> split-K.
    head_policy = T.MeshShardingPolicy(y=0, x=1)
    kv_policy = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def main(
        Q: T.MeshTensor(shape_q, head_policy, mesh, dtype, make_zz_layout(shape_q)),
        Q_pe: T.MeshTensor(shape_qpe, head_policy, mesh, dtype, make_zz_layout(shape_qpe)),
        KV: T.MeshTensor(shape_kv, kv_policy, mesh, dtype, make_zz_layout(shape_kv, axes=(1, 3))),
        K_pe: T.MeshTensor(shape_kpe, kv_policy, mesh, dtype, make_zz_layout(shape_kpe, axes=(1, 3))),
        Output: T.MeshTensor(shape_o, head_policy, mesh, dtype, make_zz_layout(shape_o)),
    ):
        with T.Kernel() as (cid):
            sharded_batch = Q.local_shape[0]
            _, sharded_seqlen, _, _ = KV.local_shape
            # This core's column owns the global head blocks
            # [col*blocks_per_col, (col+1)*blocks_per_col).
            col = cid % ncols
            blocks_per_col = heads_per_col // block_H

            # Head gather (per batch): load this core's head slice, all-gather
            # across the row into the full head set.
            Q_local = T.alloc_shared([heads_per_col, dim], dtype)
            Q_pe_local = T.alloc_shared([heads_per_col, pe_dim], dtype)
            Q_full = T.alloc_shared([heads, dim], dtype)
            Q_pe_full = T.alloc_shared([heads, pe_dim], dtype)

            # Per head-block operands / accumulators.
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            # The single latent KV feeds two GEMMs with different contraction
            # axes (QK: transposed B over dim; PV: plain B over block_N), which
            # need different WSRAM operand layouts, so it is staged twice.
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            KV_v_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            acc_s = T.alloc_shared([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_shared([block_H, block_N], dtype)
            acc_o = T.alloc_shared([block_H, dim], accum_dtype)
            scores_max = T.alloc_shared([block_H], accum_dtype)
            scores_max_prev = T.alloc_shared([block_H], accum_dtype)
            scores_scale = T.alloc_shared([block_H], accum_dtype)
            scores_sum = T.alloc_shared([block_H], accum_dtype)
            logsum = T.alloc_shared([block_H], accum_dtype)
            lse = T.alloc_shared([block_H], accum_dtype)

            # Cross-row LSE-combine scratch.
            lse_dist = T.alloc_shared([ncols, block_H], accum_dtype)
            lse_max = T.alloc_shared([block_H], accum_dtype)
            lse_denom = T.alloc_shared([block_H], accum_dtype)
            o_scaled = T.alloc_shared([block_H, dim], accum_dtype)
            o_dist = T.alloc_shared([ncols, block_H, dim], accum_dtype)
            o_final = T.alloc_shared([block_H, dim], accum_dtype)
            o_cast = T.alloc_shared([block_H, dim], dtype)

            for bid in T.serial(sharded_batch):
                # --- Gather the full head set across the row. ---
                T.copy(Q[bid, :, :], Q_local)
                T.comm.all_gather(Q_local, Q_full, direction="h", axis=0)
                T.copy(Q_pe[bid, :, :], Q_pe_local)
                T.comm.all_gather(Q_pe_local, Q_pe_full, direction="h", axis=0)

                for hid in T.serial(heads // block_H):
                    T.copy(Q_full[hid * block_H : (hid + 1) * block_H, :], Q_shared)
                    T.copy(Q_pe_full[hid * block_H : (hid + 1) * block_H, :], Q_pe_shared)
                    T.fill(acc_o, 0)
                    T.fill(logsum, 0)
                    T.fill(scores_max, -T.infinity(accum_dtype))

                    # --- Local MLA attention over this core's seqlen chunk. ---
                    for k in T.serial(T.ceildiv(sharded_seqlen, block_N)):
                        T.copy(KV[bid, k * block_N : (k + 1) * block_N, 0, :], KV_shared)
                        T.copy(KV[bid, k * block_N : (k + 1) * block_N, 0, :], KV_v_shared)
                        T.copy(K_pe[bid, k * block_N : (k + 1) * block_N, 0, :], K_pe_shared)
                        # S = Q.KV^T + Q_pe.K_pe^T
                        T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True)
                        T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
                        # online softmax
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
                        # O += softmax(S) . KV
                        T.gemm(acc_s_cast, KV_v_shared, acc_o)

                    # Normalize the local partial and compute its log-sum-exp.
                    for i, j in T.Tiles([block_H, dim]):
                        acc_o[i, j] = acc_o[i, j] / logsum[i]
                    for i in T.Tiles([block_H]):
                        lse[i] = T.log2(logsum[i]) + scores_max[i] * scale

                    # --- LSE combine across the row (the seqlen-split axis). ---
                    T.comm.all_gather(lse, lse_dist, direction="h")
                    T.reduce_max(lse_dist, lse_max, dim=0, clear=True)
                    for c, i in T.Tiles([ncols, block_H]):
                        lse_dist[c, i] = T.exp2(lse_dist[c, i] - lse_max[i])
                    T.reduce_sum(lse_dist, lse_denom, dim=0, clear=True)
                    for i, j in T.Tiles([block_H, dim]):
                        o_scaled[i, j] = acc_o[i, j] * T.exp2(lse[i] - lse_max[i]) / lse_denom[i]
                    T.comm.all_gather(o_scaled, o_dist, direction="h")
                    T.reduce_sum(o_dist, o_final, dim=0, clear=True)

                    T.copy(o_final, o_cast)
                    # Output is head-sharded like Q (the reverse of the input
                    # head-gather): every core combined the full head set, but
                    # only the owning column writes each global head block into
                    # its local head slice.
                    if (col * blocks_per_col <= hid) and (hid < (col + 1) * blocks_per_col):
                        lhid = hid - col * blocks_per_col
                        T.copy(o_cast, Output[bid, lhid * block_H : (lhid + 1) * block_H, :])

    return main


# ---- examples/sunmmio/softmax/dynamic_online_softmax.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4
# (dynamic_online_softmax_sudeck.py @ 6542ab5a imports this same kernel)

def dynamic_softmax_kernel(block_M, block_N, dtype: T.dtype = T.bfloat16) -> "Callable":
    M, N = T.dynamic("m"), T.dynamic("n")

    zz_layout = make_zz_layout((M, N))
    placement = T.placement.full_shard(0, 1)

    accum_dtype = T.float32
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.MeshTensor((M, N), placement, dtype, layout=zz_layout), Y: T.MeshTensor((M, N), placement, dtype, layout=zz_layout)):
        with T.Kernel() as (_cid):
            sharded_M, sharded_N = X.local_shape

            X_shared = T.alloc_shared((block_M, block_N), dtype)
            Y_shared = T.alloc_shared((block_M, block_N), dtype)
            lse = T.alloc_shared((block_M), accum_dtype)
            max_x = T.alloc_shared((block_M,), dtype)
            exp_x = T.alloc_shared([block_M, block_N], accum_dtype)
            sum_exp_x = T.alloc_shared((block_M), accum_dtype)

            lse_dist = T.alloc_shared((T.ncols(), block_M), accum_dtype)
            lse_max = T.alloc_shared((block_M,), accum_dtype)
            lse_global = T.alloc_shared((block_M,), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.fill(lse, -T.infinity(accum_dtype))

                # Could be pipelined
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    T.reduce_max(X_shared, max_x, dim=-1, clear=True)
                    for i, j in T.Tiles([block_M, block_N]):
                        exp_x[i, j] = T.exp2(X_shared[i, j] * scale - max_x[i] * scale)
                    T.reduce_sum(exp_x, sum_exp_x, dim=-1, clear=True)

                    for i in T.Tiles([block_M]):
                        lse[i] = max_x[i] * scale + T.log2(T.exp2(lse[i] - max_x[i] * scale) + sum_exp_x[i])

                # Aggregate
                T.comm.all_gather(lse, lse_dist, direction="h")
                T.reduce_max(lse_dist, lse_max, dim=0, clear=True)

                # Get global lse
                for i, j in T.Tiles([T.ncols(), block_M]):
                    lse_dist[i, j] = T.exp2(lse_dist[i, j] - lse_max[j])
                T.reduce_sum(lse_dist, lse_global, dim=0, clear=True)
                for i in T.Tiles([block_M]):
                    lse_global[i] = lse_max[i] + T.log2(lse_global[i])

                # Get results
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        Y_shared[i, j] = T.exp2(X_shared[i, j] * scale - lse_global[i])
                    T.copy(Y_shared, Y[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N])

    return main


# ---- examples/sunmmio/softmax/online_softmax.py
# @ 06f6788db3faa91c4d9f62c254b86b24f11f44ef

def softmax_kernel(M, N, block_M, block_N, dtype: T.dtype = T.bfloat16) -> "Callable":
    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    accum_dtype = T.float32
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.MeshTensor((M, N), placement, dtype, layout=zz_layout), Y: T.MeshTensor((M, N), placement, dtype, layout=zz_layout)):
        with T.Kernel() as (_cid):
            sharded_M, sharded_N = X.local_shape

            X_shared = T.alloc_shared((block_M, block_N), dtype)
            Y_shared = T.alloc_shared((block_M, block_N), dtype)
            lse = T.alloc_shared((block_M), accum_dtype)
            max_x = T.alloc_shared((block_M,), dtype)
            exp_x = T.alloc_shared([block_M, block_N], accum_dtype)
            sum_exp_x = T.alloc_shared((block_M), accum_dtype)

            lse_dist = T.alloc_shared((T.mesh_ncols(), block_M), accum_dtype)
            lse_max = T.alloc_shared((block_M,), accum_dtype)
            lse_global = T.alloc_shared((block_M,), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.fill(lse, -T.infinity(accum_dtype))

                # Could be pipelined
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    T.reduce_max(X_shared, max_x, dim=-1, clear=True)
                    for i, j in T.Tiles([block_M, block_N]):
                        exp_x[i, j] = T.exp2(X_shared[i, j] * scale - max_x[i] * scale)
                    T.reduce_sum(exp_x, sum_exp_x, dim=-1, clear=True)

                    for i in T.Tiles([block_M]):
                        lse[i] = max_x[i] * scale + T.log2(T.exp2(lse[i] - max_x[i] * scale) + sum_exp_x[i])

                # Aggregate
                T.comm.all_gather(lse, lse_dist, direction="h")
                T.reduce_max(lse_dist, lse_max, dim=0, clear=True)

                # Get global lse
                for i, j in T.Tiles([T.mesh_ncols(), block_M]):
                    lse_dist[i, j] = T.exp2(lse_dist[i, j] - lse_max[j])
                T.reduce_sum(lse_dist, lse_global, dim=0, clear=True)
                for i in T.Tiles([block_M]):
                    lse_global[i] = lse_max[i] + T.log2(lse_global[i])

                # Get results
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        Y_shared[i, j] = T.exp2(X_shared[i, j] * scale - lse_global[i])
                    T.copy(Y_shared, Y[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N])

    return main


# ---- testing/python/sunmmio/pipeline/test_flashattn.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369

@target("Sunmmio")
def kernel_flashattn(
    batch,
    heads,
    seq_len,
    dim,
    is_causal,
    block_M=64,
    block_N=64,
    num_stages=1,
    threads=1,
):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, heads, dim]
    # Different precisions will cause different number of allocates. The default allocate is allocated according to uint8, so when the data type is bfloat16, the number of allocates will be doubled.
    dtype = T.bfloat16
    # accum_dtype = T.float32
    accum_dtype = T.bfloat16
    shard_policy = T.MeshShardingPolicy(y=0, x=2)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()

    Q_layout = make_zz_layout(q_shape, [1, 3], (32, 32))
    K_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    V_layout = make_zz_layout(kv_shape, [1, 3], (32, 32))
    O_layout = make_zz_layout(q_shape, [1, 3], (32, 32))

    @T.prim_func
    def main(
        Q: T.MeshTensor(q_shape, shard_policy, device_mesh_config, dtype, layout=Q_layout),
        K: T.MeshTensor(kv_shape, shard_policy, device_mesh_config, dtype, layout=K_layout),
        V: T.MeshTensor(kv_shape, shard_policy, device_mesh_config, dtype, layout=V_layout),
        Output: T.MeshTensor(q_shape, shard_policy, device_mesh_config, dtype, layout=O_layout),
    ):
        with T.Kernel() as _cid:
            sharded_batch = Q.local_shape[0]
            sharded_heads = Q.local_shape[2]

            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_shared([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_shared([block_M, block_N], accum_dtype, scope="shared.asram")
            acc_o = T.alloc_shared([block_M, dim], accum_dtype, scope="shared.rsram")
            scores_max = T.alloc_shared([block_M], accum_dtype)
            scores_max_prev = T.alloc_shared([block_M], accum_dtype)
            scores_scale = T.alloc_shared([block_M], accum_dtype)
            scores_sum = T.alloc_shared([block_M], accum_dtype)
            logsum = T.alloc_shared([block_M], accum_dtype)

            q_tiles = T.ceildiv(seq_len, block_M)
            for bz in T.serial(sharded_batch):
                for by in T.serial(sharded_heads):
                    for bx in T.serial(q_tiles):
                        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                        T.fill(acc_o, 0)
                        T.fill(logsum, 0)
                        T.fill(scores_max, -T.infinity(accum_dtype))

                        loop_range = (
                            T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                            if is_causal
                            else T.ceildiv(seq_len, block_N)
                        )

                        for k in T.Pipelined(loop_range, num_stages=num_stages):
                            T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)
                            if is_causal:
                                for i, j in T.Tiles([block_M, block_N]):
                                    acc_s[i, j] = T.if_then_else(
                                        bx * block_M + i >= k * block_N + j,
                                        0,
                                        -T.infinity(acc_s.dtype),
                                    )
                                # T.fill(acc_s, T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype)))
                            else:
                                for i, j in T.Tiles([block_M, block_N]):
                                    acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(acc_s.dtype), 0)

                            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)

                            for i in T.Tiles([block_M]):
                                scores_max_prev[i] = scores_max[i]
                            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                            for i in T.Tiles([block_M]):
                                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])

                            for i in T.Tiles([block_M]):
                                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)

                            for i, j in T.Tiles([block_M, block_N]):
                                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                            T.reduce_sum(acc_s, scores_sum, dim=1, clear=True)

                            for i in T.Tiles([block_M]):
                                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                            T.copy(acc_s, acc_s_cast)

                            for i, j in T.Tiles([block_M, dim]):
                                acc_o[i, j] *= scores_scale[i]

                            T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
                            T.gemm(acc_s_cast, V_shared, acc_o)

                        for i, j in T.Tiles([block_M, dim]):
                            acc_o[i, j] /= logsum[i]
                        T.copy(acc_o, O_shared)
                        T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main
