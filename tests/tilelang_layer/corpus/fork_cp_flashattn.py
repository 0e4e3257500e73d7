"""The older fork's compile-pipeline flash attention (float16), verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/compile_pipeline/test_flashattn.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/compile_pipeline/test_flashattn.py::kernel_flashattn (line 10)
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
    # Different precisions will cause different number of allocates. The default allocate is allocated according to uint8, so when the data type is float16, the number of allocates will be doubled.
    dtype = T.float16
    # accum_dtype = T.float32
    accum_dtype = T.float16
    shard_policy = T.MeshShardingPolicy(y=0, x=2)
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

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
        with T.Kernel(ncores) as _cid:
            sharded_batch = Q.shape[0]
            sharded_heads = Q.shape[2]

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

            for bz, by, bx in T.Persistent([sharded_batch, sharded_heads, T.ceildiv(seq_len, block_M)], ncores, _cid):
                T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))

                loop_range = (
                    T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if is_causal else T.ceildiv(seq_len, block_N)
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

                    # for i in T.serial(0, block_M):
                    #     scores_max_prev[i] = scores_max[i]
                    #     scores_max[i] = -T.infinity(accum_dtype)
                    #     for j in T.serial(0, block_N):
                    #         scores_max[i] = T.max(scores_max[i], acc_s[i, j])
                    #     scores_max[i] = T.max(scores_max[i], scores_max_prev[i])

                    for i in T.Tiles([block_M]):
                        scores_max_prev[i] = scores_max[i]
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Tiles([block_M]):
                        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])

                    # for i in T.Parallel(block_M):
                    for i in T.Tiles([block_M]):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)

                    # for i in T.serial(0, block_M):
                    #     scores_sum[i] = T.cast(0, accum_dtype)
                    #     for j in T.serial(0, block_N):
                    #         acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    #         scores_sum[i] = scores_sum[i] + acc_s[i, j]
                    for i, j in T.Tiles([block_M, block_N]):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1, clear=True)

                    # for i in T.Parallel(block_M):
                    for i in T.Tiles([block_M]):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)

                    # for i, j in T.Parallel(block_M, dim):
                    for i, j in T.Tiles([block_M, dim]):
                        acc_o[i, j] *= scores_scale[i]

                    T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o)

                # for i, j in T.Parallel(block_M, dim):
                for i, j in T.Tiles([block_M, dim]):
                    acc_o[i, j] /= logsum[i]
                T.copy(acc_o, O_shared)
                T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main
