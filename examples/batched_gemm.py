"""Batched GEMM on a 4x4 mesh with the mesh-tensor helpers: C[b] = A[b] @ B[b].

    python examples/batched_gemm.py

The batch is split over mesh axis x; the rows of A and C over mesh axis y; B is
replicated along y ({"x": 0}, y missing). Each program (one per core) multiplies its
batches' row panels: no data crosses cores.
"""

import numpy as np

import tilelang
import tilelang.language as T
import torch

from meshtensor.tilelang import mesh_tensor_functions
from meshtensor.tilelang.logs import quiet_tilelang

MESH = {"x": 4, "y": 4}


def build(batch: int = 8, M: int = 64, N: int = 32, K: int = 48):
    """The kernel as a PrimFunc; the batch and M need not divide by 4."""
    fns = mesh_tensor_functions(MESH)
    annotate, tile = fns["annotate_mesh_tensor_info"], fns["get_tile_shape"]
    mcopy, init = fns["mesh_tensor_copy"], fns["init_mesh_tensor_info"]
    tb = -(-batch // 4)
    tm = -(-M // 4)

    @T.prim_func
    def batched_gemm(A: T.Tensor((batch, M, K), "float32"), B: T.Tensor((batch, K, N), "float32"),
                     C: T.Tensor((batch, M, N), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (1, tm, K)),
                  B: init({"x": 0, "y": None}, (1, K, N)),
                  C: init({"x": 0, "y": 1}, (1, tm, N))})
        with T.Kernel(4, 4, threads=1) as (bx, by):
            As = T.alloc_shared((tm, K), "float32")
            Bs = T.alloc_shared((K, N), "float32", scope="shared")
            Cl = T.alloc_local((tm, N), "float32")
            for b in T.serial(tile(A)[0]):
                T.clear(Cl)
                mcopy(A, As, src_coord=(bx * tb + b, by, 0))
                mcopy(B, Bs, src_coord=(bx * tb + b, 0, 0))
                T.gemm(As, Bs, Cl)
                mcopy(Cl, C, dst_coord=(bx * tb + b, by, 0))

    return batched_gemm


def run(batch: int = 8, M: int = 64, N: int = 32, K: int = 48) -> float:
    """Compile on CPU, run, compare with NumPy; returns the max abs error."""
    with quiet_tilelang():  # no TileLang INFO lines; MESHTENSOR_TILELANG_LOG=INFO shows them
        kernel = tilelang.compile(build(batch, M, N, K), target="c",
                                  compile_flags=["-O3", "-march=native"])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, M, K), dtype=np.float32)
    b = rng.standard_normal((batch, K, N), dtype=np.float32)
    c = np.zeros((batch, M, N), dtype=np.float32)
    kernel(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c))
    return float(np.abs(c - a @ b).max())


if __name__ == "__main__":
    for dims in [(8, 64, 32, 48), (6, 30, 20, 12)]:
        err = run(*dims)
        print(f"batched GEMM batch={dims[0]} {dims[1]}x{dims[2]}x{dims[3]} on a 4x4 mesh: "
              f"max error {err:.2e}")
        assert err < 1e-3
