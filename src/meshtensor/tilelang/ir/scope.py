"""Statements of a TileLang kernel with their scope: :func:`find_calls` finds call
statements with what encloses them (loops, lets, conditions, ``while`` loops), and
:func:`find_copies` decodes ``T.copy`` calls (op ``tl.tileop.copy``). Every mesh pass
walks kernels through here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Union

import numpy as np
from tvm import tirx
from tvm.runtime import DataType

from .expr import static_int

COPY_OP = "tl.tileop.copy"
#: tile-op operands (by position) that stock TileLang's CPU lowering takes only in local
#: memory: ``T.clear``/``T.fill``'s target, ``T.gemm``'s accumulator, both buffers of a
#: reduction and of a transpose
LOCAL_OPERANDS = {"tl.tileop.fill": (0,), "tl.tileop.gemm": (2,),
                  "tl.tileop.reduce": (0, 1), "tl.tileop.transpose": (0, 1)}


def itemsize(dtype: Any) -> int:
    """Bytes per stored element of a TIR dtype, those NumPy lacks included: a 4-bit
    kind is stored one code a byte (its real size is :func:`nbytes`).

    >>> itemsize("float32"), itemsize("bfloat16"), itemsize("float4_e2m1fn")
    (4, 2, 1)
    """
    t = DataType(str(dtype))
    return (t.bits * t.lanes + 7) // 8


def nbytes(dtype: Any, count: Any) -> Any:
    """The real size of ``count`` elements (an int or an int array) of a TIR dtype,
    rounded up to whole bytes: a 4-bit kind (``float4_e2m1fn``, an ``mxfp4`` buffer's
    elements) is half a byte an element, though one code a byte is how it is stored.

    >>> nbytes("float4_e2m1fn", 1024), nbytes("bfloat16", 3)
    (512, 6)
    """
    t = DataType(str(dtype))
    return (count * (t.bits * t.lanes) + 7) // 8


@dataclass(frozen=True)
class CopyRegion:
    """One side of a copy: a buffer, start indices and extents (TIR expressions)."""

    buffer: tirx.Buffer
    starts: tuple[tirx.PrimExpr, ...]
    extents: tuple[tirx.PrimExpr, ...]

    def static_extents(self) -> tuple[int, ...] | None:
        """The extents as ints, or ``None`` when one is symbolic."""
        ext = tuple(static_int(e) for e in self.extents)
        return None if None in ext else ext  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        """Bytes of the region, its real size (:func:`nbytes`: a 4-bit kind is half a
        byte an element); its extents must be static."""
        ext = self.static_extents()
        if ext is None:
            raise ValueError(f"region of {self.buffer.name!r} has symbolic extents "
                             f"{[str(e) for e in self.extents]}")
        return int(nbytes(self.buffer.dtype, int(np.prod(ext, dtype=np.int64))))


class Let(NamedTuple):
    """A ``v: T.int32 = e`` binding in scope (``tirx.Bind``, or a ``LetStmt``)."""

    var: tirx.Var
    value: tirx.PrimExpr


class Cond(NamedTuple):
    """An enclosing ``if``: its condition, and whether the statement is in the then
    branch (``taken=True``) or the else branch."""

    expr: tirx.PrimExpr
    taken: bool


class WhileLoop(NamedTuple):
    """An enclosing ``while`` loop and its condition (its trip count is data-dependent)."""

    expr: tirx.PrimExpr


ScopeItem = Union[tirx.For, Let, Cond, WhileLoop]


@dataclass(frozen=True)
class Found:
    """A call statement found by :func:`find_calls`, with what encloses it, outermost
    first: ``tirx.For`` loops (thread-binding ones included), :class:`Let` bindings,
    :class:`Cond` conditions and :class:`WhileLoop` loops, in nesting order (a later
    item may use an earlier one)."""

    call: tirx.Call
    scope: tuple[ScopeItem, ...] = ()
    # Where the statement sits in program order, outermost first: per enclosing
    # statement list the statement's position in it (an int), per enclosing loop its
    # loop variable, per enclosing ``if`` 0 (then) or 1 (else). With the loop variables
    # bound, two statements' keys compare lexicographically as their executions run on
    # one core (launch loops are left out: cores run side by side).
    order: tuple[int | tirx.Var, ...] = ()

    @property
    def loops(self) -> tuple[tirx.For, ...]:
        return tuple(i for i in self.scope if isinstance(i, tirx.For))

    @property
    def lets(self) -> tuple[Let, ...]:
        return tuple(i for i in self.scope if isinstance(i, Let))

    @property
    def conds(self) -> tuple[Cond, ...]:
        return tuple(i for i in self.scope if isinstance(i, Cond))


@dataclass(frozen=True)
class CopyCall(Found):
    """A ``T.copy(src, dst)`` found in a kernel, with its scope (see :class:`Found`)."""

    src: CopyRegion = None  # type: ignore[assignment]
    dst: CopyRegion = None  # type: ignore[assignment]


def region_of(arg: Any) -> CopyRegion:
    """The :class:`CopyRegion` of a tile-op operand (``tl.region`` call or a load)."""
    if isinstance(arg, tirx.Call) and arg.op.name == "tl.region":
        load = arg.args[0]
        extents = tuple(arg.args[2:])
        starts = tuple(load.indices)
        # A region may name fewer extents than the buffer's rank: leading dims are 1.
        pad = len(starts) - len(extents)
        return CopyRegion(load.buffer, starts, (tirx.IntImm("int32", 1),) * pad + extents)
    if isinstance(arg, tirx.BufferLoad):
        return CopyRegion(arg.buffer, tuple(arg.indices),
                          (tirx.IntImm("int32", 1),) * len(arg.indices))
    raise ValueError(f"unexpected copy operand {arg!r}")


def _walk(body: Any, leaf: Callable[[Any, tuple, tuple], None]) -> None:
    """Call ``leaf(node, scope, order)`` for every statement that computes something
    (``Evaluate``, ``BufferStore``, a ``Bind``'s value, an ``if``/``while`` condition),
    in program order, with what encloses it (see :class:`Found`)."""

    def walk(node: Any, scope: tuple, order: tuple) -> None:
        if isinstance(node, tirx.For):
            launch = node.kind == tirx.ForKind.THREAD_BINDING
            walk(node.body, scope + (node,), order if launch else order + (node.loop_var,))
        elif isinstance(node, tirx.SeqStmt):
            for i, s in enumerate(node.seq):
                if isinstance(s, tirx.Bind):  # `v: T.int32 = e` scopes over later siblings
                    leaf(s, scope, order + (i,))
                    scope = scope + (Let(s.var, s.value),)
                else:
                    walk(s, scope, order + (i,))
        elif isinstance(node, (tirx.Evaluate, tirx.BufferStore, tirx.Bind)):
            leaf(node, scope, order)
        elif isinstance(node, tirx.IfThenElse):
            leaf(node, scope, order)
            walk(node.then_case, scope + (Cond(node.condition, True),), order + (0,))
            if node.else_case is not None:
                walk(node.else_case, scope + (Cond(node.condition, False),), order + (1,))
        elif isinstance(node, tirx.While):
            walk(node.body, scope + (WhileLoop(node.condition),), order)
        elif isinstance(node, tirx.SBlockRealize):
            # a block predicate guards its body like an `if`
            pred = node.predicate
            always = isinstance(pred, tirx.IntImm) and bool(pred.value)
            walk(node.block, scope if always else scope + (Cond(pred, True),), order)
        else:
            for attr in ("body", "block"):
                child = getattr(node, attr, None)
                if child is not None and isinstance(child, tirx.Stmt):
                    walk(child, scope, order)
                    break

    walk(body, (), ())


def find_calls(func: tirx.PrimFunc | tirx.Stmt, match: Callable[[tirx.Call], bool]) -> list[Found]:
    """Every ``Evaluate(call)`` statement whose call satisfies ``match``, in program
    order, with its scope (loops, lets, ``if`` conditions, block predicates and
    ``while`` loops, outermost first) and its ``order`` key (see :class:`Found`)."""
    body = func.body if isinstance(func, tirx.PrimFunc) else func
    out: list[Found] = []

    def leaf(node: Any, scope: tuple, order: tuple) -> None:
        if isinstance(node, tirx.Evaluate):
            v = node.value
            if isinstance(v, tirx.Call) and match(v):
                out.append(Found(v, scope, order))

    _walk(body, leaf)
    return out


@dataclass(frozen=True)
class Access(Found):
    """One statement's access to a buffer (:func:`find_accesses`): ``region`` the
    element (extents 1) or tile-op region it touches, ``write`` whether it writes,
    ``atomic`` whether through an atomic op, ``stmt`` the statement holding it."""

    region: CopyRegion = None  # type: ignore[assignment]
    write: bool = False
    atomic: bool = False
    stmt: Any = None


_REGION_READ, _REGION_WRITE = 1, 2


def find_accesses(func: tirx.PrimFunc | tirx.Stmt, data: Any) -> list[Access]:
    """Every load, store and tile-op region of the buffers whose data variables are in
    ``data`` (views included), in program order, with their scope: a store writes its
    element, a ``tl.region`` operand reads and/or writes its box (its access mask),
    every other load reads its element; a call whose op is atomic (``atomic_add``...)
    marks its accesses ``atomic``. Conditions, lets' values and loop bounds count as
    reads of the statement that holds them.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(2, threads=1) as bx:
    ...         Y = T.alloc_shared((4,), "float32", scope="shared")
    ...         for i in T.serial(2):
    ...             Y[bx * 2 + i] = Y[0] + 1.0
    >>> acc = find_accesses(k, {find_buffers(k, "Y")[0].data})
    >>> [(str(a.region.starts[0]), a.write) for a in acc]  # the value is read first
    [('0', False), ('bx * 2 + i', True)]
    """
    body = func.body if isinstance(func, tirx.PrimFunc) else func
    out: list[Access] = []

    def mine(buf: tirx.Buffer) -> bool:
        return any(buf.data.same_as(d) for d in data)

    def leaf(node: Any, scope: tuple, order: tuple) -> None:
        found: list = []
        atomic = isinstance(node, tirx.Evaluate) and isinstance(node.value, tirx.Call) and \
            "atomic" in getattr(node.value.op, "name", "")
        in_region: set = set()

        def visit(n: Any) -> None:
            if isinstance(n, tirx.Call) and getattr(n.op, "name", "") == "tl.region":
                load = n.args[0]
                in_region.add(load)
                if mine(load.buffer):
                    mask = static_mask(n.args[1])
                    r = region_of(n)
                    if mask & _REGION_READ:
                        found.append((r, False))
                    if mask & _REGION_WRITE:
                        found.append((r, True))
            elif isinstance(n, tirx.BufferLoad) and not any(n.same_as(x) for x in in_region) \
                    and mine(n.buffer):
                found.append((region_of(n), False))

        if isinstance(node, tirx.BufferStore):
            exprs = [node.value, *node.indices]
        elif isinstance(node, tirx.Bind):
            exprs = [node.value]
        elif isinstance(node, tirx.IfThenElse):
            exprs = [node.condition]
        else:
            exprs = [node.value]
        # pre-order: a region's load is seen (and skipped) before its own visit
        for e in exprs:
            tirx.stmt_functor.pre_order_visit(tirx.Evaluate(e), lambda n: visit(n) or True)
        if isinstance(node, tirx.BufferStore) and mine(node.buffer):
            found.append((CopyRegion(node.buffer, tuple(node.indices),
                                     (tirx.IntImm("int32", 1),) * len(node.indices)), True))
        for r, w in found:
            out.append(Access(None, scope, order, region=r, write=w, atomic=atomic, stmt=node))

    _walk(body, leaf)
    return out


def static_mask(e: Any) -> int:
    """A ``tl.region`` access mask as an int (1 read, 2 write, 3 both)."""
    return int(e.value) if isinstance(e, tirx.IntImm) else 3


def find_buffers(func: tirx.PrimFunc, name: str) -> list[tirx.Buffer]:
    """The buffers named ``name`` that a kernel's loads and stores use."""
    out: list = []

    def visit(n: Any) -> None:
        if isinstance(n, (tirx.BufferLoad, tirx.BufferStore)) and n.buffer.name == name and \
                not any(n.buffer.same_as(b) for b in out):
            out.append(n.buffer)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    return out


def find_copies(func: tirx.PrimFunc | tirx.Stmt) -> list[CopyCall]:
    """Every ``T.copy`` in program order, with its scope (:class:`Found`).

    Thread-binding loops (``T.Kernel``'s block indices) are included as loops too.
    """
    return [CopyCall(f.call, f.scope, f.order, src=region_of(f.call.args[0]),
                     dst=region_of(f.call.args[1]))
            for f in find_calls(func, lambda c: getattr(c.op, "name", None) == COPY_OP)]


def direct_accesses(func: tirx.PrimFunc, names: set[str] | frozenset[str]) -> list[Any]:
    """Every ``BufferLoad``/``BufferStore`` of the parameter buffers named in ``names``
    outside ``T.copy`` (``A[i, j]`` in an expression, or a tile op such as ``T.gemm`` on
    the buffer), in program order: accesses the copy-based mesh passes cannot place.

    >>> from meshtensor.tilelang.kernels.gemm import build_gemm
    >>> direct_accesses(build_gemm("summa_comm", 8, 8, 8), {"A", "B", "C"})  # copies only
    []
    """
    data = {b.data for b in func.buffer_map.values() if b.name in names}
    seen: list[Any] = []

    def visit(node: Any) -> bool:
        if isinstance(node, tirx.Call) and getattr(node.op, "name", None) == COPY_OP:
            return False  # a copy's operands: checked as copies
        if isinstance(node, (tirx.BufferLoad, tirx.BufferStore)) and \
                any(node.buffer.data.same_as(d) for d in data):
            seen.append(node)
        return True

    tirx.stmt_functor.pre_order_visit(func.body, visit)
    return seen
