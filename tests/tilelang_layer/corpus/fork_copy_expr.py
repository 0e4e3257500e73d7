"""The older fork's allocate/copy expression codegen kernels, verbatim.

Source: wanghz18/Tilelang-Mesh, ``testing/python/target/test_sunmmio_codegen_allocate_copy_expr_opt_validate.py`` at commit 52fed911f7a4ae50d979e0d584066452c9826aaf (branch dev/codegen, the fork's newest). Each kernel factory below is
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


# testing/python/target/test_sunmmio_codegen_allocate_copy_expr_opt_validate.py::basic_allocate_copy_mma_kernel (line 28)
@target("Sunmmio")
def basic_allocate_copy_mma_kernel(
    M=32,
    N=32,
    K=32,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols
    grid_m = T.ceildiv(M, block_M)
    grid_n = T.ceildiv(N, block_N)

    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, K))
    B_layout = make_zz_layout((K, N))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((K, N), shard_policy, device_mesh_config, dtype, layout=B_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
                    T.copy(A[by * block_M, 0], A_shared)
                    T.copy(B[0, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_shared, transpose_B=True)
                    T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


# testing/python/target/test_sunmmio_codegen_allocate_copy_expr_opt_validate.py::allocate_dma_copy_kernel_plus (line 70)
@target("Sunmmio")
def allocate_dma_copy_kernel_plus(
    M=512,
    N=512,
    K=256,
    block_M=32,
    block_N=32,
    block_K=32,
    dtype=T.float16,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols
    grid_n = T.ceildiv(K, block_K)

    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, K))
    C_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        C: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=C_layout),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for bx in T.serial(grid_n):
                # Index exprs: add/mul/rem/min/max on DMA copy paths.
                ko = (bx + bx) % grid_n
                m_tile = bx * block_M
                n_tile = bx * block_N
                m_offset = m_tile + T.min(bx, 1)
                n_offset = n_tile + T.max(bx - 1, 0)

                T.copy(A[m_offset, ko * block_K], A_shared)
                T.copy(A[ko * block_K, n_offset], B_shared)
                T.gemm(A_shared, B_shared, C_shared, transpose_B=True)
                T.copy(C_shared, C[m_offset, n_offset])

    return main


# testing/python/target/test_sunmmio_codegen_allocate_copy_expr_opt_validate.py::offset_region_copy_kernel_plus (line 115)
@target("Sunmmio")
def offset_region_copy_kernel_plus(
    M=512,
    N=512,
    block_M=64,
    block_N=64,
    tile_M=32,
    tile_N=32,
    dtype=T.float16,
):
    device_mesh_config = driver.get_sunmmio_device_mesh_config()
    nrows, ncols = device_mesh_config
    ncores = nrows * ncols
    grid_m = T.ceildiv(M, block_M)
    grid_n = T.ceildiv(N, block_N)

    shard_policy = T.MeshShardingPolicy(x=1, y=0)
    A_layout = make_zz_layout((M, N))
    B_layout = make_zz_layout((M, N))

    @T.prim_func
    def main(
        A: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=A_layout),  # type: ignore
        B: T.MeshTensor((M, N), shard_policy, device_mesh_config, dtype, layout=B_layout),  # type: ignore
    ):
        with T.Kernel(ncores) as _cid:
            A_rsram = T.alloc_shared((block_M, block_N), dtype, scope="shared.rsram")

            for by in T.serial(grid_m):
                for bx in T.serial(grid_n):
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
