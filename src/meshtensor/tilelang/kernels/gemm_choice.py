"""The cheapest distributed-memory GEMM for a shape on a machine: for each algorithm of
the one list (:mod:`meshtensor.gemms`) search the tiles (or 2.5D's copies) whose
buffers fit the machine's memory with the kernels' structure
(:mod:`.gemm_model`, microseconds a try), estimate the best of each with the
performance model on its built kernel (``estimate_mesh_kernel``, which reads the
TIR; nothing is compiled), and rank them. A kernel whose buffers do not fit is never
ranked: it is listed as too big, and when nothing fits the choice says so."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Sequence

from ...gemms import algorithm as _algorithm
from ...machines import Machine, get_machine
from ..analysis.perf import PerfReport, estimate_mesh_kernel
from .gemm import GemmTiles, build_gemm, check_copies
from .gemm_model import ModelEstimate, gemm_local_bytes, model_gemm, tile_candidates

__all__ = ["Candidate", "GemmChoice", "COMPARED", "best_form", "compare_gemm_algorithms",
           "estimate_gemm"]

#: The most forms of one algorithm whose buffers fit that the search models (the
#: largest C blocks first).
MAX_TRIES = 24
#: The algorithms ``compare_gemm_algorithms`` tries by default.
COMPARED = ("summa_comm", "cannon_comm", "splitk_comm", "cannon25d_comm", "ksplit_comm")


def estimate_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4,
                  machine: Any = "generic", dtype: str = "float32",
                  tiles: GemmTiles | tuple | None = None,
                  copies: int | None = None) -> PerfReport:
    """The :class:`PerfReport` of one built-in GEMM (:func:`build_gemm`) on a machine.

    >>> r = estimate_gemm("cannon_comm", 256, 256, 256, mesh=4, machine="wormhole-n300")
    >>> r.machine.name, len(r.steps)
    ('wormhole-n300', 9)
    """
    return estimate_mesh_kernel(build_gemm(algorithm, M, N, K, mesh, dtype, tiles=tiles,
                                           copies=copies), machine)


@dataclass(frozen=True, eq=False)
class Candidate:
    """One algorithm's best form for a shape: its ``tiles`` or ``copies`` (``None``: the
    kernel has none), the estimate of it (``model``, :func:`~.gemm_model.model_gemm`,
    equal to the performance model on the built kernel; :attr:`report` builds that
    kernel and estimates it), ``local_bytes`` of its buffers (when none of its forms
    fits: of its smallest form), how many forms were ``tried``, and ``reason`` why the
    algorithm does not apply to the shape at all (then it has no size). A kernel the
    model does not describe (a shape the tiled forms do not take) is estimated on its
    built kernel directly (``built``)."""

    algorithm: str
    tiles: GemmTiles | None
    copies: int | None
    model: ModelEstimate | None
    local_bytes: int
    tried: int
    reason: str = ""
    built: PerfReport | None = None
    machine: Machine | None = None
    shape: tuple = ()
    dtype: str = "float32"

    @property
    def fits(self) -> bool:
        if self.built is not None:
            return self.built.fits_local_memory
        return self.model is not None and self.model.fits

    @property
    def total(self) -> float:
        if self.built is not None:
            return self.built.total
        return self.model.total if self.model is not None else float("inf")

    @property
    def serial(self) -> float:
        return self.built.serial if self.built is not None else self.model.serial

    @property
    def supersteps(self) -> int:
        return len(self.built.steps) if self.built is not None else self.model.supersteps

    @property
    def compute(self) -> float:
        """Seconds of its compute phases together (the compute engines' busy time)."""
        if self.built is not None:
            return sum(s.compute for s in self.built.steps)
        return self.model.compute if self.model is not None else 0.0

    def by_bound(self) -> dict[str, float]:
        return self.built.by_bound() if self.built is not None else dict(self.model.by_bound)

    def algorithms(self) -> dict[str, int]:
        """The collective algorithms its exchanges use (counts only from a report)."""
        if self.built is not None:
            return self.built.algorithms()
        return {a: 0 for a in self.model.algorithms}

    @property
    def exchanges(self) -> int:
        if self.built is not None:
            return sum(1 for s in self.built.steps if s.work.has_exchange)
        return self.model.exchanges

    @property
    def report(self) -> PerfReport:
        """The performance model's report on the built kernel (built on first use)."""
        if self.built is not None:
            return self.built
        memo = self.__dict__.get("_report")
        if memo is None:
            M, N, K, n = self.shape
            memo = estimate_gemm(self.algorithm, M, N, K, n, self.machine, self.dtype,
                                 tiles=self.tiles, copies=self.copies)
            object.__setattr__(self, "_report", memo)
        return memo

    @property
    def shape_label(self) -> str:
        """``"512x512x64"`` (tiles), ``"c=4"`` (copies) or ``"-"``."""
        if self.copies is not None:
            return f"c={self.copies}"
        if self.tiles is None:
            return "-"
        if self.algorithm == "cannon_comm":
            return f"{self.tiles.bm}x{self.tiles.bn}"
        return str(self.tiles)


@dataclass(frozen=True, eq=False)
class GemmChoice:
    """Estimates of several GEMM algorithms for one shape on one machine: ``ranked``
    (the candidates whose buffers fit, fastest first), ``too_big`` (those with no
    form that fits) and ``not_applicable`` (those the shape does not suit). ``estimates`` is ``((algorithm, PerfReport), ...)`` of the ranked
    ones; ``margin`` is how much longer the runner-up takes, relative to the fastest
    (0.25: 25% longer)."""

    shape: tuple[int, int, int]
    mesh: int
    dtype: str
    machine: Machine
    ranked: tuple[Candidate, ...]
    too_big: tuple[Candidate, ...] = ()
    not_applicable: tuple[Candidate, ...] = ()

    @property
    def estimates(self) -> tuple[tuple[str, PerfReport], ...]:
        """``(algorithm, PerfReport)`` of the ranked ones (their kernels are built and
        estimated on first use)."""
        return tuple((c.algorithm, c.report) for c in self.ranked)

    @property
    def fastest(self) -> str | None:
        """The fastest algorithm that fits (``None`` when none does)."""
        return self.ranked[0].algorithm if self.ranked else None

    @property
    def best(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    @property
    def runner_up(self) -> str | None:
        return self.ranked[1].algorithm if len(self.ranked) > 1 else None

    @property
    def margin(self) -> float:
        if len(self.ranked) < 2:
            return 0.0
        best, second = self.ranked[0].total, self.ranked[1].total
        return second / best - 1.0 if best > 0 else 0.0

    def time(self, algorithm: str) -> float:
        """The estimated seconds of one algorithm (its best form that fits)."""
        for c in self.ranked:
            if c.algorithm == algorithm:
                return c.total
        raise ValueError(f"GemmChoice: {algorithm!r} was not ranked; ranked "
                         f"{[c.algorithm for c in self.ranked]}, too big "
                         f"{[c.algorithm for c in self.too_big]}")

    def why(self, unit: str = "us", scale: float = 1e-6) -> str:
        """Why the fastest beats the runner-up: their compute phases, what their
        exchanges add beyond them, and how they exchange."""
        if len(self.ranked) < 2:
            return ""
        a, b = self.ranked[0], self.ranked[1]
        ea, eb = a.total - a.compute, b.total - b.compute

        def exch(c: Candidate) -> str:
            n = c.exchanges
            algs = sorted(c.algorithms())
            return f"{n} exchange{'s' * (n != 1)}" + (f" ({', '.join(algs)})" if algs else "")

        return (f"why: its compute phases take {a.compute / scale:.1f} {unit} against "
                f"{b.compute / scale:.1f}, and its {exch(a)} add {ea / scale:.1f} {unit} "
                f"beyond them against {eb / scale:.1f} for the {exch(b)} of "
                f"{b.algorithm} (serially {a.serial / scale:.1f} against "
                f"{b.serial / scale:.1f} {unit})")

    def table(self) -> str:
        """The comparison in at most 80 columns."""
        M, N, K = self.shape
        best = self.ranked[0].total if self.ranked else 0.0
        unit, scale = next(((u, s) for u, s in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))
                            if best >= s), ("ns", 1e-9)) if best else ("us", 1e-6)
        cap = self.machine.local_memory_bytes
        lines = [f"GEMM {M}x{N}x{K} {self.dtype} on a {self.mesh}x{self.mesh} mesh, "
                 f"machine {self.machine.name}",
                 f"{'algorithm':<15s}{'tiles':<13s}{'time ' + unit:>11s}{'x best':>7s}"
                 f"{'steps':>7s} {'memory':>10s}  {'most time':<9s}"]
        for c in self.ranked:
            bb = c.by_bound()
            top = max(bb, key=bb.get)
            lines.append(f"{c.algorithm:<15s}{c.shape_label:<13s}{c.total / scale:>11.3f}"
                         f"{c.total / best:>7.2f}{_count(c.supersteps):>7s} "
                         f"{_mib(c.local_bytes):>10s}  {top:<9s}")
        for c in self.too_big:
            lines.append(f"{c.algorithm:<15s}{c.shape_label:<13s}{'too big':>11s}{'':>7s}"
                         f"{'':>7s} {_mib(c.local_bytes):>10s}  (of {_mib(cap)})")
        text = []
        for c in self.not_applicable:
            text += textwrap.wrap(f"{c.algorithm}: does not apply ({c.reason})", 80,
                                  subsequent_indent="  ")
        if not self.ranked:
            text += textwrap.wrap(f"none fits: every algorithm's per-core buffers exceed "
                                  f"the {_mib(cap)} of local memory; try a larger mesh",
                                  80)
        elif self.runner_up is None:
            text.append(f"fastest: {self.fastest} ({self.ranked[0].shape_label}), the only "
                        f"one that fits")
        elif self.margin == 0:
            text.append(f"fastest: {self.fastest} and {self.runner_up} tie")
        else:
            gap = (self.ranked[1].total - best) / scale
            text += textwrap.wrap(
                f"fastest: {self.fastest} with tiles {self.ranked[0].shape_label}, "
                f"{100 * self.margin:.1f}% ({gap:.3f} {unit}) ahead of {self.runner_up} "
                f"({self.ranked[1].shape_label})", 80, subsequent_indent="  ")
            text += textwrap.wrap(self.why(unit, scale), 80, subsequent_indent="  ")
        return "\n".join([line.rstrip() for line in lines] + text)


def _count(n: int) -> str:
    return str(n) if n < 1_000_000 else f"{n / 1e6:.1f}M"


def _mib(n: float) -> str:
    for name, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {name}"
    return f"{int(n)} B"


def _fits(machine: Machine, nbytes: int) -> bool:
    cap = machine.memories.get("local", machine.local_memory_bytes)
    return nbytes <= min(cap, machine.local_memory_bytes)


def _forms(algorithm: str, M: int, N: int, K: int, n: int) -> list[dict]:
    """The forms of an algorithm to try: its tiles, its copies, or itself."""
    a = _algorithm(algorithm)
    if a.copies:
        out = []
        for c in (4, 16, 64):
            try:
                check_copies(M, N, K, n, c)
            except ValueError:
                continue
            out.append(dict(copies=c))
        return out
    if a.tiled:
        return [dict(tiles=t) for t in tile_candidates(algorithm, M, N, K, n)]
    return [dict()]


def _search(algorithm: str, M: int, N: int, K: int, n: int, m: Machine, dtype: str,
            search: bool) -> Candidate:
    forms = _forms(algorithm, M, N, K, n)
    if not search and forms:
        forms = forms[:1]  # the largest tiles (or the fewest copies)
    best: ModelEstimate | None = None
    smallest, smallest_form, tried = None, {}, 0
    for f in forms:
        try:
            need = gemm_local_bytes(algorithm, M, N, K, n, dtype, f.get("tiles"),
                                    f.get("copies"))
        except ValueError:
            need = None  # not modelled: built and estimated below
        if need is not None:
            if smallest is None or need < smallest:
                smallest, smallest_form = need, f
            if not _fits(m, need):
                continue
        if tried >= MAX_TRIES:  # the largest blocks that fit are tried first
            continue
        try:
            e = model_gemm(algorithm, M, N, K, n, m, dtype, **f)
        except ValueError:
            continue
        tried += 1
        if best is None or e.total < best.total:
            best = e
    common = dict(machine=m, shape=(M, N, K, n), dtype=dtype)
    if best is not None:
        return Candidate(algorithm, best.tiles, best.copies, best, best.local_bytes, tried,
                         **common)
    if not forms or smallest is None:
        # a shape the tiled forms do not take: the whole-tile kernel, as built
        if algorithm in ("splitk_comm", "cannon25d_comm"):
            try:
                build_gemm(algorithm, M, N, K, n, dtype)
                why = "no form of it fits the shape"
            except ValueError as err:
                why = str(err).split(": ", 1)[-1]
            return Candidate(algorithm, None, None, None, 0, 0, reason=why, **common)
        try:
            report = estimate_gemm(algorithm, M, N, K, n, m, dtype)
        except ValueError as err:
            return Candidate(algorithm, None, None, None, 0, 0,
                             reason=str(err).split(": ", 1)[-1], **common)
        return Candidate(algorithm, None, None, None, report.work.local_bytes, 1,
                         built=report, **common)
    return Candidate(algorithm, smallest_form.get("tiles"), smallest_form.get("copies"),
                     None, smallest, tried, **common)


def best_form(algorithm: str, M: int, N: int, K: int, mesh: int = 4,
              machine: Any = "generic", dtype: str = "float32") -> Candidate:
    """The fastest form (tiles, copies) of one algorithm whose buffers fit the machine;
    when none fits, its smallest form (``model`` is then ``None``); when the algorithm
    does not apply to the shape, ``reason`` says why.

    >>> best_form("summa_comm", 1024, 1024, 1024, 4, "generic").fits
    True
    """
    return _search(algorithm, M, N, K, mesh, get_machine(machine), dtype, True)


def compare_gemm_algorithms(M: int, N: int | None = None, K: int | None = None,
                            mesh: int = 4, machine: Any = "generic",
                            dtype: str = "float32",
                            algorithms: Sequence[str] = COMPARED,
                            search: bool = True) -> GemmChoice:
    """Estimate each algorithm for ``C = A @ B`` (A: MxK, B: KxN; ``N`` and ``K``
    default to ``M``) on an ``mesh x mesh`` mesh of a machine, each in its fastest form
    whose buffers fit (``search=False``: only the largest tiles), and rank them; an
    algorithm none of whose forms fits is listed apart and never ranked.

    >>> c = compare_gemm_algorithms(512, 512, 8192, mesh=4, machine="wormhole-n300",
    ...                             dtype="bfloat16")
    >>> c.fastest, c.best.fits, [x.algorithm for x in c.too_big]
    ('splitk_comm', True, ['cannon25d_comm', 'ksplit_comm'])
    """
    N = M if N is None else N
    K = M if K is None else K
    if not algorithms:
        raise ValueError("compare_gemm_algorithms: algorithms is empty; choose from "
                         f"{list(COMPARED)}")
    for a in algorithms:
        if not _algorithm(a).comm:
            raise ValueError(f"compare_gemm_algorithms: {a} is a global-view kernel; "
                             f"compare the distributed-memory ones, {list(COMPARED)}")
    m = get_machine(machine)
    if not m.fits((mesh, mesh)):
        raise ValueError(f"compare_gemm_algorithms: a {mesh}x{mesh} mesh does not fit "
                         f"machine {m.name!r} ({'x'.join(map(str, m.mesh_shape))} cores)")
    found = [_search(a, M, N, K, mesh, m, dtype, search) for a in algorithms]
    ranked = sorted((c for c in found if c.fits), key=lambda c: c.total)
    too_big = tuple(c for c in found if not c.fits and c.local_bytes)
    other = tuple(c for c in found if not c.fits and not c.local_bytes)
    return GemmChoice((M, N, K), mesh, dtype, m, tuple(ranked), too_big, other)
