"""Kernels of the current SUNMMIO/Tilelang codegen tests of ``T.Tiles`` loops
(``testing/python/sunmmio/codegen/test_tiles_*``) whose files declare ``T.MeshTensor``
parameters, and ``test_reduce_opt_validate.py``'s ``reduce_tiled_test``, verbatim; each names its source file and the commit it was read at. Import
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
from tilelang.layout import make_aligned_row_major, make_row_major, make_zz_layout

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/codegen/test_tiles_opt_validate.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4

@target("Sunmmio")
def dot_mul_tiled_parallel_3d(
    batch=64,
    m=512,
    n=1024,
    block_b=2,
    block_m=256,
    block_n=128,
    dtype="bfloat16",
    accum_dtype="bfloat16",
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
        C: T.MeshTensor(tensor_shape, shard_policy, accum_dtype, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_b, block_m, block_n), accum_dtype)

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
                            A_shared[b, i, j] = A_shared[b, i, j] * T.float32(2.0)
                            B_shared[b, i, j] = A_shared[b, i, j] * B_shared[b, i, j]
                            C_shared[b, i, j] = T.exp(A_shared[b, i, j]) + T.exp(B_shared[b, i, j])

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
def dot_mul_tiled_parallel_2d(
    m=512,
    n=1024,
    block_m=256,
    block_n=512,
    dtype="bfloat16",
    accum_dtype="bfloat16",
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
        C: T.MeshTensor(tensor_shape, shard_policy, accum_dtype, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_m, block_n), accum_dtype)

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
                        A_shared[i, j] = A_shared[i, j] * T.float32(2.0)
                        B_shared[i, j] = A_shared[i, j] * B_shared[i, j]
                        C_shared[i, j] = T.exp(A_shared[i, j]) + T.exp(B_shared[i, j])

                    T.copy(
                        C_shared,
                        C[
                            by * block_m : (by + 1) * block_m,
                            bx * block_n : (bx + 1) * block_n,
                        ],
                    )

    return main


@target("Sunmmio")
def tiles_broadcast(
    batch=64,
    m=512,
    n=1024,
    block_b=2,
    block_m=512,
    block_n=128,
    dtype="bfloat16",
    accum_dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    tensor_shape = (batch, m, n)
    tensor_layout = make_zz_layout(tensor_shape, [1, 2], (32, 32))
    vector_shape = (m,)
    vector_layout = make_aligned_row_major(vector_shape, dtype, align_bytes=1024)
    vector_shared_layout = make_aligned_row_major((block_m,), dtype, align_bytes=1024)
    grid_b = T.ceildiv(batch, block_b)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        B: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        C: T.MeshTensor(tensor_shape, shard_policy, accum_dtype, layout=tensor_layout),  # type: ignore
        D: T.MeshTensor(vector_shape, shard_policy, dtype, layout=vector_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_b, block_m, block_n), accum_dtype)
            D_shared = T.alloc_shared((block_m,), dtype)
            T.annotate_layout({D_shared: vector_shared_layout})

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
                        T.copy(D[by * block_m : (by + 1) * block_m], D_shared)

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            A_shared[b, i, j] = A_shared[b, i, j] + D_shared[i]
                            A_shared[b, i, j] = A_shared[b, i, j] * T.float32(2.0)
                            C_shared[b, i, j] = A_shared[b, i, j] * B_shared[b, i, j]

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            A_shared[b, i, j] = A_shared[b, i, j] + D_shared[j]
                            A_shared[b, i, j] = A_shared[b, i, j] * T.float32(2.0)
                            C_shared[b, i, j] = A_shared[b, i, j] * B_shared[b, i, j]

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
def tiles_broadcast_copy(
    batch=64,
    m=512,
    n=1024,
    block_b=2,
    block_m=512,
    block_n=128,
    dtype="bfloat16",
    accum_dtype="bfloat16",
):
    shard_policy = T.placement.replicated()
    tensor_shape = (batch, m, n)
    tensor_layout = make_zz_layout(tensor_shape, [1, 2], (32, 32))
    vector_shape = (m,)
    vector_layout = make_aligned_row_major(vector_shape, dtype, align_bytes=1024)
    vector_shared_layout = make_aligned_row_major((block_m,), dtype, align_bytes=1024)
    grid_b = T.ceildiv(batch, block_b)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        B: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        C: T.MeshTensor(tensor_shape, shard_policy, accum_dtype, layout=tensor_layout),  # type: ignore
        D: T.MeshTensor(vector_shape, shard_policy, dtype, layout=vector_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            B_shared = T.alloc_shared((block_b, block_m, block_n), dtype)
            C_shared = T.alloc_shared((block_b, block_m, block_n), accum_dtype)
            D_shared = T.alloc_shared((block_m,), dtype)
            T.annotate_layout({D_shared: vector_shared_layout})

            for bz in T.serial(grid_b):
                for by in T.serial(grid_m):
                    for bx in T.serial(grid_n):
                        T.clear(C_shared)
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
                        T.copy(D[by * block_m : (by + 1) * block_m], D_shared)

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            C_shared[b, i, j] = D_shared[i]
                            C_shared[b, i, j] = C_shared[b, i, j] * T.float32(2.0)

                        for b, i, j in T.Tiles(A_shared, parallel=True):
                            C_shared[b, i, j] = T.if_then_else(
                                D_shared[j] >= 0,
                                T.float32(0.0),
                                -T.infinity(accum_dtype),
                            )
                            C_shared[b, i, j] = C_shared[b, i, j] * T.float32(2.0)

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
def tiles_1d(m=512, block_m=512, dtype="bfloat16", accum_dtype="bfloat16"):
    shard_policy = T.placement.replicated()
    tensor_shape = (m,)
    tensor_layout = make_aligned_row_major(tensor_shape, dtype, align_bytes=1024)
    shared_layout = make_aligned_row_major((block_m,), dtype, align_bytes=1024)
    accum_shared_layout = make_aligned_row_major((block_m,), accum_dtype, align_bytes=1024)
    grid_m = T.ceildiv(m, block_m)

    @T.prim_func
    def main(
        A: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        B: T.MeshTensor(tensor_shape, shard_policy, dtype, layout=tensor_layout),  # type: ignore
        C: T.MeshTensor(tensor_shape, shard_policy, accum_dtype, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_m,), dtype)
            B_shared = T.alloc_shared((block_m,), dtype)
            C_shared = T.alloc_shared((block_m,), accum_dtype)
            T.annotate_layout({A_shared: shared_layout, B_shared: shared_layout, C_shared: accum_shared_layout})

            for by in T.serial(grid_m):
                T.clear(C_shared)
                T.copy(A[by * block_m : (by + 1) * block_m], A_shared)
                T.copy(B[by * block_m : (by + 1) * block_m], B_shared)
                for i in T.Tiles(A_shared, parallel=True):
                    C_shared[i] = A_shared[i] * B_shared[i]
                T.copy(C_shared, C[by * block_m : (by + 1) * block_m])

    return main


@target("Sunmmio")
def tiles_dynamic_extent_zz_store():
    compute_block = 128
    tile_block = 32
    output_shape = (compute_block, tile_block)
    side_shape = (256,)
    shard_policy = T.placement.replicated()
    output_layout = make_zz_layout(output_shape, [0, 1], (tile_block, tile_block))
    side_layout = make_aligned_row_major(side_shape, T.int32, align_bytes=1024)

    @T.prim_func
    def main(
        Output: T.MeshTensor(output_shape, shard_policy, T.bfloat16, layout=output_layout),  # type: ignore
        q_lengths: T.MeshTensor(side_shape, shard_policy, T.int32, layout=side_layout),  # type: ignore
    ):
        with T.Kernel():
            q_lengths_shared = T.alloc_shared(side_shape, T.int32, scope="shared.rsram")
            source_tile = T.alloc_shared((tile_block, tile_block), T.bfloat16, scope="shared.rsram")
            output_staging = T.alloc_shared(output_shape, T.bfloat16, scope="shared.rsram")
            T.annotate_layout({q_lengths_shared: side_layout, output_staging: output_layout})
            q_len = T.alloc_var(T.int32, init=0)

            T.copy(q_lengths, q_lengths_shared)
            q_len = T.max(T.min(q_lengths_shared[0], compute_block), 0)
            T.fill(source_tile, 1)
            T.fill(output_staging, 0)

            for q_chunk in T.serial(T.ceildiv(q_len, tile_block)):
                for row, col in T.Tiles([tile_block, tile_block], parallel=True):
                    output_staging[q_chunk * tile_block + row, col] = source_tile[row, col]

            T.copy(output_staging, Output)

    return main


@target("Sunmmio")
def tiles_rank2_first_tile_partial(rows=4, cols=4, dtype="float32"):
    output_shape = (32, 32)
    output_layout = make_zz_layout(output_shape, [0, 1], (32, 32))
    shard_policy = T.placement.replicated()

    @T.prim_func
    def main(
        output: T.MeshTensor(output_shape, shard_policy, dtype, layout=output_layout),  # type: ignore
    ):
        with T.Kernel():
            source = T.alloc_shared((rows, cols), dtype)
            matrix = T.alloc_shared((rows, cols), dtype)
            output_shared = T.alloc_shared(output_shape, dtype)

            T.fill(source, 1.0)
            T.fill(output_shared, 0.0)
            for i, j in T.Tiles(matrix, parallel=True):
                matrix[i, j] = source[i, j]
            for i, j in T.Tiles(matrix, parallel=True):
                output_shared[i, j] = matrix[i, j]
            T.copy(output_shared, output)

    return main


# ---- testing/python/sunmmio/codegen/test_tiles_fallback_opt_validate.py
# @ 75d8f2ee3b563cced0214eb90fb2dda2551943c4

def _matrix_output_spec(h, w, dtype):
    shape = (16, h, w)
    return shape, T.placement.mesh_as_line(0), make_zz_layout(shape, [1, 2], (32, 32))


@target("Sunmmio")
def serialized_rank1_zz_slices_kernel(h=4, dtype=T.float32):
    output_rows = 8
    padded_width = 32
    out_shape, token_policy, out_layout = _matrix_output_spec(output_rows, padded_width, dtype)
    cm_layout = make_zz_layout((h, h), [0, 1], (32, 32))
    comb_layout = make_zz_layout((output_rows, padded_width), [0, 1], (32, 32))

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel():
            cm = T.alloc_shared((h, h), dtype)
            comb = T.alloc_shared((output_rows, padded_width), dtype)
            T.annotate_layout({cm: cm_layout, comb: comb_layout})

            T.fill(comb, 0)
            for i in T.serial(h):
                for j in T.serial(h):
                    for k in T.Tiles([h], parallel=True):
                        comb[i, j * h + k] = cm[j, k]

            T.copy(comb, out[0, 0:output_rows, 0:padded_width])

    return main


@target("Sunmmio")
def temp_stage_subaligned_then_direct_kernel(h=4, w=32, dtype=T.float32):
    output_rows = 8
    out_shape, token_policy, out_layout = _matrix_output_spec(output_rows, w, dtype)
    matrix_layout = make_zz_layout((output_rows, w), [0, 1], (32, 32))
    vector_layout = make_aligned_row_major((w,), dtype, align_bytes=64)

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel():
            cm = T.alloc_shared((output_rows, w), dtype)
            m_shared = T.alloc_shared((w,), dtype)
            temp = T.alloc_shared((w,), dtype)
            T.annotate_layout({cm: matrix_layout, m_shared: vector_layout, temp: vector_layout})

            T.fill(cm, 0)
            T.fill(m_shared, 1)
            for i in T.serial(h):
                T.fill(temp, 0)
                for j in T.Tiles([h], parallel=True):
                    temp[j] = m_shared[i * h + j]
                for j in T.Tiles([w], parallel=True):
                    cm[i, j] = temp[j]

            T.copy(cm, out[0, 0:output_rows, 0:w])

    return main


@target("Sunmmio")
def packed_1d_to_2d_rank1_fallback_kernel(h=4, base=8, vector_size=128, matrix_size=32, dtype=T.float32):
    assert base + h * h <= vector_size
    out_shape, token_policy, out_layout = _matrix_output_spec(matrix_size, matrix_size, dtype)
    vector_layout = make_aligned_row_major((vector_size,), dtype, align_bytes=64)
    matrix_layout = make_zz_layout((matrix_size, matrix_size), [0, 1], (32, 32))

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((vector_size,), dtype)
            B_shared = T.alloc_shared((matrix_size, matrix_size), dtype)
            T.annotate_layout({A_shared: vector_layout, B_shared: matrix_layout})

            T.fill(A_shared, 1)
            T.fill(B_shared, 0)
            for i, j in T.Tiles([h, h], parallel=True):
                B_shared[i, j] = A_shared[base + i * h + j]

            T.copy(B_shared, out[0, 0:matrix_size, 0:matrix_size])

    return main


@target("Sunmmio")
def packed_2d_to_1d_rank1_fallback_kernel(h=4, base=8, vector_size=128, matrix_size=32, dtype=T.float32):
    assert base + h * h <= vector_size
    out_shape, token_policy, out_layout = _matrix_output_spec(matrix_size, matrix_size, dtype)
    vector_layout = make_aligned_row_major((vector_size,), dtype, align_bytes=64)
    matrix_layout = make_zz_layout((matrix_size, matrix_size), [0, 1], (32, 32))

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((vector_size,), dtype)
            B_shared = T.alloc_shared((matrix_size, matrix_size), dtype)
            T.annotate_layout({A_shared: vector_layout, B_shared: matrix_layout})

            T.fill(A_shared, 0)
            T.fill(B_shared, 1)
            for i, j in T.Tiles([h, h], parallel=True):
                A_shared[base + i * h + j] = B_shared[i, j]

            for j in T.Tiles([matrix_size], parallel=True):
                B_shared[matrix_size - 1, j] = A_shared[j]
            T.copy(B_shared, out[0, 0:matrix_size, 0:matrix_size])

    return main


@target("Sunmmio")
def mixed_rank_unit_side_load_kernel(rows=64, cols=128, dtype=T.float32):
    matrix_layout = make_aligned_row_major((rows, cols), dtype, align_bytes=64)
    vector_layout = make_aligned_row_major((rows,), dtype, align_bytes=64)

    @T.prim_func
    def main():
        with T.Kernel():
            A_shared = T.alloc_shared((rows, cols), dtype)
            B_shared = T.alloc_shared((rows,), dtype)
            T.annotate_layout({A_shared: matrix_layout, B_shared: vector_layout})

            T.fill(A_shared, 1)
            T.fill(B_shared, 2)
            for i, j in T.Tiles([rows, cols], parallel=True):
                A_shared[i, j] = A_shared[i, j] + B_shared[i]

    return main


@target("Sunmmio")
def non_unit_coefficient_scalar_fallback_kernel(domain=4, shape=16, dtype=T.float32):
    layout = make_aligned_row_major((shape, shape), dtype, align_bytes=64)

    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((shape, shape), dtype)
            dst = T.alloc_shared((shape, shape), dtype)
            T.annotate_layout({src: layout, dst: layout})

            T.fill(src, 1)
            T.fill(dst, 0)
            for i, j in T.Tiles([domain, domain], parallel=True):
                dst[i, j] = src[i, 2 * j]

    return main


@target("Sunmmio")
def multi_axis_index_scalar_fallback_kernel(domain=4, shape=16, dtype=T.float32):
    layout = make_aligned_row_major((shape, shape), dtype, align_bytes=64)

    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((shape, shape), dtype)
            dst = T.alloc_shared((shape, shape), dtype)
            T.annotate_layout({src: layout, dst: layout})

            T.fill(src, 1)
            T.fill(dst, 0)
            for i, j in T.Tiles([domain, domain], parallel=True):
                dst[i, j] = src[i + j, i + j]

    return main


@target("Sunmmio")
def transposed_access_scalar_fallback_kernel(domain=4, shape=16, dtype=T.float32):
    layout = make_aligned_row_major((shape, shape), dtype, align_bytes=64)

    @T.prim_func
    def main():
        with T.Kernel():
            src = T.alloc_shared((shape, shape), dtype)
            dst = T.alloc_shared((shape, shape), dtype)
            T.annotate_layout({src: layout, dst: layout})

            T.fill(src, 1)
            T.fill(dst, 0)
            for i, j in T.Tiles([domain, domain], parallel=True):
                dst[i, j] = src[j, i]

    return main


# ---- testing/python/sunmmio/codegen/test_tiles_dynamic_domain_opt_validate.py
# @ 45037a5854b29f95628087e9e468c09a40ac6285

@target("Sunmmio")
def dynamic_rank2_domain_kernel(h=4, matrix_size=32, dtype=T.float32):
    out_shape = (16, matrix_size, matrix_size)
    token_policy = T.MeshShardingPolicy(cross_mesh_dim=0)
    out_layout = make_zz_layout(out_shape, [1, 2], (32, 32))
    lengths_shape = (128,)
    lengths_layout = make_aligned_row_major(lengths_shape, T.int32, align_bytes=1024)
    matrix_layout = make_zz_layout((matrix_size, matrix_size), [0, 1], (32, 32))

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
        lengths: T.MeshTensor(lengths_shape, T.MeshShardingPolicy(), T.int32, layout=lengths_layout),  # type: ignore
    ):
        with T.Kernel():
            src = T.alloc_shared((matrix_size, matrix_size), dtype)
            dst = T.alloc_shared((matrix_size, matrix_size), dtype)
            lengths_shared = T.alloc_shared(lengths_shape, T.int32)
            valid = T.alloc_var(T.int32, init=0)
            T.annotate_layout(
                {
                    src: matrix_layout,
                    dst: matrix_layout,
                    lengths_shared: lengths_layout,
                }
            )

            T.copy(lengths, lengths_shared)
            valid = T.max(T.min(lengths_shared[0], matrix_size), 0)
            T.fill(src, 1)
            T.fill(dst, 0)
            for i, j in T.Tiles([h, valid], parallel=True):
                dst[i, j] = src[i, j]

            T.copy(dst, out[0, 0:matrix_size, 0:matrix_size])

    return main


# ---- testing/python/sunmmio/codegen/test_tiles_rank1_tail_mask_opt_validate.py
# @ 3969fa44004c944a45e597e2ea04b2c28321d2b0

@target("Sunmmio")
def dynamic_rank1_tail_mask_kernel(h=4, base=8, vector_size=128, matrix_size=32, dtype=T.float32):
    out_shape = (16, matrix_size, matrix_size)
    token_policy = T.MeshShardingPolicy(cross_mesh_dim=0)
    out_layout = make_zz_layout(out_shape, [1, 2], (32, 32))
    lengths_shape = (128,)
    lengths_layout = make_aligned_row_major(lengths_shape, T.int32, align_bytes=1024)
    vector_layout = make_aligned_row_major((vector_size,), dtype, align_bytes=64)
    matrix_layout = make_zz_layout((matrix_size, matrix_size), [0, 1], (32, 32))

    @T.prim_func
    def main(
        out: T.MeshTensor(out_shape, token_policy, dtype, layout=out_layout),  # type: ignore
        lengths: T.MeshTensor(lengths_shape, T.MeshShardingPolicy(), T.int32, layout=lengths_layout),  # type: ignore
    ):
        with T.Kernel():
            packed = T.alloc_shared((vector_size,), dtype)
            matrix = T.alloc_shared((matrix_size, matrix_size), dtype)
            lengths_shared = T.alloc_shared(lengths_shape, T.int32)
            valid = T.alloc_var(T.int32, init=0)
            T.annotate_layout(
                {
                    packed: vector_layout,
                    matrix: matrix_layout,
                    lengths_shared: lengths_layout,
                }
            )

            T.copy(lengths, lengths_shared)
            valid = T.max(T.min(lengths_shared[0], h), 0)
            T.fill(packed, 1)
            T.fill(matrix, 0)
            for i, j in T.Tiles([h, valid], parallel=True):
                matrix[i, j] = packed[base + i * h + j]

            T.copy(matrix, out[0, 0:matrix_size, 0:matrix_size])

    return main


# ---- testing/python/sunmmio/codegen/test_tiles_shape_predicate_projection_opt_validate.py
# @ 11b567a9c93d709cb2317749b56b51ea5eb42ec5

@target("Sunmmio")
def tiles_shape_rank1_side_buffer_predicate_kernel(
    num_tokens=16,
    rows=64,
    cols=64,
    valid_m0=50,
    valid_n0=50,
    valid_m1=60,
    valid_n1=60,
    accum_dtype=T.float32,
):
    assert valid_m0 <= rows
    assert valid_m1 <= rows
    assert valid_n0 <= cols
    assert valid_n1 <= cols
    assert rows % 32 == 0
    assert cols % 32 == 0
    assert num_tokens % 16 == 0

    token_policy = T.placement.mesh_as_line(0)
    out_shape = (num_tokens, rows, cols)
    out_layout = make_zz_layout(out_shape, [1, 2], (32, 32))
    a_layout = make_zz_layout((rows, cols), [0, 1], (32, 32))
    b_layout = make_aligned_row_major((rows,), accum_dtype, align_bytes=64)

    @T.prim_func
    def main(
        Out: T.MeshTensor(out_shape, token_policy, accum_dtype, layout=out_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((rows, cols), accum_dtype)
            B_shared = T.alloc_shared((rows,), accum_dtype)

            T.annotate_layout({A_shared: a_layout, B_shared: b_layout})

            T.fill(A_shared, T.float32(4.0))
            T.fill(B_shared, T.float32(2.0))

            for i, j in T.Tiles([valid_m0, valid_n0]):
                A_shared[i, j] = A_shared[i, j] / B_shared[i]

            for i, j in T.Tiles([valid_m1, valid_n1]):
                A_shared[i, j] = A_shared[i, j] / B_shared[j]

            T.copy(A_shared, Out[0, 0:rows, 0:cols])

    return main


# ---- testing/python/sunmmio/codegen/test_reduce_opt_validate.py (reduce_tiled_test; its
# other kernels are in upstream_codegen.py)
# @ 1ceec50859bfde8a4e45a87f51169cec5930d3a7

def _dram_reduce_output_layout(shape):
    return make_row_major(shape)


@target("Sunmmio")
def reduce_tiled_test(
    b=64,
    m=512,
    n=1024,
    block_b=32,
    block_m=256,
    block_n=128,
    reduce_axis=1,
    dtype="bfloat16",
    clear=False,
):
    out_shape_full = (b, m) if reduce_axis == 2 else (b, n) if reduce_axis == 1 else (m, n)
    out_shape_block = (block_b, block_m) if reduce_axis == 2 else (block_b, block_n) if reduce_axis == 1 else (block_m, block_n)
    input_shape = (b, m, n)

    shard_policy = T.placement.replicated()
    input_layout = make_zz_layout(input_shape, [1, 2], (32, 32))
    output_layout = _dram_reduce_output_layout(out_shape_full)
    grid_b = T.ceildiv(b, block_b)
    grid_m = T.ceildiv(m, block_m)
    grid_n = T.ceildiv(n, block_n)

    @T.prim_func
    def main(
        A: T.MeshTensor(input_shape, shard_policy, dtype, layout=input_layout),  # type: ignore
        Out: T.MeshTensor(out_shape_full, shard_policy, dtype, layout=output_layout),  # type: ignore
    ):
        with T.Kernel():
            A_shared = T.alloc_shared((block_b, block_m, block_n), dtype, scope="shared.rsram")
            Out_shared = T.alloc_shared(out_shape_block, dtype, scope="shared.rsram")

            if reduce_axis == 2:
                for bz in T.serial(grid_b):
                    for by in T.serial(grid_m):
                        if clear:
                            T.fill(Out_shared, 0)
                        else:
                            T.copy(
                                Out[
                                    bz * block_b : (bz + 1) * block_b,
                                    by * block_m : (by + 1) * block_m,
                                ],
                                Out_shared,
                            )
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
                            T.reduce_abssum(A_shared, Out_shared, dim=reduce_axis, clear=False)
                        T.copy(
                            Out_shared,
                            Out[
                                bz * block_b : (bz + 1) * block_b,
                                by * block_m : (by + 1) * block_m,
                            ],
                        )
            elif reduce_axis == 1:
                for bz in T.serial(grid_b):
                    for bx in T.serial(grid_n):
                        if clear:
                            T.fill(Out_shared, 0)
                        else:
                            T.copy(
                                Out[
                                    bz * block_b : (bz + 1) * block_b,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                                Out_shared,
                            )
                        for by in T.serial(grid_m):
                            for bb in T.serial(block_b):
                                T.copy(
                                    A[
                                        bz * block_b + bb,
                                        by * block_m : (by + 1) * block_m,
                                        bx * block_n : (bx + 1) * block_n,
                                    ],
                                    A_shared[bb, :, :],
                                )
                            T.reduce_abssum(A_shared, Out_shared, dim=reduce_axis, clear=False)
                        T.copy(
                            Out_shared,
                            Out[
                                bz * block_b : (bz + 1) * block_b,
                                bx * block_n : (bx + 1) * block_n,
                            ],
                        )
            else:
                for by in T.serial(grid_m):
                    for bx in T.serial(grid_n):
                        if clear:
                            T.fill(Out_shared, 0)
                        else:
                            T.copy(
                                Out[
                                    by * block_m : (by + 1) * block_m,
                                    bx * block_n : (bx + 1) * block_n,
                                ],
                                Out_shared,
                            )
                        for bz in T.serial(grid_b):
                            for bb in T.serial(block_b):
                                T.copy(
                                    A[
                                        bz * block_b + bb,
                                        by * block_m : (by + 1) * block_m,
                                        bx * block_n : (bx + 1) * block_n,
                                    ],
                                    A_shared[bb, :, :],
                                )
                            T.reduce_abssum(A_shared, Out_shared, dim=reduce_axis, clear=False)
                        T.copy(
                            Out_shared,
                            Out[
                                by * block_m : (by + 1) * block_m,
                                bx * block_n : (bx + 1) * block_n,
                            ],
                        )

    return main
