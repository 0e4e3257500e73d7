"""Random mesh programs (see docs/fuzzing.md for what they cover).

:func:`make_batch` draws a mesh (1-D to 3-D, axis names in any order), a launch (n-D
or 1-D) and ``count`` independent programs on it; :func:`make_program` draws one. A
program loads its own input tiles, computes locally (elementwise loops, integer
arithmetic with the core coordinates and loop variables, lets, ``T.alloc_var``
variables, conditions), calls 1-3 comm ops (possibly in ``T.serial``/``T.Pipelined``/
``T.unroll`` loops and under uniform ``if``s) and stores every buffer and variable.
Its memory is of every kind a kernel allocates (any scope, fragments, views of
another shape or dtype), its indices hold narrowing casts and ``//``/``%`` nests, and
it may touch other cores' tiles of global tensors. Every draw is a pure function of its
seed text; a program whose values would leave ``model.LIMIT`` is drawn again
(``attempt`` 1, 2, ...). Some programs are planted with one reason the layer must
refuse them (``PLANTED``, ``Program.expect``).

Features can be switched off by name (``FEATURES``): a batch or program then never uses
them, which keeps known bugs out of a measurement.

>>> batch, inputs, results = make_batch("7", 0, 0, 2)
>>> len(batch.programs), sorted(inputs[0]) == sorted(t.name for t in batch.programs[0].inputs)
(2, True)
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

import numpy as np

from .model import LIMIT, ModelResult, Unrepresentable, _Model, ceil_pieces, run_model
from .program import (NARROW, Assign, Batch, Bin, BufDecl, Cast, Comm, Const, Copy, Core,
                      CoreId, Fill, For, Gemm, If, Let, Load, Name, Program, Region,
                      Select, SetVar, Tensor, VarDecl, children)

OPS = ("broadcast", "all_gather", "all_reduce", "reduce_scatter", "all_to_all", "shift",
       "permute", "barrier")
OP_WEIGHTS = (3, 3, 3, 3, 3, 3, 3, 1)

#: feature name -> what it adds (each can be excluded; comm op kinds can be too)
FEATURES = {
    "axis-order": "mesh axis names not in alphabetical order",
    "launch-1d": "1-D launches, T.Kernel(mesh size)",
    "mesh-object": "mesh_comm(Mesh(...)) instead of a dict",
    "int-axes": "mesh axes given as integers",
    "region": "comm ops on regions of buffers (S[0:3, 1:5])",
    "uneven": "reduce_scatter/all_to_all extents not divisible by the group",
    "same-buffer": "src and dst regions in one buffer",
    "loop-region": "comm regions whose start is a loop variable",
    "core-region": "comm regions whose start depends on the core",
    "loop-root": "broadcast roots that are loop variables",
    "prefetch-root": "broadcast root k + 1 under `if k + 1 < n`",
    "pipelined": "T.Pipelined loops around comm ops",
    "unroll": "T.unroll loops around comm ops",
    "uniform-if": "comm ops under conditions on loop variables",
    "barrier-axes": "barrier over some mesh axes",
    "uninit-dst": "buffers first written by a comm op",
    "helper": "comm ops called through a Python function or a T.macro",
    "fragment": "T.alloc_fragment buffers (written in T.Parallel loops)",
    "let": "lets (v = expr) of core-dependent values",
    "let-after-write": "lets of per-core data read after the data is written",
    "var": "T.alloc_var variables",
    "core-if": "conditions on the core around comm-free code",
    "select": "T.if_then_else",
    "parallel": "T.Parallel loops (shared buffers)",
    "global-write": "writes to the core's own tile of an input tensor",
    # per-core memory of every kind (issue 26)
    "alloc-buffer": "T.alloc_buffer in the kernel (scope \"global\" or the default): "
                    "per-core memory",
    "shared-dyn": "T.alloc_shared of the default scope (shared.dyn)",
    "fill": "T.fill / T.clear of local and T.alloc_buffer buffers",
    "fragment-loop": "fragments written and read by serial loops, copied to and from "
                     "other buffers, holding values across comm ops",
    "gemm": "T.gemm with a fragment, local or T.alloc_buffer accumulator (then maybe "
            "all-reduced, as a K-split GEMM)",
    "reshape": "T.reshape views of per-core buffers (comm operands, reads, writes)",
    "view": "T.view views of per-core buffers, same dtype",
    "view-dtype": "T.view of another dtype as comm operands (the bits move)",
    "decl-buffer": "T.decl_buffer(data=S.data, elem_offset=...) views",
    "narrow-index": "narrowing casts (int16, int8, uint8) that wrap, in indices and "
                    "T.copy starts",
    "narrow-start": "narrowing casts that wrap, in comm region starts",
    "narrow-root": "narrowing casts that wrap, in broadcast roots",
    "fold-index": "((v // a + b) % c) * a + (v % a + e) % a indices of the core id and "
                  "loop variables",
    "fold-copy": "copy starts (s % a) * m + (s + b) % c",
    "fold-write": "a core stores into the tile of a permutation of the cores",
    "remote-read": "reads of another core's tile of a global tensor (none writing it, "
                   "or its owner wrote it before a barrier)",
    "check-races": "batches compiled with check_races=True",
    # programs planted to be refused (Program.expect)
    "race-write": "planted: two cores write one element of a global tensor",
    "race-read": "planted: a core reads an element another core writes, one superstep",
    "wrapped-start": "planted: a comm start that a narrowing cast wraps out of range",
    "wrapped-root": "planted: a broadcast root that a narrowing cast wraps out of range",
    "data-start": "planted: a comm region start read from per-core memory",
    "data-if": "planted: a comm op under a condition on per-core memory",
}

#: features that plant a reason to refuse (see Program.expect), by that reason
PLANTED = {"race-write": "race", "race-read": "race", "wrapped-start": "wrapped-start",
           "wrapped-root": "wrapped-root", "data-start": "data-start",
           "data-if": "data-if"}
#: comm ops that only move data (a view of another dtype moves bits through them)
MOVES = ("broadcast", "all_gather", "all_to_all", "shift", "permute")

#: scopes T.fill / T.clear take on TileLang's CPU back end
FILLABLE = ("local", "global", "default")
#: scopes a T.Parallel loop may index (TileLang refuses local buffers there)
PARALLEL = ("shared", "shared.dyn", "global", "default")
#: scopes of the allocations the generator takes views of
VIEWABLE = ("shared", "shared.dyn", "local", "global", "default")
#: narrowing casts: the multipliers that make each type wrap for small operands
NARROW_SCALE = {"int16": (8192, 16384, 20000, 30000), "int8": (32, 64, 100),
                "uint8": (64, 100, 200)}

CLIP_TOP, CLIP_LOOP = 2 ** 10, 64
MAX_ATTEMPTS = 40
NAME_POOL = ("x", "y", "z", "row", "col", "r", "c", "a", "q", "dp", "tp", "pp", "u", "w",
             "k0", "m")


def known_feature(name: str) -> bool:
    return name in FEATURES or name in OPS


# -- meshes and batches --------------------------------------------------------------
def draw_mesh(r: random.Random, exclude: frozenset = frozenset()) -> tuple:
    """A mesh as ``((name, size), ...)``: 1-D to 3-D, at most 12 cores."""
    ndim = r.choice((1, 1, 2, 2, 2, 3, 3))
    while True:
        shape = [r.choice((1, 2, 2, 2, 3, 4)) for _ in range(ndim)]
        if ndim == 1:
            shape = [r.choice((2, 3, 4, 5, 6, 6, 8, 12))]
        size = int(np.prod(shape))
        if 2 <= size <= 12:
            break
    names = r.sample(NAME_POOL, ndim)
    if "axis-order" in exclude:
        names.sort()
    return tuple(zip(names, shape))


def make_batch(seed: str, batch_index: int, first: int, count: int,
               exclude: frozenset = frozenset(), gen: type | None = None
               ) -> tuple[Batch, list, list]:
    """Batch ``batch_index`` of a run: programs ``first .. first + count - 1``, their
    inputs (one dict of arrays per program) and model results; ``gen`` draws the
    programs (default: mesh programs with comm ops; the spmdize mode passes
    :class:`~.global_view.GlobalGen`)."""
    r = random.Random(f"{seed}:batch:{batch_index}")
    mesh = draw_mesh(r, exclude)
    launch = "1d" if "launch-1d" not in exclude and r.random() < 0.35 else "nd"
    shell = Batch(mesh, launch, (), coord_lets=r.random() < 0.7,
                  mesh_form="mesh" if "mesh-object" not in exclude and r.random() < 0.2
                  else "dict",
                  check_races=gen is None and "check-races" not in exclude and
                  r.random() < 0.1)
    programs, inputs, results = [], [], []
    for i in range(first, first + count):
        p, x, m = make_program(shell, i, seed, exclude, gen)
        programs.append(p)
        inputs.append(x)
        results.append(m)
    return shell.with_programs(programs), inputs, results


def make_program(shell: Batch, index: int, seed: str, exclude: frozenset = frozenset(),
                 gen: type | None = None) -> tuple[Program, dict, ModelResult]:
    """Program ``index`` of run ``seed`` on ``shell``'s mesh, its inputs and its model
    result; drawn again (up to ``MAX_ATTEMPTS`` times) until the model runs it
    exactly."""
    for attempt in range(MAX_ATTEMPTS):
        text = f"{seed}:{index}" + (f":{attempt}" if attempt else "")
        g = (gen or _Gen)(random.Random(text), shell, index, exclude)
        p = g.program(text)
        inputs = g.inputs()
        try:
            result = run_model(shell.with_programs((p,)), p, inputs)
        except Unrepresentable:
            continue
        return p, inputs, result
    raise RuntimeError(f"program {index} of seed {seed}: no exact draw in {MAX_ATTEMPTS}")


# -- one program ---------------------------------------------------------------------
class _Buf:
    """A buffer (or an input tile) of the program, a bound on its values and whether
    every element is written; a view shares both with its allocation (``root``)."""

    def __init__(self, decl: BufDecl, bound: float, defined: bool = True,
                 is_tensor: bool = False, root: "_Buf | None" = None):
        self.decl, self.is_tensor, self.root = decl, is_tensor, root
        self._bound, self._defined = bound, defined

    @property
    def alloc(self) -> "_Buf":
        return self.root or self

    @property
    def bound(self) -> float:
        return self.alloc._bound

    @bound.setter
    def bound(self, v: float) -> None:
        self.alloc._bound = v

    @property
    def defined(self) -> bool:
        return self.alloc._defined

    @defined.setter
    def defined(self, v: bool) -> None:
        self.alloc._defined = v

    @property
    def bits(self) -> bool:
        """A view of another dtype: its values are bit patterns, moved only."""
        return self.root is not None and self.decl.dtype != self.root.decl.dtype

    @property
    def frag(self) -> bool:
        return self.decl.scope == "fragment"


@dataclass
class _Var:
    """A ``T.alloc_var`` variable (given 0 on every core first) and a bound on it."""

    dtype: str
    bound: float


@dataclass
class _Scope:
    names: list = field(default_factory=list)  # (Name, bound, reads per-core data)


@dataclass
class _Loop:
    var: str
    start: int
    extent: int
    kind: str = "serial"


class _Gen:
    def __init__(self, r: random.Random, shell: Batch, index: int, exclude: frozenset):
        self.r, self.shell, self.ex = r, shell, exclude
        self.shape, self.names = shell.shape, shell.names
        self.size = shell.size
        self.pre = f"p{index}_"
        self.index = index
        self.dtype = r.choice(("float32", "int32"))
        self.tensors: list[Tensor] = []
        self.bufs: dict[str, _Buf] = {}
        self.vars: dict[str, _Var] = {}
        self.inits: list = []
        self.loads: list = []
        self.used: set = set()
        self.scopes = [_Scope()]
        self.loops: list[_Loop] = []
        self.uniform = True
        self.par = False  # generating a T.Parallel body (see assign_unit)
        self.depth = 0
        self.count = itertools.count()
        self.input_values: dict = {}
        self.expect = ""  # the planted reason to refuse, if any (Program.expect)
        self.scratch: list = []  # buffers used within one unit only (not stored)
        self.guarded = False  # generating a comm op under an if
        self.frag_ok = "fragment-loop" not in exclude  # fragments beyond comm ops
        self.frag_reads: dict | None = None  # fragment -> its index in this statement
        self._evaluator: _Model | None = None
        if shell.check_races:
            self.used.add("check-races")
        if shell.launch == "1d" and len(self.shape) > 1:
            self.used.add("launch-1d")
        if list(self.names) != sorted(self.names):
            self.used.add("axis-order")
        if shell.mesh_form == "mesh":
            self.used.add("mesh-object")

    # helpers
    def on(self, feature: str, p: float) -> bool:
        if feature in self.ex or self.r.random() >= p:
            return False
        self.used.add(feature)
        return True

    def plant(self, feature: str, p: float) -> bool:
        """Whether to plant ``feature``'s reason to refuse (one per program)."""
        if self.expect or self.guarded or not self.on(feature, p):
            return False
        self.expect = PLANTED[feature]
        return True

    def fresh(self, kind: str) -> str:
        return f"{self.pre}{kind}{next(self.count)}"

    def const(self, v: int, dtype: str = "int32") -> Const:
        return Const(v, dtype)

    def clip_limit(self) -> int:
        return CLIP_LOOP if self.loops else CLIP_TOP

    # -- declarations ---------------------------------------------------------------
    def new_buf(self, shape: tuple, dtype: str | None = None, init: bool = True,
                fragment_ok: bool = True, scope: str = "") -> _Buf:
        dtype = dtype or self.dtype
        if not scope:
            scope = self.r.choice(("shared", "local"))
            if fragment_ok and self.on("fragment", 0.1):
                scope = "fragment"
            elif self.on("alloc-buffer", 0.08):
                scope = self.r.choice(("global", "default"))
            elif self.on("shared-dyn", 0.04):
                scope = "shared.dyn"
        decl = BufDecl(self.fresh("S"), tuple(shape), dtype, scope)
        b = _Buf(decl, 0, defined=init)
        self.bufs[decl.name] = b
        if init:
            self.inits.append(self.init_stmt(b))
        return b

    def init_stmt(self, b: _Buf) -> Assign | Fill:
        shape, dtype = b.decl.shape, b.decl.dtype
        if b.decl.scope in FILLABLE and self.on("fill", 0.25):
            v = self.r.randint(-3, 3)
            b.bound = abs(v)
            return Fill(b.decl.name, None if v == 0 and self.r.random() < 0.7 else
                        self.const(v, dtype))
        nest = tuple((n, e) for n, e in zip(("i", "j"), shape))
        idx = tuple(Name(n) for n, _ in nest)
        choice = self.r.random()
        par = (b.frag and not (self.frag_ok and self.on("fragment-loop", 0.3))) or (
            b.decl.scope in PARALLEL and self.on("parallel", 0.2))
        if choice < 0.3 or par:  # T.Parallel: no loop variable as a value
            v: object = self.const(self.r.randint(-2, 3), dtype)
            if par and choice >= 0.3:
                v = Bin("+", v, Cast(dtype, CoreId()) if dtype != "int32" else CoreId())
            b.bound = 3 + self.size
        else:
            terms: object = Bin("*", CoreId(), self.const(self.r.randint(1, 3)))
            for n, _ in nest:
                terms = Bin(self.r.choice(("+", "-")), terms, Name(n))
            v = terms if dtype == "int32" else Cast(dtype, terms)
            b.bound = 3 * self.size + 12
        return Assign(b.decl.name, idx, nest, v,
                      "parallel" if par else "serial" if b.frag else "grid")

    def new_view(self, b: _Buf, shape: tuple, kind: str, dtype: str = "",
                 offset: int = 0) -> _Buf:
        """A view of ``b``'s allocation (``kind``: reshape, view, decl) of ``shape``
        (``dtype``: another dtype, a ``T.view`` whose values are bits)."""
        a = b.alloc
        decl = BufDecl(self.fresh("V"), tuple(shape), dtype or a.decl.dtype, a.decl.scope,
                       parent=a.decl.name, view=kind, offset=offset)
        if decl.size + offset > a.decl.size:
            raise AssertionError(f"view {decl} larger than {a.decl}")
        v = _Buf(decl, 0, root=a)
        self.bufs[decl.name] = v
        return v

    def view_of(self, cands: list, rank: int, need: tuple | None = None,
                least: tuple | None = None, dtype: str = "") -> _Buf | None:
        """A new view of one of the allocations ``cands`` (defined, viewable) of rank
        ``rank`` (``need``: (dim, minimum extent); ``least``: minimum extents), as a
        reshape, a same-dtype view or a decl_buffer (``dtype``: a T.view of that
        dtype), or ``None``."""
        r = self.r
        kinds = [k for k, f in (("reshape", "reshape"), ("view", "view"),
                                ("decl", "decl-buffer")) if f not in self.ex]
        if dtype:
            kinds = ["view"] if "view-dtype" not in self.ex else []
        cands = [c for c in cands if c.root is None and not c.is_tensor and
                 c.decl.scope in VIEWABLE and c.defined]
        if not kinds or not cands:
            return None
        b = r.choice(cands)
        kind = r.choice(kinds)
        offset = 0
        size = b.decl.size
        if kind == "decl" and r.random() < 0.5:
            size = r.randint(1, b.decl.size)
            offset = r.randint(0, b.decl.size - size)
        shapes = [sh for sh in view_shapes(size, rank)
                  if (need is None or sh[need[0]] >= need[1]) and
                  (least is None or all(x >= y for x, y in zip(sh, least)))]
        if not shapes:
            return None
        self.used.add("view-dtype" if dtype else
                      {"reshape": "reshape", "view": "view", "decl": "decl-buffer"}[kind])
        return self.new_view(b, r.choice(shapes), kind, dtype, offset)

    def new_tensor(self, tile: tuple, dtype: str, role: str) -> Tensor:
        layout = self.r.choice(("grid", "linear", "blocked"))
        t = Tensor(self.fresh("X" if role == "in" else "Y"), tuple(tile), dtype, layout, role)
        self.tensors.append(t)
        return t

    def shape_draw(self, rank: int | None = None) -> tuple:
        rank = rank or self.r.choice((1, 1, 2, 2, 2))
        return tuple(self.r.choice((1, 2, 3, 4, 5, 6)) for _ in range(rank))

    # -- the program ----------------------------------------------------------------
    def program(self, seed_text: str) -> Program:
        for _ in range(self.r.choice((1, 1, 2))):
            self.load_input()
        n_comm = self.r.choice((1, 2, 2, 3, 3))
        body = self.units(n_comm, self.r.randint(1, 4))
        stores = self.stores()
        decls = tuple(b.decl for b in self.bufs.values() if not b.is_tensor) + \
            tuple(self.scratch)
        vars_ = tuple(VarDecl(n, v.dtype) for n, v in self.vars.items())
        return Program(self.index, tuple(self.tensors), decls, vars_,
                       tuple(self.inits + self.loads + body + stores), seed=seed_text,
                       features=frozenset(self.used), expect=self.expect)

    def inputs(self) -> dict:
        return dict(self.input_values)

    def load_input(self) -> None:
        dtype = self.dtype if self.r.random() < 0.85 else self.r.choice(("float32", "int32"))
        tile = self.shape_draw()
        t = self.new_tensor(tile, dtype, "in")
        nrng = np.random.default_rng(self.r.getrandbits(32))
        self.input_values[t.name] = nrng.integers(-3, 4, t.global_shape(self.shell)
                                                  ).astype(dtype)
        self.bufs[t.name] = _Buf(BufDecl(t.name, tile, dtype, "global"), 3, is_tensor=True)
        b = self.new_buf(tile, dtype, init=False, fragment_ok=False)  # local work needs one
        b.defined, b.bound = True, 3
        zero = tuple(self.const(0) for _ in tile)
        if self.r.random() < 0.5:
            self.loads.append(Copy(Region(t.name, zero, tile), Region(b.decl.name, zero, tile,
                                                                      whole=True)))
        else:
            nest = tuple((n, e) for n, e in zip(("i", "j"), tile))
            idx = tuple(Name(n) for n, _ in nest)
            self.loads.append(Assign(b.decl.name, idx, nest, Load(t.name, idx, dtype)))

    def stores(self) -> list:
        """Every allocation and variable into its own output tensor: into the core's
        tile, or (``fold-write``) into the tile of a permutation of the cores, or
        (planted ``race-write``) into a tile two cores write."""
        out = []
        allocs = [b for b in self.bufs.values() if not b.is_tensor and b.root is None]
        racy = self.r.randrange(len(allocs)) if allocs and self.plant("race-write", 0.03) \
            else -1
        for k, b in enumerate(allocs):
            if not b.defined:
                raise AssertionError(f"{b.decl.name} never written")
            t = self.new_tensor(b.decl.shape, b.decl.dtype, "out")
            zero = tuple(self.const(0) for _ in t.tile)
            owner = None
            if k == racy:
                owner = self.shared_owner()
            elif self.on("fold-write", 0.06):
                owner = self.core_perm()
            if self.r.random() < 0.5 or b.frag:
                out.append(Copy(Region(b.decl.name, zero, t.tile, whole=True),
                                Region(t.name, zero, t.tile, owner=owner)))
            else:
                nest = tuple((n, e) for n, e in zip(("i", "j"), t.tile))
                idx = tuple(Name(n) for n, _ in nest)
                out.append(Assign(t.name, idx, nest, Load(b.decl.name, idx, b.decl.dtype),
                                  owner=owner))
        for dtype in ("int32", "float32"):
            names = [n for n, v in self.vars.items() if v.dtype == dtype]
            if names:
                t = self.new_tensor((len(names),), dtype, "out")
                out += [Assign(t.name, (self.const(k),), (), Name(n, dtype))
                        for k, n in enumerate(names)]
        return out

    # -- blocks -----------------------------------------------------------------------
    def units(self, n_comm: int, n_other: int) -> list:
        kinds = ["comm"] * n_comm + ["other"] * n_other
        self.r.shuffle(kinds)
        out: list = []
        while kinds:
            kind = kinds.pop()
            if kind == "other":
                out += self.other()
                continue
            take = 1
            if "comm" in kinds and self.r.random() < 0.35:
                kinds.remove("comm")
                take = 2
            if self.depth < 2 and (take == 2 or self.r.random() < 0.45):
                out += self.comm_loop(take)
            else:
                out += [s for _ in range(take) for s in self.comm_unit()]
        return out

    def comm_loop(self, n_comm: int) -> list:
        kind = "serial"
        if self.on("pipelined", 0.3):
            kind = "pipelined"
        elif self.on("unroll", 0.1):
            kind = "unroll"
        start = 1 if self.r.random() < 0.15 else 0
        extent = self.r.choice((1, 2, 2, 3, 3, 4))
        var = self.fresh("k")
        self.loops.append(_Loop(var, start, extent, kind))
        self.scopes.append(_Scope())
        self.scopes[-1].names.append((Name(var), start + extent, False))
        self.depth += 1
        body = self.units(n_comm, self.r.randint(0, 2))
        self.depth -= 1
        self.scopes.pop()
        self.loops.pop()
        return [For(var, start, extent, kind, tuple(body), stages=self.r.choice((2, 3)))]

    def comm_unit(self) -> list:
        """One comm op, possibly under a uniform condition on a loop variable."""
        pre = [lp for lp in self.loops if lp.start + lp.extent <= max(self.shape)]
        if pre and "broadcast" not in self.ex and self.on("prefetch-root", 0.1):
            lp = self.r.choice(pre)
            n = lp.start + lp.extent
            self.guarded = True  # a planted reason must run: none under an if
            body = self.comm_op("broadcast", prefetch=lp)
            self.guarded = False
            return [If(Bin("<", Bin("+", Name(lp.var), self.const(1)), self.const(n)),
                       tuple(body))]
        data = self.data_value() if not self.expect and "data-if" not in self.ex and \
            self.r.random() < 0.02 else None
        if data is not None and self.plant("data-if", 1.0):
            cond = Bin(self.r.choice((">=", "<", "!=")), data,
                       self.const(self.r.randint(0, 2)))
            return [If(cond, tuple(self.comm_op()))]
        if self.loops and self.on("uniform-if", 0.3):
            loop = self.r.choice(self.loops)
            k = Name(loop.var)
            cond = self.r.choice((
                Bin("<", k, self.const(self.r.randint(loop.start, loop.start + loop.extent))),
                Bin("==", Bin("%", k, self.const(2)), self.const(self.r.randint(0, 1))),
                Bin("!=", k, self.const(self.r.randint(loop.start, loop.start + loop.extent))),
            ))
            self.guarded = True
            then = self.comm_op()
            orelse = self.comm_op() if self.r.random() < 0.3 else []
            self.guarded = False
            return [If(cond, tuple(then), tuple(orelse))]
        return self.comm_op()

    def other(self) -> list:
        x = self.r.random()
        if x < 0.05 and "gemm" not in self.ex:
            return self.gemm_unit()
        if x < 0.08 and "fill" not in self.ex:
            return self.fill_unit()
        if x < 0.14:
            return self.remote_unit()
        if x < 0.17:
            return self.scratch_unit()
        r = self.r.random()
        if r < 0.3:
            return self.assign_unit()
        if r < 0.42:
            return self.let_unit()
        if r < 0.54:
            return self.var_unit()
        if r < 0.64 and "core-if" not in self.ex:
            return self.core_if()
        if r < 0.72:
            return self.copy_unit()
        if r < 0.8 and "let-after-write" not in self.ex:
            return self.let_after_write()
        if r < 0.9:
            return self.inner_loop()
        return self.assign_unit()

    # -- names in scope ----------------------------------------------------------------
    def visible(self, dtype: str | None = None) -> list:
        """``(Name, bound, reads data)`` of the lets, loop and ``T.alloc_var``
        variables in scope."""
        out = [x for s in self.scopes for x in s.names]
        out += [(Name(n, v.dtype), v.bound, True) for n, v in self.vars.items()]
        return [x for x in out if dtype is None or x[0].dtype == dtype]

    def bind(self, name: Name, bound: float, data: bool) -> None:
        """``name`` visible in the current block (``data``: its value reads per-core
        data, so it may not place comm regions or roots)."""
        self.scopes[-1].names.append((name, bound, data))

    # -- expressions -------------------------------------------------------------------
    def int_leaf(self, nest: tuple = (), data: bool = True) -> tuple:
        """An int32 expression of the core, loop variables, lets and variables
        (``data``: also variables and lets of per-core data)."""
        r = self.r
        opts = [lambda: (Core(r.randrange(len(self.shape))), max(self.shape)),
                lambda: (CoreId(), self.size),
                lambda: (self.const(r.randint(0, 4)), 4)]
        if nest and not self.par:
            opts.append(lambda: (Name(r.choice(nest)[0]), max(e for _, e in nest)))
        names = [x for x in self.visible("int32") if data or not x[2]]
        if names:
            opts.append(lambda: r.choice(names)[:2])
        e, b = r.choice(opts)()
        if r.random() < 0.4:
            e2, b2 = r.choice(opts)()
            op = r.choice(("+", "-", "*", "%", "//"))
            if op in ("%", "//"):
                d = r.randint(2, 4)
                return Bin(op, Bin("+", e, e2), self.const(d)), (d if op == "%" else b + b2)
            e, b = Bin(op, e, e2), (b * b2 if op == "*" else b + b2)
        return e, b

    def values(self, e) -> np.ndarray:
        """Every value ``e`` (of the core and the enclosing loops' variables, no data)
        takes, as the model computes it (narrowing casts wrap)."""
        if self._evaluator is None:
            self._evaluator = _Model(self.shell.with_programs(()),
                                     Program(self.index, (), (), (), ()), {})
        grids = np.meshgrid(*[np.arange(lp.start, lp.start + lp.extent)
                              for lp in self.loops], indexing="ij")
        env = {lp.var: g.ravel() for lp, g in zip(self.loops, grids)}
        n = int(np.prod([lp.extent for lp in self.loops], dtype=np.int64))
        m = self._evaluator
        return np.concatenate([np.broadcast_to(np.asarray(m.ev(e, c, env), dtype=np.int64),
                                               (n,)) for c in m.cores])

    def plain_leaf(self, uniform: bool = False, nest: tuple = ()) -> object:
        """A core coordinate, the core id, an enclosing loop's variable or a nest
        variable (``uniform``: loop variables only; ``None`` if there is none). Never
        one TileLang itself turns into a constant (a loop of one step, an unrolled
        loop, a mesh axis of size 1): TVM refuses to fold a narrowing cast of a
        constant that wraps (its literal would be out of range)."""
        r = self.r
        opts = [Name(lp.var) for lp in self.loops if lp.extent > 1 and lp.kind != "unroll"]
        if not uniform:
            opts += [Core(a) for a in range(len(self.shape)) if self.shape[a] > 1]
            opts += [CoreId()]
            opts += [Name(v) for v, e in nest if e > 1 and not self.par]
        return r.choice(opts) if opts else None

    def narrow(self, x) -> object:
        """``T.Cast(t, x * M + A) // D`` for a narrowing type ``t`` and a multiplier
        ``M`` that makes it wrap for small ``x`` (an int32 expression)."""
        r = self.r
        nt = r.choice(list(NARROW))
        m = r.choice(NARROW_SCALE[nt])
        inner: object = Bin("*", x, self.const(m))
        if r.random() < 0.4:
            inner = Bin("+", inner, self.const(r.randint(-m, m)))
        return Bin(r.choice(("//", "//", "%")), Cast(nt, inner),
                   self.const(r.choice((m, max(1, m // 2), 3, 7))))

    def narrow_in(self, lo: int, hi: int, uniform: bool = False) -> object | None:
        """A narrowing-cast expression whose values (wrapped) all lie in ``[lo, hi]``:
        as drawn when they do, else reduced ``% (hi - lo + 1)`` (``None`` without a
        variable to cast)."""
        x = self.plain_leaf(uniform)
        if x is None:
            return None
        e = self.narrow(x)
        v = self.values(e)
        if v.min() >= lo and v.max() <= hi:
            return e
        e = Bin("%", e, self.const(hi - lo + 1))
        return e if lo == 0 else Bin("+", e, self.const(lo))

    def wrapped_out(self, hi: int, uniform: bool = False) -> object | None:
        """A narrowing-cast expression whose int64 value lies in ``[0, hi]`` for every
        core and loop step, while its wrapped value (the C code's) leaves that range
        for some: a start or root the layer must refuse (``None`` if none is found)."""
        r = self.r
        xs = [Name(lp.var) for lp in self.loops if lp.start + lp.extent - 1 >= 2 and
              lp.extent > 1 and lp.kind != "unroll"]
        if not uniform:
            xs += [Core(a) for a in range(len(self.shape)) if self.shape[a] >= 3]
            xs += [CoreId()] if self.size >= 3 else []
        for _ in range(8):
            if not xs:
                return None
            x = r.choice(xs)
            nt = r.choice(list(NARROW))
            m = r.choice(NARROW_SCALE[nt])
            e = Bin("//", Cast(nt, Bin("*", x, self.const(m))), self.const(m))
            if r.random() < 0.3:
                e = Bin("+", e, self.const(r.randint(0, 1)))
            wrapped, plain = self.values(e), self.values(strip_narrow(e))
            if plain.min() >= 0 and plain.max() <= hi and (
                    wrapped.min() < 0 or wrapped.max() > hi):
                return e
        return None

    def fold_nest(self, v, n: int) -> object | None:
        """``((v // a + b) % c) * a + (v % a + e) % a`` for ``n = a * c``: a
        permutation of ``[0, n)`` when ``v`` runs over it, in the nest of ``//`` and
        ``%`` that stock TileLang's simplifier folds wrongly (``None`` if ``n`` is
        prime)."""
        r = self.r
        pairs = [(a, n // a) for a in range(2, n) if n % a == 0]
        if not pairs:
            return None
        a, c = r.choice(pairs)
        b, e = r.randrange(c), r.randrange(a)
        hi: object = Bin("//", v, self.const(a))
        hi = Bin("%", Bin("+", hi, self.const(b)) if b else hi, self.const(c))
        lo: object = Bin("%", v, self.const(a))
        lo = Bin("%", Bin("+", lo, self.const(e)), self.const(a)) if e else lo
        return Bin("+", Bin("*", hi, self.const(a)), lo)

    def core_perm(self) -> object:
        """The linear id of another core: a permutation of the cores (a fold of the
        core id, or a rotation)."""
        f = self.fold_nest(CoreId(), self.size) if self.r.random() < 0.7 else None
        if f is None:
            f = Bin("%", Bin("+", CoreId(), self.const(self.r.randrange(1, self.size))),
                    self.const(self.size))
        return f

    def shared_owner(self) -> object:
        """The linear id of a core, the same for two cores or more (a planted race)."""
        n = self.size
        return self.r.choice((
            Bin("//", CoreId(), self.const(2)),
            Bin("min", Bin("+", CoreId(), self.const(1)), self.const(n - 1)),
            Bin("%", CoreId(), self.const(max(n - 1, 1))),
            Bin("*", Bin("//", CoreId(), self.const(2)), self.const(2))))

    def frag_index(self, shape: tuple, nest: tuple) -> tuple | None:
        """Indices into a fragment that TileLang's CPU back end takes: each either
        0 for a dim of 1, or a nest variable of extent 2 or more, offset or rotated
        (``None`` if the nest has none)."""
        idx = []
        for n in shape:
            fits = [(v, e) for v, e in nest if 2 <= e <= n]
            if n == 1:
                idx.append(self.const(0))
            elif not fits:
                return None
            else:
                v, e = self.r.choice(fits)
                if e == n and self.r.random() < 0.3:
                    idx.append(Bin("%", Bin("+", Name(v), self.const(self.r.randrange(n))),
                                   self.const(n)))
                else:
                    off = self.r.randint(0, n - e)
                    idx.append(Name(v) if off == 0 else Bin("+", Name(v), self.const(off)))
        return tuple(idx)

    def index_into(self, shape: tuple, nest: tuple) -> tuple:
        """In-range indices into a buffer of ``shape`` from the nest variables."""
        idx = []
        for n in shape:
            fits = [(v, e) for v, e in nest if e <= n]
            c = self.r.random()
            if not self.par and c < 0.12 and n > 1 and self.on("fold-index", 0.5):
                whole = [(v, e) for v, e in nest if e == n]
                f = self.fold_nest(Name(self.r.choice(whole)[0]), n) if whole else None
                if f is None:
                    f = self.fold_nest(CoreId(), self.size)
                    if f is not None and self.size > n:
                        f = Bin("%", f, self.const(n))
                if f is not None:
                    idx.append(f)
                    continue
            if not self.par and c < 0.2 and n > 1 and self.on("narrow-index", 0.5):
                x = self.plain_leaf(nest=nest)
                if x is not None:
                    idx.append(Bin("%", self.narrow(x), self.const(n)))
                    continue
            if fits and c < 0.6:
                v, e = self.r.choice(fits)
                off = self.r.randint(0, n - e)
                idx.append(Name(v) if off == 0 else Bin("+", Name(v), self.const(off)))
            elif c < 0.8 and n > 1 and not self.par:
                e, _ = self.int_leaf(nest)
                idx.append(Bin("%", e, self.const(n)))  # floor modulo: in range
            else:
                idx.append(self.const(self.r.randint(0, n - 1)))
        return tuple(idx)

    def value(self, dtype: str, nest: tuple = (), target: tuple | None = None,
              depth: int = 0) -> tuple:
        """An expression of ``dtype`` and a bound on its magnitude. ``target``
        ``(buf, index)``: the element being written, the only element of that buffer
        the expression may read (no loop-carried dependence)."""
        r = self.r
        if depth >= 2 or r.random() < 0.35:
            return self.leaf(dtype, nest, target)
        if self.par:  # TileLang's CPU vectors have no comparisons, min or max
            op = r.choice(("+", "-", "*"))
        else:
            op = r.choice(("+", "-", "*", "max", "min", "select") +
                          (("//", "%") if dtype == "int32" else ()))
        a, ba = self.value(dtype, nest, target, depth + 1)
        if op in ("//", "%"):
            d = r.randint(2, 5)
            return Bin(op, a, self.const(d)), (ba if op == "//" else d)
        if op == "select" and self.on("select", 0.7):
            c, _ = self.int_leaf(nest)
            cond = Bin(r.choice(("<", "==", ">=", "!=")), c, self.const(r.randint(0, 3)))
            b, bb = self.value(dtype, nest, target, depth + 1)
            return Select(cond, a, b), max(ba, bb)
        if op == "select":
            op = "+"
        b, bb = self.value(dtype, nest, target, depth + 1)
        if op == "*":
            bound = ba * bb
        elif op in ("+", "-"):
            bound = ba + bb
        else:
            bound = max(ba, bb)
        return Bin(op, a, b), bound

    def leaf(self, dtype: str, nest: tuple, target) -> tuple:
        r = self.r
        c = r.random()
        if c < 0.2:
            return self.const(r.randint(-3, 5), dtype), 5
        if c < 0.6:
            tb = self.bufs[target[0]] if target is not None else None
            srcs = [b for b in self.bufs.values() if b.defined and b.decl.dtype == dtype
                    and not b.bits and (tb is None or b.alloc is not tb.alloc)
                    and (not b.frag or (self.frag_reads is not None and nest and
                                        b.decl.name not in self.frag_reads))
                    and not (self.par and (b.decl.scope == "local" or b.frag))]
            if tb is not None and r.random() < 0.4 and (self.par or not tb.frag or
                                                        self.frag_reads is not None):
                return Load(target[0], target[1], dtype), tb.bound
            if srcs:
                b = r.choice(srcs)
                if b.frag:
                    idx = self.frag_index(b.decl.shape, nest)
                    if idx is None:
                        return self.const(r.randint(-3, 5), dtype), 5
                    self.used.add("fragment-loop")
                    self.frag_reads[b.decl.name] = idx
                    return Load(b.decl.name, idx, dtype), b.bound
                return Load(b.decl.name, self.index_into(b.decl.shape, nest), dtype), b.bound
        if c < 0.75:
            names = self.visible(dtype)
            if names:
                return r.choice(names)[:2]
        e, b = self.int_leaf(nest)
        return (e if dtype == "int32" else Cast(dtype, e)), b

    def clipped(self, e, bound: float, dtype: str) -> tuple:
        if bound <= self.clip_limit() or self.par:
            return e, bound
        c = self.r.randint(3, 12)
        return Bin("max", Bin("min", e, self.const(c, dtype)), self.const(-c, dtype)), c

    # -- local statements --------------------------------------------------------------
    def target_region(self, shape: tuple, frag: bool = False) -> tuple:
        """A nest over part of ``shape`` and the target indices (offset or rotated;
        ``frag``: indices a fragment takes, see :meth:`frag_index`)."""
        if frag:  # each dim by its own variable, of extent 2 or more unless the dim is 1
            nest, idx = [], []
            for d, n in enumerate(shape):
                v = ("i", "j", "l")[d]
                e = 1 if n == 1 else self.r.randint(2, n)
                off = self.r.randint(0, n - e)
                nest.append((v, e))
                idx.append(Name(v) if off == 0 else Bin("+", Name(v), self.const(off)))
            return tuple(nest), tuple(idx)
        nest, idx = [], []
        for d, n in enumerate(shape):
            e = self.r.randint(1, n)
            v = ("i", "j", "l")[d]
            nest.append((v, e))
            if e == n and n > 1 and not self.par and self.r.random() < 0.1 and \
                    self.on("fold-index", 0.5):  # a permutation of the dim
                f = self.fold_nest(Name(v), n)
                if f is not None:
                    idx.append(f)
                    continue
            if e == n and n > 1 and not self.par and self.r.random() < 0.2:  # rotated
                idx.append(Bin("%", Bin("+", Name(v), self.int_leaf()[0]), self.const(n)))
                continue
            room = n - e
            if room and not self.par and self.r.random() < 0.3:
                off, _ = self.int_leaf()
                idx.append(Bin("+", Name(v), Bin("%", off, self.const(room + 1))))
            else:
                off = self.r.randint(0, room)
                idx.append(Name(v) if off == 0 else Bin("+", Name(v), self.const(off)))
        return tuple(nest), tuple(idx)

    def writable(self, tensors: bool = False, fragments: bool = False) -> list:
        """Defined buffers and views (and input tiles), no view of another dtype.
        Fragments only where ``fragments``: TileLang's CPU back end takes them in
        whole-buffer ``T.Parallel`` loops, ``T.copy``, and serial loops that index
        them by loop variables only (``fragment-loop``)."""
        return [b for b in self.bufs.values() if b.defined and not b.bits and
                (tensors or not b.is_tensor) and (fragments or not b.frag)]

    def assign_unit(self, buf: _Buf | None = None) -> list:
        """An elementwise update of (part of) a buffer. In a ``T.Parallel`` nest (shared
        buffers) loop variables only index (TileLang's CPU back end cannot compile them
        as vector values, and local buffers cannot be indexed by them)."""
        b = buf or self.r.choice(self.writable(fragments=self.frag_ok and
                                               self.r.random() < 0.5))
        loop = "grid"
        if b.frag:
            self.used.add("fragment-loop")
            loop = "serial" if self.r.random() < 0.5 else "grid"
        elif self.r.random() < 0.3:
            loop = "serial"
        elif b.decl.scope in PARALLEL and self.on("parallel", 0.15):
            loop = "parallel"
        self.par = loop == "parallel"
        nest, idx = self.target_region(b.decl.shape, frag=b.frag)
        if self.r.random() < 0.15 and not self.par and not b.frag:  # one element
            nest = ()
            idx = tuple(self.const(self.r.randint(0, n - 1)) for n in b.decl.shape)
        if self.frag_ok and not self.par:
            self.frag_reads = {b.decl.name: idx} if b.frag else {}
        v, bound = self.value(b.decl.dtype, nest, (b.decl.name, idx))
        v, bound = self.clipped(v, bound, b.decl.dtype)
        self.par = False
        self.frag_reads = None
        b.bound = max(b.bound, bound)
        return [Assign(b.decl.name, idx, nest, v, loop)]

    def let_unit(self) -> list:
        if "let" in self.ex:
            return self.assign_unit()
        self.used.add("let")
        name = self.fresh("t")
        if self.r.random() < 0.6:  # of the core and loop variables only
            e, bound = self.int_leaf(data=False)
            dtype, data = "int32", False
        else:
            dtype, data = self.dtype, True
            e, bound = self.value(dtype)
            e, bound = self.clipped(e, bound, dtype)
        self.bind(Name(name, dtype), bound, data)
        return [Let(name, e)] + self.assign_unit()

    def var_unit(self) -> list:
        if "var" in self.ex:
            return self.assign_unit()
        self.used.add("var")
        names = [n for n in self.vars]
        if names and self.r.random() < 0.5:
            name = self.r.choice(names)
        else:
            name = self.fresh("v")
            dtype = self.r.choice((self.dtype, "int32"))
            self.vars[name] = _Var(dtype, 0)
            self.inits.append(SetVar(name, self.const(0, dtype)))  # defined on every core
        var = self.vars[name]
        dtype = var.dtype
        e, bound = self.value(dtype)
        if self.r.random() < 0.5:  # update from itself
            e, bound = Bin("+", Name(name, dtype), e), bound + var.bound
        e, bound = self.clipped(e, bound, dtype)
        var.bound = max(var.bound, bound)
        return [SetVar(name, e)]

    def core_if(self) -> list:
        self.used.add("core-if")
        r = self.r
        c, _ = self.int_leaf()
        if r.random() < 0.3:
            data = [b for b in self.writable() if b.decl.dtype == "int32" and
                    b.decl.scope != "fragment"]
            if data:
                b = r.choice(data)
                c = Load(b.decl.name, self.index_into(b.decl.shape, ()), "int32")
        cond = Bin(r.choice(("<", "==", ">=", "!=")), c, self.const(r.randint(0, 3)))
        was = self.uniform
        self.uniform = False
        then = self.assign_unit() if r.random() < 0.6 else self.var_unit()
        orelse = self.assign_unit() if r.random() < 0.4 else []
        self.uniform = was
        return [If(cond, tuple(then), tuple(orelse))]

    def copy_unit(self) -> list:
        """``T.copy`` between buffers, or from the core's tile of an input tensor (in a
        loop, as a GEMM's k loop loads its next tile)."""
        bufs = self.writable(fragments=self.frag_ok and self.r.random() < 0.3)
        tiles = [b for b in self.bufs.values() if b.is_tensor]
        a = self.r.choice(tiles if tiles and self.r.random() < 0.4 else bufs)
        same_dtype = [b for b in bufs if b.decl.dtype == a.decl.dtype and
                      len(b.decl.shape) == len(a.decl.shape) and b.alloc is not a.alloc]
        if not same_dtype:
            return self.assign_unit(a)
        b = self.r.choice(same_dtype)
        ext = tuple(self.r.randint(1, min(x, y)) for x, y in zip(a.decl.shape, b.decl.shape))
        if a.frag or b.frag:  # offsets into a fragment: static ones only
            self.used.add("fragment-loop")
        src = Region(a.decl.name, self.starts(a.decl.shape, ext, static=a.frag, copy=True),
                     ext)
        dst = Region(b.decl.name, self.starts(b.decl.shape, ext, static=b.frag, copy=True),
                     ext)
        b.bound = max(b.bound, a.bound)
        return [Copy(src, dst)]

    def let_after_write(self) -> list:
        """``t = B[i]; B[i] = ...; C[...] = t``: a let of per-core data (a buffer or the
        core's input tile) read after the data changed."""
        self.used.add("let-after-write")
        r = self.r
        pool = [x for x in self.writable(tensors="global-write" not in self.ex)
                if x.decl.scope != "fragment"]
        if not pool:
            return self.assign_unit()
        b = r.choice(pool)
        if b.is_tensor:
            self.used.add("global-write")
        dtype = b.decl.dtype
        idx = tuple(self.const(r.randint(0, n - 1)) for n in b.decl.shape)
        name = self.fresh("t")
        out: list = [Let(name, Load(b.decl.name, idx, dtype))]
        self.bind(Name(name, dtype), b.bound, True)
        newv, nb = self.value(dtype)
        newv, nb = self.clipped(newv, nb, dtype)
        out.append(Assign(b.decl.name, idx, (), newv))
        b.bound = max(b.bound, nb)
        users = [x for x in self.writable() if x.decl.dtype == dtype and
                 x.decl.scope != "fragment"] or [b]
        u = r.choice(users)
        nest, tidx = self.target_region(u.decl.shape)
        use = Name(name, dtype)
        other, ob = self.value(dtype, nest, (u.decl.name, tidx))
        val, vb = self.clipped(Bin(r.choice(("+", "-", "max")), use, other), b.bound + ob,
                               dtype)
        u.bound = max(u.bound, vb)
        out.append(Assign(u.decl.name, tidx, nest, val))
        return out

    def scratch_unit(self) -> list:
        """A buffer used within one superstep only: written, then read into another
        buffer at once (``shared-dyn``: of the default ``T.alloc_shared`` scope, which
        TileLang's C back end allows once per kernel; else of any scope)."""
        r = self.r
        users = self.writable()
        if not users:
            return self.assign_unit()
        u = r.choice(users)
        scope = "shared.dyn" if self.on("shared-dyn", 0.6) else \
            r.choice(("shared", "local", "global"))
        if scope == "global" and not self.on("alloc-buffer", 1.0):
            scope = "local"
        b = self.new_buf(u.decl.shape, u.decl.dtype, init=False, scope=scope)
        nest = tuple(zip(("i", "j"), u.decl.shape))
        idx = tuple(Name(v) for v, _ in nest)
        v, bound = self.value(u.decl.dtype, nest)
        v, bound = self.clipped(v, bound, u.decl.dtype)
        out = [Assign(b.decl.name, idx, nest, v),
               Assign(u.decl.name, idx, nest, Load(b.decl.name, idx, u.decl.dtype),
                      "serial" if r.random() < 0.5 else "grid")]
        u.bound = max(u.bound, bound)
        del self.bufs[b.decl.name]  # nothing else touches it, and it is not stored
        self.scratch.append(b.decl)
        return out

    def fill_unit(self) -> list:
        """``T.fill`` / ``T.clear`` of a local or ``T.alloc_buffer`` allocation."""
        bufs = [b for b in self.writable() if b.root is None and b.decl.scope in FILLABLE]
        if not bufs:
            return self.assign_unit()
        self.used.add("fill")
        b = self.r.choice(bufs)
        if self.r.random() < 0.3:
            b.bound = max(b.bound, 0)
            return [Fill(b.decl.name)]
        e, bound = self.int_leaf(data=False)
        e, bound = self.clipped(e, bound, "int32")
        b.bound = max(b.bound, bound)
        return [Fill(b.decl.name, e if b.decl.dtype == "int32" else Cast(b.decl.dtype, e))]

    def gemm_unit(self) -> list:
        """``C += A @ B`` (``T.gemm``) on new shared operands filled with clipped
        per-core data, into a fragment, local or ``T.alloc_buffer`` accumulator, then
        maybe all-reduced over some mesh axes (a K-split GEMM)."""
        r, dt = self.r, self.dtype
        self.used.add("gemm")
        m, k, n = r.randint(1, 4), r.randint(1, 4), r.randint(1, 4)
        out: list = []
        ops = []
        for shape in ((m, k), (k, n)):
            b = self.new_buf(shape, dt, init=False, scope="shared")
            nest = tuple(zip(("i", "j"), shape))
            idx = tuple(Name(v) for v, _ in nest)
            v, _ = self.value(dt, nest)
            b.defined = True
            out.append(Assign(b.decl.name, idx, nest, Bin("max", Bin("min", v, self.const(
                2, dt)), self.const(-2, dt))))
            b.bound = 2
            ops.append(b)
        scope = r.choice(("fragment", "local", "global")) if self.frag_ok else \
            r.choice(("local", "global"))
        c = self.new_buf((m, n), dt, init=scope == "fragment", scope=scope)
        if scope != "fragment":
            c.defined, c.bound = True, 0
            out.append(Fill(c.decl.name))
        out.append(Gemm(ops[0].decl.name, ops[1].decl.name, c.decl.name))
        c.bound += 4 * k
        axes = self.axes()
        group = int(np.prod([self.shape[a] for a in axes]))
        if "all_reduce" not in self.ex and r.random() < 0.5 and c.bound * group < 2 ** 12:
            self.used.add("all_reduce")
            whole = Region(c.decl.name, (self.const(0),) * 2, (m, n), whole=True)
            out.append(Comm("all_reduce", whole, whole, axes, (("reduction", "sum"),),
                            axis_form=self.axis_form()))
            c.bound *= group
        return out

    def remote_unit(self) -> list:
        """A read of another core's tile of a new input tensor: one no core writes
        (``remote-read``), one its owner wrote before a barrier (``remote-read``, at
        top level only), or one its owner writes in the same superstep (planted
        ``race-read``)."""
        r = self.r
        race = self.plant("race-read", 0.12)
        if not race and not self.on("remote-read", 0.7):
            return self.assign_unit()
        dt = r.choice(("int32", self.dtype))
        tile = self.shape_draw()
        t = self.new_tensor(tile, dt, "in")
        self.input_values[t.name] = np.random.default_rng(r.getrandbits(32)).integers(
            -3, 4, t.global_shape(self.shell)).astype(dt)
        self.bufs[t.name] = _Buf(BufDecl(t.name, tile, dt, "global"), 3, is_tensor=True)
        if race:  # (a core other than the reader)
            owner = Bin("%", Bin("+", CoreId(), self.const(r.randrange(1, self.size))),
                        self.const(self.size))
        else:
            owner = r.choice((self.core_perm(), self.const(r.randrange(self.size)),
                              Bin("%", Bin("+", CoreId(), self.const(1)),
                                  self.const(self.size))))
        pre: list = []
        if "var" not in self.ex and r.random() < 0.3:  # an owner the layer reads from
            name = self.fresh("v")  # memory: only a run-time check can see a race
            self.used.add("var")
            self.vars[name] = _Var("int32", self.size)
            self.inits.append(SetVar(name, self.const(0)))
            pre, owner = [SetVar(name, owner)], Name(name)
        write: list = []
        barrier = not race and not self.loops and self.uniform and r.random() < 0.5
        if race or barrier:  # the owner writes its whole tile first
            nest = tuple(zip(("i", "j"), tile))
            idx = tuple(Name(v) for v, _ in nest)
            v, bound = self.int_leaf(nest, data=False)
            v, bound = self.clipped(v, bound, "int32")
            write = [Assign(t.name, idx, nest, v if dt == "int32" else Cast(dt, v))]
            self.bufs[t.name].bound = max(3, bound)
            if barrier:
                self.used.add("barrier")
                write.append(Comm("barrier", None, None, None, axis_form=self.axis_form()))
        users = [b for b in self.writable() if b.decl.dtype == dt] or \
            [self.new_buf(self.shape_draw(), dt, fragment_ok=False)]
        u = r.choice(users)
        same = [b for b in users if len(b.decl.shape) == len(tile)]
        if same and r.random() < 0.3:  # a T.copy of part of the other core's tile
            u = r.choice(same)
            ext = tuple(r.randint(1, min(x, y)) for x, y in zip(tile, u.decl.shape))
            src = Region(t.name, self.starts(tile, ext, static=True), ext, owner=owner)
            dst = Region(u.decl.name, self.starts(u.decl.shape, ext, copy=True), ext)
            u.bound = max(u.bound, self.bufs[t.name].bound)
            del self.bufs[t.name]
            read = [Copy(src, dst)]
            return pre + (read + write if race and r.random() < 0.5 else write + read)
        nest, tidx = self.target_region(u.decl.shape)
        load = Load(t.name, self.index_into(tile, nest), dt, owner=owner)
        val, vb = load, self.bufs[t.name].bound
        if r.random() < 0.5:
            other, ob = self.value(dt, nest, (u.decl.name, tidx))
            val, vb = self.clipped(Bin(r.choice(("+", "-", "max")), load, other), vb + ob, dt)
        u.bound = max(u.bound, vb)
        read = [Assign(u.decl.name, tidx, nest, val)]
        del self.bufs[t.name]  # no other statement touches the tensor
        return pre + (read + write if race and r.random() < 0.5 else write + read)

    def inner_loop(self) -> list:
        """A comm-free serial loop whose body uses its variable."""
        var = self.fresh("k")
        extent = self.r.randint(1, 3)
        self.loops.append(_Loop(var, 0, extent))
        self.scopes.append(_Scope())
        self.bind(Name(var), extent, False)
        body = self.assign_unit()
        if self.r.random() < 0.4:
            body += self.var_unit() if self.r.random() < 0.5 else self.let_unit()
        self.scopes.pop()
        self.loops.pop()
        return [For(var, 0, extent, "serial", tuple(body))]

    # -- comm ops ------------------------------------------------------------------------
    def axes(self) -> tuple:
        n = len(self.shape)
        k = self.r.randint(1, n)
        return tuple(self.r.sample(range(n), k))

    def starts(self, shape: tuple, ext: tuple, static: bool = False, copy: bool = False
               ) -> tuple:
        """Static, loop-dependent or core-dependent starts of an ``ext`` region
        (``static``: constants only; ``copy``: a ``T.copy``'s, else a comm op's)."""
        out = []
        for n, e in zip(shape, ext):
            room = n - e
            c = self.r.random()
            fit = [lp for lp in self.loops if lp.start + lp.extent - 1 <= room]
            if static or not room:
                out.append(self.const(self.r.randint(0, room)))
                continue
            if self.loops and c < 0.1 and self.on("fold-copy", 0.6):
                f = self.fold_start(room)
                if f is not None:
                    out.append(f)
                    continue
            if c < 0.18 and self.on("narrow-index" if copy else "narrow-start", 0.6):
                f = self.narrow_in(0, room)
                if f is not None:
                    out.append(f)
                    continue
            if room and fit and c < 0.3 and self.on("loop-region", 0.7):
                lp = self.r.choice(fit)
                base = self.r.randint(0, room - (lp.start + lp.extent - 1))
                s = Name(lp.var)
                out.append(s if base == 0 else Bin("+", s, self.const(base)))
            elif room and c < 0.4 and self.on("core-region", 0.5):
                e2, _ = self.int_leaf(data=False)
                out.append(Bin("%", e2, self.const(room + 1)))
            else:
                out.append(self.const(self.r.randint(0, room)))
        return tuple(out)

    def fold_start(self, room: int) -> object | None:
        """``(s % a) * m + (s + b) % c`` of a loop variable ``s``, if it stays in
        ``[0, room]`` (stock TileLang's copy lowering folds such starts wrongly)."""
        r = self.r
        for _ in range(4):
            s = Name(r.choice(self.loops).var)
            a, m, b, c = r.choice((2, 3)), r.choice((1, 2)), r.randrange(3), r.choice((2, 3))
            plus = Bin("+", s, self.const(b)) if b else s
            e = Bin("+", Bin("*", Bin("%", s, self.const(a)), self.const(m)),
                    Bin("%", plus, self.const(c)))
            v = self.values(e)
            if v.min() >= 0 and v.max() <= room:
                return e
        return None

    def pick_src(self, rank: int | None, axis_need: tuple | None = None,
                 bits: str = "") -> _Buf:
        """A defined buffer of the program's dtype (rank ``rank``), a new view of one,
        or a new one; ``axis_need``: (tensor axis, minimum extent) for splitting ops;
        ``bits``: a view of dtype ``bits`` of a buffer of the program's dtype."""
        r = self.r
        allocs = [b for b in self.writable() if b.decl.dtype == self.dtype]
        if bits or r.random() < 0.15:
            v = self.view_of(allocs, rank or r.choice((1, 2)), axis_need, dtype=bits)
            if v is not None:
                return v
        cands = [b for b in self.writable(fragments=True) if b.decl.dtype == self.dtype and
                 (rank is None or len(b.decl.shape) == rank) and
                 (axis_need is None or (len(b.decl.shape) > axis_need[0] and
                                        b.decl.shape[axis_need[0]] >= axis_need[1]))]
        if cands and r.random() < 0.75 and not bits:
            return r.choice(cands)
        shape = list(self.shape_draw(rank))
        if axis_need is not None:
            while len(shape) <= axis_need[0]:
                shape.append(r.randint(1, 3))
            shape[axis_need[0]] = max(shape[axis_need[0]], axis_need[1])
        b = self.new_buf(tuple(shape), fragment_ok=not bits)
        if bits:
            self.used.add("view-dtype")
            return self.new_view(b, b.decl.shape, "view", bits)
        return b

    def comm_op(self, op: str | None = None, prefetch: _Loop | None = None) -> list:
        r = self.r
        ops = [o for o in OPS if o not in self.ex]
        weights = [w for o, w in zip(OPS, OP_WEIGHTS) if o not in self.ex]
        op = op or r.choices(ops, weights)[0]
        self.used.add(op)
        if op == "barrier":
            axes = self.axes() if self.on("barrier-axes", 0.5) else None
            return [Comm("barrier", None, None, axes, axis_form=self.axis_form(),
                         via=self.via())]
        axes = self.axes() if op != "permute" else tuple(range(len(self.shape)))
        if prefetch is not None:  # an axis long enough for root k + 1 comes first
            n = prefetch.start + prefetch.extent
            long = [a for a in range(len(self.shape)) if self.shape[a] >= n]
            axes = (r.choice(long),) + tuple(a for a in axes if a not in long)
        k = int(np.prod([self.shape[a] for a in axes]))
        params: dict = {}
        pre: list = []
        rank = r.choice((1, 2))
        other = "float32" if self.dtype == "int32" else "int32"
        bits = other if op in MOVES and self.on("view-dtype", 0.08) else ""
        if op in ("reduce_scatter", "all_to_all"):
            ax = r.randrange(rank)
            uneven = k > 1 and self.on("uneven", 0.5)
            if uneven:
                e_ax = r.choice([v for v in range(1, 2 * k + 2) if v % k][:6])
            else:
                e_ax = k * r.choice((1, 1, 2))
            src = self.pick_src(rank, (ax, e_ax), bits=bits)
        else:
            src = self.pick_src(rank, bits=bits)
            rank = len(src.decl.shape)
        shape = src.decl.shape
        if r.random() < 0.45 and self.on("region", 1.0):
            ext = [r.randint(1, n) for n in shape]
            whole = False
        else:
            ext, whole = list(shape), True
        if op in ("reduce_scatter", "all_to_all"):
            ext[ax] = e_ax
            whole = whole and tuple(ext) == shape
        ext = tuple(ext)
        src_region = Region(src.decl.name, self.starts(shape, ext) if not whole else
                            tuple(self.const(0) for _ in ext), ext, whole=whole)
        bound = src.bound
        if op == "all_gather":
            params["gather_axis"] = r.randrange(rank)
        elif op in ("all_reduce", "reduce_scatter"):
            red = r.choice(("sum", "max", "min", "prod"))
            if red == "prod" and bound ** k > LIMIT / 16:
                if bound > 2 and src.decl.scope != "fragment":  # clip the source first
                    pre = [self.clip_region(src_region, 2)]
                    src.bound = max(src.bound, 2)
                    bound = 2
                if bound ** k > LIMIT / 16:
                    red = "max"
            params["reduction"] = red
            bound = {"sum": bound * k, "prod": bound ** k}.get(red, bound)
            if op == "reduce_scatter":
                params["scatter_axis"] = ax
        elif op == "all_to_all":
            params["split_axis"] = ax
            params["concat_axis"] = r.randrange(rank)
        elif op == "shift":
            sa = r.choice(axes)
            size = self.shape[sa]
            offset = r.choice([o for o in range(-size, size + 1) if o] or [1])
            if r.random() < 0.05:
                offset = 0
            params.update(shift_axis=sa, offset=offset, rotate=r.random() < 0.5)
        elif op == "permute":
            m = r.randint(1, self.size)
            dests = r.sample(range(self.size), m)
            srcs = [r.randrange(self.size) for _ in dests]
            coords = r.random() < 0.4
            mesh_mi = [tuple(int(c) for c in np.unravel_index(i, self.shape))
                       for i in range(self.size)]
            pairs = tuple((mesh_mi[s], mesh_mi[d]) if coords else (s, d)
                          for s, d in zip(srcs, dests))
            params["pairs"] = pairs
        root = None
        if op == "broadcast":
            root = self.root(axes)
            if prefetch is not None:
                root = (Bin("+", Name(prefetch.var), self.const(1)),) + root[1:]
        want = result_extents(op, ext, k, params)
        dst_region, dst, full = self.pick_dst(src, src_region, want, op, params, k)
        dst.bound = max(dst.bound, bound)
        src_region, dst_region = self.plant_start(src_region, src), \
            self.plant_start(dst_region, dst)
        comm = Comm(op, src_region, dst_region, axes, tuple(sorted(params.items())), root,
                    axis_form=self.axis_form(), via=self.via())
        if full:
            dst.defined = True
        return pre + [comm]

    def data_value(self) -> object | None:
        """An int32 value read from per-core memory (a buffer element or a
        ``T.alloc_var``), or ``None``."""
        r = self.r
        bufs = [b for b in self.writable() if b.decl.dtype == "int32"]
        names = [n for n, v in self.vars.items() if v.dtype == "int32"]
        if names and (not bufs or r.random() < 0.4):
            return Name(r.choice(names))
        if not bufs:
            return None
        b = r.choice(bufs)
        return Load(b.decl.name, tuple(self.const(r.randrange(n)) for n in b.decl.shape),
                    "int32")

    def plant_start(self, reg: Region, buf: _Buf) -> Region:
        """``reg`` with one start replaced by a planted reason to refuse: one read
        from per-core memory (``data-start``), or one a narrowing cast wraps out of
        range (``wrapped-start``)."""
        r = self.r
        shape = buf.decl.shape
        # (a start `x % 1` is the constant 0: a dim needs room for two starts)
        dims = [d for d, (n, e) in enumerate(zip(shape, reg.extents)) if n > e]
        if self.expect or self.guarded or not dims or r.random() > 0.04:
            return reg
        d = r.choice(dims)
        room = shape[d] - reg.extents[d]
        new = None
        if r.random() < 0.35 and "data-start" not in self.ex:
            v = self.data_value()
            if v is not None and self.plant("data-start", 1.0):
                new = Bin("%", v, self.const(room + 1))
        elif "wrapped-start" not in self.ex:
            w = self.wrapped_out(room)
            if w is not None and self.plant("wrapped-start", 1.0):
                new = w
        if new is None:
            return reg
        starts = list(reg.starts)
        starts[d] = new
        return Region(reg.buf, tuple(starts), reg.extents, whole=False)

    def via(self) -> str:
        if not self.on("helper", 0.12):
            return ""
        return self.r.choice(("helper", "helper-stmt", "macro"))

    def axis_form(self) -> str:
        return "ints" if self.on("int-axes", 0.2) else "names"

    def clip_region(self, reg: Region, c: int) -> Assign:
        names = ("i", "j", "l")
        nest = tuple((names[d], e) for d, e in enumerate(reg.extents))
        idx = tuple(Name(v) if isinstance(s, Const) and s.value == 0 else Bin("+", Name(v), s)
                    for (v, _), s in zip(nest, reg.starts))
        dt = self.dtype
        load = Load(reg.buf, idx, dt)
        return Assign(reg.buf, idx, nest,
                      Bin("max", Bin("min", load, self.const(c, dt)), self.const(-c, dt)))

    def root(self, axes: tuple) -> tuple:
        """One in-group coordinate per mesh axis: static, a loop variable, or k + 1 (the
        prefetch pattern, under ``if k + 1 < n`` added by the caller)."""
        out = []
        for a in axes:
            size = self.shape[a]
            fit = [lp for lp in self.loops if lp.start + lp.extent <= size]
            if self.loops and not self.expect and self.r.random() < 0.1 and \
                    "wrapped-root" not in self.ex:
                w = self.wrapped_out(size - 1, uniform=True)
                if w is not None and self.plant("wrapped-root", 1.0):
                    out.append(w)
                    continue
            if self.loops and self.r.random() < 0.15 and self.on("narrow-root", 0.6):
                w = self.narrow_in(0, size - 1, uniform=True)
                if w is not None:
                    out.append(w)
                    continue
            if fit and self.on("loop-root", 0.5):
                lp = self.r.choice(fit)
                out.append(Name(lp.var))
            elif self.loops and self.on("loop-root", 0.3):
                lp = self.r.choice(self.loops)
                out.append(Bin("%", Bin("+", Name(lp.var), self.const(self.r.randint(0, 3))),
                               self.const(size)))
            else:
                out.append(self.const(self.r.randrange(size)))
        return tuple(out)

    def pick_dst(self, src: _Buf, src_region: Region, want: tuple, op: str, params: dict,
                 k: int) -> tuple:
        """The dst region (extents ``want``), its buffer, and whether the op writes all
        of it on every core (then it needs no earlier initialisation)."""
        r = self.r
        rank = len(want)
        if src.bits:  # bits into a view of a buffer of the program's dtype, a new one
            pad = r.random() < 0.3
            shape = tuple(w + (r.randint(0, 2) if pad else 0) for w in want)
            b = self.new_buf(shape, self.dtype, fragment_ok=False)
            b = self.new_view(b, shape, "view", src.decl.dtype)
            whole = shape == want and r.random() < 0.6
            starts = (tuple(self.const(0) for _ in want) if whole
                      else self.starts(shape, want))
            return Region(b.decl.name, starts, want, whole=whole), b, False
        if r.random() < 0.15:
            v = self.view_of([b for b in self.writable() if b.decl.dtype == src.decl.dtype],
                             rank, least=want)
            if v is not None:
                whole = tuple(v.decl.shape) == want and r.random() < 0.6
                starts = (tuple(self.const(0) for _ in want) if whole
                          else self.starts(v.decl.shape, want))
                return Region(v.decl.name, starts, want, whole=whole), v, False
        fits = [b for b in self.writable(fragments=True) if b.decl.dtype == src.decl.dtype and
                len(b.decl.shape) == rank and
                all(n >= w for n, w in zip(b.decl.shape, want))]
        same = src if src in fits else None
        if same is not None and self.on("same-buffer", 0.3):
            b = same
        elif [f for f in fits if f is not src] and r.random() < 0.5:
            b = r.choice([f for f in fits if f is not src])
        else:
            covers = _covers_every_core(op, params, src_region.extents, k)
            pad = r.random() < 0.3
            shape = tuple(w + (r.randint(0, 2) if pad else 0) for w in want)
            no_init = (covers and not pad and not self.loops and self.uniform and
                       self.on("uninit-dst", 0.5))
            b = self.new_buf(shape, src.decl.dtype, init=not no_init)
            if no_init:
                zero = tuple(self.const(0) for _ in shape)
                return Region(b.decl.name, zero, shape, whole=True), b, True
        whole = tuple(b.decl.shape) == want and r.random() < 0.6
        starts = (tuple(self.const(0) for _ in want) if whole
                  else self.starts(b.decl.shape, want))
        return Region(b.decl.name, starts, want, whole=whole), b, False


def view_shapes(size: int, rank: int) -> list:
    """The shapes of ``rank`` dims holding exactly ``size`` elements (rank 1 or 2).

    >>> view_shapes(6, 2)
    [(1, 6), (2, 3), (3, 2), (6, 1)]
    """
    if rank == 1:
        return [(size,)]
    return [(a, size // a) for a in range(1, size + 1) if size % a == 0]


def strip_narrow(e):
    """``e`` without its narrowing casts: the value an int64 evaluation computes."""
    if isinstance(e, Cast) and e.dtype in NARROW:
        return strip_narrow(e.a)
    if isinstance(e, Bin):
        return Bin(e.op, strip_narrow(e.a), strip_narrow(e.b))
    if isinstance(e, Cast):
        return Cast(e.dtype, strip_narrow(e.a))
    if isinstance(e, Select):
        return Select(strip_narrow(e.cond), strip_narrow(e.a), strip_narrow(e.b))
    return e


def _names_in(e) -> set:
    if isinstance(e, Name):
        return {e.name}
    return set().union(*(_names_in(c) for c in children(e))) if children(e) else set()


def _covers_every_core(op: str, params: dict, ext: tuple, k: int) -> bool:
    """Whether every core receives a result as large as ``dst``."""
    if op in ("broadcast", "all_gather", "all_reduce"):
        return True
    if op == "shift":
        return bool(params["rotate"])
    if op in ("reduce_scatter", "all_to_all"):
        ax = params["scatter_axis" if op == "reduce_scatter" else "split_axis"]
        return ext[ax] % k == 0
    return False


def result_extents(op: str, ext: tuple, k: int, params: dict) -> tuple:
    """The extents of the host result of in-group position 0 (the largest piece): the
    extents ``dst`` must have."""
    out = list(ext)
    if op == "all_gather":
        out[params["gather_axis"]] *= k
    elif op == "reduce_scatter":
        ax = params["scatter_axis"]
        out[ax] = int(ceil_pieces(ext[ax], k)[0])
    elif op == "all_to_all":
        sa, ca = params["split_axis"], params["concat_axis"]
        piece = int(ceil_pieces(ext[sa], k)[0])
        out[sa] = piece
        out[ca] = k * (piece if sa == ca else ext[ca])
    return tuple(out)
