"""The cheapest distributed-memory GEMM for a shape on a machine: estimate SUMMA,
Cannon and K-split with the performance model (``estimate_mesh_kernel``, which reads
the kernels' TIR; nothing is compiled) and name the fastest with its margin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...machines import Machine, get_machine
from ..analysis.perf import PerfReport, estimate_mesh_kernel
from .gemm import COMM_ALGORITHMS, build_gemm

__all__ = ["GemmChoice", "compare_gemm_algorithms", "estimate_gemm"]


def estimate_gemm(algorithm: str, M: int, N: int, K: int, mesh: int = 4,
                  machine: Any = "generic", dtype: str = "float32") -> PerfReport:
    """The :class:`PerfReport` of one built-in GEMM (:func:`build_gemm`) on a machine.

    >>> r = estimate_gemm("cannon_comm", 256, 256, 256, mesh=4, machine="wormhole-n300")
    >>> r.machine.name, len(r.steps)
    ('wormhole-n300', 9)
    """
    return estimate_mesh_kernel(build_gemm(algorithm, M, N, K, mesh, dtype), machine)


@dataclass(frozen=True, eq=False)
class GemmChoice:
    """Estimates of several GEMM algorithms for one shape on one machine, fastest first:
    ``estimates`` is a tuple of ``(algorithm, PerfReport)``. ``margin`` is how much
    longer the runner-up takes, relative to the fastest (0.25: 25% longer)."""

    shape: tuple[int, int, int]
    mesh: int
    dtype: str
    machine: Machine
    estimates: tuple[tuple[str, PerfReport], ...]

    @property
    def fastest(self) -> str:
        return self.estimates[0][0]

    @property
    def runner_up(self) -> str | None:
        return self.estimates[1][0] if len(self.estimates) > 1 else None

    @property
    def margin(self) -> float:
        if len(self.estimates) < 2:
            return 0.0
        best, second = self.estimates[0][1].total, self.estimates[1][1].total
        return second / best - 1.0 if best > 0 else 0.0

    def time(self, algorithm: str) -> float:
        """The estimated seconds of one algorithm."""
        for a, r in self.estimates:
            if a == algorithm:
                return r.total
        raise ValueError(f"GemmChoice: {algorithm!r} was not estimated; estimated "
                         f"{[a for a, _ in self.estimates]}")

    def table(self) -> str:
        """The comparison in at most 80 columns."""
        M, N, K = self.shape
        best = self.estimates[0][1].total
        unit, scale = next(((u, s) for u, s in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))
                            if best >= s), ("ns", 1e-9))
        lines = [f"GEMM {M}x{N}x{K} {self.dtype} on a {self.mesh}x{self.mesh} mesh, "
                 f"machine {self.machine.name}",
                 f"{'algorithm':<12s} {'time ' + unit:>11s} {'x fastest':>9s} "
                 f"{'steps':>5s}  {'most time':<9s} {'local mem':<9s}"]
        for a, r in self.estimates:
            bb = r.by_bound()
            top = max(bb, key=bb.get)
            lines.append(f"{a:<12s} {r.total / scale:>11.3f} {r.total / best:>9.2f} "
                         f"{len(r.steps):>5d}  {top:<9s} "
                         f"{'fits' if r.fits_local_memory else 'too big':<9s}")
        if self.runner_up is not None and self.margin == 0:
            lines.append(f"fastest: {self.fastest} and {self.runner_up} tie")
        elif self.runner_up is not None:
            gap = (self.estimates[1][1].total - best) / scale
            lines.append(f"fastest: {self.fastest}, {100 * self.margin:.1f}% ({gap:.3f} "
                         f"{unit}) ahead of {self.runner_up}")
        return "\n".join(line.rstrip() for line in lines)


def compare_gemm_algorithms(M: int, N: int | None = None, K: int | None = None,
                            mesh: int = 4, machine: Any = "generic",
                            dtype: str = "float32",
                            algorithms: Sequence[str] = COMM_ALGORITHMS) -> GemmChoice:
    """Estimate each algorithm for ``C = A @ B`` (A: MxK, B: KxN; ``N`` and ``K``
    default to ``M``) on an ``mesh x mesh`` mesh of a machine and rank them.

    >>> c = compare_gemm_algorithms(512, mesh=4, machine="generic")
    >>> c.fastest, round(c.margin, 3) >= 0, [a for a, _ in c.estimates][0] == c.fastest
    ('ksplit_comm', True, True)
    """
    N = M if N is None else N
    K = M if K is None else K
    if not algorithms:
        raise ValueError("compare_gemm_algorithms: algorithms is empty; choose from "
                         f"{list(COMM_ALGORITHMS)}")
    m = get_machine(machine)
    est = [(a, estimate_gemm(a, M, N, K, mesh, m, dtype)) for a in algorithms]
    est.sort(key=lambda ar: ar[1].total)
    return GemmChoice((M, N, K), mesh, dtype, m, tuple(est))
