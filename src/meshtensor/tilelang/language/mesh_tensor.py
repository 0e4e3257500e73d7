"""The seed's helpers, called inside ``@T.prim_func`` kernels on stock tilelang.

``mesh_tensor_functions(mesh_shape)`` returns ``annotate_mesh_tensor_info``,
``get_tile_shape``, ``mesh_tensor_copy`` and ``init_mesh_tensor_info``, sharing one
per-factory store keyed by ``buffer.data``. They normalise their arguments once, take
every shape from :class:`meshtensor.Sharding`, and emit one ``T.copy`` or one
``T.func_attr``; passes read the attribute back with :func:`read_mesh_tensor_info`.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Mapping, Sequence

import tilelang.language as T
from tvm import tirx

from ...mesh import TARGETS, Mesh, _is_int
from ...sharding import Sharding
from ..ir.expr import static_int
from ..ir.metadata import _KNOWN, ATTR_KEY, MeshTensorEntry, _seed_dict, attr_value

_REQUIRED = ("block_shape", "program_id", "sharding")
_ORDERS = ("block_wise",)
_RESERVED = tuple(k for k in _KNOWN if k not in _REQUIRED and k != "order")


def get_target_mesh_shape(target: str = "auto") -> dict[str, int]:
    """The mesh of a named target: ``"a4e"`` -> ``{"x": 4, "y": 4}``, ``"a4e-lite"`` ->
    ``{"x": 2, "y": 4}``. ``"auto"`` reads ``$MESHTENSOR_TARGET`` (default ``a4e``).

    >>> get_target_mesh_shape("a4e-lite")
    {'x': 2, 'y': 4}
    """
    name = os.environ.get("MESHTENSOR_TARGET", "a4e") if target == "auto" else target
    if name not in TARGETS:
        raise ValueError(f"get_target_mesh_shape: unknown target {name!r}; known targets: "
                         f"{sorted(TARGETS)} or 'auto'")
    return dict(TARGETS[name])


def _as_mesh(mesh_shape: Any) -> Mesh:
    if isinstance(mesh_shape, Mesh):
        return mesh_shape
    if isinstance(mesh_shape, str):
        return Mesh(get_target_mesh_shape(mesh_shape))
    if not isinstance(mesh_shape, Mapping) or not mesh_shape:
        raise ValueError(f"mesh_tensor_functions: mesh_shape must be a non-empty dict "
                         f"axis name -> size (or a target name), got {mesh_shape!r}")
    for name, size in mesh_shape.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"mesh_tensor_functions: mesh axis names must be non-empty "
                             f"strings, got {name!r}")
        if not _is_int(size) or size < 1:
            raise ValueError(f"mesh_tensor_functions: mesh axis {name!r} has size {size!r}; "
                             f"sizes must be positive ints")
    return Mesh(dict(mesh_shape))


def _sharding_from(mesh: Mesh, value: Any, where: str, ndim: int | None = None) -> Sharding:
    """The seed dict (``{"x": d, "y": None}``), the tuple form or a Sharding, for a
    tensor of rank ``ndim`` (the buffer's or the block's: so a batched buffer may be
    split on a dim past the mesh's rank)."""
    if isinstance(value, Sharding):
        if value.mesh != mesh:
            raise ValueError(f"{where}: sharding is on mesh {value.mesh}, the helpers on "
                             f"{mesh}")
        return value
    if isinstance(value, Mapping):
        for axis in value:
            if axis not in mesh.axis_names:
                raise ValueError(f"{where}: sharding names unknown mesh axis {axis!r}; mesh "
                                 f"axes are {list(mesh.axis_names)}")
    try:
        return Sharding.from_seed(mesh, value, ndim=ndim)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: {e}") from None


def _check_program_id(mesh: Mesh, pid: Any, where: str) -> Any:
    if pid is None or isinstance(pid, tirx.PrimExpr) and static_int(pid) is None:
        return pid
    if static_int(pid) is not None:
        v = static_int(pid)
        if not 0 <= v < mesh.size:
            raise ValueError(f"{where}: program_id {v} out of range [0, {mesh.size})")
        return v
    if isinstance(pid, (tuple, list)):
        if len(pid) != mesh.ndim:
            raise ValueError(f"{where}: program_id {tuple(pid)} has {len(pid)} coordinates, "
                             f"the mesh has {mesh.ndim} axes")
        out = []
        for a, c in enumerate(pid):
            v = static_int(c)
            if v is not None and not 0 <= v < mesh.shape[a]:
                raise ValueError(f"{where}: program_id coordinate {v} on mesh axis "
                                 f"{mesh.axis_names[a]!r} out of range [0, {mesh.shape[a]})")
            out.append(c if v is None else v)
        return tuple(out)
    raise ValueError(f"{where}: program_id must be None, an int, a tuple of mesh "
                     f"coordinates or a TIR expression, got {pid!r}")


def _make_entry(mesh: Mesh, buf: tirx.Buffer, info: Mapping[str, Any]) -> MeshTensorEntry:
    name = buf.name
    where = f"annotate_mesh_tensor_info: buffer {name!r}"
    if not isinstance(info, Mapping):
        raise TypeError(f"{where}: metadata must be a dict, got {type(info).__name__}")
    for key in _REQUIRED:
        if key not in info:
            raise ValueError(f"{where}: missing key {key!r} (required: {list(_REQUIRED)})")
    shape = tuple(static_int(n) if static_int(n) is not None else n for n in buf.shape)
    rank = len(shape)
    sharding = _sharding_from(mesh, info["sharding"], where, ndim=rank)
    if sharding.is_partial:
        # a partial tensor is one term per core of a sum; one global buffer holds one value
        raise ValueError(f"{where}: sharding {sharding} is partial over "
                         f"{sharding.partial}: per-core terms of a reduction are not one "
                         f"global tensor; annotate the reduced tensor (split or "
                         f"replicated) and combine the terms with mesh_comm(...).all_reduce")
    reserved = sorted(set(info) & set(_RESERVED))
    if reserved:
        raise ValueError(f"{where}: keys {reserved} are written by "
                         f"annotate_mesh_tensor_info itself; name your own keys otherwise")
    if len(sharding.split_axes) > rank:
        d = len(sharding.split_axes) - 1
        axes = [mesh.axis_names[a] for a in sharding.split_axes[d]]
        raise ValueError(f"{where}: sharding splits dim {d} (mesh axes {axes}) but the "
                         f"buffer has rank {rank}")
    block = info["block_shape"]
    if not isinstance(block, (tuple, list)) or len(block) != rank:
        raise ValueError(f"{where}: block_shape {block!r} must have one entry per buffer "
                         f"dim ({rank})")
    for d, b in enumerate(block):
        if not _is_int(b) or b <= 0:
            raise ValueError(f"{where}: block_shape[{d}] must be a positive int, got {b!r}")
    block = tuple(int(b) for b in block)
    order = info.get("order", "block_wise")
    if order not in _ORDERS:
        raise ValueError(f"{where}: order {order!r} is not one of {list(_ORDERS)}")
    pid = _check_program_id(mesh, info["program_id"], where)
    static = all(static_int(n) is not None for n in shape)
    if static:
        tile = sharding.tile_shape(shape)
    else:  # symbolic dims keep a T.ceildiv expression of the same rule
        tile = tuple(T.ceildiv(n, sharding.shard_count(d)) if sharding.axes_of(d) else n
                     for d, n in enumerate(shape))
    for d in sharding.split_dims:
        t = static_int(tile[d])
        if t is not None and t % block[d] and t > 0:
            raise ValueError(f"{where}: dim {d}: tile {t} (size {shape[d]} over "
                             f"{sharding.shard_count(d)} shards) is not a multiple of block "
                             f"{block[d]}; block copies would straddle cores")
    extra = {k: v for k, v in info.items() if k not in _REQUIRED and k != "order"}
    return MeshTensorEntry(name, buf, sharding, block, pid, shape, tuple(tile), order, extra)


def _region_of(buf: tirx.Buffer, coord: Any, entry: MeshTensorEntry | None, side: str
               ) -> tirx.BufferRegion:
    """The block of ``buf`` at block coordinates ``coord``."""
    where = f"mesh_tensor_copy: {side} {buf.name!r}"
    if entry is None:
        raise ValueError(f"{where}: {side}_coord given but the buffer has no "
                         f"mesh_tensor_info; annotate it with annotate_mesh_tensor_info")
    if _is_int(coord) or isinstance(coord, tirx.PrimExpr):
        coord = (coord,)
    coord = tuple(coord)
    rank = len(buf.shape)
    if len(coord) != rank:
        raise ValueError(f"{where}: {side}_coord {coord} has {len(coord)} entries, the "
                         f"buffer has rank {rank}")
    slices = []
    for d, (c, b, n) in enumerate(zip(coord, entry.block_shape, buf.shape)):
        cv, nv = static_int(c), static_int(n)
        if cv is not None and cv < 0:
            raise ValueError(f"{where}: {side}_coord[{d}] = {cv} is negative")
        if cv is not None and nv is not None and cv * b >= nv > 0:
            raise ValueError(f"{where}: block {cv} of dim {d} starts at {cv * b}, outside "
                             f"the dim of size {nv} (blocks of {b}: valid coordinates "
                             f"[0, {-(-nv // b)}))")
        start = c * b
        slices.append(slice(start, start + b))
    return buf[tuple(slices)]


def _extents(x: Any) -> tuple[Any, ...] | None:
    if isinstance(x, tirx.Buffer):
        return tuple(x.shape)
    if isinstance(x, tirx.BufferRegion):
        return tuple(r.extent for r in x.region)
    return None


def _check_fits(x: Any, extents: tuple[Any, ...], side: str) -> None:
    """A plain side given by a start point (``S[i, j]``) must hold the copy."""
    if not isinstance(x, tirx.BufferLoad):
        return
    shape, idx = x.buffer.shape, x.indices
    tail = extents[len(extents) - len(idx):] if len(extents) >= len(idx) else extents
    for d, (i, e, n) in enumerate(zip(idx, tail, shape)):
        iv, ev, nv = static_int(i), static_int(e), static_int(n)
        if None not in (iv, ev, nv) and iv + ev > nv:
            raise ValueError(f"mesh_tensor_copy: {side} {x.buffer.name!r}: copy of extent "
                             f"{ev} from index {iv} runs past dim {d} of size {nv}")


def mesh_tensor_functions(mesh_shape: Mapping[str, int] | str | Mesh | None = None
                          ) -> dict[str, Any]:
    """The seed's helper set for one mesh, sharing one metadata store.

    Args:
        mesh_shape: ``{"x": 4, "y": 4}`` (default), any number of named axes, a target
            name (``"a4e"``) or a :class:`Mesh`.

    Returns:
        ``{"annotate_mesh_tensor_info", "get_tile_shape", "mesh_tensor_copy",
        "init_mesh_tensor_info"}``; see each function's docstring.

    Example (inside a kernel)::

        fns = mesh_tensor_functions({"x": 4, "y": 4})
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            fns["annotate_mesh_tensor_info"]({
                A: fns["init_mesh_tensor_info"]({"x": 0, "y": 1}, (16, 16)),
                B: fns["init_mesh_tensor_info"]({"x": 0, "y": 1}, (16, 16))})
            with T.Kernel(4, 4, threads=1) as (bx, by):
                S = T.alloc_shared(fns["get_tile_shape"](A), "float32")
                fns["mesh_tensor_copy"](A, S, src_coord=(bx, by))
                fns["mesh_tensor_copy"](S, B, dst_coord=(bx, by))
    """
    mesh = _as_mesh({"x": 4, "y": 4} if mesh_shape is None else mesh_shape)
    store: dict[tirx.Var, MeshTensorEntry] = {}

    def init_mesh_tensor_info(sharding: Any, block_shape: Sequence[int], program_id: Any = None,
                              order: Literal["block_wise"] = "block_wise") -> dict[str, Any]:
        """One metadata entry: ``sharding`` in the seed dict form (``None`` or a missing
        axis = replicated) or the tuple form ``(x_dim, y_dim)``; ``block_shape`` the copy
        granule; ``program_id`` the owning program (int, coordinates, TIR expression or
        ``None`` = the running program)."""
        where = "init_mesh_tensor_info"
        if order not in _ORDERS:
            raise ValueError(f"{where}: order {order!r} is not one of {list(_ORDERS)}")
        if not isinstance(block_shape, (tuple, list)):
            raise ValueError(f"{where}: block_shape must be a tuple of ints, got "
                             f"{block_shape!r}")
        s = _sharding_from(mesh, sharding, where, ndim=len(block_shape))
        seed = _seed_dict(s)  # a Sharding the seed form can't say is kept as it is
        return {"sharding": s if seed is None else seed, "block_shape": tuple(block_shape),
                "program_id": _check_program_id(mesh, program_id, where), "order": order}

    def annotate_mesh_tensor_info(mesh_tensor_info: Mapping[tirx.Buffer, Mapping[str, Any]]):
        """Validate and record each buffer's metadata; returns the ``T.func_attr`` that
        carries it (call once, at the top of the kernel, before ``T.Kernel``)."""
        if not isinstance(mesh_tensor_info, Mapping) or not mesh_tensor_info:
            raise ValueError("annotate_mesh_tensor_info: expected a non-empty dict "
                             "buffer -> metadata")
        entries = []
        for buf, info in mesh_tensor_info.items():
            if not isinstance(buf, tirx.Buffer):
                raise TypeError(f"annotate_mesh_tensor_info: keys must be buffers, got "
                                f"{type(buf).__name__} {buf!r}")
            entries.append(_make_entry(mesh, buf, info))
        names = [e.name for e in entries]
        if len(set(names)) != len(names):
            raise ValueError(f"annotate_mesh_tensor_info: two buffers share a name in {names}")
        for e in entries:
            store[e.buffer.data] = e
        return T.func_attr({ATTR_KEY: {e.name: attr_value(e) for e in entries}})

    def _entry(buf: Any, what: str) -> MeshTensorEntry:
        if not isinstance(buf, tirx.Buffer):
            raise TypeError(f"{what}: expected a buffer, got {type(buf).__name__}")
        e = store.get(buf.data)
        if e is None:
            raise ValueError(f"{what}: buffer {buf.name!r} has no mesh_tensor_info; annotate "
                             f"it with annotate_mesh_tensor_info first")
        return e

    def get_tile_shape(buffer: tirx.Buffer) -> tuple[Any, ...]:
        """Per-core tile shape: every split dim ceil-divided by its shard count (ints for
        static shapes, ``T.ceildiv`` expressions for symbolic ones)."""
        return _entry(buffer, "get_tile_shape").tile_shape

    def mesh_tensor_copy(src: Any, dst: Any, *, src_coord: Any = None, dst_coord: Any = None):
        """Copy a block selected by block coordinates (``coord * block_shape``); returns the
        one ``T.copy`` (return it from your helper too, or TileLang drops it).

        ``src``/``dst`` are buffers, regions (``A[0:4, 0:4]``) or start points
        (``S[0, 0]``); coordinates may be ints or TIR expressions."""
        ends = []
        for x, coord, side in ((src, src_coord, "src"), (dst, dst_coord, "dst")):
            if coord is None:
                if not isinstance(x, (tirx.Buffer, tirx.BufferRegion, tirx.BufferLoad)):
                    raise TypeError(f"mesh_tensor_copy: {side} must be a buffer, region or "
                                    f"buffer point, got {type(x).__name__}")
                ends.append(x)
                continue
            if not isinstance(x, tirx.Buffer):
                raise ValueError(f"mesh_tensor_copy: {side}_coord selects a block of a whole "
                                 f"buffer, but {side} is a {type(x).__name__}")
            ends.append(_region_of(x, coord, store.get(x.data), side))
        s, d = ends
        es, ed = _extents(s), _extents(d)
        if es is not None and ed is not None:
            ss = [v for v in map(static_int, es) if v != 1]
            sd = [v for v in map(static_int, ed) if v != 1]
            if None not in ss and None not in sd and ss != sd:
                raise ValueError(f"mesh_tensor_copy: src extent {tuple(map(static_int, es))} and "
                                 f"dst extent {tuple(map(static_int, ed))} differ")
        if es is not None:
            _check_fits(d, es, "dst")
        if ed is not None:
            _check_fits(s, ed, "src")
        return T.copy(s, d)

    return {
        "annotate_mesh_tensor_info": annotate_mesh_tensor_info,
        "get_tile_shape": get_tile_shape,
        "mesh_tensor_copy": mesh_tensor_copy,
        "init_mesh_tensor_info": init_mesh_tensor_info,
    }
