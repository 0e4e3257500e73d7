"""Per-buffer mesh metadata (``mesh_tensor_info``), written by the front end's
``annotate_mesh_tensor_info`` as a function attribute and read back here.

One place encodes a :class:`MeshTensorEntry` into the attribute (:func:`attr_value`)
and decodes it (:func:`read_mesh_tensor_info`), so the whole :class:`Sharding`
(split axes in order, explicit offsets, halos) and the mesh with its axis names IN
ORDER survive the round trip: TVM's attribute maps do not keep key order, so the mesh
is written as ``[name, size]`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tvm import tirx

from ...mesh import Mesh
from ...sharding import Sharding
from .expr import static_int
from .names import ATTR_KEY
from .resolve import prim_func

__all__ = ["ATTR_KEY", "MeshTensorEntry", "attr_value", "read_mesh_tensor_info"]

# keys of an entry that are ours; any other key is the user's and is kept in `extra`
_KNOWN = ("block_shape", "program_id", "sharding", "order", "mesh_shape", "mesh_axes",
          "split_axes", "halo_sizes", "sharded_dims_offsets", "global_shape", "tile_shape")


@dataclass(frozen=True)
class MeshTensorEntry:
    """The plain-Python facts about one annotated buffer, as a pass needs them.

    ``global_shape`` / ``tile_shape`` hold ints where static and TIR expressions where
    symbolic; ``program_id`` is ``None``, an int, a tuple of mesh coordinates or a TIR
    expression; ``extra`` holds any further user keys.
    """

    name: str
    buffer: tirx.Buffer | None
    sharding: Sharding
    block_shape: tuple[int, ...]
    program_id: Any
    global_shape: tuple[Any, ...]
    tile_shape: tuple[Any, ...]
    order: str = "block_wise"
    extra: dict = field(default_factory=dict)

    @property
    def mesh(self) -> Mesh:
        return self.sharding.mesh

    def static_shape(self) -> tuple[int, ...] | None:
        """The global shape as ints, or None when any dim is symbolic."""
        s = tuple(static_int(n) for n in self.global_shape)
        return None if any(n is None for n in s) else s  # type: ignore[return-value]


def _seed_dict(s: Sharding) -> dict[str, int | None] | None:
    """The seed dict form, or None where it cannot say the sharding (e.g. a dim split
    by mesh axes out of mesh order): ``split_axes`` is the stored truth either way."""
    try:
        return s.to_seed()
    except ValueError:
        return None


def attr_value(e: MeshTensorEntry) -> dict[str, Any]:
    """The attribute value of one entry: the user's keys, the seed-format ``sharding``
    (``None`` where the seed form cannot say it) and the normalised facts a pass reads
    (``mesh_shape``, ``mesh_axes`` as ordered ``[name, size]`` pairs, ``split_axes``
    full rank, ``halo_sizes``, ``sharded_dims_offsets``, ``global_shape``,
    ``tile_shape``)."""
    pid = e.program_id
    s = e.sharding
    return {
        **e.extra,
        "block_shape": list(e.block_shape),
        "program_id": list(pid) if isinstance(pid, tuple) else pid,
        "sharding": _seed_dict(s),
        "order": e.order,
        "mesh_shape": e.mesh.as_dict,
        "mesh_axes": [[n, int(k)] for n, k in zip(e.mesh.axis_names, e.mesh.shape)],
        "split_axes": [[e.mesh.axis_names[a] for a in s.axes_of(d)]
                       for d in range(len(e.global_shape))],
        "halo_sizes": list(s.halo_sizes),
        "sharded_dims_offsets": list(s.sharded_dims_offsets),
        "global_shape": list(e.global_shape),
        "tile_shape": list(e.tile_shape),
    }


def _py(v: Any) -> Any:
    """TVM attribute values -> plain Python (ints, strs, lists, dicts); exprs kept."""
    if isinstance(v, tirx.IntImm):
        return int(v.value)
    if isinstance(v, (str, int, float)) or v is None:
        return v
    if hasattr(v, "items"):
        return {str(k): _py(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)) or type(v).__name__ in ("Array", "List"):
        return [_py(x) for x in v]
    return v


def read_mesh_tensor_info(func: Any) -> dict[str, MeshTensorEntry]:
    """Every annotated buffer of a kernel: ``{buffer name: MeshTensorEntry}``, with the
    parameter :class:`~tvm.tirx.Buffer` and the :class:`Sharding` it was annotated
    with. Accepts a PrimFunc, a compiled ``JITKernel`` or ``MeshKernel``, or an
    IRModule. A function without annotations gives ``{}``.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> info = read_mesh_tensor_info(build_gemm("summa", 64, 64, 64))
    >>> str(info["A"].sharding), info["A"].tile_shape
    ('S(x)S(y)', (16, 16))
    """
    pf = prim_func(func, "read_mesh_tensor_info")
    if pf.attrs is None or ATTR_KEY not in pf.attrs:
        return {}
    buffers = {b.name: b for b in pf.buffer_map.values()}
    out = {}
    for name, raw in pf.attrs[ATTR_KEY].items():
        v = _py(raw)
        mesh = Mesh({str(n): int(k) for n, k in v["mesh_axes"]})
        sharding = Sharding(mesh, v["split_axes"], halo_sizes=v.get("halo_sizes") or None,
                            sharded_dims_offsets=v.get("sharded_dims_offsets") or None)
        pid = v["program_id"]
        if isinstance(pid, list):
            pid = tuple(pid)
        out[str(name)] = MeshTensorEntry(
            name=str(name), buffer=buffers.get(str(name)), sharding=sharding,
            block_shape=tuple(v["block_shape"]), program_id=pid,
            global_shape=tuple(v["global_shape"]), tile_shape=tuple(v["tile_shape"]),
            order=v["order"], extra={k: x for k, x in v.items() if k not in _KNOWN})
    return out
