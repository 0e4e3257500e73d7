"""``calibrate``: fit a machine's numbers to measured runs of the built-in GEMMs.

Each run (:class:`~meshtensor.measurements.Measurement`: kernel, shape, mesh, element
type, tiles, measured seconds) is estimated by the performance model (the kernels'
structure by formula, :func:`~.gemm_model.model_gemm`, equal to the model on the
built kernel; shapes it does not describe are built and counted once), on a machine
whose chosen numbers vary. A Levenberg-Marquardt fit in NumPy minimises the runs'
relative errors (``model / measured - 1``) over the logarithms of the positive
numbers and over ``overlap`` kept in [0, 1]. The numbers fitted by default
(:data:`DEFAULT_FIT`): the FLOP/s (one factor on every element type's), the memory
bandwidth per core, the link bandwidth, the barrier latency and the overlap; others
(``hop_latency``, ``message_overhead``, ``mem_bandwidth_total``,
``injection_bandwidth``, ``multicast_bandwidth``) on request. Every number not fitted
keeps the starting machine's value.

A number the runs do not constrain (no run is bound by it) keeps its starting value and
is reported as such: fit it from runs that it bounds.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...machines import Machine, get_machine
from ...measurements import DEFAULT_FIT, FITTABLE, Measurement
from ..analysis.perf import estimate_mesh_kernel
from .gemm import GemmTiles, build_gemm
from .gemm_model import model_gemm

__all__ = ["FITTABLE", "DEFAULT_FIT", "Calibration", "calibrate", "model_time"]

_UNITS = {"flops": ("x", 1.0), "mem_bandwidth": ("GB/s", 1e9),
          "link_bandwidth": ("GB/s", 1e9), "barrier_latency": ("ns", 1e-9),
          "overlap": ("", 1.0), "hop_latency": ("ns", 1e-9), "message_overhead": ("ns", 1e-9),
          "mem_bandwidth_total": ("GB/s", 1e9), "injection_bandwidth": ("GB/s", 1e9),
          "multicast_bandwidth": ("GB/s", 1e9)}


def _apply(base: Machine, names: Sequence[str], values: np.ndarray) -> Machine:
    changes: dict[str, Any] = {}
    for name, v in zip(names, values):
        if name == "flops":
            changes["flops_per_s"] = {d: r * float(v) for d, r in base.flops_per_s.items()}
        else:
            changes[name] = float(v)
    return dataclasses.replace(base, **changes)


def _current(base: Machine, name: str) -> float:
    if name == "flops":
        return 1.0
    v = getattr(base, name)
    if v is None:
        if name == "injection_bandwidth":
            return base.link_bandwidth
        raise ValueError(f"calibrate: machine {base.name!r} has no {name} to start from; "
                         f"give it one in the machine file")
    return float(v)


def model_time(run: Measurement, machine: Machine, counted: dict | None = None) -> float:
    """The model's seconds for a run on a machine (the kernels' structure by formula;
    a shape it does not describe: the built kernel's counts, cached in ``counted``)."""
    M, N, K = run.shape
    n = run.mesh or min(machine.mesh_shape)
    tiles = GemmTiles(*run.tiles) if run.tiles else None
    # the whole-tile SUMMA and Cannon (no tiles given) are counted on their kernel
    if tiles is not None or run.kernel not in ("summa_comm", "cannon_comm"):
        try:
            return model_gemm(run.kernel, M, N, K, n, machine, run.dtype, tiles,
                              run.copies).total
        except ValueError:
            pass
    key = (run.kernel, run.shape, n, run.dtype, run.tiles, run.copies)
    counted = {} if counted is None else counted
    if key not in counted:
        from ..analysis.perf import count_mesh_kernel
        counted[key] = count_mesh_kernel(build_gemm(run.kernel, M, N, K, n, run.dtype,
                                                    tiles=tiles, copies=run.copies))
    return estimate_mesh_kernel(counted[key], machine).total


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found: the fitted ``machine``, per fitted number its
    starting and fitted values (``fitted``: ``{name: (start, value)}``), the numbers the
    runs did not constrain (``unconstrained``, left at their start), and per run its
    measured and modelled seconds (``residuals``: ``(run, measured, model)``)."""

    machine: Machine
    fitted: dict[str, tuple[float, float]]
    unconstrained: tuple[str, ...]
    residuals: tuple[tuple[Measurement, float, float], ...]

    @property
    def rms(self) -> float:
        """The root mean square of the relative errors."""
        e = [m / t - 1 for _, t, m in self.residuals]
        return float(np.sqrt(np.mean(np.square(e)))) if e else 0.0

    def table(self) -> str:
        """The fit and the residuals, in at most 80 columns."""
        lines = [f"machine {self.machine.name}: {len(self.residuals)} runs, RMS error "
                 f"{100 * self.rms:.2f}%",
                 f"{'number':<22s}{'start':>14s}{'fitted':>14s}  unit"]
        for name, (a, b) in self.fitted.items():
            unit, scale = _UNITS[name]
            note = "  (not constrained)" if name in self.unconstrained else ""
            lines.append(f"{name:<22s}{a / scale:>14.6g}{b / scale:>14.6g}  {unit}{note}")
        lines.append(f"{'row':>4s} {'kernel':<15s}{'shape':<16s}{'measured us':>13s}"
                     f"{'model us':>12s}{'error':>9s}")
        for run, t, m in self.residuals:
            shape = "x".join(map(str, run.shape))
            lines.append(f"{run.row:>4d} {run.kernel:<15s}{shape[:15]:<16s}{t * 1e6:>13.3f}"
                         f"{m * 1e6:>12.3f}{100 * (m / t - 1):>8.2f}%")
        return "\n".join(lines)


def _lm(f: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, lo: np.ndarray,
        hi: np.ndarray, iters: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Levenberg-Marquardt on residuals ``f(x)`` within box bounds; returns ``x``, the
    residuals and the Jacobian at ``x``."""
    x = np.clip(x0.astype(float), lo, hi)
    r = f(x)
    cost = float(r @ r)
    lam = 1e-3
    J = np.zeros((len(r), len(x)))
    for _ in range(iters):
        for j in range(len(x)):
            h = 1e-6 * max(1.0, abs(x[j]))
            xp = x.copy()
            xp[j] = xp[j] + h if xp[j] + h <= hi[j] else xp[j] - h
            J[:, j] = (f(xp) - r) / (xp[j] - x[j])
        A, g = J.T @ J, J.T @ r
        improved = False
        while lam < 1e12:
            step = np.linalg.solve(A + lam * (np.diag(np.diag(A)) + 1e-12 * np.eye(len(x))),
                                   -g)
            xn = np.clip(x + step, lo, hi)
            rn = f(xn)
            cn = float(rn @ rn)
            if cn < cost:
                improved = cost - cn > 1e-15 * max(cost, 1e-30)
                x, r, cost, lam = xn, rn, cn, lam / 3
                break
            lam *= 4
        if not improved:
            break
    return x, r, J


def calibrate(runs: Sequence[Measurement], fit: Sequence[str] = DEFAULT_FIT,
              machine: Any = None, name: str | None = None) -> Calibration:
    """Fit the numbers ``fit`` (:data:`FITTABLE`) of the machine the runs name (or
    ``machine``) to the runs' measured times. ``ValueError`` when the runs name several
    machines, a number is unknown, or there are fewer runs than numbers to fit.

    >>> from meshtensor.measurements import Measurement
    >>> true = get_machine("generic").replace(link_bandwidth=20e9)
    >>> runs = [Measurement(i + 1, "cannon_comm", (s, s, s), "generic",
    ...                     model_time(Measurement(0, "cannon_comm", (s, s, s), "generic",
    ...                                            1.0, 4), true), 4)
    ...         for i, s in enumerate((64, 128, 256, 512))]
    >>> c = calibrate(runs, fit=["link_bandwidth"])
    >>> round(c.machine.link_bandwidth / 1e9, 3)
    20.0
    """
    if not runs:
        raise ValueError("calibrate: no runs")
    names = list(dict.fromkeys(fit))
    bad = [x for x in names if x not in FITTABLE]
    if bad:
        raise ValueError(f"calibrate: cannot fit {bad[0]!r}; numbers it fits: "
                         f"{', '.join(FITTABLE)}")
    if machine is None:
        machines = sorted({r.machine for r in runs})
        if len(machines) > 1:
            raise ValueError(f"calibrate: the runs name machines {', '.join(machines)}; "
                             f"calibrate one machine at a time")
        machine = machines[0]
    base = get_machine(machine)
    if len(runs) < len(names):
        raise ValueError(f"calibrate: {len(runs)} runs cannot fit {len(names)} numbers "
                         f"({', '.join(names)}); measure more runs")
    start = np.array([_current(base, x) for x in names])
    is_overlap = np.array([x == "overlap" for x in names])
    # the search runs on logarithms of the positive numbers, on overlap itself
    to_x = np.where(is_overlap, start, np.log(np.maximum(start, 1e-300)))
    lo = np.where(is_overlap, 0.0, to_x - math.log(1e4))
    hi = np.where(is_overlap, 1.0, to_x + math.log(1e4))
    measured = np.array([r.time for r in runs])
    counted: dict = {}

    def values(x: np.ndarray) -> np.ndarray:
        return np.where(is_overlap, x, np.exp(x))

    def residuals(x: np.ndarray) -> np.ndarray:
        m = _apply(base, names, values(x))
        return np.array([model_time(r, m, counted) for r in runs]) / measured - 1.0

    x, r, J = _lm(residuals, to_x, lo, hi)
    fitted_values = values(x)
    # a number whose column of the Jacobian is zero is not constrained by any run
    free = np.array([not np.any(np.abs(J[:, j]) > 1e-9) for j in range(len(names))])
    final_values = np.where(free, start, fitted_values)
    result = _apply(base, names, final_values)
    rms = float(np.sqrt(np.mean(np.square(r))))
    srcs = dict(result.sources)
    for n_, f_ in zip(names, free):
        if not f_:
            srcs["flops_per_s" if n_ == "flops" else n_] = (
                f"measured: fitted by meshtensor calibrate to {len(runs)} runs (RMS error "
                f"{100 * rms:.2f}%)")
    result = dataclasses.replace(result, name=name or f"{base.name}-calibrated",
                                 description=f"{base.name} fitted to {len(runs)} measured "
                                             f"runs", sources=srcs)
    final = [(run, run.time, model_time(run, result, counted)) for run in runs]
    return Calibration(result, {n_: (float(a), float(b))
                                for n_, a, b in zip(names, start, final_values)},
                       tuple(n_ for n_, f_ in zip(names, free) if f_), tuple(final))
