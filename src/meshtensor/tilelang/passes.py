"""TIR passes that read ``mesh_tensor_info``: copy verification and communication analysis.

Both evaluate every ``T.copy`` touching an annotated buffer over its whole iteration
space (the launch grid and the enclosing serial loops) with NumPy, from the TIR
expressions of its offsets: no compilation needed. The launch grid gives the core that
executes each program: ``T.Kernel(nx, ny)`` on an ``nx x ny`` mesh puts block
``(bx, by)`` on core ``(x=bx, y=by)``; a 1-D launch of ``mesh.size`` blocks uses the
linear core id. Ownership and distances come from :class:`meshtensor.Sharding` and
:mod:`meshtensor.cost` (XY routing).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np
from tvm import tirx

from ..boxes import clip_boxes, split_by_owner, volume
from ..cost import hops
from ..mesh import Mesh
from .copies import CopyCall, CopyRegion, find_copies
from .frontend import MeshTensorEntry, read_mesh_tensor_info

_BINOPS = {
    tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply,
    tirx.FloorDiv: np.floor_divide, tirx.FloorMod: np.mod, tirx.Min: np.minimum,
    tirx.Max: np.maximum,
}


def eval_np(expr: Any, env: dict) -> np.ndarray | int:
    """Evaluate an integer TIR expression with NumPy arrays bound to its variables."""
    if isinstance(expr, (int, np.integer)):
        return int(expr)
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        for k, v in env.items():
            if k.same_as(expr):
                return v
        raise ValueError(f"free variable {expr.name} in a copy offset")
    for cls, fn in _BINOPS.items():
        if isinstance(expr, cls):
            return fn(eval_np(expr.a, env), eval_np(expr.b, env))
    if isinstance(expr, (tirx.Div, tirx.Mod)):  # truncating (C) semantics
        a, b = np.asarray(eval_np(expr.a, env)), np.asarray(eval_np(expr.b, env))
        q = np.trunc(a / b).astype(np.int64)
        return q if isinstance(expr, tirx.Div) else a - q * b
    if isinstance(expr, tirx.Cast):
        return eval_np(expr.value, env)
    if isinstance(expr, tirx.Select):
        return np.where(eval_np(expr.condition, env), eval_np(expr.true_value, env),
                        eval_np(expr.false_value, env))
    raise ValueError(f"cannot evaluate {type(expr).__name__} {expr} in a copy offset")


@dataclass(frozen=True, eq=False)
class _Space:
    """The iteration points of one copy: loop values and the executing core."""

    env: dict
    core: np.ndarray  # linear core id per point
    size: int


def _launch_axes(loops: tuple[tirx.For, ...]) -> dict[str, tirx.For]:
    return {l.thread_binding.thread_tag: l for l in loops
            if l.thread_binding is not None and l.thread_binding.thread_tag.startswith("blockIdx")}


def _space(c: CopyCall, mesh: Mesh, where: str) -> _Space:
    extents = []
    for l in c.loops:
        try:
            lo, n = eval_np(l.min, {}), eval_np(l.extent, {})
        except ValueError:
            raise ValueError(f"{where}: loop {l.loop_var.name} has a symbolic range "
                             f"[{l.min}, {l.min} + {l.extent}); bind the shapes first") from None
        extents.append((lo, n))
    grid = np.indices([n for _, n in extents]).reshape(len(extents), -1) if extents else \
        np.zeros((0, 1), dtype=np.int64)
    env = {l.loop_var: grid[i] + lo for i, (l, (lo, _)) in enumerate(zip(c.loops, extents))}
    for var, value in c.lets:
        try:
            env[var] = eval_np(value, env)
        except ValueError:
            pass  # e.g. launch_thread_idx: unbound, an error only if an offset uses it
    size = grid.shape[1]
    launch = _launch_axes(c.loops)
    tags = [f"blockIdx.{a}" for a in "xyz"]
    used = [t for t in tags if t in launch]
    ext = [int(eval_np(launch[t].extent, {})) for t in used]
    if ext == list(mesh.shape[:len(used)]) and len(used) == mesh.ndim:
        core = np.ravel_multi_index([np.broadcast_to(env[launch[t].loop_var], (size,))
                                     for t in used], mesh.shape)
    elif len(used) == 1 and ext[0] == mesh.size:
        core = np.broadcast_to(env[launch[used[0]].loop_var], (size,))
    elif not used and mesh.size == 1:
        core = np.zeros(size, dtype=np.int64)
    else:
        raise ValueError(f"{where}: launch grid {tuple(ext)} does not match the mesh "
                         f"{mesh.shape}: launch one program per core")
    return _Space(env, np.asarray(core, dtype=np.int64), size)


def _sides(c: CopyCall, info: dict[str, MeshTensorEntry]):
    for region, write in ((c.src, False), (c.dst, True)):
        e = info.get(region.buffer.name)
        if e is not None and (e.buffer is None or e.buffer.same_as(region.buffer)
                              or e.buffer.data.same_as(region.buffer.data)):
            yield region, write, e


def _box(region: CopyRegion, space: _Space, e: MeshTensorEntry, where: str):
    starts = np.stack([np.broadcast_to(np.asarray(eval_np(s, space.env), dtype=np.int64),
                                       (space.size,)) for s in region.starts], axis=1) \
        if region.starts else np.zeros((space.size, 0), dtype=np.int64)
    try:
        ext = np.array([eval_np(x, {}) for x in region.extents], dtype=np.int64)
    except ValueError:
        raise ValueError(f"{where}: copy of {e.name!r} has symbolic extents") from None
    return starts, starts + ext, ext


def _mesh_of(info: dict[str, MeshTensorEntry], where: str) -> Mesh:
    meshes = {e.mesh for e in info.values()}
    if len(meshes) != 1:
        raise ValueError(f"{where}: annotated buffers live on different meshes "
                         f"{sorted(str(m) for m in meshes)}")
    return meshes.pop()


def _annotated_sides(func: Any, where: str):
    """``(mesh, copies, sides)`` of a kernel: its copies, and for every copy side that
    touches an annotated buffer ``(copy index, space, region, write, entry)``; ``None``
    when the kernel has no annotations."""
    info = read_mesh_tensor_info(func)
    if not info:
        return None
    pf = func if isinstance(func, tirx.PrimFunc) else func.prim_func
    mesh = _mesh_of(info, where)
    copies = find_copies(pf)

    def sides():
        for ci, c in enumerate(copies):
            found = list(_sides(c, info))
            if found:
                space = _space(c, mesh, where)
                for region, write, e in found:
                    yield ci, space, region, write, e

    return mesh, copies, sides()


# -- verification --------------------------------------------------------------------------
@dataclass(frozen=True)
class MeshCopyIssue:
    """One problem found by :func:`verify_mesh_tensors` (the first offending program)."""

    buffer: str
    copy: int
    kind: Literal["misaligned", "outside", "crosses_cores"]
    program: tuple[int, ...]
    block: tuple[int, ...]
    cores: tuple[tuple[int, ...], ...]
    count: int
    message: str


def verify_mesh_tensors(func: Any) -> list[MeshCopyIssue]:
    """Check that every copy touching an annotated buffer reads or writes whole blocks
    inside the buffer and stays inside one core's shard. Returns the issues found (an
    unannotated kernel has none)."""
    where = "VerifyMeshTensors"
    found = _annotated_sides(func, where)
    if found is None:
        return []
    mesh, _, sides = found
    issues: list[MeshCopyIssue] = []
    for ci, space, region, write, e in sides:
        shape = e.static_shape()
        if shape is None:
            warnings.warn(f"{where}: buffer {e.name!r} has a symbolic shape "
                          f"{e.global_shape}; its copies are not checked", stacklevel=2)
            continue
        lo, hi, ext = _box(region, space, e, where)
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
    return issues


def VerifyMeshTensors(on_error: Literal["error", "warn"] = "error"):
    """A ``prim_func_pass`` that runs :func:`verify_mesh_tensors`.

    Reads ``mesh_tensor_info``. With ``on_error="error"`` it raises ``ValueError`` listing
    every issue; with ``"warn"`` it emits a ``UserWarning`` per issue and leaves the
    function unchanged.
    """
    if on_error not in ("error", "warn"):
        raise ValueError(f"VerifyMeshTensors: on_error must be 'error' or 'warn', got {on_error!r}")

    def transform(func, mod, ctx):
        issues = verify_mesh_tensors(func)
        if issues and on_error == "error":
            raise ValueError("VerifyMeshTensors: " + "; ".join(i.message for i in issues))
        for i in issues:
            warnings.warn(f"VerifyMeshTensors: {i.message}", stacklevel=2)
        return func

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.VerifyMeshTensors")


# -- communication analysis -------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CommReport:
    """Bytes each core reads and writes through the kernel's copies, locally and from
    other cores. One row per (copy, iteration, owner piece): ``copy`` index, ``write``
    flag, executing ``core``, owning ``peer`` (linear ids) and ``nbytes``."""

    mesh: Mesh
    copies: tuple[str, ...]
    copy: np.ndarray
    write: np.ndarray
    core: np.ndarray
    peer: np.ndarray
    nbytes: np.ndarray

    @property
    def hops(self) -> np.ndarray:
        return hops(self.mesh, self.core, self.peer) if len(self.core) else self.core

    def _sum(self, mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.core[mask], weights=self.nbytes[mask],
                           minlength=self.mesh.size).astype(np.int64)

    def per_core(self) -> dict[str, np.ndarray]:
        """Per core (linear order): local/remote read/write bytes."""
        remote = self.core != self.peer
        return {"local_read": self._sum(~remote & ~self.write),
                "remote_read": self._sum(remote & ~self.write),
                "local_write": self._sum(~remote & self.write),
                "remote_write": self._sum(remote & self.write)}

    @property
    def remote_bytes(self) -> int:
        return int(self.nbytes[self.core != self.peer].sum())

    @property
    def local_bytes(self) -> int:
        return int(self.nbytes[self.core == self.peer].sum())

    def by_peer(self, core: Any) -> dict[tuple[int, ...], int]:
        """Bytes a core moves with each other core (reads and writes)."""
        c = self.mesh.linear_index(core)
        mask = (self.core == c) & (self.peer != c)
        out: dict[tuple[int, ...], int] = {}
        for p, b in zip(self.peer[mask].tolist(), self.nbytes[mask].tolist()):
            key = self.mesh.multi_index(p)
            out[key] = out.get(key, 0) + int(b)
        return dict(sorted(out.items()))

    def by_hops(self, core: Any = None) -> dict[int, int]:
        """Bytes per hop distance (0 = local), for one core or all."""
        mask = np.ones(len(self.core), dtype=bool) if core is None else \
            self.core == self.mesh.linear_index(core)
        h = self.hops[mask]
        sums = np.bincount(h, weights=self.nbytes[mask]).astype(np.int64) if len(h) else []
        return {int(i): int(v) for i, v in enumerate(sums) if v}

    def table(self) -> str:
        """Per core: local and remote bytes read and written, and remote bytes by hops."""
        pc = self.per_core()
        maxh = int(self.hops.max()) if len(self.core) else 0
        hop_cols = list(range(1, maxh + 1))
        head = (f"{'core':>8s} {'local rd':>10s} {'remote rd':>10s} {'local wr':>10s} "
                f"{'remote wr':>10s}" + "".join(f" {f'{h} hop':>9s}" for h in hop_cols))
        lines = [head]
        for c in range(self.mesh.size):
            bh = self.by_hops(c)
            lines.append(f"{str(self.mesh.multi_index(c)):>8s} {pc['local_read'][c]:>10d} "
                         f"{pc['remote_read'][c]:>10d} {pc['local_write'][c]:>10d} "
                         f"{pc['remote_write'][c]:>10d}" +
                         "".join(f" {bh.get(h, 0):>9d}" for h in hop_cols))
        tot = self.by_hops()
        lines.append(f"{'total':>8s} {int(pc['local_read'].sum()):>10d} "
                     f"{int(pc['remote_read'].sum()):>10d} {int(pc['local_write'].sum()):>10d} "
                     f"{int(pc['remote_write'].sum()):>10d}" +
                     "".join(f" {tot.get(h, 0):>9d}" for h in hop_cols))
        return "\n".join(lines)


def analyze_mesh_communication(func: Any) -> CommReport | None:
    """The :class:`CommReport` of a kernel, or ``None`` when it has no annotations."""
    where = "AnalyzeMeshCommunication"
    found = _annotated_sides(func, where)
    if found is None:
        return None
    mesh, copies, sides = found
    cols: dict[str, list] = {k: [] for k in ("copy", "write", "core", "peer", "nbytes")}
    names = [f"{c.src.buffer.name} -> {c.dst.buffer.name}" for c in copies]
    for ci, space, region, write, e in sides:
        shape = e.static_shape()
        if shape is None:
            raise ValueError(f"{where}: buffer {e.name!r} has a symbolic shape "
                             f"{e.global_shape}; analyse a specialised kernel")
        lo, hi, _ = _box(region, space, e, where)
        lo, hi = clip_boxes(lo, hi, shape)  # guarded copies touch only in-tensor cells
        owner, recv, plo, phi, _ = split_by_owner(e.sharding, shape, space.core, lo, hi)
        itemsize = np.dtype(str(region.buffer.dtype)).itemsize
        cols["copy"].append(np.full(len(owner), ci))
        cols["write"].append(np.full(len(owner), write))
        cols["core"].append(recv)
        cols["peer"].append(owner)
        cols["nbytes"].append(volume(plo, phi) * itemsize)
    arr = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)) for k, v in cols.items()}
    return CommReport(mesh, tuple(names), arr["copy"].astype(np.int64),
                      arr["write"].astype(bool), arr["core"].astype(np.int64),
                      arr["peer"].astype(np.int64), arr["nbytes"].astype(np.int64))


def AnalyzeMeshCommunication(on_report: Callable[[CommReport], None] | None = None):
    """A ``prim_func_pass`` that runs :func:`analyze_mesh_communication`.

    Reads ``mesh_tensor_info``; hands the :class:`CommReport` to ``on_report`` and adds
    the attribute ``mesh_communication`` (``local_bytes``, ``remote_bytes``) to the
    function. A function without annotations passes through unchanged.
    """

    def transform(func, mod, ctx):
        report = analyze_mesh_communication(func)
        if report is None:
            return func
        if on_report is not None:
            on_report(report)
        return func.with_attr("mesh_communication", {"local_bytes": report.local_bytes,
                                                      "remote_bytes": report.remote_bytes})

    return tirx.transform.prim_func_pass(transform, opt_level=0,
                                         name="meshtensor.AnalyzeMeshCommunication")
