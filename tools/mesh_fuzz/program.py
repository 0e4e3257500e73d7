"""Typed mesh programs and their TileLang source.

A *program* is one core's code (as a mesh kernel is): it loads its own tiles of global
input tensors into per-core buffers, computes locally, calls comm ops and stores its
buffers into its own slices of global output tensors. A *batch* is several independent
programs on one mesh compiled as one kernel (separate buffers and tensors, names
prefixed ``p<i>_``), so one compilation checks many programs.

Expressions and statements are frozen dataclasses; :func:`batch_source` writes a batch
as a Python module holding one ``@T.prim_func`` (the kernel a user would write), and
:func:`dtype_of` gives an expression's dtype. Global tensors are seen by a program as
its own *tile* (``Tensor.tile``); the layout says where that tile lies in the tensor:

- ``grid``: shape ``(*mesh shape, *tile)``, the tile at ``X[c0, c1, ...]``;
- ``linear``: shape ``(mesh size, *tile)``, the tile at ``X[core id]``;
- ``blocked``: shape ``(mesh size * tile[0], *tile[1:])``, rows ``core id * tile[0]``...
- ``sharded``: a global-view tensor of shape ``shape`` annotated with a
  :class:`Layout` (``annotate_mesh_tensor_info``); a program reads any of its blocks
  with :class:`MeshCopy` and sees the whole tensor (``tile`` is the per-core tile).

>>> p = Program(0, (Tensor("p0_X", (2,), "int32", "linear", "in"),), (), (), ())
>>> p.tensors[0].global_shape(Batch((("x", 2),), "nd", (p,)))
(2, 2)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np

DTYPES = ("float32", "int32")
#: narrowing integer casts (bits, signed) the generator writes inside indices, starts
#: and roots; C converts to them modulo 2^bits, and TileLang computes any arithmetic on
#: them with an int32 operand in int32
NARROW = {"int16": (16, True), "int8": (8, True), "uint8": (8, False)}
ARITH = ("+", "-", "*", "//", "%")
CMP = ("<", "<=", ">", ">=", "==", "!=")
MINMAX = ("max", "min")


# -- expressions ---------------------------------------------------------------------
@dataclass(frozen=True)
class Const:
    """A literal of ``dtype``."""

    value: int
    dtype: str


@dataclass(frozen=True)
class Core:
    """The running core's coordinate on mesh axis ``axis`` (int32)."""

    axis: int


@dataclass(frozen=True)
class CoreId:
    """The running core's linear id (row-major over the mesh axes, int32)."""


@dataclass(frozen=True)
class Name:
    """A loop variable, a let or a ``T.alloc_var`` variable."""

    name: str
    dtype: str = "int32"


@dataclass(frozen=True)
class Load:
    """An element of a per-core buffer or of the core's tile of a global tensor
    (``owner``: the linear id of the core whose tile is read, an expression of the
    running core; ``None``: its own)."""

    buf: str
    index: tuple
    dtype: str
    owner: "Expr | None" = None


@dataclass(frozen=True)
class Bin:
    """``a op b``: arithmetic (``+ - * // %``), ``max``/``min`` or a comparison."""

    op: str
    a: "Expr"
    b: "Expr"


@dataclass(frozen=True)
class Cast:
    """``T.Cast(dtype, a)``."""

    dtype: str
    a: "Expr"


@dataclass(frozen=True)
class Select:
    """``T.if_then_else(cond, a, b)``."""

    cond: "Expr"
    a: "Expr"
    b: "Expr"


Expr = Union[Const, Core, CoreId, Name, Load, Bin, Cast, Select]


def dtype_of(e: Expr) -> str:
    """The dtype of an expression (``"bool"`` for a comparison; a narrow integer
    combined with an int32 is int32, as TileLang promotes it).

    >>> dtype_of(Bin("+", Const(1, "float32"), Cast("float32", Core(0))))
    'float32'
    >>> dtype_of(Bin("//", Cast("int16", Core(0)), Const(3, "int32")))
    'int32'
    """
    if isinstance(e, (Const, Name, Load)):
        return e.dtype
    if isinstance(e, (Core, CoreId)):
        return "int32"
    if isinstance(e, Cast):
        return e.dtype
    if isinstance(e, Select):
        return dtype_of(e.a)
    if e.op in CMP:
        return "bool"
    a, b = dtype_of(e.a), dtype_of(e.b)
    return b if a in NARROW and b not in NARROW else a


def has_narrow_cast(e: Expr) -> bool:
    """Whether ``e`` holds a narrowing integer ``T.Cast`` (see ``NARROW``)."""
    if isinstance(e, Cast) and e.dtype in NARROW:
        return True
    return any(has_narrow_cast(c) for c in children(e))


def depends_on_core(e: Expr, core_names: frozenset = frozenset()) -> bool:
    """Whether ``e`` reads the core (coordinates, id, per-core data or a name in
    ``core_names``)."""
    if isinstance(e, (Core, CoreId, Load)):
        return True
    if isinstance(e, Name):
        return e.name in core_names
    if isinstance(e, Const):
        return False
    return any(depends_on_core(c, core_names) for c in children(e))


def children(e: Expr) -> tuple:
    """The direct sub-expressions of ``e``."""
    if isinstance(e, Bin):
        return (e.a, e.b)
    if isinstance(e, Cast):
        return (e.a,)
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    if isinstance(e, Load):
        return e.index + ((e.owner,) if e.owner is not None else ())
    return ()


# -- statements ----------------------------------------------------------------------
@dataclass(frozen=True)
class Region:
    """``buf[s0:s0 + e0, ...]`` (``whole``: written as the bare buffer name;
    ``owner``: for a global tensor, the linear id of the core whose tile it is, as
    :class:`Load`)."""

    buf: str
    starts: tuple
    extents: tuple
    whole: bool = False
    owner: "Expr | None" = None


@dataclass(frozen=True)
class Assign:
    """``for v... in T.grid(extents): buf[index] = value`` (no loop when ``nest`` is
    empty); ``loop`` is ``grid``, ``serial`` (nested) or ``parallel``; ``owner`` as
    :class:`Load`'s."""

    buf: str
    index: tuple
    nest: tuple  # ((name, extent), ...)
    value: Expr
    loop: str = "grid"
    owner: "Expr | None" = None  # a global tensor: whose tile (see Load)


@dataclass(frozen=True)
class Copy:
    """``T.copy(src, dst)``."""

    src: Region
    dst: Region


@dataclass(frozen=True)
class Let:
    """``name = value``: a let binding (TIR ``LetStmt``) over the rest of the block."""

    name: str
    value: Expr


@dataclass(frozen=True)
class SetVar:
    """``name = value`` for a ``T.alloc_var`` variable."""

    name: str
    value: Expr


@dataclass(frozen=True)
class For:
    """``for var in T.serial(start, start + extent)`` (``kind``: ``serial``,
    ``pipelined`` with ``stages``, ``unroll``); ``extent`` is an int, or an expression
    of the core (a core-dependent trip count)."""

    var: str
    start: int
    extent: "int | Expr"
    kind: str
    body: tuple
    stages: int = 2


@dataclass(frozen=True)
class If:
    """``if cond: then else: orelse``."""

    cond: Expr
    then: tuple
    orelse: tuple = ()


@dataclass(frozen=True)
class Comm:
    """``mc.<op>(src, dst, mesh_axes, **params)`` (``barrier``: no regions; ``axes``
    ``None`` for all). ``axis_form``: mesh axes written as ``names`` or ``ints``;
    ``params``: sorted ``(key, value)`` pairs; ``root``: broadcast's coordinates;
    ``via``: called directly, or through a Python function that returns the op
    (``helper``), calls it as a statement (``helper-stmt``), or a ``T.macro``."""

    op: str
    src: Region | None
    dst: Region | None
    axes: tuple | None
    params: tuple = ()
    root: tuple | None = None
    axis_form: str = "names"
    via: str = ""  # "", or called in a module-level "helper" / "helper-stmt" / "macro"

    @property
    def param(self) -> dict:
        return dict(self.params)


@dataclass(frozen=True)
class MeshCopy:
    """``mcopy(tensor, buf, src_coord=coord)`` (a read of the block at block
    coordinates ``coord``) or, with ``write``, ``mcopy(buf, tensor, dst_coord=coord)``.
    ``span``: blocks per dim of a read written as a region of the tensor
    (``mcopy(X[lo:lo + 2 * b, ...], buf)``); ``()`` is one block."""

    tensor: str
    coord: tuple
    buf: Region
    write: bool = False
    span: tuple = ()


@dataclass(frozen=True)
class Gemm:
    """``T.gemm(a, b, c)`` on whole buffers: ``c += a @ b``."""

    a: str
    b: str
    c: str


@dataclass(frozen=True)
class Fill:
    """``T.fill(buf, value)``, or ``T.clear(buf)`` when ``value`` is ``None``."""

    buf: str
    value: "Expr | None" = None


Stmt = Union[Assign, Copy, Let, SetVar, For, If, Comm, MeshCopy, Gemm, Fill]


# -- programs ------------------------------------------------------------------------
#: what makes a planted program one the layer must refuse (``Program.expect``)
MUST_REFUSE = {
    "race": "two cores touch one element of a global tensor in one superstep, one "
            "of them writing",
    "wrapped-start": "a comm region start whose narrowing cast wraps it out of range",
    "wrapped-root": "a broadcast root whose narrowing cast wraps it out of range",
    "data-start": "a comm region start read from per-core memory",
    "data-if": "a comm op under a condition read from per-core memory",
}


@dataclass(frozen=True)
class Layout:
    """A global-view tensor's ``mesh_tensor_info``: ``split[d]`` the mesh axes (indices)
    splitting dim ``d``, outer to inner; ``block`` the copy granule; ``form`` how the
    sharding is written: ``dict`` (``{"x": 0, "y": None}``), ``tuple`` (``(0, None)``)
    or ``axes`` (``Sharding(M, [["y", "x"], []])``, any axis order)."""

    split: tuple
    block: tuple
    form: str = "axes"

    def shards(self, d: int, mesh_shape: tuple) -> int:
        """How many shards dim ``d`` is cut into."""
        return int(np.prod([mesh_shape[a] for a in self.split[d]], dtype=np.int64))


@dataclass(frozen=True)
class Tensor:
    """A global tensor: the core's ``tile`` placed by ``layout``; ``role`` in/out.
    A ``sharded`` tensor has its global ``shape`` and its annotation ``mesh``."""

    name: str
    tile: tuple
    dtype: str
    layout: str
    role: str
    shape: tuple = ()
    mesh: Layout | None = None

    def global_shape(self, batch: "Batch") -> tuple:
        shape, size = batch.shape, int(np.prod(batch.shape))
        if self.layout == "sharded":
            return tuple(self.shape)
        if self.layout == "grid":
            return (*shape, *self.tile)
        if self.layout == "linear":
            return (size, *self.tile)
        return (size * self.tile[0], *self.tile[1:])

    def tile_of(self, arr: np.ndarray, coords: tuple, lin: int) -> np.ndarray:
        """The core's tile as a view of the global array ``arr`` (a ``sharded`` tensor:
        the whole array, indexed globally)."""
        if self.layout == "sharded":
            return arr
        if self.layout == "grid":
            return arr[coords]
        if self.layout == "linear":
            return arr[lin]
        t0 = self.tile[0]
        return arr[lin * t0:(lin + 1) * t0]


#: how each scope of an in-kernel allocation is written
ALLOC = {"shared": 'T.alloc_shared({shape}, "{dtype}", scope="shared")',
         "shared.dyn": 'T.alloc_shared({shape}, "{dtype}")',
         "local": 'T.alloc_local({shape}, "{dtype}")',
         "fragment": 'T.alloc_fragment({shape}, "{dtype}")',
         "global": 'T.alloc_buffer({shape}, "{dtype}", scope="global")',
         "default": 'T.alloc_buffer({shape}, "{dtype}")'}


@dataclass(frozen=True)
class BufDecl:
    """A per-core buffer allocated in the kernel (``scope``: a key of ``ALLOC``), or,
    with ``parent``, a view of the allocation ``parent`` (``view``: ``reshape`` as
    ``T.reshape``, ``view`` as ``T.view`` (``dtype`` may differ from the parent's),
    ``decl`` as ``T.decl_buffer(data=parent.data, elem_offset=offset)``), whose
    elements are the parent's flat elements ``offset ..``; ``scope`` is then the
    parent's."""

    name: str
    shape: tuple
    dtype: str
    scope: str
    parent: str = ""
    view: str = ""
    offset: int = 0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class VarDecl:
    """``name = T.alloc_var(dtype)``."""

    name: str
    dtype: str


@dataclass(frozen=True)
class Program:
    """One sub-program of a batch (``index`` names its buffers ``p<index>_...``)."""

    index: int
    tensors: tuple
    bufs: tuple
    vars: tuple
    body: tuple
    seed: str = ""
    features: frozenset = field(default_factory=frozenset)
    #: "" for a valid program; else what makes the kernel one the layer must refuse
    #: (a key of ``MUST_REFUSE``), planted on purpose
    expect: str = ""

    @property
    def inputs(self) -> tuple:
        return tuple(t for t in self.tensors if t.role == "in")

    @property
    def outputs(self) -> tuple:
        return tuple(t for t in self.tensors if t.role == "out")

    def tensor(self, name: str) -> Tensor | None:
        return next((t for t in self.tensors if t.name == name), None)

    def buf(self, name: str) -> BufDecl | None:
        return next((b for b in self.bufs if b.name == name), None)


@dataclass(frozen=True)
class Batch:
    """Programs sharing one mesh (``((name, size), ...)`` in axis order) and launch
    (``nd``: ``T.Kernel(*mesh shape)``, ``1d``: ``T.Kernel(mesh size)``); with
    ``coord_lets`` a 1-D launch binds the coordinates as lets ``c0, c1...``;
    ``check_races``: compiled with ``compile_mesh_kernel(..., check_races=True)``."""

    mesh: tuple
    launch: str
    programs: tuple
    coord_lets: bool = True
    mesh_form: str = "dict"
    check_races: bool = False

    @property
    def shape(self) -> tuple:
        return tuple(s for _, s in self.mesh)

    @property
    def names(self) -> tuple:
        return tuple(n for n, _ in self.mesh)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def with_programs(self, programs) -> "Batch":
        return Batch(self.mesh, self.launch, tuple(programs), self.coord_lets, self.mesh_form,
                     self.check_races)

    def params(self) -> list:
        """The kernel's tensor parameters in signature order."""
        return [t for p in self.programs for t in p.tensors]


def comm_ops(body) -> list:
    """The comm ops of a statement list in program order."""
    out = []
    for s in body:
        if isinstance(s, Comm):
            out.append(s)
        elif isinstance(s, For):
            out += comm_ops(s.body)
        elif isinstance(s, If):
            out += comm_ops(s.then) + comm_ops(s.orelse)
    return out


# -- source text ---------------------------------------------------------------------
KERNEL = "fuzz_kernel"


class _Writer:
    """Writes expressions and statements of one batch as TileLang source."""

    def __init__(self, batch: Batch):
        self.batch = batch
        self.tensors = {t.name: t for p in batch.programs for t in p.tensors}
        self.lines: list[str] = []
        self.helpers: list[str] = []  # module-level functions that call comm ops
        self.prefix = ""
        self.bvars = (["bx"] if batch.launch == "1d" else
                      [f"b{a}" for a in range(len(batch.mesh))])

    # expressions
    def core(self, axis: int) -> str:
        b = self.batch
        if b.launch == "nd":
            return self.bvars[axis]
        if b.coord_lets:
            return f"c{axis}"
        return _paren(_coord_text("bx", axis, b.shape))

    def core_id(self) -> str:
        b = self.batch
        if b.launch == "1d":
            return "bx"
        return _paren(_linear_text([self.core(a) for a in range(len(b.shape))], b.shape))

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            text = repr(float(e.value)) if e.dtype.startswith("float") else str(int(e.value))
            return f"({text})" if e.value < 0 else text
        if isinstance(e, Core):
            return self.core(e.axis)
        if isinstance(e, CoreId):
            return self.core_id()
        if isinstance(e, Name):
            return e.name
        if isinstance(e, Load):
            return self.element(e.buf, [self.expr(i) for i in e.index], e.owner)
        if isinstance(e, Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.a)})'
        if isinstance(e, Select):
            return (f"T.if_then_else({self.expr(e.cond)}, {self.expr(e.a)}, "
                    f"{self.expr(e.b)})")
        if e.op in MINMAX:
            return f"T.{e.op}({self.expr(e.a)}, {self.expr(e.b)})"
        return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"

    def element(self, name: str, index: list[str], owner: Expr | None = None) -> str:
        t = self.tensors.get(name)
        if t is None:
            return f"{name}[{', '.join(index)}]"
        return f"{name}[{', '.join(self._tile_prefix(t, index, owner))}]"

    def _tile_prefix(self, t: Tensor, index: list[str], owner: Expr | None = None
                     ) -> list[str]:
        """The global indices of ``index`` in the tile of the running core (or of the
        core whose linear id is ``owner``)."""
        if t.layout == "sharded":
            return index
        lin = self.core_id() if owner is None else _paren(self.expr(owner))
        if t.layout == "grid":
            if owner is None:
                return [self.core(a) for a in range(len(self.batch.shape))] + index
            return [_paren(_coord_text(lin, a, self.batch.shape))
                    for a in range(len(self.batch.shape))] + index
        if t.layout == "linear":
            return [lin] + index
        return [f"{lin} * {t.tile[0]} + {index[0]}"] + index[1:]

    def region(self, r: Region) -> str:
        if r.whole:
            return r.buf
        parts = []
        for s, e in zip(r.starts, r.extents):
            if isinstance(s, Const):
                parts.append(f"{s.value}:{s.value + e}")
            else:
                st = self.expr(s)
                parts.append(f"{st}:{st} + {e}")
        t = self.tensors.get(r.buf)
        if t is None:
            return f"{r.buf}[{', '.join(parts)}]"
        lin = self.core_id() if r.owner is None else _paren(self.expr(r.owner))
        if t.layout == "blocked":
            base = f"{lin} * {t.tile[0]}"
            s0 = self.expr(r.starts[0])
            parts[0] = f"{base} + {s0}:{base} + {s0} + {r.extents[0]}"
            return f"{r.buf}[{', '.join(parts)}]"
        prefix = self._tile_prefix(t, parts, r.owner)[:-len(parts)]
        return f"{r.buf}[{', '.join(prefix + parts)}]"

    # statements
    def emit(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def stmts(self, body, depth: int) -> None:
        for s in body:
            self.stmt(s, depth)

    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            self.assign(s, depth)
        elif isinstance(s, Copy):
            self.emit(f"T.copy({self.region(s.src)}, {self.region(s.dst)})", depth)
        elif isinstance(s, (Let, SetVar)):
            self.emit(f"{s.name} = {self.expr(s.value)}", depth)
        elif isinstance(s, For):
            if not isinstance(s.extent, int):  # a trip count that depends on the core
                ext = self.expr(s.extent)
                rng = ext if s.start == 0 else f"{s.start}, {s.start} + {ext}"
            else:
                rng = f"{s.extent}" if s.start == 0 else f"{s.start}, {s.start + s.extent}"
            if s.kind == "pipelined":
                head = f"T.Pipelined({rng}, num_stages={s.stages})"
            else:
                head = f"T.{s.kind}({rng})"
            self.emit(f"for {s.var} in {head}:", depth)
            self.stmts(s.body, depth + 1)
        elif isinstance(s, If):
            self.emit(f"if {self.expr(s.cond)}:", depth)
            self.stmts(s.then, depth + 1)
            if s.orelse:
                self.emit("else:", depth)
                self.stmts(s.orelse, depth + 1)
        elif isinstance(s, Comm):
            self.emit(self.comm(s), depth)
        elif isinstance(s, MeshCopy):
            self.emit(self.mesh_copy(s), depth)
        elif isinstance(s, Gemm):
            self.emit(f"T.gemm({s.a}, {s.b}, {s.c})", depth)
        elif isinstance(s, Fill):
            self.emit(f"T.clear({s.buf})" if s.value is None else
                      f"T.fill({s.buf}, {self.expr(s.value)})", depth)
        else:
            raise TypeError(f"unknown statement {s!r}")

    def mesh_copy(self, s: MeshCopy) -> str:
        t = self.tensors[s.tensor]
        coord = [self.expr(c) for c in s.coord]
        tup = f"({coord[0]},)" if len(coord) == 1 else f"({', '.join(coord)})"
        buf = self.region(s.buf)
        if s.write:
            return f"mcopy({buf}, {t.name}, dst_coord={tup})"
        if not s.span:
            return f"mcopy({t.name}, {buf}, src_coord={tup})"
        parts = []
        for c, b, n in zip(coord, t.mesh.block, s.span):
            lo = f"{_paren(c)} * {b}"
            parts.append(f"{lo}:{lo} + {n * b}")
        return f"mcopy({t.name}[{', '.join(parts)}], {buf})"

    def annotation(self) -> str:
        """``annotate({X: init(sharding, block), ...})`` for every sharded tensor."""
        names = self.batch.names
        items = []
        for t in self.tensors.values():
            if t.layout != "sharded":
                continue
            lay = t.mesh
            if lay.form == "axes":
                spec = "Sharding(M, [" + ", ".join(
                    "[" + ", ".join(f'"{names[a]}"' for a in axes) + "]"
                    for axes in lay.split) + "])"
            else:
                dim = {a: d for d, axes in enumerate(lay.split) for a in axes}
                if lay.form == "tuple":
                    spec = "(" + ", ".join(str(dim.get(a)) for a in range(len(names))) + \
                        ("," if len(names) == 1 else "") + ")"
                else:
                    spec = "{" + ", ".join(f'"{names[a]}": {dim.get(a)}'
                                           for a in range(len(names))) + "}"
            items.append(f"{t.name}: init({spec}, {tuple(lay.block)})")
        return "annotate({" + ", ".join(items) + "})"

    def assign(self, s: Assign, depth: int) -> None:
        target = self.element(s.buf, [self.expr(i) for i in s.index], s.owner)
        value = self.expr(s.value)
        if not s.nest:
            self.emit(f"{target} = {value}", depth)
            return
        names = ", ".join(n for n, _ in s.nest)
        exts = ", ".join(str(e) for _, e in s.nest)
        if s.loop == "serial":
            for k, (n, e) in enumerate(s.nest):
                self.emit(f"for {n} in T.serial({e}):", depth + k)
            self.emit(f"{target} = {value}", depth + len(s.nest))
            return
        kind = "Parallel" if s.loop == "parallel" else "grid"
        self.emit(f"for {names} in T.{kind}({exts}):", depth)
        self.emit(f"{target} = {value}", depth + 1)

    def axes(self, c: Comm) -> str:
        if c.axis_form == "ints":
            return repr(list(c.axes))
        return repr([self.batch.names[a] for a in c.axes])

    def comm(self, c: Comm) -> str:
        if c.op == "barrier":
            call = "mc.barrier()" if c.axes is None else f"mc.barrier({self.axes(c)})"
            regions: list = []
        else:
            regions = [self.region(c.src), self.region(c.dst)]
            args = ["src", "dst"] if c.via else list(regions)
            if c.op != "permute":
                args.append(self.axes(c))
            for k, v in c.params:
                if k == "shift_axis" and c.axis_form == "names":
                    v = self.batch.names[v]
                args.append(f"{k}={v!r}")
            if c.root is not None:
                args.append("root=root" if c.via else
                            f"root=[{', '.join(self.expr(r) for r in c.root)}]")
                regions.append(f"[{', '.join(self.expr(r) for r in c.root)}]")
            call = f"mc.{c.op}({', '.join(args)})"
        if not c.via:
            return call
        name = f"{self.prefix}comm{len(self.helpers)}"
        params = ["src", "dst"] * (c.op != "barrier") + ["root"] * (c.root is not None)
        head = "@T.macro\n" if c.via == "macro" else ""
        body = f"return {call}" if c.via == "helper" else call
        self.helpers.append(f"{head}def {name}({', '.join(params)}):\n    {body}\n")
        return f"{name}({', '.join(regions)})"

    def program(self, p: Program, depth: int) -> None:
        self.emit(f"# -- program {p.index}" + (f" (seed {p.seed})" if p.seed else ""),
                  depth)
        self.prefix = f"p{p.index}_"
        for b in p.bufs:
            if not b.parent:
                self.emit(f"{b.name} = " + ALLOC[b.scope].format(shape=b.shape,
                                                                  dtype=b.dtype), depth)
        for b in p.bufs:
            if b.parent:
                self.emit(f"{b.name} = {self.view(b, p.buf(b.parent))}", depth)
        for v in p.vars:
            self.emit(f'{v.name} = T.alloc_var("{v.dtype}")', depth)
        self.stmts(p.body, depth)


    @staticmethod
    def view(b: BufDecl, parent: BufDecl) -> str:
        """The right-hand side declaring view ``b`` of ``parent``."""
        if b.view == "reshape":
            return f"T.reshape({parent.name}, {b.shape})"
        if b.view == "view":
            dt = f', dtype="{b.dtype}"' if b.dtype != parent.dtype else ""
            return f"T.view({parent.name}, {b.shape}{dt})"
        extra = f", elem_offset={b.offset}" if b.offset else ""
        if parent.scope not in ("global", "default"):
            extra += f', scope="{T_SCOPE[parent.scope]}"'
        return f'T.decl_buffer({b.shape}, "{b.dtype}", data={parent.name}.data{extra})'


#: the storage scope TileLang gives each kind of allocation
T_SCOPE = {"shared": "shared", "shared.dyn": "shared.dyn", "local": "local",
           "fragment": "local.fragment", "global": "global", "default": "global"}


def _paren(text: str) -> str:
    """``text`` safe as an operand (inline core coordinates: ``(bx // 2 % 2)``)."""
    return f"({text})" if " " in text and not text.startswith("(") else text


def _coord_text(lin: str, axis: int, shape: tuple) -> str:
    stride = int(np.prod(shape[axis + 1:], dtype=np.int64))
    text = lin if stride == 1 else f"{lin} // {stride}"
    return text if axis == 0 else f"{text} % {shape[axis]}"


def _linear_text(coords: list[str], shape: tuple) -> str:
    terms = []
    for a, c in enumerate(coords):
        stride = int(np.prod(shape[a + 1:], dtype=np.int64))
        if shape[a] > 1:
            terms.append(c if stride == 1 else f"{c} * {stride}")
    return "(" + " + ".join(terms) + ")" if len(terms) > 1 else (terms[0] if terms else "0")


def batch_source(batch: Batch, header: str = "") -> str:
    """The batch as a Python module defining ``mc`` and the kernel ``fuzz_kernel``.

    >>> p = Program(0, (Tensor("p0_X", (2,), "int32", "linear", "in"),), (), (), ())
    >>> print(batch_source(Batch((("x", 2),), "1d", (p,))).split("@T.prim_func")[1])
    <BLANKLINE>
    def fuzz_kernel(p0_X: T.Tensor((2, 2), "int32")):
        with T.Kernel(2, threads=1) as bx:
            c0 = bx
            # -- program 0
            pass
    <BLANKLINE>
    """
    w = _Writer(batch)
    mesh = "{" + ", ".join(f'"{n}": {s}' for n, s in batch.mesh) + "}"
    out = [f'"""{header}"""' if header else None,
           "import tilelang.language as T", ""]
    sharded = any(t.layout == "sharded" for t in batch.params())
    if sharded:  # a global-view kernel: the mesh-tensor helpers on one Mesh
        form = "M" if batch.mesh_form == "mesh" else mesh
        out += ["from meshtensor import Mesh, Sharding",
                "from meshtensor.tilelang import mesh_tensor_functions", "",
                f"M = Mesh({mesh})", f"_F = mesh_tensor_functions({form})",
                'annotate = _F["annotate_mesh_tensor_info"]',
                'init = _F["init_mesh_tensor_info"]',
                'mcopy = _F["mesh_tensor_copy"]']
    else:
        out.append("from meshtensor.tilelang import mesh_comm")
        if batch.mesh_form == "mesh":
            out += ["from meshtensor import Mesh", "", f"mc = mesh_comm(Mesh({mesh}))"]
        else:
            out += ["", f"mc = mesh_comm({mesh})"]
    params = ", ".join(f'{t.name}: T.Tensor({t.global_shape(batch)}, "{t.dtype}")'
                       for t in batch.params())
    kernel = ["", "", "@T.prim_func", f"def {KERNEL}({params}):"]
    if sharded:
        w.emit(w.annotation(), 1)
    if batch.launch == "1d":
        w.emit(f"with T.Kernel({batch.size}, threads=1) as bx:", 1)
        if batch.coord_lets and len(batch.shape) > 1:
            for a in range(len(batch.shape)):
                w.emit(f"c{a} = {_coord_text('bx', a, batch.shape)}", 2)
    elif len(batch.shape) == 1:
        w.emit(f"with T.Kernel({batch.shape[0]}, threads=1) as b0:", 1)
    else:
        w.emit(f"with T.Kernel({', '.join(map(str, batch.shape))}, threads=1) as "
               f"({', '.join(w.bvars)}):", 1)
    if batch.launch == "1d" and batch.coord_lets and len(batch.shape) == 1:
        w.emit("c0 = bx", 2)
    for p in batch.programs:
        w.program(p, 2)
    if not any(p.body or p.bufs for p in batch.programs):
        w.emit("pass", 2)
    for h in w.helpers:
        out += ["", ""] + h.rstrip("\n").split("\n")
    out += kernel
    return "\n".join(x for x in out if x is not None) + "\n" + "\n".join(w.lines) + "\n"
