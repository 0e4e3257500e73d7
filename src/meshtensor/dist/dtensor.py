"""The PyTorch DTensor bridge: ``redistribute`` a DTensor by meshtensor's plan.

``redistribute(dt, placements)`` returns what ``dt.redistribute(dt.device_mesh,
placements)`` returns, but moves the data with :func:`meshtensor.plan_reshard` executed
by :func:`meshtensor.dist.dist_reshard`: every device receives only the cells it lacks
(an axis swap moves a quarter of what DTensor's gather-then-split moves on 2x2).
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from typing import Any, Sequence

import torch
import torch.distributed as dist

from ..mesh import Mesh
from ..sharding import Sharding
from .engine import DistMesh, dist_reshard

# One DistMesh per (mesh, world group): its sub-groups are created once, collectively.
_DIST_MESHES: dict[Mesh, tuple[Any, DistMesh]] = {}
# Reading DeviceMesh.mesh rebuilds a tensor (~0.1 ms): remember each DeviceMesh's Mesh.
_MESHES: "weakref.WeakKeyDictionary[Any, Mesh]" = weakref.WeakKeyDictionary()


def mesh_of(device_mesh: Any) -> Mesh:
    """The :class:`meshtensor.Mesh` of a ``DeviceMesh`` whose ranks are ``0..n-1`` in
    row-major order (rank = linear device index, as in :class:`DistMesh`); its
    ``mesh_dim_names`` become the axis names.

    Example (with torch.distributed initialised on 6 ranks)::

        dm = init_device_mesh("cpu", (2, 3), mesh_dim_names=("dp", "tp"))
        mesh_of(dm)            # Mesh({'dp': 2, 'tp': 3})

    Raises:
        ValueError: the ranks are not ``arange(n)`` in row-major order.
    """
    ranks = device_mesh.mesh.detach().cpu()
    if not torch.equal(ranks.reshape(-1), torch.arange(ranks.numel(), dtype=ranks.dtype)):
        raise ValueError(f"redistribute: the DeviceMesh's ranks {ranks.tolist()} are not "
                         f"0..{ranks.numel() - 1} in row-major order; meshtensor maps rank r "
                         f"to linear device r, so build the mesh as "
                         f"init_device_mesh(device_type, {tuple(ranks.shape)})")
    names = device_mesh.mesh_dim_names
    return Mesh(tuple(ranks.shape), axis_names=list(names) if names else None)


def _cached_mesh_of(device_mesh: Any) -> Mesh:
    mesh = _MESHES.get(device_mesh)
    if mesh is None:
        mesh = _MESHES[device_mesh] = mesh_of(device_mesh)
    return mesh


@lru_cache(maxsize=1024)
def _layouts(mesh: Mesh, src: tuple, tgt: tuple, shape: tuple[int, ...]
             ) -> tuple[Sharding, Sharding, tuple]:
    """Source and target shardings (DTensor's exact layout) and the target's torch
    placements; cached, as a training step redistributes the same layouts again."""
    s = Sharding.from_placements(mesh, list(src), len(shape), shape)
    t = Sharding.from_placements(mesh, list(tgt), len(shape), shape)
    if t.partial_axes and t != s:
        raise ValueError(f"redistribute: cannot redistribute {list(src)} into the Partial "
                         f"placements {list(tgt)}: a partial target is only reachable from "
                         f"itself (reduce first)")
    return s, t, tuple(t.to_placements(shape))


def _dist_mesh(mesh: Mesh) -> DistMesh:
    world = dist.group.WORLD
    hit = _DIST_MESHES.get(mesh)
    if hit is None or hit[0] is not world:  # a new process group invalidates the cache
        hit = (world, DistMesh(mesh))
        _DIST_MESHES[mesh] = hit
    return hit[1]


def redistribute(dtensor: Any, placements: Sequence[Any]) -> Any:
    """``dtensor.redistribute(dtensor.device_mesh, placements)`` by meshtensor's plan.

    Every rank calls it (an SPMD collective, like DTensor's own). ``placements`` are
    torch placements (``Shard(d)``, ``Replicate()``, ``Partial(op)``) or their text
    (``"S(0)"``, ``"R"``, ``"P(sum)"``), one per mesh axis. Partial sources are reduced
    on the way; a Partial target is refused unless it equals the source (as
    :func:`meshtensor.reshard`). Uneven sizes follow DTensor's nested chunks exactly.
    The result is a new DTensor (no autograd through the bridge: detach the input).

    Example (run on every rank of a 2x2 gloo job)::

        dt = DTensor.from_local(local, device_mesh, [Shard(0), Shard(1)])
        swapped = redistribute(dt, [Shard(1), Shard(0)])

    Raises:
        ValueError: a DeviceMesh that does not span the world in row-major order, a
            non-CPU tensor, a placement meshtensor cannot express, a Partial target.
    """
    from torch.distributed.tensor import DTensor

    if not isinstance(dtensor, DTensor):
        raise TypeError(f"redistribute: expected a DTensor, got {type(dtensor).__name__}")
    dm = dtensor.device_mesh
    if dm.device_type != "cpu":
        raise ValueError(f"redistribute: the DeviceMesh is on {dm.device_type!r}; the "
                         f"bridge runs meshtensor.dist's CPU engine (gloo) only")
    if dtensor.requires_grad:
        raise ValueError("redistribute: the DTensor requires grad; the bridge does not "
                         "backpropagate (use dtensor.redistribute, or pass dtensor.detach())")
    mesh = _cached_mesh_of(dm)
    world = dist.get_world_size()
    if world != mesh.size:
        raise ValueError(f"redistribute: the DeviceMesh has {mesh.size} ranks but the process "
                         f"group has {world}; the bridge needs a mesh over the whole world")
    shape = tuple(dtensor.shape)
    src, tgt, tgt_placements = _layouts(mesh, tuple(dtensor.placements), tuple(placements),
                                        shape)
    out = dist_reshard(dtensor.to_local(), src, tgt, shape, _dist_mesh(mesh))
    return DTensor.from_local(out, dm, tgt_placements, run_check=False,
                              shape=dtensor.shape, stride=dtensor.stride())


__all__ = ["redistribute", "mesh_of"]
