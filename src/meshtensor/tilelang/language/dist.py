"""``T.dist``: SUNMMIO's rank layer, for kernels that run SPMD on several chips.

After ``tm.enable(mesh=(nrows, ncols))`` this module is ``tilelang.language.dist``
(``T.dist``). A kernel built inside ``with tm.world(W):`` (or a ``world_size=``
argument where the upstream takes one) runs on ``W`` ranks, each a chip with the same
``nrows x ncols`` core mesh. Exactly one parameter is annotated ``rank_id:
T.dist.RankId``; the runner fills it per rank (the caller does not pass it).

Every op checks its arguments as the upstream front end does (its ``RuntimeError``,
``NotImplementedError`` and ``IndexError`` cases are ``ValueError`` here, with the
same text) and emits ONE record of :mod:`..ir.dist_op` where the kernel calls it;
``compile_mesh_kernel`` runs the kernel (``docs/tdist.md`` gives the semantics):

- signals: ``signal(kind=None, expect=None)``, ``signals(count, ...)`` (a
  :class:`SignalList`), the six :class:`SignalKind` s;
- point to point: ``put``, ``routed_put``, ``put_signal``, ``submit``, ``wait``;
- receiver waits: ``wait_signal``, ``wait_signals``, ``wait_all``, ``completion``,
  ``has_pending``, ``wait_any``;
- collectives over the corresponding cores of every rank: ``barrier``,
  ``barrier_arrive``, ``all_gather``, ``all_reduce``, ``all_to_all``, ``all_to_allv``;
- ``placement.replicated()`` / ``placement.shard(dim)`` for ``T.MeshTensor(...,
  rank_placement=...)``, and ``world_size()``.

The ``Example::`` blocks of the public names are kernel code, too large for doctests.
Unless an example shows its own ``@T.prim_func``, it is the body of this kernel, built
for 4 ranks of 2x2 cores (``compile_mesh_kernel(k).run_ranks(...)`` runs it)::

    tm.enable(mesh=(2, 2))
    with tm.world(4):
        @T.prim_func
        def k(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 32), "float32"),
              rank_id: T.dist.RankId):
            ...                 # the example

>>> with world(4):
...     int(world_size())
4
>>> placement.shard(0)
RankShard(0)
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator, Sequence

import numpy as np

import tilelang  # noqa: F401  (first: its bundled tvm)
import tilelang.language as T
from tilelang.language.utils import region as _tl_region
from tvm import ir, tirx

from ...mesh import _is_int
from ..ir.dist_op import SignalRef, encode
from ..ir.evaluate import static_int

__all__ = ["world", "current_world", "world_size", "RankId", "RankPlacementSpec",
           "placement", "SignalKind", "ExpectMode", "CollectiveDomain", "Signal",
           "SignalList", "DistCompletion", "signal", "signals", "put", "routed_put",
           "put_signal", "submit", "wait", "wait_signal", "wait_signals", "wait_all",
           "completion", "has_pending", "wait_any", "barrier", "barrier_arrive",
           "all_gather", "all_reduce", "all_to_all", "all_to_allv", "rank_extents",
           "SIGNAL_KINDS", "is_rank_var", "rank_var_facts", "RANK_ID_MARK"]

_local = threading.local()


def __dir__() -> list[str]:
    """``dir(T.dist)``: the public names and the module's dunders, not its imports
    and helpers (which stay reachable as attributes).

    >>> "put" in __dir__(), "np" in __dir__()
    (True, False)
    """
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})


# -- the world ---------------------------------------------------------------------------------
def _check_world(world_size: Any) -> int:
    if isinstance(world_size, bool) or not _is_int(world_size) or world_size <= 0:
        raise ValueError(f"world_size must be a positive int, got {world_size!r}")
    return int(world_size)


@contextmanager
def world(world_size: int) -> Iterator[int]:
    """Build kernels for ``world_size`` ranks inside this block (the upstream's
    compile-time ``world_size``). Nested blocks must agree.

    >>> with world(2):
    ...     current_world()
    2
    >>> current_world()
    1
    """
    w = _check_world(world_size)
    prev = getattr(_local, "world", None)
    if prev is not None and prev != w:
        raise ValueError(f"Conflicting nested world_size values: {prev} and {w}")
    _local.world = w
    try:
        yield w
    finally:
        _local.world = prev


def current_world() -> int:
    """The world size of the enclosing :func:`world` block (1 outside one)."""
    w = getattr(_local, "world", None)
    return 1 if w is None else w


def world_size() -> tirx.IntImm:
    """``T.dist.world_size()``: the compile-time number of ranks, an ``int32``
    immediate (1 outside a :func:`world` block). Use it to write a kernel once for any
    number of ranks.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            nxt = (rank_id + 1) % T.dist.world_size()      # the next rank of the ring
            T.dist.put(src, dst, nxt, signal=s, submit=True)
            T.dist.wait_signal(s)
            T.copy(dst, A[bx, 0:8])
    """
    return tirx.IntImm("int32", current_world())


def rank_extents(n: int, world_size: int) -> list[tuple[int, int]]:
    """The ``[start, stop)`` of each rank's part of a dim of ``n`` split over
    ``world_size`` ranks: balanced, the first ``n % world_size`` ranks get one more.

    >>> rank_extents(17, 4)
    [(0, 5), (5, 9), (9, 13), (13, 17)]
    """
    base, rem = divmod(int(n), int(world_size))
    out, start = [], 0
    for r in range(world_size):
        size = base + (1 if r < rem else 0)
        out.append((start, start + size))
        start += size
    return out


# -- rank placement --------------------------------------------------------------------------
@dataclass(frozen=True)
class RankPlacementSpec:
    """How a ``T.MeshTensor`` lies across ranks: ``kind`` ``"replicated"`` (every rank
    holds the whole tensor) or ``"shard"`` (dim ``dim`` split over the ranks,
    balanced; each rank's slot is ``ceil(D / W)`` long). Made by :data:`placement`."""

    kind: str
    dim: int = -1

    def __post_init__(self) -> None:
        if self.kind not in ("replicated", "shard"):
            raise TypeError("RankPlacementSpec values must be constructed with "
                            "T.dist.placement")
        if self.kind == "replicated" and self.dim != -1:
            raise ValueError("Replicated Rank placement cannot have a shard dimension")
        if self.kind == "shard" and (isinstance(self.dim, bool) or not _is_int(self.dim)
                                     or self.dim < 0):
            raise ValueError(f"Rank shard dim must be a non-negative int, got {self.dim!r}")

    def __repr__(self) -> str:
        return "RankReplicated()" if self.kind == "replicated" else f"RankShard({self.dim})"

    def check(self, ndim: int) -> "RankPlacementSpec":
        """``ValueError`` unless the shard dim is a dim of a rank-``ndim`` tensor."""
        if self.dim >= ndim:
            raise ValueError(f"Invalid Rank shard dimension: {self.dim}, tensor rank is "
                             f"{ndim}")
        return self

    def rank_shape(self, shape: Sequence[int], world_size: int) -> tuple[int, ...]:
        """The physical shape each rank holds (the shard dim ceil-divided).

        >>> RankPlacementSpec("shard", 0).rank_shape((17, 3), 4)
        (5, 3)
        """
        out = list(shape)
        if self.kind == "shard":
            out[self.dim] = -(-int(out[self.dim]) // world_size)
        return tuple(out)

    def rank_box(self, shape: Sequence[int], world_size: int, rank: int
                 ) -> tuple[slice, ...]:
        """The global region rank ``rank`` holds (its valid part)."""
        box = [slice(0, int(n)) for n in shape]
        if self.kind == "shard":
            lo, hi = rank_extents(shape[self.dim], world_size)[rank]
            box[self.dim] = slice(lo, hi)
        return tuple(box)


class _Placement:
    """``T.dist.placement``: ``replicated()`` or ``shard(dim)``, the
    ``rank_placement=`` of a ``T.MeshTensor`` parameter: how the tensor is split over
    the ranks before its placement splits each rank's part over the cores. Called
    with the global tensor, the kernel gives each rank its part and gathers the
    results back.

    Example::

        @T.prim_func
        def k(A: T.MeshTensor((8, 8), T.placement.row_shard(0), T.float32,
                              rank_placement=T.dist.placement.shard(0)),
              rank_id: T.dist.RankId):
            with T.Kernel() as cid:
                lm, ln = A.local_shape                 # rows 2r, 2r + 1 on rank r
                s = T.alloc_shared((lm, ln), T.float32)
                T.copy(A, s)
                for i, j in T.grid(lm, ln):
                    s[i, j] = s[i, j] + T.float32(rank_id)
                T.copy(s, A)
                T.dist.barrier()
    """

    @staticmethod
    def replicated() -> RankPlacementSpec:
        """Every rank holds the complete tensor (``rank_placement=
        T.dist.placement.replicated()``), as a tensor without ``rank_placement`` does."""
        return RankPlacementSpec("replicated")

    @staticmethod
    def shard(dim: int) -> RankPlacementSpec:
        """Dim ``dim`` is split over the ranks (balanced: the first ``D % W`` ranks
        get one more), as in ``rank_placement=T.dist.placement.shard(0)``."""
        return RankPlacementSpec("shard", dim)


placement = _Placement()


# -- signal kinds and modes ----------------------------------------------------------------------
class SignalKind(str, Enum):
    """The receiver-signal kinds of the chip: an 8-bit increment register (``INC``,
    8 per scope, any number of senders), a 32-bit value register (``VALUE``, 32 per
    scope, one sender) or a word in memory (``MEMORY``, no count limit, one sender),
    each in SRAM or DRAM (the scope of the puts' destinations). Pass one as
    ``kind=`` to :func:`signal` or :func:`signals`; without it the compiler picks.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE)  # one sender
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait_signal(s)
            T.copy(dst, A[bx, 0:8])
    """

    SRAM_FLAGREG_INC = "sram_flagreg_inc"
    DRAM_FLAGREG_INC = "dram_flagreg_inc"
    SRAM_FLAGREG_VALUE = "sram_flagreg_value"
    DRAM_FLAGREG_VALUE = "dram_flagreg_value"
    SRAM_MEMORY = "sram_memory"
    DRAM_MEMORY = "dram_memory"


#: per kind: (scope, update mode, capacity per scope (-1: no limit), state bits)
SIGNAL_KINDS = {
    "sram_flagreg_inc": ("sram", "inc", 8, 8),
    "dram_flagreg_inc": ("dram", "inc", 8, 8),
    "sram_flagreg_value": ("sram", "value", 32, 32),
    "dram_flagreg_value": ("dram", "value", 32, 32),
    "sram_memory": ("sram", "memory", -1, 32),
    "dram_memory": ("dram", "memory", -1, 32),
}


class ExpectMode(str, Enum):
    """Who updates a signal's expected value: the compiler (``AUTO``: it counts the
    arrivals of every put site) or the program (``MANUAL``: ``expected_delta=``).
    Pass it, or its string ``"auto"``/``"manual"``, as ``expect=``.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            sl = T.dist.signals(1, expect=T.dist.ExpectMode.MANUAL)
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=sl[0], submit=True)
            T.dist.wait_signal(sl[0], expected_delta=1)     # we count: one arrival
            T.copy(dst, A[bx, 0:8])
    """

    AUTO = "auto"
    MANUAL = "manual"


class CollectiveDomain(str, Enum):
    """Endpoints of ``all_to_all``/``all_to_allv``: one per rank (``RANK``) or one per
    rank and row (``ROW``). Pass it, or its string ``"rank"``/``"row"``, as
    ``domain=``; the leading dims of the buffers are the endpoints.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((4, 2, 8), "float32")     # [rank, row, data]
            dst = T.alloc_shared((4, 2, 8), "float32")
            s = T.dist.signal()
            for q, r, j in T.grid(4, 2, 8):
                src[q, r, j] = A[bx, j] + q * 10 + r
            T.dist.all_to_all(src, dst, signal=s, domain=T.dist.CollectiveDomain.ROW,
                              submit=True)
            T.dist.wait_signal(s)
    """

    RANK = "rank"
    ROW = "row"


def _expect_mode(expect: Any) -> ExpectMode | None:
    if expect is None or isinstance(expect, ExpectMode):
        return expect
    if isinstance(expect, str):
        try:
            return ExpectMode(expect)
        except ValueError:
            pass
    raise ValueError(f"expect must be None, 'auto', or 'manual', got {expect!r}")


def _domain(domain: Any) -> CollectiveDomain:
    if isinstance(domain, CollectiveDomain):
        return domain
    if isinstance(domain, str):
        try:
            return CollectiveDomain(domain)
        except ValueError:
            pass
    raise ValueError("T.dist collective domain must be 'rank' or 'row'")


# -- the kernel being built ------------------------------------------------------------------------
class _BuildState:
    """What one kernel's build has handed out: the next signal/completion id."""

    def __init__(self) -> None:
        self.next_id = 0

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _builder() -> Any:
    from tilelang.language.eager.builder import Builder
    return Builder.current()


def _state(builder: Any) -> _BuildState:
    st = getattr(builder, "_meshtensor_dist", None)
    if st is None:
        st = _BuildState()
        builder._meshtensor_dist = st
    return st


#: the source name of the span that marks the rank-id parameter's variable
RANK_ID_MARK = "T.dist.RankId"


class _RankIdType:
    """``T.dist.RankId``: the annotation of the kernel's one rank-id parameter (an
    ``int32`` the runner fills per rank). Its variable carries a span named
    ``T.dist.RankId`` (how the ops and passes find it) whose line and column numbers
    record the world size and the ``(nrows, ncols)`` mesh the kernel is built for.

    Example::

        @T.prim_func
        def k(A: T.Tensor((4, 8), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                T.dist.barrier()
                A[bx, 0] = T.float32(rank_id)      # 0.0 on rank 0, 3.0 on rank 3
    """

    dtype = "int32"

    def __call__(self) -> tirx.Var:
        comm = vars(T).get("comm")
        nrows, ncols = (1, 1)
        if comm is not None:
            m = comm.get_target_mesh_shape()
            nrows, ncols = int(m["nrow"]), int(m["ncol"])
        w = current_world()
        return tirx.Var("rank_id", "int32",
                        span=ir.Span(ir.SourceName(RANK_ID_MARK), w, w, nrows, ncols))

    def __repr__(self) -> str:
        return "T.dist.RankId"


RankId = _RankIdType()


def rank_var_facts(var: tirx.Var) -> tuple[int, tuple[int, int]]:
    """``(world size, (nrows, ncols))`` a ``T.dist.RankId`` variable was built for."""
    span = var.span
    return int(span.line), (int(span.column), int(span.end_column))


def is_rank_var(var: Any) -> bool:
    """Whether ``var`` is a ``T.dist.RankId`` parameter's variable."""
    span = getattr(var, "span", None)
    return isinstance(var, tirx.Var) and span is not None and \
        getattr(span.source_name, "name", None) == RANK_ID_MARK


def _rank_var(builder: Any, op: str) -> tirx.Var:
    frame = builder.frames[0] if builder.frames else None
    args = list(getattr(frame, "args", []) or [])
    ranks = [a for a in args if is_rank_var(a)]
    if len(ranks) > 1:
        raise ValueError(f"{op}: a PrimFunc may have at most one T.dist.RankId parameter, "
                         f"got {[str(r) for r in ranks]}")
    if not ranks:
        raise ValueError(f"{op}: T.dist operations require one PrimFunc parameter annotated "
                         f"with T.dist.RankId")
    return ranks[0]


def _context(op: str) -> tuple[Any, tirx.Var, int, tuple[int, int], tirx.PrimExpr]:
    """``(builder, rank var, world size, (nrows, ncols), core id)`` for an op called
    while a kernel is built; ``ValueError`` outside one."""
    b = _builder()
    if b is None:
        raise ValueError(f"{op}: T.dist operations can only be used while constructing a "
                         f"PrimFunc")
    rank = _rank_var(b, op)
    comm = vars(T).get("comm")
    if comm is None:
        raise ValueError(f"{op}: T.dist needs the chip's mesh: call `from meshtensor.tilelang "
                         f"import tilelang_mesh as tm; tm.enable(mesh=(nrows, ncols))` first")
    m = comm.get_target_mesh_shape()
    try:
        core = comm.current_core()
    except ValueError:
        raise ValueError(f"{op}: T.dist operations must be called inside T.Kernel()"
                         ) from None
    return b, rank, current_world(), (int(m["nrow"]), int(m["ncol"])), core


def _emit(op: str, name: str, fields: dict) -> tirx.Call | None:
    _, rank, w, mesh, core = _context(name)
    call = encode(op, w, mesh, rank, core, fields)
    from .comm import _statement
    return _statement(call)


def _value(op: str, name: str, fields: dict) -> tirx.Call:
    _, rank, w, mesh, core = _context(name)
    return encode(op, w, mesh, rank, core, fields)


# -- signals ---------------------------------------------------------------------------------------
def _not_a_value(what: str) -> None:
    # TVM converts an operand through __tvm_ffi_value__: without it, T.evaluate(sig) or
    # sig + 1 stopped in TVM's FFI naming only an opaque Python object
    raise TypeError(f"a {what} is a handle for T.dist ops, not a TIR value: pass it to "
                    f"T.dist.put, wait_signal, wait_all and the like, not to T.evaluate "
                    f"or an expression")


@dataclass(frozen=True, eq=False)
class Signal:
    """A receiver signal (``T.dist.signal()``) or one member of a :class:`SignalList`
    (``member``: an int or an integer expression). A handle, not a value: pass it to
    the ops (``signal=``, :func:`wait_signal`), never to an expression.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()                             # a Signal
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait_signal(s)
            T.copy(dst, A[bx, 0:8])
    """

    kind: SignalKind | None
    id: int
    expect: ExpectMode | None
    _builder: Any
    member: Any = None
    count: int | None = None

    @property
    def ref(self) -> SignalRef:
        return SignalRef(self.id, self.member)

    def __tvm_ffi_value__(self) -> Any:
        _not_a_value("T.dist.Signal")

    @property
    def is_member(self) -> bool:
        return self.count is not None


@dataclass(frozen=True, eq=False)
class SignalList:
    """A compile-time-sized group of homogeneous signals (``T.dist.signals(count)``);
    ``lst[i]`` is member ``i`` (a static index, or an integer expression with
    ``expect="manual"`` or ``None``); ``len(lst)`` is its count and it iterates over
    its members.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((2, 8), "float32")
            sl = T.dist.signals(2)                          # a SignalList
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst[0, 0:8], (rank_id + 1) % 4, signal=sl[0])
            T.dist.put(src, dst[1, 0:8], (rank_id + 3) % 4, signal=sl[1])
            T.dist.submit()
            for m in sl:                                    # each member in turn
                T.dist.wait_signal(m)
            T.copy(dst[1, 0:8], A[bx, 0:8])
    """

    kind: SignalKind | None
    id: int
    count: int
    expect: ExpectMode | None
    _builder: Any

    def __len__(self) -> int:
        return self.count

    def __tvm_ffi_value__(self) -> Any:
        _not_a_value("T.dist.SignalList")

    def __iter__(self) -> Iterator[Signal]:
        return (self[i] for i in range(self.count))

    def __getitem__(self, index: Any) -> Signal:
        if isinstance(index, bool):
            raise TypeError("T.dist.SignalList index must be an integer")
        if _is_int(index):
            i = int(index)
            if i < 0:
                i += self.count
            if not 0 <= i < self.count:
                raise ValueError(f"T.dist.SignalList index out of range: {index} for "
                                 f"{self.count} signals")
            member: Any = i
        elif isinstance(index, tirx.PrimExpr):
            if static_int(index) is not None:
                return self[static_int(index)]
            if self.expect is ExpectMode.AUTO:
                raise TypeError("Dynamic SignalList indexing cannot use expect='auto'; use "
                                "expect=None or expect='manual'")
            if not str(index.dtype).startswith(("int", "uint")):
                raise TypeError("Dynamic SignalList index must have integer dtype")
            member = index
        else:
            raise TypeError("T.dist.SignalList index must be an integer or TIR PrimExpr")
        return Signal(self.kind, self.id, self.expect, self._builder, member, self.count)


@dataclass(frozen=True, eq=False)
class DistCompletion:
    """One phase of a signal list's arrivals (``T.dist.completion``, or returned by
    ``all_gather``/``all_to_allv`` with ``signals=``): member ``i`` is pending while
    its expected arrivals have not all come. Drain it with :func:`wait_all`, or with
    :func:`wait_any` while :func:`has_pending`.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((4, 8), "float32")
            sl = T.dist.signals(4)                          # one per source rank
            T.copy(A[bx, 0:8], src)
            c = T.dist.all_gather(src, dst, signals=sl, submit=True)  # a DistCompletion
            T.dist.wait_all(c)
            T.copy(dst[0, 0:8], A[bx, 0:8])
    """

    id: int
    signals: SignalList
    _builder: Any

    def __tvm_ffi_value__(self) -> Any:
        _not_a_value("T.dist.DistCompletion")


def _kind_arg(kind: Any) -> SignalKind | None:
    if kind is not None and not isinstance(kind, SignalKind):
        raise TypeError(f"kind must be a T.dist.SignalKind, got {kind!r}")
    return kind


def _declare(name: str, kind: Any, expect: Any, count: int, implicit: bool = False
             ) -> tuple[Any, int, SignalKind | None, ExpectMode | None]:
    kind = _kind_arg(kind)
    mode = _expect_mode(expect)
    b, _, _, _, _ = _context(name)
    sid = _state(b).new_id()
    _emit("signal_decl", name, {"id": sid, "count": count,
                                "kind": "auto" if kind is None else kind.value,
                                "expect": "infer" if mode is None else mode.value,
                                "implicit": int(implicit)})
    return b, sid, kind, mode


def signal(*, kind: SignalKind | None = None, expect: Any = None) -> Signal:
    """Declare one receiver signal (one per receiving core of every rank): puts name
    it, it counts their arrivals at the receiver, and :func:`wait_signal` waits until
    it reaches its expected value. ``kind=None`` lets the compiler choose (an INC
    register of the destinations' scope); ``expect`` is an :class:`ExpectMode`.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()                # kind and expected count chosen for us
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait_signal(s)              # the previous rank's src has landed
            T.copy(dst, A[bx, 0:8])
    """
    b, sid, kind, mode = _declare("T.dist.signal", kind, expect, 0)
    return Signal(kind, sid, mode, b)


def _implicit_signal(name: str) -> Signal:
    """The SRAM INC signal ``barrier`` and ``all_reduce`` make where no ``signal=``
    is given: declared where the op is (so exempt from the rule that a kernel
    declares its signals outside loops and branches)."""
    b, sid, kind, mode = _declare(name, SignalKind.SRAM_FLAGREG_INC, None, 0,
                                  implicit=True)
    return Signal(kind, sid, mode, b)


def _count(count: Any) -> int:
    c = static_int(count) if isinstance(count, tirx.PrimExpr) else count
    if isinstance(c, bool) or not _is_int(c) or c <= 0:
        raise ValueError(f"count must be a positive compile-time int, got {count!r}")
    return int(c)


def signals(count: Any, *, kind: SignalKind | None = None, expect: Any = None) -> SignalList:
    """Declare ``count`` homogeneous receiver signals (a :class:`SignalList`), all of
    one ``kind`` and ``expect`` as in :func:`signal`: one per source, per region or
    per phase, for :func:`wait_all`, :func:`completion` and the collectives'
    ``signals=``.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((2, 8), "float32")
            sl = T.dist.signals(2)                 # one signal per half of dst
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst[0, 0:8], (rank_id + 1) % 4, signal=sl[0])
            T.dist.put(src, dst[1, 0:8], (rank_id + 3) % 4, signal=sl[1])
            T.dist.submit()
            T.dist.wait_all(sl)
            T.copy(dst[0, 0:8], A[bx, 0:8])
    """
    kind = _kind_arg(kind)
    _expect_mode(expect)
    n = _count(count)
    b, sid, kind, mode = _declare("T.dist.signals", kind, expect, n)
    return SignalList(kind, sid, n, mode, b)


def _check_signal(sig: Any, name: str, what: str = "signal") -> Signal:
    if not isinstance(sig, Signal):
        raise TypeError(f"{name}: {what} must be created by T.dist.signal, got "
                        f"{type(sig).__name__}")
    if sig._builder is not _builder():
        raise ValueError(f"{name}: a T.dist Signal cannot be used across different PrimFuncs")
    return sig


def _check_list(lst: Any, name: str) -> SignalList:
    if not isinstance(lst, SignalList):
        raise TypeError(f"{name} expects a SignalList, got {type(lst).__name__}")
    if lst._builder is not _builder():
        raise ValueError(f"{name}: a T.dist SignalList cannot be used across different "
                         f"PrimFuncs")
    return lst


def _check_completion(c: Any, name: str) -> DistCompletion:
    if not isinstance(c, DistCompletion):
        raise TypeError(f"{name}: completion must be created by T.dist.completion or "
                        f"returned by a T.dist collective, got {type(c).__name__}")
    if c._builder is not _builder():
        raise ValueError(f"{name}: a T.dist DistCompletion cannot be used across different "
                         f"PrimFuncs")
    return c


def _check_submit(submit: Any, name: str) -> int:
    if not isinstance(submit, bool):
        raise TypeError(f"{name}: submit must be a bool, got {submit!r}")
    return int(submit)


# -- operands ----------------------------------------------------------------------------------------
def _scope_ok(buf: tirx.Buffer) -> bool:
    s = buf.scope()
    return s in ("global", "") or s == "shared" or s.startswith("shared.")


def _operand(name: str, side: str, x: Any, access: str = "r",
             scopes: Any = _scope_ok) -> tuple[tirx.Call, tuple[int, ...], tirx.Buffer, list]:
    """``x`` as a ``tl.region`` call, with its static extents, buffer and starts."""
    buf = getattr(x, "buffer", None) if not isinstance(x, (tirx.Buffer, tirx.BufferRegion)) \
        else None
    if buf is not None and isinstance(buf, tirx.Buffer):  # a MeshTensor wrapper
        x = buf
    if isinstance(x, tirx.Buffer):
        b, mins, exts = x, [tirx.IntImm("int32", 0)] * len(x.shape), list(x.shape)
    elif isinstance(x, tirx.BufferRegion):
        b, mins, exts = x.buffer, [r.min for r in x.region], [r.extent for r in x.region]
    else:
        raise TypeError(f"{name}: {side} must be a buffer or a region of one (S[0:16, 0:8]), "
                        f"got {type(x).__name__}")
    if not scopes(b):
        raise ValueError(f"{name} {side} must use shared.rsram or global/DRAM, got "
                         f"{b.scope()!r} ({b.name!r})")
    static = tuple(static_int(e) for e in exts)
    if None in static:
        raise ValueError(f"{name} {side} region must have static extents, got "
                         f"{[str(e) for e in exts]} ({b.name!r})")
    for d, (m, e, n) in enumerate(zip(mins, static, b.shape)):
        mv, nv = static_int(m), static_int(n)
        if mv is not None and nv is not None and (mv < 0 or mv + e > nv):
            raise ValueError(f"{name}: {side} {b.name!r}: region [{mv}, {mv + e}) runs "
                             f"outside dim {d} of size {nv}")
    return _tl_region(tirx.BufferLoad(b, mins), access, *exts), static, b, mins  # type: ignore


def _numel(ext: Sequence[int]) -> int:
    return int(np.prod(ext, dtype=np.int64))


def _squeezed(ext: Sequence[int]) -> tuple[int, ...]:
    return tuple(e for e in ext if e != 1)


def _one_to_one(name: str, src: Any, dst: Any) -> tuple[tirx.Call, tirx.Call]:
    s_call, s_ext, s_buf, _ = _operand(name, "source", src, "r")
    d_call, d_ext, d_buf, _ = _operand(name, "destination", dst, "w")
    if s_buf.dtype != d_buf.dtype:
        raise TypeError(f"{name} source and destination dtypes must match, got "
                        f"{s_buf.dtype} and {d_buf.dtype}")
    if _squeezed(s_ext) != _squeezed(d_ext):
        raise ValueError(f"{name} source and destination regions must have the same shape "
                         f"(unit dims aside), got {tuple(s_ext)} and {tuple(d_ext)}")
    return s_call, d_call


def _rank_arg(value: Any, name: str, what: str = "dst_rank") -> Any:
    if isinstance(value, bool) or not (_is_int(value) or isinstance(value, tirx.PrimExpr)):
        raise TypeError(f"{name}: {what} must be an integer or TIR PrimExpr, got "
                        f"{type(value).__name__}")
    v = static_int(value) if isinstance(value, tirx.PrimExpr) else int(value)
    w = current_world()
    if v is not None and not 0 <= v < w:
        raise ValueError(f"{name}: {what} {v} is outside [0, {w})")
    if isinstance(value, tirx.PrimExpr) and not str(value.dtype).startswith(("int", "uint")):
        raise TypeError(f"{name}: {what} must have integer dtype, got {value.dtype}")
    return value if v is None else v


def _row_arg(value: Any, name: str, nrows: int, what: str = "dst_row") -> Any:
    if isinstance(value, bool) or not (_is_int(value) or isinstance(value, tirx.PrimExpr)):
        raise TypeError(f"{name}: {what} must be an integer or TIR PrimExpr, got "
                        f"{type(value).__name__}")
    v = static_int(value) if isinstance(value, tirx.PrimExpr) else int(value)
    if v is not None and not 0 <= v < nrows:
        raise ValueError(f"{name}: {what} {v} is outside [0, {nrows})")
    return value if v is None else v


# -- point to point ------------------------------------------------------------------------------------
def put(src: Any, dst: Any, dst_rank: Any, *, dst_row: Any = None, signal: Signal,
        submit: bool = False) -> None:
    """Enqueue the write of this core's ``src`` region into ``dst`` on core
    ``(dst_row, my column)`` of rank ``dst_rank`` (``dst_row`` defaults to my row);
    ``signal`` (at the receiver) counts its arrival. It travels at the next
    ``submit()`` (``submit=True``: now, from an empty queue). ``src`` may be written
    again after :func:`wait`; ``dst`` may be read after the receiver's wait on
    ``signal``.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait_signal(s)
            T.copy(dst, A[bx, 0:8])            # rank r now holds rank r - 1's row
    """
    name = "T.dist.put"
    sig = _check_signal(signal, name)
    sub = _check_submit(submit, name)
    if sig.expect is ExpectMode.MANUAL and not sig.is_member:
        raise ValueError("T.dist.put with expect='manual' requires a SignalList member")
    if sig.expect is None and sig.is_member and isinstance(sig.member, tirx.PrimExpr):
        raise ValueError("A dynamic SignalList member passed to T.dist.put requires "
                         "expect='manual'; expect=None is reserved for protocol inference")
    rank = _rank_arg(dst_rank, name)
    _, _, _, mesh, core = _context(name)
    row = (core // mesh[1]) if dst_row is None else _row_arg(dst_row, name, mesh[0])
    s, d = _one_to_one(name, src, dst)
    _emit("put", name, {"src": s, "dst": d, "dst_rank": rank, "dst_row": row,
                        "signal": sig.ref, "submit": sub})


def routed_put(src: Any, dst: Any, routes: Any, *, signal: Signal, src_rank: Any = None,
               submit: bool = False) -> None:
    """Enqueue a compile-time table of routes ``[src_row, dst_rank, dst_row]``: the
    core of row ``src_row`` in my column sends its ``src`` to ``dst`` on core
    ``(dst_row, my column)`` of rank ``dst_rank``; ``src_rank`` restricts the table to
    one rank. Cores of rows no route names send nothing.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            # row 0 of each column sends to row 1 of the same column on the next rank
            T.dist.routed_put(src, dst, [[0, (rank_id + 1) % 4, 1]], signal=s,
                              submit=True)
            T.dist.wait_signal(s)              # row 1: one arrival; row 0: none
    """
    name = "T.dist.routed_put"
    sig = _check_signal(signal, name)
    sub = _check_submit(submit, name)
    if not isinstance(routes, (list, tuple)) or not routes:
        raise TypeError("routes must be a non-empty list or tuple of route entries")
    w = current_world()
    if src_rank is None:
        sr = -1
    else:
        if isinstance(src_rank, bool) or not _is_int(src_rank):
            raise TypeError(f"src_rank must be a compile-time integer, got {src_rank!r}")
        if not 0 <= src_rank < w:
            raise ValueError(f"src_rank {src_rank} is outside [0, {w})")
        sr = int(src_rank)
    _, _, _, mesh, _ = _context(name)
    table = []
    for route in routes:
        if not isinstance(route, (list, tuple)) or len(route) != 3:
            raise TypeError("each route must be [src_row, dst_rank, dst_row]")
        for key, value in zip(("src_row", "dst_rank", "dst_row"), route):
            if isinstance(value, bool) or not (_is_int(value) or
                                               isinstance(value, tirx.PrimExpr)):
                raise TypeError(f"route {key} must be an integer or TIR PrimExpr")
        srow = static_int(route[0]) if isinstance(route[0], tirx.PrimExpr) else route[0]
        if srow is None:
            raise ValueError(f"{name}: route source row {route[0]} must be a compile-time "
                             f"integer")
        if not 0 <= srow < mesh[0]:
            raise ValueError(f"T.dist.routed_put source row is outside [0, {mesh[0]}): "
                             f"{srow}")
        table.append((int(srow), _rank_arg(route[1], name), _row_arg(route[2], name,
                                                                       mesh[0])))
    s, d = _one_to_one(name, src, dst)
    _emit("routed_put", name, {"src": s, "dst": d, "routes": table, "src_rank": sr,
                               "signal": sig.ref, "submit": sub})


def put_signal(signal: Signal, dst_rank: Any, *, submit: bool = False) -> None:
    """Enqueue a bare update of ``signal`` on my core's peer in rank ``dst_rank`` (no
    data): a "ready" or "done" message.

    Example::

        with T.Kernel(4, threads=1) as bx:
            s = T.dist.signal()
            T.dist.put_signal(s, (rank_id + 1) % 4, submit=True)  # tell the next rank
            T.dist.wait_signal(s)                  # the previous rank told us
    """
    name = "T.dist.put_signal"
    sig = _check_signal(signal, name)
    sub = _check_submit(submit, name)
    if sig.expect is ExpectMode.MANUAL:
        raise ValueError("T.dist.put_signal with expect='manual' is not supported yet; use a "
                         "sender-indexed SignalList with T.dist.put")
    rank = _rank_arg(dst_rank, name)
    _emit("put_signal", name, {"signal": sig.ref, "dst_rank": rank, "submit": sub})


def submit() -> None:
    """Send every descriptor in this core's queue: the puts and signals enqueued
    without ``submit=True`` travel now.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            d0 = T.alloc_shared((8,), "float32")
            d1 = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, d0, (rank_id + 1) % 4, signal=s)
            T.dist.put(src, d1, (rank_id + 3) % 4, signal=s)
            T.dist.submit()                        # both puts leave now
            T.dist.wait_signal(s)                  # both arrivals here
    """
    _emit("submit", "T.dist.submit", {})


def wait() -> None:
    """Wait until every submitted send of this core has completed locally (its sources
    may be reused); it does not wait for the receivers.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait()                          # src has been read
            T.copy(A[bx, 0:8], src)                # so it may be written again
            T.dist.wait_signal(s)
    """
    _emit("wait_send", "T.dist.wait", {})


def wait_signal(signal: Signal, *, expected_delta: Any = None, dst: Any = None) -> None:
    """Wait until ``signal`` reaches its expected value (``expected_delta``, with
    ``expect="manual"``, first adds to it). ``dst``, a buffer or region, is the
    upstream's earlier spelling (the region the wait makes visible): checked, and
    otherwise without effect, since the wait makes every delivery it covers visible.
    After it, the destinations of the puts it covers may be read.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=s, submit=True)
            T.dist.wait_signal(s)                  # dst has landed
            T.copy(dst, A[bx, 0:8])
    """
    name = "T.dist.wait_signal"
    sig = _check_signal(signal, name)
    if dst is not None:
        _operand(name, "dst", dst, "w")
    delta: Any = -1
    if expected_delta is not None:
        if sig.expect is not ExpectMode.MANUAL:
            raise ValueError("T.dist.wait_signal expected_delta requires expect='manual'")
        if isinstance(expected_delta, bool) or not (_is_int(expected_delta) or
                                                    isinstance(expected_delta, tirx.PrimExpr)):
            raise TypeError("expected_delta must be an integer or TIR PrimExpr")
        if _is_int(expected_delta):
            if expected_delta < 0:
                raise ValueError("expected_delta must be non-negative")
            delta = int(expected_delta)
        elif not str(expected_delta.dtype).startswith(("int", "uint")):
            raise TypeError("expected_delta must have integer dtype")
        else:
            delta = tirx.Cast("int32", expected_delta) if expected_delta.dtype != "int32" \
                else expected_delta
    elif sig.expect is ExpectMode.MANUAL:
        delta = -1  # a plain wait on a manual signal: refused when lowered
    _emit("wait_signal", name, {"signal": sig.ref, "delta": delta})


def _deltas(name: str, x: Any, n: int) -> tirx.Call:
    call, ext, buf, _ = _operand(name, "expected_deltas", x, "r",
                                 scopes=lambda b: True)
    if str(buf.dtype) not in ("int32", "uint32"):
        raise TypeError(f"{name} expected_deltas must use int32 or uint32")
    if _squeezed(ext) not in ((n,), ()) or _numel(ext) != n:
        raise ValueError(f"{name} expected_deltas must have shape ({n},), got {tuple(ext)}")
    return call


def wait_signals(signal_list: SignalList, *, expected_deltas: Any) -> None:
    """Add ``expected_deltas[i]`` to member ``i``'s expected value and wait for every
    member (``expect="manual"``). ``expected_deltas`` is an ``int32``/``uint32``
    buffer or region of ``len(signal_list)`` values, computed by the kernel.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            deltas = T.alloc_shared((2,), "int32")
            sl = T.dist.signals(2, expect="manual")
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst, (rank_id + 1) % 4, signal=sl[0], submit=True)
            deltas[0] = 1                          # one arrival on member 0
            deltas[1] = 0                          # none on member 1
            T.dist.wait_signals(sl, expected_deltas=deltas)
            T.copy(dst, A[bx, 0:8])
    """
    name = "T.dist.wait_signals"
    lst = _check_list(signal_list, name)
    if lst.expect is not ExpectMode.MANUAL:
        raise ValueError("T.dist.wait_signals requires a SignalList declared with "
                         "expect='manual'")
    _emit("wait_signals", name, {"list": lst.id, "deltas": _deltas(name, expected_deltas,
                                                                     lst.count)})


def wait_all(signal_list: Any, *, dst: Any = None) -> None:
    """Wait for every member of a signal list, or drain a completion. ``dst``, as in
    :func:`wait_signal`, is the upstream's earlier spelling: checked, without effect.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((2, 8), "float32")
            sl = T.dist.signals(2)
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst[0, 0:8], (rank_id + 1) % 4, signal=sl[0])
            T.dist.put(src, dst[1, 0:8], (rank_id + 3) % 4, signal=sl[1])
            T.dist.submit()
            T.dist.wait_all(sl)                    # both halves of dst have landed
            T.copy(dst[1, 0:8], A[bx, 0:8])
    """
    name = "T.dist.wait_all"
    if dst is not None:
        _operand(name, "dst", dst, "w")
    if isinstance(signal_list, DistCompletion):
        c = _check_completion(signal_list, name)
        _emit("wait_all", name, {"list": c.signals.id, "completion": c.id})
        return
    if not isinstance(signal_list, SignalList):
        raise TypeError(f"T.dist.wait_all expects a SignalList or DistCompletion, got "
                        f"{type(signal_list).__name__}")
    lst = _check_list(signal_list, name)
    _emit("wait_all", name, {"list": lst.id, "completion": -1})


def completion(signals: SignalList, *, expected_deltas: Any = None) -> DistCompletion:
    """Snapshot one phase of ``signals``: member ``i`` is pending iff its expected
    delta (``expected_deltas[i]``, or the arrivals the compiler counted since the
    last snapshot) is positive. Drain it (:func:`wait_all`, or :func:`wait_any` while
    :func:`has_pending`) before the next completion on the same signals.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((2, 8), "float32")
            sl = T.dist.signals(2)
            T.copy(A[bx, 0:8], src)
            T.dist.put(src, dst[0, 0:8], (rank_id + 1) % 4, signal=sl[0])
            T.dist.put(src, dst[1, 0:8], (rank_id + 3) % 4, signal=sl[1])
            T.dist.submit()
            c = T.dist.completion(sl)              # both members pending
            T.dist.wait_all(c)
            T.copy(dst[0, 0:8], A[bx, 0:8])
    """
    name = "T.dist.completion"
    lst = _check_list(signals, name)
    if expected_deltas is None:
        if lst.expect is ExpectMode.MANUAL:
            raise ValueError("T.dist.completion without expected_deltas cannot use "
                             "expect='manual'")
        deltas, mode = None, "auto"
    else:
        if lst.expect is ExpectMode.AUTO:
            raise ValueError("T.dist.completion expected_deltas cannot use expect='auto'")
        deltas, mode = _deltas(name, expected_deltas, lst.count), "manual"
    b, _, _, _, _ = _context(name)
    cid = _state(b).new_id()
    _emit("completion", name, {"id": cid, "list": lst.id, "deltas": deltas, "mode": mode})
    return DistCompletion(cid, lst, b)


def has_pending(completion: DistCompletion) -> tirx.Call:
    """Whether a completion still has pending members (a ``bool`` expression): the
    condition of a ``while`` loop that drains it with :func:`wait_any`.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((4, 8), "float32")
            sl = T.dist.signals(4)
            T.copy(A[bx, 0:8], src)
            c = T.dist.all_gather(src, dst, signals=sl, submit=True)
            while T.dist.has_pending(c):           # every other rank's slot, once
                i = T.dist.wait_any(c)
                for j in T.serial(8):
                    B[bx, i * 8 + j] = dst[i, j]
    """
    c = _check_completion(completion, "T.dist.has_pending")
    return _value("has_pending", "T.dist.has_pending", {"completion": c.id})


def wait_any(completion: DistCompletion) -> tirx.Call:
    """Wait for one pending member of a completion to arrive, consume it and return
    its index (an ``int32`` value; bind it: ``i = T.dist.wait_any(c)``). Use the index
    so that the result does not depend on the order of arrivals.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((4, 8), "float32")
            sl = T.dist.signals(4)
            T.copy(A[bx, 0:8], src)
            c = T.dist.all_gather(src, dst, signals=sl, submit=True)
            while T.dist.has_pending(c):
                i = T.dist.wait_any(c)             # the rank whose slot has landed
                for j in T.serial(8):
                    B[bx, i * 8 + j] = dst[i, j]
    """
    c = _check_completion(completion, "T.dist.wait_any")
    return _value("wait_any", "T.dist.wait_any", {"completion": c.id})


# -- collectives -----------------------------------------------------------------------------------------
_COLLECTIVE_KINDS = (SignalKind.SRAM_FLAGREG_INC, SignalKind.DRAM_FLAGREG_INC)


def _group(group: Any, name: str) -> None:
    if group is not None:
        raise ValueError(f"{name} group is reserved for future subgroup support; pass "
                         f"group=None (got {group!r})")


def _collective_signal(sig: Any, name: str) -> Signal:
    s = _check_signal(sig, name)
    if s.expect is ExpectMode.MANUAL:
        raise ValueError(f"{name} manages expected values internally and cannot use "
                         f"expect='manual'")
    if s.kind is not None and s.kind not in _COLLECTIVE_KINDS:
        raise ValueError(f"{name} requires an automatic or INC flagreg signal, got "
                         f"{s.kind.value}")
    return s


def _no_overlap(name: str, a: tirx.Call, b: tirx.Call) -> None:
    if a.args[0].buffer.data.same_as(b.args[0].buffer.data):
        raise ValueError(f"{name} does not support overlapping source and destination "
                         f"storage ({a.args[0].buffer.name!r})")


def barrier(*, group: Any = None, signal: Signal | None = None) -> None:
    """Every corresponding core of every rank waits for the others (``signal``: an
    automatic or INC signal; one is made when omitted). The cores of one rank do not
    wait for each other.

    Example::

        with T.Kernel(4, threads=1) as bx:
            A[bx, 0] = A[bx, 0] + 1.0
            T.dist.barrier()                       # every rank has got here
    """
    name = "T.dist.barrier"
    _group(group, name)
    if signal is None:  # (ours, where the barrier is: exempt from the loop rule)
        signal = _implicit_signal(name)
    elif not isinstance(signal, Signal):
        raise TypeError(f"signal must be created by T.dist.signal, got "
                        f"{type(signal).__name__}")
    sig = _collective_signal(signal, name)
    _emit("barrier", name, {"signal": sig.ref})


def barrier_arrive(signal: Signal, *, group: Any = None, submit: bool = False) -> None:
    """Enqueue this core's arrival at every other rank's corresponding core (pair with a
    later ``wait_signal(signal)``): a barrier split in two, with work between.

    Example::

        with T.Kernel(4, threads=1) as bx:
            s = T.dist.signal()
            T.dist.barrier_arrive(s, submit=True)  # I am here
            A[bx, 0] = A[bx, 0] + 1.0              # work that needs no other rank
            T.dist.wait_signal(s)                  # every other rank is here too
    """
    name = "T.dist.barrier_arrive"
    _group(group, name)
    if not isinstance(signal, Signal):
        raise TypeError(f"signal must be created by T.dist.signal, got "
                        f"{type(signal).__name__}")
    sig = _collective_signal(signal, name)
    sub = _check_submit(submit, name)
    _emit("barrier_arrive", name, {"signal": sig.ref, "submit": sub})


def all_gather(src: Any, dst: Any, *, signal: Signal | None = None,
               signals: SignalList | None = None, axis: int | None = None,
               group: Any = None, submit: bool = False) -> DistCompletion | None:
    """Slot ``r`` of ``dst`` gets rank ``r``'s ``src`` on every rank (``axis=None``:
    ``dst`` is ``[W, *src]``; ``0``/``-1``: concatenated along the first/last dim).
    Asynchronous: wait on ``signal``, or use the completion returned with
    ``signals=`` (one member per source rank).

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((4, 8), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:8], src)
            T.dist.all_gather(src, dst, signal=s, submit=True)  # dst[q]: rank q's src
            T.dist.wait_signal(s)
            for q, j in T.grid(4, 8):
                B[bx, q * 8 + j] = dst[q, j]
    """
    name = "T.dist.all_gather"
    _group(group, name)
    if axis is not None:
        if isinstance(axis, bool) or not _is_int(axis):
            raise TypeError(f"T.dist.all_gather axis must be None or an integer, got {axis!r}")
        if axis not in (0, -1):
            raise ValueError(f"T.dist.all_gather only supports axis=None, axis=0, or axis=-1, "
                             f"got {axis}")
    if (signal is None) == (signals is None):
        raise TypeError("T.dist.all_gather requires exactly one of signal or signals")
    w = current_world()
    if signal is not None:
        sig: Signal | None = _collective_signal(signal, name)
        lst = None
    else:
        lst = _check_list(signals, name)
        if len(lst) != w:
            raise ValueError(f"T.dist.all_gather requires one signal per source Rank, got "
                             f"{len(lst)}")
        if lst.expect is ExpectMode.MANUAL:
            raise ValueError("T.dist.all_gather manages expected values internally and "
                             "cannot use expect='manual'")
        sig = None
    sub = _check_submit(submit, name)
    s_call, s_ext, s_buf, _ = _operand(name, "source", src, "r")
    d_call, d_ext, d_buf, _ = _operand(name, "destination", dst, "w")
    if axis is None:
        want = (w,) + tuple(s_ext)
    else:
        d = 0 if axis == 0 else len(s_ext) - 1
        want = tuple(e * w if i == d else e for i, e in enumerate(s_ext))
    if tuple(d_ext) != want:
        raise ValueError(f"T.dist.all_gather destination shape must be {list(want)} to hold "
                         f"{w} ranks' {list(s_ext)}, got {list(d_ext)}")
    if s_buf.dtype != d_buf.dtype:
        raise TypeError(f"T.dist.all_gather source and destination dtypes must match, got "
                        f"{s_buf.dtype} and {d_buf.dtype}")
    _no_overlap(name, s_call, d_call)
    cid = -1
    b, _, _, _, _ = _context(name)
    if lst is not None:
        cid = _state(b).new_id()
    _emit("all_gather", name, {"src": s_call, "dst": d_call,
                               "axis": -2 if axis is None else axis,
                               "signal": None if sig is None else sig.ref,
                               "list": -1 if lst is None else lst.id, "completion": cid,
                               "submit": sub})
    return None if lst is None else DistCompletion(cid, lst, b)


def all_reduce(src: Any, dst: Any, reduce_type: str = "sum", *,
               signal: Signal | None = None, group: Any = None) -> None:
    """Synchronously reduce the corresponding cores' ``src`` over every rank, in rank
    order ``0..W-1``, into ``dst`` on every rank (``sum``/``max``/``min``; ``signal``:
    an automatic or SRAM INC signal, one is made when omitted, as the upstream's
    earlier API did). Every rank gets the same bits. ``src`` and ``dst`` are shared
    (RSRAM) buffers or regions of one shape.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((8,), "float32")
            dst = T.alloc_shared((8,), "float32")
            T.copy(A[bx, 0:8], src)
            T.dist.all_reduce(src, dst, "sum")     # returns with dst complete
            T.copy(dst, A[bx, 0:8])
    """
    name = "T.dist.all_reduce"
    _group(group, name)
    if signal is None:  # (ours, where the call is: exempt from the loop rule)
        signal = _implicit_signal(name)
    if not isinstance(reduce_type, str):
        raise TypeError(f"T.dist.all_reduce reduce_type must be a string, got "
                        f"{reduce_type!r}")
    kind = reduce_type.lower()
    if kind not in ("sum", "max", "min"):
        raise ValueError(f"T.dist.all_reduce reduce_type must be one of ('sum', 'max', "
                         f"'min'), got {reduce_type!r}")
    sig = _collective_signal(signal, name)
    if sig.kind is SignalKind.DRAM_FLAGREG_INC:
        raise ValueError("T.dist.all_reduce requires an SRAM INC signal for its RSRAM gather "
                         "buffer")

    def shared_only(b: tirx.Buffer) -> bool:
        s = b.scope()
        return s == "shared" or s.startswith("shared.")

    for side, x in (("source", src), ("destination", dst)):
        b = x.buffer if isinstance(x, tirx.BufferRegion) else x
        if isinstance(b, tirx.Buffer) and not shared_only(b):
            raise ValueError(f"T.dist.all_reduce {side} must use RSRAM or generic shared "
                             f"scope, got {b.scope()!r}")
    s_call, s_ext, s_buf, _ = _operand(name, "source", src, "r", shared_only)
    d_call, d_ext, d_buf, _ = _operand(name, "destination", dst, "w", shared_only)
    if s_buf.dtype != d_buf.dtype:
        raise TypeError(f"T.dist.all_reduce source and destination dtypes must match, got "
                        f"{s_buf.dtype} and {d_buf.dtype}")
    _no_overlap(name, s_call, d_call)
    if tuple(s_ext) != tuple(d_ext):
        raise ValueError(f"T.dist.all_reduce source and destination regions must have "
                         f"identical shapes, got {list(s_ext)} and {list(d_ext)}")
    _emit("all_reduce", name, {"src": s_call, "dst": d_call, "reduce_type": kind,
                               "signal": sig.ref})


def _endpoint_dims(name: str, ext: Sequence[int], dom: CollectiveDomain, nrows: int,
                   extra: int = 0) -> list[int]:
    prefix = [current_world()] + ([nrows] if dom is CollectiveDomain.ROW else [])
    if len(ext) < len(prefix) + extra:
        if extra:
            raise ValueError(f"{name} domain={dom.value!r} requires endpoint dimensions "
                             f"followed by a capacity dimension")
        raise ValueError(f"{name} domain={dom.value!r} requires {len(prefix)} leading "
                         f"endpoint dimensions")
    for d, want in enumerate(prefix):
        if ext[d] != want:
            raise ValueError(f"{name} domain={dom.value!r} expects leading extent {d} to be "
                             f"{want}, got {ext[d]}")
    return prefix


def all_to_all(src: Any, dst: Any, *, signal: Signal, domain: Any = CollectiveDomain.RANK,
               group: Any = None, submit: bool = False) -> None:
    """Exchange equal chunks: rank domain, core ``(r, c)`` of rank ``p`` sends
    ``src[q]`` to ``dst[p]`` of core ``(r, c)`` on rank ``q``; row domain, it sends
    ``src[q, r1]`` to ``dst[p, r]`` of core ``(r1, c)`` on rank ``q``. Asynchronous:
    wait on ``signal``.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((4, 8), "float32")        # src[q]: for rank q
            dst = T.alloc_shared((4, 8), "float32")        # dst[p]: from rank p
            s = T.dist.signal()
            for q, j in T.grid(4, 8):
                src[q, j] = A[bx, j] * 10 + q
            T.dist.all_to_all(src, dst, signal=s, submit=True)
            T.dist.wait_signal(s)
            for p, j in T.grid(4, 8):
                B[bx, p * 8 + j] = dst[p, j]
    """
    name = "T.dist.all_to_all"
    _group(group, name)
    dom = _domain(domain)
    sig = _collective_signal(signal, name)
    sub = _check_submit(submit, name)
    s_call, s_ext, s_buf, _ = _operand(name, "source", src, "r")
    d_call, d_ext, d_buf, _ = _operand(name, "destination", dst, "w")
    if s_buf.dtype != d_buf.dtype:
        raise TypeError(f"T.dist.all_to_all source and destination dtypes must match, got "
                        f"{s_buf.dtype} and {d_buf.dtype}")
    _no_overlap(name, s_call, d_call)
    if tuple(s_ext) != tuple(d_ext):
        raise ValueError(f"T.dist.all_to_all source and destination regions must have "
                         f"identical shapes, got {list(s_ext)} and {list(d_ext)}")
    _, _, _, mesh, _ = _context(name)
    _endpoint_dims(name, s_ext, dom, mesh[0])
    _emit("all_to_all", name, {"src": s_call, "dst": d_call, "domain": dom.value,
                               "signal": sig.ref, "submit": sub})


def all_to_allv(src: Any, dst: Any, *, send_counts: Any, recv_counts: Any,
                signal: Signal | None = None, signals: SignalList | None = None,
                domain: Any = CollectiveDomain.RANK, group: Any = None,
                submit: bool = False) -> DistCompletion | None:
    """A fixed-capacity exchange: ``src``/``dst`` are ``[endpoints..., capacity...]``;
    the slot for endpoint ``e`` is sent (whole) iff ``send_counts[e] > 0``; a receiver
    expects one arrival per remote endpoint with ``recv_counts[e] > 0``. With
    ``signals=`` (one per source endpoint) it returns a completion. The counts are
    ``int32``/``uint32`` buffers of the endpoint dims; senders and receivers must
    agree on them.

    Example::

        with T.Kernel(4, threads=1) as bx:
            src = T.alloc_shared((4, 8), "float32")        # [rank, capacity]
            dst = T.alloc_shared((4, 8), "float32")
            sc = T.alloc_shared((4,), "int32")
            rc = T.alloc_shared((4,), "int32")
            s = T.dist.signal()
            for q, j in T.grid(4, 8):
                src[q, j] = A[bx, j] + q
            for q in T.serial(4):                          # only to and from rank r ^ 1
                sc[q] = T.if_then_else(q == rank_id ^ 1, 1, 0)
                rc[q] = T.if_then_else(q == rank_id ^ 1, 1, 0)
            T.dist.all_to_allv(src, dst, send_counts=sc, recv_counts=rc, signal=s,
                               submit=True)
            T.dist.wait_signal(s)
            for j in T.serial(8):                          # the one slot that came
                B[bx, j] = dst[rank_id ^ 1, j]
    """
    name = "T.dist.all_to_allv"
    _group(group, name)
    dom = _domain(domain)
    sub = _check_submit(submit, name)
    if (signal is None) == (signals is None):
        raise TypeError("T.dist.all_to_allv requires exactly one of signal or signals")
    if signal is not None:
        sig: Signal | None = _check_signal(signal, name)
        if sig.expect is ExpectMode.AUTO:
            raise ValueError("T.dist.all_to_allv provides protocol expected values and "
                             "cannot use expect='auto'")
        if sig.kind is not None and sig.kind not in _COLLECTIVE_KINDS:
            raise ValueError("T.dist.all_to_allv requires an automatic or INC flagreg "
                             "signal")
        lst = None
    else:
        lst = _check_list(signals, name)
        if lst.expect is ExpectMode.AUTO:
            raise ValueError("T.dist.all_to_allv provides protocol expected values and "
                             "cannot use expect='auto'")
        sig = None
    s_call, s_ext, s_buf, _ = _operand(name, "source", src, "r")
    d_call, d_ext, d_buf, _ = _operand(name, "destination", dst, "w")
    if s_buf.dtype != d_buf.dtype:
        raise TypeError(f"T.dist.all_to_allv source and destination dtypes must match, got "
                        f"{s_buf.dtype} and {d_buf.dtype}")
    _no_overlap(name, s_call, d_call)
    if tuple(s_ext) != tuple(d_ext):
        raise ValueError(f"T.dist.all_to_allv source and destination regions must have "
                         f"identical shapes, got {list(s_ext)} and {list(d_ext)}")
    _, _, _, mesh, _ = _context(name)
    prefix = _endpoint_dims(name, s_ext, dom, mesh[0], extra=1)
    counts = []
    for key, x in (("send_counts", send_counts), ("recv_counts", recv_counts)):
        call, ext, buf, _ = _operand(name, key, x, "r", scopes=lambda b: True)
        if str(buf.dtype) not in ("int32", "uint32"):
            raise TypeError(f"T.dist.all_to_allv {key} must use int32 or uint32 values")
        if tuple(ext) != tuple(prefix):
            raise ValueError(f"T.dist.all_to_allv {key} shape must be {tuple(prefix)}, got "
                             f"{tuple(ext)}")
        counts.append(call)
    n = _numel(prefix)
    if lst is not None and len(lst) != n:
        raise ValueError(f"T.dist.all_to_allv domain={dom.value!r} requires {n} signals, "
                         f"got {len(lst)}")
    b, _, _, _, _ = _context(name)
    cid = -1 if lst is None else _state(b).new_id()
    _emit("all_to_allv", name, {"src": s_call, "dst": d_call, "send_counts": counts[0],
                                "recv_counts": counts[1], "domain": dom.value,
                                "signal": None if sig is None else sig.ref,
                                "list": -1 if lst is None else lst.id, "completion": cid,
                                "submit": sub})
    return None if lst is None else DistCompletion(cid, lst, b)
