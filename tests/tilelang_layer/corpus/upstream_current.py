"""Kernels of the current SUNMMIO/Tilelang tests (``testing/python/sunmmio/``) that use
T.comm or T.MeshTensor and are not yet elsewhere in the corpus, verbatim; each names its
source file and the commit it was read at. A kernel written inside a test function is
copied as that function's statements up to its ``@T.prim_func``, returned (named after
its test). Import lines only differ: ``target`` (the tests' ``@target("Sunmmio")``, from
``testing.python.sunmmio.common.compile_pipeline``) comes from the corpus harness;
``tm.enable`` provides SUNMMIO's names (``T.comm``, ``T.MeshTensor``, ``T.placement``,
the mesh symbols, ``T.Tiles``, the layout makers, ``driver``).
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.carver.arch import driver
from tilelang.language.mesh_tensor import MeshShardingPolicy
from tilelang.layout import make_aligned_row_major, make_nzz_layout, make_row_major, make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/language/test_comm.py
# @ 039b44173ff5d8035cede084e3b6f9d7a2ddeb41

# ::_allreduce_frontend_kernel (test_comm_allreduce_frontend_allocates_rsram_temporaries
# calls it with direction="all", clear=False)
def _allreduce_frontend_kernel(direction="all", clear=True, dtype="float32"):
    shape = (32, 32)
    out_shape = (32,)

    @T.prim_func
    def main(A: T.Tensor(shape, dtype), Out: T.Tensor(out_shape, dtype)):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared(shape, dtype, scope="shared.rsram")
            Out_shared = T.alloc_shared(out_shape, dtype, scope="shared.rsram")

            T.copy(A, A_shared)
            if not clear:
                T.copy(Out, Out_shared)
            T.comm.all_reduce(A_shared, Out_shared, "sum", direction, dim=1, clear=clear)
            T.copy(Out_shared, Out)

    return main


# ::test_comm_one_to_one_regions_follow_copy_normalization_rules
def test_comm_one_to_one_regions_follow_copy_normalization_rules():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((1, 64, 64), "float32", scope="shared.rsram")
            broadcast_dst = T.alloc_shared((64, 64), "float32", scope="shared.rsram")
            put_dst = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            shrink_dst = T.alloc_shared((64, 64), "float32", scope="shared.rsram")

            T.comm.broadcast(src, broadcast_dst, (0, 0), direction="h")
            T.comm.put(src[0, 16, 16], put_dst, (0, 0), (0, 1))
            T.comm.broadcast(src[0:1, 0:32, 0:32], shrink_dst, (0, 0), direction="h")

    return main


# ::test_comm_one_to_one_full_buffer_extent_mismatch_is_rejected
def test_comm_one_to_one_full_buffer_extent_mismatch_is_rejected():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            dst = T.alloc_shared((32, 64), "float32", scope="shared.rsram")
            T.comm.broadcast(src, dst, (0, 0), direction="h")

    return main


# ::test_comm_explicit_region_oob_is_warned_and_clipped
def test_comm_explicit_region_oob_is_warned_and_clipped():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            dst = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            T.comm.put(src[0:32, 0:32], dst[0:64, 0:64], (0, 0), (0, 1))

    return main


# ::test_comm_all_gather_regions_follow_copy_normalization_rules
def test_comm_all_gather_regions_follow_copy_normalization_rules():
    @T.prim_func
    def main():
        with T.Kernel():
            send = T.alloc_shared((64, 64), "float32", scope="shared.rsram")
            recv_from_load = T.alloc_shared((4, 32, 32), "float32", scope="shared.rsram")
            recv_load = T.alloc_shared((4, 64, 64), "float32", scope="shared.rsram")
            recv_shrink = T.alloc_shared((4, 64, 64), "float32", scope="shared.rsram")
            recv_axis_shrink = T.alloc_shared((130, 64), "float32", scope="shared.rsram")

            T.comm.all_gather(send[16, 16], recv_from_load, direction="h")
            T.comm.all_gather(send[0:32, 0:32], recv_load[0, 0, 0], direction="h")
            T.comm.all_gather(send[0:32, 0:32], recv_shrink, direction="h")
            T.comm.all_gather(send[0:32, 0:32], recv_axis_shrink, direction="h", axis=0)

    return main


# ::test_comm_all_gather_buffer_load_pair_is_rejected
def test_comm_all_gather_buffer_load_pair_is_rejected():
    @T.prim_func
    def main():
        with T.Kernel():
            send = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            recv = T.alloc_shared((4, 32, 32), "float32", scope="shared.rsram")
            T.comm.all_gather(send[0, 0], recv[0, 0, 0], direction="h")

    return main


# ::test_comm_all_gather_full_buffer_extent_mismatch_is_rejected
def test_comm_all_gather_full_buffer_extent_mismatch_is_rejected():
    @T.prim_func
    def main():
        with T.Kernel():
            send = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            recv = T.alloc_shared((4, 64, 32), "float32", scope="shared.rsram")
            T.comm.all_gather(send, recv, direction="h")

    return main


# ::test_comm_all_reduce_regions_follow_copy_normalization_rules
def test_comm_all_reduce_regions_follow_copy_normalization_rules():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((64, 64), "float32", scope="shared.rsram")
            out_from_load = T.alloc_shared((32,), "float32", scope="shared.rsram")
            out_load = T.alloc_shared((64,), "float32", scope="shared.rsram")
            out_shrink = T.alloc_shared((64,), "float32", scope="shared.rsram")

            T.comm.all_reduce(src[16, 0], out_from_load, "sum", "h", dim=1)
            T.comm.all_reduce(src[0:32, 0:64], out_load[16], "sum", "h", dim=1)
            T.comm.all_reduce(src[0:32, 0:64], out_shrink, "sum", "h", dim=1)

    return main


# ::test_comm_all_reduce_full_buffer_extent_mismatch_is_rejected
def test_comm_all_reduce_full_buffer_extent_mismatch_is_rejected():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((32, 64), "float32", scope="shared.rsram")
            out = T.alloc_shared((64,), "float32", scope="shared.rsram")
            T.comm.all_reduce(src, out, "sum", "h", dim=1)

    return main


# ::test_comm_all_reduce_buffer_load_pair_is_rejected
def test_comm_all_reduce_buffer_load_pair_is_rejected():
    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            out = T.alloc_shared((32,), "float32", scope="shared.rsram")
            T.comm.all_reduce(src[0, 0], out[0], "sum", "h", dim=1)

    return main


# ::test_comm_dynamic_core_python_api
def test_comm_dynamic_core_python_api():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(16, threads=128) as bx:
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared, B_shared, bx, direction="h")
            T.comm.put(A_shared, B_shared, bx, (bx + 1) % 16)

    return main


# ::test_comm_dynamic_core_lower
def test_comm_dynamic_core_lower():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32")):
        with T.Kernel(16, threads=128) as bx:
            A_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            B_shared = T.alloc_shared([128, 128], "float32", scope="shared.rsram")
            T.copy(A, A_shared)

            T.comm.broadcast(A_shared, B_shared, bx, direction="all")
            T.comm.put(A_shared, B_shared, bx, (bx + 1) % 16)

    return main


# ---- testing/python/sunmmio/pipeline/test_comm.py
# @ 039b44173ff5d8035cede084e3b6f9d7a2ddeb41 ::kernel_comm
@target("Sunmmio")
def kernel_comm(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(A_shape, shard_policy, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, accum_dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel() as _cid:
            sharded_M, _ = A.local_shape
            _, sharded_N = C.local_shape

            A_shared = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_1 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_2 = T.alloc_shared((block_M, block_K), dtype=dtype)
            A_remote_3 = T.alloc_shared((block_M, block_K), dtype=dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_1 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_2 = T.alloc_shared((block_K, block_N), dtype=dtype)
            B_remote_3 = T.alloc_shared((block_K, block_N), dtype=dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype=accum_dtype)
            C_allgather_1 = T.alloc_shared((16, block_M, block_N), dtype=accum_dtype)
            C_allgather_2 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)
            C_allgather_3 = T.alloc_shared((4, block_M, block_N), dtype=accum_dtype)

            for _bx in T.serial(T.ceildiv(sharded_N, block_N)):
                for _by in T.serial(T.ceildiv(sharded_M, block_M)):
                    T.clear(A_shared)
                    T.clear(B_shared)
                    T.clear(C_shared)  # Avoid Fill op unsupported scope error
                    T.comm.broadcast(A_shared, A_remote_1, (0, 0), direction="all")
                    T.comm.broadcast(A_shared, A_remote_2, (0, 0), direction="h")
                    T.comm.broadcast(A_shared, A_remote_3, (0, 0), direction="v")
                    T.comm.put(B_shared, B_remote_1, (1, 2), (2, 3))
                    T.comm.put(B_shared, B_remote_2, (1, 2), (1, 3))
                    T.comm.put(B_shared, B_remote_3, (1, 2), (3, 2))
                    T.comm.all_gather(C_shared, C_allgather_1, direction="all")
                    T.comm.all_gather(C_shared, C_allgather_2, direction="h")
                    T.comm.all_gather(C_shared, C_allgather_3, direction="v")

    return main


# ---- testing/python/sunmmio/pipeline/test_summa.py
# @ 3cb87329421b9e8cb1727fe4ba3d4dafba5dba76 ::summa_matmul
@target("Sunmmio")
def summa_matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    """
    SUMMA (Scalable Universal Matrix Multiplication Algorithm)
    for a 4x4 mesh.

    Grid size: (N/block_N, M/block_M) = (4, 4)
    """
    shard_policy = T.MeshShardingPolicy(y=0, x=1)

    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, [0, 1], (32, 32))
    B_layout = make_zz_layout(B_shape, [0, 1], (32, 32))
    C_layout = make_zz_layout(C_shape, [0, 1], (32, 32))

    @T.prim_func
    def kernel(
        A: T.MeshTensor(A_shape, shard_policy, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, accum_dtype, layout=C_layout),
    ):
        # Assume the current is a 4x4 processor grid (Mesh)
        # Each core is responsible for outputting a 32x32 block of matrix C
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

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


# ---- testing/python/sunmmio/pipeline/test_overall.py
# @ 1c3c809a27013827e11d6c50182bd514cd1bcd43 ::kernel_overall
@target("Sunmmio")
def kernel_overall(M, N, K, block_M, block_N, block_K, dtype="bfloat16", accum_dtype="float32"):
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
    def main(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        Bias: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, accum_dtype, layout=C_layout),
    ):
        # Initialize Kernel Context
        with T.Kernel(ncores) as _cid:
            sharded_M, sharded_K = A.shape
            _, sharded_N = B.shape

            # [wanghz18] Automatic SRAM Scope Inference
            # We declare generic 'shared' scope, expecting InferSramScope pass to
            # refine them to 'shared.asram', 'shared.wsram', 'shared.rsram'
            A_shared = T.alloc_shared((block_M, block_K), dtype=dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype=dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            Bias_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                for by in T.serial(T.ceildiv(sharded_M, block_M)):
                    T.clear(C_shared)  # Avoid Fill op unsupported scope error

                    # [wanghz18] GEMM Lowering to mma_sunmmio intrinsic
                    for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=2):
                        T.copy(A[by * block_M, k * block_K], A_shared)
                        T.copy(B[k * block_K, bx * block_N], B_shared)
                        T.gemm(A_shared, B_shared, C_shared)

                    # Load Bias
                    T.copy(Bias[by * block_M, bx * block_N], Bias_shared)

                    # [weizzh] Tiles Loop for Element-wise operation
                    # This loop should be legalized and vectorized by LegalizeTilesLoop/TilesLoop passes
                    for i, j in T.Tiles(C_shared, parallel=True):
                        C_shared[i, j] = C_shared[i, j] + Bias_shared[i, j]

                    # [xiaoyao-NKU] Inter-core Communication (Broadcast)
                    C_remote = T.alloc_shared((block_M, block_N), accum_dtype)
                    T.comm.broadcast(C_shared, C_remote, (0, 0), direction="h")

                    # Store result
                    T.copy(C_remote, C[by * block_M, bx * block_N])

    return main


# ---- testing/python/sunmmio/pipeline/test_sunmmio_pipeline_greedy_collective.py
# @ a24545bee5dfe7f2004af15e0dc2a1e1f1394690 ::mesh_ffn_new
@target("Sunmmio")
def mesh_ffn_new(
    seq=128,
    hidden=512,
    inner_dim=512,
    block_seq=32,
    block_hidden=32,
    block_inner=32,
    num_stages=2,
    dtype="bfloat16",
    accum_dtype="float",
):
    activation_policy = T.placement.full_shard(0, 1)
    weight_policy = T.placement.full_shard(0, 1)
    x_shape = (seq, hidden)
    up_weight_shape = (hidden, inner_dim)
    mid_shape = (seq, inner_dim)
    down_weight_shape = (inner_dim, hidden)

    @T.prim_func
    def main(
        X: T.MeshTensor(x_shape, activation_policy, dtype, layout=make_zz_layout(x_shape)),
        WUp: T.MeshTensor(up_weight_shape, weight_policy, dtype, layout=make_zz_layout(up_weight_shape)),
        WDown: T.MeshTensor(down_weight_shape, weight_policy, dtype, layout=make_zz_layout(down_weight_shape)),
        Mid: T.MeshTensor(mid_shape, activation_policy, dtype, layout=make_zz_layout(mid_shape)),
        Y: T.MeshTensor(x_shape, activation_policy, accum_dtype, layout=make_zz_layout(x_shape)),
    ):
        with T.Kernel(T.mesh_ncores()):
            lhs_local = T.alloc_shared((block_seq, block_hidden), dtype, scope="shared.rsram")
            up_local = T.alloc_shared((block_hidden, block_inner), dtype, scope="shared.rsram")
            lhs_shared = T.alloc_shared((block_seq, block_hidden * T.ncols()), dtype)
            up_shared = T.alloc_shared((block_hidden * T.nrows(), block_inner), dtype)
            mid_acc = T.alloc_shared((block_seq, block_inner), accum_dtype, scope="shared.rsram")
            mid_tile = T.alloc_shared((block_seq, block_inner), dtype, scope="shared.rsram")
            mid_local = T.alloc_shared((block_seq, block_inner), dtype, scope="shared.rsram")
            down_local = T.alloc_shared((block_inner, block_hidden), dtype, scope="shared.rsram")
            mid_shared = T.alloc_shared((block_seq, block_inner * T.ncols()), dtype)
            down_shared = T.alloc_shared((block_inner * T.nrows(), block_hidden), dtype)
            out_acc = T.alloc_shared((block_seq, block_hidden), accum_dtype, scope="shared.rsram")

            hidden_blocks = T.ceildiv(X.local_shape[1], block_hidden)
            inner_blocks = T.ceildiv(Mid.local_shape[1], block_inner)
            for bm in T.serial(T.ceildiv(X.local_shape[0], block_seq)):
                for bn in T.serial(inner_blocks):
                    T.clear(mid_acc)
                    for bk in T.Pipelined(hidden_blocks, num_stages=num_stages):
                        T.copy(
                            X[bm * block_seq : (bm + 1) * block_seq, bk * block_hidden : (bk + 1) * block_hidden],
                            lhs_local,
                        )
                        T.copy(
                            WUp[bk * block_hidden : (bk + 1) * block_hidden, bn * block_inner : (bn + 1) * block_inner],
                            up_local,
                        )
                        T.comm.all_gather(lhs_local, lhs_shared, direction="horizontal", axis=-1)
                        T.comm.all_gather(up_local, up_shared, direction="vertical", axis=0)
                        T.gemm(lhs_shared, up_shared, mid_acc)
                    for i, j in T.Tiles(mid_tile, parallel=True):
                        mid_tile[i, j] = T.Cast(dtype, T.max(mid_acc[i, j], T.float32(0)))
                    T.copy(mid_tile, Mid[bm * block_seq, bn * block_inner])

                for bh in T.serial(hidden_blocks):
                    T.clear(out_acc)
                    for bn in T.Pipelined(inner_blocks, num_stages=num_stages):
                        T.copy(
                            Mid[bm * block_seq : (bm + 1) * block_seq, bn * block_inner : (bn + 1) * block_inner],
                            mid_local,
                        )
                        T.copy(
                            WDown[bn * block_inner : (bn + 1) * block_inner, bh * block_hidden : (bh + 1) * block_hidden],
                            down_local,
                        )
                        T.comm.all_gather(mid_local, mid_shared, direction="horizontal", axis=-1)
                        T.comm.all_gather(down_local, down_shared, direction="vertical", axis=0)
                        T.gemm(mid_shared, down_shared, out_acc)
                    T.copy(out_acc, Y[bm * block_seq, bh * block_hidden])

    return main


# ---- testing/python/sunmmio/ops/test_allreduce.py
# @ 21c4bbe10a57d50837b3c512183d891df1639e93 ::allreduce_kernel (it returns the module)
def allreduce_kernel(direction="all", clear=True, dtype="float32"):
    shape = (32, 32)
    out_shape = shape

    @T.prim_func
    def main(A: T.Tensor(shape, dtype), Out: T.Tensor(out_shape, dtype)):
        with T.Kernel(1, threads=128) as (bx,):
            A_shared = T.alloc_shared(shape, dtype, scope="shared.rsram")
            Out_shared = T.alloc_shared(out_shape, dtype, scope="shared.rsram")

            T.copy(A, A_shared)
            if not clear:
                T.copy(Out, Out_shared)
            T.comm.all_reduce(A_shared, Out_shared, "sum", direction, dim=1, clear=clear)
            T.copy(Out_shared, Out)

    return tvm.IRModule({"main": main})


# ---- testing/python/sunmmio/ops/test_datapath.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::copy (the file's other kernels use neither
# T.comm nor T.MeshTensor)
def copy(K, block_M, block_N, block_K, dtype="float32", accum_dtype="float32"):
    _layout = make_zz_layout((128, 128), [0, 1], (32, 32))
    MyTensor = T.MeshTensor(
        (128, 128),
        sharding_policy=MeshShardingPolicy(cross_mesh_dim=0),
        device_mesh_config=(2, 2),
        layout=_layout,
    )

    @T.prim_func
    def main(C: MyTensor):
        # Initialize Kernel Context
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.asram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.wsram")
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")

            T.annotate_layout({C_shared: make_zz_layout(C_shared)})

            for _bx in T.serial(T.ceildiv(128, block_N)):
                for by in T.serial(T.ceildiv(128, block_M)):
                    for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                        # DRAM -> RSRAM
                        T.copy(C[by * block_M, ko * block_K], C_shared)
                        # DRAM -> WSRAM
                        T.copy(C[by * block_M, ko * block_K], B_shared)
                        # DRAM <- RSRAM
                        T.copy(C_shared, C[by * block_M, ko * block_K])
                        # DRAM -> ASRAM
                        T.copy(C[by * block_M, ko * block_K], A_shared)
                        # RSRAM -> ASRAM
                        T.copy(C_shared[8:24, 16:48], A_shared[24:40, 8:40])
                        # RSRAM -> WSRAM
                        T.copy(C_shared[8:32, 48:56], B_shared[40:64, 0:8])
                        # RSRAM <-> RSRAM
                        T.copy(C_shared, D_shared)

    return tvm.IRModule({"main": main})


# ---- testing/python/sunmmio/transform/test_legalize_datapath.py
# @ 16e4e53c8094249dfe9e7951fceaf7ac95e6997e (its gemm_matmul and flashattn kernels use
# neither T.comm nor T.MeshTensor)

# ::gemm_broadcast_from_dram
def gemm_broadcast_from_dram(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """Build a GEMM kernel where A is loaded via broadcast from DRAM.

    A is broadcast from DRAM to A_shared, which is used as the left operand
    of T.gemm. InferSramScope should assign A_shared to shared.asram,
    triggering DRAM->ASRAM legalization for the broadcast.
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(N, block_N)):
                for by in T.serial(T.ceildiv(M, block_M)):
                    T.clear(C_shared)
                    T.comm.broadcast(A, A_shared, (0, 0), direction="h")
                    for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                        T.copy(B[k * block_K, bx * block_N], B_shared)
                        T.gemm(A_shared, B_shared, C_shared)

                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# ::gemm_put_from_dram
def gemm_put_from_dram(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    """Build a GEMM kernel where A is loaded via put from DRAM.

    A is put from DRAM (core 0,0) to A_shared (core 0,1), and A_shared is used
    as the left operand of T.gemm. InferSramScope should assign A_shared to
    shared.asram, triggering DRAM->ASRAM legalization for the put.
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(N, block_N)):
                for by in T.serial(T.ceildiv(M, block_M)):
                    T.clear(C_shared)
                    T.comm.put(A, A_shared, (0, 0), (0, 1))
                    for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                        T.copy(B[k * block_K, bx * block_N], B_shared)
                        T.gemm(A_shared, B_shared, C_shared)

                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return tvm.IRModule({"main": main})


# ::allgather_dram_to_asram
def allgather_dram_to_asram(block_M, block_K, dtype=T.float16):
    """Build a kernel where all_gather goes from DRAM to an explicitly ASRAM-scoped buffer.

    The recv buffer is allocated with explicit scope="shared.asram" to bypass
    InferSramScope (which wouldn't naturally assign a 3D buffer to ASRAM).
    This directly tests the legalize pass on the all_gather DRAM->ASRAM path.

    For horizontal all_gather with 4 cols: send [block_M, block_K] -> recv [4, block_M, block_K].
    """

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
    ):
        with T.Kernel():
            A_gathered = T.alloc_shared([4, block_M, block_K], dtype, scope="shared.asram")
            T.comm.all_gather(A, A_gathered, direction="h")

    return tvm.IRModule({"main": main})


# ::broadcast_dram_to_rsram
def broadcast_dram_to_rsram(block_M, block_K, direction, dtype=T.float16):
    """Build a directional broadcast directly from DRAM to RSRAM."""

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
    ):
        with T.Kernel(T.mesh_ncores()):
            A_broadcast = T.alloc_shared((block_M, block_K), dtype, scope="shared.rsram")
            T.comm.broadcast(A, A_broadcast, (0, 0), direction=direction)

    return tvm.IRModule({"main": main})


# ::allgather_dram_to_rsram
def allgather_dram_to_rsram(block_M, block_K, dtype=T.float16, direction="h"):
    """Build a directional all-gather directly from DRAM to RSRAM."""

    recv_num = {"h": 4, "v": 4, "a": 16}[direction]

    @T.prim_func
    def main(
        A: T.Tensor((block_M, block_K), dtype),
    ):
        with T.Kernel(T.mesh_ncores()):
            A_gathered = T.alloc_shared((recv_num * block_M, block_K), dtype, scope="shared.rsram")
            T.comm.all_gather(A, A_gathered, direction=direction, axis=0)

    return tvm.IRModule({"main": main})


# ---- testing/python/sunmmio/pipeline/test_mma_3times.py
# @ 1c3c809a27013827e11d6c50182bd514cd1bcd43 ::kernel_mma_3times_single_thread
@target("Sunmmio")
def kernel_mma_3times_single_thread(M=16, N=16, K=16, block_M=128, block_N=128, block_K=32, dtype="float16"):
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
    def mma_3times_kernel(
        A: T.MeshTensor(A_shape, shard_policy, device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor(B_shape, shard_policy, device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor(C_shape, shard_policy, device_mesh_config, dtype, layout=C_layout),
    ):
        # Initialize single-thread Kernel context
        with T.Kernel(ncores) as _cid:
            sharded_M, _ = A.shape
            _, sharded_N = C.shape

            # [Key modification] Split multiple shared memory allocations to test merge_shared_memory_allocations
            # Allocate multiple slice memories related to A (simulate A data storage in different stages)
            A_shared1 = T.alloc_shared((block_M, block_K), dtype)
            A_shared2 = T.alloc_shared((block_M, block_K), dtype)
            A_shared3 = T.alloc_shared((block_M, block_K), dtype)
            # Allocate multiple slice memories related to B (simulate B data storage in different stages)
            B_shared1 = T.alloc_shared((block_K, block_N), dtype)
            B_shared2 = T.alloc_shared((block_K, block_N), dtype)
            B_shared3 = T.alloc_shared((block_K, block_N), dtype)
            # Allocate multiple accumulation memories related to C (simulate intermediate results in different MMA stages)
            C_shared1 = T.alloc_shared((block_M, block_N), dtype)

            for _bx in T.serial(T.ceildiv(sharded_N, block_N)):
                for _by in T.serial(T.ceildiv(sharded_M, block_M)):
                    # 1st MMA: copy data to stage1 memory -> compute -> save result to acc1

                    T.copy(A[block_M * 0, block_K * 0], A_shared1)
                    T.copy(B[block_K * 0, block_N * 0], B_shared1)
                    T.clear(C_shared1)
                    T.gemm(A_shared1, B_shared1, C_shared1)

                    # 2nd MMA: copy data to stage2 memory -> accumulate based on acc1 -> save result to acc2
                    T.copy(A[block_M * 1, block_K * 0], A_shared2)
                    T.copy(B[block_K * 1, block_N * 0], B_shared2)
                    T.gemm(A_shared2, B_shared2, C_shared1)

                    # 3rd MMA: copy data to stage3 memory -> accumulate based on acc2 -> save result to final
                    T.copy(A[block_M * 2, block_K * 0], A_shared3)
                    T.copy(B[block_K * 2, block_N * 0], B_shared3)
                    T.gemm(A_shared3, B_shared3, C_shared1)

                    # Write the final result back to global memory
                    T.copy(C_shared1, C[0, 0])

    return mma_3times_kernel


# ---- examples/gemm/sunmmio_example_gemm.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::matmul_persistent
def matmul_persistent(M, N, K, block_M, block_N, block_K, num_stages, dtype=T.bfloat16, accum_dtype=T.float32):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config

    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
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
                        T.comm.all_gather(
                            A[bx * block_M : (bx + 1) * block_M, k * block_K : (k + 1) * block_K],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[k * block_K : (k + 1) * block_K, by * block_N : (by + 1) * block_N],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)

                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


# ---- examples/sunmmio/elementwise/elementwise_add.py
# @ 1c3c809a27013827e11d6c50182bd514cd1bcd43 ::_elementwise_add_prim_func (the example's
# @tilelang.jit wrapper around it targets SUNMMIO's simulator)
def _elementwise_add_prim_func(M, N, block_M, block_N, in_dtype, out_dtype):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def elem_add(
        A: T.MeshTensor((M, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        B: T.MeshTensor((M, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        C: T.MeshTensor((M, N), placement, device_mesh_config, out_dtype, layout=zz_layout),
    ):
        with T.Kernel(ncores) as _cid:
            sharded_M, sharded_N = A.shape

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


# ---- examples/sunmmio/gemm/bf16_gemm.py
# @ 4e4630002e0d1ec83ac608e14cdee3ba2339c5ff ::matmul_persistent (renamed
# bf16_gemm_matmul_persistent here: the name is taken above)
def bf16_gemm_matmul_persistent(M, N, K, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32):
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

            A_shared_dist = T.alloc_shared((block_M, block_K * T.mesh_ncols()), dtype)
            B_shared_dist = T.alloc_shared((block_K * T.mesh_nrows(), block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.serial(T.ceildiv(sharded_K, block_K)):
                        T.comm.all_gather(
                            A[bx * block_M : (bx + 1) * block_M, k * block_K : (k + 1) * block_K],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[k * block_K : (k + 1) * block_K, by * block_N : (by + 1) * block_N],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


# ---- examples/sunmmio/reduction/reduction.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::reduction
def reduction(M, K, N, block_K, block_N, in_dtype, out_dtype):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    _, ncols = device_mesh_config

    zz_layout = make_zz_layout((M, K, N))
    placement = T.MeshShardingPolicy(y=0, x=1)
    rm_layout = make_row_major((M, K))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        B: T.MeshTensor((M, K), placement, device_mesh_config, out_dtype, layout=rm_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K, sharded_N = A.local_shape
            print(sharded_M, sharded_K, sharded_N)

            A_shared = T.alloc_shared((block_K, block_N), in_dtype)
            Acc_shared = T.alloc_shared((block_K, block_N), out_dtype)
            Acc_dist_shared = T.alloc_shared((block_K, ncols * block_N), out_dtype)
            B_shared = T.alloc_shared((block_K,), out_dtype)

            for bx in T.serial(sharded_M):
                for by in T.serial(T.ceildiv(sharded_K, block_K)):
                    T.clear(Acc_shared)
                    for bz in T.serial(T.ceildiv(sharded_N, block_N)):
                        T.copy(A[bx, by * block_K, bz * block_N], A_shared)
                        for i, j in T.Tiles([block_K, block_N]):
                            Acc_shared[i, j] = A_shared[i, j] + Acc_shared[i, j]
                    T.comm.all_gather(Acc_shared, Acc_dist_shared, "h", axis=-1)
                    T.reduce_sum(Acc_dist_shared, B_shared, dim=-1)
                    T.copy(B_shared, B[bx, by * block_K])

    return main


# ---- examples/sunmmio/rmsnorm/rmsnorm.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::rmsnorm_kernel
def rmsnorm_kernel(M, N, block_M, block_N, dtype: T.dtype = T.bfloat16, eps: float = 1e-12) -> "Callable":
    # Device configuration: a row x col mesh of cores.
    mesh = driver.get_sunmmio_device_mesh_config()
    _, ncols = mesh

    zz_layout = make_zz_layout((M, N))
    # Shard rows (dim 0) across the mesh rows and the reduced dim N (dim 1)
    # across the mesh columns, mirroring the softmax example.  The RMSNorm
    # reduction is over N, which lives on the column axis, so each core holds a
    # partial sum that is combined across the row with an all_gather.
    placement = T.MeshShardingPolicy(y=0, x=1)

    accum_dtype = T.float32

    @T.prim_func
    def main(
        X: T.MeshTensor((M, N), placement, mesh, dtype, zz_layout),
        Y: T.MeshTensor((M, N), placement, mesh, dtype, zz_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_N = X.local_shape

            X_shared = T.alloc_shared((block_M, block_N), dtype)
            Y_shared = T.alloc_shared((block_M, block_N), dtype)
            x_sq = T.alloc_shared((block_M, block_N), accum_dtype)
            tile_sumsq = T.alloc_shared((block_M,), accum_dtype)
            local_sumsq = T.alloc_shared((block_M,), accum_dtype)

            sumsq_dist = T.alloc_shared((ncols, block_M), accum_dtype)
            total_sumsq = T.alloc_shared((block_M,), accum_dtype)
            inv_rms = T.alloc_shared((block_M,), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.fill(local_sumsq, 0)

                # Local partial sum of squares over this core's N shard.
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        x_sq[i, j] = X_shared[i, j].astype(accum_dtype) * X_shared[i, j].astype(accum_dtype)
                    T.reduce_sum(x_sq, tile_sumsq, dim=-1, clear=True)
                    for i in T.Tiles([block_M]):
                        local_sumsq[i] = local_sumsq[i] + tile_sumsq[i]

                # Combine the partial sums across the row (the N-sharding axis).
                T.comm.all_gather(local_sumsq, sumsq_dist, direction="h")
                T.reduce_sum(sumsq_dist, total_sumsq, dim=0, clear=True)

                # inv_rms = rsqrt(mean(x^2) + eps), with the mean over the full N.
                for i in T.Tiles([block_M]):
                    inv_rms[i] = T.rsqrt(total_sumsq[i] / N + eps)

                # Scale and write back.
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(X[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], X_shared)
                    for i, j in T.Tiles([block_M, block_N]):
                        Y_shared[i, j] = X_shared[i, j] * inv_rms[i]
                    T.copy(Y_shared, Y[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N])

    return main


# ---- examples/sunmmio/reduction/1d_reduction.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::reduction (renamed reduction_1d here: the
# name is taken above)
def reduction_1d(M, block_M, in_dtype, out_dtype):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    _, ncols = device_mesh_config

    A_layout = make_row_major((M,))
    B_layout = make_aligned_row_major((1,), align_bytes=1024, dtype=out_dtype)
    A_placement = T.MeshShardingPolicy(y=0, replicate=T.MeshReplicationType.ROW)
    B_placement = T.MeshShardingPolicy(replicate=T.MeshReplicationType.ALL)

    @T.prim_func
    def main(
        A: T.MeshTensor((M), A_placement, device_mesh_config, in_dtype, layout=A_layout),
        B: T.MeshTensor((1), B_placement, device_mesh_config, out_dtype, layout=B_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M = A.local_shape[0]

            A_shared = T.alloc_shared((block_M), in_dtype)
            Acc_shared = T.alloc_shared((block_M), out_dtype)
            Acc_dist_shared = T.alloc_shared((ncols * block_M), out_dtype)
            B_shared = T.alloc_shared((1,), out_dtype)
            T.annotate_layout({B_shared: B_layout})

            T.clear(Acc_shared)
            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.copy(A[bx * block_M : (bx + 1) * block_M], A_shared)
                for i in T.Tiles([block_M]):
                    Acc_shared[i] = A_shared[i] + Acc_shared[i]
            T.comm.all_gather(Acc_shared, Acc_dist_shared, "h", axis=-1)
            T.reduce_sum(Acc_dist_shared, B_shared, dim=-1)
            T.copy(B_shared, B)

    return main


# ---- examples/sunmmio/gemm/bf16_gemm_zzn.py
# @ 4e4630002e0d1ec83ac608e14cdee3ba2339c5ff ::_validate_config, matmul_persistent_zzn
def _validate_config(M, N, K, block_M, block_N, block_K):
    mesh_rows, mesh_cols = driver.get_sunmmio_device_mesh_config()
    asram_bytes = block_M * (mesh_cols * block_K) * 2
    wsram_bytes = (mesh_rows * block_K) * block_N * 2

    if min(M, N, K, block_M, block_N, block_K) <= 0:
        raise ValueError("matrix and block dimensions must be positive")
    if block_M % 32 != 0 or block_N % 32 != 0 or block_K % 32 != 0:
        raise ValueError("block_M, block_N, and block_K must be multiples of 32")
    if asram_bytes > 128 * 1024:
        raise ValueError(f"A tile requires {asram_bytes} ASRAM bytes, exceeding the 128 KiB limit")
    if wsram_bytes > 1024 * 1024:
        raise ValueError(f"B tile requires {wsram_bytes} WSRAM bytes, exceeding the 1 MiB limit")
    sharded_M = ((M + mesh_rows * 32 - 1) // (mesh_rows * 32)) * 32
    if block_M > sharded_M:
        raise ValueError(f"block_M must not exceed the ZZ-padded per-core M extent ({sharded_M})")
    if K % (mesh_rows * block_K) != 0:
        raise ValueError(f"K must be a multiple of mesh_rows * block_K ({mesh_rows * block_K})")
    if N % (mesh_cols * block_N) != 0:
        raise ValueError(f"N must be a multiple of mesh_cols * block_N ({mesh_cols * block_N})")


def matmul_persistent_zzn(M, N, K, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32):
    _validate_config(M, N, K, block_M, block_N, block_K)

    A_layout = make_zz_layout((M, K))
    B_layout = make_nzz_layout(
        (K, N),
        axes=(0, 1),
        block_shape=(32, 32),
        cluster_shape=(block_K // 32, block_N // 32),
    )
    C_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), placement, dtype, layout=A_layout),
        B: T.MeshTensor((K, N), placement, dtype, layout=B_layout),
        C: T.MeshTensor((M, N), placement, accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

            A_shared_dist = T.alloc_shared((block_M, block_K * T.mesh_ncols()), dtype)
            B_shared_dist = T.alloc_shared((block_K * T.mesh_nrows(), block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.serial(T.ceildiv(sharded_K, block_K)):
                        T.comm.all_gather(
                            A[bx * block_M : (bx + 1) * block_M, k * block_K : (k + 1) * block_K],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[k * block_K : (k + 1) * block_K, by * block_N : (by + 1) * block_N],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


# ---- examples/sunmmio/elementwise/mixed_precision_mul.py
# @ 11b567a9c93d709cb2317749b56b51ea5eb42ec5 ::mixed_precision_mul (the example's
# @tilelang.jit targets SUNMMIO's simulator: here the harness stand-in)
@_h.tilelang_jit.jit(target="sunmmio", execution_backend="sunmmio_sunsim")
def mixed_precision_mul(M=256, N=512, block_M=64, block_N=128):
    placement = T.placement.full_shard(0, 1)

    @T.prim_func
    def mixed_mul(
        A: T.MeshTensor((M, N), placement, T.bfloat16),
        B: T.MeshTensor((M, N), placement, T.bfloat16),
        C: T.MeshTensor((M, N), placement, T.float32),
    ):
        with T.Kernel():
            local_m, local_n = A.local_shape
            A_shared = T.alloc_shared((block_M, block_N), T.bfloat16)
            B_shared = T.alloc_shared((block_M, block_N), T.bfloat16)
            C_shared = T.alloc_shared((block_M, block_N), T.float32)
            for bm in T.serial(T.ceildiv(local_m, block_M)):
                for bn in T.serial(T.ceildiv(local_n, block_N)):
                    T.copy(A[bm * block_M, bn * block_N], A_shared)
                    T.copy(B[bm * block_M, bn * block_N], B_shared)
                    for i, j in T.Tiles(A_shared):
                        C_shared[i, j] = A_shared[i, j] * B_shared[i, j]
                    T.copy(C_shared, C[bm * block_M, bn * block_N])

    return mixed_mul


# ---- examples/sunmmio/rmsnorm/rmsnorm_pipelined.py
# @ 3cb87329421b9e8cb1727fe4ba3d4dafba5dba76 ::rmsnorm_kernel (renamed
# rmsnorm_pipelined_kernel here: the name is taken above)
def rmsnorm_pipelined_kernel(M, N, block_M, block_N, dtype: T.dtype = T.bfloat16, eps: float = 1e-12) -> "Callable":
    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    accum_dtype = T.float32

    @T.prim_func
    def main(
        X: T.MeshTensor((M, N), placement, dtype, layout=zz_layout),
        Y: T.MeshTensor((M, N), placement, dtype, layout=zz_layout),
    ):
        with T.Kernel() as (_cid):
            sharded_M, sharded_N = X.local_shape

            # --- Explicit scope: an elementwise + reduction kernel with no
            # tensor-core GEMM, so every on-chip buffer lives in RSRAM (the
            # tile/vector unit's working memory). X_db/Y_db carry a leading
            # 2-stage axis for double buffering. ---
            X_db = T.alloc_shared((2, block_M, block_N), dtype, scope="shared.rsram")
            Y_db = T.alloc_shared((2, block_M, block_N), dtype, scope="shared.rsram")
            x_sq = T.alloc_shared((block_M, block_N), accum_dtype, scope="shared.rsram")
            tile_sumsq = T.alloc_shared((block_M,), accum_dtype, scope="shared.rsram")
            local_sumsq = T.alloc_shared((block_M,), accum_dtype, scope="shared.rsram")
            sumsq_dist = T.alloc_shared((T.mesh_ncols(), block_M), accum_dtype, scope="shared.rsram")
            total_sumsq = T.alloc_shared((block_M,), accum_dtype, scope="shared.rsram")
            inv_rms = T.alloc_shared((block_M,), accum_dtype, scope="shared.rsram")

            # --- Explicit layout, chosen to follow the data flow:
            #   * X_db/Y_db/x_sq carry [block_M, block_N] tiles that cross the DMA
            #     boundary with the ZZ-laid-out global X/Y (and ZZ matches the
            #     tile unit's 32x32 blocks), so they are ZZ on the trailing two
            #     dims -> a plain DMA with no layout transform.
            #   * The 1D reduction vectors (and the gather buffer sumsq_dist) are
            #     not blocked, so aligned row-major.
            # These match what inference would pick; stating them just makes the
            # file self-documenting. ---
            T.annotate_layout(
                {
                    X_db: make_zz_layout(X_db),
                    Y_db: make_zz_layout(Y_db),
                    x_sq: make_zz_layout(x_sq),
                    tile_sumsq: make_aligned_row_major(tile_sumsq, accum_dtype),
                    local_sumsq: make_aligned_row_major(local_sumsq, accum_dtype),
                    sumsq_dist: make_aligned_row_major(sumsq_dist, accum_dtype),
                    total_sumsq: make_aligned_row_major(total_sumsq, accum_dtype),
                    inv_rms: make_aligned_row_major(inv_rms, accum_dtype),
                }
            )

            nt = T.ceildiv(sharded_N, block_N)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                T.fill(local_sumsq, 0)

                # --- Pass 1: sum of squares, X double-buffered. ---
                # Prologue: load the first tile into stage 0.
                T.copy(X[bx * block_M : (bx + 1) * block_M, 0:block_N], X_db[0, :, :])
                for by in T.serial(nt):
                    # Prefetch the next tile into the other stage (async DMA),
                    # overlapping the square+reduce on the current stage.
                    if by + 1 < nt:
                        T.copy(X[bx * block_M : (bx + 1) * block_M, (by + 1) * block_N : (by + 2) * block_N], X_db[(by + 1) % 2, :, :])
                    for i, j in T.Tiles([block_M, block_N]):
                        x_sq[i, j] = X_db[by % 2, i, j].astype(accum_dtype) * X_db[by % 2, i, j].astype(accum_dtype)
                    T.reduce_sum(x_sq, tile_sumsq, dim=-1, clear=True)
                    for i in T.Tiles([block_M]):
                        local_sumsq[i] = local_sumsq[i] + tile_sumsq[i]

                # Combine partial sums across the row (the N-sharding axis).
                T.comm.all_gather(local_sumsq, sumsq_dist, direction="h")
                T.reduce_sum(sumsq_dist, total_sumsq, dim=0, clear=True)

                for i in T.Tiles([block_M]):
                    inv_rms[i] = T.rsqrt(total_sumsq[i] / N + eps)

                # --- Pass 2: scale and write, X and Y double-buffered. ---
                T.copy(X[bx * block_M : (bx + 1) * block_M, 0:block_N], X_db[0, :, :])
                for by in T.serial(nt):
                    if by + 1 < nt:
                        T.copy(X[bx * block_M : (bx + 1) * block_M, (by + 1) * block_N : (by + 2) * block_N], X_db[(by + 1) % 2, :, :])
                    for i, j in T.Tiles([block_M, block_N]):
                        Y_db[by % 2, i, j] = X_db[by % 2, i, j] * inv_rms[i]
                    # Store the current output stage (async DMA); the next
                    # iteration scales into the other stage, so this store is
                    # free to drain in the background.
                    T.copy(Y_db[by % 2, :, :], Y[bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N])

    return main


# ---- examples/sunmmio/elementwise/elementwise_add_dynamic.py
# @ 3cb93397d5ee8059583abfc4a986c1d9e974b369 ::_elementwise_add_prim_func (renamed
# _elementwise_add_dynamic_prim_func here: the name is taken above)
def _elementwise_add_dynamic_prim_func(block_M, block_N, in_dtype, out_dtype):
    M = T.dynamic("m")
    N = T.dynamic("n")

    device_mesh_config = driver.get_sunmmio_device_mesh_config()

    zz_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def elem_add(
        A: T.MeshTensor((M, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        B: T.MeshTensor((M, N), placement, device_mesh_config, in_dtype, layout=zz_layout),
        C: T.MeshTensor((M, N), placement, device_mesh_config, out_dtype, layout=zz_layout),
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


# ---- examples/sunmmio/gemm/dynamic_b16_gemm.py
# @ 49f101be5a682448f266a43cddcb676dd1611128 ::matmul_persistent_dynamic
# (its all_gather reads a T.MeshTensor slice in loops whose bounds are the symbolic
# shard size: compiled for each call's sizes, SizedMeshKernel)
def matmul_persistent_dynamic(K, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32):
    M = T.dynamic("m")
    N = T.dynamic("n")

    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))
    placement = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), placement, dtype, layout=A_layout),
        B: T.MeshTensor((K, N), placement, dtype, layout=B_layout),
        C: T.MeshTensor((M, N), placement, accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape

            A_shared_dist = T.alloc_shared((block_M, block_K * T.mesh_ncols()), dtype)
            B_shared_dist = T.alloc_shared((block_K * T.mesh_nrows(), block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.serial(T.ceildiv(sharded_K, block_K)):
                        T.comm.all_gather(
                            A[bx * block_M : (bx + 1) * block_M, k * block_K : (k + 1) * block_K],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[k * block_K : (k + 1) * block_K, by * block_N : (by + 1) * block_N],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main
