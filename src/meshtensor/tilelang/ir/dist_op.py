"""The typed record of a ``T.dist`` op (SUNMMIO's rank layer), and its one encoding in
TIR.

A ``T.dist`` op is ONE call of the kernel: ``T.call_extern(dtype,
"meshtensor_dist_<op>", ...)``, a statement (``T.evaluate``) except ``wait_any``
(an ``int32`` value) and ``has_pending`` (a ``bool``). Its arguments spell the record
out in TIR immediates, in a fixed order that every TIR round trip keeps::

    "world", W, "mesh", nrows, ncols, "rank", <rank_id var>, "core", <core id expr>,
    key_0, <value_0>, ..., key_{m-1}, <value_{m-1}>        # FIELDS[op], in that order

Values are typed by :data:`FIELDS`: ``int`` an integer immediate, ``str`` a string
immediate, ``expr`` an integer TIR expression, ``region`` a ``tl.region`` call (or the
string ``"none"``), ``signal`` a signal reference (``id``, then the member index: -1
for a single signal, else an integer expression), ``routes`` a count then three
expressions per route (source row, destination rank, destination row). Signals,
signal lists and completions are named by small integer ids, unique in their kernel;
``signal_decl`` and ``completion`` statements declare them where the kernel does.
:func:`encode` writes a record and :func:`decode` reads it back; nothing else parses
these calls. An unlowered ``meshtensor_dist_*`` call is no C function, so a kernel that
still holds one cannot run.

>>> import tilelang
>>> from tvm import tirx
>>> rank, core = tirx.Var("rank_id", "int32"), tirx.Var("bx", "int32")
>>> call = encode("submit", 4, (2, 2), rank, core, {})
>>> op = decode(call)
>>> op.op, op.world, op.mesh_shape, op.rank.name
('submit', 4, (2, 2), 'rank_id')
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from tvm import tirx

from .scope import CopyRegion, find_calls, region_of

__all__ = ["EXTERN_PREFIX", "FIELDS", "DISPLAY", "SignalRef", "DistOp", "encode", "decode",
           "is_dist_call", "find_dist_ops", "DIST_VALUE_OPS"]

EXTERN_PREFIX = "meshtensor_dist_"

#: each op's fields and their kinds, in the order they are written into the call
FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    # declarations: a signal (count 0) or a signal list (count >= 1)
    "signal_decl": (("id", "int"), ("count", "int"), ("kind", "str"), ("expect", "str"),
                    ("implicit", "int")),
    "completion": (("id", "int"), ("list", "int"), ("deltas", "region"), ("mode", "str")),
    # point to point
    "put": (("src", "region"), ("dst", "region"), ("dst_rank", "expr"), ("dst_row", "expr"),
            ("signal", "signal"), ("submit", "int")),
    "routed_put": (("src", "region"), ("dst", "region"), ("routes", "routes"),
                   ("src_rank", "int"), ("signal", "signal"), ("submit", "int")),
    "put_signal": (("signal", "signal"), ("dst_rank", "expr"), ("submit", "int")),
    "submit": (),
    "wait_send": (),
    # receiver waits
    "wait_signal": (("signal", "signal"), ("delta", "expr")),
    "wait_signals": (("list", "int"), ("deltas", "region")),
    "wait_all": (("list", "int"), ("completion", "int")),
    "has_pending": (("completion", "int"),),
    "wait_any": (("completion", "int"),),
    # collectives over the corresponding cores of every rank
    "barrier": (("signal", "signal"),),
    "barrier_arrive": (("signal", "signal"), ("submit", "int")),
    "all_gather": (("src", "region"), ("dst", "region"), ("axis", "int"),
                   ("signal", "signal"), ("list", "int"), ("completion", "int"),
                   ("submit", "int")),
    "all_reduce": (("src", "region"), ("dst", "region"), ("reduce_type", "str"),
                   ("signal", "signal")),
    "all_to_all": (("src", "region"), ("dst", "region"), ("domain", "str"),
                   ("signal", "signal"), ("submit", "int")),
    "all_to_allv": (("src", "region"), ("dst", "region"), ("send_counts", "region"),
                    ("recv_counts", "region"), ("domain", "str"), ("signal", "signal"),
                    ("list", "int"), ("completion", "int"), ("submit", "int")),
}
#: ops that are values, not statements: their result dtype
DIST_VALUE_OPS = {"wait_any": "int32", "has_pending": "bool"}
#: how errors name an op
DISPLAY = {op: f"T.dist.{op}" for op in FIELDS}
DISPLAY.update({"signal_decl": "T.dist.signal", "wait_send": "T.dist.wait"})


@dataclass(frozen=True)
class SignalRef:
    """A reference to a signal: ``id`` of a ``T.dist.signal`` or ``T.dist.signals``
    declaration and, for a list, the member index (an int or an integer expression;
    ``None`` for a single signal)."""

    id: int
    member: Any = None

    @property
    def dynamic(self) -> bool:
        return self.member is not None and not isinstance(self.member, int)


@dataclass(frozen=True, eq=False)
class DistOp:
    """A decoded ``T.dist`` op: ``op``, the world size, the ``(nrows, ncols)`` mesh,
    the kernel's ``rank`` variable, this program's ``core`` id expression and the
    op's ``fields`` (regions as :class:`~.scope.CopyRegion`, signals as
    :class:`SignalRef`, routes as ``(src_row, dst_rank, dst_row)`` tuples)."""

    op: str
    world: int
    mesh_shape: tuple[int, int]
    rank: tirx.Var
    core: tirx.PrimExpr
    fields: Mapping[str, Any]
    call: tirx.Call

    @property
    def name(self) -> str:
        return DISPLAY[self.op]

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def _imm(v: int) -> tirx.IntImm:
    return tirx.IntImm("int32", int(v))


def _expr(v: Any) -> tirx.PrimExpr:
    return _imm(v) if isinstance(v, int) and not isinstance(v, bool) else v


def encode(op: str, world: int, mesh_shape: tuple[int, int], rank: tirx.Var,
           core: tirx.PrimExpr, fields: Mapping[str, Any]) -> tirx.Call:
    """The TIR call of a ``T.dist`` op (``fields`` has exactly the keys of
    ``FIELDS[op]``; regions are ``tl.region`` calls or ``None``)."""
    if op not in FIELDS:
        raise ValueError(f"unknown T.dist op {op!r}; ops are {list(FIELDS)}")
    want = [k for k, _ in FIELDS[op]]
    if sorted(fields) != sorted(want):
        raise ValueError(f"T.dist.{op}: fields {sorted(fields)}, expected {want}")
    args: list = [tirx.StringImm("world"), _imm(world), tirx.StringImm("mesh"),
                  _imm(mesh_shape[0]), _imm(mesh_shape[1]), tirx.StringImm("rank"), rank,
                  tirx.StringImm("core"), _expr(core)]
    for key, kind in FIELDS[op]:
        v = fields[key]
        args.append(tirx.StringImm(key))
        if kind == "int":
            args.append(_imm(v))
        elif kind == "str":
            args.append(tirx.StringImm(str(v)))
        elif kind == "expr":
            args.append(_expr(v))
        elif kind == "region":
            args.append(tirx.StringImm("none") if v is None else v)
        elif kind == "signal":
            ref = SignalRef(-1) if v is None else v
            args += [_imm(ref.id), _expr(-1 if ref.member is None else ref.member)]
        elif kind == "routes":
            args.append(_imm(len(v)))
            for route in v:
                args += [_expr(x) for x in route]
        else:  # pragma: no cover - FIELDS is fixed
            raise AssertionError(kind)
    return tirx.call_extern(DIST_VALUE_OPS.get(op, "handle"), EXTERN_PREFIX + op, *args)


def is_dist_call(call: Any) -> bool:
    """Whether ``call`` is a ``T.dist`` op record."""
    return (isinstance(call, tirx.Call) and getattr(call.op, "name", None) == "tirx.call_extern"
            and isinstance(call.args[0], tirx.StringImm)
            and call.args[0].value.startswith(EXTERN_PREFIX))


def _int(x: Any) -> int:
    if not isinstance(x, tirx.IntImm):
        raise ValueError(f"T.dist record: expected an integer immediate, got {x!r}")
    return int(x.value)


def decode(call: tirx.Call) -> DistOp:
    """The :class:`DistOp` of a record written by :func:`encode`."""
    op = call.args[0].value[len(EXTERN_PREFIX):]
    if op not in FIELDS:
        raise ValueError(f"unknown T.dist op record {call.args[0].value!r}")
    a = list(call.args[1:])
    if [getattr(a[i], "value", None) for i in (0, 2, 5, 7)] != ["world", "mesh", "rank",
                                                                 "core"]:
        raise ValueError(f"malformed T.dist record {call}")
    world, mesh_shape, rank, core = _int(a[1]), (_int(a[3]), _int(a[4])), a[6], a[8]
    pos, fields = 9, {}
    for key, kind in FIELDS[op]:
        if getattr(a[pos], "value", None) != key:
            raise ValueError(f"malformed T.dist.{op} record: expected field {key!r} at "
                             f"{pos}, got {a[pos]!r}")
        pos += 1
        if kind == "int":
            fields[key] = _int(a[pos])
            pos += 1
        elif kind == "str":
            fields[key] = a[pos].value
            pos += 1
        elif kind == "expr":
            fields[key] = a[pos]
            pos += 1
        elif kind == "region":
            v = a[pos]
            fields[key] = None if isinstance(v, tirx.StringImm) else region_of(v)
            pos += 1
        elif kind == "signal":
            sid, member = _int(a[pos]), a[pos + 1]
            m = member.value if isinstance(member, tirx.IntImm) else member
            fields[key] = None if sid < 0 else SignalRef(sid, None if m == -1 else m)
            pos += 2
        elif kind == "routes":
            n = _int(a[pos])
            pos += 1
            fields[key] = tuple(tuple(a[pos + 3 * i:pos + 3 * i + 3]) for i in range(n))
            pos += 3 * n
    return DistOp(op, world, mesh_shape, rank, core, MappingProxyType(fields), call)


def find_dist_ops(func: tirx.PrimFunc | tirx.Stmt) -> list:
    """Every ``T.dist`` record that is a statement, in program order, with its scope
    (``Found`` of :mod:`.scope`); value ops (``wait_any``, ``has_pending``) are found
    by :func:`is_dist_call` where they are used."""
    return find_calls(func, is_dist_call)


def region_buffer(r: CopyRegion | None) -> Any:
    return None if r is None else r.buffer
