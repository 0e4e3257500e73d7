"""A mesh kernel as every pass sees it: its PrimFunc, annotations, comm ops, copies,
mesh and launch, resolved once (:meth:`KernelView.of`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator

import numpy as np
from tvm import tirx

from ...mesh import Mesh
from .comm_op import CommOp, find_comm_ops
from .evaluate import IterSpace, iteration_space
from .launch import Launch
from .metadata import MeshTensorEntry, read_mesh_tensor_info
from .resolve import prim_func
from .scope import CopyCall, CopyRegion, find_copies

__all__ = ["KernelView", "executions", "execution_keys", "runs_per_core"]


@dataclass(frozen=True, eq=False)
class KernelView:
    """The facts of one kernel that the mesh passes share.

    ``mesh`` is the one mesh of its annotated buffers and comm ops (``None`` when it has
    neither); ``launch`` its :class:`Launch` on that mesh.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> v = KernelView.of(build_gemm("summa_comm", 32, 32, 32), "example")
    >>> v.mesh.shape, len(v.ops), sorted(v.info)
    ((4, 4), 2, ['A', 'B', 'C'])
    """

    func: tirx.PrimFunc
    info: dict[str, MeshTensorEntry]
    ops: list[CommOp]
    mesh: Mesh | None
    where: str

    @staticmethod
    def of(func: Any, where: str) -> "KernelView":
        """Resolve a PrimFunc, ``JITKernel``, ``MeshKernel`` or IRModule; ``ValueError``
        naming ``where`` when its annotations and comm ops disagree on the mesh."""
        pf = prim_func(func, where)
        info = read_mesh_tensor_info(pf)
        ops = find_comm_ops(pf)
        meshes = {e.mesh for e in info.values()} | {o.mesh for o in ops}
        if len(meshes) > 1:
            raise ValueError(f"{where}: annotated buffers and comm ops live on different "
                             f"meshes {sorted(str(m) for m in meshes)}")
        return KernelView(pf, info, ops, meshes.pop() if meshes else None, where)

    @cached_property
    def launch(self) -> Launch:
        if self.mesh is None:
            raise ValueError(f"{self.where}: the kernel has neither mesh annotations nor "
                             f"comm ops, so it names no mesh")
        return Launch.of(self.func, self.mesh, self.where)

    @cached_property
    def copies(self) -> list[CopyCall]:
        return find_copies(self.func)

    def space(self, found: Any, what: str | None = None) -> IterSpace:
        """The iteration space of a statement of this kernel."""
        return iteration_space(found, self.launch, what or self.where)

    def entry_of(self, region: CopyRegion) -> MeshTensorEntry | None:
        """The annotation of the buffer a region belongs to, if any."""
        e = self.info.get(region.buffer.name)
        if e is not None and (e.buffer is None or e.buffer.same_as(region.buffer)
                              or e.buffer.data.same_as(region.buffer.data)):
            return e
        return None

    def annotated_sides(self) -> Iterator[tuple[int, IterSpace, CopyRegion, bool,
                                                MeshTensorEntry]]:
        """For every copy side that touches an annotated buffer: ``(copy index, space,
        region, write, entry)``, in program order."""
        for ci, c in enumerate(self.copies):
            found = [(r, w, self.entry_of(r)) for r, w in ((c.src, False), (c.dst, True))]
            found = [f for f in found if f[2] is not None]
            if found:
                space = self.space(c)
                for region, write, e in found:
                    yield ci, space, region, write, e  # type: ignore[misc]


def runs_per_core(space: IterSpace, ncores: int, what: str, where: str) -> int:
    """How many times each core runs a comm op (``what`` names it) whose iteration space
    is ``space``; ``ValueError`` naming ``where`` and ``what`` unless every core runs it
    equally often (the collective rule).

    >>> runs_per_core(IterSpace({}, np.array([0, 1, 0, 1]), 4), 2, "op", "ex")
    2
    """
    counts = np.bincount(space.core, minlength=ncores)
    if counts.min() != counts.max():
        raise ValueError(f"{where}: {what} runs between {counts.min()} and {counts.max()} "
                         f"times on different cores; every core must reach a comm op equally "
                         f"often")
    return int(counts[0])


def executions(core: np.ndarray, ncores: int) -> np.ndarray:
    """Per point, how many earlier points the same core executed (program order: the
    points of an :class:`IterSpace` are in loop order, launch loops outermost).

    >>> executions(np.array([0, 1, 0, 1, 0]), 2).tolist()
    [0, 0, 1, 1, 2]
    """
    order = np.argsort(core, kind="stable")
    counts = np.bincount(core, minlength=ncores)
    first = np.cumsum(counts) - counts
    e = np.empty(len(core), dtype=np.int64)
    e[order] = np.arange(len(core)) - first[core[order]]
    return e


def execution_keys(space: IterSpace, order: tuple, ncores: int) -> np.ndarray:
    """The program-order key of each execution of a statement (its ``order``, see
    :class:`~.scope.Found`): row ``e`` is the key of the ``e``-th execution, the earliest
    over the cores that run it. ``(executions, len(order))`` int64.

    >>> from meshtensor.tilelang.ir.evaluate import IterSpace
    >>> i = __import__("tvm").tirx.Var("i", "int32")
    >>> s = IterSpace({i: np.array([0, 1, 0, 1])}, np.array([0, 0, 1, 1]), 4)
    >>> execution_keys(s, (2, i), 2).tolist()
    [[2, 0], [2, 1]]
    """
    ts = space.timestamps(order)
    ex = executions(space.core, ncores)
    runs = int(ex.max()) + 1 if len(ex) else 0
    out = np.zeros((runs, ts.shape[1]), dtype=np.int64)
    # sort points by (key, execution) and keep the first point of each execution
    idx = np.lexsort(tuple(ts.T[::-1]) + (ex,)) if ts.shape[1] else np.argsort(ex, kind="stable")
    first = np.unique(ex[idx], return_index=True)[1]
    out[ex[idx][first]] = ts[idx][first]
    return out
