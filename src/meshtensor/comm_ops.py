"""Every communication op, declared once.

A :class:`CommOpDecl` holds what every backend of an op shares, as MLIR's ``ShardOps``
declares its collectives' common arguments once: its name and summary, its parameters
per dialect (the host collectives and ``meshtensor.dist``; ``mesh_comm`` inside
kernels; SUNMMIO's ``T.comm``), its group rule, the extents of its result and the
reductions it takes. The backends register against these records, one table each, keyed
by the op's name:

============  =======================================================================
backend       table
============  =======================================================================
``numpy``     :data:`meshtensor.collectives.NUMPY` (the simulator)
``torch``     ``meshtensor.dist.engine.TORCH`` (``DistMesh`` methods)
``tir``       ``meshtensor.tilelang.transform.lower_comm.TIR`` (exchange builders)
``flows``     ``meshtensor.tilelang.analysis.flows.FLOWS`` (who sends what to whom)
``perf``      ``meshtensor.tilelang.analysis.comm_cost.COLLECTIVE_COSTS`` (the time of
              each algorithm that can run the exchange)
============  =======================================================================

``backends`` says which of them an op has (``update_halo`` has no kernel form, ``put``
no host one); a test fails when a declared backend has no entry.

>>> DECLS["reduce_scatter"].result_extents((6, 4), 4, {"scatter_axis": 0})
(2, 4)
>>> [p.name for p in DECLS["broadcast"].params["mesh_comm"]]
['root']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .reduction import kinds
from .shapes import chunk_bounds

__all__ = ["Param", "CommOpDecl", "DECLS", "BACKENDS", "DIALECTS", "decl"]

#: the backends an op may register with (module docstring)
BACKENDS = ("numpy", "torch", "tir", "flows", "perf")
#: where an op is written: host collectives (and meshtensor.dist), mesh_comm, T.comm
DIALECTS = ("host", "mesh_comm", "T.comm")


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is ``tensor_axis`` (an axis of the operand), ``int``,
    ``bool``, ``reduction``, ``coords`` (in-group coordinates), ``cores`` (core ids or
    ``(row, col)``, expressions allowed in kernels), ``pairs`` (static ``(source,
    destination)`` cores) or ``direction`` (``T.comm``'s row/column/all)."""

    name: str
    kind: str
    default: Any = None


def _same(src: Sequence[int], k: int, p: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(src)


def _gathered(src: Sequence[int], k: int, p: Mapping[str, Any]) -> tuple[int, ...]:
    out = list(src)
    out[p["gather_axis"]] *= k
    return tuple(out)


def _scattered(src: Sequence[int], k: int, p: Mapping[str, Any]) -> tuple[int, ...]:
    out = list(src)
    ax = p["scatter_axis"]
    out[ax] = int(np.diff(chunk_bounds(src[ax], k))[0])  # the first (largest) piece
    return tuple(out)


def _all_to_all(src: Sequence[int], k: int, p: Mapping[str, Any]) -> tuple[int, ...]:
    out = list(src)
    sa, ca = p["split_axis"], p["concat_axis"]
    piece = int(np.diff(chunk_bounds(src[sa], k))[0])
    out[sa] = piece
    out[ca] = k * (piece if sa == ca else src[ca])
    return tuple(out)


@dataclass(frozen=True, eq=False)
class CommOpDecl:
    """One op (module docstring). ``params`` maps each dialect that has the op to its
    parameters there; ``group`` is ``"mesh_axes"`` (groups along listed axes, in-group
    order row-major over them), ``"pairs"`` (explicit point-to-point pairs),
    ``"sharding"`` (the neighbours a sharding's halos name) or ``"line"`` (``T.comm``:
    a row, a column or every core); ``extents`` gives the result's extents on the group
    member that receives the most from the source's extents, the group size and the
    parameters; ``reductions`` whether it takes a reduction kind (the dialect's);
    ``tir`` the TIR spelling of a dialect's parameters where it differs from them."""

    name: str
    summary: str
    params: Mapping[str, tuple[Param, ...]]
    group: str
    backends: frozenset
    extents: Callable[[Sequence[int], int, Mapping[str, Any]], tuple[int, ...]] = _same
    reductions: bool = False
    # how a dialect's statement spells its parameters in TIR where that is not simply
    # its parameters in order (ir.comm_op): ((name, TIR kind), ...)
    tir: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # read-only tables: a declaration is a value
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "tir", MappingProxyType(dict(self.tir)))
        object.__setattr__(self, "backends", frozenset(self.backends))

    def result_extents(self, src: Sequence[int], k: int, params: Mapping[str, Any]
                       ) -> tuple[int, ...]:
        """The result's extents for a source of extents ``src`` in groups of ``k``."""
        return self.extents(src, k, params)

    def reduction_kinds(self, dialect: str) -> tuple[str, ...]:
        """The reduction kinds this op takes in ``dialect`` (``()`` for none)."""
        if not self.reductions:
            return ()
        return kinds("T.comm" if dialect == "T.comm" else "shard")


_ALL = frozenset(BACKENDS)
_HOST = frozenset({"numpy", "torch"})
_KERNEL = frozenset({"tir", "flows", "perf"})
_AX = Param("mesh_axes", "axes")


def _decls() -> dict[str, CommOpDecl]:
    red = Param("reduction", "reduction", "sum")
    return {d.name: d for d in (
        CommOpDecl("broadcast", "every member of a group gets the root's data",
                   {"host": (_AX, Param("root", "coords")),
                    "mesh_comm": (Param("root", "coords"),),
                    "T.comm": (Param("src_core", "cores"), Param("size", "int", -1),
                               Param("direction", "direction", "all"))},
                   "mesh_axes", _ALL),
        CommOpDecl("all_gather", "every member gets the group's data, concatenated",
                   {"host": (_AX, Param("gather_axis", "tensor_axis")),
                    "mesh_comm": (Param("gather_axis", "tensor_axis"),),
                    "T.comm": (Param("direction", "direction", "all"), Param("size", "int", -1),
                               Param("axis", "tensor_axis"))},
                   "mesh_axes", _ALL, _gathered,
                   # without an axis the group's data is stacked: the TIR says which
                   tir={"T.comm": (("size", "int"), ("stacked", "bool"), ("axis", "int"))}),
        CommOpDecl("all_reduce", "every member gets the element-wise reduction of the "
                   "group's data, in group order",
                   {"host": (_AX, red, Param("dtype", "dtype")),
                    "mesh_comm": (red,),
                    "T.comm": (Param("reduce_type", "reduction"), Param("direction", "direction"),
                               Param("dim", "int", -1), Param("clear", "bool", True))},
                   "mesh_axes", _ALL, reductions=True),
        CommOpDecl("reduce_scatter", "member p gets piece p of the group's reduction",
                   {"host": (_AX, Param("scatter_axis", "tensor_axis"), red,
                             Param("dtype", "dtype")),
                    "mesh_comm": (Param("scatter_axis", "tensor_axis"), red)},
                   "mesh_axes", _ALL, _scattered, reductions=True),
        CommOpDecl("all_to_all", "member i sends piece j to member j, which concatenates",
                   {"host": (_AX, Param("split_axis", "tensor_axis"),
                             Param("concat_axis", "tensor_axis")),
                    "mesh_comm": (Param("split_axis", "tensor_axis"),
                                  Param("concat_axis", "tensor_axis"))},
                   "mesh_axes", _ALL, _all_to_all),
        CommOpDecl("shift", "data moves offset places along an axis (wrapping if rotate)",
                   {"host": (_AX, Param("shift_axis", "axis"), Param("offset", "int"),
                             Param("rotate", "bool", False)),
                    "mesh_comm": (Param("shift_axis", "axis"), Param("offset", "int"),
                                  Param("rotate", "bool", False))},
                   "mesh_axes", _ALL),
        CommOpDecl("permute", "static point-to-point sends; a receiver of nothing keeps "
                   "its data",
                   {"host": (Param("pairs", "pairs"),), "mesh_comm": (Param("pairs", "pairs"),)},
                   "pairs", _ALL),
        CommOpDecl("put", "a core's data to another core, routed down the source's "
                   "column then along the row (the turn core's buffer is written too)",
                   {"T.comm": (Param("src_core", "cores"), Param("dst_core", "cores"),
                               Param("size", "int", -1))},
                   "pairs", _KERNEL),
        CommOpDecl("barrier", "every member of a group waits for the others",
                   {"mesh_comm": (), "T.comm": ()}, "mesh_axes", _KERNEL),
        CommOpDecl("all_slice", "member p keeps piece p of its data",
                   {"host": (_AX, Param("slice_axis", "tensor_axis"))},
                   "mesh_axes", _HOST, lambda s, k, p: _scattered(s, k, {"scatter_axis":
                                                                       p["slice_axis"]})),
        CommOpDecl("gather", "the root gets the group's data, concatenated",
                   {"host": (_AX, Param("gather_axis", "tensor_axis"), Param("root", "coords"))},
                   "mesh_axes", _HOST, _gathered),
        CommOpDecl("reduce", "the root gets the group's reduction",
                   {"host": (_AX, Param("root", "coords"), red, Param("dtype", "dtype"))},
                   "mesh_axes", _HOST, reductions=True),
        CommOpDecl("scatter", "member p gets piece p of the root's data",
                   {"host": (_AX, Param("scatter_axis", "tensor_axis"),
                             Param("root", "coords"))},
                   "mesh_axes", _HOST, _scattered),
        CommOpDecl("update_halo", "every halo cell is refilled from the device whose core "
                   "holds it", {"host": (Param("sharding", "sharding"),)}, "sharding", _HOST),
    )}


#: every op, by name
DECLS: Mapping[str, CommOpDecl] = MappingProxyType(_decls())


def decl(name: str) -> CommOpDecl:
    """The declaration of op ``name`` (``ValueError`` naming the known ops).

    >>> decl("shift").group, sorted(decl("shift").backends)
    ('mesh_axes', ['flows', 'numpy', 'perf', 'tir', 'torch'])
    """
    try:
        return DECLS[name]
    except KeyError:
        raise ValueError(f"unknown comm op {name!r}; comm ops are {list(DECLS)}") from None

