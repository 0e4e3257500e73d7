"""Kernels of the current SUNMMIO/Tilelang codegen tests
(``testing/python/sunmmio/codegen/``) that declare ``T.MeshTensor`` parameters or use
``T.comm``, verbatim; each names its source file and the commit it was read at. Import
lines only differ: ``target`` (the tests' ``@target("Sunmmio")``, from
``testing.python.sunmmio.common.compile_pipeline``) comes from the corpus harness;
``tm.enable`` provides SUNMMIO's names (``T.MeshTensor``, ``T.placement``, ``T.Tiles``,
the layout makers). The tests' codegen checks (``validate_sunmmio_codegen_with_npuir_opt``
and friends) are not ported: the corpus runs the kernels.
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang import tvm as tvm
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


# ---- testing/python/sunmmio/codegen/test_aligned_row_dma_copy.py
# @ 0e5af169eceed03dc0200e74f0b6169b01383714

@target("Sunmmio")
def aligned_row_vector_copy_kernel(direction="load", rsram_rank=1, cols=64, dtype=T.bfloat16):
    dram_shape = (3, cols)
    rsram_shape = (cols,) if rsram_rank == 1 else (1, cols)
    dram_layout = make_aligned_row_major(dram_shape, dtype, align_bytes=1024)
    rsram_layout = make_aligned_row_major(rsram_shape, dtype, align_bytes=1024)

    if direction == "load":

        @T.prim_func
        def main(
            src: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
        ):
            with T.Kernel():
                dst = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
                T.annotate_layout({dst: rsram_layout})
                T.copy(src[1:2, :], dst)

        return main

    @T.prim_func
    def main(
        dst: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel():
            src = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
            T.annotate_layout({src: rsram_layout})
            T.copy(src, dst[1:2, :])

    return main


@target("Sunmmio")
def aligned_row_matrix_copy_kernel(
    direction="load",
    rows=500,
    cols=500,
    row_start=0,
    copy_rows=None,
    dtype=T.bfloat16,
):
    copy_rows = rows if copy_rows is None else copy_rows
    dram_shape = (5, rows, cols)
    rsram_shape = (copy_rows, cols)
    dram_layout = make_aligned_row_major(dram_shape, dtype, align_bytes=1024)
    rsram_layout = make_aligned_row_major(rsram_shape, dtype, align_bytes=1024)

    if direction == "load":

        @T.prim_func
        def main(
            src: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
        ):
            with T.Kernel():
                dst = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
                T.annotate_layout({dst: rsram_layout})
                T.copy(src[2, row_start : row_start + copy_rows, :], dst)

        return main

    @T.prim_func
    def main(
        dst: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel():
            src = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
            T.annotate_layout({src: rsram_layout})
            T.copy(src, dst[2, row_start : row_start + copy_rows, :])

    return main


@target("Sunmmio")
def aligned_row_effective_rank3_kernel(direction="load", dtype=T.bfloat16):
    shape = (2, 3, 64)
    dram_layout = make_aligned_row_major(shape, dtype, align_bytes=1024)
    rsram_layout = make_aligned_row_major(shape, dtype, align_bytes=1024)

    if direction == "load":

        @T.prim_func
        def main(
            src: T.MeshTensor(shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
        ):
            with T.Kernel():
                dst = T.alloc_shared(shape, dtype, scope="shared.rsram")
                T.annotate_layout({dst: rsram_layout})
                T.copy(src, dst)

        return main

    @T.prim_func
    def main(
        dst: T.MeshTensor(shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel():
            src = T.alloc_shared(shape, dtype, scope="shared.rsram")
            T.annotate_layout({src: rsram_layout})
            T.copy(src, dst)

    return main


@target("Sunmmio")
def aligned_row_alignment_mismatch_kernel(direction="load", dtype=T.bfloat16):
    dram_shape, rsram_shape = (3, 64), (2, 64)
    dram_layout = make_aligned_row_major(dram_shape, dtype, align_bytes=1024)
    rsram_layout = make_aligned_row_major(rsram_shape, dtype, align_bytes=64)

    if direction == "load":

        @T.prim_func
        def main(
            src: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
        ):
            with T.Kernel():
                dst = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
                T.annotate_layout({dst: rsram_layout})
                T.copy(src[0:2, :], dst)

        return main

    @T.prim_func
    def main(
        dst: T.MeshTensor(dram_shape, T.placement.replicated(), dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel():
            src = T.alloc_shared(rsram_shape, dtype, scope="shared.rsram")
            T.annotate_layout({src: rsram_layout})
            T.copy(src, dst[0:2, :])

    return main


# ---- testing/python/sunmmio/codegen/test_alloc_var_opt_validate.py
# @ 04931c88946e12daab467135d05ed5f0973a1ad6

@target("Sunmmio")
def alloc_var_scalar_state_kernel(
    M=32,
    N=32,
    dtype=T.float32,
):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    A_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), shard_policy, dtype, layout=A_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            running = T.alloc_var(dtype, init=1.0)

            for _i in T.serial(4):
                running = running + T.float32(1.0)

            if running > T.float32(3.0):
                running = running * T.float32(2.0)
            else:
                running = running - T.float32(1.0)

            T.evaluate(running)

    return main


@target("Sunmmio")
def alloc_var_all_control_flow_kernel(
    M=32,
    N=32,
    dtype=T.float32,
):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    A_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), shard_policy, dtype, layout=A_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            idx = T.alloc_var(T.int32, init=0)
            running = T.alloc_var(dtype, init=1.0)

            for _i in T.serial(4):
                running = running + T.float32(1.0)

            if running > T.float32(3.0):
                running = running * T.float32(2.0)
                idx = idx + 1
            else:
                running = running - T.float32(1.0)
                idx = idx + 2

            while idx < 4:
                running = running + T.float32(1.0)
                idx = idx + 1

            T.evaluate(running)

    return main


@target("Sunmmio")
def alloc_var_copy_mma_control_flow_kernel(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.bfloat16,
    accum_dtype=T.float32,
):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            idx = T.alloc_var(T.int32, init=0)
            running = T.alloc_var(accum_dtype, init=1.0)

            T.clear(C_shared)
            for _i in T.serial(1):
                T.copy(A[0, 0], A_shared)
                T.copy(B[0, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                running = running + T.float32(1.0)

            if running > T.float32(0.0):
                T.copy(C_shared, C[0, 0])
                running = running * T.float32(2.0)
                idx = idx + 1
            else:
                T.copy(C_shared, C[0, 0])
                running = running - T.float32(1.0)
                idx = idx + 2

            while idx < 2:
                T.copy(A[0, 0], A_shared)
                T.copy(B[0, 0], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                running = running + T.float32(1.0)
                idx = idx + 1

            T.copy(C_shared, C[0, 0])
            T.evaluate(running)

    return main


@target("Sunmmio")
def alloc_var_tiles_kernel(
    M=128,
    N=128,
    block_M=32,
    block_N=32,
    dtype=T.float32,
):
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    A_layout = make_zz_layout((M, N))
    B_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((M, N), shard_policy, dtype, layout=B_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            bias = T.alloc_var(dtype, init=1.0)

            T.copy(A[0, 0], A_shared)
            for i, j in T.Tiles(A_shared, parallel=True):
                A_shared[i, j] = A_shared[i, j] + bias
            T.copy(A_shared, B[0, 0])

    return main


# ---- testing/python/sunmmio/codegen/test_allocate_copy_expr_opt_validate.py
# @ 25478d65c294999489ec184bbab56326f125b169

@target("Sunmmio")
def basic_allocate_copy_mma_kernel(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.bfloat16,
    accum_dtype=T.float32,
):
    nrows, ncols = driver.get_sunmmio_device_mesh_config()
    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            sharded_N = B.local_shape[1]
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for by in T.serial(T.ceildiv(sharded_M, block_M)):
                for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.serial(T.ceildiv(sharded_K, block_K)):
                        T.comm.all_gather(
                            A[
                                by * block_M : (by + 1) * block_M,
                                k * block_K : (k + 1) * block_K,
                            ],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[
                                k * block_K : (k + 1) * block_K,
                                bx * block_N : (bx + 1) * block_N,
                            ],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


@target("Sunmmio")
def allocate_dma_copy_kernel_plus(
    M=512,
    N=512,
    K=512,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.bfloat16,
):
    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, K))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, dtype, layout=A_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = C.local_shape
            grid_m = T.ceildiv(sharded_M, block_M)
            grid_k = T.ceildiv(sharded_K, block_K)
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                # Index exprs: add/mul/rem/min/max on DMA copy paths.
                ko = (bx + bx) % grid_k
                m_tile = (bx % grid_m) * block_M
                n_tile = bx * block_N
                m_offset = m_tile + T.min(T.min(bx, 1), T.max(sharded_M - m_tile - block_M, 0))
                n_offset = n_tile + T.min(T.max(bx - 1, 0), T.max(sharded_N - n_tile - block_N, 0))

                T.copy(A[m_offset, ko * block_K], A_shared)
                T.copy(A[ko * block_K, n_offset], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
                # need all_gather or reduce to cover real-world scenarios

    return main


@target("Sunmmio")
def pipelined_allocate_copy_mma_kernel(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.bfloat16,
    accum_dtype=T.float32,
):
    nrows, ncols = driver.get_sunmmio_device_mesh_config()
    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M, sharded_K = A.local_shape
            sharded_N = B.local_shape[1]
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for by in T.serial(T.ceildiv(sharded_M, block_M)):
                for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=3):
                        T.comm.all_gather(
                            A[
                                by * block_M : (by + 1) * block_M,
                                k * block_K : (k + 1) * block_K,
                            ],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[
                                k * block_K : (k + 1) * block_K,
                                bx * block_N : (bx + 1) * block_N,
                            ],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


@target("Sunmmio")
def offset_region_copy_kernel_plus(
    M=2048,
    N=2048,
    block_M=64,
    block_N=64,
    tile_M=32,
    tile_N=32,
    dtype=T.bfloat16,
):
    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, N))
    B_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((M, N), shard_policy, dtype, layout=B_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            sharded_M = A.local_shape[0]
            sharded_N = A.local_shape[1]
            A_rsram = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            for by in T.serial(T.ceildiv(sharded_M, block_M)):
                for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                    # Integer exprs: add/sub/mul/div/rem for copy offsets.
                    sum_idx = bx + by
                    diff_idx = bx - by
                    scaled_idx = sum_idx * 3 + 1
                    div_idx = scaled_idx // 2
                    mod_idx = div_idx % 7

                    # Bool exprs: cmp/and/or/not feeding selects.
                    lt_cmp = bx < by + 2
                    le_cmp = by <= bx + 1
                    ne_cmp = bx != by
                    eq_cmp = bx == by
                    gt_cmp = bx > by - 1
                    ge_cmp = by >= bx - 1
                    not_lt_le = T.Not(lt_cmp and le_cmp)
                    row_cond = (lt_cmp and le_cmp) or (ne_cmp and not_lt_le)
                    col_cond = gt_cmp or ge_cmp

                    # Region exprs: select/min/max in tile-view indices.
                    row_delta = T.Select(
                        row_cond,
                        T.Select(eq_cmp, T.min(mod_idx, 7), T.min(mod_idx + 1, 7)),
                        T.max(diff_idx, 0),
                    )
                    col_delta = T.Select(
                        col_cond,
                        T.max((sum_idx * 5) % 11, 0),
                        T.min(by + 3, 7),
                    )
                    src_row = by * block_M + 8 + row_delta
                    src_col = bx * block_N + 8 + col_delta
                    rsram_row = 8 + T.min(row_delta, 7)
                    rsram_col = 8 + T.min(col_delta, 7)

                    T.copy(
                        A[src_row : src_row + tile_M, src_col : src_col + tile_N],
                        A_rsram[rsram_row : rsram_row + tile_M, rsram_col : rsram_col + tile_N],
                    )
                    T.copy(
                        A_rsram[rsram_row : rsram_row + tile_M, rsram_col : rsram_col + tile_N],
                        B[src_row : src_row + tile_M, src_col : src_col + tile_N],
                    )

    return main


# ---- testing/python/sunmmio/codegen/test_base_dynamic_opt_validate.py
# @ 1c3c809a27013827e11d6c50182bd514cd1bcd43

def dynamic_allocate_copy_mma_kernel(
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
    accum_dtype=T.float32,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    M_sharded = T.dynamic("m")
    N_sharded = T.dynamic("n")
    K_sharded = T.dynamic("k")
    M = M_sharded * nrows
    N = N_sharded * ncols
    K = K_sharded * ncols
    # K = K_sharded
    # A_layout = make_zz_layout((M, K))
    # B_layout = make_zz_layout((K, N))
    # C_layout = make_zz_layout((M, N))

    shard_policy = T.MeshShardingPolicy(y=0, x=1)

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, device_mesh_config, dtype),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, accum_dtype),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            sharded_M, sharded_K = A.shape
            sharded_N = B.shape[1]
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for by in T.serial(T.ceildiv(sharded_M, block_M)):
                for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for ko in T.serial(T.ceildiv(sharded_K, block_K)):
                        T.comm.all_gather(
                            A[
                                by * block_M : (by + 1) * block_M,
                                ko * block_K : (ko + 1) * block_K,
                            ],
                            A_shared_dist,
                            direction="horizontal",
                            axis=-1,
                        )
                        T.comm.all_gather(
                            B[
                                ko * block_K : (ko + 1) * block_K,
                                bx * block_N : (bx + 1) * block_N,
                            ],
                            B_shared_dist,
                            direction="vertical",
                            axis=0,
                        )
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


def dynamic_zz_allocate_copy_mma_kernel(
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
):
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    shard_policy = T.MeshShardingPolicy()

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, device_mesh_config, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            sharded_M = A.shape[0]
            sharded_N = B.shape[1]
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for by in T.serial(T.ceildiv(sharded_M, block_M)):
                for bx in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(A[by * block_M, 0], A_shared)
                    T.copy(B[0, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared)
                    # need all_gather or reduce to cover real-world scenarios
                    # T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


# ---- testing/python/sunmmio/codegen/test_comm_sync_kernels_opt_validate.py
# @ e2f6b2dea588912cfaa605daccac2ec203456530 (its kernels now launch T.Kernel(): every
# core; sync_simple_copy_kernel and sync_mma_kernel use neither T.comm nor T.MeshTensor)

@target("Sunmmio")
def comm_broadcast_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float16"):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            for bx in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[0, bx * block_N], A_shared)
                T.comm.broadcast(A_shared, B_shared, (0, 0), direction="h")
                T.copy(B_shared, B[0, bx * block_N])

    return main


@target("Sunmmio")
def comm_put_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype)):
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            B_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            for bx in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[0, bx * block_N], A_shared)
                T.comm.put(A_shared, B_shared, (1, 2), (2, 3))

    return main


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
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")
            if axis == 0:
                R_shared = T.alloc_shared((16 * block_M, block_N), dtype, scope="shared.rsram")
            elif axis == -1:
                extent = 4 * block_N if direction in ("h", "horizontal") else 16 * block_N
                R_shared = T.alloc_shared((block_M, extent), dtype, scope="shared.rsram")
            else:
                R_shared = T.alloc_shared((16, block_M, block_N), dtype, scope="shared.rsram")

            for bx in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[0, bx * block_N], A_shared)
                if axis is None:
                    T.comm.all_gather(A_shared, R_shared, direction=direction)
                else:
                    T.comm.all_gather(A_shared, R_shared, direction=direction, axis=axis)

    return main


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
        with T.Kernel():
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            D_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[0, 0], A_shared)
                T.copy(B[0, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)

                if bx == 0:
                    T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")

    return main


@target("Sunmmio")
def sync_loop_broadcast_kernel(M=128, N=128, block_M=32, block_N=32, dtype="float32"):
    @T.prim_func
    def main(C: T.Tensor((M, N), dtype)):
        with T.Kernel():
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            D_shared = T.alloc_shared((block_M, block_N), dtype)

            for bx in T.serial(T.ceildiv(N, block_N)):
                T.copy(C[0, bx * block_N], D_shared)
                for _i in T.serial(2):
                    T.comm.broadcast(C_shared, D_shared, (0, 0), direction="h")
                    T.comm.broadcast(D_shared, C_shared, (0, 0), direction="h")

    return main


# ---- testing/python/sunmmio/codegen/test_copy_region_validate.py
# @ 22223a0361aebb6c77dde90b60177fe94770c6cb

DTYPE = "bfloat16"


@target("Sunmmio")
def zz_major_sub_block_copy_kernel():
    shape = (128, 128)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared(shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: global_layout})
            T.copy(A[0:8, 0:32], A_shared[0:8, 0:32])

    return main


@target("Sunmmio")
def zz_non_major_sub_block_copy_kernel():
    shape = (128, 128)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared(shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: global_layout})
            T.copy(A[0:32, 0:8], A_shared[0:32, 0:8])

    return main


@target("Sunmmio")
def zz_both_dims_sub_block_copy_kernel():
    shape = (128, 128)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared(shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: global_layout})
            T.copy(A[0:8, 0:8], A_shared[0:8, 0:8])

    return main


@target("Sunmmio")
def zz_major_sub_block_multi_block_copy_kernel():
    shape = (128, 128)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared(shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({A_shared: global_layout})
            T.copy(A[0:8, 0:64], A_shared[0:8, 0:64])

    return main


@target("Sunmmio")
def zz_fully_coalesced_full_block_copy_kernel():
    shape = (64, 32)
    region_shape = (32, 32)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))
    shared_layout = make_row_major(region_shape)

    @T.prim_func
    def main(
        B: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            B_shared = T.alloc_shared(region_shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({B_shared: shared_layout})
            for bk in T.serial(2):
                T.copy(B[bk * 32, 0], B_shared)

    return main


@target("Sunmmio")
def zz_fully_coalesced_non_major_sub_block_copy_kernel():
    shape = (64, 32)
    placement = T.placement.replicated()
    global_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        B: T.MeshTensor(shape, placement, DTYPE, layout=global_layout),  # type: ignore
    ):
        with T.Kernel():
            B_shared = T.alloc_shared(shape, DTYPE, scope="shared.rsram")
            T.annotate_layout({B_shared: global_layout})
            T.copy(B[0:32, 0:8], B_shared[0:32, 0:8])

    return main


@target("Sunmmio")
def let_bound_mesh_local_shape_copy_kernel():
    global_shape = (256, 256)
    shard_policy = T.MeshShardingPolicy(y=0, x=1)
    tensor_layout = make_zz_layout(global_shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(global_shape, shard_policy, DTYPE, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            local_m, local_n = A.local_shape
            A_shared = T.alloc_shared((local_m, local_n), DTYPE)
            T.copy(A, A_shared)

    return main


@target("Sunmmio")
def singleton_dimension_broadcast_kernel():
    src_shape = (1, 32, 32)
    dst_shape = (1, 32, 32)
    src_layout = make_zz_layout(src_shape, axes=[1, 2], block_shape=(32, 32))
    dst_layout = make_zz_layout(dst_shape, axes=[1, 2], block_shape=(32, 32))

    @T.prim_func
    def main():
        with T.Kernel():
            src_shared = T.alloc_shared(src_shape, DTYPE, scope="shared.rsram")
            dst_shared = T.alloc_shared(dst_shape, DTYPE, scope="shared.rsram")
            T.annotate_layout(
                {
                    src_shared: src_layout,
                    dst_shared: dst_layout,
                }
            )
            T.comm.broadcast(src_shared, dst_shared, (0, 0), direction="h")

    return main


@target("Sunmmio")
def summa_output_copy_kernel(
    M=128,
    N=128,
    K=128,
    block_M=32,
    block_N=32,
    dtype="float16",
    accum_dtype="float32",
):
    shard_policy = T.placement.full_shard(0, 1)
    A_shape = (M, K)
    B_shape = (K, N)
    C_shape = (M, N)
    A_layout = make_zz_layout(A_shape, axes=[0, 1], block_shape=(32, 32))
    B_layout = make_zz_layout(B_shape, axes=[0, 1], block_shape=(32, 32))
    C_layout = make_zz_layout(C_shape, axes=[0, 1], block_shape=(32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor(A_shape, shard_policy, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor(B_shape, shard_policy, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor(C_shape, shard_policy, accum_dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel():
            sharded_M, _ = A.local_shape
            _, sharded_N = B.local_shape
            C_local = T.alloc_shared((block_M, block_N), accum_dtype)

            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.copy(C_local, C[bx * block_M, by * block_N])

    return main


# ---- testing/python/sunmmio/codegen/test_fill_opt_validate.py
# @ 14d16e110bd5ad5caf1afa844857c8a6847d40e3

@target("Sunmmio")
def fill_tiled_test(
    b=64,
    m=512,
    n=1024,
    block_b=16,
    block_m=256,
    block_n=128,
    dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    tensor_shape = (b, m, n)
    tensor_layout = make_zz_layout(tensor_shape, [1, 2], (32, 32))
    grid_b = T.ceildiv(b, block_b)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout)):  # type: ignore
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype)

            for bz in T.serial(grid_b):
                for by in T.serial(grid_m):
                    for bx in T.serial(grid_n):
                        T.fill(A_shared, T.bfloat16(1.0))
                        T.fill(A_shared[0:block_b, 0 : block_m // 2, 0:block_n], T.bfloat16(2.0))
                        T.fill(A_shared[0:block_b, block_m // 2 : block_m, 0:block_n], T.bfloat16(3.0))
                        T.clear(A_shared)
                        for bb in T.serial(block_b):
                            T.copy(
                                A_shared[bb, :, :],
                                A[
                                    bz * block_b + bb,
                                    by * block_m : (by + 1) * block_m,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                            )

    return main


@target("Sunmmio")
def fill_tiled_2d_test(
    m=512,
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
    def main(A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout)):  # type: ignore
        with T.Kernel():
            A_shared = T.alloc_shared((block_m, block_n), dtype)

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.fill(A_shared, T.bfloat16(1.0))
                    T.fill(A_shared[0 : block_m // 2, 0:block_n], T.bfloat16(2.0))
                    T.fill(A_shared[block_m // 2 : block_m, 0:block_n], T.bfloat16(3.0))
                    T.clear(A_shared)
                    T.copy(
                        A_shared,
                        A[
                            by * block_m : (by + 1) * block_m,
                            bx * block_n : (bx + 1) * block_n,
                        ],
                    )

    return main


# ---- testing/python/sunmmio/codegen/test_layout_transform_opt_validate.py
# @ 1c3c809a27013827e11d6c50182bd514cd1bcd43
from tilelang.language.mesh_tensor import MeshReplicationType


@target("Sunmmio")
def layout_transform_roundtrip_kernel(
    m=128,
    n=128,
    dtype=T.float16,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols

    shard_policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    dram_layout = make_zz_layout((m, n), axes=[0, 1], block_shape=(32, 32))
    rsram_layout = make_row_major((m, n))

    @T.prim_func
    def main(
        A: T.MeshTensor((m, n), shard_policy, device_mesh_config, dtype, layout=dram_layout),  # type: ignore
        B: T.MeshTensor((m, n), shard_policy, device_mesh_config, dtype, layout=dram_layout),  # type: ignore
    ):
        with T.Kernel(ncores, threads=128) as _cid:
            A_rsram = T.alloc_shared((m, n), dtype, scope="shared.rsram")
            T.annotate_layout({A_rsram: rsram_layout})

            T.copy(A, A_rsram)
            T.copy(A_rsram, B)

    return main


# ---- testing/python/sunmmio/codegen/test_mask_index_dtype_opt_validate.py
# @ 36f76a2a12695dd105885cac7cda7d1c9e18cb55

@target("Sunmmio")
def predicated_store_mask_dtype_kernel(dtype, extent=512, valid_n=33):
    shard_policy = T.MeshShardingPolicy()
    tensor_shape = (extent,)
    tensor_layout = make_aligned_row_major(tensor_shape, dtype, align_bytes=1024)

    @T.prim_func
    def main(out: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout)):  # type: ignore
        with T.Kernel():
            out_shared = T.alloc_shared(tensor_shape, dtype)
            T.annotate_layout({out_shared: make_aligned_row_major(tensor_shape, dtype, align_bytes=1024)})

            T.clear(out_shared)
            for i in T.Tiles([valid_n], parallel=True):
                out_shared[i] = T.Cast(dtype, 7)
            T.copy(out_shared, out[0:extent])

    return main


# ---- testing/python/sunmmio/codegen/test_pipeline_ping_pong_opt_validate.py
# @ 8ccd90a9c4dcc52c056399bf5aaad6d6b3d7795d

@target("Sunmmio")
def pipelined_gemm_kernel(
    M=512,
    N=512,
    K=256,
    block_M=128,
    block_N=128,
    block_K=32,
    num_stages=4,
    dtype=T.bfloat16,
    accum_dtype=T.float32,
):
    a_policy = T.MeshShardingPolicy(y=0, replicate=MeshReplicationType.ROW)
    b_policy = T.MeshShardingPolicy(x=1, replicate=MeshReplicationType.COLUMN)
    c_policy = T.MeshShardingPolicy(y=0, x=1)
    A_layout = make_zz_layout((M, K), [0, 1], (32, 32))
    B_layout = make_zz_layout((K, N), [0, 1], (32, 32))
    C_layout = make_zz_layout((M, N), [0, 1], (32, 32))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), a_policy, (4, 4), dtype, layout=A_layout),
        B: T.MeshTensor((K, N), b_policy, (4, 4), dtype, layout=B_layout),
        C: T.MeshTensor((M, N), c_policy, (4, 4), accum_dtype, layout=C_layout),
    ):
        with T.Kernel() as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)

            T.clear(C_shared)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[0:block_M, k * block_K : (k + 1) * block_K], A_shared)
                T.copy(B[k * block_K : (k + 1) * block_K, 0:block_N], B_shared)
                T.gemm(A_shared, B_shared, C_shared)
            T.copy(C_shared, C[0:block_M, 0:block_N])

    return main


# ---- testing/python/sunmmio/codegen/test_reduce_opt_validate.py
# @ 1ceec50859bfde8a4e45a87f51169cec5930d3a7

def _dram_input_layout(shape):
    if len(shape) >= 2:
        return make_zz_layout(shape, [len(shape) - 2, len(shape) - 1], (32, 32))
    return make_row_major(shape)


def _dram_reduce_output_layout(shape):
    return make_row_major(shape)


def _valid_extent(tile_index, block, total):
    start = tile_index * block
    remaining = total - start
    return T.min(block, remaining)


@target("Sunmmio")
def reduce_kernel_builder(shape, reduce_axis, dtype="bfloat16", clear=True):
    shape = tuple(shape)
    out_shape = list(shape[:reduce_axis]) + list(shape[reduce_axis + 1 :])
    if not out_shape:
        out_shape = [1]
    out_shape = tuple(out_shape)

    shard_policy = T.placement.replicated()
    input_layout = _dram_input_layout(shape)
    output_layout = _dram_reduce_output_layout(out_shape)

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, shard_policy, dtype, layout=input_layout),  # type: ignore
        Out: T.MeshTensor(out_shape, shard_policy, dtype, layout=output_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared(shape, dtype, scope="shared.rsram")
            Out_shared = T.alloc_shared(out_shape, dtype, scope="shared.rsram")

            if len(shape) == 3:
                for bb in T.serial(shape[0]):
                    T.copy(A[bb, :, :], A_shared[bb, :, :])
            else:
                T.copy(A, A_shared)
            T.reduce_sum(A_shared, Out_shared, dim=reduce_axis, clear=clear)
            T.copy(Out_shared, Out)

    return main


@target("Sunmmio")
def reduce_tail_region_kernel(
    m=1000,
    n=2000,
    block_m=256,
    block_n=96,
    dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    input_shape = (block_m, block_n)
    output_shape = (block_m,)
    input_layout = make_zz_layout(input_shape, [0, 1], (32, 32))
    output_layout = make_row_major(output_shape)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(input_shape, shard_policy, dtype, layout=input_layout),  # type: ignore
        Out: T.MeshTensor(output_shape, shard_policy, dtype, layout=output_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_m, block_n), dtype, scope="shared.rsram")
            Out_shared = T.alloc_shared((block_m,), dtype, scope="shared.rsram")

            T.copy(A, A_shared)
            T.fill(Out_shared, -T.infinity(dtype))

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.reduce_max(
                        A_shared[
                            0 : _valid_extent(by, block_m, m),
                            0 : _valid_extent(bx, block_n, n),
                        ],
                        Out_shared[0 : _valid_extent(by, block_m, m)],
                        dim=1,
                        clear=False,
                    )

            T.copy(Out_shared, Out)

    return main


# ---- testing/python/sunmmio/codegen/test_tile_pick_scalar_access.py
# @ 388c07401a0da3f1528a1e4e21ac5c4c7e449a67

@target("Sunmmio")
def pick_1d_side_data_kernel(
    n=64,
    out_n=32,
    dtype=T.int32,
):
    shard_policy = T.MeshShardingPolicy()
    values_shape = (n,)
    out_shape = (out_n,)
    values_layout = make_aligned_row_major(values_shape, dtype, align_bytes=1024)
    out_layout = make_aligned_row_major(out_shape, dtype, align_bytes=1024)

    @T.prim_func
    def main(
        values: T.MeshTensor(values_shape, shard_policy, dtype, layout=values_layout),  # type: ignore
        out: T.MeshTensor(out_shape, shard_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel() as cid:
            local_n = values.local_shape[0]
            values_shared = T.alloc_shared((n,), dtype, scope="shared.rsram")
            out_shared = T.alloc_shared((out_n,), dtype)
            values_shared_layout = make_aligned_row_major((n,), dtype, align_bytes=1024)
            out_shared_layout = make_aligned_row_major((out_n,), dtype, align_bytes=1024)
            T.annotate_layout({values_shared: values_shared_layout, out_shared: out_shared_layout})

            T.copy(values[0:local_n], values_shared[0:local_n])

            idx = (cid + 7) % local_n
            picked = T.alloc_var(dtype)

            picked = values_shared[idx]

            for i in T.Tiles([out_n], parallel=True):
                out_shared[i] = picked + T.Cast(dtype, i)

            T.copy(out_shared, out[0:out_n])

    return main


@target("Sunmmio")
def pick_2d_side_data_kernel(
    rows=17,
    cols=19,
    out_n=32,
    dtype=T.int32,
):
    shard_policy = T.MeshShardingPolicy()
    table_shape = (rows, cols)
    out_shape = (out_n,)
    table_layout = make_aligned_row_major(table_shape, dtype, align_bytes=1024)
    out_layout = make_aligned_row_major(out_shape, dtype, align_bytes=1024)

    @T.prim_func
    def main(
        table: T.MeshTensor(table_shape, shard_policy, dtype, layout=table_layout),  # type: ignore
        out: T.MeshTensor(out_shape, shard_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            local_rows, local_cols = table.local_shape
            table_row_shared = T.alloc_shared((cols,), dtype, scope="shared.rsram")
            out_shared = T.alloc_shared((out_n,), dtype)
            row_layout = make_aligned_row_major((cols,), dtype, align_bytes=1024)
            out_shared_layout = make_aligned_row_major((out_n,), dtype, align_bytes=1024)
            T.annotate_layout({table_row_shared: row_layout, out_shared: out_shared_layout})
            picked = T.alloc_var(dtype)

            for row in T.serial(local_rows):
                T.copy(table[row, 0:local_cols], table_row_shared[0:local_cols])
                for col in T.serial(local_cols):
                    picked = table_row_shared[col]
                    for i in T.Tiles([out_n], parallel=True):
                        out_shared[i] = picked + T.Cast(dtype, row + col + i)

            T.copy(out_shared, out[0:out_n])

    return main


@target("Sunmmio")
def pick_3d_side_data_kernel(
    heads=2,
    q_blocks=500,
    k_blocks=500,
    out_tiles=4,
    out_n=32,
    dtype=T.int32,
):
    shard_policy = T.MeshShardingPolicy()
    mask_shape = (heads, q_blocks, k_blocks)
    out_shape = (out_tiles, out_n)
    mask_layout = make_aligned_row_major(mask_shape, dtype, align_bytes=1024)
    out_layout = make_aligned_row_major(out_shape, dtype, align_bytes=1024)

    @T.prim_func
    def main(
        block_sparse_mask: T.MeshTensor(mask_shape, shard_policy, dtype, layout=mask_layout),  # type: ignore
        out: T.MeshTensor(out_shape, shard_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel() as _cid:
            local_heads, local_q_blocks, local_k_blocks = block_sparse_mask.local_shape
            mask_row_shared = T.alloc_shared((k_blocks,), dtype, scope="shared.rsram")
            out_shared = T.alloc_shared((out_n,), dtype)
            mask_row_layout = make_aligned_row_major((k_blocks,), dtype, align_bytes=1024)
            out_shared_layout = make_aligned_row_major((out_n,), dtype, align_bytes=1024)
            T.annotate_layout({mask_row_shared: mask_row_layout, out_shared: out_shared_layout})
            mask_value = T.alloc_var(dtype, init=0)

            for t in T.serial(out_tiles):
                mask_value = T.Cast(dtype, 0)
                for h in T.serial(local_heads):
                    for q in T.serial(local_q_blocks):
                        T.copy(block_sparse_mask[h, q, :], mask_row_shared)
                        for k in T.serial(local_k_blocks):
                            mask_value += mask_row_shared[k]

                for i in T.Tiles([out_n], parallel=True):
                    out_shared[i] = mask_value + T.Cast(dtype, i)

                T.copy(out_shared, out[t, 0:out_n])

    return main


@target("Sunmmio")
def pick_1d_rsram_side_data_kernel(
    n=256,
    dtype=T.int32,
):
    @T.prim_func
    def main():
        with T.Kernel() as cid:
            side_data = T.alloc_shared((n,), dtype, scope="shared.rsram")
            first_tile_value = T.alloc_var(dtype)
            second_tile_value = T.alloc_var(dtype)

            for i in T.Tiles([n], parallel=True):
                side_data[i] = T.Cast(dtype, i)

            # Keep the access dynamic while targeting known 4096-bit register
            # tiles for int32: 0..127 and 128..255.
            first_tile_idx = cid % 128
            second_tile_idx = 128 + (cid % 128)

            first_tile_value = side_data[first_tile_idx]
            second_tile_value = side_data[second_tile_idx]

            T.evaluate(first_tile_value + second_tile_value)

    return main
