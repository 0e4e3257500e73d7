"""``split_cores``: a lowered ``T.dist`` kernel as one program per core.

On SUNMMIO's chip every core runs its own program: a ``T.dist`` wait blocks that core
only (the upstream's ``dist_wait_signal_`` polls the core's own signal register, and
its sync injection adds no barrier between cores at a ``T.dist`` op); the cores of a
chip meet only at on-chip communication (``T.comm`` ops, and the on-chip legs of a
``T.dist`` op that moves data between rows). So the emulator runs each core of each
rank as its own thread of control, under the runtime's deterministic schedule
(:mod:`..runtime.dist_rank`).

Input: the per-rank kernel after ``LowerMeshComm`` (supersteps: loops over the cores,
and the exchanges between them, each an ``AttrStmt`` naming its comm op) and the comm
ops ``LowerMeshComm`` lowered. Output: the same kernel with one more ``int32``
parameter, :data:`CORE_PARAM` (after the runtime's context), run once per core:

- each superstep's loop nest over the cores runs its body for that core only;
- LowerDist's mark after the registration of the buffers becomes a ``return`` when
  ``meshtensor_dist_register_only`` is non-zero; the kernel's own ``return v`` ends the
  core's program (``return 0``: ``v`` reaches no buffer);
- each exchange becomes a runtime barrier of the rank's cores, then the exchange done
  by core 0 (it moves every group's data), then a second barrier; a ``barrier`` comm
  op is one runtime barrier of its groups; ``LowerDist``'s pins (an empty ``permute``
  that keeps a buffer in ``LowerMeshComm``'s workspace) and its barrier of groups of
  one core are dropped.

The barriers are new sites of the :class:`~.lower_dist.DistProgram`, which is returned
with them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from tvm import tirx

from ..ir.comm_op import CommOp
from .lower_comm import COMM_OP_ATTR
from .lower_dist import CALL, CTX_PARAM, RETURN_MARK, DistProgram, Site

__all__ = ["split_cores", "CORE_PARAM"]

CORE_PARAM = "meshtensor_dist_core"


def _i32(v: int) -> tirx.IntImm:
    return tirx.IntImm("int32", int(v))


class _Split:
    def __init__(self, func: tirx.PrimFunc, ops: Sequence[CommOp], prog: DistProgram):
        self.func = func
        self.ops = list(ops)
        self.sites = list(prog.sites)
        self.prog = prog
        mesh = self.ops[0].mesh
        self.axes = list(mesh.axis_names)
        self.shape = list(mesh.shape)
        self.core = tirx.Var(CORE_PARAM, "int32")
        self.ctx = next((p for p in func.params if p.name == CTX_PARAM), None)
        if self.ctx is None:
            raise ValueError(f"split_cores: the kernel has no {CTX_PARAM} parameter (not a "
                             f"LowerDist kernel)")
        self.nargs = 0
        self.segments = 0

    def _sync(self, what: str, axes: Sequence[int] | None = None) -> tirx.Stmt:
        """A runtime barrier of the cores of each group along mesh ``axes`` (every
        axis: the whole chip)."""
        axes = tuple(range(len(self.shape))) if axes is None else tuple(axes)
        site = Site(len(self.sites), "sync", what, {"axes": axes, "shape": tuple(self.shape)},
                    0)
        self.sites.append(site)
        buf = tirx.decl_buffer((3,), "int64", f"dist_sync_{site.index}", scope="local")
        self.bufs.append(buf)
        vals = [self.ctx, tirx.Cast("int64", _i32(site.index)), tirx.Cast("int64", self.core)]
        stores = [tirx.BufferStore(buf, v, [_i32(i)]) for i, v in enumerate(vals)]
        call = tirx.call_extern("int32", CALL, tirx.call_intrin(
            "handle", "tirx.address_of", tirx.BufferLoad(buf, [_i32(0)])), _i32(3))
        return tirx.SeqStmt(stores + [tirx.Evaluate(call)])

    def _segment(self, loop: tirx.For) -> tirx.Stmt | None:
        """A superstep's loop nest over the cores, its body guarded to run for this
        core only (``None`` when ``loop`` is not such a nest). The loops stay: TileLang
        then knows each core coordinate's range, as before (its safe-memory-access
        guards, vector alignment and index folding see the same code)."""
        kept = [(a, n) for a, n in zip(self.axes, self.shape) if n > 1]
        if not kept or loop.loop_var.name != f"core_{kept[0][0]}":
            return None
        loops, node = [], loop
        for a, n in kept:
            if not (isinstance(node, tirx.For) and node.loop_var.name == f"core_{a}"
                    and int(node.extent) == n):
                raise ValueError(f"split_cores: a superstep's loops over the cores are not "
                                 f"{[f'core_{x}' for x, _ in kept]} (got {node!r:.200})")
            loops.append(node)
            node = node.body
        self.segments += 1
        lin: Any = _i32(0)
        for lp, (a, n) in zip(loops, kept):
            lin = lin * n + lp.loop_var
        out: tirx.Stmt = tirx.IfThenElse(lin == self.core, node, None)
        for lp in reversed(loops):
            out = tirx.For(lp.loop_var, lp.min, lp.extent, lp.kind, out, lp.thread_binding,
                           lp.annotations)
        return out

    def _exchange(self, attr: tirx.AttrStmt) -> tirx.Stmt:
        o = self.ops[int(attr.value)]
        if o.pin:
            return tirx.Evaluate(_i32(0))  # moves and waits for nothing
        if o.op == "barrier":  # its groups only
            return self._sync(o.name, o.mesh_axes)
        body = tirx.AttrStmt(attr.node, attr.attr_key, attr.value, attr.body)
        return tirx.SeqStmt([self._sync(f"{o.name} (its cores arrive)"),
                             tirx.IfThenElse(self.core == 0, body, None),
                             self._sync(f"{o.name} (its data has moved)")])

    def run(self) -> tuple[tirx.PrimFunc, DistProgram]:
        self.bufs: list = []

        def pre(n: Any) -> Any:
            if isinstance(n, tirx.AttrStmt) and n.attr_key == COMM_OP_ATTR:
                return self._exchange(n)
            if isinstance(n, tirx.For):
                return self._segment(n)
            return None

        def post(n: Any) -> Any:  # LowerDist's mark: return when only registering
            c = n.value
            if isinstance(c, tirx.Call) and getattr(c.op, "name", "") == "tirx.call_extern" \
                    and c.args[0].value == RETURN_MARK:
                return tirx.IfThenElse(c.args[1] != 0, tirx.Evaluate(tirx.ret(_i32(0))), None)
            if isinstance(c, tirx.Call) and getattr(c.op, "name", "") == "tirx.ret":
                # the kernel's `return v` ends this core's program; v, the chip's exit
                # code, reaches no buffer, and a non-zero one would be the C call's error
                return tirx.Evaluate(tirx.ret(_i32(0)))
            return None

        body = tirx.stmt_functor.ir_transform(self.func.body, pre, None,
                                              ["tirx.AttrStmt", "tirx.For"])
        body = tirx.stmt_functor.ir_transform(body, None, post, ["tirx.Evaluate"])
        body = self._declare(body)
        params = list(self.func.params)
        params.insert(params.index(self.ctx) + 1, self.core)
        func = tirx.PrimFunc(params, body, self.func.ret_type, self.func.buffer_map,
                             self.func.attrs)
        return func, dataclasses.replace(self.prog, sites=tuple(self.sites))

    def _declare(self, body: tirx.Stmt) -> tirx.Stmt:
        """The barrier calls' argument buffers, allocated in the kernel's root block."""
        if not self.bufs:
            return body
        done: list = []

        def pre(n: Any) -> Any:  # the outermost block but TileLang's "root"
            if done or n.name_hint in ("root",):
                return None
            done.append(n)
            return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, n.body, n.init,
                               list(n.alloc_buffers) + self.bufs, n.match_buffers,
                               n.annotations)

        out = tirx.stmt_functor.ir_transform(body, pre, None, ["tirx.SBlock"])
        if not done:
            raise ValueError("split_cores: no block holds the kernel body")
        return out


def split_cores(func: tirx.PrimFunc, ops: Sequence[CommOp], prog: DistProgram
                ) -> tuple[tirx.PrimFunc, DistProgram]:
    """One program per core of a ``T.dist`` kernel lowered by ``LowerMeshComm`` (see
    the module docstring): the kernel and its program with the barriers' sites."""
    if not ops:
        raise ValueError("split_cores: the kernel has no comm op (LowerDist always adds "
                         "one)")
    return _Split(func, ops, prog).run()
