"""Decode the ``T.copy`` calls of a TileLang kernel (op ``tl.tileop.copy``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tvm import tirx

COPY_OP = "tl.tileop.copy"


@dataclass(frozen=True)
class CopyRegion:
    """One side of a copy: a buffer, start indices and extents (TIR expressions)."""

    buffer: tirx.Buffer
    starts: tuple[tirx.PrimExpr, ...]
    extents: tuple[tirx.PrimExpr, ...]


@dataclass(frozen=True)
class CopyCall:
    """A ``T.copy(src, dst)`` found in a kernel, with the loops that enclose it
    (outermost first) and the ``LetStmt`` bindings in scope (in order)."""

    src: CopyRegion
    dst: CopyRegion
    loops: tuple[tirx.For, ...] = ()
    lets: tuple[tuple[tirx.Var, tirx.PrimExpr], ...] = ()


def _region(arg: Any) -> CopyRegion:
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


def find_copies(func: tirx.PrimFunc | tirx.Stmt) -> list[CopyCall]:
    """Every ``T.copy`` in program order, with its enclosing ``for`` loops.

    Thread-binding loops (``T.Kernel``'s block indices) are included as loops too.
    """
    body = func.body if isinstance(func, tirx.PrimFunc) else func
    out: list[CopyCall] = []

    def walk(node: Any, loops: tuple, lets: tuple) -> None:
        if isinstance(node, tirx.For):
            walk(node.body, loops + (node,), lets)
        elif isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                if isinstance(s, tirx.Bind):  # `v: T.int32 = e` scopes over later siblings
                    lets = lets + ((s.var, s.value),)
                else:
                    walk(s, loops, lets)
        elif isinstance(node, tirx.Evaluate):
            v = node.value
            if isinstance(v, tirx.Call) and getattr(v.op, "name", None) == COPY_OP:
                out.append(CopyCall(_region(v.args[0]), _region(v.args[1]), loops, lets))
        elif isinstance(node, tirx.IfThenElse):
            walk(node.then_case, loops, lets)
            if node.else_case is not None:
                walk(node.else_case, loops, lets)
        else:
            for attr in ("body", "block"):
                child = getattr(node, attr, None)
                if child is not None and isinstance(child, tirx.Stmt):
                    walk(child, loops, lets)
                    break

    walk(body, (), ())
    return out


def eval_expr(expr: Any, env: dict[tirx.Var, int] | None = None) -> int:
    """The int value of a TIR expression once ``env``'s variables are bound.

    Raises ``ValueError`` when a free variable is left (the expression is symbolic).
    """
    if isinstance(expr, int):
        return expr
    from tvm import arith
    e = tirx.stmt_functor.substitute(expr, {k: tirx.IntImm(k.dtype, v) for k, v in (env or {}).items()})
    e = arith.Analyzer().simplify(e)
    if not isinstance(e, tirx.IntImm):
        raise ValueError(f"expression {expr} is not constant once {sorted(str(k) for k in (env or {}))} "
                         f"are bound (left: {e})")
    return int(e.value)
