"""The typed record of a comm op, and its one encoding in TIR.

A comm op is ONE statement of the kernel: ``T.evaluate(T.call_extern("handle",
"meshtensor_comm_<op>", ...))``. Its arguments spell the record out in TIR immediates,
in a fixed order that every TIR round trip (printing, parsing, substitution) keeps::

    "mesh", ndim, name_0, size_0, ..., name_{ndim-1}, size_{ndim-1},
    "axes", n, axis_0, ..., axis_{n-1},
    key_0, value_0, ..., key_{m-1}, value_{m-1},     # PARAMS[op], in that order
    "src", <tl.region>, "dst", <tl.region>            # absent for barrier

The mesh keeps its axis names IN ORDER (never a dict whose key order could change).
Values are typed by :data:`PARAMS`: ``int`` and ``bool`` are integer immediates,
``str`` a string immediate, ``pairs`` a count then the flattened ``(source,
destination)`` pairs, ``exprs`` a count then integer TIR expressions (a broadcast's
``root`` may use loop variables). :func:`encode` writes a record, :func:`decode`
reads it back and checks it; nothing else parses these calls.

A kernel that still holds comm ops has not been lowered: ``meshtensor_comm_*`` is no C
function, so it cannot run unlowered (``compile_mesh_kernel`` lowers it).

>>> import tilelang
>>> from meshtensor import Mesh
>>> call = encode("barrier", Mesh({"row": 2, "col": 4}), (1,), {})
>>> op = decode(Found(call), 0)
>>> op.op, op.mesh.axis_names, op.mesh_axes
('barrier', ('row', 'col'), (1,))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
from tvm import tirx

from ...comm_ops import DECLS, CommOpDecl
from ...mesh import Mesh, _is_int
from .expr import static_int
from .names import EXTERN_PREFIX, is_comm_call
from .resolve import prim_func
from .scope import CopyRegion, Found, find_calls, region_of

__all__ = ["COMM_OPS", "FORMS", "PARAMS", "DISPLAY", "EXTERN_PREFIX", "CommOp", "encode", "decode",
           "is_comm_call", "find_comm_ops", "result_extents"]


# How each kind of parameter of a declaration (meshtensor.comm_ops) is written in TIR;
# a T.comm direction becomes the record's mesh axes, not a parameter.
_ENCODING = {"coords": "exprs", "cores": "exprs", "tensor_axis": "int", "axis": "int",
             "int": "int", "bool": "bool", "reduction": "str", "pairs": "pairs"}


def _forms() -> dict[str, tuple[str, str]]:
    """Each TIR form of a comm op: ``{form: (declared op, dialect)}``. A ``mesh_comm``
    op is written under its own name; a ``T.comm`` op as ``tm_<name>`` (its barrier is
    ``mesh_comm``'s)."""
    forms = {n: (n, "mesh_comm") for n, d in DECLS.items() if "mesh_comm" in d.params}
    forms.update({f"tm_{n}": (n, "T.comm") for n, d in DECLS.items()
                  if "T.comm" in d.params and n != "barrier"})
    return forms


#: every TIR form: the declared op it spells and its dialect
FORMS: dict[str, tuple[str, str]] = _forms()
#: each form's parameters and their TIR kinds, in the order they are written in the call
PARAMS: dict[str, tuple[tuple[str, str], ...]] = {
    form: DECLS[op].tir.get(dialect) or tuple((p.name, _ENCODING[p.kind])
                                              for p in DECLS[op].params[dialect]
                                              if p.kind in _ENCODING)
    for form, (op, dialect) in FORMS.items()}
COMM_OPS = tuple(PARAMS)
# how errors name a comm op: Tilelang-Mesh's ops by the fork's names
DISPLAY = {form: f"T.comm.{op}" for form, (op, dialect) in FORMS.items() if dialect == "T.comm"}
_INT32 = (-(2 ** 31), 2 ** 31 - 1)


def _imm(v: int, dtype: str = "int32") -> tirx.IntImm:
    if not _INT32[0] <= int(v) <= _INT32[1]:
        raise ValueError(f"comm op parameter {v} does not fit in int32")
    return tirx.IntImm(dtype, int(v))


def _encode_value(op: str, key: str, kind: str, v: Any) -> list:
    if kind == "int":
        if not _is_int(v):
            raise TypeError(f"mesh_comm.{op}: {key} must be an int, got {v!r}")
        return [_imm(v)]
    if kind == "bool":
        return [tirx.IntImm("bool", bool(v))]
    if kind == "str":
        return [tirx.StringImm(str(v))]
    if kind == "pairs":
        flat = [x for p in v for x in p]
        return [_imm(len(v))] + [_imm(x) for x in flat]
    if kind == "exprs":
        out = [_imm(len(v))]
        for e in v:
            e = _imm(e) if _is_int(e) else e
            if not isinstance(e, tirx.PrimExpr) or not str(e.dtype).startswith(("int", "uint")):
                raise TypeError(f"mesh_comm.{op}: {key} entries must be ints or integer TIR "
                                f"expressions, got {e!r}")
            out.append(e)
        return out
    raise AssertionError(kind)  # pragma: no cover - PARAMS is fixed


def encode(op: str, mesh: Mesh, mesh_axes: Sequence[int], params: Mapping[str, Any],
           src: tirx.Call | None = None, dst: tirx.Call | None = None) -> tirx.Call:
    """The TIR call of a comm op: ``src``/``dst`` are ``tl.region`` calls (``None`` for
    barrier); ``params`` has exactly the keys of ``PARAMS[op]``."""
    if op not in PARAMS:
        raise ValueError(f"unknown comm op {op!r}; comm ops are {list(COMM_OPS)}")
    want = [k for k, _ in PARAMS[op]]
    if sorted(params) != sorted(want):
        raise ValueError(f"mesh_comm.{op}: parameters {sorted(params)}, expected {want}")
    args: list = [tirx.StringImm("mesh"), _imm(mesh.ndim)]
    for name, size in zip(mesh.axis_names, mesh.shape):
        args += [tirx.StringImm(name), _imm(size)]
    args += [tirx.StringImm("axes"), _imm(len(mesh_axes))] + [_imm(a) for a in mesh_axes]
    for key, kind in PARAMS[op]:
        args += [tirx.StringImm(key)] + _encode_value(op, key, kind, params[key])
    if (src is None) != (op == "barrier") or (dst is None) != (op == "barrier"):
        raise ValueError(f"mesh_comm.{op}: src and dst regions are required (and barrier "
                         f"takes none)")
    if src is not None:
        args += [tirx.StringImm("src"), src, tirx.StringImm("dst"), dst]
    return tirx.call_extern("handle", EXTERN_PREFIX + op, *args)


@dataclass(frozen=True)
class CommOp(Found):
    """A comm op found in a kernel (:func:`find_comm_ops`): the typed record (``op``,
    ``mesh`` with its axis names in order, ``mesh_axes``, ``params`` by
    :data:`PARAMS`, ``src``/``dst`` regions) with its call, its scope (loops, lets,
    conditions; see :class:`~.scope.Found`) and ``index``, its position among the
    kernel's comm ops."""

    index: int = 0
    op: str = ""
    mesh: Mesh = None  # type: ignore[assignment]
    mesh_axes: tuple[int, ...] = ()
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    src: CopyRegion | None = None
    dst: CopyRegion | None = None

    @property
    def decl(self) -> CommOpDecl:
        """The op's declaration (:mod:`meshtensor.comm_ops`)."""
        return DECLS[FORMS[self.op][0]]

    @property
    def dialect(self) -> str:
        """``"mesh_comm"`` or ``"T.comm"``."""
        return FORMS[self.op][1]

    @property
    def pin(self) -> bool:
        """An ordering pin ``LowerDist`` leaves in a rank's program: a permute of no
        pairs or a barrier over no mesh axes, which moves and waits for nothing."""
        return (self.op == "permute" and not self.params.get("pairs")) or \
            (self.op == "barrier" and not self.mesh_axes)

    @property
    def root(self) -> tuple[tirx.PrimExpr, ...] | None:
        """A broadcast's root (in-group coordinates, TIR expressions), else ``None``."""
        return self.params.get("root")

    @property
    def name(self) -> str:
        """``"mesh_comm.<op> (comm op #<index>)"`` (``"T.comm.<op> ..."`` for
        Tilelang-Mesh's ops): how errors name this statement."""
        return f"{DISPLAY.get(self.op, 'mesh_comm.' + self.op)} (comm op #{self.index})"

    @property
    def group_size(self) -> int:
        return int(np.prod([self.mesh.shape[a] for a in self.mesh_axes], dtype=np.int64))

    def static_extents(self, side: str = "src") -> tuple[int, ...]:
        """The region's extents as ints (``side`` is ``"src"`` or ``"dst"``)."""
        r = self.src if side == "src" else self.dst
        return tuple(int(static_int(e)) for e in r.extents)  # type: ignore[union-attr]

    @property
    def dtype(self) -> str:
        return str(self.src.buffer.dtype)  # type: ignore[union-attr]

    @property
    def nbytes(self) -> int:
        """Bytes of one core's ``src`` region."""
        return self.src.nbytes  # type: ignore[union-attr]


class _Reader:
    """Reads a comm call's arguments in order; any mismatch is a ``ValueError``."""

    def __init__(self, call: tirx.Call, op: str):
        self.args, self.pos, self.op = list(call.args[1:]), 0, op

    def bad(self, what: str) -> ValueError:
        return ValueError(f"malformed mesh_comm.{self.op} call (argument {self.pos + 1}): "
                          f"expected {what}; build comm ops with mesh_comm")

    def next(self) -> Any:
        if self.pos >= len(self.args):
            raise self.bad("more arguments")
        self.pos += 1
        return self.args[self.pos - 1]

    def word(self, want: str | None = None) -> str:
        v = self.next()
        if not isinstance(v, tirx.StringImm) or (want is not None and v.value != want):
            raise self.bad(repr(want) if want else "a string")
        return str(v.value)

    def int(self) -> int:
        v = static_int(self.next())
        if v is None:
            raise self.bad("an integer constant")
        return v

    def value(self, kind: str) -> Any:
        if kind == "int":
            return self.int()
        if kind == "bool":
            return bool(self.int())
        if kind == "str":
            return self.word()
        if kind == "pairs":
            n = self.int()
            flat = [self.int() for _ in range(2 * n)]
            return tuple((flat[2 * i], flat[2 * i + 1]) for i in range(n))
        if kind == "exprs":
            return tuple(self.next() for _ in range(self.int()))
        raise AssertionError(kind)  # pragma: no cover


def decode(found: Found, index: int = 0) -> CommOp:
    """The :class:`CommOp` of a comm call found by :func:`~.scope.find_calls`."""
    name = str(found.call.args[0].value)[len(EXTERN_PREFIX):]
    if name not in PARAMS:
        raise ValueError(f"unknown comm op {name!r} in {found.call.args[0].value}; comm ops "
                         f"are {list(COMM_OPS)}")
    r = _Reader(found.call, name)
    r.word("mesh")
    ndim = r.int()
    axes_sizes = [(r.word(), r.int()) for _ in range(ndim)]
    mesh = Mesh(dict(axes_sizes))
    r.word("axes")
    mesh_axes = tuple(r.int() for _ in range(r.int()))
    params = {}
    for key, kind in PARAMS[name]:
        r.word(key)
        params[key] = r.value(kind)
    src = dst = None
    if name != "barrier":
        r.word("src")
        src = region_of(r.next())
        r.word("dst")
        dst = region_of(r.next())
    if r.pos != len(r.args):
        raise r.bad("no more arguments")
    return CommOp(found.call, found.scope, found.order, index=index, op=name, mesh=mesh,
                  mesh_axes=mesh_axes, params=MappingProxyType(params), src=src, dst=dst)


def find_comm_ops(func: Any) -> list[CommOp]:
    """Every comm op of a kernel in program order (``index`` counts them), with scope.

    Accepts a PrimFunc, an IRModule, a ``JITKernel`` or a ``MeshKernel`` (its source).

    >>> import tilelang.language as T
    >>> from meshtensor.tilelang import mesh_comm
    >>> mc = mesh_comm({"row": 2, "col": 2})
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, 2, threads=1) as (bx, by):
    ...         S = T.alloc_shared((4,), "float32")
    ...         for s in T.serial(2):
    ...             mc.shift(S, S, ["row"], "row", 1, rotate=True)
    >>> [(o.index, o.op, o.mesh_axes, o.params["offset"]) for o in find_comm_ops(k)]
    [(0, 'shift', (0,), 1)]
    """
    pf = func if isinstance(func, (tirx.PrimFunc, tirx.Stmt)) else \
        prim_func(func, "find_comm_ops")
    return [decode(f, i) for i, f in enumerate(find_calls(pf, is_comm_call))]


def result_extents(op: str, src: Sequence[int], k: int, params: Mapping[str, Any]
                   ) -> tuple[int, ...]:
    """The shape the host collective gives in-group position 0 (the largest result)
    for a ``src`` region of extents ``src`` in groups of ``k`` (the declaration's
    :meth:`~meshtensor.comm_ops.CommOpDecl.result_extents`; ``op`` is a TIR form).

    >>> result_extents("all_gather", (4, 3), 2, {"gather_axis": 1})
    (4, 6)
    """
    return DECLS[FORMS[op][0]].result_extents(src, k, params)
