"""The GEMM of Tilelang-Mesh's examples (``examples/gemm/sunmmio_example_gemm.py``),
written as the fork writes it, in its default dtypes: ``bfloat16`` operands, a
``float32`` accumulator and output.

A, B and C are ``T.MeshTensor`` parameters with ``MeshShardingPolicy(y=0, x=1)``: core
``(r, c)`` holds part ``(r, c)`` of each. It launches one program per core,
walks the tiles of its C shard, and per k step copies its own A and B tiles, gathers
A's tiles along its row (``all_gather(..., "horizontal", axis=-1)``) and B's down its
column (``"vertical", axis=0``), and multiplies them into a core-private accumulator
(``T.gemm`` into a ``T.alloc_shared`` buffer) before copying the tile to C. On a
square mesh the gathered K ranges of A and B match (both split K the same way), so C =
A @ B for any sizes (cells of a slot past its core's part are zero).

>>> from meshtensor.tilelang import tilelang_mesh as tm
>>> _ = tm.enable(mesh=(2, 2))
>>> f = matmul(64, 64, 64, 16, 16, 8)
>>> [str(p.name) for p in f.params]
['A_handle', 'B_handle', 'C_handle']
"""
# No `from __future__ import annotations`: TileLang evaluates kernel annotations.

import tilelang.language as T

from ..language.tilelang_mesh import enabled_mesh


def matmul(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int,
           num_stages: int = 2, dtype: str = "bfloat16", accum_dtype: str = "float32",
           pipelined: bool = True):
    """The fork's GEMM kernel ``C = A @ B`` (A: MxK, B: KxN) for the mesh of
    ``tm.enable`` (square meshes only, as in the fork: A's K parts follow the columns,
    B's the rows). ``pipelined=False`` writes the k loop as ``T.serial``."""
    nrows, ncols = enabled_mesh().shape
    if nrows != ncols:
        raise ValueError(f"tilelang_mesh_gemm.matmul: the fork's GEMM needs a square mesh "
                         f"(A's K dim is split over the {ncols} columns, B's over the "
                         f"{nrows} rows), got {nrows}x{ncols}")
    device_mesh_config = (nrows, ncols)
    ncores = nrows * ncols

    @T.prim_func
    def main(
        A: T.MeshTensor((M, K), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype),
        B: T.MeshTensor((K, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config, dtype),
        C: T.MeshTensor((M, N), T.MeshShardingPolicy(y=0, x=1), device_mesh_config,
                        accum_dtype),
    ):
        with T.Kernel(ncores) as (_cid):
            # the fork reads A.shape; SUNMMIO's TileLang now names the slot local_shape
            sharded_M, sharded_K = A.local_shape
            _, sharded_N = B.local_shape
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            A_shared_dist = T.alloc_shared((block_M, block_K * ncols), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            B_shared_dist = T.alloc_shared((block_K * nrows, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            for bx in T.serial(T.ceildiv(sharded_M, block_M)):
                for by in T.serial(T.ceildiv(sharded_N, block_N)):
                    T.clear(C_shared)
                    for k in (T.Pipelined(T.ceildiv(sharded_K, block_K), num_stages=num_stages)
                              if pipelined else T.serial(T.ceildiv(sharded_K, block_K))):
                        T.copy(A[bx * block_M, k * block_K], A_shared)
                        T.comm.all_gather(A_shared, A_shared_dist, direction="horizontal",
                                          axis=-1)
                        T.copy(B[k * block_K, by * block_N], B_shared)
                        T.comm.all_gather(B_shared, B_shared_dist, direction="vertical", axis=0)
                        T.gemm(A_shared_dist, B_shared_dist, C_shared)
                    T.copy(C_shared, C[bx * block_M, by * block_N])

    return main
