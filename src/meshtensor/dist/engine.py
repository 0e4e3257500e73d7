"""Collectives and reshard plans on torch.distributed, one process per device.

Rank ``r`` of the process group is the device with linear index ``r``. Every rank
holds only its own local tensor (a torch tensor or a NumPy array: the result is of the
same kind); argument checks and plans are the core layer's, so results equal the NumPy
simulator's exactly. Gathers, and two-member sum or product
reduce-scatters, run as one batched isend/irecv round (gloo copies collectives' data
through flat buffers, and its reduce_scatter all-reduces the whole input); elsewhere
uneven pieces travel padded to the largest piece (gloo's collectives need equal sizes)
and are trimmed on arrival.
"""

from __future__ import annotations

import datetime
import functools
import inspect
from typing import Any, Iterable, Sequence

import numpy as np
import torch
import torch.distributed as dist

from ..collectives import (check_same_shapes, check_tensor_axis, permute_sources,
                           root_position, shift_sources)
from ..mesh import AxisLike, DeviceLike, Mesh
from ..reduction import REDUCTIONS, check_accumulation, check_reduction
from ..boxes import box_slices
from ..resharding import (TransferStep, new_local_shape, own_cells, plan_reshard,
                          transfer_step)
from ..sharding import Sharding, chunk_bounds

# each binary operation of a Reduction (meshtensor.reduction) in torch.distributed
_REDUCE_OPS = {"add": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
               "mul": dist.ReduceOp.PRODUCT}


def _op(reduction: str) -> dist.ReduceOp:
    return _REDUCE_OPS[REDUCTIONS[reduction].op]


# gloo has no 16-bit or unsigned wide integers ("Invalid scalar type"). Data moves as a
# same-size type (gloo copies bytes); reductions run in a wider type and are cast back,
# which wraps exactly as the narrow type would (sum and prod modulo 2^bits; max and min
# exact). uint64 reduces as int64 bits, its order kept by flipping the sign bit.
_WIRE = {torch.int16: torch.float16, torch.uint16: torch.float16, torch.uint32: torch.int32,
         torch.uint64: torch.int64}
_WIDE = {torch.int16: torch.int32, torch.uint16: torch.int32, torch.uint32: torch.int64}
_SIGN = -2 ** 63


def _wire(t: torch.Tensor) -> torch.Tensor:
    """``t``'s bytes as a type every backend moves (a view: writes land in ``t``)."""
    return t.view(_WIRE[t.dtype]) if t.dtype in _WIRE else t


def _reducible(t: torch.Tensor, reduction: str) -> torch.Tensor:
    """A tensor the backend can reduce whose result :func:`_unreducible` maps back."""
    if t.dtype in _WIDE:
        return t.to(_WIDE[t.dtype])
    if t.dtype == torch.uint64:
        bits = t.view(torch.int64)
        return bits ^ _SIGN if reduction in ("max", "min") else bits.clone()
    return t


def _unreducible(t: torch.Tensor, dtype: torch.dtype, reduction: str) -> torch.Tensor:
    if dtype in _WIDE:
        return t.to(dtype)
    if dtype == torch.uint64:
        return (t ^ _SIGN if reduction in ("max", "min") else t).view(torch.uint64)
    return t


# Reductions of two terms the engine runs itself after one point-to-point swap: for
# these dtypes torch's elementwise op is gloo's, and a op b is b op a bit for bit.
_P2P_OPS = {"add": torch.add, "mul": torch.mul}
_P2P_DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)


def runs_point_to_point(op: str, group_size: int, reduction: str | None = None,
                        dtype: torch.dtype | None = None) -> bool:
    """Whether :class:`DistMesh` runs collective ``op`` over ``group_size`` members as
    one batched isend/irecv round instead of gloo's collective (always for gathers; for
    a two-member ``reduce_scatter`` of a sum or product of 32/64-bit numbers, as gloo's
    reduce_scatter all-reduces the whole input).

    Example::

        runs_point_to_point("reduce_scatter", 2, "sum", torch.float32)   # True
    """
    if op == "all_gather":
        return group_size > 1
    return (op == "reduce_scatter" and group_size == 2 and reduction in REDUCTIONS
            and REDUCTIONS[reduction].op in _P2P_OPS and dtype in _P2P_DTYPES)


def _p2p(sends: dict[int, torch.Tensor], recvs: dict[int, torch.Tensor], group=None) -> None:
    """One batched isend/irecv round on ``group``: ``sends[dst]`` to each global rank,
    into ``recvs[src]`` (contiguous, written in place) from each. Empty tensors are not
    sent (both sides know the shapes); ``group``'s timeout applies."""
    ops = [dist.P2POp(dist.isend, _wire(t.contiguous()), dst, group=group)
           for dst, t in sorted(sends.items()) if t.numel()]
    ops += [dist.P2POp(dist.irecv, _wire(t), src, group=group)
            for src, t in sorted(recvs.items()) if t.numel()]
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()


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
                    f"died or raised; collective timeout {_seconds(self.timeout)})") from e
        return wrapper
    return deco


def _as_tensor(op: str, name: str, x: Any) -> tuple[torch.Tensor, bool]:
    """``x`` as a torch tensor, and whether it was a NumPy array (then the result goes
    back as one). NumPy memory is shared where torch can share it (writable, native
    byte order, no negative strides), else copied; the engine never writes its input."""
    if isinstance(x, torch.Tensor):
        return x, False
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: {name} must be a torch.Tensor or a NumPy array, got "
                        f"{type(x).__name__}")
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    elif not x.flags.writeable or any(st < 0 for st in x.strides):
        x = np.array(x)
    try:
        return torch.from_numpy(x), True
    except TypeError:
        raise TypeError(f"{op}: {name} is a NumPy array of dtype {x.dtype}, which torch "
                        f"cannot hold; pass bool, int8-int64, uint8-uint64, float16-float64 "
                        f"or complex64/complex128 data") from None


def _numpy_io(op: str):
    """Let a collective take a NumPy array as well as a torch tensor (its first
    argument) and return the input's kind. A NumPy input with a torch-only
    accumulation ``dtype`` (bfloat16) is refused before any communication."""
    def deco(fn):
        names = list(inspect.signature(fn).parameters)[2:]  # after self and x
        at = names.index("dtype") if "dtype" in names else None

        @functools.wraps(fn)
        def wrapper(self: "DistMesh", x, *args, **kwargs):
            t, was_numpy = _as_tensor(op, "x", x)
            if not was_numpy:
                return fn(self, t, *args, **kwargs)
            dtype = kwargs.get("dtype", args[at] if at is not None and len(args) > at else None)
            if isinstance(dtype, torch.dtype) and _numpy_dtype(dtype) is None:
                raise TypeError(f"{op}: dtype {dtype} has no NumPy equivalent to return for a "
                                f"NumPy input; pass a torch tensor (torch.from_numpy(x)) to "
                                f"get a {_name(dtype)} result")
            return fn(self, t, *args, **kwargs).numpy()
        return wrapper
    return deco


def _seconds(td: datetime.timedelta | None) -> str:
    return "the process group's" if td is None else f"{td.total_seconds():g} s"


def _as_timedelta(timeout: Any) -> datetime.timedelta | None:
    """``timeout`` as a timedelta: seconds (int or float) or a timedelta, positive."""
    if timeout is None or isinstance(timeout, datetime.timedelta):
        td = timeout
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        td = datetime.timedelta(seconds=timeout)
    else:
        raise TypeError(f"DistMesh: timeout must be seconds or a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    if td is not None and td.total_seconds() <= 0:
        raise ValueError(f"DistMesh: timeout must be positive, got {td.total_seconds():g} s")
    return td


def _group_timeout() -> datetime.timedelta | None:
    """The default process group's collective timeout (None where torch hides it)."""
    pg = dist.group.WORLD
    for dev in getattr(pg, "_device_types", ()):
        try:
            return pg._get_backend(dev).options._timeout
        except (AttributeError, RuntimeError):
            continue
    return None


def _numpy_dtype(t: torch.dtype) -> np.dtype | None:
    """The NumPy dtype of a torch dtype (None for bfloat16 and others NumPy lacks)."""
    try:
        return np.dtype(_name(t))
    except TypeError:
        return None


def _dtype_to_torch(op: str, dtype: Any) -> torch.dtype:
    """A torch dtype, or a NumPy dtype (or its name) as the same torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return getattr(torch, np.dtype(dtype).name)
    except (TypeError, AttributeError):
        raise TypeError(f"{op}: dtype {dtype!r} is not a NumPy or torch dtype") from None


def _torch_dtype(op: str, dtype: Any, like: torch.Tensor) -> torch.dtype:
    """The accumulation dtype: ``dtype`` (NumPy or torch) if it holds every value of
    ``like``'s dtype, else a ValueError (the simulator's rule, in one place)."""
    if dtype is None:
        return like.dtype
    out = _dtype_to_torch(op, dtype)
    src, dst = _numpy_dtype(like.dtype), _numpy_dtype(out)
    safe = (np.can_cast(src, dst, casting="safe") if src is not None and dst is not None
            else _bfloat16_safe(like.dtype, out))
    check_accumulation(op, _name(like.dtype), _name(out), safe=safe)
    return out


def _name(t: torch.dtype) -> str:
    return str(t).removeprefix("torch.")


def _bfloat16_safe(src: torch.dtype, dst: torch.dtype) -> bool:
    """NumPy has no bfloat16: its values are a subset of float32's, and it holds every
    bool, int8 and uint8 exactly."""
    if src == dst:
        return True
    if src == torch.bfloat16:
        d = _numpy_dtype(dst)
        return d is not None and np.can_cast(np.float32, d, casting="safe")
    return dst == torch.bfloat16 and src in (torch.bool, torch.int8, torch.uint8)


class DistMesh:
    """A :class:`Mesh` bound to a torch.distributed process group.

    Sub-groups for each set of mesh axes are created once, in the same order on every
    rank (every rank must call the same collectives, as in any SPMD program), and reused.

    Every collective takes this rank's local tensor as a torch tensor or a NumPy array
    and returns the same kind (NumPy results of dtypes torch lacks, such as a bfloat16
    accumulation, are refused with a TypeError: pass a torch tensor for those).

    Every collective accepts ``shapes=``: every device's local shape by linear device
    index (``(mesh.size, ndim)``), when the caller knows them (``dist_reshard`` does,
    from the shardings). Without it the group first all-gathers its shapes (one extra
    round trip) to check them and to size uneven pieces.

    Args:
        mesh: the mesh (or its shape); its size must equal the world size.
        timeout: how long a collective or point-to-point exchange waits for its peers
            (seconds or a timedelta; default: the default process group's timeout). It
            holds on every group the mesh uses, the whole mesh included. A late or dead
            peer makes the operation raise :class:`DistCollectiveError` after about
            this long.

    Example (inside ``fn`` of ``meshtensor.dist.run(fn, (2, 2))``, ``dm`` a DistMesh)::

        dm.all_reduce(torch.ones(3), ["x"])      # tensor([2., 2., 2.]) on every rank
        dm.all_reduce(np.ones(3), ["x"])         # array([2., 2., 2.])
    """

    def __init__(self, mesh: Mesh | Sequence[int] | dict,
                 timeout: datetime.timedelta | float | None = None):
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
        stock = _group_timeout()
        self.timeout = _as_timedelta(timeout) or stock
        # collectives over the whole mesh and point-to-point exchanges run on a group of
        # every rank with this timeout: the default group's may be much longer (gloo's
        # 30 minutes) than the one an error message quotes (every rank creates it)
        self._world = dist.group.WORLD if self.timeout == stock else \
            dist.new_group(list(range(world)), timeout=self.timeout)
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
                mine = (self._world, groups[0].tolist())
            elif groups.shape[1] > 1:
                mine = None
                for g in groups.tolist():  # every rank creates every group, in order
                    pg = dist.new_group(sorted(g), timeout=self.timeout)
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
    def _known(self, op: str, x: torch.Tensor, shapes, mine: bool = True) -> np.ndarray | None:
        """``shapes`` checked: one shape of ``x``'s rank per device, this rank's equal to
        ``x.shape`` where the op reads its input (``mine``)."""
        if shapes is None:
            return None
        arr = np.asarray(shapes)
        if arr.shape != (self.mesh.size, x.ndim) or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"{op}: shapes must hold one local shape of rank {x.ndim} per "
                             f"device, an integer array of shape ({self.mesh.size}, {x.ndim}); "
                             f"got shape {arr.shape} of {arr.dtype}")
        if mine and tuple(arr[self.rank].tolist()) != tuple(x.shape):
            raise ValueError(f"{op}: shapes[{self.rank}] is {tuple(arr[self.rank].tolist())} but "
                             f"rank {self.rank} {self.coords} holds {tuple(x.shape)}")
        return arr.astype(np.int64, copy=False)

    def _shapes(self, x: torch.Tensor, pg, members: list[int], op: str,
                known: np.ndarray | None = None) -> list[tuple[int, ...]]:
        """Every member's local shape: from ``known`` when given, else all-gathered (the
        ranks must agree on the rank of the tensor)."""
        if known is not None:
            return [tuple(known[m].tolist()) for m in members]
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
    def exchange(self, sends: dict[int, Any], recv_shapes: dict[int, tuple[int, ...]],
                 dtype: Any) -> dict[int, Any]:
        """Point-to-point: send ``sends[dst]`` (a torch tensor or NumPy array) to each
        rank, receive one array of ``recv_shapes[src]`` and ``dtype`` from each; one
        batched isend/irecv round, on a group of every rank with this mesh's timeout. A
        torch ``dtype`` receives torch tensors, a NumPy one (``np.float32``, ``"int8"``)
        NumPy arrays.

        Example (ranks 0 and 1 swap two floats)::

            dm.exchange({1 - dm.rank: np.ones(2, np.float32)}, {1 - dm.rank: (2,)}, np.float32)
        """
        as_numpy = not isinstance(dtype, torch.dtype)
        dt = _dtype_to_torch("exchange", dtype)
        out = {dst: _as_tensor("exchange", f"sends[{dst}]", t)[0] for dst, t in sends.items()}
        got = {src: torch.empty(shape, dtype=dt) for src, shape in recv_shapes.items()}
        _p2p(out, got, self._world)
        return {src: t.numpy() for src, t in got.items()} if as_numpy else got

    # -- the collectives ---------------------------------------------------------------------
    def _gather_shapes(self, op: str, x: torch.Tensor, pg, members, gather_axis: int, known):
        """Checked gather axis, every member's shape, and the padded block shape."""
        ax = check_tensor_axis(op, "gather_axis", gather_axis, x.ndim)
        shapes = self._shapes(x, pg, members, op, known)
        self._check_same(op, shapes, members, except_axis=ax)
        big = list(shapes[0])
        big[ax] = max(s[ax] for s in shapes)
        return ax, shapes, big

    @_numpy_io("all_gather")
    @_guard("all_gather")
    def all_gather(self, x: torch.Tensor, mesh_axes, gather_axis: int, *,
                   shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_gather`, on this rank's local tensor."""
        known = self._known("all_gather", x, shapes)
        pg, members, pos = self.group(mesh_axes, "all_gather")
        ax, shapes, big = self._gather_shapes("all_gather", x, pg, members, gather_axis, known)
        if len(members) == 1:
            return x.clone()
        # Direct sends of each exact block (no padding): gloo's all_gather copies its
        # input and output through flat buffers, p2p moves the tensors themselves.
        # Along dim 0 the blocks land in place in the result; along another dim one
        # concatenation lays them out.
        sends = {m: x for m in members if m != self.rank}
        if ax == 0:
            out = torch.empty([sum(s[0] for s in shapes)] + big[1:], dtype=x.dtype)
            at = np.cumsum([0] + [s[0] for s in shapes]).tolist()
            blocks = [out.narrow(0, at[i], shapes[i][0]) for i in range(len(members))]
            blocks[pos].copy_(x)
            _p2p(sends, {m: blocks[i] for i, m in enumerate(members) if i != pos}, pg)
            return out
        blocks = [x if i == pos else torch.empty(shapes[i], dtype=x.dtype)
                  for i in range(len(members))]
        _p2p(sends, {m: blocks[i] for i, m in enumerate(members) if i != pos}, pg)
        return torch.cat(blocks, dim=ax)

    @_numpy_io("all_reduce")
    @_guard("all_reduce")
    def all_reduce(self, x: torch.Tensor, mesh_axes, reduction: str = "sum", dtype=None, *,
                   shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_reduce` (``dtype`` accumulates; one that
        cannot hold every input value raises ValueError)."""
        check_reduction("all_reduce", reduction)
        dt = _torch_dtype("all_reduce", dtype, x)
        known = self._known("all_reduce", x, shapes)
        pg, members, _ = self.group(mesh_axes, "all_reduce")
        self._check_same("all_reduce", self._shapes(x, pg, members, "all_reduce", known), members)
        y = x.to(dt, copy=True)
        if len(members) > 1:
            z = _reducible(y, reduction)
            dist.all_reduce(z, op=_op(reduction), group=pg)
            y = _unreducible(z, dt, reduction)
        return y

    @_numpy_io("all_slice")
    def all_slice(self, x: torch.Tensor, mesh_axes, slice_axis: int, *,
                  shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_slice` (no communication; ``shapes`` is
        only checked)."""
        self._known("all_slice", x, shapes)
        _, members, pos = self.group(mesh_axes, "all_slice")
        ax = check_tensor_axis("all_slice", "slice_axis", slice_axis, x.ndim)
        return self._piece(x, ax, len(members), pos).clone()

    @_numpy_io("all_to_all")
    @_guard("all_to_all")
    def all_to_all(self, x: torch.Tensor, mesh_axes, split_axis: int, concat_axis: int, *,
                   shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.all_to_all`."""
        known = self._known("all_to_all", x, shapes)
        pg, members, pos = self.group(mesh_axes, "all_to_all")
        sa = check_tensor_axis("all_to_all", "split_axis", split_axis, x.ndim)
        ca = check_tensor_axis("all_to_all", "concat_axis", concat_axis, x.ndim)
        k = len(members)
        shapes = self._shapes(x, pg, members, "all_to_all", known)
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

    def _root_shape(self, x: torch.Tensor, pg, members, r: int, known) -> tuple[int, ...]:
        if known is not None:
            return tuple(known[members[r]].tolist())
        shape = torch.tensor(list(x.shape), dtype=torch.int64)
        if len(members) > 1:
            dist.broadcast(shape, src=members[r], group=pg)
        return tuple(int(v) for v in shape)

    @_numpy_io("broadcast")
    @_guard("broadcast")
    def broadcast(self, x: torch.Tensor, mesh_axes, root, *, shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.broadcast`."""
        pg, members, pos, r = self._root_rank("broadcast", mesh_axes, root)
        known = self._known("broadcast", x, shapes, mine=pos == r)
        shape = self._root_shape(x, pg, members, r, known)
        y = x.clone().contiguous() if pos == r else torch.empty(shape, dtype=x.dtype)
        if len(members) > 1:
            dist.broadcast(_wire(y), src=members[r], group=pg)
        return y

    @_numpy_io("gather")
    @_guard("gather")
    def gather(self, x: torch.Tensor, mesh_axes, gather_axis: int, root, *,
               shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.gather`: the root gets the concatenation,
        others keep their input."""
        known = self._known("gather", x, shapes)
        pg, members, pos, r = self._root_rank("gather", mesh_axes, root)
        ax, shapes, big = self._gather_shapes("gather", x, pg, members, gather_axis, known)
        if len(members) == 1:
            return x.clone()
        outs = [torch.empty(big, dtype=x.dtype) for _ in members] if pos == r else None
        dist.gather(_wire(self._pad(x, big)), [_wire(o) for o in outs] if outs else None,
                    dst=members[r], group=pg)
        if pos != r:
            return x.clone()
        outs = self._from_torch(members, outs)
        return torch.cat([o.narrow(ax, 0, s[ax]) for o, s in zip(outs, shapes)], dim=ax)

    @_numpy_io("reduce")
    @_guard("reduce")
    def reduce(self, x: torch.Tensor, mesh_axes, root, reduction: str = "sum", dtype=None, *,
               shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.reduce` (non-roots keep their input, converted
        to ``dtype``)."""
        check_reduction("reduce", reduction)
        dt = _torch_dtype("reduce", dtype, x)
        known = self._known("reduce", x, shapes)
        pg, members, pos, r = self._root_rank("reduce", mesh_axes, root)
        self._check_same("reduce", self._shapes(x, pg, members, "reduce", known), members)
        y = x.to(dt).clone()
        if len(members) > 1:
            z = _reducible(y, reduction)
            z = y.clone() if z is y else z  # the backend may write into z on any rank
            dist.reduce(z, dst=members[r], op=_op(reduction), group=pg)
            if pos == r:
                y = _unreducible(z, dt, reduction)
        return y

    @_numpy_io("reduce_scatter")
    @_guard("reduce_scatter")
    def reduce_scatter(self, x: torch.Tensor, mesh_axes, scatter_axis: int, reduction: str = "sum",
                       dtype=None, *, shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.reduce_scatter`."""
        check_reduction("reduce_scatter", reduction)
        dt = _torch_dtype("reduce_scatter", dtype, x)
        known = self._known("reduce_scatter", x, shapes)
        pg, members, pos = self.group(mesh_axes, "reduce_scatter")
        ax = check_tensor_axis("reduce_scatter", "scatter_axis", scatter_axis, x.ndim)
        self._check_same("reduce_scatter", self._shapes(x, pg, members, "reduce_scatter", known),
                         members)
        k = len(members)
        y = x.to(dt)
        if k == 1:
            return y.clone()
        if runs_point_to_point("reduce_scatter", k, reduction, dt):
            # Two members: send the peer its piece, add its piece of mine (a + b is b + a
            # bit for bit). gloo's reduce_scatter all-reduces the whole tensor instead.
            other = 1 - pos
            mine = self._piece(y, ax, 2, pos)
            got = torch.empty(tuple(mine.shape), dtype=dt)
            _p2p({members[other]: self._piece(y, ax, 2, other)}, {members[other]: got}, pg)
            return _P2P_OPS[REDUCTIONS[reduction].op](mine, got, out=got)
        big = list(y.shape)
        big[ax] = -(-y.shape[ax] // k)
        ins = [_reducible(self._pad(self._piece(y, ax, k, j), big), reduction) for j in range(k)]
        out = torch.empty(big, dtype=ins[0].dtype)
        dist.reduce_scatter(out, self._to_torch(members, ins), op=_op(reduction), group=pg)
        out = _unreducible(out, dt, reduction)
        n = self._piece_shape(tuple(y.shape), ax, k, pos)[ax]
        return out if n == big[ax] else out.narrow(ax, 0, n).clone()

    @_numpy_io("scatter")
    @_guard("scatter")
    def scatter(self, x: torch.Tensor, mesh_axes, scatter_axis: int, root, *,
                shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.scatter` (non-roots' input is ignored)."""
        pg, members, pos, r = self._root_rank("scatter", mesh_axes, root)
        ax = check_tensor_axis("scatter", "scatter_axis", scatter_axis, x.ndim)
        known = self._known("scatter", x, shapes, mine=pos == r)
        shape = self._root_shape(x, pg, members, r, known)
        k = len(members)
        if k == 1:
            return self._piece(x, ax, 1, 0).clone()
        big = list(shape)
        big[ax] = -(-shape[ax] // k)
        ins = [self._pad(self._piece(x, ax, k, j), big) for j in range(k)] if pos == r else None
        out = torch.empty(big, dtype=x.dtype)
        ins = None if ins is None else [_wire(t) for t in ins]
        dist.scatter(_wire(out), self._to_torch(members, ins) if ins is not None else None,
                     src=members[r], group=pg)
        return out.narrow(ax, 0, self._piece_shape(shape, ax, k, pos)[ax]).clone()

    @_numpy_io("permute")
    @_guard("permute")
    def permute(self, x: torch.Tensor, pairs: Iterable[tuple[DeviceLike, DeviceLike]], *,
                shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.permute` (every rank passes the same pairs)."""
        src_of = permute_sources("permute", self.mesh, pairs)
        return self._move(x, src_of, self._known("permute", x, shapes))

    def _move(self, x: torch.Tensor, src_of: dict[int, int], known) -> torch.Tensor:
        pg, members, _ = self.group(range(self.mesh.ndim), "permute")
        # the world group: member i is rank i
        shapes = self._shapes(x, pg, members, "permute", known)
        sends = {d: x for d, s in src_of.items() if s == self.rank and d != self.rank}
        src = src_of.get(self.rank)
        recv = {src: shapes[src]} if src is not None and src != self.rank else {}
        got = self.exchange(sends, recv, x.dtype)
        return got[src] if recv else x.clone()

    @_numpy_io("shift")
    @_guard("shift")
    def shift(self, x: torch.Tensor, mesh_axes, shift_axis, offset: int, rotate: bool = False, *,
              shapes=None) -> torch.Tensor:
        """As :func:`meshtensor.collectives.shift`."""
        src, valid = shift_sources("shift", self.mesh, mesh_axes, shift_axis, offset, rotate)
        return self._move(x, {d: int(s) for d, (s, ok) in enumerate(zip(src, valid)) if ok},
                          self._known("shift", x, shapes))

    @_numpy_io("update_halo")
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


def dist_reshard(local: Any, src: Sharding, tgt: Sharding, global_shape: Sequence[int],
                 dmesh: DistMesh) -> Any:
    """Execute ``plan_reshard(src, tgt, global_shape)`` with torch.distributed and return
    this rank's new local tensor, of the kind of ``local`` (a torch tensor or a NumPy
    array). Every rank calls it with its own local tensor; the plan is computed
    identically on each. Every local shape follows from the shardings, so collectives
    skip their shape exchange: one transport call per collective step.

    Example (inside ``fn`` of ``meshtensor.dist.run(fn, (2, 2))``)::

        s, t = Sharding(dm.mesh, [[0], [1]]), Sharding(dm.mesh, [[1], [0]])
        dist_reshard(np.zeros((2, 3)), s, t, (4, 6), dm)    # a (2, 3) ndarray
    """
    local, was_numpy = _as_tensor("dist_reshard", "local", local)
    for name, s in (("src", src), ("tgt", tgt)):
        if not isinstance(s, Sharding):
            raise TypeError(f"dist_reshard: {name} must be a Sharding, got {type(s).__name__}")
    if src.mesh != dmesh.mesh:
        raise ValueError(f"dist_reshard: src is on mesh {src.mesh!r} but the DistMesh is "
                         f"{dmesh.mesh!r}")
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
            w0, w1 = step.before.windows(shape)  # every device's local shape, known
            x = getattr(dmesh, step.op)(x, list(step.mesh_axes), **step.kwargs, shapes=w1 - w0)
    return x.numpy() if was_numpy else x


def _run_transfer_step(dmesh: DistMesh, x: torch.Tensor, step: TransferStep, shape) -> torch.Tensor:
    base = torch.zeros(new_local_shape(step, shape, dmesh.rank), dtype=x.dtype)
    own = own_cells(step, shape, dmesh.rank)
    if own is not None:
        base[own[0]] = x[own[1]]
    return dmesh._transfers(x, step, shape, base)


__all__ = ["DistMesh", "DistCollectiveError", "dist_reshard", "runs_point_to_point"]


#: the torch.distributed backend of every host op (meshtensor.comm_ops): DistMesh methods
TORCH = {name: getattr(DistMesh, name) for name in (
    "all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather", "reduce",
    "reduce_scatter", "scatter", "permute", "shift", "update_halo")}
