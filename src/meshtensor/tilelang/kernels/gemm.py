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

import math
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import tilelang
import tilelang.language as T

from ...gemms import COMM_ALGORITHMS as _COMM, GLOBAL_VIEW_ALGORITHMS, TILED_ALGORITHMS
from ...gemms import algorithm as _algorithm
from ..engine import CPU_FLAGS, compile_mesh_kernel
from ..language.comm import mesh_comm
from ..language.mesh_tensor import mesh_tensor_functions

# the names, from the one list (meshtensor.gemms)
ALGORITHMS = GLOBAL_VIEW_ALGORITHMS  # global view
COMM_ALGORITHMS = _COMM  # distributed memory
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
    """The seed-format shardings of A, B and C for an algorithm (``splitk_comm``: A and
    B split along K over all cores; its C is written in pieces that no sharding
    describes, so C carries no annotation; ``cannon25d_comm``: none, each layer of the
    mesh reads its own slice of K, which no sharding of the whole mesh describes)."""
    _algorithm(algorithm)  # ValueError naming the algorithms
    if algorithm == "local":
        return {"A": {"x": 0, "y": None}, "B": {"x": None, "y": 1}, "C": {"x": 0, "y": 1}}
    if algorithm in ("summa", "cannon", "summa_comm", "cannon_comm"):
        full = {"x": 0, "y": 1}
        return {"A": dict(full), "B": dict(full), "C": dict(full)}
    if algorithm == "ksplit_comm":
        return {"A": {"x": 0, "y": 1}, "B": {"x": None, "y": 0}, "C": {"x": 0, "y": 1}}
    if algorithm == "cannon25d_comm":
        return {}  # each layer reads its own K slice; no sharding says that
    return {"A": {"x": 1, "y": 1}, "B": {"x": 0, "y": 0}}  # splitk_comm


@dataclass(frozen=True)
class GemmTiles:
    """The tiles of a tiled GEMM (``summa_comm``, ``cannon_comm``, ``splitk_comm``): each
    core holds a ``bm x bn`` block of C at a time and multiplies ``bk``-deep panels
    into it (Cannon's panel is its whole K tile: ``bk`` is ignored there).

    >>> GemmTiles(64, 64, 32)
    GemmTiles(bm=64, bn=64, bk=32)
    >>> GemmTiles(64, 0, 32)
    Traceback (most recent call last):
    ...
    ValueError: GemmTiles: bn must be a positive int, got 0
    """

    bm: int
    bn: int
    bk: int

    def __post_init__(self) -> None:
        for name in ("bm", "bn", "bk"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"GemmTiles: {name} must be a positive int, got {v!r}")
            object.__setattr__(self, name, int(v))

    def __str__(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}"


def tile_rules(algorithm: str, M: int, N: int, K: int, mesh: int) -> tuple[int, int, int]:
    """What ``bm``, ``bn`` and ``bk`` of a tiled algorithm must divide: the per-core
    extents ``(M / n, N / n, K / n)`` for SUMMA and Cannon, ``(M, N, K / n^2)`` for
    split-K (whose ``bm`` must also be a multiple of ``n^2``); ``ValueError`` when the
    shape does not divide as the algorithm needs."""
    n, P = mesh, mesh * mesh
    if algorithm == "splitk_comm":
        if K % P:
            raise ValueError(f"splitk_comm: K = {K} must be a multiple of the {P} cores "
                             f"(each core multiplies K / {P} of it); e.g. K = "
                             f"{_ceil(K, P) * P}")
        if M % P:
            raise ValueError(f"splitk_comm: M = {M} must be a multiple of the {P} cores "
                             f"(the reduce-scatter hands each core M / {P} rows); e.g. "
                             f"M = {_ceil(M, P) * P}")
        return M, N, K // P
    if algorithm not in ("summa_comm", "cannon_comm"):
        raise ValueError(f"build_gemm: {algorithm} takes no tiles; tiled algorithms: "
                         f"{', '.join(TILED_ALGORITHMS)}")
    bad = [f"{name} = {v}" for name, v in (("M", M), ("N", N), ("K", K)) if v % n]
    if bad:
        raise ValueError(f"{algorithm} with tiles: {', '.join(bad)} must be multiples of "
                         f"the mesh side {n} (or build it without tiles)")
    return M // n, N // n, K // n


def check_tiles(algorithm: str, M: int, N: int, K: int, mesh: int, tiles: GemmTiles) -> None:
    """``ValueError`` naming the tile that does not divide what it must (see
    :func:`tile_rules`)."""
    em, en, ek = tile_rules(algorithm, M, N, K, mesh)
    P = mesh * mesh
    checks = [("bm", tiles.bm, em), ("bn", tiles.bn, en)]
    if algorithm != "cannon_comm":
        checks.append(("bk", tiles.bk, ek))
    for name, v, of in checks:
        if v > of or of % v:
            raise ValueError(f"{algorithm}: tile {name} = {v} must divide {of} (the "
                             f"per-core extent it blocks); e.g. {name} = "
                             f"{max(d for d in range(1, of + 1) if of % d == 0 and d <= v)}")
    if algorithm == "splitk_comm" and tiles.bm % P:
        raise ValueError(f"splitk_comm: tile bm = {tiles.bm} must be a multiple of the {P} "
                         f"cores (the reduce-scatter cuts each block's rows {P} ways)")


def default_tiles(algorithm: str, M: int, N: int, K: int, mesh: int,
                  limit: int = 256) -> GemmTiles:
    """The largest tiles up to ``limit`` per dimension: the extent a tile must divide
    (:func:`tile_rules`), halved while it is above ``limit`` and stays a divisor (and,
    for split-K's ``bm``, a multiple of ``n^2``). Kernels compiled for the CPU keep
    their buffers on the C stack: a whole 1024 x 1024 float32 block of C twice over
    would not fit it.

    >>> default_tiles("splitk_comm", 1024, 1024, 4096, 4)
    GemmTiles(bm=256, bn=256, bk=256)
    """
    P = mesh * mesh
    out = []
    for i, x in enumerate(tile_rules(algorithm, M, N, K, mesh)):
        step = P if algorithm == "splitk_comm" and i == 0 else 1
        while x > limit and x % 2 == 0 and (x // 2) % step == 0:
            x //= 2
        out.append(x)
    return GemmTiles(*out)


def build_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4,
               dtype: str = "float32", tiles: GemmTiles | tuple | None = None,
               copies: int | None = None):
    """The PrimFunc computing ``C = A @ B`` (A: MxK, B: KxN) on an ``mesh x mesh`` mesh.

    ``tiles`` (:class:`GemmTiles` or ``(bm, bn, bk)``) builds the tiled, pipelined form
    of ``summa_comm`` or ``cannon_comm`` (and ``splitk_comm``, whose default is
    :func:`default_tiles`); without it those two are the whole-tile kernels.
    ``copies`` is the number of layers of ``cannon25d_comm`` (default 4)."""
    lay = layouts(algorithm)
    for name, v in (("M", M), ("N", N), ("K", K), ("mesh", mesh)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"build_gemm: {name} must be a positive int, got {v!r}")
    if algorithm == "cannon25d_comm":
        if tiles is not None:
            raise ValueError("build_gemm: cannon25d_comm takes copies=, not tiles")
        return _build_cannon25d(M, N, K, mesh, dtype, 4 if copies is None else copies)
    if copies is not None:
        raise ValueError(f"build_gemm: copies= is for cannon25d_comm, not {algorithm}")
    if algorithm == "splitk_comm" and tiles is None:
        tiles = default_tiles(algorithm, M, N, K, mesh)
    if tiles is not None:
        tiles = tiles if isinstance(tiles, GemmTiles) else GemmTiles(*tiles)
        check_tiles(algorithm, M, N, K, mesh, tiles)
        return _TILED_BUILDERS[algorithm](M, N, K, mesh, dtype, tiles)
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


def _pads(bm: int, bn: int) -> tuple[int, int]:
    return _ceil(bm, RB) * RB, _ceil(bn, CB) * CB


def _build_summa_tiled(M: int, N: int, K: int, mesh: int, dtype: str, tiles: GemmTiles):
    """SUMMA, tiled and pipelined: per ``bm x bn`` block of its C tile, a core walks the
    ``K / bk`` panels; the panel's owner column (rows for B) loads it from its shard and
    broadcasts it. Panel ``p + 1`` is loaded and broadcast into the other pair of
    buffers before panel ``p`` is multiplied, so the exchange can run beside it."""
    n, annotate, _, init, mc, lay = _comm_setup("summa_comm", M, N, K, mesh)
    tm, tn, tk = M // n, N // n, K // n
    bm, bn, bk = tiles.bm, tiles.bn, tiles.bk
    bmp, bnp = _pads(bm, bn)
    nk = tk // bk
    P = n * nk  # panels along K

    @T.macro
    def load(A, B, p, As, Bs, bx, by, ib, jb):
        # the owners of panel p load its pieces from their own shards
        if by == p // nk:
            T.copy(A[bx * tm + ib * bm:bx * tm + ib * bm + bm, p * bk:p * bk + bk], As)
        if bx == p // nk:
            T.copy(B[p * bk:p * bk + bk, by * tn + jb * bn:by * tn + jb * bn + bn], Bs)

    @T.prim_func
    def summa_comm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                   C: T.Tensor((M, N), dtype)):
        # the copy granules are the pieces a core moves at once
        annotate({A: init(lay["A"], (bm, bk)), B: init(lay["B"], (bk, bn)),
                  C: init(lay["C"], (bm, bn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            As0 = T.alloc_local((bm, bk), dtype)  # the panel a root sends
            As1 = T.alloc_local((bm, bk), dtype)
            Bs0 = T.alloc_local((bk, bn), dtype)
            Bs1 = T.alloc_local((bk, bn), dtype)
            Ar0 = T.alloc_local((bmp, bk), dtype)  # the panel every core multiplies
            Ar1 = T.alloc_local((bmp, bk), dtype)
            Br0 = T.alloc_local((bk, bnp + LD_PAD), dtype)
            Br1 = T.alloc_local((bk, bnp + LD_PAD), dtype)
            Cl = T.alloc_local((bmp, bnp), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            for i, j in T.grid(bmp - bm, bk):  # the micro-kernel's padding stays zero
                Ar0[bm + i, j] = T.cast(0, dtype)
                Ar1[bm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(bk, bnp - bn):
                Br0[i, bn + j] = T.cast(0, dtype)
                Br1[i, bn + j] = T.cast(0, dtype)
            for ib, jb in T.grid(tm // bm, tn // bn):
                T.clear(Cl)
                load(A, B, 0, As0, Bs0, bx, by, ib, jb)
                mc.broadcast(As0, Ar0[0:bm, 0:bk], ["y"], root=[0])
                mc.broadcast(Bs0, Br0[0:bk, 0:bn], ["x"], root=[0])
                for p in T.serial(P):
                    if p % 2 == 0:
                        if p + 1 < P:
                            load(A, B, p + 1, As1, Bs1, bx, by, ib, jb)
                            mc.broadcast(As1, Ar1[0:bm, 0:bk], ["y"], root=[(p + 1) // nk])
                            mc.broadcast(Bs1, Br1[0:bk, 0:bn], ["x"], root=[(p + 1) // nk])
                        _block_mma(Ar0, Br0, Cl, acc, bmp, bnp, bk)
                    else:
                        if p + 1 < P:
                            load(A, B, p + 1, As0, Bs0, bx, by, ib, jb)
                            mc.broadcast(As0, Ar0[0:bm, 0:bk], ["y"], root=[(p + 1) // nk])
                            mc.broadcast(Bs0, Br0[0:bk, 0:bn], ["x"], root=[(p + 1) // nk])
                        _block_mma(Ar1, Br1, Cl, acc, bmp, bnp, bk)
                T.copy(Cl[0:bm, 0:bn],
                       C[bx * tm + ib * bm:bx * tm + ib * bm + bm,
                         by * tn + jb * bn:by * tn + jb * bn + bn])

    return summa_comm


def _build_cannon_tiled(M: int, N: int, K: int, mesh: int, dtype: str, tiles: GemmTiles):
    """Cannon, tiled and pipelined: per ``bm x bn`` block of its C tile, a core loads
    its own ``bm x tk`` piece of A and ``tk x bn`` piece of B, the skew permutes them,
    and each of the ``n`` products runs beside the rotation that brings the next pair
    into the other buffers."""
    n, annotate, _, init, mc, lay = _comm_setup("cannon_comm", M, N, K, mesh)
    tm, tn, tk = M // n, N // n, K // n
    bm, bn = tiles.bm, tiles.bn
    bmp, bnp = _pads(bm, bn)
    skew_a = [((i, (i + j) % n), (i, j)) for i in range(n) for j in range(n)]
    skew_b = [(((i + j) % n, j), (i, j)) for i in range(n) for j in range(n)]

    @T.prim_func
    def cannon_comm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    C: T.Tensor((M, N), dtype)):
        annotate({A: init(lay["A"], (bm, tk)), B: init(lay["B"], (tk, bn)),
                  C: init(lay["C"], (bm, bn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            Ao = T.alloc_local((bm, tk), dtype)  # own pieces
            Bo = T.alloc_local((tk, bn), dtype)
            Ar = T.alloc_local((bmp, tk), dtype)
            A2 = T.alloc_local((bmp, tk), dtype)
            Br = T.alloc_local((tk, bnp + LD_PAD), dtype)
            B2 = T.alloc_local((tk, bnp + LD_PAD), dtype)
            Cl = T.alloc_local((bmp, bnp), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            for i, j in T.grid(bmp - bm, tk):
                Ar[bm + i, j] = T.cast(0, dtype)
                A2[bm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(tk, bnp - bn):
                Br[i, bn + j] = T.cast(0, dtype)
                B2[i, bn + j] = T.cast(0, dtype)
            for ib, jb in T.grid(tm // bm, tn // bn):
                T.clear(Cl)
                T.copy(A[bx * tm + ib * bm:bx * tm + ib * bm + bm, by * tk:by * tk + tk], Ao)
                T.copy(B[bx * tk:bx * tk + tk, by * tn + jb * bn:by * tn + jb * bn + bn], Bo)
                mc.permute(Ao, Ar[0:bm, 0:tk], skew_a)
                mc.permute(Bo, Br[0:tk, 0:bn], skew_b)
                for k in T.serial(n):
                    if k % 2 == 0:
                        if k + 1 < n:
                            mc.shift(Ar[0:bm, 0:tk], A2[0:bm, 0:tk], ["y"], "y", -1, rotate=True)
                            mc.shift(Br[0:tk, 0:bn], B2[0:tk, 0:bn], ["x"], "x", -1, rotate=True)
                        _block_mma(Ar, Br, Cl, acc, bmp, bnp, tk)
                    else:
                        if k + 1 < n:
                            mc.shift(A2[0:bm, 0:tk], Ar[0:bm, 0:tk], ["y"], "y", -1, rotate=True)
                            mc.shift(B2[0:tk, 0:bn], Br[0:tk, 0:bn], ["x"], "x", -1, rotate=True)
                        _block_mma(A2, B2, Cl, acc, bmp, bnp, tk)
                T.copy(Cl[0:bm, 0:bn],
                       C[bx * tm + ib * bm:bx * tm + ib * bm + bm,
                         by * tn + jb * bn:by * tn + jb * bn + bn])

    return cannon_comm


def _build_splitk_tiled(M: int, N: int, K: int, mesh: int, dtype: str, tiles: GemmTiles):
    """P-way split-K (``P = n^2``): core ``p`` (linear id) multiplies its ``K / P``
    slice of A's columns and B's rows into a partial ``bm x bn`` block of C, ``bk`` at a
    time; one ``reduce_scatter`` over all cores sums the partials and hands core ``p``
    rows ``[p bm / P, (p + 1) bm / P)`` of the block. Blocks alternate between two
    pairs of buffers: a block's reduce-scatter runs beside the next block's products,
    and its rows are stored after the next reduce-scatter is issued."""
    n, annotate, _, init, mc, lay = _comm_setup("splitk_comm", M, N, K, mesh)
    P = n * n
    kc = K // P
    bm, bn, bk = tiles.bm, tiles.bn, tiles.bk
    bmp, bnp = _pads(bm, bn)
    rows = bm // P
    nbn = N // bn
    nb = (M // bm) * nbn

    @T.macro
    def block(A, B, b, Pt, bx, by, Al, Bl, acc):
        T.clear(Pt)
        for q in T.serial(kc // bk):
            T.copy(A[(b // nbn) * bm:(b // nbn) * bm + bm,
                     (bx * n + by) * kc + q * bk:(bx * n + by) * kc + q * bk + bk],
                   Al[0:bm, 0:bk])
            T.copy(B[(bx * n + by) * kc + q * bk:(bx * n + by) * kc + q * bk + bk,
                     (b % nbn) * bn:(b % nbn) * bn + bn], Bl[0:bk, 0:bn])
            _block_mma(Al, Bl, Pt, acc, bmp, bnp, bk)

    @T.macro
    def store(C, b, Q, bx, by):
        T.copy(Q, C[(b // nbn) * bm + (bx * n + by) * rows:
                    (b // nbn) * bm + (bx * n + by) * rows + rows,
                    (b % nbn) * bn:(b % nbn) * bn + bn])

    @T.prim_func
    def splitk_comm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    C: T.Tensor((M, N), dtype)):
        annotate({A: init(lay["A"], (bm, bk)), B: init(lay["B"], (bk, bn))})
        with T.Kernel(n, n, threads=1) as (bx, by):
            Al = T.alloc_local((bmp, bk), dtype)
            Bl = T.alloc_local((bk, bnp + LD_PAD), dtype)
            P0 = T.alloc_local((bmp, bnp), dtype)  # partial blocks
            P1 = T.alloc_local((bmp, bnp), dtype)
            Q0 = T.alloc_local((rows, bn), dtype)  # this core's rows of a block
            Q1 = T.alloc_local((rows, bn), dtype)
            acc = T.alloc_local((RB, CB), dtype)
            for i, j in T.grid(bmp - bm, bk):
                Al[bm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(bk, bnp - bn):
                Bl[i, bn + j] = T.cast(0, dtype)
            for b in T.serial(nb):
                if b % 2 == 0:
                    block(A, B, b, P0, bx, by, Al, Bl, acc)
                    mc.reduce_scatter(P0[0:bm, 0:bn], Q0, ["x", "y"], scatter_axis=0)
                    if b > 0:
                        store(C, b - 1, Q1, bx, by)
                else:
                    block(A, B, b, P1, bx, by, Al, Bl, acc)
                    mc.reduce_scatter(P1[0:bm, 0:bn], Q1, ["x", "y"], scatter_axis=0)
                    store(C, b - 1, Q0, bx, by)
            if nb % 2 == 1:
                store(C, nb - 1, Q0, bx, by)
            else:
                store(C, nb - 1, Q1, bx, by)

    return splitk_comm


def check_copies(M: int, N: int, K: int, mesh: int, copies: int) -> int:
    """The layer side ``q`` of ``cannon25d_comm`` with ``copies`` layers on an
    ``mesh x mesh`` mesh: the mesh is cut into ``copies = (mesh / q)^2`` square layers
    of ``q x q`` cores (a power of two of them, so the sum over layers is a binary
    tree); ``ValueError`` naming what does not divide."""
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"cannon25d_comm: copies must be a positive int, got {copies!r}")
    side = math.isqrt(copies)
    if side * side != copies or side & (side - 1) or mesh % side:
        ok = [c * c for c in (1, 2, 4, 8) if mesh % c == 0]
        raise ValueError(f"cannon25d_comm: copies = {copies} must be the square of a power "
                         f"of two that divides the mesh side {mesh} (the layers tile the "
                         f"mesh); here {', '.join(map(str, ok))}")
    q = mesh // side
    bad = [f"{name} = {v} must be a multiple of {d}" for name, v, d in
           (("M", M, q), ("N", N, q), ("K", K, q * copies)) if v % d]
    if bad:
        raise ValueError(f"cannon25d_comm with {copies} copies ({q}x{q} layers): "
                         f"{'; '.join(bad)}")
    return q


def _build_cannon25d(M: int, N: int, K: int, mesh: int, dtype: str, copies: int):
    """2.5D matrix multiplication with ``c = copies`` layers (Solomonik and Demmel's
    algorithm, Cannon inside each layer). The ``n x n`` mesh is cut into ``c`` square
    layers of ``q x q`` cores (``q = n / sqrt(c)``); layer ``l`` multiplies the ``l``-th
    slice of ``K / c`` columns of A and rows of B by Cannon's algorithm on ``q x q``
    tiles (``M/q x K/(cq)`` and ``K/(cq) x N/q``), each core reading its skewed tiles
    straight from A and B; every core thus holds a ``M/q x N/q`` partial tile of C,
    ``c`` times Cannon's. The rotations are permutes inside each layer (a mesh-axis
    shift would cross the layers), and the partial tiles are summed over the layers by
    a binary tree of permutes, ``log2 c`` rounds; layer 0 stores C. The mesh is 2-D: a
    layer is a block of the mesh, not a mesh axis, so every exchange is a permute with
    static pairs."""
    n = mesh
    q = check_copies(M, N, K, n, copies)
    L = n // q  # layers per mesh side
    Kc = K // copies
    tm, tn, tk = M // q, N // q, Kc // q
    tmp, tnp = _pads(tm, tn)
    mc = mesh_comm({"x": n, "y": n})

    def core(layer: int, i: int, j: int) -> tuple[int, int]:
        return ((layer // L) * q + i, (layer % L) * q + j)

    layers = range(copies)
    local = [(i, j) for i in range(q) for j in range(q)]
    # core (i, j) of a layer takes the A tile of (i, j + 1) and the B tile of (i + 1, j)
    rot_a = [(core(lay, i, (j + 1) % q), core(lay, i, j)) for lay in layers for i, j in local]
    rot_b = [(core(lay, (i + 1) % q, j), core(lay, i, j)) for lay in layers for i, j in local]
    rounds = [[(core(lay, i, j), core(lay - (1 << r), i, j))
               for lay in layers if lay % (2 << r) == 1 << r for i, j in local]
              for r in range(copies.bit_length() - 1)]

    if len(rounds) > 6:
        raise ValueError(f"cannon25d_comm: at most 64 copies, got {copies}")

    @T.macro
    def reduce_round(Cl, R, bx, by, r):
        mc.permute(Cl[0:tm, 0:tn], R, rounds[r])
        # the receivers of round r: layers whose index is a multiple of 2^(r+1)
        if ((bx // q) * L + by // q) % (2 << r) == 0:
            for i, j in T.grid(tm, tn):
                Cl[i, j] = Cl[i, j] + R[i, j]

    @T.prim_func
    def cannon25d_comm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                       C: T.Tensor((M, N), dtype)):
        with T.Kernel(n, n, threads=1) as (bx, by):
            Ar = T.alloc_local((tmp, tk), dtype)
            A2 = T.alloc_local((tmp, tk), dtype)
            Br = T.alloc_local((tk, tnp + LD_PAD), dtype)
            B2 = T.alloc_local((tk, tnp + LD_PAD), dtype)
            Cl = T.alloc_local((tmp, tnp), dtype)
            R = T.alloc_local((tm, tn), dtype)  # a partial tile from another layer
            acc = T.alloc_local((RB, CB), dtype)
            for i, j in T.grid(tmp - tm, tk):
                Ar[tm + i, j] = T.cast(0, dtype)
                A2[tm + i, j] = T.cast(0, dtype)
            for i, j in T.grid(tk, tnp - tn):
                Br[i, tn + j] = T.cast(0, dtype)
                B2[i, tn + j] = T.cast(0, dtype)
            T.clear(Cl)
            # Cannon's skewed tiles of this layer's K slice, read straight from A and B
            T.copy(A[(bx % q) * tm:(bx % q) * tm + tm,
                     ((bx // q) * L + by // q) * Kc + ((bx % q + by % q) % q) * tk:
                     ((bx // q) * L + by // q) * Kc + ((bx % q + by % q) % q) * tk + tk],
                   Ar[0:tm, 0:tk])
            T.copy(B[((bx // q) * L + by // q) * Kc + ((bx % q + by % q) % q) * tk:
                     ((bx // q) * L + by // q) * Kc + ((bx % q + by % q) % q) * tk + tk,
                     (by % q) * tn:(by % q) * tn + tn], Br[0:tk, 0:tn])
            for k in T.serial(q):
                if k % 2 == 0:
                    if k + 1 < q:
                        mc.permute(Ar[0:tm, 0:tk], A2[0:tm, 0:tk], rot_a)
                        mc.permute(Br[0:tk, 0:tn], B2[0:tk, 0:tn], rot_b)
                    _block_mma(Ar, Br, Cl, acc, tmp, tnp, tk)
                else:
                    if k + 1 < q:
                        mc.permute(A2[0:tm, 0:tk], Ar[0:tm, 0:tk], rot_a)
                        mc.permute(B2[0:tk, 0:tn], Br[0:tk, 0:tn], rot_b)
                    _block_mma(A2, B2, Cl, acc, tmp, tnp, tk)
            # the tree's rounds (their pairs differ: one comm op each, written out)
            if len(rounds) > 0:
                reduce_round(Cl, R, bx, by, 0)
            if len(rounds) > 1:
                reduce_round(Cl, R, bx, by, 1)
            if len(rounds) > 2:
                reduce_round(Cl, R, bx, by, 2)
            if len(rounds) > 3:
                reduce_round(Cl, R, bx, by, 3)
            if len(rounds) > 4:
                reduce_round(Cl, R, bx, by, 4)
            if len(rounds) > 5:
                reduce_round(Cl, R, bx, by, 5)
            if (bx // q) * L + by // q == 0:
                T.copy(Cl[0:tm, 0:tn], C[(bx % q) * tm:(bx % q) * tm + tm,
                                         (by % q) * tn:(by % q) * tn + tn])

    return cannon25d_comm


_TILED_BUILDERS = {"summa_comm": _build_summa_tiled, "cannon_comm": _build_cannon_tiled,
                   "splitk_comm": _build_splitk_tiled}
_COMM_BUILDERS = {"summa_comm": partial(_build_2d_comm, "summa_comm"),
                  "cannon_comm": partial(_build_2d_comm, "cannon_comm"),
                  "ksplit_comm": _build_ksplit_comm}


def compile_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4, target: str = "c",
                 tiles: GemmTiles | tuple | None = None):
    """Build and compile with :func:`compile_mesh_kernel` (``target="c"`` on CPU with
    :data:`CPU_FLAGS`, or ``"cuda"``)."""
    return compile_mesh_kernel(build_gemm(algorithm, M, N, K, mesh, tiles=tiles),
                               target=target)


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
             repeat: int = 3, seed: int = 0, kernel: Any = None,
             tiles: GemmTiles | tuple | None = None) -> GemmRun:
    """Compile (unless ``kernel`` is given), run on random data, check against NumPy and
    time it (median of ``repeat`` runs after one warm-up)."""
    import torch
    kernel = kernel or compile_gemm(algorithm, M, N, K, mesh, target, tiles=tiles)
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
