"""Blocked copy on a 4x4 mesh: every core copies its tile of A into B, block by block.

    python examples/blocked_copy.py

A and B are split over both mesh axes ({"x": 0, "y": 1}); each program (one per core)
walks the blocks of its tile with ``mesh_tensor_copy`` and block coordinates.
"""

import numpy as np

import tilelang
import tilelang.language as T
import torch

from meshtensor.tilelang import mesh_tensor_functions
from meshtensor.tilelang.logs import quiet_tilelang

MESH = {"x": 4, "y": 4}


def build(M: int = 64, N: int = 48, block=(8, 4)):
    """The kernel as a PrimFunc (sizes need not divide by 4)."""
    fns = mesh_tensor_functions(MESH)
    annotate, tile = fns["annotate_mesh_tensor_info"], fns["get_tile_shape"]
    mcopy, init = fns["mesh_tensor_copy"], fns["init_mesh_tensor_info"]
    bm, bn = block

    @T.prim_func
    def blocked_copy(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        annotate({A: init({"x": 0, "y": 1}, block), B: init({"x": 0, "y": 1}, block)})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            tm, tn = tile(A)
            S = T.alloc_shared(block, "float32")
            for i, j in T.grid(tm // bm, tn // bn):
                mcopy(A, S, src_coord=(bx * (tm // bm) + i, by * (tn // bn) + j))
                mcopy(S, B, dst_coord=(bx * (tm // bm) + i, by * (tn // bn) + j))

    return blocked_copy


def run(M: int = 64, N: int = 48, block=(8, 4)) -> float:
    """Compile on CPU, run, compare with NumPy; returns the max abs error."""
    with quiet_tilelang():  # no TileLang INFO lines; MESHTENSOR_TILELANG_LOG=INFO shows them
        kernel = tilelang.compile(build(M, N, block), target="c",
                                  compile_flags=["-O3", "-march=native"])
    a = np.random.default_rng(0).standard_normal((M, N), dtype=np.float32)
    b = np.zeros_like(a)
    kernel(torch.from_numpy(a), torch.from_numpy(b))
    return float(np.abs(a - b).max())


if __name__ == "__main__":
    for shape, block in [((64, 48), (8, 4)), ((30, 20), (4, 5))]:
        err = run(*shape, block=block)
        print(f"blocked copy {shape[0]}x{shape[1]} (blocks {block}) on a 4x4 mesh: "
              f"max error {err}")
        assert err == 0
