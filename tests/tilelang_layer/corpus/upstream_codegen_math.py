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
