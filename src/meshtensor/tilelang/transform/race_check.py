"""The checked run of ``compile_mesh_kernel(..., check_races=True)``: a shadow record of
which core last wrote and read each element of every global buffer in the current
superstep, kept by code added before every statement that touches one.

The shadow lives in one more kernel argument, an int32 array: a header (the superstep
counter, then the first race found: buffer, element, both accessing cores and
statements, whether each wrote) and per element of every checked buffer the superstep
and ``core * S + statement`` of its last writer and of its first two readers from
different cores (``S`` counts the checked statements). Every exchange ends a superstep
(the counter goes up). A write checks that no other core wrote or read the element in
this superstep, a read that no other core wrote it; the first race is kept and the
kernel runs to its end; :class:`~meshtensor.tilelang.MeshKernel` then raises the
``ValueError`` that the static check (:mod:`..analysis.races`) would have. Every
``T.Parallel`` or vectorized loop of the checked kernel runs as the serial loop it means
(the added code is scalar). The checked kernel computes the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from tvm import tirx

from ..analysis.races import Race, statement_text
from ..ir.expr import static_int
from ..ir.scope import find_accesses

__all__ = ["RaceShadow", "SHADOW_PARAM", "add_shadow_param"]

SHADOW_PARAM = "mesh_race_shadow"
HEADER = 8  # epoch, found, buffer, element, cs_a, cs_b, write_a, write_b
_FIELDS = 5  # per element: w_epoch, w_cs, r_epoch, r_cs, r2_cs


def _i32(v: Any) -> tirx.PrimExpr:
    return tirx.IntImm("int32", int(v)) if isinstance(v, (int, np.integer)) else v


@dataclass
class RaceShadow:
    """The layout of the shadow record of one kernel: its checked ``buffers`` (global
    buffers with static shapes), where each one's cells start, and the statements
    instrumented so far (their texts, by id)."""

    buffers: tuple[tirx.Buffer, ...]
    offsets: tuple[int, ...]
    size: int
    statements: list = field(default_factory=list)
    buf: tirx.Buffer = None  # type: ignore[assignment]

    @staticmethod
    def plan(params: Sequence[tirx.Buffer]) -> "RaceShadow":
        """The shadow of ``params`` (those with a static shape)."""
        bufs, offs, pos = [], [], HEADER
        for b in params:
            dims = [static_int(d) for d in b.shape]
            if None in dims:
                continue
            bufs.append(b)
            offs.append(pos)
            pos += _FIELDS * int(np.prod(dims, dtype=np.int64))
        shadow = RaceShadow(tuple(bufs), tuple(offs), pos)
        shadow.buf = tirx.decl_buffer((pos,), "int32", SHADOW_PARAM)
        return shadow

    # -- the TIR ------------------------------------------------------------------------
    def _at(self, i: Any) -> tirx.BufferLoad:
        return tirx.BufferLoad(self.buf, [_i32(i)])

    def _set(self, i: Any, v: Any) -> tirx.Stmt:
        return tirx.BufferStore(self.buf, _i32(v), [_i32(i)])

    def bump(self) -> tirx.Stmt:
        """The end of a superstep."""
        return self._set(0, self._at(0) + 1)

    def _found(self, bid: int, elem: Any, cs_a: Any, cs_b: Any, wa: int, wb: int
               ) -> tirx.Stmt:
        body = [self._set(1, 1), self._set(2, bid), self._set(3, elem), self._set(4, cs_a),
                self._set(5, cs_b), self._set(6, wa), self._set(7, wb)]
        return tirx.IfThenElse(self._at(1) == 0, tirx.SeqStmt(body), None)

    def _check(self, bid: int, elem: Any, core: Any, sid: int, write: bool) -> tirx.Stmt:
        base = self.offsets[bid] + elem * _FIELDS
        ep = self._at(0)
        me = core * _STRIDE + sid
        w_ep, w_cs, r_ep, r_cs, r2 = (self._at(base + k) for k in range(_FIELDS))
        other_w = tirx.all(w_ep == ep, tirx.floordiv(w_cs, _STRIDE) != core)
        stmts = [tirx.IfThenElse(other_w, self._found(bid, elem, w_cs, me, 1, int(write)),
                                 None)]
        if write:
            other_r = tirx.all(r_ep == ep, tirx.floordiv(r_cs, _STRIDE) != core)
            other_r2 = tirx.all(r_ep == ep, r2 >= 0, tirx.floordiv(r2, _STRIDE) != core)
            stmts += [tirx.IfThenElse(other_r, self._found(bid, elem, r_cs, me, 0, 1), None),
                      tirx.IfThenElse(other_r2, self._found(bid, elem, r2, me, 0, 1), None),
                      self._set(base, ep), self._set(base + 1, me)]
        else:
            fresh = r_ep != ep
            second = tirx.all(r_ep == ep, tirx.floordiv(r_cs, _STRIDE) != core, r2 < 0)
            stmts += [tirx.IfThenElse(fresh, tirx.SeqStmt([
                self._set(base + 2, ep), self._set(base + 3, me), self._set(base + 4, -1)]),
                tirx.IfThenElse(second, self._set(base + 4, me), None))]
        return tirx.SeqStmt(stmts)

    def instrument(self, stmt: tirx.Stmt, core: tirx.PrimExpr) -> tirx.Stmt:
        """``stmt`` with a shadow check before every statement that touches a checked
        buffer, for the core whose linear id is ``core``; parallel loops serial."""
        def post(n: Any) -> Any:
            if isinstance(n, tirx.For) and n.kind in (tirx.ForKind.PARALLEL,
                                                      tirx.ForKind.VECTORIZED):
                return tirx.For(n.loop_var, n.min, n.extent, tirx.ForKind.SERIAL, n.body,
                                n.thread_binding, n.annotations)
            if isinstance(n, (tirx.BufferStore, tirx.Evaluate)):
                checks = self._checks(n, core)
                return tirx.SeqStmt(checks + [n]) if checks else None
            return None

        return tirx.stmt_functor.ir_transform(stmt, None, post,
                                              ["tirx.For", "tirx.BufferStore", "tirx.Evaluate"])

    def _checks(self, node: tirx.Stmt, core: tirx.PrimExpr) -> list:
        out = []
        data = {b.data for b in self.buffers}
        for a in find_accesses(node, data):
            if a.atomic:
                continue
            bid = next(i for i, b in enumerate(self.buffers)
                       if b.data.same_as(a.region.buffer.data))
            b = self.buffers[bid]
            if list(a.region.buffer.shape) != list(b.shape):
                continue  # a reshaped view: left to the static check
            sid = len(self.statements)
            self.statements.append(statement_text(node))
            shape = [int(static_int(d)) for d in b.shape]
            strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
            ext = [static_int(e) for e in a.region.extents]
            idx = [tirx.Var(f"r{d}", "int32") for d in range(len(shape))]
            pos = [s + i for s, i in zip(a.region.starts, idx)]
            elem: Any = _i32(0)
            for p, st in zip(pos, strides):
                elem = elem + p * st
            inside = tirx.all(*[tirx.all(p >= 0, p < n) for p, n in zip(pos, shape)]) \
                if pos else tirx.IntImm("bool", True)
            body: tirx.Stmt = tirx.IfThenElse(inside, self._check(bid, elem, core, sid,
                                                                  a.write), None)
            for v, e in reversed(list(zip(idx, ext))):
                if e is None:
                    body = None  # a symbolic extent: not checked here
                    break
                body = tirx.For(v, _i32(0), _i32(e), tirx.ForKind.SERIAL, body)
            if body is not None:
                out.append(body)
        return out

    def race(self, header: np.ndarray, mesh: Any) -> Race | None:
        """The race the run recorded (``header``: the shadow's first cells), if any."""
        if int(header[1]) == 0:
            return None
        b = self.buffers[int(header[2])]
        shape = [int(static_int(d)) for d in b.shape]
        elem = tuple(int(v) for v in np.unravel_index(int(header[3]), shape))
        cs = [int(header[4]), int(header[5])]
        cores = tuple(mesh.multi_index(c // _STRIDE) for c in cs)
        texts = tuple(self.statements[c % _STRIDE] for c in cs)
        return Race(b.name, elem, cores, (bool(header[6]), bool(header[7])), texts)


_STRIDE = 1 << 16  # core * _STRIDE + statement: room for 65536 checked statements


def add_shadow_param(func: tirx.PrimFunc, shadow: RaceShadow) -> tirx.PrimFunc:
    """``func`` with the shadow record as one more (last) argument."""
    var = tirx.Var(SHADOW_PARAM, "handle")
    return tirx.PrimFunc(list(func.params) + [var], func.body, func.ret_type,
                         {**dict(func.buffer_map), var: shadow.buf}, func.attrs)
