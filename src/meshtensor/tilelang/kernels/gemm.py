"""GEMM kernels for an n x n mesh of cores (default 4x4), one program per core.

Each kernel is written with :func:`mesh_tensor_functions` and launched with
``T.Kernel(n, n)``: program ``(bx, by)`` is core ``(x=bx, y=by)`` and computes C's tile
``(bx, by)``.

- ``local``: A row-sharded (``{"x": 0}``, replicated along y), B column-sharded
  (``{"y": 1}``), C fully sharded: every operand a core reads is its own.
- ``summa``: A, B, C fully sharded (``{"x": 0, "y": 1}``); at step ``k`` core
  ``(i, j)`` reads A's block ``(i, k)`` and B's block ``(k, j)``: it streams its row
  panel of A and its column panel of B.
- ``cannon``: the same layout with Cannon's skewed order ``k = (i + j + s) mod n``,
  so at every step each core serves exactly one reader of A and one of B.

Those three are *global-view* kernels: a core reads other cores' shards straight from
global memory. The ``*_comm`` kernels are distributed-memory programs: every core loads
only its own shards of A and B and writes only its own tile of C; all other data moves
through comm ops (:func:`mesh_comm`), compiled with :func:`compile_mesh_kernel`:

- ``summa_comm``: A, B, C fully sharded; at step ``k`` a row broadcast of A's tile from
  column ``k`` and a column broadcast of B's tile from row ``k``, then a local product.
- ``cannon_comm``: the same layout; an initial skew (a static ``permute``: row ``i`` of A
  moves left by ``i``, column ``j`` of B up by ``j``), then ``n`` local products with a
  rotation by one along rows (A) and columns (B) between them (``shift`` with
  ``rotate=True``), from one pair of buffers into another and back (an in-place
  rotation would go through a staging copy).
- ``ksplit_comm``: K split over the mesh's columns: core ``(i, j)`` holds A's block
  ``(i, j)`` and B's row panel ``j`` (replicated down the mesh column), computes a
  partial ``C`` row panel ``i`` (B's panel copied ``KSPLIT_CHUNK`` columns at a time
  into a buffer of short rows) and a ``reduce_scatter`` along the row sums the partials
  and hands core ``(i, j)`` its own tile of C.

The inner product is a register-blocked micro-kernel (6x16 accumulators, its k loop
unrolled 8 times, all unrolled by TVM) that gcc vectorises on the C backend; it walks
one 16-column panel of B at a time past the rows of A, and B's rows are padded so that
panel does not alias in the cache. Tiles are padded to multiples of it, and copies of
edge blocks are guarded, so sizes need not divide by ``n``.
"""
# No `from __future__ import annotations`: TileLang evaluates kernel annotations.

import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import tilelang
import tilelang.language as T

from ..engine import CPU_FLAGS, compile_mesh_kernel
from ..language.comm import mesh_comm
from ..language.mesh_tensor import mesh_tensor_functions

ALGORITHMS = ("local", "summa", "cannon")  # global view
COMM_ALGORITHMS = ("summa_comm", "cannon_comm", "ksplit_comm")  # distributed memory
RB, CB = 6, 16  # micro-kernel: RB rows x CB columns of C held in registers
KU = 8  # its k loop unrolled KU times (1: 58, 4: 85, 8: 88 GFLOP/s on a 256^3 block here)
# B's rows are LD_PAD elements longer than the micro-kernel reads: the k loop walks down
# a column panel, and a row length of a multiple of 1 KiB maps its lines to few cache sets
LD_PAD = CB
KSPLIT_CHUNK = 256  # columns of B the K-split GEMM's micro-kernel takes at a time


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@T.macro
def _block_mma(As, Bs, Cl, acc, rows, cols, depth, c_col=0):
    """Cl[:rows, c_col:c_col + cols] += As[:rows, :depth] @ Bs[:depth, :cols]
    (rows % RB == cols % CB == 0)."""
    # j0 outer: one CB-wide panel of Bs (depth x 64 bytes) stays in L1 while the RB-row
    # strips of As stream past it
    for j0 in T.serial(cols // CB):
        for i0 in T.serial(rows // RB):
            for ii in T.unroll(RB, explicit=True):
                for jj in T.unroll(CB, explicit=True):
                    acc[ii, jj] = Cl[i0 * RB + ii, c_col + j0 * CB + jj]
            for k0 in T.serial(depth // KU):
                for ku in T.unroll(KU, explicit=True):
                    for ii in T.unroll(RB, explicit=True):
                        for jj in T.unroll(CB, explicit=True):
                            acc[ii, jj] += (As[i0 * RB + ii, k0 * KU + ku]
                                            * Bs[k0 * KU + ku, j0 * CB + jj])
            for k in T.serial(depth % KU):  # the last depth % KU steps
                for ii in T.unroll(RB, explicit=True):
                    for jj in T.unroll(CB, explicit=True):
                        acc[ii, jj] += (As[i0 * RB + ii, depth - depth % KU + k]
                                        * Bs[depth - depth % KU + k, j0 * CB + jj])
            for ii in T.unroll(RB, explicit=True):
                for jj in T.unroll(CB, explicit=True):
                    Cl[i0 * RB + ii, c_col + j0 * CB + jj] = acc[ii, jj]


def layouts(algorithm: str) -> dict[str, dict[str, Any]]:
    """The seed-format shardings of A, B and C for an algorithm."""
    if algorithm == "local":
        return {"A": {"x": 0, "y": None}, "B": {"x": None, "y": 1}, "C": {"x": 0, "y": 1}}
    if algorithm in ("summa", "cannon", "summa_comm", "cannon_comm"):
        full = {"x": 0, "y": 1}
        return {"A": dict(full), "B": dict(full), "C": dict(full)}
    if algorithm == "ksplit_comm":
        return {"A": {"x": 0, "y": 1}, "B": {"x": None, "y": 0}, "C": {"x": 0, "y": 1}}
    raise ValueError(f"unknown GEMM algorithm {algorithm!r}; choose one of "
                     f"{list(ALGORITHMS + COMM_ALGORITHMS)}")


def build_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4, dtype: str = "float32"):
    """The PrimFunc computing ``C = A @ B`` (A: MxK, B: KxN) on an ``mesh x mesh`` mesh."""
    lay = layouts(algorithm)
    for name, v in (("M", M), ("N", N), ("K", K), ("mesh", mesh)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"build_gemm: {name} must be a positive int, got {v!r}")
    if algorithm in COMM_ALGORITHMS:
        return _COMM_BUILDERS[algorithm](M, N, K, mesh, dtype)
    n = mesh
    fns = mesh_tensor_functions({"x": n, "y": n})
    annotate, mcopy, init = (fns["annotate_mesh_tensor_info"], fns["mesh_tensor_copy"],
                             fns["init_mesh_tensor_info"])
    tm, tn, tk = _ceil(M, n), _ceil(N, n), _ceil(K, n)
    tmp, tnp = _ceil(tm, RB) * RB, _ceil(tn, CB) * CB  # padded to the micro-kernel
    skew = 1 if algorithm == "cannon" else 0

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        annotate({A: init(lay["A"], (tm, tk)), B: init(lay["B"], (tk, tn)),
                  C: init(lay["C"], (tm, tn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            As = T.alloc_local((tmp, tk), dtype)
            Bs = T.alloc_local((tk, tnp + LD_PAD), dtype)
            Cl = T.alloc_local((tmp, tnp), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            T.clear(As)
            T.clear(Bs)
            T.clear(Cl)
            for s in T.serial(n):
                kb = (bx * skew + by * skew + s) % n
                mcopy(A, As[0:tm, 0:tk], src_coord=(bx, kb))
                mcopy(B, Bs[0:tk, 0:tn], src_coord=(kb, by))
                _block_mma(As, Bs, Cl, acc, tmp, tnp, tk)
            mcopy(Cl[0:tm, 0:tn], C, dst_coord=(bx, by))

    return gemm


def _comm_setup(algorithm: str, M: int, N: int, K: int, mesh: int):
    n = mesh
    fns = mesh_tensor_functions({"x": n, "y": n})
    return (n, fns["annotate_mesh_tensor_info"], fns["mesh_tensor_copy"],
            fns["init_mesh_tensor_info"], mesh_comm({"x": n, "y": n}), layouts(algorithm))


def _build_2d_comm(algorithm: str, M: int, N: int, K: int, mesh: int, dtype: str):
    """``summa_comm`` and ``cannon_comm``: A, B, C fully sharded; each core loads its own
    tiles, receives the others' through comm ops and stores its own tile of C."""
    n, annotate, mcopy, init, mc, lay = _comm_setup(algorithm, M, N, K, mesh)
    tm, tn, tk = _ceil(M, n), _ceil(N, n), _ceil(K, n)
    tmp, tnp = _ceil(tm, RB) * RB, _ceil(tn, CB) * CB
    cannon = algorithm == "cannon_comm"
    # Cannon's skew: core (i, j) gets A's block (i, i + j) and B's block (i + j, j), mod n
    skew_a = [((i, (i + j) % n), (i, j)) for i in range(n) for j in range(n)]
    skew_b = [(((i + j) % n, j), (i, j)) for i in range(n) for j in range(n)]

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        annotate({A: init(lay["A"], (tm, tk)), B: init(lay["B"], (tk, tn)),
                  C: init(lay["C"], (tm, tn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            Ao = T.alloc_local((tm, tk), dtype)  # own shards
            Bo = T.alloc_local((tk, tn), dtype)
            Ar = T.alloc_local((tmp, tk), dtype)  # this step's tiles (zero padded)
            Br = T.alloc_local((tk, tnp + LD_PAD), dtype)
            Cl = T.alloc_local((tmp, tnp), dtype)
            A2 = T.alloc_local((tmp, tk), dtype)
            B2 = T.alloc_local((tk, tnp + LD_PAD), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            # zero only what no copy overwrites: own tiles past the tensor's edge and the
            # micro-kernel's padding (the comm ops fill [0:tm, 0:tk] and [0:tk, 0:tn])
            if (bx + 1) * tm > M or (by + 1) * tk > K:
                T.clear(Ao)
            if (bx + 1) * tk > K or (by + 1) * tn > N:
                T.clear(Bo)
            for i, j in T.grid(tmp - tm, tk):
                Ar[tm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(tk, tnp - tn):
                Br[i, tn + j] = T.cast(0, dtype)
            for i, j in T.grid(tmp - tm, tk):
                A2[tm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(tk, tnp - tn):
                B2[i, tn + j] = T.cast(0, dtype)
            T.clear(Cl)
            if bx * tm < M and by * tk < K:  # shards past the tensor (tiny sizes) are empty
                mcopy(A, Ao, src_coord=(bx, by))
            if bx * tk < K and by * tn < N:
                mcopy(B, Bo, src_coord=(bx, by))
            if cannon:
                mc.permute(Ao, Ar[0:tm, 0:tk], skew_a)
                mc.permute(Bo, Br[0:tk, 0:tn], skew_b)
            for k in T.serial(n):
                if cannon:
                    if k % 2 == 1:
                        mc.shift(Ar[0:tm, 0:tk], A2[0:tm, 0:tk], ["y"], "y", -1, rotate=True)
                        mc.shift(Br[0:tk, 0:tn], B2[0:tk, 0:tn], ["x"], "x", -1, rotate=True)
                        _block_mma(A2, B2, Cl, acc, tmp, tnp, tk)
                    else:
                        if k > 0:
                            mc.shift(A2[0:tm, 0:tk], Ar[0:tm, 0:tk], ["y"], "y", -1, rotate=True)
                            mc.shift(B2[0:tk, 0:tn], Br[0:tk, 0:tn], ["x"], "x", -1, rotate=True)
                        _block_mma(Ar, Br, Cl, acc, tmp, tnp, tk)
                else:
                    # SUMMA: row broadcast of A's tile from column k, column one of B's
                    mc.broadcast(Ao, Ar[0:tm, 0:tk], ["y"], root=[k])
                    mc.broadcast(Bo, Br[0:tk, 0:tn], ["x"], root=[k])
                    _block_mma(Ar, Br, Cl, acc, tmp, tnp, tk)
            if bx * tm < M and by * tn < N:
                mcopy(Cl[0:tm, 0:tn], C, dst_coord=(bx, by))

    return gemm.with_attr("global_symbol", algorithm)


def _build_ksplit_comm(M: int, N: int, K: int, mesh: int, dtype: str):
    n, annotate, mcopy, init, mc, lay = _comm_setup("ksplit_comm", M, N, K, mesh)
    tm, tn, tk = _ceil(M, n), _ceil(N, n), _ceil(K, n)
    tmp = _ceil(tm, RB) * RB
    # B's row panel spans all N columns: walking down it, the micro-kernel would meet a
    # new page at every k (0.37x torch.mm at 1024^3). Each KSPLIT_CHUNK-column chunk is
    # copied into a small buffer of short rows first, and the product runs on that.
    cw = min(KSPLIT_CHUNK, _ceil(N, CB) * CB)
    nch = _ceil(N, cw)

    @T.prim_func
    def ksplit_comm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    C: T.Tensor((M, N), dtype)):
        annotate({A: init(lay["A"], (tm, tk)), B: init(lay["B"], (tk, N)),
                  C: init(lay["C"], (tm, tn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            Ao = T.alloc_local((tmp, tk), dtype)   # A's block (i, j), zero padded
            Bo = T.alloc_local((tk, nch * cw), dtype)  # B's row panel j
            Bc = T.alloc_local((tk, cw + LD_PAD), dtype)  # one chunk of it
            Cp = T.alloc_local((tmp, nch * cw), dtype)   # partial C row panel i
            Cl = T.alloc_local((tm, tn), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            T.clear(Ao)
            T.clear(Bo)
            T.clear(Cp)
            if bx * tm < M and by * tk < K:
                mcopy(A, Ao[0:tm, 0:tk], src_coord=(bx, by))
            if by * tk < K:
                mcopy(B, Bo[0:tk, 0:N], src_coord=(by, 0))
            for c in T.serial(nch):
                for k, j in T.grid(tk, cw):
                    Bc[k, j] = Bo[k, c * cw + j]
                _block_mma(Ao, Bc, Cp, acc, tmp, cw, tk, c * cw)
            mc.reduce_scatter(Cp[0:tm, 0:N], Cl, ["y"], scatter_axis=1)
            if bx * tm < M and by * tn < N:
                mcopy(Cl, C, dst_coord=(bx, by))

    return ksplit_comm


_COMM_BUILDERS = {"summa_comm": partial(_build_2d_comm, "summa_comm"),
                  "cannon_comm": partial(_build_2d_comm, "cannon_comm"),
                  "ksplit_comm": _build_ksplit_comm}


def compile_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4, target: str = "c"):
    """Build and compile with :func:`compile_mesh_kernel` (``target="c"`` on CPU with
    :data:`CPU_FLAGS`, or ``"cuda"``)."""
    return compile_mesh_kernel(build_gemm(algorithm, M, N, K, mesh), target=target)


@dataclass(frozen=True)
class GemmRun:
    """What :func:`run_gemm` measured."""

    algorithm: str
    shape: tuple[int, int, int]
    max_abs_error: float
    seconds: float
    gflops: float
    kernel: Any


def run_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4, target: str = "c",
             repeat: int = 3, seed: int = 0, kernel: Any = None) -> GemmRun:
    """Compile (unless ``kernel`` is given), run on random data, check against NumPy and
    time it (median of ``repeat`` runs after one warm-up)."""
    import torch
    kernel = kernel or compile_gemm(algorithm, M, N, K, mesh, target)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    device = "cuda" if target == "cuda" else "cpu"
    ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
    tc = torch.zeros((M, N), dtype=torch.float32, device=device)
    kernel(ta, tb, tc)
    if device == "cuda":
        torch.cuda.synchronize()
    err = float(np.abs(tc.cpu().numpy() - a @ b).max()) if M * N else 0.0
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        kernel(ta, tb, tc)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    sec = float(np.median(times))
    return GemmRun(algorithm, (M, N, K), err, sec, 2.0 * M * N * K / sec / 1e9 if sec else 0.0,
                   kernel)
