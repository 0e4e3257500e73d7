"""What one execution of a comm op sends between cores: ``(sender, receiver, nbytes)``
arrays, with the conventions of :mod:`meshtensor.cost` (direct one-shot collectives).

Tilelang-Mesh's ops (``tm_*``) move what the chip moves, in phases (one superstep
each): a row or column multicast is one transfer per receiver along the line; a 2-D
broadcast is a column multicast, then one row multicast per row; ``all_gather`` is one
such broadcast per member; a put between different rows and columns is two transfers
(down the sender's column to ``(dst_row, src_col)``, then along that row);
``all_reduce`` gathers the partial results along the rows and/or columns.
:func:`tm_executions` evaluates the cores an op names at every execution (and refuses
two senders to one destination), :func:`tm_phases` gives the transfers of one."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...collectives import root_position, shift_sources
from ...sharding import chunk_bounds
from ..ir.comm_op import CommOp
from ..ir.expr import static_int
from ..ir.scope import nbytes
from ..ir.evaluate import IterSpace
from ..ir.kernel import executions, runs_per_core

__all__ = ["comm_flows", "FLOWS", "TM_OPS", "tm_executions", "tm_phases"]

TM_OPS = ("tm_broadcast", "tm_put", "tm_all_gather", "tm_all_reduce")


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


def comm_flows(op: CommOp, root: Sequence[int] | None = None, cores: Any = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sender, receiver, nbytes)``: what one execution of ``op`` sends between distinct
    cores (linear ids; a core's data to itself excluded), with the conventions of
    :mod:`meshtensor.cost` (direct one-shot collectives; ``all_reduce`` = reduce_scatter
    + all_gather over the flattened region). ``root``: concrete in-group coordinates for
    a broadcast whose root is not static. Barrier: no flows. Tilelang-Mesh's ops: all
    their phases (:func:`tm_phases`); ``cores``: the senders of a ``tm_broadcast`` or
    the ``(sender, receiver)`` pairs of a ``tm_put`` (linear ids) whose cores are not
    static.

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
    if op.op not in FLOWS:
        raise ValueError(f"comm_flows: unknown comm op {op.op!r}")
    return FLOWS[op.op](op, root, cores)


def _groups(op: CommOp) -> tuple[Any, tuple[int, ...], np.ndarray]:
    axes = tuple(op.mesh_axes)
    return op.mesh, axes, op.mesh.group_array(axes)


def _flows_barrier(op: CommOp, root: Any, cores: Any) -> _Flow:
    z = np.zeros(0, dtype=np.int64)
    return z, z.copy(), z.copy()


def _flows_tm(op: CommOp, root: Any, cores: Any) -> _Flow:
    phases = tm_phases(op, _static_cores(op) if cores is None else _cores_key(op, cores))
    return tuple(np.concatenate(a) for a in zip(*phases))  # type: ignore[return-value]


def _flows_broadcast(op: CommOp, root: Any, cores: Any) -> _Flow:
    mesh, axes, groups = _groups(op)
    what = f"comm_flows({op.op})"
    if root is None:
        vals = [static_int(r) for r in op.root]
        if None in vals:
            raise ValueError(f"{what}: root {[str(r) for r in op.root]} is not static; "
                             f"pass root= as in-group coordinates")
        root = vals
    r = root_position(what, mesh, axes, root)
    G, k = groups.shape
    return _flows(np.broadcast_to(groups[:, r:r + 1], (G, k)), groups, op.nbytes)


def _flows_all_gather(op: CommOp, root: Any, cores: Any) -> _Flow:
    return _exchange(_groups(op)[2], np.int64(op.nbytes))


def _flows_pieces(op: CommOp, root: Any, cores: Any) -> _Flow:
    """reduce_scatter and all_to_all: member p's piece p of every member's region."""
    groups = _groups(op)[2]
    ext = op.static_extents("src")
    ax = op.params["scatter_axis" if op.op == "reduce_scatter" else "split_axis"]
    piece = _piece_sizes(ext[ax], groups.shape[1]) * (op.nbytes // max(ext[ax], 1))
    return _exchange(groups, piece[None, None, :])


def _flows_all_reduce(op: CommOp, root: Any, cores: Any) -> _Flow:
    groups = _groups(op)[2]
    ext = op.static_extents("src")
    n = int(np.prod(ext, dtype=np.int64))
    p = _piece_sizes(n, groups.shape[1]) * (op.nbytes // max(n, 1))
    return _exchange(groups, p[None, None, :] + p[None, :, None])


def _flows_shift(op: CommOp, root: Any, cores: Any) -> _Flow:
    mesh, axes, _ = _groups(op)
    src, valid = shift_sources(f"comm_flows({op.op})", mesh, axes, op.params["shift_axis"],
                               op.params["offset"], op.params["rotate"])
    ids = np.arange(mesh.size, dtype=np.int64)
    return _flows(src[valid], ids[valid], op.nbytes)


def _flows_permute(op: CommOp, root: Any, cores: Any) -> _Flow:
    pairs = np.asarray(op.params["pairs"], dtype=np.int64).reshape(-1, 2)
    return _flows(pairs[:, 0], pairs[:, 1], op.nbytes)


#: the traffic backend of each comm op's forms (meshtensor.comm_ops), with the
#: conventions of meshtensor.cost: one execution's (sender, receiver, nbytes)
FLOWS = {"broadcast": _flows_broadcast, "all_gather": _flows_all_gather,
         "all_reduce": _flows_all_reduce, "reduce_scatter": _flows_pieces,
         "all_to_all": _flows_pieces, "shift": _flows_shift, "permute": _flows_permute,
         "barrier": _flows_barrier, "tm_broadcast": _flows_tm, "tm_put": _flows_tm,
         "tm_all_gather": _flows_tm, "tm_all_reduce": _flows_tm}


# -- Tilelang-Mesh's ops ---------------------------------------------------------------------
def _tm_core(op: CommOp, key: str, space: IterSpace, where: str) -> np.ndarray:
    """The linear core id ``op.params[key]`` names at every point of ``space``,
    range-checked (``ValueError`` naming the statement)."""
    mesh, exprs = op.mesh, op.params[key]
    try:
        vals = [space.value(e) for e in exprs]
    except ValueError as err:
        raise ValueError(f"{where}: {op.name}: {key} {[str(e) for e in exprs]} cannot be "
                         f"evaluated ({err}); a core may use the core id, loop variables and "
                         f"lets of them, not values read from buffers") from None
    limits = (("row", mesh.shape[0]), ("col", mesh.shape[1])) if len(vals) == 2 \
        else (("", mesh.size),)
    for v, (axis, lim) in zip(vals, limits):
        bad = (v < 0) | (v >= lim)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{where}: {op.name}: {key}{' ' + axis if axis else ''} "
                             f"{int(v[i])} out of bounds for limit {lim} (on core "
                             f"{mesh.multi_index(int(space.core[i]))})")
    return vals[0] * mesh.shape[1] + vals[1] if len(vals) == 2 else np.asarray(vals[0])


def _coords(mesh, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return ids // mesh.shape[1], ids % mesh.shape[1]


def _check_broadcast(op: CommOp, senders: np.ndarray, where: str) -> None:
    """Refuse two senders whose groups overlap (a destination written twice)."""
    groups = op.mesh.group_array(tuple(op.mesh_axes))
    gid = np.empty(op.mesh.size, dtype=np.int64)
    gid[groups] = np.arange(len(groups))[:, None]
    g = gid[senders]
    order = np.argsort(g, kind="stable")
    dup = np.flatnonzero(np.diff(g[order]) == 0)
    if len(dup):
        a, b = senders[order[dup[0]]], senders[order[dup[0] + 1]]
        members = [op.mesh.multi_index(int(c)) for c in groups[g[order[dup[0]]]]]
        raise ValueError(f"{where}: {op.name}: cores {op.mesh.multi_index(int(a))} and "
                         f"{op.mesh.multi_index(int(b))} both broadcast to {members} in one "
                         f"execution; two different senders to one destination are refused")


def _check_put(op: CommOp, pairs: np.ndarray, where: str) -> None:
    """Refuse a destination with two senders, or a core written twice by different
    senders in the vertical phase (a put down a column, or a two-leg put's first leg)."""
    mesh = op.mesh
    s, d = pairs[:, 0], pairs[:, 1]
    (sr, sc), (dr, dc) = _coords(mesh, s), _coords(mesh, d)
    diag = (sr != dr) & (sc != dc)
    vert = (sc == dc) | diag
    target = np.where(diag, dr * mesh.shape[1] + sc, d)
    for what, tgt, snd in (("destination", d, s),
                           ("vertical-phase target", target[vert], s[vert])):
        keys = np.unique(np.stack([tgt, snd], axis=1), axis=0)
        t, n = np.unique(keys[:, 0], return_counts=True)
        if (n > 1).any():
            c = int(t[n > 1][0])
            who = [mesh.multi_index(int(x)) for x in keys[keys[:, 0] == c][:, 1]]
            raise ValueError(f"{where}: {op.name}: core {mesh.multi_index(c)} is the "
                             f"{what} of puts from {who} in one execution (a two-leg put "
                             f"also writes its intermediate core (dst_row, src_col)); two "
                             f"different senders to one destination are refused")


def tm_executions(op: CommOp, space: IterSpace, where: str) -> list:
    """Per execution of a Tilelang-Mesh op (every core runs it equally often), the cores
    it names on any core: a ``tm_broadcast``'s senders (a sorted tuple of linear ids), a
    ``tm_put``'s ``(sender, receiver)`` pairs; ``None`` for the other ops. Cores out of
    range, a put to itself and two senders to one destination are ``ValueError``s
    naming the statement (``where``: the caller)."""
    mesh = op.mesh
    runs = runs_per_core(space, mesh.size, op.name, where)
    if op.op not in ("tm_broadcast", "tm_put") or not runs:
        return [None] * runs
    # one row per execution, one column per core (each core runs each execution once)
    order = np.lexsort((space.core, executions(space.core, mesh.size)))
    snd = _tm_core(op, "src_core", space, where)[order].reshape(runs, mesh.size)
    if op.op == "tm_broadcast":
        code = np.sort(snd, axis=1)
    else:
        dst = _tm_core(op, "dst_core", space, where)[order].reshape(runs, mesh.size)
        same = snd == dst
        if same.any():
            e, c = (int(v[0]) for v in np.nonzero(same))
            raise ValueError(f"{where}: T.comm.put requires src_core and dst_core to be "
                             f"different: {op.name} names core "
                             f"{mesh.multi_index(int(snd[e, c]))} as both on core "
                             f"{mesh.multi_index(c)}")
        code = np.sort(snd * mesh.size + dst, axis=1)
    patterns, inverse = np.unique(code, axis=0, return_inverse=True)
    keys = []
    for row in patterns:
        u = np.unique(row)
        if op.op == "tm_broadcast":
            _check_broadcast(op, u, where)
            keys.append(tuple(int(v) for v in u))
        else:
            pairs = np.stack([u // mesh.size, u % mesh.size], axis=1)
            _check_put(op, pairs, where)
            keys.append(tuple((int(a), int(b)) for a, b in pairs))
    return [keys[i] for i in np.asarray(inverse).ravel()]


def _static_cores(op: CommOp) -> Any:
    if op.op not in ("tm_broadcast", "tm_put"):
        return None
    names = ("src_core",) if op.op == "tm_broadcast" else ("src_core", "dst_core")
    ids = []
    for key in names:
        vals = [static_int(e) for e in op.params[key]]
        if None in vals:
            raise ValueError(f"comm_flows({op.op}): {key} "
                             f"{[str(e) for e in op.params[key]]} is not static; pass cores= "
                             f"(see tm_executions)")
        ids.append(vals[0] * op.mesh.shape[1] + vals[1] if len(vals) == 2 else vals[0])
    return (ids[0],) if len(ids) == 1 else ((ids[0], ids[1]),)


def _cores_key(op: CommOp, cores: Any) -> Any:
    if op.op == "tm_broadcast":
        return tuple(int(c) for c in cores)
    if op.op == "tm_put":
        return tuple((int(a), int(b)) for a, b in cores)
    return None


def _line(mesh, senders: np.ndarray, axes: tuple[int, ...], nbytes: int) -> _Flow:
    """Each sender multicasts to every other member of its group over ``axes``."""
    groups = mesh.group_array(axes)
    gid = np.empty(mesh.size, dtype=np.int64)
    gid[groups] = np.arange(len(groups))[:, None]
    members = groups[gid[senders]]
    return _flows(np.broadcast_to(senders[:, None], members.shape), members, nbytes)


def _two_d(mesh, senders: np.ndarray, nbytes: int) -> list[_Flow]:
    """A 2-D broadcast from each sender: down its column, then every core of that
    column along its row."""
    col = mesh.group_array((0,))
    forwarders = col[senders % mesh.shape[1]].ravel()
    return [_line(mesh, senders, (0,), nbytes), _line(mesh, forwarders, (1,), nbytes)]


def tm_phases(op: CommOp, cores: Any = None) -> list[_Flow]:
    """The transfers of one execution of a Tilelang-Mesh op, phase by phase (each phase
    one superstep on the chip): ``cores`` as :func:`tm_executions` gives them (senders
    of a ``tm_broadcast``, pairs of a ``tm_put``).

    >>> import tilelang.language as T
    >>> from meshtensor.tilelang import find_comm_ops
    >>> from meshtensor.tilelang import tilelang_mesh as tm
    >>> _ = tm.enable(mesh=(2, 2))
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(4) as cid:
    ...         S = T.alloc_shared((4,), "float32")
    ...         D = T.alloc_shared((4,), "float32")
    ...         T.comm.put(S, D, (0, 0), (1, 1))
    >>> [[a.tolist() for a in p] for p in tm_phases(find_comm_ops(k)[0], [(0, 3)])]
    [[[0], [2], [16]], [[2], [3], [16]]]
    """
    mesh, axes = op.mesh, tuple(op.mesh_axes)
    def sized(n: int) -> int:  # the real bytes of n elements (4-bit kinds: n / 2)
        return int(nbytes(op.dtype, int(n)))

    everyone = np.arange(mesh.size, dtype=np.int64)
    if op.op == "tm_broadcast":
        senders, nb = np.asarray(cores, dtype=np.int64), sized(op.params["size"])
        phases = _two_d(mesh, senders, nb) if axes == (0, 1) else [_line(mesh, senders, axes, nb)]
    elif op.op == "tm_put":
        pairs = np.asarray(cores, dtype=np.int64).reshape(-1, 2)
        s, d, nb = pairs[:, 0], pairs[:, 1], sized(op.params["size"])
        (sr, sc), (dr, dc) = _coords(mesh, s), _coords(mesh, d)
        diag = (sr != dr) & (sc != dc)
        mid = dr * mesh.shape[1] + sc
        vert = (sc == dc) | diag
        phases = [_flows(s[vert], np.where(diag, mid, d)[vert], nb),
                  _flows(np.where(diag, mid, s)[~vert | diag], d[~vert | diag], nb)]
        phases = [p for p in phases if len(p[0])] or phases[:1]
    elif op.op == "tm_all_gather":
        nb = sized(op.params["size"])
        phases = _two_d(mesh, everyone, nb) if axes == (0, 1) else [_line(mesh, everyone, axes, nb)]
    elif op.op == "tm_all_reduce":
        nb = op.dst.nbytes  # type: ignore[union-attr]  (each core's partial: out's size)
        phases = [_line(mesh, everyone, (a,), nb) for a in sorted(axes, reverse=True)]
    else:
        raise ValueError(f"tm_phases: {op.op!r} is not a Tilelang-Mesh op ({list(TM_OPS)})")
    return phases
