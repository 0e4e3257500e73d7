"""The estimated timeline of a mesh kernel (:class:`~.perf.PerfReport`) as a Chrome
trace-event file (opens in Perfetto, https://ui.perfetto.dev, and chrome://tracing)
and as a Gantt chart (PNG, matplotlib).

The timeline is the report's: the overlapped schedule on a machine that moves data
beside compute, the serial one otherwise. Tracks:

- process ``cores``: one thread per core (``core (i, j)``), its compute engine: per
  superstep a ``compute`` or ``memory`` slice (the core's compute phase, named by what
  bounds it on that core), and ``wait`` slices for the rest of the timeline;
- process ``network``: one thread per comm op (``comm 0: broadcast As0 -> Ar0``, so a
  kernel's A and B exchanges lie on tracks of their own), one slice per execution
  while it runs, named by the algorithm that runs it, with its bytes, its busiest
  direct link and the cores that take part;
- superstep boundaries: instant events (``ph`` ``"i"``) at each compute phase's start,
  and, when the kernel's buffers do not fit the machine, one ``DOES NOT FIT`` event.

Times are microseconds from the kernel's start. Every event has ``name``, ``ph``,
``ts``, ``dur``, ``pid`` and ``tid``; the slices of one track follow each other without
overlap; a core's ``compute`` and ``memory`` slices add up to its busy time
(:meth:`~.perf.PerfReport.per_core`) and its slices to the timeline's end.
"""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import numpy as np

from .perf import PerfReport

__all__ = ["trace_events", "write_trace", "save_gantt_png", "CORES_PID", "NETWORK_PID"]

CORES_PID, NETWORK_PID = 1, 2
_US = 1e6
COLORS = {"compute": "#4c72b0", "memory": "#dd8452", "wait": "#e5e5e5"}
# one colour per comm op on the network rows
EXCHANGE_COLORS = ("#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
                   "#ccb974", "#64b5cd")


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


def _instant(name: str, t: float, **args: Any) -> dict:
    return {"name": name, "cat": "superstep", "ph": "i", "s": "g", "ts": t * _US,
            "dur": 0, "pid": CORES_PID, "tid": 0, "args": args}


def _op_names(report: PerfReport) -> dict[int, str]:
    names: dict[int, str] = {}
    for s in report.steps:
        if s.work.has_exchange:
            names.setdefault(s.work.comm_op, s.work.exchange)
    return dict(sorted(names.items()))


def _overflow(report: PerfReport) -> str:
    over = [u for u in report.memory() if not u.fits]
    return "; ".join(f"{u.name} {u.used} B of {u.capacity} B" for u in over)


def trace_events(report: PerfReport) -> list[dict[str, Any]]:
    """The trace events of a report (see the module docstring).

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> from meshtensor.tilelang.analysis.perf import estimate_mesh_kernel
    >>> ev = trace_events(estimate_mesh_kernel(build_gemm("cannon_comm", 64, 64, 64)))
    >>> sorted({e["name"] for e in ev if e["ph"] == "X" and e["pid"] == CORES_PID})
    ['compute', 'memory', 'wait']
    >>> sorted({e["name"] for e in ev if e["ph"] == "X" and e["pid"] == NETWORK_PID})
    ['direct']
    """
    mesh = report.work.mesh
    end = report.timeline_end
    events = [_meta(CORES_PID, 0, "process_name", f"cores ({report.machine.name})"),
              _meta(NETWORK_PID, 0, "process_name", "network")]
    events += [_meta(CORES_PID, c, "thread_name", f"core {mesh.multi_index(c)}")
               for c in range(mesh.size)]
    events += [_meta(NETWORK_PID, i, "thread_name", name)
               for i, name in _op_names(report).items()]
    over = _overflow(report)
    if over:
        events.append(_instant(f"DOES NOT FIT: {over}", 0.0))
    for s in report.steps:
        events.append(_instant(f"superstep {s.work.index}", s.start,
                               bound=s.bound, exchange=s.work.exchange))
    for c in range(mesh.size):
        t = 0.0  # the core's track is filled up to here
        for s in report.steps:
            w = s.work
            busy = max(float(s.arith[c]), float(s.memory[c]))
            if busy <= 0:
                continue
            if s.start > t:
                events.append(_slice("wait", t, s.start, CORES_PID, c))
            kind = "compute" if s.arith[c] >= s.memory[c] else "memory"
            info = dict(superstep=w.index, ops=int(sum(v[c] for v in w.ops.values())),
                        arith_us=float(s.arith[c]) * _US, mem_bytes=int(w.mem_bytes[c]),
                        memory_us=float(s.memory[c]) * _US)
            events.append(_slice(kind, s.start, s.start + busy, CORES_PID, c, **info))
            t = s.start + busy
        if end > t:
            events.append(_slice("wait", t, end, CORES_PID, c))
    for s in report.steps:
        w = s.work
        if not w.has_exchange or s.exchange <= 0:
            continue
        events.append(_slice(s.algorithm.split("/")[0], s.exchange_start,
                             s.exchange_start + s.exchange, NETWORK_PID, w.comm_op,
                             superstep=w.index, statement=w.exchange,
                             algorithm=s.algorithm, bytes=w.exchange_bytes,
                             busiest_link=w.busiest_link, link_bytes=s.link_bytes,
                             cores=int(np.count_nonzero(w.active)),
                             stream_us=s.link * _US, latency_us=s.latency * _US))
    return events


def write_trace(report: PerfReport, path: str | pathlib.Path) -> pathlib.Path:
    """Write the trace as JSON (``{"traceEvents": [...]}``) to ``path``; returns it."""
    p = pathlib.Path(path)
    m = report.machine
    model = ("overlapped: exchanges run beside the compute that does not need them"
             if m.overlap > 0 else "bulk-synchronous supersteps, no overlap")
    doc = {"traceEvents": trace_events(report), "displayTimeUnit": "ns",
           "otherData": {"kernel": report.work.name, "machine": m.name,
                         "total_us": report.total * _US, "serial_us": report.serial * _US,
                         "overlapped_us": report.overlapped * _US, "model": model,
                         "memory": {u.name: [u.used, u.capacity] for u in report.memory()},
                         "fits": report.fits_local_memory}}
    p.write_text(json.dumps(doc, indent=1))
    return p


def save_gantt_png(report: PerfReport, path: str | pathlib.Path) -> pathlib.Path:
    """A Gantt chart of the trace (one row per core's compute engine, one per comm op
    on the network) as a PNG at ``path`` (needs matplotlib): supersteps are marked by
    dotted lines (up to 200 of them), a phase too short to see is drawn at the width
    of one pixel column, and a memory overflow is flagged in red; returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    events = trace_events(report)
    mesh = report.work.mesh
    ops = _op_names(report)
    rows = mesh.size + len(ops)
    end_us = max(report.timeline_end * _US, 1e-12)
    scale, unit = (1e3, "ms") if end_us >= 1e3 else (1.0, "us")
    fig, ax = plt.subplots(figsize=(11, min(1.6 + 0.32 * rows, 40)))
    least = end_us / scale / 1000  # narrower phases would vanish: draw them this wide
    op_row = {op: mesh.size + i for i, op in enumerate(ops)}
    op_color = {op: EXCHANGE_COLORS[i % len(EXCHANGE_COLORS)] for i, op in enumerate(ops)}
    for e in events:
        if e["ph"] != "X":
            continue
        if e["pid"] == CORES_PID:
            row, color = e["tid"], COLORS[e["name"]]
        else:
            row, color = op_row[e["tid"]], op_color[e["tid"]]
        width = max(e["dur"] / scale, least if e["name"] != "wait" else 0.0)
        ax.broken_barh([(e["ts"] / scale, width)], (row - 0.4, 0.8),
                       facecolors=color, edgecolor="none")
    starts = [s.start * _US / scale for s in report.steps]
    if len(starts) <= 200:
        for x in starts[1:]:
            ax.axvline(x, color="#999999", linestyle=":", linewidth=0.6, zorder=0)
    ax.set_yticks(np.arange(rows))
    ax.set_yticklabels([str(mesh.multi_index(c)) for c in range(mesh.size)] +
                       [_short(n) for n in ops.values()], fontsize=7 if rows > 20 else 9)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit}); dotted lines: superstep starts")
    m = report.machine
    how = "overlapped" if m.overlap > 0 else "bulk-synchronous"
    ax.set_title(f"{report.work.name} on {m.name}: {report.total * _US / scale:.3f} {unit} "
                 f"({how}; serial {report.serial * _US / scale:.3f})")
    over = _overflow(report)
    if over:
        ax.text(0.5, 1.08, f"DOES NOT FIT the machine's memory: {over}",
                transform=ax.transAxes, ha="center", color="#c00000", fontsize=10,
                fontweight="bold")
    handles = [Patch(color=c, label=k) for k, c in COLORS.items()]
    handles += [Patch(color=op_color[op], label=_short(n)) for op, n in ops.items()][:6]
    ax.legend(handles=handles, loc="upper center",
              bbox_to_anchor=(0.5, -0.16 if rows < 20 else -0.05),
              ncol=min(len(handles), 5), frameon=False, fontsize=8)
    fig.tight_layout()
    p = pathlib.Path(path)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def _short(statement: str) -> str:
    """``"comm 0: broadcast As0 -> Ar0 over ('y',)"`` -> ``"comm0 broadcast As0"``."""
    head, _, rest = statement.partition(": ")
    return f"{head.replace(' ', '')} {' '.join(rest.split(' ')[:2])}".strip()
