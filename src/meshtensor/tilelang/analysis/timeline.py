"""The estimated timeline of a mesh kernel (:class:`~.perf.PerfReport`) as a Chrome
trace-event file (opens in Perfetto, https://ui.perfetto.dev, and chrome://tracing)
and as a Gantt chart (PNG, matplotlib).

Tracks: one per core (process ``cores``, thread ``core (i, j)``) with, per superstep,
a ``compute`` or ``memory`` slice (the core's compute phase, named by what bounds it on
that core), a ``wait`` slice while the slowest core finishes, and an ``exchange`` slice
(``wait`` for a core that neither sends nor receives in it); and one track (process
``links``) with, per exchange, a slice for its busiest directed link while that link
streams its bytes. Times are microseconds from the kernel's start. Every event has
``name``, ``ph``, ``ts``, ``dur``, ``pid`` and ``tid``; the slices of one track follow
each other without overlap, and a core's slices add up to the model's totals
(:meth:`~.perf.PerfReport.per_core`).
"""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import numpy as np

from .perf import PerfReport

__all__ = ["trace_events", "write_trace", "save_gantt_png", "CORES_PID", "LINKS_PID"]

CORES_PID, LINKS_PID = 1, 2
_US = 1e6
COLORS = {"compute": "#4c72b0", "memory": "#dd8452", "exchange": "#55a868",
          "wait": "#e5e5e5", "link": "#c44e52"}


def _meta(pid: int, tid: int, what: str, name: str) -> dict[str, Any]:
    return {"name": what, "ph": "M", "ts": 0, "dur": 0, "pid": pid, "tid": tid,
            "args": {"name": name}}


def _slice(name: str, t0: float, t1: float, pid: int, tid: int, **args: Any) -> dict:
    """A slice from ``t0`` to ``t1`` seconds: ``ts + dur`` never passes ``t1`` in
    microseconds, not by one rounding, so slices that meet do not overlap."""
    ts, end = t0 * _US, t1 * _US
    dur = end - ts
    while dur > 0 and ts + dur > end:
        dur = math.nextafter(dur, 0.0)
    return {"name": name, "cat": name, "ph": "X", "ts": ts, "dur": dur,
            "pid": pid, "tid": tid, "args": args}


def trace_events(report: PerfReport) -> list[dict[str, Any]]:
    """The trace events of a report (see the module docstring).

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> from meshtensor.tilelang.analysis.perf import estimate_mesh_kernel
    >>> ev = trace_events(estimate_mesh_kernel(build_gemm("cannon_comm", 64, 64, 64)))
    >>> sorted({e["name"] for e in ev if e["ph"] == "X" and e["pid"] == CORES_PID})
    ['compute', 'exchange', 'memory', 'wait']
    """
    mesh = report.work.mesh
    events = [_meta(CORES_PID, 0, "process_name", f"cores ({report.machine.name})"),
              _meta(LINKS_PID, 0, "process_name", "links"),
              _meta(LINKS_PID, 0, "thread_name", "busiest link")]
    events += [_meta(CORES_PID, c, "thread_name", f"core {mesh.multi_index(c)}")
               for c in range(mesh.size)]
    steps = report.steps
    for k, s in enumerate(steps):
        w = s.work
        # one set of boundaries per superstep: slices that meet share their end point
        ex_start = s.start + s.compute
        end = steps[k + 1].start if k + 1 < len(steps) else s.start + s.total
        for c in range(mesh.size):
            busy = max(float(s.arith[c]), float(s.memory[c]))
            info = dict(superstep=w.index, ops=int(sum(v[c] for v in w.ops.values())),
                        arith_us=float(s.arith[c]) * _US, mem_bytes=int(w.mem_bytes[c]),
                        memory_us=float(s.memory[c]) * _US)
            if busy > 0:
                kind = "compute" if s.arith[c] >= s.memory[c] else "memory"
                events.append(_slice(kind, s.start, s.start + busy, CORES_PID, c, **info))
            if s.compute - busy > 0:
                events.append(_slice("wait", s.start + busy, ex_start, CORES_PID, c,
                                     superstep=w.index))
            if s.exchange > 0:
                part = bool(w.active[c])
                events.append(_slice("exchange" if part else "wait", ex_start, end,
                                     CORES_PID, c, superstep=w.index,
                                     statement=w.exchange, sent=int(w.sends[c])))
        if s.link > 0:
            events.append(_slice(w.busiest_link, ex_start, min(ex_start + s.link, end),
                                 LINKS_PID, 0, superstep=w.index, bytes=w.max_link_bytes,
                                 statement=w.exchange))
    return events


def write_trace(report: PerfReport, path: str | pathlib.Path) -> pathlib.Path:
    """Write the trace as JSON (``{"traceEvents": [...]}``) to ``path``; returns it."""
    p = pathlib.Path(path)
    doc = {"traceEvents": trace_events(report), "displayTimeUnit": "ns",
           "otherData": {"kernel": report.work.name, "machine": report.machine.name,
                         "total_us": report.total * _US,
                         "model": "bulk-synchronous supersteps, no overlap"}}
    p.write_text(json.dumps(doc, indent=1))
    return p


def save_gantt_png(report: PerfReport, path: str | pathlib.Path) -> pathlib.Path:
    """A Gantt chart of the trace (one row per core, one for the busiest links) as a
    PNG at ``path`` (needs matplotlib); returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    events = [e for e in trace_events(report) if e["ph"] == "X"]
    mesh = report.work.mesh
    rows = mesh.size + 1
    scale, unit = (1e3, "ms") if report.total * _US >= 1e3 else (1.0, "us")
    fig, ax = plt.subplots(figsize=(11, min(1.2 + 0.32 * rows, 40)))
    for e in events:
        row = e["tid"] if e["pid"] == CORES_PID else mesh.size
        color = COLORS.get(e["name"], COLORS["link"])
        ax.broken_barh([(e["ts"] / scale, e["dur"] / scale)], (row - 0.4, 0.8),
                       facecolors=color, edgecolor="none")
    ax.set_yticks(np.arange(rows))
    ax.set_yticklabels([str(mesh.multi_index(c)) for c in range(mesh.size)] +
                       ["busiest link"], fontsize=7 if rows > 20 else 9)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(f"{report.work.name} on {report.machine.name}: "
                 f"{report.total * _US / scale:.3f} {unit} (bulk-synchronous)")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()],
              loc="upper center", bbox_to_anchor=(0.5, -0.12 if rows < 20 else -0.04),
              ncol=len(COLORS), frameon=False)
    fig.tight_layout()
    p = pathlib.Path(path)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p
