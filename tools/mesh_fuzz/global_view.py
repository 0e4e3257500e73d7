"""Random global-view mesh programs, for the spmdize mode (see docs/fuzzing.md).

A global-view program reads the blocks it needs from annotated global tensors with
``mesh_tensor_copy`` (a :class:`~.program.MeshCopy`), wherever they live, combines them
locally, and writes its own block of an annotated output: the kernels
``SpmdizeMeshCopies`` turns into explicit communication. :class:`GlobalGen` draws one;
it reuses :class:`~.generate._Gen` for the local work (element loops, lets,
variables, conditions on the core, ``T.copy`` between buffers) and for the final
stores of every per-core buffer and variable into plain (unannotated) outputs, so that
every tile a core read is compared.

Each read's block coordinates follow one *pattern* (``PATTERNS``) of the core
coordinates and loop variables: patterns ``spmdize`` documents (its own tile, a tile a
group reads from one owner, a fixed neighbour offset, a static permutation, Cannon's
skewed loop) and patterns it must refuse (an owner pattern that changes across steps
in no expressible way; reads under core-dependent loop bounds or conditions, a region
spanning two blocks, an element read outside ``T.copy``, a write to another core's
tile: the features ``core-bound``, ``core-if-read``, ``span``, ``direct``,
``remote-write``). Which reads ``spmdize`` accepts is not decided here: the oracle
(:mod:`.spmd_check`) takes a refusal or checks the result.

>>> from mesh_fuzz.generate import make_batch
>>> batch, inputs, results = make_batch("gv", 0, 0, 2, gen=GlobalGen)
>>> all(any(t.layout == "sharded" for t in p.tensors) for p in batch.programs)
True
"""
from __future__ import annotations

import math

import numpy as np

from .generate import _Buf, _Gen, _Loop, _Scope
from .program import (Assign, Batch, Bin, BufDecl, Cast, Core, CoreId, For, If, Layout,
                      Load, MeshCopy, Name, Program, Region, Select, Tensor, VarDecl)

#: how a read's block coordinates follow the core (and the loop variables)
PATTERNS = ("own", "group", "shift", "clamp", "perm", "skew", "changing")
PATTERN_WEIGHTS = (2, 3, 2, 1, 2, 2, 1)

#: feature name -> what it adds, in the spmdize mode (each can be excluded)
FEATURES = {
    "own": "a core reads its own tile (or a block of it)",
    "group": "every core of a group along some axes reads one owner's tile (SUMMA's "
             "(bx, k))",
    "shift": "the tile of the core at a fixed offset, with wrap ((c + o) % n)",
    "clamp": "a neighbour offset without wrap (T.min(c + o, n - 1))",
    "perm": "a static permutation (reversal, affine map, table over the core)",
    "skew": "Cannon's skewed loop ((i + j + s) % n) or a ring ((i + s) % n)",
    "changing": "an owner pattern that changes across steps in no expressible way",
    "core-bound": "a read in a loop whose trip count depends on the core",
    "core-if-read": "a read under a condition on the core",
    "span": "a read of two blocks as one region (across shards, or in one shard)",
    "direct": "an element of an annotated tensor read outside T.copy",
    "remote-write": "a core writes the output tile of another core",
    "sub-block": "blocks smaller than tiles (several blocks per shard)",
    "uneven": "sizes that do not divide (a smaller last shard)",
    "replicated": "inputs replicated along some mesh axes",
    "split-order": "a dim split by several axes, not in mesh order",
    "dict-form": "shardings as the seed dict {axis: dim}",
    "tuple-form": "shardings as the seed tuple (dim of axis 0, ...)",
    "axes-form": "shardings as Sharding(mesh, split_axes)",
    # shared with the comm-op mode: launches, meshes, local work
    "launch-1d": "1-D launches, T.Kernel(mesh size)",
    "axis-order": "mesh axis names not in alphabetical order",
    "mesh-object": "mesh_tensor_functions(Mesh(...)) instead of a dict",
    "pipelined": "T.Pipelined step loops",
    "unroll": "T.unroll step loops",
    "let": "lets (v = expr) of core-dependent values",
    "let-after-write": "lets of per-core data read after the data is written",
    "var": "T.alloc_var variables",
    "core-if": "conditions on the core around local work",
    "select": "T.if_then_else",
    "parallel": "T.Parallel loops (shared buffers)",
    "loop-region": "T.copy regions whose start is a loop variable",
    "core-region": "T.copy regions whose start depends on the core",
}

#: features of the comm-op generator that this one never uses
_OFF = frozenset({"fragment", "global-write", "alloc-buffer", "shared-dyn", "fill",
                  "fragment-loop", "gemm", "reshape", "view", "view-dtype", "decl-buffer",
                  "narrow-index", "narrow-start", "narrow-root", "fold-index", "fold-copy",
                  "fold-write", "remote-read", "check-races", "race-write", "race-read",
                  "wrapped-start", "wrapped-root", "data-start", "data-if"})


def _terms(*parts) -> object:
    """``parts[0] + parts[1] + ...`` (``None`` parts skipped)."""
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else Bin("+", out, p)
    return out


class GlobalGen(_Gen):
    """Draws one global-view program (see the module docstring); the interface of
    :class:`~.generate._Gen` (``program``, ``inputs``)."""

    def __init__(self, r, shell: Batch, index: int, exclude: frozenset):
        super().__init__(r, shell, index, exclude | _OFF)
        self.private: list = []  # staging buffers not defined on every core: not stored
        self.results: list = []  # (result buffer, output tensor)
        self.grid: dict = {}  # tensor name -> blocks per tile on each dim

    # -- tensors ----------------------------------------------------------------------
    def global_tensor(self, role: str, dtype: str) -> Tensor:
        """An annotated tensor whose blocks are the program's block shape ``blk``.
        Inputs split each dim by a random set of mesh axes (in random order) or
        replicate it; outputs use every mesh axis of size > 1, so that every core owns
        one tile."""
        r, rank = self.r, len(self.blk)
        split: list = [[] for _ in range(rank)]
        for a in r.sample(range(len(self.shape)), len(self.shape)):
            if role == "out":
                if self.shape[a] > 1 or r.random() < 0.5:
                    split[r.randrange(rank)].append(a)
            elif self.on("replicated", 0.25):
                continue
            else:
                split[r.randrange(rank)].append(a)
        if any(list(ax) != sorted(ax) for ax in split):
            self.used.add("split-order")
            form = "axes"
        else:
            form = r.choice(("dict", "dict", "tuple", "axes"))
            if f"{form}-form" in self.ex:
                form = "axes"
        self.used.add(f"{form}-form")
        q = tuple(2 if self.on("sub-block", 0.2) else 1 for _ in range(rank))
        lay = Layout(tuple(tuple(ax) for ax in split), self.blk, form)
        shape, tile = [], []
        for d in range(rank):
            t, k = q[d] * self.blk[d], lay.shards(d, self.shape)
            # the last shard (or block) is smaller by ``cut`` < one block, and the tile
            # stays ceil(n / k) = t: cut < k on a split dim
            most = min(self.blk[d], k if split[d] else self.blk[d]) - 1
            cut = r.randint(1, most) if most > 0 and self.on("uneven", 0.35) else 0
            shape.append(k * t - cut)
            tile.append(t)
        name = self.fresh("X" if role == "in" else "Y")
        t = Tensor(name, tuple(tile), dtype, "sharded", role, tuple(shape), lay)
        self.tensors.append(t)
        self.grid[name] = q
        if role == "in":
            nrng = np.random.default_rng(self.r.getrandbits(32))
            self.input_values[name] = nrng.integers(-3, 4, tuple(shape)).astype(dtype)
        return t

    # -- the program ------------------------------------------------------------------
    def program(self, seed_text: str):
        r = self.r
        self.blk = tuple(r.choice((1, 2, 2, 3, 4)) for _ in range(r.choice((1, 2, 2))))
        ins = [self.global_tensor("in", self.dtype if r.random() < 0.85 else
                                  r.choice(("float32", "int32")))
               for _ in range(r.choice((1, 1, 2)))]
        for _ in range(r.choice((1, 1, 2))):
            t = self.global_tensor("out", self.dtype)
            b = self.new_buf(self.blk, self.dtype, fragment_ok=False)
            self.results.append((b, t))
        body = self.other() if r.random() < 0.3 else []
        depth = r.choice((0, 1, 1, 2))
        body += self.steps(ins, depth, r.randint(1, 3))
        if r.random() < 0.4:
            body += self.other()
        body += [s for b, t in self.results for s in self.write(b, t)]
        stores = self.stores()
        decls = tuple(b.decl for b in self.bufs.values()) + tuple(self.private) + \
            tuple(self.scratch)
        vars_ = tuple(VarDecl(n, v.dtype) for n, v in self.vars.items())
        return Program(self.index, tuple(self.tensors), decls, vars_,
                       tuple(self.inits + body + stores), seed=seed_text,
                       features=frozenset(self.used))

    def steps(self, ins: list, depth: int, reads: int) -> list:
        """``reads`` read units in ``depth`` nested step loops (the innermost gets the
        most), with local work between them."""
        if depth == 0:
            return [s for _ in range(reads) for s in self.read_unit(self.r.choice(ins))]
        r = self.r
        kind = "serial"
        if self.on("pipelined", 0.2):
            kind = "pipelined"
        elif self.on("unroll", 0.1):
            kind = "unroll"
        start = 1 if r.random() < 0.2 else 0
        extent = r.choice((1, 2, 3, 3, 4, 4))
        var = self.fresh("k")
        self.loops.append(_Loop(var, start, extent))
        self.scopes.append(_Scope())
        self.bind(Name(var), start + extent, False)
        here = r.randint(0, reads - 1) if depth > 1 else reads
        body = [s for _ in range(here) for s in self.read_unit(r.choice(ins))]
        if depth > 1:
            body += self.steps(ins, depth - 1, reads - here)
        if r.random() < 0.3:
            body += self.other()
        self.scopes.pop()
        self.loops.pop()
        return [For(var, start, extent, kind, tuple(body), stages=r.choice((2, 3)))]

    # -- reads --------------------------------------------------------------------------
    def read_unit(self, t: Tensor) -> list:
        """One read of a block of ``t`` into a new staging buffer, folded into a result
        buffer; possibly in a core-dependent loop or condition, or as a region of two
        blocks."""
        r = self.r
        if self.on("core-bound", 0.07):
            a = r.randrange(len(self.shape))
            var = self.fresh("k")
            if r.random() < 0.5:
                ext, most = Bin("+", Bin("%", Core(a), self.const(2)), self.const(1)), 2
            else:
                ext, most = Bin("+", Core(a), self.const(1)), self.shape[a]
            self.loops.append(_Loop(var, 0, min(most, self.shape[a] + 1)))
            self.scopes.append(_Scope())
            body = self.read(t)
            self.scopes.pop()
            self.loops.pop()
            return [For(var, 0, ext, "serial", tuple(body))]
        if self.on("core-if-read", 0.07):
            a = r.randrange(len(self.shape))
            cond = Bin(r.choice(("==", "<", "!=")), Core(a),
                       self.const(r.randrange(self.shape[a])))
            return [If(cond, tuple(self.read(t, private=True)))]
        return self.read(t)

    def read(self, t: Tensor, private: bool = False) -> list:
        r = self.r
        coord = self.coord(t)
        span: tuple = ()
        shape = self.blk
        if self.on("span", 0.06):
            d = r.randrange(len(shape))
            span = tuple(2 if k == d else 1 for k in range(len(shape)))
            shape = tuple(b * s for b, s in zip(shape, span))
        scope = r.choice(("shared", "local"))
        decl = BufDecl(self.fresh("S"), shape, t.dtype, scope)
        stage = _Buf(decl, 3)
        zero = tuple(self.const(0) for _ in shape)
        out: list = [MeshCopy(t.name, coord, Region(decl.name, zero, shape, whole=True),
                              span=span)]
        if private:
            self.private.append(decl)
            self.bufs[decl.name] = stage  # usable by the fold below only
            out += self.fold(stage)
            del self.bufs[decl.name]
        else:
            self.bufs[decl.name] = stage
            out += self.fold(stage)
        if self.on("direct", 0.04):
            out += self.fold(stage, direct=t)
        return out

    def fold(self, stage: _Buf, direct: Tensor | None = None) -> list:
        """``R[i, j] = R[i, j] op S[...]`` over a result buffer ``R`` (every block of a
        two-block ``S``), clipped to stay exact; ``direct``: read an element of that
        tensor instead (outside ``T.copy``)."""
        r = self.r
        res, _ = r.choice(self.results)
        nest = tuple((v, e) for v, e in zip(("i", "j"), self.blk))
        idx = tuple(Name(v) for v, _ in nest)
        out = []
        halves = [d for d, (n, b) in enumerate(zip(stage.decl.shape, self.blk)) if n > b]
        offsets = [0] + ([self.blk[halves[0]]] if halves else [])
        for off in offsets:
            sidx = []
            for d, (v, e) in enumerate(nest):
                k = r.randrange(e) if r.random() < 0.3 else 0
                i = Bin("%", Bin("+", Name(v), self.const(k)), self.const(e)) if k else Name(v)
                sidx.append(Bin("+", i, self.const(off)) if off and d == halves[0] else i)
            src: object = Load(stage.decl.name, tuple(sidx), stage.decl.dtype)
            if direct is not None:
                src = Load(direct.name, tuple(self.const(r.randrange(n)) for n in direct.shape),
                           direct.dtype)
            if stage.decl.dtype != res.decl.dtype:
                src = Cast(res.decl.dtype, src)
            op = r.choice(("+", "+", "-", "max", "min"))
            v: object = Bin(op, Load(res.decl.name, idx, res.decl.dtype), src)
            bound = res.bound + stage.bound
            if r.random() < 0.3:
                extra, eb = self.value(res.decl.dtype, nest, (res.decl.name, idx))
                v, bound = Bin("+", v, extra), bound + eb
            v, bound = self.clipped(v, bound, res.decl.dtype)
            res.bound = max(res.bound, bound)
            out.append(Assign(res.decl.name, idx, nest, v,
                              "serial" if r.random() < 0.3 else "grid"))
        return out

    # -- block coordinates ---------------------------------------------------------------
    def loop_var(self, size: int) -> object | None:
        """A step-loop variable folded into ``[0, size)`` (``None`` outside loops)."""
        if not self.loops:
            return None
        lp = self.r.choice(self.loops)
        if lp.start + lp.extent <= size and self.r.random() < 0.7:
            return Name(lp.var)
        return Bin("%", Bin("+", Name(lp.var), self.const(self.r.randrange(size))),
                   self.const(size))

    def coord(self, t: Tensor) -> tuple:
        """The block coordinates of one read of ``t``, by a pattern of ``PATTERNS``."""
        r = self.r
        ok = [(p, w) for p, w in zip(PATTERNS, PATTERN_WEIGHTS) if p not in self.ex and
              (p not in ("skew", "changing") or self.loops)]
        pattern = r.choices([p for p, _ in ok], [w for _, w in ok])[0] if ok else "own"
        self.used.add(pattern)
        axes = [a for ax in t.mesh.split for a in ax]
        moving = [a for a in axes if self.shape[a] > 1]
        if pattern == "own":
            moving = []
        elif pattern in ("shift", "clamp"):
            moving = r.sample(moving, min(1, len(moving)))
        elif pattern != "own" and moving:
            moving = r.sample(moving, r.randint(1, len(moving)))
        perm = None
        if pattern == "perm" and r.random() < 0.3:
            perm = r.sample(range(self.size), self.size)  # one permutation of all cores
        owner = {a: (self.owner(pattern, a, perm) if a in moving else Core(a)) for a in axes}
        return tuple(self.blocks_of(t, d, owner) for d in range(len(self.blk)))

    def blocks_of(self, t: Tensor, d: int, owner: dict | None = None, sub=None) -> object:
        """Dim ``d``'s block coordinate: ``shard * q + sub`` where the shard is the owner
        coordinates on the axes splitting ``d`` (row-major, outer axis first) and ``sub``
        picks one of the ``q`` blocks of a tile; a dim split by nothing takes any
        block."""
        r = self.r
        q = self.grid[t.name][d]
        axes = t.mesh.split[d]
        if not axes:
            n = -(-t.shape[d] // self.blk[d])
            return self.free(n)
        owner = owner or {a: Core(a) for a in axes}
        shard = None
        for a in axes:
            shard = owner[a] if shard is None else \
                Bin("+", Bin("*", shard, self.const(self.shape[a])), owner[a])
        if q == 1:
            return shard
        if sub is None:
            self.used.add("sub-block")
            sub = self.free(q)
        return Bin("+", Bin("*", shard, self.const(q)), sub)

    def free(self, n: int) -> object:
        """Any index in ``[0, n)``: static, of a loop variable or of the core."""
        r = self.r
        c = r.random()
        if n == 1 or c < 0.4:
            return self.const(r.randrange(n))
        if c < 0.7 and self.loops:
            return self.loop_var(n)
        a = r.randrange(len(self.shape))
        return Bin("%", _terms(Core(a), self.loop_var(n) if r.random() < 0.3 else None),
                   self.const(n))

    def owner(self, pattern: str, a: int, perm: list | None) -> object:
        """The owner's coordinate on mesh axis ``a`` (of size > 1) by ``pattern``."""
        r, n = self.r, self.shape[a]
        c = Core(a)
        others = [b for b in range(len(self.shape)) if b != a]
        if pattern == "group":  # a fixed or loop-driven root along a
            k = self.loop_var(n) if r.random() < 0.6 else None
            return k if k is not None else self.const(r.randrange(n))
        if pattern == "shift":
            return Bin("%", Bin("+", c, self.const(r.randint(1, n - 1))), self.const(n))
        if pattern == "clamp":
            o = r.randint(1, n - 1)
            if r.random() < 0.5:
                return Bin("min", Bin("+", c, self.const(o)), self.const(n - 1))
            return Bin("max", Bin("-", c, self.const(o)), self.const(0))
        if pattern == "perm":
            if perm is not None:  # the coordinate on a of the core perm[id]
                coords = [int(np.unravel_index(p, self.shape)[a]) for p in perm]
                return self.table(CoreId(), coords)
            kind = r.choice(("reverse", "affine", "table", "cross"))
            if kind == "reverse":
                return Bin("-", self.const(n - 1), c)
            if kind == "affine":
                m = r.choice([m for m in range(1, n + 2) if math.gcd(m, n) == 1])
                return Bin("%", Bin("+", Bin("*", c, self.const(m)),
                                    self.const(r.randrange(n))), self.const(n))
            if kind == "cross" and others:
                return Bin("%", Core(r.choice(others)), self.const(n))
            return self.table(c, r.sample(range(n), n))
        k = Name(self.loops[-1].var)  # skew and changing follow the innermost loop
        if pattern == "skew":
            if others and r.random() < 0.6:
                return Bin("%", _terms(c, Core(r.choice(others)), k), self.const(n))
            return Bin("%", Bin("+", c, k), self.const(n))
        # changing: the owner moves by a different amount at each step
        kind = r.choice(("mul", "square", "switch"))
        if kind == "mul":
            return Bin("%", Bin("*", Bin("+", c, self.const(1)), k), self.const(n))
        if kind == "square":
            return Bin("%", _terms(c, Bin("*", k, k)), self.const(n))
        return Select(Bin("==", Bin("%", k, self.const(2)), self.const(0)),
                      self.const(r.randrange(n)), c)

    def table(self, index: object, values: list) -> object:
        """``values[index]`` as a chain of ``T.if_then_else``."""
        e: object = self.const(values[-1])
        for i in range(len(values) - 2, -1, -1):
            e = Select(Bin("==", index, self.const(i)), self.const(values[i]), e)
        return e

    # -- writes ---------------------------------------------------------------------------
    def write(self, res: _Buf, t: Tensor) -> list:
        """Store ``res`` into the core's own tile of ``t`` (each of its blocks), or, with
        ``remote-write``, into the tile of the next core along one axis."""
        r = self.r
        owner = {a: Core(a) for ax in t.mesh.split for a in ax}
        moving = [a for a in owner if self.shape[a] > 1]
        if moving and self.on("remote-write", 0.04):
            a = r.choice(moving)
            owner[a] = Bin("%", Bin("+", Core(a), self.const(1)), self.const(self.shape[a]))
        q = self.grid[t.name]
        loops = [(d, self.fresh("j")) for d in range(len(q)) if q[d] > 1]
        subs = dict((d, Name(v)) for d, v in loops)
        coord = tuple(self.blocks_of(t, d, owner, sub=subs.get(d)) for d in range(len(q)))
        zero = tuple(self.const(0) for _ in self.blk)
        stmt: object = MeshCopy(t.name, coord, Region(res.decl.name, zero, self.blk, whole=True),
                                write=True)
        for d, v in reversed(loops):
            stmt = For(v, 0, q[d], "serial", (stmt,))
        return [stmt]
