"""``AnalyzeMeshCommunication``: the bytes a mesh kernel moves, per core, per peer, per
hop (XY routing) and per superstep, with per-link loads and an alpha-beta NoC time.

Every ``T.copy`` touching an annotated buffer and every comm op is evaluated over the
points at which it executes (:mod:`..ir.evaluate`) with NumPy: no compilation needed.
Ownership and distances come from :class:`meshtensor.Sharding` and
:mod:`meshtensor.cost`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from tvm import tirx

from ...boxes import clip_boxes, split_by_owner, volume
from ...cost import exchange_time, hops, xy_link_loads
from ...mesh import Mesh
from ...text import DEFAULT_WIDTH, columns, plural, wrap
from ..ir.comm_op import CommOp
from ..ir.evaluate import IterSpace, region_box
from ..ir.kernel import KernelView, execution_keys, executions, runs_per_core
from ..ir.scope import nbytes
from .flows import TM_OPS, comm_flows, tm_executions, tm_phases
from .verify import within_window

__all__ = ["DEFAULT_LINK_BANDWIDTH", "DEFAULT_HOP_LATENCY", "Superstep", "CommReport",
           "analyze_mesh_communication", "AnalyzeMeshCommunication"]

# Assumptions of the NoC time estimate, not measurements: a 1 GHz on-chip network moving
# 32 bytes per cycle on each directed link, one cycle per router hop.
DEFAULT_LINK_BANDWIDTH = 32e9  # bytes per second per directed link
DEFAULT_HOP_LATENCY = 1e-9  # seconds per hop


def _check_rates(link_bandwidth: float, hop_latency: float) -> None:
    if not link_bandwidth > 0:
        raise ValueError(f"link_bandwidth must be > 0 bytes/s, got {link_bandwidth!r}")
    if not hop_latency >= 0:
        raise ValueError(f"hop_latency must be >= 0 s, got {hop_latency!r}")


@dataclass(frozen=True, eq=False)
class Superstep:
    """One execution of one statement by all cores, and what it moves between cores:
    ``statement`` names it (``"comm 0: broadcast As -> As over ('y',)"`` or ``"copy 1:
    A -> As"``), ``execution`` counts its executions from 0, ``nbytes`` and ``flows``
    are the bytes and point-to-point transfers between distinct cores, ``hop_bytes`` the
    bytes per XY-route length, ``link_loads`` the bytes on every directed link
    (:func:`meshtensor.cost.xy_link_loads`: shape ``(ndim, 2, *mesh.shape)``), ``when``
    its program-order key (:func:`~..ir.kernel.execution_keys`): supersteps sorted by
    ``when`` are in the order the kernel runs them. ``phase`` numbers the supersteps of
    one execution of a Tilelang-Mesh op from 0 (what the chip moves in turn: a 2-D
    broadcast's column phase, then its row phase); 0 for every other statement."""

    statement: str
    execution: int
    nbytes: int
    flows: int
    hop_bytes: dict
    link_loads: np.ndarray
    when: tuple = ()
    phase: int = 0

    @property
    def max_hops(self) -> int:
        return max(self.hop_bytes, default=0)

    @property
    def max_link_bytes(self) -> int:
        return int(self.link_loads.max()) if self.link_loads.size else 0

    def time(self, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
             hop_latency: float = DEFAULT_HOP_LATENCY) -> float:
        """Estimated NoC seconds: ``hop_latency * max_hops + max_link_bytes /
        link_bandwidth`` (0 without flows): :func:`meshtensor.cost.exchange_time`, the
        one NoC formula, with no message or barrier costs. See
        :meth:`CommReport.noc_time`."""
        _check_rates(link_bandwidth, hop_latency)
        if not self.flows:
            return 0.0
        return exchange_time(self.max_link_bytes, self.max_hops,
                             link_bandwidth=link_bandwidth, hop_latency=hop_latency)


def _superstep(mesh: Mesh, name: str, execution: int, src, dst, nbytes, when=()
               ) -> Superstep:
    h = hops(mesh, src, dst) if len(src) else np.zeros(0, dtype=np.int64)
    hb = np.bincount(h, weights=nbytes).astype(np.int64) if len(h) else []
    return Superstep(name, execution, int(np.sum(nbytes)), len(src),
                     {int(i): int(v) for i, v in enumerate(hb) if v},
                     xy_link_loads(mesh, src, dst, nbytes), tuple(when))


@dataclass(frozen=True, eq=False)
class CommReport:
    """Bytes each core moves: through its copies of annotated global tensors (locally
    or from/to other cores' shards) and through comm ops.

    One row per (statement, point, owner piece or flow): ``copy`` index (``-1`` for a
    comm op), ``op`` comm-op index (``-1`` for a copy), ``write`` flag (copies), the
    ``core`` that executes the copy or receives the comm op's data, its ``peer`` (the
    owning core of a copied piece, or the comm op's sender; linear ids), ``nbytes``,
    ``step`` (which execution of the statement) and ``phase`` (its
    :attr:`Superstep.phase`). ``supersteps`` lists every execution of a comm op (every
    phase of one, for Tilelang-Mesh's ops), and of a copy with remote bytes, with its
    link loads, in the order the kernel runs them (by :attr:`Superstep.when`).
    """

    mesh: Mesh
    copies: tuple[str, ...]
    copy: np.ndarray
    write: np.ndarray
    core: np.ndarray
    peer: np.ndarray
    nbytes: np.ndarray
    comm_ops: tuple[str, ...] = ()
    op: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    step: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    supersteps: tuple[Superstep, ...] = ()
    phase: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def hops(self) -> np.ndarray:
        return hops(self.mesh, self.core, self.peer) if len(self.core) else self.core

    @property
    def is_comm(self) -> np.ndarray:
        return self.op >= 0

    def _sum(self, mask: np.ndarray, who: np.ndarray | None = None) -> np.ndarray:
        who = self.core if who is None else who
        return np.bincount(who[mask], weights=self.nbytes[mask],
                           minlength=self.mesh.size).astype(np.int64)

    def per_core(self) -> dict[str, np.ndarray]:
        """Per core (linear order): bytes of its copies read and written locally (its
        own shard) and remotely, and bytes it received and sent through comm ops."""
        remote, comm = self.core != self.peer, self.is_comm
        copy = ~comm
        return {"local_read": self._sum(copy & ~remote & ~self.write),
                "remote_read": self._sum(copy & remote & ~self.write),
                "local_write": self._sum(copy & ~remote & self.write),
                "remote_write": self._sum(copy & remote & self.write),
                "comm_received": self._sum(comm),
                "comm_sent": self._sum(comm, self.peer)}

    @property
    def remote_bytes(self) -> int:
        """Bytes moved between distinct cores: remote copy pieces and comm-op flows."""
        return int(self.nbytes[self.core != self.peer].sum())

    @property
    def local_bytes(self) -> int:
        """Bytes of copies inside the executing core's own shards."""
        return int(self.nbytes[self.core == self.peer].sum())

    @property
    def comm_bytes(self) -> int:
        """Bytes received through comm ops."""
        return int(self.nbytes[self.is_comm].sum())

    def by_peer(self, core: Any) -> dict[tuple[int, ...], int]:
        """Bytes a core moves with each other core: its remote reads and writes, and what
        it receives through comm ops."""
        c = self.mesh.linear_index(core)
        mask = (self.core == c) & (self.peer != c)
        sums = np.bincount(self.peer[mask], weights=self.nbytes[mask], minlength=self.mesh.size)
        return {self.mesh.multi_index(int(p)): int(sums[p]) for p in np.flatnonzero(sums)}

    def by_hops(self, core: Any = None) -> dict[int, int]:
        """Bytes per hop distance (0 = local) of the rows of one core or all."""
        mask = np.ones(len(self.core), dtype=bool) if core is None else \
            self.core == self.mesh.linear_index(core)
        h = self.hops[mask]
        sums = np.bincount(h, weights=self.nbytes[mask]).astype(np.int64) if len(h) else []
        return {int(i): int(v) for i, v in enumerate(sums) if v}

    def link_loads(self) -> np.ndarray:
        """Bytes on each directed link over the whole kernel (XY routing), as
        :func:`meshtensor.cost.xy_link_loads`."""
        loads = np.zeros((self.mesh.ndim, 2) + self.mesh.shape, dtype=np.int64)
        for s in self.supersteps:
            loads += s.link_loads
        return loads

    def max_link_bytes(self) -> int:
        """Bytes on the busiest directed link over the whole kernel."""
        loads = self.link_loads()
        return int(loads.max()) if loads.size else 0

    def noc_time(self, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                 hop_latency: float = DEFAULT_HOP_LATENCY) -> float:
        """Estimated NoC seconds under an alpha-beta model: supersteps run one after
        another; in each, every transfer starts together, pays ``hop_latency`` per hop
        of its XY route (cut-through: latency does not grow with size) and the busiest
        link streams its bytes at ``link_bandwidth``; a superstep takes its longest
        route's latency plus its busiest link's bytes over the bandwidth. The defaults
        are assumptions (:data:`DEFAULT_LINK_BANDWIDTH`, :data:`DEFAULT_HOP_LATENCY`),
        not measurements."""
        _check_rates(link_bandwidth, hop_latency)
        return float(sum(s.time(link_bandwidth, hop_latency) for s in self.supersteps))

    def table(self, width: int = DEFAULT_WIDTH) -> str:
        """Per core: bytes its copies read and write in its own shards (local) and in other
        cores' shards (remote), bytes received and sent through comm ops (when the kernel
        has any), and its remote bytes by the length of their XY route (``1 hop`` ...),
        in at most ``width`` columns (wider tables continue in blocks of columns)."""
        pc = self.per_core()
        comm = bool(self.is_comm.any())
        remote = self.core != self.peer
        maxh = int(self.hops[remote].max()) if remote.any() else 0
        keys = ["local_read", "remote_read", "local_write", "remote_write"] + \
            (["comm_received", "comm_sent"] if comm else [])
        heads = ["core", "local rd", "remote rd", "local wr", "remote wr"] + \
            (["comm recv", "comm sent"] if comm else []) + \
            [f"{h} hop" for h in range(1, maxh + 1)]
        rows = []
        for c in list(range(self.mesh.size)) + [None]:
            bh = self.by_hops(c)
            label = "total" if c is None else str(self.mesh.multi_index(c))
            vals = [int(pc[k].sum()) if c is None else int(pc[k][c]) for k in keys]
            rows.append([label] + vals + [bh.get(h, 0) for h in range(1, maxh + 1)])
        return "\n".join(columns(heads, rows, width))

    def superstep_table(self, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                        hop_latency: float = DEFAULT_HOP_LATENCY,
                        width: int = DEFAULT_WIDTH) -> str:
        """One line per superstep, in the order they run: the statement (named in a
        legend above the table), its execution, bytes between cores, transfers, the
        busiest link's bytes, the estimated NoC time and bytes by route length; then
        the totals; in at most ``width`` columns."""
        _check_rates(link_bandwidth, hop_latency)
        names = list(dict.fromkeys(s.statement for s in self.supersteps))
        legend = [line for n in names
                  for line in wrap(n, width, indent=" " * (n.find(": ") + 2))]
        heads = ["step", "statement", "exec", "bytes", "xfers", "max link", "NoC us",
                 "bytes by hops"]
        rows = []
        for i, s in enumerate(self.supersteps):
            hb = ", ".join(f"{h}: {b}" for h, b in sorted(s.hop_bytes.items())) or "-"
            rows.append([i, s.statement.split(": ")[0], s.execution, s.nbytes, s.flows,
                         s.max_link_bytes, f"{s.time(link_bandwidth, hop_latency) * 1e6:.3f}",
                         hb])
        hops_total: dict[int, int] = {}
        for s in self.supersteps:
            for h, b in s.hop_bytes.items():
                hops_total[h] = hops_total.get(h, 0) + b
        # every column's total is its sum, but max link's, which is its largest
        rows.append(["total", "", "", sum(s.nbytes for s in self.supersteps),
                     sum(s.flows for s in self.supersteps),
                     max((s.max_link_bytes for s in self.supersteps), default=0),
                     f"{self.noc_time(link_bandwidth, hop_latency) * 1e6:.3f}",
                     ", ".join(f"{h}: {b}" for h, b in sorted(hops_total.items())) or "-"])
        table = columns(heads, rows, width, key=2, left=(0, 1, 7))
        table += wrap(f"total: sums, but max link: the busiest superstep's. Over all "
                      f"{plural(len(self.supersteps), 'superstep')} the busiest link carries "
                      f"{self.max_link_bytes()} bytes.", width)
        return "\n".join(legend + [""] + table if legend else table)


def _op_name(op: CommOp) -> str:
    if op.src is None:
        return f"comm {op.index}: {op.op}"
    axes = tuple(op.mesh.axis_names[a] for a in op.mesh_axes)
    return f"comm {op.index}: {op.op} {op.src.buffer.name} -> {op.dst.buffer.name} over {axes}"


def _tm_rows(op: CommOp, view: KernelView, space: IterSpace, when: list):
    """Rows and supersteps of a Tilelang-Mesh op: per execution, one superstep per
    phase of what the chip moves (:func:`~.flows.tm_phases`)."""
    cache: dict = {}
    rows, steps = [], []
    for e, key in enumerate(tm_executions(op, space, view.where)):
        if key not in cache:
            phases = tm_phases(op, key)
            names = [_op_name(op) + (f" [{i + 1}/{len(phases)}]" if len(phases) > 1 else "")
                     for i in range(len(phases))]
            cache[key] = [(snd, rcv, nb, _superstep(view.mesh, name, 0, snd, rcv, nb))
                          for name, (snd, rcv, nb) in zip(names, phases)]
        for i, (snd, rcv, nb, st) in enumerate(cache[key]):
            rows.append((rcv, snd, nb, np.full(len(snd), e, dtype=np.int64), i))
            steps.append(Superstep(st.statement, e, st.nbytes, st.flows, st.hop_bytes,
                                   st.link_loads, tuple(when[e]), i))  # phases in order
    return rows, steps


def _comm_rows(op: CommOp, view: KernelView):
    """Rows ``(receiver, sender, nbytes, execution, phase)`` and the supersteps of one
    comm op."""
    mesh, where = view.mesh, view.where
    space = view.space(op)
    runs = runs_per_core(space, mesh.size, op.name if op.op in TM_OPS else _op_name(op), where)
    when = execution_keys(space, op.order, mesh.size).tolist()
    if op.op in TM_OPS:
        return _tm_rows(op, view, space, when)
    ex = executions(space.core, mesh.size)
    if op.root is not None and runs:
        try:
            vals = np.stack([space.value(r) for r in op.root], axis=1)
        except ValueError as err:
            raise ValueError(f"{where}: cannot evaluate the root of {_op_name(op)} "
                             f"({err})") from None
        roots = np.zeros((runs, len(op.root)), dtype=np.int64)
        roots[ex] = vals
        if not np.array_equal(roots[ex], vals):
            raise ValueError(f"{where}: the root of {_op_name(op)} differs between cores in "
                             f"one execution; a root may use loops, not the core")
        keys = [tuple(r) for r in roots.tolist()]
    else:
        keys = [None] * runs
    cache: dict = {}
    rows, steps = [], []
    for e, key in enumerate(keys):
        if key not in cache:
            snd, rcv, nb = comm_flows(op, None if key is None else list(key))
            cache[key] = (snd, rcv, nb, _superstep(mesh, _op_name(op), 0, snd, rcv, nb))
        snd, rcv, nb, st = cache[key]
        rows.append((rcv, snd, nb, np.full(len(snd), e, dtype=np.int64), 0))
        steps.append(Superstep(st.statement, e, st.nbytes, st.flows, st.hop_bytes,
                               st.link_loads, tuple(when[e])))
    return rows, steps


def analyze_mesh_communication(func: Any) -> CommReport | None:
    """The :class:`CommReport` of a kernel (a PrimFunc, IRModule, ``JITKernel`` or
    ``MeshKernel``), or ``None`` when it has neither annotations nor comm ops.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> r = analyze_mesh_communication(build_gemm("summa_comm", 64, 64, 64))
    >>> r.comm_ops[0], r.comm_bytes  # 2 n^2 (n - 1) tiles of 16 x 16 float32 on 4 x 4
    ("comm 0: broadcast Ao -> Ar over ('y',)", 98304)
    """
    where = "AnalyzeMeshCommunication"
    view = KernelView.of(func, where)
    if view.mesh is None:
        return None
    mesh, ops, copies = view.mesh, view.ops, view.copies
    cols: dict[str, list] = {k: [] for k in
                             ("copy", "op", "write", "core", "peer", "nbytes", "step", "phase")}
    steps: list[Superstep] = []
    names = [f"{c.src.buffer.name} -> {c.dst.buffer.name}" for c in copies]

    def add(copy, op, write, core, peer, nbytes, step, phase=0):
        for k, v in zip(cols, (copy, op, write, core, peer, nbytes, step, phase)):
            cols[k].append(np.broadcast_to(v, len(core)))

    remote_by_copy: dict[int, list] = {}
    when_of: dict[int, list] = {}
    for ci, space, region, write, e in view.annotated_sides():
        when_of[ci] = execution_keys(space, copies[ci].order, mesh.size).tolist()
        shape = e.static_shape()
        if shape is None:
            raise ValueError(f"{where}: buffer {e.name!r} has a symbolic shape "
                             f"{e.global_shape}; analyse a specialised kernel")
        lo, hi = region_box(region, space, where)
        lo, hi = clip_boxes(lo, hi, shape)  # guarded copies touch only in-tensor cells
        owner, recv, plo, phi, point = split_by_owner(e.sharding, shape, space.core, lo, hi)
        if not write:  # a read inside the reader's halo window is its own data
            owner = np.where(within_window(e, shape, space.core, lo, hi)[point], recv, owner)
        nb = nbytes(region.buffer.dtype, volume(plo, phi))
        ex = executions(space.core, mesh.size)[point]
        add(ci, -1, write, recv, owner, nb, ex)
        far = owner != recv
        snd, rcv = (recv, owner) if write else (owner, recv)
        remote_by_copy.setdefault(ci, []).append((snd[far], rcv[far], nb[far], ex[far]))
    for ci in sorted(remote_by_copy):
        snd, rcv, nb, ex = (np.concatenate(a) for a in zip(*remote_by_copy[ci]))
        for e in np.unique(ex):
            m = ex == e
            steps.append(_superstep(mesh, f"copy {ci}: {names[ci]}", int(e), snd[m], rcv[m],
                                    nb[m], when_of[ci][int(e)]))
    for op in ops:
        rows, op_steps = _comm_rows(op, view)
        for rcv, snd, nb, ex, phase in rows:
            add(-1, op.index, False, rcv, snd, nb, ex, phase)
        steps.extend(op_steps)
    steps.sort(key=lambda st: st.when)  # the order the kernel runs them
    arr = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)) for k, v in cols.items()}
    return CommReport(mesh, tuple(names), arr["copy"].astype(np.int64),
                      arr["write"].astype(bool), arr["core"].astype(np.int64),
                      arr["peer"].astype(np.int64), arr["nbytes"].astype(np.int64),
                      comm_ops=tuple(_op_name(o) for o in ops), op=arr["op"].astype(np.int64),
                      step=arr["step"].astype(np.int64), supersteps=tuple(steps),
                      phase=arr["phase"].astype(np.int64))


def AnalyzeMeshCommunication(on_report: Callable[[CommReport], None] | None = None):
    """A ``prim_func_pass`` that runs :func:`analyze_mesh_communication`.

    Reads ``mesh_tensor_info`` and the comm ops; hands the :class:`CommReport` to
    ``on_report`` and adds the attribute ``mesh_communication`` (``local_bytes``,
    ``remote_bytes``, ``comm_bytes``, ``max_link_bytes``) to the function. A function
    with neither passes through unchanged.
    """

    def transform(func, mod, ctx):
        report = analyze_mesh_communication(func)
        if report is None:
            return func
        if on_report is not None:
            on_report(report)
        return func.with_attr("mesh_communication", {
            "local_bytes": report.local_bytes, "remote_bytes": report.remote_bytes,
            "comm_bytes": report.comm_bytes, "max_link_bytes": report.max_link_bytes()})

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.AnalyzeMeshCommunication")
