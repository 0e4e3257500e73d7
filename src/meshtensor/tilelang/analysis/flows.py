"""What one execution of a comm op sends between cores: ``(sender, receiver, nbytes)``
arrays, with the conventions of :mod:`meshtensor.cost` (direct one-shot collectives)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...collectives import root_position, shift_sources
from ...sharding import chunk_bounds
from ..ir.comm_op import CommOp
from ..ir.evaluate import static_int

__all__ = ["comm_flows"]


def _piece_sizes(n: int, k: int) -> np.ndarray:
    return np.diff(chunk_bounds(n, k))


_Flow = tuple[np.ndarray, np.ndarray, np.ndarray]


def _flows(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> _Flow:
    """Drop self-sends and empty pieces; int64 arrays."""
    src, dst = np.broadcast_arrays(np.asarray(src, np.int64), np.asarray(dst, np.int64))
    nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), src.shape).ravel()
    src, dst = src.ravel(), dst.ravel()
    keep = (src != dst) & (nbytes > 0)
    return src[keep], dst[keep], nbytes[keep].copy()


def _exchange(groups: np.ndarray, piece_bytes: np.ndarray) -> _Flow:
    """Member ``i`` of each group sends ``piece_bytes[..., i, j]`` to member ``j``."""
    G, k = groups.shape
    src = np.broadcast_to(groups[:, :, None], (G, k, k))
    dst = np.broadcast_to(groups[:, None, :], (G, k, k))
    return _flows(src, dst, np.broadcast_to(piece_bytes, (G, k, k)))


def comm_flows(op: CommOp, root: Sequence[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sender, receiver, nbytes)``: what one execution of ``op`` sends between distinct
    cores (linear ids; a core's data to itself excluded), with the conventions of
    :mod:`meshtensor.cost` (direct one-shot collectives; ``all_reduce`` = reduce_scatter
    + all_gather over the flattened region). ``root``: concrete in-group coordinates for
    a broadcast whose root is not static. Barrier: no flows.

    >>> import tilelang.language as T
    >>> from meshtensor.tilelang import find_comm_ops, mesh_comm
    >>> mc = mesh_comm({"x": 2, "y": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_shared((4,), "float32")
    ...         mc.broadcast(S, S, ["y"], root=[0])
    >>> [a.tolist() for a in comm_flows(find_comm_ops(k)[0])]
    [[0, 2], [1, 3], [16, 16]]
    """
    if op.op == "barrier":
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy()
    mesh, axes = op.mesh, tuple(op.mesh_axes)
    groups = mesh.group_array(axes)
    G, k = groups.shape
    nbytes = op.nbytes
    ext = op.static_extents("src")
    itemsize = nbytes // max(int(np.prod(ext, dtype=np.int64)), 1)
    what = f"comm_flows({op.op})"
    if op.op == "broadcast":
        if root is None:
            vals = [static_int(r) for r in op.root]
            if None in vals:
                raise ValueError(f"{what}: root {[str(r) for r in op.root]} is not static; "
                                 f"pass root= as in-group coordinates")
            root = vals
        r = root_position(what, mesh, axes, root)
        return _flows(np.broadcast_to(groups[:, r:r + 1], (G, k)), groups, nbytes)
    if op.op == "all_gather":
        return _exchange(groups, np.int64(nbytes))
    if op.op in ("reduce_scatter", "all_to_all"):
        ax = op.params["scatter_axis" if op.op == "reduce_scatter" else "split_axis"]
        piece = _piece_sizes(ext[ax], k) * (nbytes // max(ext[ax], 1))
        return _exchange(groups, piece[None, None, :])
    if op.op == "all_reduce":
        p = _piece_sizes(int(np.prod(ext, dtype=np.int64)), k) * itemsize
        return _exchange(groups, p[None, None, :] + p[None, :, None])
    if op.op == "shift":
        src, valid = shift_sources(what, mesh, axes, op.params["shift_axis"],
                                   op.params["offset"], op.params["rotate"])
        ids = np.arange(mesh.size, dtype=np.int64)
        return _flows(src[valid], ids[valid], nbytes)
    if op.op == "permute":
        pairs = np.asarray(op.params["pairs"], dtype=np.int64).reshape(-1, 2)
        return _flows(pairs[:, 0], pairs[:, 1], nbytes)
    raise ValueError(f"comm_flows: unknown comm op {op.op!r}")
