"""Plans run on the NumPy simulator: ``reshard`` walks a plan's steps with
``apply_step`` (collectives from :mod:`meshtensor.collectives`, transfers box by box);
``own_cells`` and ``new_local_shape`` tell any executor (``meshtensor.dist`` too) where
a device's own cells go."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import collectives as C
from ..boxes import box_slices, held_boxes
from ..mesh_array import MeshArray, _frozen
from ..sharding import Sharding
from .cache import plan_reshard
from .steps import Step, TransferStep


@lru_cache(maxsize=64)
def _own_boxes(before: Sharding, after: Sharding, shape: tuple[int, ...]):
    """For every device at once: the box of its own held cells that its ``after`` array
    keeps, and whether it is non-empty (computed once per step, not once per device)."""
    w0, w1 = after.windows(shape)
    h_lo, h_hi = held_boxes(before, shape)
    lo = np.maximum(h_lo, np.maximum(w0, 0))
    hi = np.minimum(h_hi, np.minimum(w1, np.asarray(shape, dtype=np.int64)))
    keep = np.all(lo < hi, axis=1)
    return lo, hi, keep


def own_cells(step: TransferStep, shape, r: int) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where device ``r``'s own held cells go: ``(slices in its new array, slices in its
    old array)``, or None when it keeps nothing."""
    shape = tuple(shape)
    lo, hi, keep = _own_boxes(step.before, step.after, shape)
    if not keep[r]:
        return None
    w0, _ = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    return box_slices(lo[r], hi[r], w0[r]), box_slices(lo[r], hi[r], s0[r])


def new_local_shape(step: Step, shape, r: int) -> tuple[int, ...]:
    """Shape of device ``r``'s array after ``step``."""
    w0, w1 = step.after.windows(shape)
    return tuple((w1[r] - w0[r]).tolist())


def _run_transfers(arr: MeshArray, step: TransferStep, shape) -> MeshArray:
    """Build every device's ``after`` array: its own held cells, then what it receives."""
    mesh = arr.mesh
    w0, w1 = step.after.windows(shape)
    s0, _ = step.before.windows(shape)
    own_lo, own_hi, keep = _own_boxes(step.before, step.after, tuple(shape))
    order = np.argsort(step.dst, kind="stable")
    bounds = np.searchsorted(step.dst[order], np.arange(mesh.size + 1))
    ext = (w1 - w0).tolist()
    out = []
    for r in range(mesh.size):
        buf = np.zeros(ext[r], dtype=arr.dtype)
        if keep[r]:
            buf[box_slices(own_lo[r], own_hi[r], w0[r])] = \
                arr.locals[r][box_slices(own_lo[r], own_hi[r], s0[r])]
        for i in order[bounds[r]:bounds[r + 1]].tolist():
            s = int(step.src[i])
            buf[box_slices(step.lo[i], step.hi[i], w0[r])] = \
                arr.locals[s][box_slices(step.lo[i], step.hi[i], s0[s])]
        out.append(_frozen(buf))
    return MeshArray(mesh, out, step.after, shape)


def apply_step(arr: MeshArray, step: Step) -> MeshArray:
    """Execute one plan step on the simulator."""
    shape = arr.global_shape
    if isinstance(step, TransferStep):
        return _run_transfers(arr, step, shape)
    if step.op == "update_halo":
        # Re-lay each device's own cells into the target shape, then refill the halos.
        relaid = _run_transfers(arr, TransferStep.local_only(step.before, step.after, len(shape)),
                                shape)
        return C.update_halo(relaid, step.after).with_sharding(step.after, shape)
    fn = getattr(C, step.op)
    res = fn(arr, list(step.mesh_axes), **step.kwargs)
    return res.with_sharding(step.after, shape)


def reshard(array: MeshArray, tgt: Sharding) -> MeshArray:
    """Move a MeshArray to sharding ``tgt`` along the planned steps (the input is never
    mutated). The result equals ``distribute(array.to_global(), tgt)`` exactly.

    >>> import numpy as np
    >>> from meshtensor import Mesh, Sharding, distribute
    >>> m = Mesh([2, 3]); x = np.arange(36).reshape(6, 6)
    >>> b = reshard(distribute(x, Sharding(m, [[0], [1]])), Sharding(m, [[1], [0]]))
    >>> b.local((0, 1)).tolist()
    [[12, 13, 14], [18, 19, 20]]
    """
    if not isinstance(array, MeshArray):
        raise TypeError(f"reshard: expected a MeshArray, got {type(array).__name__}")
    if array.sharding is None:
        raise ValueError("reshard: the MeshArray has no sharding; attach one with "
                         "with_sharding(...)")
    plan = plan_reshard(array.sharding, tgt, array.global_shape, array.dtype.itemsize)
    out = array
    for step in plan.steps:
        out = apply_step(out, step)
    if not plan.steps:
        return array
    return out
