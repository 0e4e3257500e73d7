"""Collectives and reshard plans on torch.distributed, one process per device.

Rank ``r`` of the process group is the device with linear index ``r``. Every rank
holds only its own local tensor; argument checks and plans are the core layer's, so
results equal the NumPy simulator's exactly. Uneven pieces travel padded to the
largest piece (gloo's collectives need equal sizes) and are trimmed on arrival.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any, Iterable, Sequence

import numpy as np
import torch
import torch.distributed as dist

from ..collectives import (check_same_shapes, check_tensor_axis, permute_sources,
                           root_position, shift_sources)
from ..mesh import AxisLike, DeviceLike, Mesh
from ..reduction import check_reduction
from ..boxes import box_slices
from ..resharding import (TransferStep, new_local_shape, own_cells, plan_reshard,
                          transfer_step)
from ..sharding import Sharding, chunk_bounds

_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
        "prod": dist.ReduceOp.PRODUCT}


class DistCollectiveError(RuntimeError):
    """A collective failed on this rank (a peer died, raised, or the timeout passed)."""


def _guard(op: str):
    """Turn transport failures into one clear error naming the op, rank and timeout."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self: "DistMesh", *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except (ValueError, TypeError):
                raise
            except RuntimeError as e:
                if isinstance(e, DistCollectiveError):
                    raise
                raise DistCollectiveError(
                    f"{op} failed on rank {self.rank} {self.coords}: {type(e).__name__}: "
                    f"{str(e).splitlines()[0] if str(e) else ''} (a peer process may have "
                    f"died or raised; collective timeout {self.timeout})") from e
        return wrapper
    return deco


def _torch_dtype(dtype: Any, like: torch.Tensor) -> torch.dtype:
    if dtype is None:
        return like.dtype
    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, np.dtype(dtype).name)


class DistMesh:
    """A :class:`Mesh` bound to a torch.distributed process group.

    Sub-groups for each set of mesh axes are created once, in the same order on every
    rank (every rank must call the same collectives, as in any SPMD program), and reused.

    Args:
        mesh: the mesh (or its shape); its size must equal the world size.
        timeout: shown in errors; the transport timeout is the process group's.
    """

    def __init__(self, mesh: Mesh | Sequence[int] | dict, timeout: datetime.timedelta | None = None):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("DistMesh: torch.distributed is not initialised; call "
                               "meshtensor.dist.init_from_env() or use meshtensor.dist.run()")
        self.mesh = mesh if isinstance(mesh, Mesh) else Mesh(mesh)
        world = dist.get_world_size()
        if world != self.mesh.size:
            raise ValueError(f"DistMesh: mesh {self.mesh} has {self.mesh.size} devices but the "
                             f"process group has {world} ranks")
        self.rank = dist.get_rank()
        self.coords = self.mesh.multi_index(self.rank)
        self.timeout = timeout
        self._groups: dict[tuple[int, ...], tuple[Any, list[int], int]] = {}

    def __repr__(self) -> str:
        return f"DistMesh({self.mesh!r}, rank={self.rank}, coords={self.coords})"

    # -- groups ------------------------------------------------------------------------
    def group(self, mesh_axes: Iterable[AxisLike], op: str = "DistMesh") -> tuple[Any, list[int], int]:
        """``(process group, member ranks in group order, my position)`` for the group over
        ``mesh_axes`` that contains this rank."""
        axes = self.mesh.axes_indices(mesh_axes, what=op)
        if axes not in self._groups:
            groups = self.mesh.group_array(axes)
            if groups.shape[1] == self.mesh.size:
                mine = (dist.group.WORLD, groups[0].tolist())
            elif groups.shape[1] > 1:
                mine = None
                for g in groups.tolist():  # every rank creates every group, in order
                    pg = dist.new_group(sorted(g))
                    if self.rank in g:
                        mine = (pg, g)
            else:
                mine = (None, [self.rank])
            pg, members = mine
            self._groups[axes] = (pg, members, members.index(self.rank))
        return self._groups[axes]

    @staticmethod
    def _perm(members: list[int]) -> list[int]:
        """torch orders a group's members by global rank; ``perm[t]`` is the in-group
        position (ours) of torch's ``t``-th member."""
        return [members.index(r) for r in sorted(members)]

    def _to_torch(self, members: list[int], ours: list) -> list:
        return [ours[i] for i in self._perm(members)]

    def _from_torch(self, members: list[int], theirs: list) -> list:
        out = [None] * len(theirs)
        for t, i in enumerate(self._perm(members)):
            out[i] = theirs[t]
        return out

    # -- helpers -----------------------------------------------------------------------------
    def _shapes(self, x: torch.Tensor, pg, members: list[int], op: str) -> list[tuple[int, ...]]:
        """Every member's local shape (the ranks must agree on the rank of the tensor)."""
        if len(members) == 1:
            return [tuple(x.shape)]
        mine = torch.tensor([x.ndim] + list(x.shape) + [0] * (8 - x.ndim), dtype=torch.int64)
        if x.ndim > 8:
            raise ValueError(f"{op}: tensors of rank {x.ndim} > 8 are not supported")
        outs = [torch.zeros_like(mine) for _ in members]
        dist.all_gather(outs, mine, group=pg)
        outs = self._from_torch(members, outs)
        ranks = {int(o[0]) for o in outs}
        if len(ranks) > 1:
            raise ValueError(f"{op}: local tensors have different ranks {sorted(ranks)}")
        return [tuple(int(v) for v in o[1:1 + x.ndim]) for o in outs]

    def _check_same(self, op: str, shapes, members, except_axis=None) -> None:
        check_same_shapes(op, self.mesh, shapes, members, except_axis)

    @staticmethod
    def _pad(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        if tuple(t.shape) == tuple(shape):
            return t.contiguous()
        out = torch.zeros(tuple(shape), dtype=t.dtype)
        out[tuple(slice(0, n) for n in t.shape)] = t
        return out

    @staticmethod
    def _piece(t: torch.Tensor, axis: int, k: int, i: int) -> torch.Tensor:
        b = chunk_bounds(t.shape[axis], k)
        return t.narrow(axis, int(b[i]), int(b[i + 1] - b[i]))

    @staticmethod
    def _piece_shape(shape, axis: int, k: int, i: int) -> tuple[int, ...]:
        b = chunk_bounds(shape[axis], k)
        s = list(shape)
        s[axis] = int(b[i + 1] - b[i])
        return tuple(s)

    @_guard("point-to-point exchange")
    def exchange(self, sends: dict[int, torch.Tensor], recv_shapes: dict[int, tuple[int, ...]],
                 dtype: torch.dtype) -> dict[int, torch.Tensor]:
        """Point-to-point: send ``sends[dst]`` to each rank, receive one tensor of
        ``recv_shapes[src]`` from each; one batched isend/irecv round."""
        ops, got = [], {}
        for dst, t in sorted(sends.items()):
            ops.append(dist.P2POp(dist.isend, t.contiguous(), dst))
        for src, shape in sorted(recv_shapes.items()):
            got[src] = torch.empty(shape, dtype=dtype)
            ops.append(dist.P2POp(dist.irecv, got[src], src))
        if ops:
            for req in dist.batch_isend_irecv(ops):
                req.wait()
        return got

    # -- the collectives ---------------------------------------------------------------------
    def _gather_shapes(self, op: str, x: torch.Tensor, pg, members, gather_axis: int):
        """Checked gather axis, every member's shape, and the padded block shape."""
        ax = check_tensor_axis(op, "gather_axis", gather_axis, x.ndim)
        shapes = self._shapes(x, pg, members, op)
        self._check_same(op, shapes, members, except_axis=ax)
        big = list(shapes[0])
        big[ax] = max(s[ax] for s in shapes)
        return ax, shapes, big

    @_guard("all_gather")
    def all_gather(self, x: torch.Tensor, mesh_axes, gather_axis: int) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_gather`, on this rank's local tensor."""
        pg, members, _ = self.group(mesh_axes, "all_gather")
        ax, shapes, big = self._gather_shapes("all_gather", x, pg, members, gather_axis)
        if len(members) == 1:
            return x.clone()
        # One flat buffer: member i's (padded) block lands at row i, then one copy
        # moves the blocks into place along the gather axis.
        buf = torch.empty([len(members)] + big, dtype=x.dtype)
        dist.all_gather_into_tensor(buf, self._pad(x, big).unsqueeze(0), group=pg)
        order = self._from_torch(members, list(range(len(members))))
        if all(s[ax] == big[ax] for s in shapes):
            blocks = buf[order] if order != list(range(len(members))) else buf
            return blocks.movedim(0, ax).reshape(big[:ax] + [-1] + big[ax + 1:]) \
                if ax else blocks.reshape([-1] + big[1:])
        return torch.cat([buf[t].narrow(ax, 0, shapes[i][ax]) for i, t in enumerate(order)],
                         dim=ax)

    @_guard("all_reduce")
    def all_reduce(self, x: torch.Tensor, mesh_axes, reduction: str = "sum", dtype=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_reduce` (``dtype`` accumulates)."""
        check_reduction("all_reduce", reduction)
        pg, members, _ = self.group(mesh_axes, "all_reduce")
        self._check_same("all_reduce", self._shapes(x, pg, members, "all_reduce"), members)
        y = x.to(_torch_dtype(dtype, x)).clone()
        if len(members) > 1:
            dist.all_reduce(y, op=_OPS[reduction], group=pg)
        return y

    def all_slice(self, x: torch.Tensor, mesh_axes, slice_axis: int) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_slice` (no communication)."""
        _, members, pos = self.group(mesh_axes, "all_slice")
        ax = check_tensor_axis("all_slice", "slice_axis", slice_axis, x.ndim)
        return self._piece(x, ax, len(members), pos).clone()

    @_guard("all_to_all")
    def all_to_all(self, x: torch.Tensor, mesh_axes, split_axis: int, concat_axis: int) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_to_all`."""
        pg, members, pos = self.group(mesh_axes, "all_to_all")
        sa = check_tensor_axis("all_to_all", "split_axis", split_axis, x.ndim)
        ca = check_tensor_axis("all_to_all", "concat_axis", concat_axis, x.ndim)
        k = len(members)
        shapes = self._shapes(x, pg, members, "all_to_all")
        pieces = [[self._piece_shape(s, sa, k, j) for j in range(k)] for s in shapes]
        self._check_same("all_to_all", [pieces[i][pos] for i in range(k)], members, except_axis=ca)
        for j in range(k):  # every receiver's parts must concatenate
            self._check_same("all_to_all", [pieces[i][j] for i in range(k)], members, except_axis=ca)
        if k == 1:
            return x.clone()
        # Direct sends: piece j to member j (gloo's alltoall is slower than its p2p).
        sends = {members[j]: self._piece(x, sa, k, j).contiguous()
                 for j in range(k) if j != pos}
        got = self.exchange(sends, {members[i]: pieces[i][pos] for i in range(k) if i != pos},
                            x.dtype)
        parts = [self._piece(x, sa, k, pos) if i == pos else got[members[i]] for i in range(k)]
        return torch.cat(parts, dim=ca)

    def _root_rank(self, op: str, mesh_axes, root) -> tuple[Any, list[int], int, int]:
        pg, members, pos = self.group(mesh_axes, op)
        axes = self.mesh.axes_indices(mesh_axes, what=op)
        r = root_position(op, self.mesh, axes, root)
        return pg, members, pos, r

    def _root_shape(self, x: torch.Tensor, pg, members, r: int) -> tuple[int, ...]:
        shape = torch.tensor(list(x.shape), dtype=torch.int64)
        if len(members) > 1:
            dist.broadcast(shape, src=members[r], group=pg)
        return tuple(int(v) for v in shape)

    @_guard("broadcast")
    def broadcast(self, x: torch.Tensor, mesh_axes, root) -> torch.Tensor:
        """As :func:`meshtensor.collectives.broadcast`."""
        pg, members, pos, r = self._root_rank("broadcast", mesh_axes, root)
        shape = self._root_shape(x, pg, members, r)
        y = x.clone().contiguous() if pos == r else torch.empty(shape, dtype=x.dtype)
        if len(members) > 1:
            dist.broadcast(y, src=members[r], group=pg)
        return y

    @_guard("gather")
    def gather(self, x: torch.Tensor, mesh_axes, gather_axis: int, root) -> torch.Tensor:
        """As :func:`meshtensor.collectives.gather`: the root gets the concatenation,
        others keep their input."""
        pg, members, pos, r = self._root_rank("gather", mesh_axes, root)
        ax, shapes, big = self._gather_shapes("gather", x, pg, members, gather_axis)
        if len(members) == 1:
            return x.clone()
        outs = [torch.empty(big, dtype=x.dtype) for _ in members] if pos == r else None
        dist.gather(self._pad(x, big), outs, dst=members[r], group=pg)
        if pos != r:
            return x.clone()
        outs = self._from_torch(members, outs)
        return torch.cat([o.narrow(ax, 0, s[ax]) for o, s in zip(outs, shapes)], dim=ax)

    @_guard("reduce")
    def reduce(self, x: torch.Tensor, mesh_axes, root, reduction: str = "sum", dtype=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.reduce` (non-roots keep their input, converted
        to ``dtype``)."""
        check_reduction("reduce", reduction)
        pg, members, pos, r = self._root_rank("reduce", mesh_axes, root)
        self._check_same("reduce", self._shapes(x, pg, members, "reduce"), members)
        y = x.to(_torch_dtype(dtype, x)).clone()
        if len(members) > 1:
            keep = y.clone()
            dist.reduce(y, dst=members[r], op=_OPS[reduction], group=pg)
            if pos != r:
                return keep
        return y

    @_guard("reduce_scatter")
    def reduce_scatter(self, x: torch.Tensor, mesh_axes, scatter_axis: int, reduction: str = "sum",
                       dtype=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.reduce_scatter`."""
        check_reduction("reduce_scatter", reduction)
        pg, members, pos = self.group(mesh_axes, "reduce_scatter")
        ax = check_tensor_axis("reduce_scatter", "scatter_axis", scatter_axis, x.ndim)
        self._check_same("reduce_scatter", self._shapes(x, pg, members, "reduce_scatter"), members)
        k = len(members)
        y = x.to(_torch_dtype(dtype, x))
        if k == 1:
            return y.clone()
        big = list(y.shape)
        big[ax] = -(-y.shape[ax] // k)
        ins = [self._pad(self._piece(y, ax, k, j), big) for j in range(k)]
        out = torch.empty(big, dtype=y.dtype)
        dist.reduce_scatter(out, self._to_torch(members, ins), op=_OPS[reduction], group=pg)
        return out.narrow(ax, 0, self._piece_shape(tuple(y.shape), ax, k, pos)[ax]).clone()

    @_guard("scatter")
    def scatter(self, x: torch.Tensor, mesh_axes, scatter_axis: int, root) -> torch.Tensor:
        """As :func:`meshtensor.collectives.scatter` (non-roots' input is ignored)."""
        pg, members, pos, r = self._root_rank("scatter", mesh_axes, root)
        ax = check_tensor_axis("scatter", "scatter_axis", scatter_axis, x.ndim)
        shape = self._root_shape(x, pg, members, r)
        k = len(members)
        if k == 1:
            return self._piece(x, ax, 1, 0).clone()
        big = list(shape)
        big[ax] = -(-shape[ax] // k)
        ins = [self._pad(self._piece(x, ax, k, j), big) for j in range(k)] if pos == r else None
        out = torch.empty(big, dtype=x.dtype)
        dist.scatter(out, self._to_torch(members, ins) if ins is not None else None,
                     src=members[r], group=pg)
        return out.narrow(ax, 0, self._piece_shape(shape, ax, k, pos)[ax]).clone()

    @_guard("permute")
    def permute(self, x: torch.Tensor, pairs: Iterable[tuple[DeviceLike, DeviceLike]]) -> torch.Tensor:
        """As :func:`meshtensor.collectives.permute` (every rank passes the same pairs)."""
        src_of = permute_sources("permute", self.mesh, pairs)
        return self._move(x, src_of)

    def _move(self, x: torch.Tensor, src_of: dict[int, int]) -> torch.Tensor:
        pg, members, _ = self.group(range(self.mesh.ndim), "permute")
        shapes = self._shapes(x, pg, members, "permute")  # world group: member i is rank i
        sends = {d: x for d, s in src_of.items() if s == self.rank and d != self.rank}
        src = src_of.get(self.rank)
        recv = {src: shapes[src]} if src is not None and src != self.rank else {}
        got = self.exchange(sends, recv, x.dtype)
        return got[src] if recv else x.clone()

    @_guard("shift")
    def shift(self, x: torch.Tensor, mesh_axes, shift_axis, offset: int, rotate: bool = False) -> torch.Tensor:
        """As :func:`meshtensor.collectives.shift`."""
        src, valid = shift_sources("shift", self.mesh, mesh_axes, shift_axis, offset, rotate)
        return self._move(x, {d: int(s) for d, (s, ok) in enumerate(zip(src, valid)) if ok})

    @_guard("update_halo")
    def update_halo(self, x: torch.Tensor, sharding: Sharding, global_shape: Sequence[int]) -> torch.Tensor:
        """As :func:`meshtensor.collectives.update_halo`: ``x`` is this rank's local array
        laid out as ``sharding`` says for a tensor of ``global_shape``."""
        shape = sharding.check_shape(global_shape, "update_halo")
        want = sharding.local_shape(shape, self.rank)
        if tuple(x.shape) != want:
            raise ValueError(f"update_halo: rank {self.rank} holds shape {tuple(x.shape)}, "
                             f"sharding {sharding} of global shape {shape} expects {want}")
        step = transfer_step(sharding, sharding, shape, x.element_size(),
                              held=sharding.regions(shape))
        return self._transfers(x, step, shape, base=x.clone())

    def _transfers(self, x: torch.Tensor, step: TransferStep, shape, base: torch.Tensor) -> torch.Tensor:
        """Run this rank's part of a transfer step into ``base`` (its new array): one
        message per peer, the boxes packed in plan order."""
        me = self.rank
        w0, _ = step.after.windows(shape)
        s0, _ = step.before.windows(shape)
        sends: dict[int, list[torch.Tensor]] = {}
        recvs: dict[int, list[int]] = {}
        for i in np.flatnonzero(step.src == me).tolist():
            sends.setdefault(int(step.dst[i]), []).append(
                x[box_slices(step.lo[i], step.hi[i], s0[me])].reshape(-1))
        for i in np.flatnonzero(step.dst == me).tolist():
            recvs.setdefault(int(step.src[i]), []).append(i)
        sizes = {s: sum(int(np.prod(step.hi[i] - step.lo[i])) for i in rows)
                 for s, rows in recvs.items()}
        got = self.exchange({d: torch.cat(p) for d, p in sends.items()},
                            {s: (n,) for s, n in sizes.items()}, x.dtype)
        for s, rows in recvs.items():
            flat, at = got[s], 0
            for i in rows:
                sl = box_slices(step.lo[i], step.hi[i], w0[me])
                n = int(np.prod(step.hi[i] - step.lo[i]))
                base[sl] = flat[at:at + n].reshape(base[sl].shape)
                at += n
        return base


def dist_reshard(local: torch.Tensor, src: Sharding, tgt: Sharding, global_shape: Sequence[int],
                 dmesh: DistMesh) -> torch.Tensor:
    """Execute ``plan_reshard(src, tgt, global_shape)`` with torch.distributed and return
    this rank's new local tensor. Every rank calls it with its own local tensor; the
    plan is computed identically on each."""
    if not isinstance(local, torch.Tensor):
        raise TypeError(f"dist_reshard: local must be a torch.Tensor, got {type(local).__name__}")
    shape = src.check_shape(global_shape, "dist_reshard")
    want = src.local_shape(shape, dmesh.rank)
    if tuple(local.shape) != want:
        raise ValueError(f"dist_reshard: rank {dmesh.rank} holds shape {tuple(local.shape)}, "
                         f"sharding {src} of global shape {shape} expects {want}")
    plan = plan_reshard(src, tgt, shape, local.element_size())
    x = local
    for step in plan.steps:
        if isinstance(step, TransferStep):
            x = _run_transfer_step(dmesh, x, step, shape)
        elif step.op == "update_halo":
            local = TransferStep.local_only(step.before, step.after, len(shape))
            relaid = _run_transfer_step(dmesh, x, local, shape)
            x = dmesh.update_halo(relaid, step.after, shape)
        else:
            x = getattr(dmesh, step.op)(x, list(step.mesh_axes), **step.kwargs)
    return x


def _run_transfer_step(dmesh: DistMesh, x: torch.Tensor, step: TransferStep, shape) -> torch.Tensor:
    base = torch.zeros(new_local_shape(step, shape, dmesh.rank), dtype=x.dtype)
    own = own_cells(step, shape, dmesh.rank)
    if own is not None:
        base[own[0]] = x[own[1]]
    return dmesh._transfers(x, step, shape, base)


__all__ = ["DistMesh", "DistCollectiveError", "dist_reshard"]
