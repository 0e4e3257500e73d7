"""The built-in GEMMs' superstep structure written out by hand: what each compute phase
does and each exchange moves, as formulas of the shape, the mesh and the tiles, timed
by the performance model's own schedule and collective costs. It answers in
microseconds what counting the kernel's TIR answers in tens of milliseconds, so the
tile search of :func:`~.gemm_choice.compare_gemm_algorithms` can try hundreds of
tiles; ``tests/tilelang_layer/test_gemm_model.py`` checks it equals the tool
(:func:`~..analysis.perf.estimate_mesh_kernel` of the built kernel) for square and
rectangular shapes. docs/perf.md gives the closed forms.

Only what the kernels do is modelled: ``summa_comm``, ``cannon_comm`` and
``splitk_comm`` with tiles (the shapes their tiles must divide,
:func:`~.gemm.tile_rules`), ``cannon25d_comm`` with its copies
(:func:`~.gemm.check_copies`), ``ksplit_comm`` for shapes the mesh divides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ...machines import Machine, get_machine
from ...mesh import Mesh
from ..analysis.comm_cost import Exchange, exchange_cost
from ..analysis.perf import BOUNDS, PlanStep, flow_stats, time_plan
from ..ir.scope import itemsize
from .gemm import (CB, KSPLIT_CHUNK, LD_PAD, RB, GemmTiles, check_copies, check_tiles,
                   default_tiles, tile_rules)

__all__ = ["ModelEstimate", "model_gemm", "gemm_local_bytes", "tile_candidates"]

_MESH_CACHE: dict[int, Mesh] = {}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _pad(bm: int, bn: int) -> tuple[int, int]:
    return _ceil(bm, RB) * RB, _ceil(bn, CB) * CB


def _mesh(n: int) -> Mesh:
    if n not in _MESH_CACHE:
        _MESH_CACHE[n] = Mesh({"x": n, "y": n})
    return _MESH_CACHE[n]


@dataclass(frozen=True)
class ModelEstimate:
    """The model's answer for one algorithm and tiles: ``serial``, ``overlapped`` and
    the estimate ``total`` (seconds, as :class:`~..analysis.perf.PerfReport`; ``copies``
    for 2.5D), ``compute`` (the compute phases together), ``by_bound`` (the seconds of
    the supersteps each bound dominates, as ``PerfReport.by_bound``), the
    per-core ``local_bytes`` and whether every memory holds it (``fits``), the number
    of ``supersteps`` and of ``exchanges``, and the collective algorithms the exchanges
    use."""

    algorithm: str
    tiles: GemmTiles | None
    copies: int | None
    serial: float
    overlapped: float
    total: float
    compute: float
    by_bound: tuple[tuple[str, float], ...]
    local_bytes: int
    fits: bool
    supersteps: int
    algorithms: tuple[str, ...]
    exchanges: int = 0


# -- flows of the exchanges (the same transfers comm_flows lists) ------------------------
@lru_cache(maxsize=4096)
def _broadcast(n: int, axis: int, root: int, nbytes: int, wrap: tuple) -> dict:
    i = np.repeat(np.arange(n), n - 1)
    j = np.tile(np.array([x for x in range(n) if x != root]), n)
    if axis == 1:  # along a row: from (i, root) to (i, j)
        src, dst = i * n + root, i * n + j
    else:  # along a column: from (root, i) to (j, i)
        src, dst = root * n + i, j * n + i
    return flow_stats(_mesh(n), src, dst, np.full(len(src), nbytes), wrap)


@lru_cache(maxsize=4096)
def _skew(n: int, which: str, nbytes: int, wrap: tuple) -> dict:
    src, dst = [], []
    for i in range(n):
        for j in range(n):
            s = (i, (i + j) % n) if which == "A" else ((i + j) % n, j)
            if s != (i, j):
                src.append(s[0] * n + s[1])
                dst.append(i * n + j)
    return flow_stats(_mesh(n), np.array(src, np.int64), np.array(dst, np.int64),
                      np.full(len(src), nbytes), wrap)


@lru_cache(maxsize=4096)
def _rotate(n: int, axis: int, nbytes: int, wrap: tuple) -> dict:
    i, j = np.divmod(np.arange(n * n), n)
    if axis == 1:  # (i, j) receives from (i, j + 1)
        src = i * n + (j + 1) % n
    else:
        src = ((i + 1) % n) * n + j
    dst = np.arange(n * n)
    keep = src != dst
    return flow_stats(_mesh(n), src[keep], dst[keep], np.full(int(keep.sum()), nbytes),
                      wrap)


@lru_cache(maxsize=4096)
def _all_pairs(n: int, axes: tuple, piece: int, wrap: tuple) -> dict:
    """Member i of each group sends ``piece`` bytes to every other member (a
    reduce-scatter with equal pieces) over ``axes`` of an ``n x n`` mesh."""
    groups = _mesh(n).group_array(axes)
    G, k = groups.shape
    src = np.repeat(groups[:, :, None], k, axis=2)
    dst = np.repeat(groups[:, None, :], k, axis=1)
    keep = src != dst
    return flow_stats(_mesh(n), src[keep], dst[keep], np.full(int(keep.sum()), piece), wrap)


class _Plan:
    """Collects supersteps as the kernel runs them: compute phases and exchanges."""

    def __init__(self, machine: Machine, n: int, dtype: str):
        self.m, self.n = machine, n
        self.rate = machine.rate(dtype)
        self.wrap = machine.wraps((n, n))
        self.steps: list[PlanStep] = []
        self.algs: list[str] = []
        self.by_bound: dict[str, float] = {}
        self._reset()

    def _reset(self) -> None:
        self.flops = 0.0
        self.mem = 0.0  # the busiest core's bytes
        self.active = 0  # cores moving bytes
        self.reads: set = set()
        self.writes: set = set()

    def work(self, flops: float = 0.0, mem: float = 0.0, active: int = 0,
             reads: Any = (), writes: Any = ()) -> None:
        """Add to the current compute phase (every core computes ``flops``; the busiest
        moves ``mem`` bytes, ``active`` cores move bytes; the largest count wins)."""
        self.flops += flops
        self.mem += mem
        self.active = max(self.active, active)
        self.reads |= set(reads)
        self.writes |= set(writes)

    def _compute(self) -> float:
        bw = self.m.core_mem_bandwidth(self.active)
        arith, memory = self.flops / self.rate, self.mem / bw
        self._parts = (arith, memory)
        return max(arith, memory)

    def _bound(self, compute: float, link: float = 0.0, latency: float = 0.0) -> None:
        parts = (*self._parts, link, latency)
        if max(parts) > 0:
            b = BOUNDS[int(np.argmax(parts))]
            self.by_bound[b] = self.by_bound.get(b, 0.0) + compute + link + latency

    def exchange(self, op: str, group_axes: tuple, piece: int, stats: dict,
                 flows: int, reads: str, writes: str) -> None:
        m, n = self.m, self.n
        compute = self._compute()
        ex = Exchange(op, tuple(n for _ in group_axes), tuple(self.wrap[a] for a in group_axes),
                      piece, stats["max_piece"], stats["max_link_bytes"], stats["max_hops"],
                      stats["max_sent_bytes"], stats["max_messages"], flows)
        best = exchange_cost(ex, m)[0]
        self.algs.append(best.algorithm.split("/")[0])
        self._bound(compute, best.stream, best.latency)
        self.steps.append(PlanStep(compute, best.seconds, True, frozenset(self.reads),
                                   frozenset(self.writes), frozenset({reads}),
                                   frozenset({writes}), stats["link_axes"]))
        self._reset()

    def finish(self) -> None:
        compute = self._compute()
        if compute or not self.steps:
            self._bound(compute)
            self.steps.append(PlanStep(compute, reads=frozenset(self.reads),
                                       writes=frozenset(self.writes)))


# -- the kernels -----------------------------------------------------------------------
def _summa(p: _Plan, M: int, N: int, K: int, t: GemmTiles, s: int, blocks: int) -> None:
    n = p.n
    tm, tn, tk = M // n, N // n, K // n
    bm, bn, bk = t.bm, t.bn, t.bk
    bmp, bnp = _pad(bm, bn)
    nk, P = tk // bk, n * (tk // bk)
    mma = 2.0 * bmp * bnp * bk
    loaders = 2 * n - 1  # the owners' column (A) and row (B)
    a_b, b_b = bm * bk * s, bk * bn * s

    def load(q):
        p.work(mem=a_b + b_b, active=loaders, writes=(f"As{q % 2}", f"Bs{q % 2}"))

    def bcast(q):
        c = q // nk
        for axis, (src, dst, nb) in ((1, ("As", "Ar", a_b)), (0, ("Bs", "Br", b_b))):
            st = _broadcast(n, axis, c, nb, p.wrap)
            p.exchange("broadcast", (axis,), nb, st, n * (n - 1), f"{src}{q % 2}",
                       f"{dst}{q % 2}")

    def product(q):
        p.work(flops=mma, reads=(f"Ar{q % 2}", f"Br{q % 2}", "Cl", "acc"),
               writes=("Cl", "acc"))

    p.work(writes=("Ar0", "Ar1", "Br0", "Br1"))  # the padding
    for b in range(blocks):
        p.work(writes=("Cl",))
        load(0)
        bcast(0)
        for q in range(P):
            if q + 1 < P:
                load(q + 1)
                bcast(q + 1)
            product(q)
        p.work(mem=bm * bn * s, active=n * n, reads=("Cl",))


def _cannon(p: _Plan, M: int, N: int, K: int, t: GemmTiles, s: int, blocks: int) -> None:
    n = p.n
    tm, tn, tk = M // n, N // n, K // n
    bm, bn = t.bm, t.bn
    bmp, bnp = _pad(bm, bn)
    mma = 2.0 * bmp * bnp * tk
    a_b, b_b = bm * tk * s, tk * bn * s
    wrap = p.wrap
    p.work(writes=("Ar", "A2", "Br", "B2"))
    for _ in range(blocks):
        p.work(mem=a_b + b_b, active=n * n, writes=("Cl", "Ao", "Bo"))
        for which, nb, src, dst in (("A", a_b, "Ao", "Ar"), ("B", b_b, "Bo", "Br")):
            st = _skew(n, which, nb, wrap)
            p.exchange("permute", (0, 1), nb, st, n * n - n, src, dst)
        for k in range(n):
            cur, nxt = (("Ar", "Br"), ("A2", "B2")) if k % 2 == 0 else \
                (("A2", "B2"), ("Ar", "Br"))
            if k + 1 < n:
                for axis, nb, src, dst in ((1, a_b, cur[0], nxt[0]), (0, b_b, cur[1], nxt[1])):
                    st = _rotate(n, axis, nb, wrap)
                    p.exchange("shift", (axis,), nb, st, n * n, src, dst)
            p.work(flops=mma, reads=(*cur, "Cl", "acc"), writes=("Cl", "acc"))
        p.work(mem=bm * bn * s, active=n * n, reads=("Cl",))


def _splitk(p: _Plan, M: int, N: int, K: int, t: GemmTiles, s: int, blocks: int) -> None:
    n = p.n
    P = n * n
    kc = K // P
    bm, bn, bk = t.bm, t.bn, t.bk
    bmp, bnp = _pad(bm, bn)
    rows = bm // P
    nb = blocks
    nq = kc // bk
    piece = rows * bn * s
    stats = _all_pairs(n, (0, 1), piece, p.wrap)
    p.work(writes=("Al", "Bl"))
    for b in range(nb):
        p.work(flops=nq * 2.0 * bmp * bnp * bk, mem=nq * (bm * bk + bk * bn) * s, active=P,
               reads=("Al", "Bl", f"P{b % 2}", "acc"), writes=(f"P{b % 2}", "Al", "Bl", "acc"))
        p.exchange("reduce_scatter", (0, 1), bm * bn * s, stats, P * (P - 1), f"P{b % 2}",
                   f"Q{b % 2}")
        if b > 0:
            p.work(mem=piece, active=P, reads=(f"Q{(b - 1) % 2}",))
    p.work(mem=piece, active=P, reads=(f"Q{(nb - 1) % 2}",))


def _ksplit(p: _Plan, M: int, N: int, K: int, s: int) -> None:
    n = p.n
    tm, tn, tk = M // n, N // n, K // n
    tmp = _ceil(tm, RB) * RB
    cw = min(KSPLIT_CHUNK, _ceil(N, CB) * CB)
    cols = _ceil(N, cw) * cw
    p.work(flops=2.0 * tmp * cols * tk, mem=(tm * tk + tk * N) * s, active=n * n,
           reads=("Bo", "Bc", "Cp", "Ao", "acc"), writes=("Ao", "Bo", "Cp", "Bc", "acc"))
    stats = _all_pairs(n, (1,), tm * tn * s, p.wrap)
    p.exchange("reduce_scatter", (1,), tm * N * s, stats, n * n * (n - 1), "Cp", "Cl")
    p.work(mem=tm * tn * s, active=n * n, reads=("Cl",))


@lru_cache(maxsize=4096)
def _pairs(n: int, pairs: tuple, nbytes: int, wrap: tuple) -> dict:
    src = np.array([a[0] * n + a[1] for a, _ in pairs], np.int64)
    dst = np.array([b[0] * n + b[1] for _, b in pairs], np.int64)
    keep = src != dst
    return flow_stats(_mesh(n), src[keep], dst[keep], np.full(int(keep.sum()), nbytes), wrap)


def _layer_pairs(n: int, copies: int) -> tuple[tuple, tuple, list]:
    """The permutes of ``cannon25d_comm`` (as :func:`~.gemm._build_cannon25d` builds
    them): the rotations of A and B inside the layers and the tree's rounds."""
    side = math.isqrt(copies)
    q = n // side

    def core(layer, i, j):
        return ((layer // side) * q + i, (layer % side) * q + j)

    local = [(i, j) for i in range(q) for j in range(q)]
    rot_a = tuple((core(lay, i, (j + 1) % q), core(lay, i, j))
                  for lay in range(copies) for i, j in local)
    rot_b = tuple((core(lay, (i + 1) % q, j), core(lay, i, j))
                  for lay in range(copies) for i, j in local)
    rounds = [tuple((core(lay, i, j), core(lay - (1 << r), i, j))
                    for lay in range(copies) if lay % (2 << r) == 1 << r for i, j in local)
              for r in range(copies.bit_length() - 1)]
    return rot_a, rot_b, rounds


def _cannon25d(p: _Plan, M: int, N: int, K: int, copies: int, s: int) -> None:
    n = p.n
    q = n // math.isqrt(copies)
    tm, tn, tk = M // q, N // q, K // copies // q
    tmp, tnp = _pad(tm, tn)
    rot_a, rot_b, rounds = _layer_pairs(n, copies)
    moved = sum(1 for a, b in rot_a if a != b)
    p.work(mem=(tm * tk + tk * tn) * s, active=n * n,
           writes=("Ar", "A2", "Br", "B2", "Cl"))
    for k in range(q):
        cur, nxt = (("Ar", "Br"), ("A2", "B2")) if k % 2 == 0 else (("A2", "B2"), ("Ar", "Br"))
        if k + 1 < q:
            for pairs, nb, src, dst in ((rot_a, tm * tk * s, cur[0], nxt[0]),
                                        (rot_b, tk * tn * s, cur[1], nxt[1])):
                p.exchange("permute", (0, 1), nb, _pairs(n, pairs, nb, p.wrap), moved,
                           src, dst)
        p.work(flops=2.0 * tmp * tnp * tk, reads=(*cur, "Cl", "acc"), writes=("Cl", "acc"))
    for pairs in rounds:
        p.exchange("permute", (0, 1), tm * tn * s, _pairs(n, pairs, tm * tn * s, p.wrap),
                   len(pairs), "Cl", "R")
        p.work(flops=tm * tn, reads=("Cl", "R"), writes=("Cl",))
    p.work(mem=tm * tn * s, active=q * q, reads=("Cl",))


def gemm_local_bytes(algorithm: str, M: int, N: int, K: int, mesh: int, dtype: str,
                     tiles: GemmTiles | None, copies: int | None = None) -> int:
    """Bytes of the per-core buffers of a built-in GEMM (what
    :attr:`~..analysis.perf.KernelWork.local_bytes` counts in its TIR)."""
    s = itemsize(dtype)
    n = mesh
    acc = RB * CB
    if algorithm == "cannon25d_comm":
        q = check_copies(M, N, K, n, copies)
        tm, tn, tk = M // q, N // q, K // copies // q
        tmp, tnp = _pad(tm, tn)
        return s * (2 * tmp * tk + 2 * tk * (tnp + LD_PAD) + tmp * tnp + tm * tn + acc)
    if algorithm == "ksplit_comm":
        tm, tn, tk = _ceil(M, n), _ceil(N, n), _ceil(K, n)
        tmp = _ceil(tm, RB) * RB
        cw = min(KSPLIT_CHUNK, _ceil(N, CB) * CB)
        nch = _ceil(N, cw)
        return s * (tmp * tk + tk * nch * cw + tk * (cw + LD_PAD) + tmp * nch * cw
                    + tm * tn + acc)
    bm, bn, bk = tiles.bm, tiles.bn, tiles.bk
    bmp, bnp = _pad(bm, bn)
    if algorithm == "summa_comm":
        return s * (2 * bm * bk + 2 * bk * bn + 2 * bmp * bk + 2 * bk * (bnp + LD_PAD)
                    + bmp * bnp + acc)
    if algorithm == "cannon_comm":
        tk = K // n
        return s * (bm * tk + tk * bn + 2 * bmp * tk + 2 * tk * (bnp + LD_PAD)
                    + bmp * bnp + acc)
    if algorithm == "splitk_comm":
        rows = bm // (n * n)
        return s * (bmp * bk + bk * (bnp + LD_PAD) + 2 * bmp * bnp + 2 * rows * bn + acc)
    raise ValueError(f"gemm_local_bytes: no model of {algorithm!r}")


def model_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4,
               machine: Any = "generic", dtype: str = "float32",
               tiles: GemmTiles | tuple | None = None,
               copies: int | None = None) -> ModelEstimate:
    """The model's estimate of a built-in GEMM, from its structure (no TIR): equal to
    ``estimate_mesh_kernel(build_gemm(...), machine)`` (tested). ``tiles`` defaults to
    :func:`~.gemm.default_tiles` (SUMMA and Cannon: their tiled form; ``build_gemm``
    without tiles builds the whole-tile kernels, which are not modelled here).

    >>> e = model_gemm("summa_comm", 512, 512, 512, 4, "wormhole-n300", "bfloat16",
    ...                (128, 128, 32))
    >>> e.fits, e.supersteps, e.algorithms
    (True, 33, ('multicast',))
    """
    m = get_machine(machine)
    n = mesh
    s = itemsize(dtype)
    if algorithm == "ksplit_comm":
        if M % n or N % n or K % n:
            raise ValueError(f"model_gemm: ksplit_comm is modelled for shapes the mesh "
                             f"side {n} divides, got {M}x{N}x{K}")
        t = None
    elif algorithm == "cannon25d_comm":
        copies = 4 if copies is None else copies
        check_copies(M, N, K, n, copies)
        t = None
    else:
        if tiles is None:  # the tiled form's default (build_gemm's for split-K)
            tiles = default_tiles(algorithm, M, N, K, n)
        t = tiles if isinstance(tiles, GemmTiles) else GemmTiles(*tiles)
        check_tiles(algorithm, M, N, K, n, t)
    def run(blocks: int) -> tuple:
        plan = _Plan(m, n, dtype)
        if algorithm == "summa_comm":
            _summa(plan, M, N, K, t, s, blocks)
        elif algorithm == "cannon_comm":
            _cannon(plan, M, N, K, t, s, blocks)
        elif algorithm == "splitk_comm":
            _splitk(plan, M, N, K, t, s, blocks)
        elif algorithm == "ksplit_comm":
            _ksplit(plan, M, N, K, s)
        elif algorithm == "cannon25d_comm":
            _cannon25d(plan, M, N, K, copies, s)
        else:
            raise ValueError(f"model_gemm: no model of {algorithm!r}; modelled: summa_comm, "
                             f"cannon_comm, splitk_comm, ksplit_comm, cannon25d_comm")
        plan.finish()
        serial, overlapped, _, _ = time_plan(plan.steps)
        busy = sum(x.compute for x in plan.steps)
        bounds = np.array([plan.by_bound.get(b, 0.0) for b in BOUNDS])
        exchanges = sum(1 for x in plan.steps if x.has_exchange)
        return np.array([serial, overlapped, len(plan.steps), busy, exchanges, *bounds]), \
            plan.algs

    if algorithm in ("summa_comm", "cannon_comm", "splitk_comm"):
        per = t.bm * t.bn if algorithm == "splitk_comm" else t.bm * t.bn * n * n
        nblocks = M * N // per
    else:
        nblocks = 1
    # SUMMA's and Cannon's C blocks start with nothing in flight (each block's last
    # products wait for all its exchanges): each block after the first adds the same
    # time, so two blocks tell all. Split-K's blocks overlap the next one's
    # reduce-scatter; from its fourth block on each adds the same time.
    first = 1 if algorithm != "splitk_comm" else 4
    if nblocks <= first + 1:
        sums, algs = run(nblocks)
    else:
        a, algs = run(first)
        b, _ = run(first + 1)
        sums = a + (nblocks - first) * (b - a)
    serial, overlapped, steps, busy = float(sums[0]), float(sums[1]), int(round(sums[2])), \
        float(sums[3])
    exchanges = int(round(sums[4]))
    by_bound = tuple((bd, float(v)) for bd, v in zip(BOUNDS, sums[5:]))
    local = gemm_local_bytes(algorithm, M, N, K, n, dtype, t, copies)
    fits = local <= m.local_memory_bytes  # the kernels' buffers are all "local"
    total = serial - m.overlap * (serial - overlapped)
    return ModelEstimate(algorithm, t, copies, serial, overlapped, total, busy, by_bound,
                         local, fits, steps, tuple(dict.fromkeys(algs)), exchanges)


def tile_candidates(algorithm: str, M: int, N: int, K: int, mesh: int) -> list[GemmTiles]:
    """Tiles to try, largest C block first: per dimension the extent a tile must
    divide (:func:`~.gemm.tile_rules`) and its halvings while they divide it (down to
    1; split-K's ``bm``: while a multiple of ``n^2``; Cannon's ``bk`` is its whole K
    tile). Empty when the shape does not divide as the algorithm needs."""
    try:
        em, en, ek = tile_rules(algorithm, M, N, K, mesh)
    except ValueError:
        return []
    P = mesh * mesh

    def halvings(x: int, step: int = 1) -> list[int]:
        out, v = [], x
        while v >= step and v % step == 0:
            out.append(v)
            if v % 2:
                break
            v //= 2
        return out

    bms = halvings(em, P if algorithm == "splitk_comm" else 1)
    bns = halvings(en)
    bks = [ek] if algorithm == "cannon_comm" else halvings(ek)
    out = [GemmTiles(a, b, c) for a in bms for b in bns for c in bks]
    return sorted(out, key=lambda t: (-t.bm * t.bn, -t.bk, -t.bm))
