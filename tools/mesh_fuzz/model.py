"""The NumPy model of a mesh program: what every core's buffers and tiles hold.

Every core runs the program on its own state (buffers, ``T.alloc_var`` variables, lets,
its tiles of the global tensors); the cores run in lock-step so that a comm op sees all
of them at once. A comm op takes every core's ``src`` region as that device's local
array of a ``MeshArray`` and calls the host collective of ``meshtensor.collectives``;
each core that receives something writes the result into the leading part of its
``dst`` region (uneven pieces are smaller than ``dst``), a core that receives nothing
(``shift`` without ``rotate``, ``permute``) keeps ``dst``. A global-view read
(``MeshCopy``) copies a block of the global tensor, zeros past its edge; a write
stores the block's in-tensor part; both record which core owns the block
(:class:`Accesses`).

Values are computed in int64/float64 and must stay within ``LIMIT`` (so that float32
and int32 are exact and no int32 overflows): a program that leaves it raises
:class:`Unrepresentable` and the generator draws another one. Reading an element that
no statement wrote, an index out of range, or a comm op that not every core reaches
raises :class:`ModelError` (a generator bug, never a kernel bug).

>>> from mesh_fuzz.program import Batch, Comm, Program, Region, Tensor, Copy, Const
>>> X = Tensor("X", (1,), "int32", "linear", "in")
>>> Y = Tensor("Y", (1,), "int32", "linear", "out")
>>> from mesh_fuzz.program import BufDecl
>>> S = BufDecl("S", (1,), "int32", "local")
>>> whole = lambda n: Region(n, (Const(0, "int32"),), (1,))
>>> body = (Copy(whole("X"), whole("S")),
...         Comm("shift", whole("S"), whole("S"), (0,), (("offset", 1), ("rotate", True),
...              ("shift_axis", 0))), Copy(whole("S"), whole("Y")))
>>> p = Program(0, (X, Y), (S,), (), body)
>>> out = run_model(Batch((("x", 3),), "nd", (p,)), p, {"X": np.array([[5], [6], [7]])})
>>> out.tensors["Y"].ravel().tolist()
[7, 5, 6]
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meshtensor import Mesh, MeshArray, collectives

from .program import (ARITH, CMP, MINMAX, NARROW, Assign, Batch, Bin, Cast, Comm, Const,
                      Copy, Core, CoreId, Fill, For, Gemm, If, Layout, Let, Load, MeshCopy,
                      Name, Program, Region, Select, SetVar, children, comm_ops,
                      has_narrow_cast)

LIMIT = 2 ** 24
SENTINEL = -77  # what output tensors hold before the kernel runs


class ModelError(Exception):
    """The program is not what the generator promises (a generator bug)."""


class Unrepresentable(Exception):
    """A value leaves ``[-LIMIT, LIMIT]``: float32/int32 would not be exact."""


class _Refused(Exception):
    """The planted reason (``Program.expect``) for the layer to refuse the kernel
    happened: the model stops there."""


def wrap(v, dtype: str):
    """``v`` (integers) converted to the narrow integer ``dtype`` as C converts:
    modulo ``2^bits``, into the type's range.

    >>> wrap(np.array([40000, -300, 127]), "int16").tolist()
    [-25536, -300, 127]
    >>> wrap(np.array([-300, 256]), "uint8").tolist()
    [212, 0]
    """
    bits, signed = NARROW[dtype]
    m = np.int64(1) << bits
    v = np.asarray(v).astype(np.int64) % m
    return v - m * (v >= m // 2) if signed else v


def np_dtype(dtype: str) -> np.dtype:
    return np.dtype(dtype)


def _wide(dtype: str) -> type:
    return np.float64 if dtype.startswith("float") else np.int64


def ceil_pieces(n: int, k: int) -> np.ndarray:
    """Piece sizes of ``n`` cut into ``k`` by the ceil rule (the last may be empty)."""
    c = -(-n // k) if k else 0
    starts = np.minimum(np.arange(k + 1) * c, n)
    return np.diff(starts)


@dataclass
class _Core:
    coords: tuple
    lin: int
    bufs: dict  # name -> array (buffers and tile views of global tensors)
    defined: dict  # name -> bool array
    vars: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)  # loop vars and lets


@dataclass(frozen=True)
class Accesses:
    """Every execution of one global-view copy (``MeshCopy`` of ``tensor`` into
    ``buf``, or from ``buf`` with ``write``): the executing ``core``, the ``owner`` of
    the block (linear ids; -1 when the block spans several shards), the bytes of the
    block (``stage``: what a comm op moves) and of its part inside the tensor
    (``inside``: what the analysis counts), and ``first``: 1 at the first iteration of
    the innermost loop around the copy, 0 at a later one, -1 outside loops."""

    tensor: str
    buf: str
    write: bool
    core: np.ndarray
    owner: np.ndarray
    stage: np.ndarray
    inside: np.ndarray
    first: np.ndarray

    @property
    def remote(self) -> np.ndarray:
        return self.owner != self.core


@dataclass
class ModelResult:
    """Final global tensors (inputs included: a core may write its own input tile),
    per comm op execution the bytes each core receives and sends (the traffic model of
    docs/traffic.md), the number of executions per comm op, the global-view copies
    (one :class:`Accesses` per ``MeshCopy``, in the order they first run), and the
    planted refusal reason that happened (``refusal``)."""

    tensors: dict
    received: np.ndarray  # (num comm ops, mesh size) bytes over the run
    sent: np.ndarray
    executions: np.ndarray
    accesses: tuple = ()
    #: for a program planted to be refused (``Program.expect``): what happened, and
    #: the model stopped there (its tensors are then partial)
    refusal: str = ""


#: planted reasons after which the model can go on (what the cores would compute if
#: the layer ran the kernel anyway: a start or condition read from memory)
GO_ON = ("data-start", "data-if")


class _Model:
    def __init__(self, batch: Batch, program: Program, inputs: dict, go_on: bool = False):
        self.batch, self.p = batch, program
        self.go_on, self.refusal = go_on, ""
        self.mesh = Mesh(dict(batch.mesh))
        self.ops = comm_ops(program.body)
        self.op_index = {id(c): i for i, c in enumerate(self.ops)}
        n = len(self.ops)
        self.received = np.zeros((n, self.mesh.size), dtype=np.int64)
        self.sent = np.zeros((n, self.mesh.size), dtype=np.int64)
        self.executions = np.zeros(n, dtype=np.int64)
        self.tensors, self.tdefined, self.shadow = {}, {}, {}
        for t in program.tensors:
            shape = t.global_shape(batch)
            if t.role == "in":
                a = np.array(inputs[t.name], dtype=np_dtype(t.dtype))
                if a.shape != shape:
                    raise ModelError(f"input {t.name} has shape {a.shape}, not {shape}")
            else:
                a = np.full(shape, SENTINEL, dtype=np_dtype(t.dtype))
            self.tensors[t.name] = a
            self.tdefined[t.name] = np.full(shape, t.role == "in")
            # per element: the superstep of the last access, the core that wrote it
            # in that superstep (-1: none) and the one that read it (-2: several)
            self.shadow[t.name] = np.full((3, a.size), -1, dtype=np.int64)
        self.ids: dict = {}  # tensor name -> global element ids (for the shadow)
        self.step = 0  # supersteps: each comm op execution (barriers too) ends one
        self.cores = []
        for lin in range(self.mesh.size):
            coords = self.mesh.multi_index(lin)
            bufs, defined = {}, {}
            for t in program.tensors:
                bufs[t.name] = t.tile_of(self.tensors[t.name], coords, lin)
                defined[t.name] = t.tile_of(self.tdefined[t.name], coords, lin)
            for b in program.bufs:
                if not b.parent:
                    bufs[b.name] = np.zeros(b.shape, dtype=np_dtype(b.dtype))
                    defined[b.name] = np.zeros(b.shape, dtype=bool)
            for b in program.bufs:  # a view shares its allocation's elements
                if b.parent:
                    bufs[b.name] = _view(bufs[b.parent], b)
                    defined[b.name] = _view(defined[b.parent], b, keep_dtype=True)
            self.cores.append(_Core(coords, lin, bufs, defined))
        self.data_names = {v.name for v in program.vars}  # names holding per-core data
        self.var_dtype = {v.name: v.dtype for v in program.vars}
        self.loops: list = []  # (var, start) of the enclosing loops, innermost last
        self.accesses: dict = {}  # id(MeshCopy) -> list of per-execution rows
        self.access_order: list = []

    # -- expressions ------------------------------------------------------------------
    def ev(self, e, core: _Core, env: dict):
        if isinstance(e, Const):
            return _wide(e.dtype)(e.value)
        if isinstance(e, Core):
            return np.int64(core.coords[e.axis])
        if isinstance(e, CoreId):
            return np.int64(core.lin)
        if isinstance(e, Name):
            if e.name in env:
                return env[e.name]
            if e.name in core.vars:
                return core.vars[e.name]
            raise ModelError(f"{e.name} read before it is bound or assigned")
        if isinstance(e, Load):
            vals, defined = self._arrays(e.buf, e.owner, core, env)
            idx = self._index(e.buf, e.index, core, env, vals.shape)
            if not defined[idx].all():
                raise ModelError(f"{e.buf} read where nothing was written")
            self._touch(e.buf, e.owner, core, env, idx, write=False)
            return vals[idx].astype(_wide(e.dtype))
        if isinstance(e, Cast):
            v = self.ev(e.a, core, env)
            if e.dtype in NARROW:
                return wrap(np.trunc(v), e.dtype)
            if e.dtype.startswith("int"):
                return _check(np.trunc(v).astype(np.int64))
            return np.asarray(v, dtype=np.float64)
        if isinstance(e, Select):
            return np.where(self.ev(e.cond, core, env), self.ev(e.a, core, env),
                            self.ev(e.b, core, env))
        a, b = self.ev(e.a, core, env), self.ev(e.b, core, env)
        if e.op in CMP:
            return {"<": np.less, "<=": np.less_equal, ">": np.greater,
                    ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}[e.op](a, b)
        if e.op in MINMAX:
            return np.maximum(a, b) if e.op == "max" else np.minimum(a, b)
        if e.op not in ARITH:
            raise ModelError(f"unknown operator {e.op!r}")
        if e.op in ("//", "%"):
            if np.any(b == 0):
                raise ModelError("division by zero")
            return _check(a // b if e.op == "//" else a % b)
        return _check({"+": np.add, "-": np.subtract, "*": np.multiply}[e.op](a, b))

    def _index(self, buf: str, index: tuple, core: _Core, env: dict,
               shape: tuple | None = None) -> tuple:
        shape = core.bufs[buf].shape if shape is None else shape
        if len(index) != len(shape):
            raise ModelError(f"{buf} indexed with {len(index)} indices, rank {len(shape)}")
        idx = []
        for i, n in zip(index, shape):
            v = np.asarray(self.ev(i, core, env))
            if v.dtype.kind not in "iu" or np.any(v < 0) or np.any(v >= n):
                raise ModelError(f"{buf} index {v.tolist()} outside [0, {n})")
            idx.append(v.astype(np.int64))
        return tuple(np.broadcast_arrays(*idx)) if idx else ()

    def _region(self, r: Region, core: _Core, env: dict, comm: bool = False) -> tuple:
        shape = self._arrays(r.buf, r.owner, core, env)[0].shape
        out = []
        for s0, e, n in zip(r.starts, r.extents, shape):
            s = int(self.ev(s0, core, env))
            if s < 0 or s + e > n:
                msg = f"region [{s}, {s + e}) of {r.buf} outside [0, {n})"
                if comm and has_narrow_cast(s0):
                    self.violation("wrapped-start", msg + f" on core {core.lin}")
                raise ModelError(msg)
            out.append(slice(s, s + e))
        if len(out) != len(shape):
            raise ModelError(f"region of {r.buf} has rank {len(out)}, buffer {len(shape)}")
        return tuple(out)

    def _store(self, core: _Core, buf: str, idx, value, owner=None, env=None,
               bits: bool = False) -> None:
        """Store ``value`` at ``idx`` of ``buf`` (a tensor: of ``owner``'s tile);
        ``bits``: raw bits moved through a view of another dtype (no range check)."""
        env = core.env if env is None else env
        arr, defined = self._arrays(buf, owner, core, env)
        value = np.asarray(value)
        if value.dtype == bool:
            raise ModelError(f"a condition stored into {buf}")
        if not bits:
            _check(value)
        self._touch(buf, owner, core, env, idx, write=True)
        arr[idx] = value.astype(arr.dtype)
        defined[idx] = True

    # -- global tensors: other cores' tiles, races ---------------------------------------
    def _arrays(self, buf: str, owner, core: _Core, env: dict) -> tuple:
        """``(values, defined)`` of ``buf`` as the core sees it (a tensor with
        ``owner``: the tile of the core of that linear id)."""
        if owner is None:
            return core.bufs[buf], core.defined[buf]
        t = self.p.tensor(buf)
        lin = np.asarray(self.ev(owner, core, env))
        if t is None or lin.ndim or not 0 <= int(lin) < self.mesh.size:
            raise ModelError(f"owner {lin.tolist()} of {buf}: not a core of one tensor")
        coords = self.mesh.multi_index(int(lin))
        return (t.tile_of(self.tensors[buf], coords, int(lin)),
                t.tile_of(self.tdefined[buf], coords, int(lin)))

    def _touch(self, buf: str, owner, core: _Core, env: dict, idx, write: bool) -> None:
        """Record an access of ``core`` to elements ``idx`` of a global tensor in this
        superstep; another core's write of one of them (or, for a write, another
        core's read) is a race."""
        t = self.p.tensor(buf)
        if t is None or t.layout == "sharded":
            return
        ids = self.ids.get(buf)
        if ids is None:
            ids = self.ids[buf] = np.arange(self.tensors[buf].size).reshape(
                self.tensors[buf].shape)
        lin = core.lin if owner is None else int(self.ev(owner, core, env))
        g = np.unique(t.tile_of(ids, self.mesh.multi_index(lin), lin)[idx])
        step, wr, rd = self.shadow[buf]
        stale = g[step[g] != self.step]
        step[stale], wr[stale], rd[stale] = self.step, -1, -1
        clash = (wr[g] >= 0) & (wr[g] != core.lin)
        if write:
            clash |= (rd[g] != -1) & (rd[g] != core.lin)
        if clash.any():
            e = int(g[clash][0])
            other = int(wr[e]) if wr[e] >= 0 and wr[e] != core.lin else int(rd[e])
            where = tuple(int(i) for i in np.unravel_index(e, self.tensors[buf].shape))
            self.violation("race", f"{buf}{list(where)} in superstep {self.step}: core "
                           f"{core.lin} {'writes' if write else 'reads'} it, core "
                           f"{'several' if other == -2 else other} "
                           f"{'wrote' if wr[e] >= 0 and wr[e] != core.lin else 'read'} it")
        if write:
            wr[g] = core.lin
        else:
            rd[g] = np.where((rd[g] == -1) | (rd[g] == core.lin), core.lin, -2)

    def violation(self, kind: str, message: str) -> None:
        """A reason for the layer to refuse the kernel: the planted one stops the
        model; any other is a generator bug."""
        if kind == self.p.expect:
            if self.go_on and kind in GO_ON:
                self.refusal = self.refusal or f"{kind}: {message}"
                return
            raise _Refused(f"{kind}: {message}")
        raise ModelError(f"unplanned {kind}: {message}")

    def reads_data(self, e) -> bool:
        """Whether ``e`` reads memory (a buffer or tensor element, a ``T.alloc_var``
        or a let of such a value)."""
        if isinstance(e, Load):
            return True
        if isinstance(e, Name):
            return e.name in self.data_names
        return any(self.reads_data(c) for c in children(e))

    # -- statements -------------------------------------------------------------------
    def block(self, body, active: list) -> None:
        for s in body:
            self.stmt(s, active)

    def stmt(self, s, active: list) -> None:
        if isinstance(s, Assign):
            for c in active:
                self.assign(s, c)
        elif isinstance(s, Copy):
            for c in active:
                src = self._region(s.src, c, c.env)
                vals, defined = self._arrays(s.src.buf, s.src.owner, c, c.env)
                if not defined[src].all():
                    raise ModelError(f"T.copy reads {s.src.buf} where nothing was written")
                self._touch(s.src.buf, s.src.owner, c, c.env, src, write=False)
                val = vals[src].copy()
                dst = self._region(s.dst, c, c.env)
                if val.shape != self._arrays(s.dst.buf, s.dst.owner, c, c.env)[0][dst].shape:
                    raise ModelError("T.copy extents differ")
                self._store(c, s.dst.buf, dst, val, s.dst.owner)
        elif isinstance(s, Gemm):
            for c in active:
                a, b, acc = (c.bufs[n] for n in (s.a, s.b, s.c))
                if not all(c.defined[n].all() for n in (s.a, s.b, s.c)):
                    raise ModelError("T.gemm reads a buffer where nothing was written")
                w = _wide(acc.dtype.name)
                self._store(c, s.c, (), acc.astype(w) + a.astype(w) @ b.astype(w))
        elif isinstance(s, Fill):
            for c in active:
                v = 0 if s.value is None else self.ev(s.value, c, c.env)
                if np.ndim(v):
                    raise ModelError(f"T.fill of {s.buf} with a non-scalar")
                self._store(c, s.buf, (), np.full(c.bufs[s.buf].shape, v))
        elif isinstance(s, Let):
            if self.reads_data(s.value):
                self.data_names.add(s.name)
            for c in active:
                v = self.ev(s.value, c, c.env)
                if np.ndim(v):
                    raise ModelError(f"let {s.name} is not a scalar")
                c.env[s.name] = v
        elif isinstance(s, SetVar):
            for c in active:
                v = self.ev(s.value, c, c.env)
                dt = self.var_dtype[s.name]
                c.vars[s.name] = _check(np.asarray(v).astype(np.int64 if dt.startswith("int")
                                                              else np.float64))[()]
        elif isinstance(s, For):
            if isinstance(s.extent, int):
                ext = [s.extent] * len(active)
            else:  # a trip count that depends on the core
                ext = [int(self.ev(s.extent, c, c.env)) for c in active]
            self.loops.append((s.var, s.start))
            for i in range(s.start, s.start + max(ext, default=0)):
                run = [c for c, e in zip(active, ext) if i < s.start + e]
                for c in run:
                    c.env[s.var] = np.int64(i)
                self.block(s.body, run)
            self.loops.pop()
        elif isinstance(s, If):
            if comm_ops(s.then + s.orelse) and self.reads_data(s.cond):
                self.violation("data-if", "a comm op under a condition read from "
                               "per-core memory")
            taken = [bool(self.ev(s.cond, c, c.env)) for c in active]
            then = [c for c, t in zip(active, taken) if t]
            other = [c for c, t in zip(active, taken) if not t]
            for branch, cores in ((s.then, then), (s.orelse, other)):
                if cores and comm_ops(branch) and len(cores) != len(self.cores):
                    raise ModelError("a comm op under a condition that depends on the core")
                if cores:
                    self.block(branch, cores)
        elif isinstance(s, Comm):
            if len(active) != len(self.cores):
                raise ModelError(f"{s.op} not reached by every core")
            self.comm(s)
        elif isinstance(s, MeshCopy):
            for c in active:
                self.mesh_copy(s, c)
        else:
            raise ModelError(f"unknown statement {s!r}")

    # -- global-view copies -------------------------------------------------------------
    def mesh_copy(self, s: MeshCopy, core: _Core) -> None:
        t = self.p.tensor(s.tensor)
        if t is None or t.mesh is None:
            raise ModelError(f"{s.tensor} is not an annotated global tensor")
        arr, block = self.tensors[t.name], np.asarray(t.mesh.block)
        coord = np.array([int(self.ev(e, core, core.env)) for e in s.coord])
        lo = coord * block
        hi = lo + block * (np.asarray(s.span) if s.span else 1)
        n = np.asarray(arr.shape)
        if len(coord) != arr.ndim or np.any(lo < 0) or np.any(lo >= n):
            raise ModelError(f"block {coord.tolist()} of {t.name} outside {arr.shape}")
        inside = tuple(slice(a, b) for a, b in zip(lo, np.minimum(hi, n)))
        region = self._region(s.buf, core, core.env)
        if [r.stop - r.start for r in region] != (hi - lo).tolist():
            raise ModelError(f"{s.buf.buf} region differs from the block of {t.name}")
        if s.write:
            if not core.defined[s.buf.buf][region].all():
                raise ModelError(f"{s.buf.buf} written to {t.name} where nothing was written")
            part = tuple(slice(r.start, r.start + (x.stop - x.start))
                         for r, x in zip(region, inside))
            self._store(core, t.name, inside, core.bufs[s.buf.buf][part])
        else:
            val = np.zeros(hi - lo, dtype=arr.dtype)  # TileLang's guarded copy: zeros past
            val[tuple(slice(0, x.stop - x.start) for x in inside)] = arr[inside]  # the edge
            self._store(core, s.buf.buf, region, val)
        item = arr.dtype.itemsize
        owner = owner_of(t.mesh, arr.shape, self.mesh.shape, core.coords, lo, hi)
        first = -1
        if self.loops:
            var, start = self.loops[-1]
            first = int(core.env[var] == start)
        if id(s) not in self.accesses:
            self.accesses[id(s)] = []
            self.access_order.append(s)
        self.accesses[id(s)].append((core.lin, owner, int(np.prod(hi - lo)) * item,
                                     int(np.prod(np.minimum(hi, n) - lo)) * item, first))

    def access_records(self) -> tuple:
        out = []
        for s in self.access_order:
            rows = np.array(self.accesses[id(s)], dtype=np.int64).reshape(-1, 5)
            out.append(Accesses(s.tensor, s.buf.buf, s.write, *rows.T))
        return tuple(out)

    def assign(self, s: Assign, core: _Core) -> None:
        env = dict(core.env)
        shape = tuple(e for _, e in s.nest)
        for k, (name, ext) in enumerate(s.nest):
            env[name] = np.arange(ext, dtype=np.int64).reshape(
                (1,) * k + (ext,) + (1,) * (len(shape) - k - 1))
        target = self._arrays(s.buf, s.owner, core, core.env)[0]
        idx = self._index(s.buf, s.index, core, env, target.shape)
        value = self.ev(s.value, core, env)
        idx = tuple(np.broadcast_to(i, shape) for i in idx)
        value = np.broadcast_to(value, shape)
        if shape:
            flat = np.ravel_multi_index(tuple(i.ravel() for i in idx), target.shape)
            if len(np.unique(flat)) != flat.size:
                raise ModelError(f"{s.buf}: one element written twice in one loop nest")
        self._store(core, s.buf, idx, value, s.owner, env)

    # -- comm ops ---------------------------------------------------------------------
    def comm(self, s: Comm) -> None:
        i = self.op_index[id(s)]
        self.executions[i] += 1
        self.step += 1
        if s.op == "barrier":
            return
        if any(self.reads_data(x) for x in s.src.starts + s.dst.starts):
            self.violation("data-start", f"{s.op}: a region start reads per-core memory")
        locs, regions = [], []
        for c in self.cores:
            r = self._region(s.src, c, c.env, comm=True)
            if not c.defined[s.src.buf][r].all():
                raise ModelError(f"{s.op} sends {s.src.buf} where nothing was written")
            locs.append(c.bufs[s.src.buf][r].copy())
            regions.append(self._region(s.dst, c, c.env, comm=True))
        x = MeshArray.from_locals(self.mesh, locs)
        p, axes = s.param, list(s.axes or ())
        receivers = range(self.mesh.size)
        if s.op == "broadcast":
            roots = {tuple(int(self.ev(r, c, c.env)) for r in s.root) for c in self.cores}
            if len(roots) != 1:
                raise ModelError("broadcast root depends on the core")
            root = roots.pop()
            for a, v, e in zip(axes, root, s.root):
                if not 0 <= v < self.mesh.shape[a]:
                    msg = f"broadcast root {list(root)} outside the group"
                    if has_narrow_cast(e):
                        self.violation("wrapped-root", msg)
                    raise ModelError(msg)
            y = collectives.broadcast(x, axes, list(root))
        elif s.op == "all_gather":
            y = collectives.all_gather(x, axes, p["gather_axis"])
        elif s.op in ("all_reduce", "reduce_scatter"):
            self._check_reduction(x, s)
            if s.op == "all_reduce":
                y = collectives.all_reduce(x, axes, p["reduction"])
            else:
                y = collectives.reduce_scatter(x, axes, p["scatter_axis"], p["reduction"])
        elif s.op == "all_to_all":
            y = collectives.all_to_all(x, axes, p["split_axis"], p["concat_axis"])
        elif s.op == "shift":
            y = collectives.shift(x, axes, p["shift_axis"], p["offset"], p["rotate"])
            receivers = self._shift_receivers(s)
        elif s.op == "permute":
            pairs = [(self.mesh.linear_index(a), self.mesh.linear_index(b))
                     for a, b in p["pairs"]]
            y = collectives.permute(x, pairs)
            receivers = sorted({b for _, b in pairs})
        else:
            raise ModelError(f"unknown comm op {s.op!r}")
        for lin in receivers:
            core, got = self.cores[lin], y.local(lin)
            region = regions[lin]
            exts = [sl.stop - sl.start for sl in region]
            if got.ndim != len(exts) or any(g > e for g, e in zip(got.shape, exts)):
                raise ModelError(f"{s.op}: result {got.shape} does not fit dst {exts}")
            lead = tuple(slice(sl.start, sl.start + g) for sl, g in zip(region, got.shape))
            self._store(core, s.dst.buf, lead, got, bits=self.is_bits(s.dst.buf))
        rec, snt = traffic(s, self.mesh, locs[0].shape, locs[0].dtype.itemsize,
                           root if s.op == "broadcast" else None)
        self.received[i] += rec
        self.sent[i] += snt

    def is_bits(self, name: str) -> bool:
        """Whether buffer ``name`` is a view of an allocation of another dtype."""
        b = self.p.buf(name)
        return b is not None and bool(b.parent) and b.dtype != self.p.buf(b.parent).dtype

    def _shift_receivers(self, s: Comm) -> list:
        p = s.param
        ax, size = p["shift_axis"], self.mesh.shape[p["shift_axis"]]
        out = []
        for c in self.cores:
            src = c.coords[ax] - p["offset"]
            if p["rotate"] or 0 <= src < size:
                out.append(c.lin)
        return out

    def _check_reduction(self, x: MeshArray, s: Comm) -> None:
        """Every partial result of the group reduction stays within LIMIT."""
        kind = s.param["reduction"]
        if kind in ("max", "min"):
            return
        mag = [np.abs(a.astype(np.float64)) for a in x.locals]
        if kind == "prod":
            mag = [np.maximum(m, 1.0) for m in mag]
        bound = collectives.all_reduce(MeshArray.from_locals(self.mesh, mag), list(s.axes),
                                       kind)
        if max(float(b.max(initial=0)) for b in bound.locals) > LIMIT:
            raise Unrepresentable(f"{s.op} {kind} leaves [-{LIMIT}, {LIMIT}]")


def traffic(s: Comm, mesh: Mesh, ext: tuple, itemsize: int, root=None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each core receives from and sends to other cores in one execution of a
    comm op (``ext``: the src region's extents), by the conventions of docs/traffic.md:
    direct one-shot collectives, ``all_reduce`` as reduce-scatter + all-gather of the
    flattened region, a broadcast root sending to every member.

    >>> from mesh_fuzz.program import Comm
    >>> r, _ = traffic(Comm("all_gather", None, None, (0,), (("gather_axis", 0),)),
    ...                Mesh([4]), (2,), 4)
    >>> r.tolist()
    [24, 24, 24, 24]
    """
    rec = np.zeros(mesh.size, dtype=np.int64)
    sent = np.zeros(mesh.size, dtype=np.int64)
    if s.op == "barrier":
        return rec, sent
    nbytes = int(np.prod(ext, dtype=np.int64)) * itemsize
    p = s.param

    def flow(a: int, b: int, n: int) -> None:
        if a != b and n:
            rec[b] += n
            sent[a] += n

    if s.op == "permute":
        for a, b in p["pairs"]:
            flow(mesh.linear_index(a), mesh.linear_index(b), nbytes)
        return rec, sent
    if s.op == "shift":
        ax, size = p["shift_axis"], mesh.shape[p["shift_axis"]]
        stride = int(np.prod(mesh.shape[ax + 1:], dtype=np.int64))
        for lin in range(mesh.size):
            c = mesh.multi_index(lin)[ax]
            src = c - p["offset"]
            if p["rotate"]:
                src %= size
            if 0 <= src < size:
                flow(lin + (src - c) * stride, lin, nbytes)
        return rec, sent
    for g in mesh.device_groups(list(s.axes)):
        k = len(g)
        if s.op == "broadcast":
            sizes = [mesh.shape[a] for a in s.axes]
            r = int(np.ravel_multi_index(tuple(root), sizes)) if sizes else 0
            for b in g:
                flow(g[r], b, nbytes)
        elif s.op == "all_gather":
            for a in g:
                for b in g:
                    flow(a, b, nbytes)
        elif s.op in ("reduce_scatter", "all_to_all"):
            ax = p["scatter_axis" if s.op == "reduce_scatter" else "split_axis"]
            row = nbytes // ext[ax] if ext[ax] else 0
            pieces = ceil_pieces(ext[ax], k) * row
            for a in g:
                for j, b in enumerate(g):
                    flow(a, b, int(pieces[j]))
        elif s.op == "all_reduce":
            pieces = ceil_pieces(int(np.prod(ext)), k) * itemsize
            for i, a in enumerate(g):
                for j, b in enumerate(g):
                    flow(a, b, int(pieces[j] + pieces[i]))
        else:
            raise ModelError(f"unknown comm op {s.op!r}")
    return rec, sent


def owner_of(layout: Layout, shape: tuple, mesh_shape: tuple, coords: tuple,
             lo: np.ndarray, hi: np.ndarray) -> int:
    """The linear id of the core owning the box ``[lo, hi)`` of a tensor of ``shape``
    read by the core at ``coords``: on every split dim, the shard holding the box's
    in-tensor part (tiles of ``ceil(n / shards)``); along the axes that split nothing,
    the reader itself (the nearest replica). -1 when the box spans several shards.

    >>> owner_of(Layout(((1,), ()), (2, 2)), (6, 4), (2, 3), (1, 0), np.array([4, 0]),
    ...          np.array([6, 2]))
    5
    """
    own = list(coords)
    for d, axes in enumerate(layout.split):
        if not axes:
            continue
        sizes = [mesh_shape[a] for a in axes]
        tile = -(-shape[d] // int(np.prod(sizes)))
        first, last = lo[d] // tile, (min(hi[d], shape[d]) - 1) // tile
        if first != last:
            return -1
        for a, v in zip(axes, np.unravel_index(int(first), sizes)):
            own[a] = int(v)
    return int(np.ravel_multi_index(own, mesh_shape)) if mesh_shape else 0


def _check(v):
    v = np.asarray(v)
    if v.size and float(np.max(np.abs(v))) > LIMIT:
        raise Unrepresentable(f"a value of magnitude {float(np.max(np.abs(v)))} > {LIMIT}")
    return v


def _view(arr: np.ndarray, b, keep_dtype: bool = False) -> np.ndarray:
    """View ``b`` (a ``BufDecl`` with a parent) of its allocation's array ``arr``: the
    flat elements from ``b.offset`` on, in ``b``'s dtype (every dtype here has 4
    bytes) and shape; ``keep_dtype`` for the ``defined`` flags."""
    flat = arr.reshape(-1)[b.offset:b.offset + b.size]
    if flat.size != b.size or not np.shares_memory(flat, arr):
        raise ModelError(f"view {b.name} does not fit its allocation {b.parent}")
    if not keep_dtype and flat.dtype != np_dtype(b.dtype):
        flat = flat.view(np_dtype(b.dtype))
    return flat.reshape(b.shape)


def run_model(batch: Batch, program: Program, inputs: dict, go_on: bool = False
              ) -> ModelResult:
    """Run ``program`` (one of ``batch``'s, or alone on its mesh) on ``inputs`` (global
    arrays by name); outputs start as ``SENTINEL``. A program planted to be refused
    (``Program.expect``) stops where that happens (``ModelResult.refusal``), or with
    ``go_on`` after a reason of ``GO_ON`` runs to the end as the cores would; that it
    never happens, or that another reason to refuse happens, is a :class:`ModelError`.
    """
    m = _Model(batch, program, inputs, go_on)
    refusal = ""
    try:
        m.block(program.body, m.cores)
        refusal = m.refusal
    except _Refused as e:
        refusal = str(e)
    if program.expect and not refusal:
        raise ModelError(f"the planted {program.expect} never happens")
    return ModelResult(m.tensors, m.received, m.sent, m.executions, m.access_records(),
                       refusal)
