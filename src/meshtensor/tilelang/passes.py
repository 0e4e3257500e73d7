"""TIR passes over mesh kernels: copy verification and communication analysis.

Both evaluate every ``T.copy`` touching an annotated buffer, and every comm op of
:mod:`.comm`, over the points at which it executes (the launch grid, the enclosing
loops with ragged bounds, lets, and ``if`` conditions; :mod:`.evaluate`) with NumPy,
from the TIR expressions of its offsets: no compilation needed. The launch grid gives
the core that executes each program: ``T.Kernel(nx, ny)`` on an ``nx x ny`` mesh puts
block ``(bx, by)`` on core ``(x=bx, y=by)``; a 1-D launch of ``mesh.size`` blocks uses
the linear core id. Ownership and distances come from :class:`meshtensor.Sharding` and
:mod:`meshtensor.cost` (XY routing).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
from tvm import tirx

from ..boxes import clip_boxes, split_by_owner, volume
from ..cost import hops, xy_link_loads
from ..mesh import Mesh
from .comm import CommOp, comm_flows, find_comm_ops
from .comm import _prim_func as _comm_prim_func
from .copies import CopyCall, direct_accesses, find_copies
from .evaluate import IterSpace, eval_np, iteration_space, region_box  # noqa: F401  (re-exported)
from .frontend import MeshTensorEntry, _prim_func_of, read_mesh_tensor_info

# Assumptions of the NoC time estimate, not measurements: a 1 GHz on-chip network moving
# 32 bytes per cycle on each directed link, one cycle per router hop.
DEFAULT_LINK_BANDWIDTH = 32e9  # bytes per second per directed link
DEFAULT_HOP_LATENCY = 1e-9  # seconds per hop


def _sides(c: CopyCall, info: dict[str, MeshTensorEntry]):
    for region, write in ((c.src, False), (c.dst, True)):
        e = info.get(region.buffer.name)
        if e is not None and (e.buffer is None or e.buffer.same_as(region.buffer)
                              or e.buffer.data.same_as(region.buffer.data)):
            yield region, write, e


def _mesh_of(meshes: set, where: str) -> Mesh:
    if len(meshes) != 1:
        raise ValueError(f"{where}: annotated buffers and comm ops live on different meshes "
                         f"{sorted(str(m) for m in meshes)}")
    return meshes.pop()


def _annotated_sides(pf: tirx.PrimFunc, info: dict[str, MeshTensorEntry], mesh: Mesh,
                     where: str):
    """For every copy side that touches an annotated buffer: ``(copy index, space,
    region, write, entry)``."""
    for ci, c in enumerate(find_copies(pf)):
        found = list(_sides(c, info))
        if found:
            space = iteration_space(c, mesh, where)
            for region, write, e in found:
                yield ci, space, region, write, e


def _kernel_func(func: Any) -> tirx.PrimFunc:
    """The PrimFunc of a PrimFunc, ``JITKernel``, ``MeshKernel`` (its source) or module
    (the function with annotations, else the one with comm ops)."""
    try:
        return _prim_func_of(func)
    except ValueError:
        return _comm_prim_func(func)


def _executions(core: np.ndarray, size: int) -> np.ndarray:
    """Per point, how many earlier points the same core executed (program order: the
    points of an :class:`IterSpace` are in loop order, launch loops outermost)."""
    order = np.argsort(core, kind="stable")
    counts = np.bincount(core, minlength=size)
    first = np.cumsum(counts) - counts
    e = np.empty(len(core), dtype=np.int64)
    e[order] = np.arange(len(core)) - first[core[order]]
    return e


# -- verification --------------------------------------------------------------------------
@dataclass(frozen=True)
class MeshCopyIssue:
    """One problem found by :func:`verify_mesh_tensors` (the first offending program)."""

    buffer: str
    copy: int
    kind: Literal["misaligned", "outside", "crosses_cores", "remote", "direct_access"]
    program: tuple[int, ...]
    block: tuple[int, ...]
    cores: tuple[tuple[int, ...], ...]
    count: int
    message: str


def verify_mesh_tensors(func: Any, owner_only: bool = False) -> list[MeshCopyIssue]:
    """Check that every copy touching an annotated buffer reads or writes whole blocks
    inside the buffer and stays inside one core's shard; with ``owner_only=True``, also
    that every core touches only its own shard (a replica it holds counts as its own):
    issue kind ``"remote"``. Returns the issues found (an unannotated kernel has none).

    ``owner_only`` checks a distributed-memory kernel: all other data must reach a core
    through comm ops (:func:`~meshtensor.tilelang.comm.mesh_comm`). Copies are placed
    exactly; an access to an annotated tensor outside ``T.copy`` (``A[i, j]`` in an
    expression, a tile op on it) cannot be placed, so under ``owner_only`` it is an
    issue of kind ``"direct_access"`` (copy index -1) rather than a silent pass.
   
    >>> from meshtensor.tilelang.gemm import build_gemm
    >>> sorted({i.kind for i in verify_mesh_tensors(build_gemm("summa", 64, 64, 64),
    ...                                             owner_only=True)})
    ['remote']
    >>> verify_mesh_tensors(build_gemm("summa_comm", 64, 64, 64), owner_only=True)
    []
    """
    where = "VerifyMeshTensors"
    info = read_mesh_tensor_info(func)
    if not info:
        return []
    mesh = _mesh_of({e.mesh for e in info.values()}, where)
    issues: list[MeshCopyIssue] = []
    for ci, space, region, write, e in _annotated_sides(_kernel_func(func), info, mesh, where):
        shape = e.static_shape()
        if shape is None:
            warnings.warn(f"{where}: buffer {e.name!r} has a symbolic shape "
                          f"{e.global_shape}; its copies are not checked", stacklevel=2)
            continue
        lo, hi = region_box(region, space, where)
        ext = hi - lo
        block = np.asarray(e.block_shape)
        n = np.asarray(shape)
        verb = "writes" if write else "reads"

        def report(kind: str, bad: np.ndarray, cores=(), text=""):
            i = int(np.flatnonzero(bad)[0])
            prog = mesh.multi_index(int(space.core[i]))
            blk = tuple(int(v) for v in lo[i] // np.maximum(block, 1))
            issues.append(MeshCopyIssue(
                e.name, ci, kind, prog, blk, tuple(cores), int(bad.sum()),
                f"copy {ci} {verb} {e.name}[{', '.join(f'{a}:{b}' for a, b in zip(lo[i], hi[i]))}] "
                f"on program {prog}: {text} ({int(bad.sum())} of {space.size} iterations)"))

        mis = np.any((lo % block != 0) | ((ext % block != 0) & (hi < n)), axis=1)
        if mis.any():
            report("misaligned", mis, text=f"not whole blocks of {tuple(e.block_shape)}")
        out = np.any((lo < 0) | ((lo >= n) & (ext > 0)) |
                     (hi > -(-n // block) * block), axis=1)
        if out.any():
            report("outside", out, text=f"outside the tensor of shape {shape}")
        clo, chi = clip_boxes(lo, hi, shape)
        owner, _, _, _, point = split_by_owner(e.sharding, shape, space.core, clo, chi)
        pieces = np.bincount(point, minlength=space.size)
        cross = pieces > 1
        if cross.any():
            i = int(np.flatnonzero(cross)[0])
            cores = tuple(mesh.multi_index(int(o)) for o in np.unique(owner[point == i]))
            report("crosses_cores", cross, cores,
                   f"spans the shards of cores {list(cores)}")
        if owner_only:
            foreign = owner != space.core[point]
            remote = np.bincount(point[foreign], minlength=space.size) > 0
            if remote.any():
                i = int(np.flatnonzero(remote)[0])
                mine = owner[(point == i) & foreign]
                cores = tuple(mesh.multi_index(int(o)) for o in np.unique(mine))
                report("remote", remote, cores,
                       f"not its own shard: owned by {list(cores)} (owner_only)")
    if owner_only:
        direct = direct_accesses(_kernel_func(func), set(info))
        for name in dict.fromkeys(str(n.buffer.name) for n in direct):
            mine = [n for n in direct if str(n.buffer.name) == name]
            verb = "reads" if isinstance(mine[0], tirx.BufferLoad) else "writes"
            issues.append(MeshCopyIssue(
                name, -1, "direct_access", (), (), (), len(mine),
                f"the kernel {verb} {name}[{', '.join(map(str, mine[0].indices))}] outside "
                f"T.copy ({len(mine)} such accesses): which core's shard it touches cannot "
                f"be checked (owner_only); copy the tile with mesh_tensor_copy first"))
    return issues


def VerifyMeshTensors(on_error: Literal["error", "warn"] = "error", owner_only: bool = False):
    """A ``prim_func_pass`` that runs :func:`verify_mesh_tensors`.

    Reads ``mesh_tensor_info``. With ``on_error="error"`` it raises ``ValueError`` listing
    every issue; with ``"warn"`` it emits a ``UserWarning`` per issue and leaves the
    function unchanged. ``owner_only=True`` also requires every core to touch only its
    own shards of the annotated tensors (a distributed-memory kernel).
    """
    if on_error not in ("error", "warn"):
        raise ValueError(f"VerifyMeshTensors: on_error must be 'error' or 'warn', got {on_error!r}")
    if not isinstance(owner_only, bool):
        raise TypeError(f"VerifyMeshTensors: owner_only must be a bool, got {owner_only!r}")

    def transform(func, mod, ctx):
        issues = verify_mesh_tensors(func, owner_only=owner_only)
        if issues and on_error == "error":
            raise ValueError("VerifyMeshTensors: " + "; ".join(i.message for i in issues))
        for i in issues:
            warnings.warn(f"VerifyMeshTensors: {i.message}", stacklevel=2)
        return func

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.VerifyMeshTensors")


# -- communication analysis -------------------------------------------------------------------
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
    (:func:`meshtensor.cost.xy_link_loads`: shape ``(ndim, 2, *mesh.shape)``)."""

    statement: str
    execution: int
    nbytes: int
    flows: int
    hop_bytes: dict
    link_loads: np.ndarray

    @property
    def max_hops(self) -> int:
        return max(self.hop_bytes, default=0)

    @property
    def max_link_bytes(self) -> int:
        return int(self.link_loads.max()) if self.link_loads.size else 0

    def time(self, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
             hop_latency: float = DEFAULT_HOP_LATENCY) -> float:
        """Estimated NoC seconds: ``hop_latency * max_hops + max_link_bytes /
        link_bandwidth`` (0 without flows). See :meth:`CommReport.noc_time`."""
        _check_rates(link_bandwidth, hop_latency)
        if not self.flows:
            return 0.0
        return hop_latency * self.max_hops + self.max_link_bytes / link_bandwidth


def _superstep(mesh: Mesh, name: str, execution: int, src, dst, nbytes) -> Superstep:
    h = hops(mesh, src, dst) if len(src) else np.zeros(0, dtype=np.int64)
    hb = np.bincount(h, weights=nbytes).astype(np.int64) if len(h) else []
    return Superstep(name, execution, int(np.sum(nbytes)), len(src),
                     {int(i): int(v) for i, v in enumerate(hb) if v},
                     xy_link_loads(mesh, src, dst, nbytes))


@dataclass(frozen=True, eq=False)
class CommReport:
    """Bytes each core moves: through its copies of annotated global tensors (locally
    or from/to other cores' shards) and through comm ops.

    One row per (statement, point, owner piece or flow): ``copy`` index (``-1`` for a
    comm op), ``op`` comm-op index (``-1`` for a copy), ``write`` flag (copies), the
    ``core`` that executes the copy or receives the comm op's data, its ``peer`` (the
    owning core of a copied piece, or the comm op's sender; linear ids), ``nbytes`` and
    ``step`` (which execution of the statement). ``supersteps`` lists every execution
    of a comm op, and of a copy with remote bytes, with its link loads.
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

    def table(self) -> str:
        """Per core: bytes its copies read and write in its own shards (local) and in other
        cores' shards (remote), bytes received and sent through comm ops (when the kernel
        has any), and its remote bytes by the length of their XY route (``1 hop`` ...)."""
        pc = self.per_core()
        comm = bool(self.is_comm.any())
        remote = self.core != self.peer
        maxh = int(self.hops[remote].max()) if remote.any() else 0
        hop_cols = list(range(1, maxh + 1))
        keys = ["local_read", "remote_read", "local_write", "remote_write"] + \
            (["comm_received", "comm_sent"] if comm else [])
        heads = ["local rd", "remote rd", "local wr", "remote wr"] + \
            (["comm recv", "comm sent"] if comm else [])
        lines = ["core".rjust(8) + "".join(f" {h:>10s}" for h in heads) +
                 "".join(f" {f'{h} hop':>9s}" for h in hop_cols)]
        for c in list(range(self.mesh.size)) + [None]:
            bh = self.by_hops(c)
            label = "total" if c is None else str(self.mesh.multi_index(c))
            vals = [int(pc[k].sum()) if c is None else int(pc[k][c]) for k in keys]
            lines.append(f"{label:>8s}" + "".join(f" {v:>10d}" for v in vals) +
                         "".join(f" {bh.get(h, 0):>9d}" for h in hop_cols))
        return "\n".join(lines)

    def superstep_table(self, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                        hop_latency: float = DEFAULT_HOP_LATENCY) -> str:
        """One line per superstep: bytes between cores, transfers, bytes by route length,
        the busiest link's bytes and the estimated NoC time; then the totals."""
        _check_rates(link_bandwidth, hop_latency)
        w = max([len(s.statement) for s in self.supersteps] + [9])
        lines = [f"{'statement':<{w}s} {'exec':>4s} {'bytes':>10s} {'xfers':>5s} "
                 f"{'max link':>9s} {'NoC us':>8s}  bytes by hops"]
        for s in self.supersteps:
            hb = ", ".join(f"{h}: {b}" for h, b in sorted(s.hop_bytes.items())) or "-"
            lines.append(f"{s.statement:<{w}s} {s.execution:>4d} {s.nbytes:>10d} {s.flows:>5d} "
                         f"{s.max_link_bytes:>9d} {s.time(link_bandwidth, hop_latency) * 1e6:>8.3f}"
                         f"  {hb}")
        lines.append(f"{'total':<{w}s} {len(self.supersteps):>4d} "
                     f"{sum(s.nbytes for s in self.supersteps):>10d} "
                     f"{sum(s.flows for s in self.supersteps):>5d} {self.max_link_bytes():>9d} "
                     f"{self.noc_time(link_bandwidth, hop_latency) * 1e6:>8.3f}")
        return "\n".join(lines)


def _op_name(op: CommOp) -> str:
    if op.src is None:
        return f"comm {op.index}: {op.op}"
    axes = tuple(op.mesh.axis_names[a] for a in op.mesh_axes)
    return f"comm {op.index}: {op.op} {op.src.buffer.name} -> {op.dst.buffer.name} over {axes}"


def _comm_rows(op: CommOp, mesh: Mesh, where: str):
    """Rows ``(receiver, sender, nbytes, execution)`` and the supersteps of one comm op."""
    space = iteration_space(op, mesh, where)
    counts = np.bincount(space.core, minlength=mesh.size)
    if counts.min() != counts.max():
        raise ValueError(f"{where}: {_op_name(op)} runs between {counts.min()} and "
                         f"{counts.max()} times on different cores; every core must reach "
                         f"a comm op equally often")
    runs = int(counts[0])
    ex = _executions(space.core, mesh.size)
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
        rows.append((rcv, snd, nb, np.full(len(snd), e, dtype=np.int64)))
        steps.append(Superstep(st.statement, e, st.nbytes, st.flows, st.hop_bytes, st.link_loads))
    return rows, steps


def analyze_mesh_communication(func: Any) -> CommReport | None:
    """The :class:`CommReport` of a kernel (a PrimFunc, IRModule, ``JITKernel`` or
    ``MeshKernel``), or ``None`` when it has neither annotations nor comm ops.

    >>> from meshtensor.tilelang.gemm import build_gemm
    >>> r = analyze_mesh_communication(build_gemm("summa_comm", 64, 64, 64))
    >>> r.comm_ops[0], r.comm_bytes  # 2 n^2 (n - 1) tiles of 16 x 16 float32 on 4 x 4
    ("comm 0: broadcast Ao -> Ar over ('y',)", 98304)
    """
    where = "AnalyzeMeshCommunication"
    pf = _kernel_func(func)
    info = read_mesh_tensor_info(pf)
    ops = find_comm_ops(pf)
    if not info and not ops:
        return None
    mesh = _mesh_of({e.mesh for e in info.values()} | {o.mesh for o in ops}, where)
    copies = find_copies(pf)
    cols: dict[str, list] = {k: [] for k in
                             ("copy", "op", "write", "core", "peer", "nbytes", "step")}
    steps: list[Superstep] = []
    names = [f"{c.src.buffer.name} -> {c.dst.buffer.name}" for c in copies]

    def add(copy, op, write, core, peer, nbytes, step):
        for k, v in zip(cols, (copy, op, write, core, peer, nbytes, step)):
            cols[k].append(np.broadcast_to(v, len(core)))

    remote_by_copy: dict[int, list] = {}
    for ci, space, region, write, e in _annotated_sides(pf, info, mesh, where):
        shape = e.static_shape()
        if shape is None:
            raise ValueError(f"{where}: buffer {e.name!r} has a symbolic shape "
                             f"{e.global_shape}; analyse a specialised kernel")
        lo, hi = region_box(region, space, where)
        lo, hi = clip_boxes(lo, hi, shape)  # guarded copies touch only in-tensor cells
        owner, recv, plo, phi, point = split_by_owner(e.sharding, shape, space.core, lo, hi)
        itemsize = np.dtype(str(region.buffer.dtype)).itemsize
        nb = volume(plo, phi) * itemsize
        ex = _executions(space.core, mesh.size)[point]
        add(ci, -1, write, recv, owner, nb, ex)
        far = owner != recv
        snd, rcv = (recv, owner) if write else (owner, recv)
        remote_by_copy.setdefault(ci, []).append((snd[far], rcv[far], nb[far], ex[far]))
    for ci in sorted(remote_by_copy):
        snd, rcv, nb, ex = (np.concatenate(a) for a in zip(*remote_by_copy[ci]))
        for e in np.unique(ex):
            m = ex == e
            steps.append(_superstep(mesh, f"copy {ci}: {names[ci]}", int(e), snd[m], rcv[m], nb[m]))
    for op in ops:
        rows, op_steps = _comm_rows(op, mesh, where)
        for rcv, snd, nb, ex in rows:
            add(-1, op.index, False, rcv, snd, nb, ex)
        steps.extend(op_steps)
    arr = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)) for k, v in cols.items()}
    return CommReport(mesh, tuple(names), arr["copy"].astype(np.int64),
                      arr["write"].astype(bool), arr["core"].astype(np.int64),
                      arr["peer"].astype(np.int64), arr["nbytes"].astype(np.int64),
                      comm_ops=tuple(_op_name(o) for o in ops), op=arr["op"].astype(np.int64),
                      step=arr["step"].astype(np.int64), supersteps=tuple(steps))


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
