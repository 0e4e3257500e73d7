"""``ProtectFoldedIndices``: indices that stock TileLang would fold into other values are
computed into a variable first, where its simplifier cannot see them.

TileLang 0.1.15 simplifies buffer indices and copy starts with TVM's iterator-map
simplifications (``arith.iter_map_simplify`` in its buffer flattening; the iterator
sums of ``arith.normalize_to_iter_sum`` in its copy lowering), which get some nests of
``//`` and ``%`` of one variable wrong:
``((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3`` over ``b`` in ``[0, 6)`` becomes
``(b + 3) % 6`` (5 instead of 3 at ``b = 2``), ``(s % 2) * 2 + (s + 1) % 2`` becomes
``((s + 1) % 2) * 3``. Every core of a 1-D mesh is such a ``b`` once the lowering
runs the cores in a loop, and every ``T.copy`` start is ``start + i`` over its extent.

This pass is the translation check: for every index of every load, store and tile-op
region (and every copy start plus its iteration variable), in a statement, an ``if``
or ``while`` condition or a let's value, it runs the simplifications
TileLang runs, with the enclosing loops' ranges, and evaluates the source expression
and each simplified one exactly (:mod:`~meshtensor.tilelang.ir.evaluate`) at every
point of those ranges, so at every core. Where a simplified value differs anywhere,
the index is computed into a one-element ``local`` buffer just before its statement and read from it
(a load is opaque to the simplifier); a ``T.Parallel`` or vectorized loop whose
variable such an index uses runs as the serial loop it means. An index over more
than ``MeshPassConfig.max_index_points`` points that the simplifier rewrites at all is
protected without evaluating it, and so is one holding a narrowing cast's wrap
(``WrapNarrowingCasts``' ``bitwise_and``), which TileLang's safe-memory pass cannot
bound. Every other index is left exactly as written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm
from tvm import arith, ir, tirx

from ..ir.expr import static_int
from ..ir.evaluate import eval_np
from ..pass_config import DEFAULT, MeshPassConfig

__all__ = ["ProtectFoldedIndices", "protect_folded_indices", "folds_wrongly"]
_DIVMOD = (tirx.FloorDiv, tirx.FloorMod, tirx.Div, tirx.Mod)


def _has(e: Any, pred: Any) -> bool:
    hit: list = []
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(e), lambda n: hit.append(n)
                                       if pred(n) else None)
    return bool(hit)


def _has_divmod(e: Any) -> bool:
    return _has(e, lambda n: isinstance(n, _DIVMOD))


def _has_wrap(e: Any) -> bool:
    """Whether ``e`` holds a narrowing cast's wrap as ``WrapNarrowingCasts`` writes it."""
    return _has(e, lambda n: isinstance(n, tirx.Call)
                and getattr(n.op, "name", "") == "tirx.bitwise_and")


def _free_vars(e: Any) -> list[tirx.Var]:
    out: list = []
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(e), lambda n: out.append(n)
                                       if isinstance(n, tirx.Var) and
                                       not any(n.same_as(v) for v in out) else None)
    return out


def _simplified(e: tirx.PrimExpr, dom: dict) -> list[tirx.PrimExpr]:
    """What TileLang's simplifications make of ``e`` over ``dom``."""
    out = []
    for fold in (lambda: arith.iter_map_simplify([e], dom)[0],
                 lambda: arith.normalize_iter_map_to_expr(arith.normalize_to_iter_sum(e, dom))):
        try:
            out.append(fold())
        except Exception:  # noqa: BLE001 (not an iterator map: nothing folded)
            pass
    ana = arith.Analyzer()
    for v, r in dom.items():
        ana.bind(v, r)
    out.append(ana.simplify(e))
    return out


def folds_wrongly(e: tirx.PrimExpr, ranges: dict,
                  max_points: int = DEFAULT.max_index_points) -> bool:
    """Whether TileLang's simplifications turn ``e`` into another value at some point of
    ``ranges`` (``{var: (min, extent)}``, static ints; every free variable of ``e``);
    over more than ``max_points`` points, whether they change it at all.

    >>> import tilelang
    >>> from tvm import tirx
    >>> b = tirx.Var("b", "int32")
    >>> folds_wrongly(((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3, {b: (0, 6)})
    True
    >>> folds_wrongly((b // 3) * 3 + b % 3, {b: (0, 6)})
    False
    """
    dom = {v: ir.Range.from_min_extent(lo, n) for v, (lo, n) in ranges.items()}
    cands = [c for c in _simplified(e, dom) if not tvm.ir.structural_equal(c, e)]
    if not cands:
        return False
    total = int(np.prod([n for _, n in ranges.values()], dtype=np.int64)) if ranges else 1
    if total > max_points:
        return True
    axes = [np.arange(lo, lo + n, dtype=np.int64) for lo, n in ranges.values()]
    grids = np.meshgrid(*axes, indexing="ij") if axes else []
    env = {v: g.ravel() for v, g in zip(ranges, grids)}
    try:
        want = np.broadcast_to(np.asarray(eval_np(e, env)), (total,))
        return any(not np.array_equal(want, np.broadcast_to(np.asarray(eval_np(c, env)),
                                                            (total,))) for c in cands)
    except ValueError:
        return True  # cannot compare (e.g. a division by zero off the real points)


class _Protector:
    def __init__(self, config: MeshPassConfig) -> None:
        self.max_points = config.max_index_points
        self.loops: list[tirx.For] = []
        self.lets: dict = {}
        self.serialize: set = set()  # parallel loop variables to run serially

    def _ranges(self, e: tirx.PrimExpr) -> dict | None:
        out = {}
        for v in _free_vars(e):
            lp = next((lp for lp in reversed(self.loops) if lp.loop_var.same_as(v)), None)
            if lp is None:
                return None  # a variable of unknown range: the simplifier cannot fold it
            lo, n = static_int(lp.min), static_int(lp.extent)
            if lo is None or n is None:
                return None
            out[v] = (lo, n)
        return out

    def _bad(self, e: tirx.PrimExpr, extent: Any = None) -> bool:
        if not isinstance(e, tirx.PrimExpr):
            return False
        if _has_wrap(e):
            # TileLang's LegalizeSafeMemoryAccess cannot bound a bitwise_and index and
            # stops (Check failed: combined.defined()): the index goes through a cell
            return True
        if not _has_divmod(e):
            return False
        inl = tirx.stmt_functor.substitute(e, self.lets) if self.lets else e
        ranges = self._ranges(inl)
        if ranges is None:
            return False
        if folds_wrongly(inl, ranges, self.max_points):
            return True
        n = static_int(extent) if extent is not None else None
        if n is not None and n > 1:  # a copy lowers to start + i over its extent
            i = tirx.Var("i", inl.dtype)
            return folds_wrongly(inl + i, {**ranges, i: (0, n)}, self.max_points)
        return False

    def _marked(self, stmt: tirx.Stmt) -> list[tirx.PrimExpr]:
        """The indices of ``stmt`` (its stores', loads' and tile-op regions') to
        protect, each once."""
        marked: list = []

        def add(e: Any) -> None:
            if not any(e.same_as(m) for m in marked):
                marked.append(e)

        def visit(n: Any) -> None:
            if isinstance(n, tirx.Call) and getattr(n.op, "name", "") == "tl.region":
                load, extents = n.args[0], list(n.args[2:])
                extents = [None] * (len(load.indices) - len(extents)) + extents
                for idx, ext in zip(load.indices, extents):
                    if self._bad(idx, ext):
                        add(idx)
            elif isinstance(n, (tirx.BufferLoad, tirx.BufferStore)):
                for idx in n.indices:
                    if self._bad(idx):
                        add(idx)

        tirx.stmt_functor.post_order_visit(stmt, visit)
        return marked

    def _protect(self, stmt: tirx.Stmt) -> tirx.Stmt:
        marked = self._marked(stmt)
        if not marked:
            return stmt
        for e in marked:
            for v in _free_vars(e):
                lp = next((lp for lp in self.loops if lp.loop_var.same_as(v)), None)
                if lp is not None and lp.kind in (tirx.ForKind.PARALLEL,
                                                  tirx.ForKind.VECTORIZED):
                    self.serialize.add(lp.loop_var)
        cells = [tirx.decl_buffer((1,), e.dtype, "index", scope="local") for e in marked]
        loads = [tirx.BufferLoad(c, [tirx.IntImm("int32", 0)]) for c in cells]

        def swap(idx: Any) -> Any:
            for e, ld in zip(marked, loads):
                if idx.same_as(e):
                    return ld
            return idx

        def post(n: Any) -> Any:
            if isinstance(n, tirx.BufferLoad):
                return tirx.BufferLoad(n.buffer, [swap(i) for i in n.indices], n.predicate)
            return tirx.BufferStore(n.buffer, n.value, [swap(i) for i in n.indices],
                                    n.predicate)

        new = tirx.stmt_functor.ir_transform(stmt, None, post,
                                             ["tirx.BufferLoad", "tirx.BufferStore"])
        pre: list = []
        for c, e in zip(cells, marked):
            pre += [tirx.AllocBuffer(c), tirx.BufferStore(c, e, [tirx.IntImm("int32", 0)])]
        return tirx.SeqStmt(pre + [new])

    def _protect_expr(self, e: tirx.PrimExpr) -> tuple[list, tirx.PrimExpr]:
        """The cells to fill before a statement that evaluates ``e`` once (an ``if``
        condition, a let's value), and ``e`` reading them."""
        probe = tirx.Evaluate(e)
        new = self._protect(probe)
        if new.same_as(probe):
            return [], e
        return list(new.seq[:-1]), new.seq[-1].value

    def visit(self, s: tirx.Stmt) -> tirx.Stmt:
        if isinstance(s, tirx.SeqStmt):
            out = []
            saved = dict(self.lets)
            for x in s.seq:
                y = self.visit(x)
                if isinstance(x, tirx.Bind) and isinstance(y, tirx.SeqStmt):
                    out.extend(y.seq)  # a let's scope is the rest of its own sequence
                else:
                    out.append(y)
                if isinstance(x, tirx.Bind):
                    self.lets[x.var] = x.value
            self.lets = saved
            if len(out) == len(s.seq) and all(a.same_as(b) for a, b in zip(out, s.seq)):
                return s
            return tirx.SeqStmt(out)
        if isinstance(s, tirx.For):
            self.loops.append(s)
            body = self.visit(s.body)
            self.loops.pop()
            kind = tirx.ForKind.SERIAL if s.loop_var in self.serialize else s.kind
            if body.same_as(s.body) and kind == s.kind:
                return s
            return tirx.For(s.loop_var, s.min, s.extent, kind, body, s.thread_binding,
                            s.annotations)
        if isinstance(s, tirx.IfThenElse):
            t = self.visit(s.then_case)
            e = self.visit(s.else_case) if s.else_case is not None else None
            pre, cond = self._protect_expr(s.condition)
            if not pre and t.same_as(s.then_case) and (e is None or e.same_as(s.else_case)):
                return s
            return _seq(pre + [tirx.IfThenElse(cond, t, e)])
        if isinstance(s, tirx.Bind):
            pre, value = self._protect_expr(s.value)
            return _seq(pre + [tirx.Bind(s.var, value)]) if pre else s
        if isinstance(s, tirx.While):
            body = self.visit(s.body)
            pre, cond = self._protect_expr(s.condition)
            if pre:  # the condition runs before every iteration: its cells are refilled
                again = [x for x in pre if isinstance(x, tirx.BufferStore)]
                return tirx.SeqStmt(pre + [tirx.While(cond, tirx.SeqStmt([body] + again))])
            return s if body.same_as(s.body) else tirx.While(s.condition, body)
        if isinstance(s, tirx.AttrStmt):
            body = self.visit(s.body)
            return s if body.same_as(s.body) else tirx.AttrStmt(s.node, s.attr_key, s.value,
                                                                body)
        if isinstance(s, tirx.SBlockRealize):
            b = s.block
            body = self.visit(b.body)
            if body.same_as(b.body):
                return s
            blk = tirx.SBlock(b.iter_vars, b.reads, b.writes, b.name_hint, body, b.init,
                              b.alloc_buffers, b.match_buffers, b.annotations)
            return tirx.SBlockRealize(s.iter_values, s.predicate, blk)
        if isinstance(s, (tirx.BufferStore, tirx.Evaluate)):
            return self._protect(s)
        return s


def _seq(stmts: list) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def protect_folded_indices(func: tirx.PrimFunc, config: MeshPassConfig = DEFAULT
                           ) -> tirx.PrimFunc:
    """The function form of :func:`ProtectFoldedIndices` (a kernel in which nothing folds
    wrongly is returned as it is).

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k():
    ...     with T.Kernel(6, threads=1) as b:
    ...         Y = T.alloc_shared((6,), "int32", scope="shared")
    ...         Y[((b // 3 + 1) % 2) * 3 + (b % 3 + 1) % 3] = b
    >>> "index[0] = " in protect_folded_indices(k).script()
    True
    """
    p = _Protector(config)
    body = p.visit(func.body)
    if p.serialize:  # a second walk turns the parallel loops whose index was protected
        body = p.visit(body)
    return func if body.same_as(func.body) else func.with_body(body)


def ProtectFoldedIndices() -> tvm.transform.Pass:  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.ProtectFoldedIndices"`` (module docstring).

    >>> ProtectFoldedIndices().info.name
    'meshtensor.ProtectFoldedIndices'
    """
    return tirx.transform.prim_func_pass(lambda f, m, c: protect_folded_indices(f),
                                         opt_level=0, name="meshtensor.ProtectFoldedIndices")
