"""``LowerDist``: make a ``T.dist`` kernel (SUNMMIO's rank layer) one per-rank program
that the dist runtime (:mod:`..runtime.dist_rank`) drives, with the upstream
compiler's checks as ``ValueError`` s naming the op.

Input: a kernel whose ``T.dist`` ops are records of :mod:`..ir.dist_op`. Output: the
same kernel, one binary for every rank (``rank_id`` stays a parameter), in which

1. every record is a call of the runtime, ``meshtensor_rt_call(args, n)`` (a
   statement; ``args[0..2]`` are the job context, the op's site number and the core,
   then the op's dynamic values: region starts, destination rank and row, signal
   member, expected delta) or ``meshtensor_rt_value(ctx, site, core)`` (the value
   of ``wait_any`` / ``has_pending``), run by every core where the kernel runs the op;
2. around each op that moves data between the rows of one chip (a put that may leave
   its row, a routed put to another row, ``all_to_all`` / ``all_to_allv`` over rows)
   a runtime barrier of the cores of the column (``sync``), before and after: the
   on-chip ``T.comm.put`` the upstream lowers its first leg to, which those cores run
   together. No other ``T.dist`` op synchronises the cores of a chip (a wait blocks
   its own core only, as on the chip: :mod:`.split_cores`);
3. the compiler's expected-arrival updates for ``expect="auto"`` signals are explicit
   runtime calls (``expect``) placed where the upstream places them: before each put
   site, or before the outermost ``if`` that holds it (``docs/tdist.md``);
4. the kernel starts by registering, per core, the address of every buffer a ``T.dist``
   op moves, and pins each on-chip one into ``LowerMeshComm``'s workspace (an empty
   ``permute`` comm op) so that address holds for the whole kernel;
5. two parameters are appended: ``meshtensor_dist_ctx`` (``int64``, the runtime's
   handle) and ``meshtensor_dist_register_only`` (``int32``: when non-zero the kernel
   returns right after registering, which the runtime does for every core before any
   runs).

The static facts the runtime needs (the sites, the buffers, the signals with their
resolved kinds and expect modes) are the returned :class:`DistProgram`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from tvm import arith, ir, tirx

from ...mesh import Mesh
from ..ir.dist_op import DistOp, SignalRef, decode, find_dist_ops, is_dist_call
from ..ir.evaluate import static_int
from ..ir.launch import Launch
from ..ir.names import DIST_RANK_ATTR, DIST_RETURN_MARK, DIST_RT_CALL
from ..ir.scope import Cond, CopyRegion, Let, WhileLoop, find_calls, itemsize
from ..language.dist import SIGNAL_KINDS, is_rank_var, rank_var_facts

__all__ = ["LowerDist", "lower_dist", "DistProgram", "Site", "SignalPlan", "BufferInfo",
           "has_dist_ops", "CTX_PARAM", "REGISTER_PARAM", "RETURN_MARK", "CALL", "VALUE",
           "BLOCKING", "REGISTER_SITE"]

CTX_PARAM = "meshtensor_dist_ctx"
REGISTER_PARAM = "meshtensor_dist_register_only"  # 1: return once the buffers registered
RETURN_MARK = DIST_RETURN_MARK  # where that return goes
CALL = DIST_RT_CALL              # int32 (int64* args, int32 n)
VALUE = "meshtensor_rt_value"    # int32 (int64 ctx, int32 site, int32 core)
REGISTER_SITE = 0                  # site 0: the buffer registration of each core
#: ops that may wait for other ranks
BLOCKING = frozenset({"wait_signal", "wait_signals", "wait_all", "wait_any", "barrier",
                      "all_reduce"})
_SENDS = ("put", "routed_put", "put_signal")
_COLLECTIVES = ("all_gather", "all_to_all", "all_reduce", "all_to_allv")
_MAX_ENUM = 4096  # loop iterations enumerated to learn a signal's senders


def has_dist_ops(func: tirx.PrimFunc) -> bool:
    """Whether a kernel is a ``T.dist`` kernel: it has a ``T.dist.RankId`` parameter or
    holds ``T.dist`` records (statements or values)."""
    if any(is_rank_var(p) for p in func.params):
        return True
    hit: list = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: hit.append(n) if is_dist_call(n) else None)
    return bool(hit)


# -- the program the runtime reads -------------------------------------------------------------
@dataclass(frozen=True)
class BufferInfo:
    """A buffer a ``T.dist`` op moves: its number, name, dtype, shape and whether it is
    on-chip (SRAM) or global (DRAM)."""

    id: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    sram: bool

    @property
    def itemsize(self) -> int:
        return itemsize(self.dtype)


@dataclass(frozen=True)
class SignalPlan:
    """A declared signal (``count`` 0) or signal list: its resolved ``kind`` (one of
    :data:`~..language.dist.SIGNAL_KINDS`), expect mode (``"auto"`` or
    ``"manual"``), first slot among the kernel's signal slots, whether its auto
    arrivals feed completions (``auto_completion``) and its ``name`` for messages."""

    id: int
    count: int
    kind: str
    expect: str
    base: int
    auto_completion: bool
    name: str

    @property
    def slots(self) -> int:
        return max(self.count, 1)

    @property
    def mode(self) -> str:
        return SIGNAL_KINDS[self.kind][1]

    @property
    def bits(self) -> int:
        return SIGNAL_KINDS[self.kind][3]


@dataclass(frozen=True)
class Site:
    """One op of the kernel: ``index`` (its number in calls), ``op``, ``name`` (how
    errors call it, with its number), ``info`` (static facts: buffer ids and extents,
    signal ids, routes' source rows, flags) and ``nargs`` (dynamic values after the
    context, site and core)."""

    index: int
    op: str
    name: str
    info: Mapping[str, Any]
    nargs: int
    cross_row: bool = False


@dataclass(frozen=True)
class DistProgram:
    """What the runtime needs of a lowered ``T.dist`` kernel."""

    world: int
    mesh_shape: tuple[int, int]
    rank_param: int
    sites: tuple[Site, ...]
    buffers: tuple[BufferInfo, ...]
    signals: Mapping[int, SignalPlan]
    completions: Mapping[int, tuple[int, str]]   # id -> (signal list id, mode)
    nslots: int

    @property
    def ncores(self) -> int:
        return self.mesh_shape[0] * self.mesh_shape[1]


# -- small helpers ------------------------------------------------------------------------------------
def _i32(v: int) -> tirx.IntImm:
    return tirx.IntImm("int32", int(v))


def _vars(node: Any) -> set:
    out: set = set()

    def visit(n: Any) -> None:
        if isinstance(n, tirx.Var):
            out.add(n)

    tirx.stmt_functor.post_order_visit(node if isinstance(node, tirx.Stmt)
                                       else tirx.Evaluate(node), visit)
    return out


def _has(node: Any, kinds: tuple) -> bool:
    hit: list = []
    tirx.stmt_functor.post_order_visit(
        node if isinstance(node, tirx.Stmt) else tirx.Evaluate(node),
        lambda n: hit.append(n) if isinstance(n, kinds) else None)
    return bool(hit)


def _subst(e: Any, vmap: Mapping) -> Any:
    if not vmap or not isinstance(e, tirx.PrimExpr):
        return e
    return tirx.stmt_functor.substitute(e, dict(vmap))


def _inline_lets(e: Any, scope: Sequence) -> Any:
    """``e`` with the lets of ``scope`` (outermost first) substituted."""
    lets = [s for s in scope if isinstance(s, Let)]
    for let in reversed(lets):
        e = _subst(e, {let.var: let.value})
    return e


# where a T.dist payload may live: RSRAM (``T.alloc_shared``'s default scopes are
# RSRAM on the chip) or DRAM
_PAYLOAD_SCOPES = ("global", "", "shared", "shared.dyn", "shared.rsram")


def _iterations(f: Any) -> list | None:
    """One ``{loop variable: value}`` per execution of the statement ``f`` over its
    enclosing (non-launch) ``for`` loops, or ``None`` when a bound is not a constant
    or there are more than :data:`_MAX_ENUM`."""
    loops = [i for i in f.scope if isinstance(i, tirx.For)
             and i.kind != tirx.ForKind.THREAD_BINDING]
    ranges = []
    for lp in loops:
        lo, ext = static_int(lp.min), static_int(lp.extent)
        if lo is None or ext is None:
            return None
        ranges.append(range(lo, lo + ext))
    if int(np.prod([len(r) for r in ranges] or [1])) > _MAX_ENUM:
        return None
    return [{lp.loop_var: _i32(v) for lp, v in zip(loops, it)}
            for it in itertools.product(*ranges)]


def _tile_op_name(call: tirx.Call) -> str:
    """A tile op as the kernel wrote it (``tl.tileop.copy`` -> ``T.copy``)."""
    name = str(call.op.name)
    return f"T.{name.rsplit('.', 1)[-1]}" if name.startswith("tl.tileop.") else \
        f"tile op {name}"


def _opaque_loads(e: Any) -> Any:
    """``e`` with every memory read replaced by a fresh variable (its value, not
    where it is read, is what a condition on it depends on)."""
    def post(n: Any) -> Any:
        if isinstance(n, tirx.BufferLoad):
            return tirx.Var("load", n.dtype)
        return None
    return tirx.stmt_functor.ir_transform(tirx.Evaluate(e), None, post,
                                          ["tirx.BufferLoad"]).value


def _region_text(r: CopyRegion) -> str:
    """``buf[a:b, ...]`` (a symbolic extent: ``buf[a:a + e]``)."""
    def one(s: Any, e: Any) -> str:
        a, n = static_int(s), static_int(e)
        if n == 1:
            return str(s)
        if a is not None and n is not None:
            return f"{a}:{a + n}"
        return f"{s}:{s} + {e}"
    return f"{r.buffer.name}[{', '.join(one(s, e) for s, e in zip(r.starts, r.extents))}]"


class _Err:
    """Errors name the op and its number (``T.dist.put (dist op #3)``)."""

    def __init__(self, numbers: Mapping):
        self.numbers = numbers

    def name(self, o: DistOp) -> str:
        n = self.numbers.get(o.call)
        return o.name if n is None else f"{o.name} (dist op #{n})"


def _no_ops_pipelined(body: tirx.Stmt, err: _Err) -> None:
    """Refuse any T.dist op inside ``T.Pipelined(num_stages > 0)``, a statement or a
    value (``wait_any``, ``has_pending``) wherever in an expression it sits: the
    upstream refuses every T.dist operation there."""
    def visit(n: Any) -> None:
        if not (isinstance(n, tirx.For) and "num_stages" in n.annotations):
            return
        stages = static_int(n.annotations["num_stages"])
        if stages is not None and stages <= 0:
            return
        inner: list = []  # (a signal declared there is refused as declared in a loop)
        tirx.stmt_functor.post_order_visit(
            n.body, lambda c: inner.append(c) if is_dist_call(c) and
            decode(c).op != "signal_decl" else None)
        if inner:
            raise ValueError(f"{err.name(decode(inner[0]))}: T.dist operations are not "
                             f"supported inside T.Pipelined(num_stages > 0); move "
                             f"communication, submit and waits outside the pipelined loop")

    tirx.stmt_functor.post_order_visit(body, visit)


# -- the pass ---------------------------------------------------------------------------------------
class _Lowering:
    def __init__(self, func: tirx.PrimFunc):
        # a T.dist kernel is a Tilelang-Mesh kernel: its on-chip buffers (any shared.*
        # scope) are core-private memory in the scopes the C back end takes
        from .tilelang_mesh import _core_private
        # the scopes the kernel gave its payload buffers (core-private rewriting below
        # renames them)
        self.user_scopes = [{k: r.buffer.scope() for k in ("src", "dst")
                             if (r := o.fields.get(k)) is not None}
                            for o in (decode(f.call) for f in find_dist_ops(func))]
        func = func.with_body(_core_private(func.body))
        self.func = func
        self.found = find_dist_ops(func)
        values: list = []
        tirx.stmt_functor.post_order_visit(
            func.body, lambda n: values.append(n) if is_dist_call(n) and
            n.dtype != "handle" else None)
        self.value_calls = values
        ops = [decode(f.call) for f in self.found]
        self.ops = ops
        marked = [p for p in func.params if is_rank_var(p)]
        if ops or values:
            first = ops[0] if ops else decode(values[0])
            self.world, self.mesh_shape, self.rank = first.world, first.mesh_shape, first.rank
        elif marked:
            self.rank = marked[0]
            self.world, self.mesh_shape = rank_var_facts(marked[0])
        else:
            raise ValueError("LowerDist: the kernel has neither T.dist ops nor a "
                             "T.dist.RankId parameter")
        for o in ops + [decode(v) for v in values]:
            if (o.world, o.mesh_shape) != (self.world, self.mesh_shape):
                raise ValueError(f"LowerDist: {o.name} was built for world_size {o.world} on "
                                 f"mesh {o.mesh_shape}, but the kernel's first T.dist op for "
                                 f"{self.world} on {self.mesh_shape}; build the kernel "
                                 f"inside one tm.world(...)")
        ranks = [i for i, p in enumerate(func.params) if p.same_as(self.rank) or is_rank_var(p)]
        if len(ranks) != 1:
            raise ValueError(f"LowerDist: a T.dist kernel has exactly one T.dist.RankId "
                             f"parameter, got {len(ranks)}")
        self.rank_param = ranks[0]
        self.nrows, self.ncols = self.mesh_shape
        self.mesh = Mesh({"row": self.nrows, "col": self.ncols})
        self.launch = Launch.of(func, self.mesh, "LowerDist")
        self.numbers = {f.call: i for i, f in enumerate(self.found)}
        self.scopes = {f.call: f.scope for f in self.found}
        self.err = _Err(self.numbers)
        self.ana = self.launch.bound(arith.Analyzer())

    # ---- collection ---------------------------------------------------------------------------
    def collect(self) -> None:
        self.decls: dict[int, DistOp] = {}
        self.completions: dict[int, tuple[int, str]] = {}
        for f, o in zip(self.found, self.ops):
            if o.op == "signal_decl":
                self.decls[o["id"]] = o
            elif o.op == "completion":
                self.completions[o["id"]] = (o["list"], o["mode"])
            elif o.op in ("all_gather", "all_to_allv") and o["completion"] >= 0:
                mode = "all_gather" if o.op == "all_gather" else o["domain"]
                self.completions[o["completion"]] = (o["list"], mode)
        # buffers moved by the ops, in first-use order
        self.buffers: dict = {}
        for o in self.ops:
            for key in ("src", "dst"):
                r = o.fields.get(key)
                if r is not None and r.buffer.data not in self.buffers:
                    b = r.buffer
                    shape = tuple(static_int(n) for n in b.shape)
                    if None in shape:
                        raise ValueError(f"{self.err.name(o)}: buffer {b.name!r} has the "
                                         f"symbolic shape {list(b.shape)}; T.dist operands "
                                         f"need static shapes")
                    sram = b.scope() not in ("global", "")
                    self.buffers[b.data] = BufferInfo(len(self.buffers), str(b.name),
                                                      str(b.dtype), shape, sram)  # type: ignore
        self.buffer_objs = {}
        for o in self.ops:
            for key in ("src", "dst"):
                r = o.fields.get(key)
                if r is not None:
                    self.buffer_objs.setdefault(r.buffer.data, r.buffer)

    def signal_of(self, o: DistOp, ref: SignalRef | None) -> DistOp:
        d = self.decls.get(ref.id) if ref is not None else None
        if d is None:
            raise ValueError(f"{self.err.name(o)}: its signal was not declared in this "
                             f"kernel")
        return d

    # ---- static checks ----------------------------------------------------------------------------
    def check(self) -> None:
        comm = [o for o in self.ops if o.op != "signal_decl"] + \
            [decode(v) for v in self.value_calls]
        if self.world == 1 and comm:
            raise ValueError(f"{self.err.name(comm[0])}: T.dist communication op appears in a "
                             f"single-Rank kernel: world_size=1 disables Rank communication "
                             f"(build the kernel inside tm.world(W) with W > 1)")
        _no_ops_pipelined(self.func.body, self.err)
        for f, o, scopes in zip(self.found, self.ops, self.user_scopes):
            self._check_upstream_rules(f, o, scopes)
            if o.op == "put":
                self._check_put(f, o)
            elif o.op == "routed_put":
                self._check_routed(f, o)
            elif o.op == "put_signal":
                self._check_route_exprs(o, o["dst_rank"], None)
            for key in ("src", "dst"):
                r = o.fields.get(key)
                if r is not None:
                    self._check_region(o, key, r)
        self._check_aggregate_signals()

    def _check_upstream_rules(self, f: Any, o: DistOp, scopes: Mapping) -> None:
        """The rules SUNMMIO's compiler enforces before it plans signals: a kernel
        it rejects has no defined result on the chip (decision 88)."""
        loops = [i for i in f.scope if isinstance(i, WhileLoop) or (
            isinstance(i, tirx.For) and i.kind != tirx.ForKind.THREAD_BINDING)]
        if o.op == "signal_decl" and not o["implicit"] and (
                loops or any(isinstance(i, Cond) for i in f.scope)):
            raise ValueError(f"{self.err.name(o)}: T.dist signals must be declared outside "
                             f"loops and conditionals (a signal names one register for "
                             f"the whole kernel); declare it before the loop or branch")
        if o.op == "all_reduce" and loops:
            raise ValueError(f"{self.err.name(o)}: all_reduce inside For/While is not "
                             f"supported: its receive staging would be reused before "
                             f"every rank consumed it, whatever the signals; write one "
                             f"all_reduce per round outside any loop")
        for key, scope in scopes.items():
            if scope not in _PAYLOAD_SCOPES:
                side = "source" if key == "src" else "destination"
                raise ValueError(f"{self.err.name(o)}: its {side} "
                                 f"{o[key].buffer.name!r} must use shared.rsram or "
                                 f"global/DRAM, got {scope!r} (the chip moves T.dist "
                                 f"payloads only from and into RSRAM or DRAM)")
        if o.op == "put" and not self.cross_row(o["dst_row"], f.scope):
            # (the upstream routes every put by source row; cross-row puts are checked
            # with their routes, below; a condition's values read from memory are the
            # source core's own, as for cross-row puts under manual signals)
            for item in f.scope:
                if isinstance(item, Cond) and self._row_dependent(
                        _inline_lets(item.expr, f.scope), loads_ok=True):
                    raise ValueError(
                        f"{self.err.name(o)}: T.dist.put is guarded by a condition that "
                        f"differs between the rows of a column ({item.expr}). Use "
                        f"T.dist.routed_put to select source rows explicitly; only Rank- or "
                        f"column-uniform outer conditions are supported")

    def _check_aggregate_signals(self) -> None:
        """A collective's ``signal=`` counts the arrivals of every sender of one
        invocation: the upstream dedicates it to that one collective call, run once
        (in a loop, each iteration must take its own list member, proven at compile
        time), and no other op may update it (decision 88). Waiting on it again is
        fine."""
        uses = []  # (found, op, signal id, members it may update: a list, or None)
        for f, o in zip(self.found, self.ops):
            if o.op in _SENDS + ("barrier", "barrier_arrive") or o.op in _COLLECTIVES:
                ref = o.fields.get("signal")
                if ref is not None:
                    uses.append((f, o, ref.id, self._members(f, ref)))
                elif o.fields.get("list", -1) >= 0:
                    uses.append((f, o, o["list"], None))
        for f, o, sid, members in uses:
            ref = o.fields.get("signal") if o.op in _COLLECTIVES else None
            if ref is None:
                continue
            what = (f"{self.err.name(o)}: its signal must be dedicated to one collective "
                    f"invocation (an exclusive collective signal counts one call's "
                    f"arrivals)")
            if members is None:
                raise ValueError(f"{what}, but the member it takes ({ref.member}) cannot be "
                                 f"proven different in every invocation; give each round "
                                 f"its own signal or a member indexed by a static loop")
            if len(set(members)) != len(members):
                raise ValueError(f"{what}, but it runs in a loop and takes the same signal "
                                 f"in more than one iteration; give each round its own "
                                 f"signal or list member")
            for g, other, oid, om in uses:
                if other is o or oid != sid:
                    continue
                if om is None or set(om) & set(members) or None in om or None in members:
                    raise ValueError(f"{what}, but {self.err.name(other)} updates it too; "
                                     f"give each its own signal")

    def _members(self, f: Any, ref: SignalRef) -> list | None:
        """The list members (``None`` for a single signal) ``ref`` names, one per
        execution of its op over the enclosing loops; ``None`` where that is not known
        at compile time (a while loop, a runtime bound, a member read from memory or
        the rank)."""
        its = None if any(isinstance(i, WhileLoop) for i in f.scope) else _iterations(f)
        if its is None:
            return None
        out = []
        for m in its:
            if not ref.dynamic:
                out.append(ref.member)
                continue
            v = static_int(self.ana.simplify(_subst(_inline_lets(ref.member, f.scope), m)))
            if v is None:
                return None
            out.append(v)
        return out

    def _check_region(self, o: DistOp, side: str, r: CopyRegion) -> None:
        for d, (s, e, n) in enumerate(zip(r.starts, r.extents, r.buffer.shape)):
            sv, ev, nv = static_int(s), static_int(e), static_int(n)
            if sv is not None and (sv < 0 or sv + ev > nv):
                raise ValueError(f"{self.err.name(o)}: {side} region of {r.buffer.name!r} "
                                 f"runs outside dim {d} of size {nv}: [{sv}, {sv + ev})")

    def _check_route_exprs(self, o: DistOp, rank: Any, row: Any) -> None:
        for what, e in (("dst_rank", rank), ("dst_row", row)):
            if e is not None and _has(e, (tirx.BufferLoad,)):
                raise ValueError(f"{self.err.name(o)}: {what} {e} cannot depend on "
                                 f"BufferLoad in automatic row routing")

    def my_row(self) -> tirx.PrimExpr:
        return self.launch.coords()[0]

    def cross_row(self, row: Any, scope: Sequence = ()) -> bool:
        """Whether ``row`` may differ from the core's own row."""
        e = _inline_lets(row, scope)
        return not self.ana.can_prove_equal(e, self.my_row())

    def _row_dependent(self, cond: Any, loads_ok: bool = False) -> bool:
        """Whether a condition may differ between the rows of one column; with
        ``loads_ok``, the values it reads from memory are taken as the source core's
        own (the part of it written in core coordinates must still be row-uniform)."""
        if _has(cond, (tirx.BufferLoad,)):
            if not loads_ok:
                return True
            cond = _opaque_loads(cond)
        col = self.launch.coords()[1]
        base = None
        for r in range(self.nrows):
            v = self.ana.simplify(_subst(cond, self.launch.at([_i32(r), col])))
            if base is None:
                base = v
            elif not self.ana.can_prove_equal(v, base):
                return True
        return False

    def _check_cross_row(self, f: Any, o: DistOp) -> None:
        for item in f.scope:
            if isinstance(item, (tirx.For,)) and item.kind != tirx.ForKind.THREAD_BINDING:
                raise ValueError(f"{self.err.name(o)}: Cross-row T.dist.put inside loops is "
                                 f"not supported until routed staging lifetime waits are "
                                 f"implemented (loop {item.loop_var.name!r}); use a peer "
                                 f"put (dst_row = the core's own row) or move it out")
            if isinstance(item, WhileLoop):
                raise ValueError(f"{self.err.name(o)}: Cross-row T.dist.put inside a while "
                                 f"loop is not supported")
            # a condition read from memory under a manual signal is each source core's
            # own: the upstream carries it to the relay core with the data (its
            # dynamic route), so only its core-coordinate part must be row-uniform
            ref = o.fields.get("signal")
            decl = self.decls.get(ref.id) if ref is not None else None
            manual = decl is not None and decl["expect"] == "manual"
            if isinstance(item, Cond) and self._row_dependent(
                    _inline_lets(item.expr, f.scope), loads_ok=manual):
                raise ValueError(f"{self.err.name(o)}: Cross-row T.dist.put is guarded by a "
                                 f"row-dependent condition ({item.expr}). Use "
                                 f"T.dist.routed_put to select source rows explicitly; only "
                                 f"Rank- or column-uniform outer conditions are supported")

    def _constant_offsets(self, o: DistOp) -> None:
        for key in ("src", "dst"):
            r = o[key]
            for s in r.starts:
                if static_int(self.ana.simplify(s)) is None and not \
                        (o.op == "put" and _vars(s) <= {self.rank}):
                    raise ValueError(f"{self.err.name(o)}: {key} region offsets must be "
                                     f"compile-time constants for cross-row communication, "
                                     f"got {_region_text(r)}")

    def _check_put(self, f: Any, o: DistOp) -> None:
        self._check_route_exprs(o, o["dst_rank"], o["dst_row"])
        if self.cross_row(o["dst_row"], f.scope):
            self._check_cross_row(f, o)
            self._constant_offsets(o)

    def _check_routed(self, f: Any, o: DistOp) -> None:
        self._check_cross_row_loops(f, o)
        seen: list = []
        for i, (srow, drank, drow) in enumerate(o["routes"]):
            self._check_route_exprs(o, drank, drow)
            key = (int(static_int(srow)), str(self.ana.simplify(drank)),
                   str(self.ana.simplify(drow)))
            if key in seen:
                raise ValueError(f"{self.err.name(o)}: T.dist.routed_put contains a duplicate "
                                 f"static route at entry {i}: {list(o['routes'][i])}")
            seen.append(key)
            if static_int(self.ana.simplify(drow)) != static_int(srow):
                self._constant_offsets(o)

    def _check_cross_row_loops(self, f: Any, o: DistOp) -> None:
        for item in f.scope:
            if (isinstance(item, tirx.For) and item.kind != tirx.ForKind.THREAD_BINDING) or \
                    isinstance(item, WhileLoop):
                raise ValueError(f"{self.err.name(o)}: T.dist.routed_put inside loops is not "
                                 f"supported until routed staging lifetime waits are "
                                 f"implemented")
            if isinstance(item, Cond) and self._row_dependent(_inline_lets(item.expr, f.scope)):
                raise ValueError(f"{self.err.name(o)}: T.dist.routed_put must be guarded by a "
                                 f"condition that is uniform across rows. Move source-row "
                                 f"selection into the route table")

    # ---- signal planning ---------------------------------------------------------------------------
    def plan_signals(self) -> None:
        uses: dict[int, dict] = {i: {"scope": None, "payload": False, "plain_wait": False,
                                     "manual": False, "protocol": False, "auto_completion": False,
                                     "used": False, "senders": {}} for i in self.decls}

        def use(o: DistOp, sid: int, **flags: Any) -> dict:
            if sid not in uses:
                raise ValueError(f"{self.err.name(o)}: its signal was not declared in this "
                                 f"kernel")
            u = uses[sid]
            u["used"] = True
            for k, v in flags.items():
                if k == "scope":
                    if u["scope"] is not None and u["scope"] != v:
                        d = self.decls[sid]
                        raise ValueError(f"{self._signal_name(d)} is used with inconsistent "
                                         f"destination scopes: {u['scope']} and {v} (at "
                                         f"{self.err.name(o)})")
                    u["scope"] = v
                elif v:
                    u[k] = True
            return u

        def scope_of(r: CopyRegion) -> str:
            return "sram" if r.buffer.scope() not in ("global", "") else "dram"

        for o in self.ops + [decode(v) for v in self.value_calls]:
            op = o.op
            if op in ("put", "routed_put"):
                use(o, o["signal"].id, scope=scope_of(o["dst"]), payload=True)
            elif op == "put_signal":
                use(o, o["signal"].id)
            elif op == "wait_signal":
                manual = not (isinstance(o["delta"], tirx.IntImm) and o["delta"].value == -1)
                use(o, o["signal"].id, manual=manual, plain_wait=not manual)
            elif op == "wait_signals":
                use(o, o["list"], manual=True)
            elif op == "wait_all" and o["completion"] < 0:
                use(o, o["list"], plain_wait=True)
            elif op == "completion":
                if o["mode"] == "manual":
                    use(o, o["list"], manual=True)
                else:
                    use(o, o["list"], auto_completion=True)
            elif op in ("barrier", "barrier_arrive"):
                use(o, o["signal"].id, protocol=True)
            elif op in ("all_gather", "all_to_all", "all_reduce"):
                if op == "all_gather" and o["list"] >= 0:
                    use(o, o["list"], scope=scope_of(o["dst"]), payload=True,
                        auto_completion=True)
                else:
                    use(o, o["signal"].id, scope="sram" if op == "all_reduce"
                        else scope_of(o["dst"]), payload=True)
            elif op == "all_to_allv":
                sid = o["list"] if o["list"] >= 0 else o["signal"].id
                use(o, sid, scope=scope_of(o["dst"]), payload=True, protocol=True)

        plans: dict[int, SignalPlan] = {}
        counts = {k: 0 for k in SIGNAL_KINDS}
        order = sorted(self.decls)
        resolved: dict[int, tuple[str, str]] = {}
        for sid in order:
            d, u = self.decls[sid], uses[sid]
            name = self._signal_name(d)
            if u["manual"] and u["protocol"]:
                raise ValueError(f"{name} mixes user-provided expected_deltas with "
                                 f"protocol-managed expectation")
            external = u["manual"] or u["protocol"]
            want = d["expect"]
            if u["auto_completion"] and want == "manual":
                raise ValueError(f"{name} uses an auto-managed completion with "
                                 f"expect='manual'")
            expect = ("manual" if external else "auto") if want == "infer" else want
            if expect == "auto" and external:
                raise ValueError(f"{name} explicitly requests expect='auto' but its "
                                 f"expectation is provided by a wait or communication "
                                 f"protocol")
            if expect == "manual" and u["plain_wait"] and not u["protocol"]:
                raise ValueError(f"{name} uses expect='manual' with wait_signal/wait_all but "
                                 f"provides no expected delta")
            resolved[sid] = (expect, u["scope"] or "sram")
        # explicit kinds first, then the compiler's choices (INC where it fits)
        kinds: dict[int, str] = {}
        for sid in order:
            d = self.decls[sid]
            if d["kind"] == "auto" or not uses[sid]["used"]:
                continue
            k = d["kind"]
            scope = SIGNAL_KINDS[k][0]
            if uses[sid]["scope"] is not None and uses[sid]["scope"] != scope:
                raise ValueError(f"{self._signal_name(d)} explicitly requests {k} but its "
                                 f"destination scope is "
                                 f"{'shared.rsram' if uses[sid]['scope'] == 'sram' else 'global/DRAM'}")
            self._allocate(d, k, counts, inferred=False)
            kinds[sid] = k
        # then the signals several senders share (they need INC), then the others:
        # INC where it fits, else a VALUE register, else memory (as the upstream plans)
        auto = [sid for sid in order if self.decls[sid]["kind"] == "auto" and
                uses[sid]["used"]]
        single = {sid: self._single_sender(sid) for sid in auto}
        for sid in [x for x in auto if not single[x]] + [x for x in auto if single[x]]:
            d = self.decls[sid]
            scope = resolved[sid][1]
            n = max(d["count"], 1)
            inc = f"{scope}_flagreg_inc"
            if counts[inc] + n <= SIGNAL_KINDS[inc][2] or not single[sid]:
                k = inc  # (a multi-sender signal over capacity is refused here)
            else:
                val = f"{scope}_flagreg_value"
                k = val if counts[val] + n <= SIGNAL_KINDS[val][2] else f"{scope}_memory"
            self._allocate(d, k, counts, inferred=True)
            kinds[sid] = k
        base = 0
        for sid in order:
            d = self.decls[sid]
            k = kinds.get(sid, d["kind"] if d["kind"] != "auto" else "sram_flagreg_inc")
            plans[sid] = SignalPlan(sid, d["count"], k, resolved[sid][0], base,
                                    uses[sid]["auto_completion"], self._signal_name(d))
            base += max(d["count"], 1)
        self.plans = plans
        self.nslots = base
        self.counts = counts

    def _signal_name(self, d: DistOp) -> str:
        kind = "T.dist.signals" if d["count"] else "T.dist.signal"
        n = self.numbers.get(d.call)
        return f"{kind} #{d['id']}" + (f" (dist op #{n})" if n is not None else "")

    def _allocate(self, d: DistOp, k: str, counts: dict, inferred: bool) -> None:
        cap = SIGNAL_KINDS[k][2]
        n = max(d["count"], 1)
        if cap >= 0 and counts[k] + n > cap:
            what = "signal capacity exceeded" if not d["count"] else \
                "contiguous signal-group capacity exceeded"
            raise ValueError(f"{self._signal_name(d)}: {k} {what}: needs {n} at base "
                             f"{counts[k]}, maximum is {cap} per scope"
                             + ("; a multi-sender signal requires INC and cannot spill to "
                                "VALUE or MEMORY" if inferred else ""))
        counts[k] += n

    def _single_sender(self, sid: int) -> bool:
        """Whether every receiving endpoint of signal ``sid`` hears from one sender at
        most (as far as the put sites can be evaluated; ``False`` when unsure)."""
        senders: dict = {}
        for o in self.ops:  # a collective's single signal hears from every other rank
            sig = o.fields.get("signal")
            if o.op in ("all_gather", "all_to_all", "all_reduce", "barrier", "barrier_arrive",
                        "all_to_allv") and sig is not None and sig.id == sid and \
                    (self.world > 2 or o.op in ("all_to_all", "all_to_allv") and
                     self.nrows > 1):
                return False
        for f, o in zip(self.found, self.ops):
            if o.op not in _SENDS or o["signal"].id != sid:
                continue
            for s_rank, s_row, d_rank, d_row in self._endpoints(f, o):
                if d_rank is None:
                    return False
                key = (d_rank, d_row, o["signal"].member)
                senders.setdefault(key, set()).add((s_rank, s_row))
        return all(len(v) <= 1 for v in senders.values())

    def _endpoints(self, f: Any, o: DistOp) -> list:
        """``(src rank, src row, dst rank, dst row)`` of every send of a put site (dst
        ``None`` where it cannot be evaluated)."""
        out = []
        its = _iterations(f)
        if its is None:
            return [(0, 0, None, None)]
        if o.op == "routed_put":
            entries = [(int(static_int(r[0])), r[1], r[2]) for r in o["routes"]]
        else:
            entries = [(None, o["dst_rank"], o["dst_row"] if o.op == "put" else None)]
        col = self.launch.coords()[1]
        for s_rank in range(self.world):
            for srow_fixed, rank_e, row_e in entries:
                for s_row in ([srow_fixed] if srow_fixed is not None else range(self.nrows)):
                    vmap = {self.rank: _i32(s_rank), **self.launch.at([_i32(s_row), col])}
                    for it in its:
                        m = {**vmap, **it}
                        r = static_int(self.ana.simplify(_subst(_inline_lets(rank_e, f.scope),
                                                                m)))
                        w = s_row if row_e is None else static_int(self.ana.simplify(
                            _subst(_inline_lets(row_e, f.scope), m)))
                        if r is None or w is None:
                            return [(0, 0, None, None)]
                        if r != s_rank:
                            out.append((s_rank, s_row, r, w))
        return out

    # ---- auto expectations ---------------------------------------------------------------------------
    def _expect_auto(self, sid: int) -> bool:
        plan = self.plans.get(sid)
        return plan is not None and plan.expect == "auto"

    def auto_send(self, o: DistOp) -> bool:
        return o.op in _SENDS and self._expect_auto(o["signal"].id)

    def _auto_gather(self, o: DistOp) -> bool:
        """An all_gather whose arrivals are counted automatically: its sends are
        inferred like a put's, so a loop must be one whose iterations are proven."""
        return o.op == "all_gather" and self._expect_auto(
            o["list"] if o["list"] >= 0 else o["signal"].id)

    def delta_expr(self, o: DistOp, scope: Sequence, pred: Sequence) -> tirx.PrimExpr:
        """The arrivals the receiving core (this program's core on this rank) gets from
        one execution of send ``o``, every rank and row running it: a sum over source
        ranks and rows of ``[the source's predicate holds and it sends here]``."""
        row, col = self.launch.coords()
        conds = [_inline_lets(c, scope) for c in pred]
        total: Any = _i32(0)
        if o.op == "routed_put":
            entries = [(int(static_int(r[0])), r[1], r[2]) for r in o["routes"]]
        elif o.op == "put":
            entries = [(None, o["dst_rank"], o["dst_row"])]
        else:
            entries = [(None, o["dst_rank"], None)]
        src_rank_only = o.fields.get("src_rank", -1)
        for s_rank in range(self.world):
            if src_rank_only >= 0 and s_rank != src_rank_only:
                continue
            for fixed, rank_e, row_e in entries:
                for s_row in ([fixed] if fixed is not None else range(self.nrows)):
                    vmap = {self.rank: _i32(s_rank), **self.launch.at([_i32(s_row), col])}
                    r = _subst(_inline_lets(rank_e, scope), vmap)
                    w = _i32(s_row) if row_e is None else \
                        _subst(_inline_lets(row_e, scope), vmap)
                    hit = tirx.all(*([_subst(c, vmap) for c in conds] +
                                     [r == self.rank, w == row, r != _i32(s_rank)]))
                    total = total + tirx.Select(hit, _i32(1), _i32(0))
        return self.ana.simplify(total)

    def check_auto(self, f: Any, o: DistOp) -> None:
        uniform: set = set()
        for item in f.scope:
            if isinstance(item, WhileLoop):
                raise ValueError(f"{self.err.name(o)}: T.dist expect='auto' cannot prove "
                                 f"matching send/receive loop iterations; use expect='manual' "
                                 f"and provide receiver expected deltas. Runtime/local bounds, "
                                 f"While, and loops with early exits are not inferred")
            if isinstance(item, tirx.For) and item.kind != tirx.ForKind.THREAD_BINDING:
                bounds = [_inline_lets(e, f.scope) for e in (item.min, item.extent)]
                if any(_has(b, (tirx.BufferLoad, tirx.Call)) or not _vars(b) <= uniform
                       for b in bounds) or self._exits(item.body):
                    raise ValueError(
                        f"{self.err.name(o)}: T.dist expect='auto' cannot prove matching "
                        f"send/receive loop iterations (loop {item.loop_var.name!r}, bounds "
                        f"{item.min}, {item.extent}); use expect='manual' and provide "
                        f"receiver expected deltas. Runtime/local bounds, While, and loops "
                        f"with early exits are not inferred")
                uniform.add(item.loop_var)
        self._auto_uniform = uniform

    @staticmethod
    def _exits(body: tirx.Stmt) -> bool:
        return bool(find_calls(body, lambda c: getattr(c.op, "name", "") in
                               ("tirx.ret", "tl.loop_break", "tirx.break_loop",
                                "tirx.continue_loop")))

    def check_predicate(self, o: DistOp, pred: Sequence, scope: Sequence) -> None:
        known = set(self.launch.vars) | {self.rank} | {
            i.loop_var for i in scope if isinstance(i, tirx.For)}
        for c in pred:
            e = _inline_lets(c, scope)
            if _has(e, (tirx.BufferLoad, tirx.Call)) or not _vars(e) <= known:
                raise ValueError(
                    f"{self.err.name(o)}: Cannot infer automatic T.dist expectation from a "
                    f"sender-local condition ({c}); use expect='manual' with "
                    f"receiver-provided expected deltas. Auto conditions must depend only on "
                    f"Rank/core and proven loop variables")

    def marker(self, o: DistOp, scope: Sequence, pred: Sequence) -> tirx.Stmt:
        ref = o["signal"]
        call = tirx.call_extern("handle", "meshtensor_marker_expect", _i32(ref.id),
                                _i32(-1 if ref.member is None else ref.member),
                                self.delta_expr(o, scope, pred))
        return tirx.Evaluate(call)

    def insert_markers(self, body: tirx.Stmt) -> tirx.Stmt:
        for f, o in zip(self.found, self.ops):
            if self.auto_send(o) or self._auto_gather(o):
                self.check_auto(f, o)

        def visit(stmt: tirx.Stmt, scope: tuple) -> tirx.Stmt:
            if isinstance(stmt, tirx.SeqStmt):
                out: list = []
                sc = scope
                for s in stmt.seq:
                    out.append(visit(s, sc))
                    if isinstance(s, tirx.Bind):
                        sc = sc + (Let(s.var, s.value),)
                return _seq(out)
            if isinstance(stmt, tirx.Evaluate) and is_dist_call(stmt.value):
                o = decode(stmt.value)
                if self.auto_send(o):
                    self.check_predicate(o, [], scope)
                    return tirx.SeqStmt([self.marker(o, scope, []), stmt])
                return stmt
            if isinstance(stmt, tirx.IfThenElse):
                return self._if_markers(stmt, scope, visit)
            if isinstance(stmt, tirx.For):
                return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                                visit(stmt.body, scope + (stmt,)), stmt.thread_binding,
                                stmt.annotations)
            if isinstance(stmt, tirx.While):
                return tirx.While(stmt.condition, visit(stmt.body, scope + (
                    WhileLoop(stmt.condition),)))
            return _map_body(stmt, lambda b: visit(b, scope))

        return visit(body, ())

    def _if_markers(self, stmt: tirx.IfThenElse, scope: tuple, visit: Any) -> tirx.Stmt:
        sends = [(f, decode(f.call)) for f in find_dist_ops(stmt)]
        sends = [(f, o) for f, o in sends if self.auto_send(o)]
        if not sends:
            then = visit(stmt.then_case, scope)
            other = None if stmt.else_case is None else visit(stmt.else_case, scope)
            return tirx.IfThenElse(stmt.condition, then, other)
        # a then-only body of phases separated by waits: one marker set per phase
        if stmt.else_case is None and isinstance(stmt.then_case, tirx.SeqStmt):
            phases, cur = [], []
            for s in stmt.then_case.seq:
                waits = find_calls(s, lambda c: is_dist_call(c) and
                                   decode(c).op in BLOCKING - {"barrier", "all_reduce"})
                top = isinstance(s, tirx.Evaluate) and is_dist_call(s.value) and \
                    decode(s.value).op in BLOCKING
                if waits and not top:
                    o = decode(waits[0].call)
                    raise ValueError(f"{self.err.name(o)}: T.dist receiver wait nested within "
                                     f"a conditional send phase cannot be safely planned; "
                                     f"split the condition into phases")
                cur.append(s)
                if top:
                    phases.append(cur)
                    cur = []
            if cur:
                phases.append(cur)
            if len(phases) > 1:
                if _has(stmt.condition, (tirx.BufferLoad,)):
                    o = sends[0][1]
                    raise ValueError(f"{self.err.name(o)}: T.dist conditional send phases "
                                     f"require a stable condition; split buffer-dependent "
                                     f"conditions explicitly around waits")
                return tirx.SeqStmt([self._if_markers(
                    tirx.IfThenElse(stmt.condition, tirx.SeqStmt(p) if len(p) > 1 else p[0],
                                    None),
                    scope, visit) for p in phases])
        if stmt.else_case is not None:
            for branch in (stmt.then_case, stmt.else_case):
                if self._exits(branch):  # (cores leaving a branch early: its count is
                    o = sends[0][1]     # not the same on every path)
                    raise ValueError(f"{self.err.name(o)}: Cannot prove safe T.dist if/else "
                                     f"expectation hoisting with completion, dynamic/manual "
                                     f"waits, or early exits (a return in a branch); split "
                                     f"the condition into phases")
                self._flat_phase(branch)
        markers = []
        for f, o in sends:
            for item in f.scope:
                if isinstance(item, (tirx.For, WhileLoop)):
                    raise ValueError(f"{self.err.name(o)}: Rank/column-conditioned T.dist "
                                     f"peer operations inside loops are not supported yet")
            # (f.scope starts at this ``if``: its own condition is there, negated in
            # the else branch)
            pred = [c.expr if c.taken else tirx.Not(c.expr)
                    for c in f.scope if isinstance(c, Cond)]
            full = tuple(scope) + tuple(i for i in f.scope if isinstance(i, Let))
            self.check_predicate(o, pred, full)
            markers.append(self.marker(o, full, pred))
        return tirx.SeqStmt(markers + [stmt])

    def _flat_phase(self, branch: tirx.Stmt) -> None:
        waited: list = []
        for f in find_dist_ops(branch):
            o = decode(f.call)
            nested = any(isinstance(i, (tirx.For, WhileLoop, Cond)) for i in f.scope)
            if o.op in _SENDS and self.auto_send(o):
                if nested:
                    raise ValueError(f"{self.err.name(o)}: Cannot prove safe T.dist if/else "
                                     f"expectation hoisting through nested communication; "
                                     f"split the condition into phases")
                if o["signal"].id in waited:
                    raise ValueError(f"{self.err.name(o)}: Cannot hoist T.dist if/else "
                                     f"expectation: its signal is sent after a wait on the "
                                     f"same signal; split the condition into phases")
            elif o.op in ("wait_signal",):
                waited.append(o["signal"].id)
            elif o.op in ("wait_all",) and o["completion"] < 0:
                waited.append(o["list"])
            elif o.op in BLOCKING or o.op == "completion":
                raise ValueError(f"{self.err.name(o)}: Cannot prove safe T.dist if/else "
                                 f"expectation hoisting with completion, dynamic/manual "
                                 f"waits, or early exits; split the condition into phases")

    # ---- completions that must be drained ------------------------------------------------------
    def check_completion_reuse(self) -> None:
        """A completion the kernel observes (``has_pending``, ``wait_any``) holds its
        SignalList until drained (``wait_all``, or a ``while has_pending: wait_any``
        loop): a second completion on the list before that, or one created in a loop
        and not drained in the same iteration, is refused, as the upstream's compiler
        refuses it (decision 88). A completion never observed holds nothing."""
        observed = {decode(v)["completion"] for v in self.value_calls
                    if decode(v).op in ("has_pending", "wait_any")}
        lists: dict[int, int] = {}
        made: dict[int, DistOp] = {}

        def merge(into: dict, other: dict) -> dict:
            out = dict(into)
            for g, c in other.items():
                if g in out and out[g] != c:
                    out[g] = None  # held by different completions on different paths
                else:
                    out.setdefault(g, c)
            return out

        def loop_body(body: Any, held: dict) -> dict:
            before = dict(held)
            after = walk(body, dict(held))
            for g, c in after.items():
                if before.get(g, -2) != c:
                    o = made.get(c) if c is not None else None
                    raise ValueError(
                        f"{self.err.name(o) if o is not None else 'T.dist.completion'}: a "
                        f"SignalList completion created inside a loop and observed must be "
                        f"drained in that iteration before the next one (T.dist.wait_all, "
                        f"or while T.dist.has_pending: T.dist.wait_any)")
            return merge(after, before)

        def drains(body: Any, cid: int) -> bool:
            calls: list = []
            flow: list = []
            tirx.stmt_functor.post_order_visit(body, lambda n: calls.append(n) if
                                               is_dist_call(n) else flow.append(n) if
                                               isinstance(n, (tirx.IfThenElse, tirx.For,
                                                              tirx.While)) else None)
            ops = [decode(c) for c in calls]
            anys = [o for o in ops if o.op == "wait_any"]
            return not flow and len(anys) == 1 and anys[0]["completion"] == cid and \
                not any(o.op == "wait_all" for o in ops) and not self._exits(body)

        def walk(stmt: Any, held: dict) -> dict:
            if isinstance(stmt, tirx.SeqStmt):
                for x in stmt.seq:
                    held = walk(x, held)
                return held
            if isinstance(stmt, tirx.Evaluate):
                if is_dist_call(stmt.value) and stmt.value.dtype == "handle":
                    o = decode(stmt.value)
                    if o.op == "completion":
                        if o["list"] in held:
                            raise ValueError(
                                f"{self.err.name(o)}: the SignalList's previous completion "
                                f"must be drained before creating another completion; use "
                                f"T.dist.wait_all(completion) or while "
                                f"T.dist.has_pending(completion): "
                                f"T.dist.wait_any(completion)")
                        lists[o["id"]], made[o["id"]] = o["list"], o
                        if o["id"] in observed:
                            held = {**held, o["list"]: o["id"]}
                    elif o.op == "wait_all" and o["completion"] >= 0:
                        g = lists.get(o["completion"])
                        if g is not None and held.get(g) == o["completion"]:
                            held = {k: v for k, v in held.items() if k != g}
                return held
            if isinstance(stmt, tirx.IfThenElse):
                then = walk(stmt.then_case, dict(held))
                other = held if stmt.else_case is None else walk(stmt.else_case, dict(held))
                return merge(then, other)
            if isinstance(stmt, tirx.For):
                return loop_body(stmt.body, held)
            if isinstance(stmt, tirx.While):
                c = stmt.condition
                drained = None
                if is_dist_call(c) and decode(c).op == "has_pending":
                    cid = decode(c)["completion"]
                    g = lists.get(cid)
                    if g is not None and held.get(g) == cid and drains(stmt.body, cid):
                        drained = g
                held = loop_body(stmt.body, held)
                if drained is not None:
                    held = {k: v for k, v in held.items() if k != drained}
                return held
            if isinstance(stmt, tirx.SBlockRealize):
                return walk(stmt.block, held)
            body = getattr(stmt, "body", None)
            return walk(body, held) if isinstance(body, tirx.Stmt) else held

        walk(self.func.body, {})

    # ---- races that show in the code ----------------------------------------------------------------------
    def check_static_races(self) -> None:
        """Refuse, in straight-line code, a tile op that writes a put's source between
        its submission and ``T.dist.wait()``, or touches a put's destination between the
        put and the wait covering its arrival when every rank receives there. (The
        checked run finds the rest.)"""
        seqs: list = []
        tirx.stmt_functor.post_order_visit(
            self.func.body, lambda n: seqs.append(n) if isinstance(n, tirx.SeqStmt) else None)
        for seq in seqs:  # (raised outside TVM's visitor: its callback wraps errors)
            self._scan_seq(list(seq.seq))

    def _tile_regions(self, s: tirx.Stmt) -> list:
        """``(region, writes)`` of a straight-line tile op statement (copy, fill)."""
        if not isinstance(s, tirx.Evaluate) or not isinstance(s.value, tirx.Call):
            return []
        name = getattr(s.value.op, "name", "")
        from ..ir.scope import region_of
        if name == "tl.tileop.copy":
            return [(region_of(s.value.args[0]), False), (region_of(s.value.args[1]), True)]
        if name == "tl.tileop.fill":
            return [(region_of(s.value.args[0]), True)]
        return []

    @staticmethod
    def _overlap(a: CopyRegion, b: CopyRegion) -> bool | None:
        """Whether two regions of one buffer surely overlap (``None``: unknown)."""
        if not a.buffer.data.same_as(b.buffer.data):
            return False
        for sa, ea, sb, eb in zip(a.starts, a.extents, b.starts, b.extents):
            vals = [static_int(x) for x in (sa, ea, sb, eb)]
            if None in vals:
                return None
            if vals[0] + vals[1] <= vals[2] or vals[2] + vals[3] <= vals[0]:
                return False
        return True

    def _every_rank_receives(self, o: DistOp) -> bool:
        if o.op != "put":
            return False
        scope = self.scopes.get(o.call, ())
        if any(isinstance(i, (Cond, WhileLoop)) for i in scope):
            return False
        rank = _inline_lets(o["dst_rank"], scope)
        got = set()
        for r in range(self.world):
            v = static_int(self.ana.simplify(_subst(rank, {self.rank: _i32(r)})))
            if v is None or v == r:
                return False
            got.add(v)
        return got == set(range(self.world)) and not self.cross_row(o["dst_row"], scope)

    def _covers(self, o: DistOp, s: tirx.Stmt, side: str) -> bool:
        """Whether statement ``s`` ends the window of put ``o`` (conservatively: any
        control flow holding a T.dist op ends it)."""
        calls = _dist_calls(s)
        if not calls:
            return False
        if not (isinstance(s, tirx.Evaluate) or isinstance(s, tirx.Bind)):
            return True
        w = decode(calls[0])
        if side == "src":
            return w.op in ("wait_send", "barrier", "all_gather", "all_to_all", "all_reduce",
                            "all_to_allv")
        sid = o["signal"].id
        if w.op in ("wait_signal", "barrier"):
            return w["signal"].id == sid
        if w.op in ("wait_all", "wait_signals"):
            return w["list"] == sid
        return w.op in ("wait_any", "all_reduce")

    def _scan_seq(self, seq: list) -> None:
        for i, s in enumerate(seq):
            if not (isinstance(s, tirx.Evaluate) and is_dist_call(s.value)):
                continue
            o = decode(s.value)
            if o.op != "put":
                continue
            # the source: from the submission to T.dist.wait()
            start = i if o["submit"] else None
            for j in range(i + 1, len(seq)):
                t = seq[j]
                if start is None:
                    if isinstance(t, tirx.Evaluate) and is_dist_call(t.value) and \
                            decode(t.value).op == "submit":
                        start = j
                    elif _dist_calls(t) and not isinstance(t, tirx.Evaluate):
                        break
                    continue
                if self._covers(o, t, "src"):
                    break
                for r, writes in self._tile_regions(t):
                    if writes and self._overlap(r, o["src"]):
                        raise ValueError(
                            f"{self.err.name(o)}: the {_tile_op_name(t.value)} after it writes "
                            f"{_region_text(r)}, the put's source {_region_text(o['src'])}, "
                            f"before T.dist.wait(): the chip reads a put's source any time "
                            f"until T.dist.wait() returns (a race)")
            # the destination, on a receiver: from the put to the wait covering it
            if not self._every_rank_receives(o):
                continue
            for j in range(i + 1, len(seq)):
                t = seq[j]
                if self._covers(o, t, "dst"):
                    break
                for r, writes in self._tile_regions(t):
                    if self._overlap(r, o["dst"]):
                        how = "writes" if writes else "reads"
                        raise ValueError(
                            f"{self.err.name(o)}: the {_tile_op_name(t.value)} after it {how} "
                            f"{_region_text(r)}, which overlaps the put's destination "
                            f"{_region_text(o['dst'])} (every rank receives one), before "
                            f"the wait that covers its "
                            f"arrival: the data lands any time until then (a race)")

    # ---- rewriting into runtime calls ------------------------------------------------------------------
    def build(self) -> tuple[tirx.PrimFunc, DistProgram]:
        self.collect()
        self.check()
        self.check_completion_reuse()
        self.plan_signals()
        self.check_static_races()
        body = self.insert_markers(self.func.body)
        self.ctx = tirx.Var(CTX_PARAM, "int64")
        self.register_only = tirx.Var(REGISTER_PARAM, "int32")
        self.sites: list[Site] = [Site(REGISTER_SITE, "register", "buffer registration",
                                       {}, len(self.buffers))]
        self.arg_bufs: list[tirx.Buffer] = []
        body = self._rewrite(body)
        body = self._prologue(body)
        params = list(self.func.params) + [self.ctx, self.register_only]
        # the lowered kernel is a plain mesh kernel: its rank id is an ordinary int32
        old = params[self.rank_param]
        plain = tirx.Var(old.name, "int32")
        body = tirx.stmt_functor.substitute(body, {old: plain})
        params[self.rank_param] = plain
        func = tirx.PrimFunc(params, body, self.func.ret_type, self.func.buffer_map,
                             self.func.attrs).with_attr(DIST_RANK_ATTR, True)
        prog = DistProgram(self.world, self.mesh_shape, self.rank_param, tuple(self.sites),
                           tuple(sorted(self.buffers.values(), key=lambda b: b.id)),
                           dict(self.plans), dict(self.completions), self.nslots)
        return func, prog

    def _core(self) -> tirx.PrimExpr:
        return tirx.Cast("int32", self.launch.core_id()) if self.launch.vars else _i32(0)

    def _call(self, site: Site, values: Sequence[Any]) -> tirx.Stmt:
        n = 3 + len(values)
        buf = tirx.decl_buffer((n,), "int64", f"dist_args_{site.index}", scope="local")
        self.arg_bufs.append(buf)
        stores = [tirx.BufferStore(buf, tirx.Cast("int64", v) if v.dtype != "int64" else v,
                                   [_i32(i)])
                  for i, v in enumerate([self.ctx, _i32(site.index), self._core()] +
                                        [(_i32(x) if isinstance(x, int) else x)
                                         for x in values])]
        call = tirx.call_extern("int32", CALL, tirx.call_intrin(
            "handle", "tirx.address_of", tirx.BufferLoad(buf, [_i32(0)])), _i32(n))
        return tirx.SeqStmt(stores + [tirx.Evaluate(call)])

    def _new_site(self, o: DistOp, info: dict, nargs: int, cross: bool = False) -> Site:
        n = self.numbers.get(o.call)
        name = o.name if n is None else f"{o.name} (dist op #{n})"
        site = Site(len(self.sites), o.op, name, info, nargs, cross)
        self.sites.append(site)
        return site

    def _region_info(self, r: CopyRegion | None) -> Any:
        if r is None:
            return None
        b = self.buffers[r.buffer.data]
        return (b.id, tuple(int(static_int(e)) for e in r.extents))

    def _ptr(self, r: CopyRegion) -> tirx.PrimExpr:
        return tirx.call_intrin("int64", "tirx.reinterpret", tirx.call_intrin(
            "handle", "tirx.address_of", tirx.BufferLoad(r.buffer, list(r.starts))))

    def _contiguous(self, o: DistOp, key: str, r: CopyRegion) -> None:
        ext = [static_int(e) for e in r.extents]
        shape = [static_int(n) for n in r.buffer.shape]
        # after the first dim with extent > 1, every later dim must be whole
        started = False
        for e, n in zip(ext, shape):
            if started and e != n:
                raise ValueError(f"{self.err.name(o)}: {key} {_region_text(r)} must be a "
                                 f"contiguous region (whole trailing dims)")
            if e is not None and e > 1:
                started = True

    def lower_op(self, o: DistOp, scope: Sequence) -> tuple[Site, list]:
        """The site of one record and its dynamic values (in the runtime's order)."""
        op = o.op
        member = lambda ref: -1 if ref is None or ref.member is None else ref.member  # noqa
        if op == "put":
            cross = self.cross_row(o["dst_row"], scope)
            site = self._new_site(o, {"src": self._region_info(o["src"]),
                                      "dst": self._region_info(o["dst"]),
                                      "signal": o["signal"].id, "submit": o["submit"]},
                                  0, cross)
            vals = list(o["src"].starts) + list(o["dst"].starts) + \
                [o["dst_rank"], o["dst_row"], member(o["signal"])]
        elif op == "routed_put":
            cross = any(static_int(self.ana.simplify(r[2])) != static_int(r[0])
                        for r in o["routes"])
            site = self._new_site(o, {"src": self._region_info(o["src"]),
                                      "dst": self._region_info(o["dst"]),
                                      "signal": o["signal"].id, "submit": o["submit"],
                                      "routes": tuple(int(static_int(r[0]))
                                                      for r in o["routes"]),
                                      "src_rank": o["src_rank"]}, 0, cross)
            vals = list(o["src"].starts) + list(o["dst"].starts)
            for r in o["routes"]:
                vals += [r[1], r[2]]
            vals.append(member(o["signal"]))
        elif op == "put_signal":
            site = self._new_site(o, {"signal": o["signal"].id, "submit": o["submit"]}, 0)
            vals = [o["dst_rank"], member(o["signal"])]
        elif op in ("submit", "wait_send"):
            site = self._new_site(o, {}, 0)
            vals = []
        elif op == "wait_signal":
            site = self._new_site(o, {"signal": o["signal"].id}, 0)
            vals = [member(o["signal"]), o["delta"]]
        elif op == "wait_signals":
            self._contiguous(o, "expected_deltas", o["deltas"])
            site = self._new_site(o, {"list": o["list"],
                                      "deltas_dtype": str(o["deltas"].buffer.dtype)}, 0)
            vals = [self._ptr(o["deltas"])]
        elif op == "wait_all":
            site = self._new_site(o, {"list": o["list"], "completion": o["completion"]}, 0)
            vals = []
        elif op == "completion":
            info = {"id": o["id"], "list": o["list"], "mode": o["mode"]}
            vals = []
            if o["deltas"] is not None:
                self._contiguous(o, "expected_deltas", o["deltas"])
                info["deltas_dtype"] = str(o["deltas"].buffer.dtype)
                vals = [self._ptr(o["deltas"])]
            site = self._new_site(o, info, 0)
        elif op in ("barrier", "barrier_arrive"):
            site = self._new_site(o, {"signal": o["signal"].id,
                                      "submit": o.fields.get("submit", 1)}, 0)
            vals = [member(o["signal"])]
        elif op in ("all_gather", "all_reduce", "all_to_all"):
            info = {"src": self._region_info(o["src"]), "dst": self._region_info(o["dst"])}
            for key in ("axis", "reduce_type", "domain", "submit", "list", "completion"):
                if key in o.fields:
                    info[key] = o[key]
            sig = o.fields.get("signal")
            info["signal"] = None if sig is None else sig.id
            cross = op == "all_to_all" and o["domain"] == "row" and self.nrows > 1
            site = self._new_site(o, info, 0, cross)
            vals = list(o["src"].starts) + list(o["dst"].starts) + [member(sig)]
        elif op == "all_to_allv":
            for key in ("send_counts", "recv_counts"):
                self._contiguous(o, key, o[key])
            sig = o["signal"]
            info = {"src": self._region_info(o["src"]), "dst": self._region_info(o["dst"]),
                    "domain": o["domain"], "submit": o["submit"], "list": o["list"],
                    "completion": o["completion"], "signal": None if sig is None else sig.id,
                    "counts_dtype": str(o["send_counts"].buffer.dtype)}
            cross = o["domain"] == "row" and self.nrows > 1
            site = self._new_site(o, info, 0, cross)
            vals = list(o["src"].starts) + list(o["dst"].starts) + \
                [self._ptr(o["send_counts"]), self._ptr(o["recv_counts"]), member(sig)]
        elif op in ("wait_any", "has_pending"):
            site = self._new_site(o, {"completion": o["completion"]}, 0)
            vals = []
        else:  # pragma: no cover - FIELDS is fixed
            raise AssertionError(op)
        object.__setattr__(site, "nargs", len(vals))
        return site, vals

    def _expect_site(self, call: tirx.Call) -> tuple[Site, list]:
        sid, member, delta = call.args[1], call.args[2], call.args[3]
        site = Site(len(self.sites), "expect", f"auto expectation of signal #{sid}",
                    {"signal": int(sid.value)}, 2)
        self.sites.append(site)
        return site, [member, delta]

    def _cross_row(self, stmt: tirx.Stmt) -> bool:
        """Whether a statement is an op that moves data between the rows of one chip (a
        put that may leave its row, a routed put to another row, ``all_to_all`` /
        ``all_to_allv`` over rows): the upstream lowers its on-chip leg to a
        ``T.comm.put``, which the cores of the column run together."""
        is_op = (isinstance(stmt, tirx.Evaluate) and is_dist_call(stmt.value)) or \
            (isinstance(stmt, tirx.Bind) and bool(_dist_calls(stmt)))
        if not is_op:
            return False
        o = decode(_dist_calls(stmt)[0])
        if o.op == "put":
            return self.cross_row(o["dst_row"])
        if o.op == "routed_put":
            return any(static_int(self.ana.simplify(r[2])) != static_int(r[0])
                       for r in o["routes"])
        return o.op in ("all_to_all", "all_to_allv") and o["domain"] == "row" and \
            self.nrows > 1

    def _sync(self, group: str, what: str) -> tirx.Stmt:
        """A runtime barrier of the rank's cores: ``group`` ``"column"`` (the cores of
        this core's column) or ``"chip"`` (every core); each call site is one barrier."""
        axes = (0,) if group == "column" else (0, 1)
        site = Site(len(self.sites), "sync", what, {"axes": axes, "shape": self.mesh_shape}, 0)
        self.sites.append(site)
        return self._call(site, [])

    def _rewrite(self, stmt: tirx.Stmt) -> tirx.Stmt:
        rw = self._rewrite
        if isinstance(stmt, tirx.SeqStmt):
            return _seq([rw(s) for s in stmt.seq])
        if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call):
            c = stmt.value
            if getattr(c.op, "name", "") == "tirx.call_extern" and \
                    c.args[0].value == "meshtensor_marker_expect":
                site, vals = self._expect_site(c)
                return self._call(site, vals)
            if is_dist_call(c):
                o = decode(c)
                if o.op == "signal_decl":
                    return tirx.Evaluate(_i32(0))
                if o.op in ("wait_any", "has_pending"):
                    return tirx.Evaluate(self._values(c))
                site, vals = self.lower_op(o, ())
                new = self._call(site, vals)
                if self._cross_row(stmt):
                    leg = f"the on-chip leg of {site.name}"
                    return _seq([self._sync("column", f"{leg} (before)"), new,
                                 self._sync("column", f"{leg} (after)")])
                return new
            return tirx.Evaluate(self._values(c))
        if isinstance(stmt, tirx.Bind):
            return tirx.Bind(stmt.var, self._values(stmt.value))
        if isinstance(stmt, tirx.BufferStore):
            return tirx.BufferStore(stmt.buffer, self._values(stmt.value),
                                    [self._values(i) for i in stmt.indices])
        if isinstance(stmt, tirx.For):
            return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, rw(stmt.body),
                            stmt.thread_binding, stmt.annotations)
        if isinstance(stmt, tirx.IfThenElse):
            other = None if stmt.else_case is None else rw(stmt.else_case)
            return tirx.IfThenElse(self._values(stmt.condition), rw(stmt.then_case), other)
        if isinstance(stmt, tirx.While):
            return tirx.While(self._values(stmt.condition), rw(stmt.body))
        if isinstance(stmt, tirx.SBlockRealize):
            blk = stmt.block
            new = tirx.SBlock(blk.iter_vars, blk.reads, blk.writes, blk.name_hint,
                              rw(blk.body), blk.init, blk.alloc_buffers, blk.match_buffers,
                              blk.annotations)
            return tirx.SBlockRealize(stmt.iter_values, stmt.predicate, new)
        return _map_body(stmt, rw)

    def _values(self, e: Any) -> Any:
        """``e`` with its ``wait_any`` / ``has_pending`` records turned into runtime
        value calls."""
        if not isinstance(e, tirx.PrimExpr) or not any(is_dist_call(c) for c in _calls(e)):
            return e

        def post(n: Any) -> Any:
            if is_dist_call(n):
                o = decode(n)
                site, _ = self.lower_op(o, ())
                v = tirx.call_extern("int32", VALUE, self.ctx, _i32(site.index), self._core())
                return v if o.op == "wait_any" else tirx.NE(v, _i32(0))
            return None

        return tirx.stmt_functor.ir_transform(tirx.Evaluate(e), None, post,
                                              ["tirx.Call"]).value

    def _prologue(self, body: tirx.Stmt) -> tirx.Stmt:
        """Pins and the registration call at the start of the kernel's root block; the
        argument buffers of every call site allocated there."""
        from ..language.comm import mesh_comm
        mc = mesh_comm(self.mesh)
        bufs = sorted(self.buffers.items(), key=lambda kv: kv[1].id)
        pre: list = []
        for data, info in bufs:
            b = self.buffer_objs[data]
            if info.sram:
                one = tirx.BufferRegion(b, [ir.Range.from_min_extent(0, 1) for _ in b.shape])
                pre.append(tirx.Evaluate(mc.permute(one, one, [])))
        ptrs = [tirx.call_intrin("int64", "tirx.reinterpret", tirx.call_intrin(
            "handle", "tirx.address_of",
            tirx.BufferLoad(self.buffer_objs[d], [_i32(0)] * len(self.buffer_objs[d].shape))))
            for d, _ in bufs]
        # a barrier of groups of one core (a no-op): LowerMeshComm then always gives the
        # kernel its loops over the cores, which split_cores makes one program per core
        pre.append(tirx.Evaluate(mc.barrier([])))
        pre.append(self._call(self.sites[0], ptrs))
        # (LowerMeshComm refuses a `return`: split_cores makes this marker one)
        pre.append(tirx.Evaluate(tirx.call_extern("handle", RETURN_MARK, self.register_only)))
        done = [False]

        def visit(stmt: tirx.Stmt) -> tirx.Stmt:
            if done[0]:
                return stmt
            if isinstance(stmt, tirx.SBlockRealize) and _inside_launch_root(stmt):
                blk = stmt.block
                done[0] = True
                new = tirx.SBlock(blk.iter_vars, blk.reads, blk.writes, blk.name_hint,
                                  tirx.SeqStmt(_flat(pre + [blk.body])), blk.init,
                                  list(blk.alloc_buffers) + self.arg_bufs, blk.match_buffers,
                                  blk.annotations)
                return tirx.SBlockRealize(stmt.iter_values, stmt.predicate, new)
            return _map_body(stmt, visit)

        out = visit(body)
        if not done[0]:
            raise ValueError("LowerDist: no block inside T.Kernel holds the kernel body "
                             "(expected TileLang's T.Kernel)")
        return out


def _inside_launch_root(stmt: tirx.SBlockRealize) -> bool:
    return stmt.block.name_hint not in ("root",)


def _calls(e: Any) -> list:
    out: list = []
    tirx.stmt_functor.post_order_visit(e if isinstance(e, tirx.Stmt) else tirx.Evaluate(e),
                                       lambda n: out.append(n) if isinstance(n, tirx.Call)
                                       else None)
    return out


def _dist_calls(s: Any) -> list:
    return [c for c in _calls(s) if is_dist_call(c)]


def _flat(stmts: list) -> list:
    out: list = []
    for s in stmts:
        if isinstance(s, tirx.SeqStmt):
            out.extend(_flat(list(s.seq)))
        elif not (isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm)):
            out.append(s)
    return out or [tirx.Evaluate(_i32(0))]


def _seq(stmts: list) -> tirx.Stmt:
    """The statements as one (flattened; a single statement as itself)."""
    flat = _flat(stmts)
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)


def _map_body(stmt: tirx.Stmt, fn: Any) -> tirx.Stmt:
    """``stmt`` with its one child statement (``body`` / ``block``) mapped by ``fn``."""
    if isinstance(stmt, tirx.AttrStmt):
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, fn(stmt.body))
    if isinstance(stmt, tirx.DeclBuffer):
        return tirx.DeclBuffer(stmt.buffer, fn(stmt.body)) if hasattr(stmt, "body") and \
            stmt.body is not None else stmt
    if isinstance(stmt, tirx.SBlockRealize):
        blk = stmt.block
        new = tirx.SBlock(blk.iter_vars, blk.reads, blk.writes, blk.name_hint, fn(blk.body),
                          blk.init, blk.alloc_buffers, blk.match_buffers, blk.annotations)
        return tirx.SBlockRealize(stmt.iter_values, stmt.predicate, new)
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, fn(stmt.body),
                        stmt.thread_binding, stmt.annotations)
    if isinstance(stmt, tirx.IfThenElse):
        return tirx.IfThenElse(stmt.condition, fn(stmt.then_case),
                               None if stmt.else_case is None else fn(stmt.else_case))
    if isinstance(stmt, tirx.While):
        return tirx.While(stmt.condition, fn(stmt.body))
    if isinstance(stmt, tirx.SeqStmt):
        return tirx.SeqStmt([fn(s) for s in stmt.seq])
    body = getattr(stmt, "body", None)
    if isinstance(body, tirx.Stmt):
        raise ValueError(f"LowerDist: unsupported statement {type(stmt).__name__} around "
                         f"T.dist ops")
    return stmt


def lower_dist(func: tirx.PrimFunc) -> tuple[tirx.PrimFunc, DistProgram]:
    """The per-rank kernel and its :class:`DistProgram` (see the module docstring)."""
    if not has_dist_ops(func):
        raise ValueError("lower_dist: the kernel holds no T.dist ops")
    return _Lowering(func).build()


def LowerDist():  # noqa: N802 (TVM pass factories are CamelCase)
    """``tirx`` pass: :func:`lower_dist` on every kernel holding ``T.dist`` ops (the
    :class:`DistProgram` is kept as the function attribute ``meshtensor.dist``'s
    text is not needed: use :func:`lower_dist` to get it)."""

    def run(func: tirx.PrimFunc, mod: Any, ctx: Any) -> tirx.PrimFunc:
        return lower_dist(func)[0] if has_dist_ops(func) else func

    return tirx.transform.prim_func_pass(run, opt_level=0, name="meshtensor.LowerDist")
