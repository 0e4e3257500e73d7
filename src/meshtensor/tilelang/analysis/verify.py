"""``VerifyMeshTensors``: every copy of an annotated global tensor reads or writes
whole blocks inside the tensor and one core's shard; with ``owner_only``, only the
executing core's own shard (a distributed-memory kernel).

Every ``T.copy`` touching an annotated buffer is evaluated over the points at which it
executes (:mod:`..ir.evaluate`) with NumPy, from the TIR expressions of its offsets: no
compilation needed. Ownership comes from :class:`meshtensor.Sharding` (explicit offsets
included); a read inside the reader's halo window is its own data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from tvm import tirx

from ...boxes import clip_boxes, split_by_owner
from ..ir.evaluate import region_box
from ..ir.kernel import KernelView
from ..ir.metadata import MeshTensorEntry
from ..ir.scope import direct_accesses

__all__ = ["MeshCopyIssue", "verify_mesh_tensors", "VerifyMeshTensors", "within_window"]


def within_window(e: MeshTensorEntry, shape: tuple[int, ...], core: np.ndarray,
                  lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per box, whether it lies inside the local array (core region plus halos) of the
    core reading it: data that core holds. Without halos, inside its core region."""
    wlo, whi = e.sharding.windows(shape)
    clo, chi = clip_boxes(lo, hi, shape)
    return np.all((clo >= wlo[core]) & (chi <= whi[core]), axis=1)


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
    through comm ops (:func:`~meshtensor.tilelang.mesh_comm`). Copies are placed
    exactly; an access to an annotated tensor outside ``T.copy`` (``A[i, j]`` in an
    expression, a tile op on it) cannot be placed, so under ``owner_only`` it is an
    issue of kind ``"direct_access"`` (copy index -1) rather than a silent pass.
   
    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> sorted({i.kind for i in verify_mesh_tensors(build_gemm("summa", 64, 64, 64),
    ...                                             owner_only=True)})
    ['remote']
    >>> verify_mesh_tensors(build_gemm("summa_comm", 64, 64, 64), owner_only=True)
    []
    """
    where = "VerifyMeshTensors"
    view = KernelView.of(func, where)
    if not view.info:
        return []
    mesh = view.mesh
    issues: list[MeshCopyIssue] = []
    for ci, space, region, write, e in view.annotated_sides():
        shape = e.static_shape()
        if shape is None:
            warnings.warn(f"{where}: buffer {e.name!r} has a symbolic shape "
                          f"{e.global_shape}; its copies are not checked", stacklevel=2)
            continue
        lo, hi = region_box(region, space, where)
        ext = hi - lo
        # a read inside the reader's own window (core plus halo) is its own data
        held = np.zeros(space.size, dtype=bool) if write else within_window(e, shape, space.core,
                                                                            lo, hi)
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
        cross = (pieces > 1) & ~held
        if cross.any():
            i = int(np.flatnonzero(cross)[0])
            cores = tuple(mesh.multi_index(int(o)) for o in np.unique(owner[point == i]))
            report("crosses_cores", cross, cores,
                   f"spans the shards of cores {list(cores)}")
        if owner_only:
            foreign = (owner != space.core[point]) & ~held[point]
            remote = np.bincount(point[foreign], minlength=space.size) > 0
            if remote.any():
                i = int(np.flatnonzero(remote)[0])
                mine = owner[(point == i) & foreign]
                cores = tuple(mesh.multi_index(int(o)) for o in np.unique(mine))
                report("remote", remote, cores,
                       f"not its own shard: owned by {list(cores)} (owner_only)")
    if owner_only:
        direct = direct_accesses(view.func, set(view.info))
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


