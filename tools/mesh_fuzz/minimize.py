"""Shrink a failing program while it keeps failing the same way.

Greedy passes over the statement tree: drop a statement, replace an ``if`` by one of
its branches, replace a loop by its body at one iteration; a candidate is kept when
the model still runs it (every value defined and exact) and the kernel layer still
gives the same kind of failure. Buffers, variables and tensors nothing uses any more
are dropped. Each try compiles one kernel, so this is for failures, not for every
program.

>>> from mesh_fuzz.program import Assign, Const, For, Name
>>> body = (For("k", 0, 2, "serial", (Assign("S", (Name("k"),), (), Const(1, "int32")),)),)
>>> [len(c) for c in candidates(body)]  # no loop; its body once; a shorter loop; ...
[0, 1, 1, 1]
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from .model import ModelError, Unrepresentable, run_model
from .program import (Assign, Batch, Bin, Cast, Comm, Const, Copy, Fill, For, Gemm, If,
                      Let, Load, MeshCopy, Name, Program, Region, Select, SetVar, children)


def subst(e, name: str, value):
    """``e`` with ``Name(name)`` replaced by ``value``."""
    if isinstance(e, Name):
        return value if e.name == name else e
    if isinstance(e, Bin):
        return Bin(e.op, subst(e.a, name, value), subst(e.b, name, value))
    if isinstance(e, Cast):
        return Cast(e.dtype, subst(e.a, name, value))
    if isinstance(e, Select):
        return Select(subst(e.cond, name, value), subst(e.a, name, value),
                      subst(e.b, name, value))
    if isinstance(e, Load):
        return Load(e.buf, tuple(subst(i, name, value) for i in e.index), e.dtype,
                    None if e.owner is None else subst(e.owner, name, value))
    return e


def _subst_region(r, name, value):
    if r is None:
        return None
    return replace(r, starts=tuple(subst(s, name, value) for s in r.starts),
                   owner=None if r.owner is None else subst(r.owner, name, value))


def subst_stmt(s, name: str, value):
    """Statement ``s`` with ``Name(name)`` replaced by ``value`` everywhere."""
    f = lambda e: subst(e, name, value)  # noqa: E731
    if isinstance(s, Assign):
        return replace(s, index=tuple(map(f, s.index)), value=f(s.value),
                       owner=None if s.owner is None else f(s.owner))
    if isinstance(s, Fill):
        return replace(s, value=None if s.value is None else f(s.value))
    if isinstance(s, Copy):
        return Copy(_subst_region(s.src, name, value), _subst_region(s.dst, name, value))
    if isinstance(s, (Let, SetVar)):
        return replace(s, value=f(s.value))
    if isinstance(s, For):
        ext = s.extent if isinstance(s.extent, int) else f(s.extent)
        return replace(s, extent=ext, body=tuple(subst_stmt(t, name, value) for t in s.body))
    if isinstance(s, If):
        return If(f(s.cond), tuple(subst_stmt(t, name, value) for t in s.then),
                  tuple(subst_stmt(t, name, value) for t in s.orelse))
    if isinstance(s, Comm):
        root = None if s.root is None else tuple(map(f, s.root))
        return replace(s, src=_subst_region(s.src, name, value),
                       dst=_subst_region(s.dst, name, value), root=root)
    if isinstance(s, MeshCopy):
        return replace(s, coord=tuple(map(f, s.coord)), buf=_subst_region(s.buf, name, value))
    return s


def candidates(body: tuple) -> Iterator[tuple]:
    """Smaller variants of a statement list, larger cuts first."""
    for i in range(len(body) - 1, -1, -1):
        yield body[:i] + body[i + 1:]
    for i, s in enumerate(body):
        if isinstance(s, If):
            for branch in (s.then, s.orelse):
                yield body[:i] + tuple(branch) + body[i + 1:]
        if isinstance(s, For):
            one = tuple(subst_stmt(t, s.var, Const(s.start, "int32")) for t in s.body)
            yield body[:i] + one + body[i + 1:]
            if s.kind != "serial":
                yield body[:i] + (replace(s, kind="serial"),) + body[i + 1:]
            if isinstance(s.extent, int) and s.extent > 1:
                yield body[:i] + (replace(s, extent=s.extent - 1),) + body[i + 1:]
        for attr in ("then", "orelse", "body"):
            inner = getattr(s, attr, None)
            if inner:
                for c in candidates(tuple(inner)):
                    yield body[:i] + (replace(s, **{attr: c}),) + body[i + 1:]


def _names(x, out: set) -> None:
    """Every buffer, tensor and variable name ``x`` mentions."""
    if isinstance(x, (tuple, list)):
        for y in x:
            _names(y, out)
    elif isinstance(x, Name):
        out.add(x.name)
    elif isinstance(x, Load):
        out.add(x.buf)
        _names((x.index, x.owner or ()), out)
    elif isinstance(x, Region):
        out.add(x.buf)
        _names((x.starts, x.owner or ()), out)
    elif isinstance(x, (Bin, Cast, Select)):
        _names(children(x), out)
    elif isinstance(x, Assign):
        out.add(x.buf)
        _names((x.index, x.value, x.owner or ()), out)
    elif isinstance(x, Gemm):
        out |= {x.a, x.b, x.c}
    elif isinstance(x, Fill):
        out.add(x.buf)
        _names(x.value or (), out)
    elif isinstance(x, Copy):
        _names((x.src, x.dst), out)
    elif isinstance(x, (Let, SetVar)):
        out.add(x.name)
        _names(x.value, out)
    elif isinstance(x, For):
        _names((x.extent, x.body), out)
    elif isinstance(x, If):
        _names((x.cond, x.then, x.orelse), out)
    elif isinstance(x, Comm):
        _names((x.src, x.dst, x.root or ()), out)
    elif isinstance(x, MeshCopy):
        out.add(x.tensor)
        _names((x.coord, x.buf), out)


def prune(p: Program) -> Program:
    """``p`` without the buffers, variables and tensors its body never names."""
    used: set = set()
    _names(p.body, used)
    used |= {b.parent for b in p.bufs if b.name in used and b.parent}  # views' allocations
    return replace(p, tensors=tuple(t for t in p.tensors if t.name in used),
                   bufs=tuple(b for b in p.bufs if b.name in used),
                   vars=tuple(v for v in p.vars if v.name in used))


def merge(programs, index: int) -> Program:
    """One program running ``programs`` one after the other (their names are disjoint),
    numbered ``index``: a batch whose failure needs several programs, to minimize."""
    programs = list(programs)
    return Program(index, tuple(t for p in programs for t in p.tensors),
                   tuple(b for p in programs for b in p.bufs),
                   tuple(v for p in programs for v in p.vars),
                   tuple(s for p in programs for s in p.body),
                   seed="+".join(p.seed for p in programs),
                   features=frozenset().union(*(p.features for p in programs)))


def minimize(shell: Batch, program: Program, inputs: dict,
             still_fails: Callable[[Program, dict], bool], budget: int = 200) -> Program:
    """The smallest variant of ``program`` found (``budget`` kernel tries at most) for
    which ``still_fails(variant, model_result)`` holds."""
    best = program
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for body in candidates(best.body):
            cand = prune(replace(best, body=body))
            try:
                result = run_model(shell.with_programs((cand,)), cand, inputs)
            except (ModelError, Unrepresentable, ValueError):
                continue  # not a valid program any more
            tries += 1
            if still_fails(cand, result):
                best = cand
                changed = True
                break
            if tries >= budget:
                break
    return best
