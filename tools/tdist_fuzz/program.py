"""Random multi-rank ``T.dist`` programs: each is a list of phases over per-core buffers
that every rank and core runs (SPMD), written out as TileLang source and modelled in
NumPy.

A program runs on ``W`` ranks (1-4) of an ``nrows x ncols`` mesh (1x1 to 2x3, and 2x1), with
float32 buffers of ``N`` elements holding small integers (every result is exact). Each
phase defines fresh buffers (never written again), so a correct program needs no
synchronisation but the waits that cover its own puts: the phases are

- ``compute``: ``y = x * a + (b + c * rank + d * core)``, or one of two such under a
  condition uniform per rank (``if rank_id % 2 == p``);
- ``store``: a buffer into the output ``B`` (what the model checks);
- ``put``: a peer put to rank ``rank + k``, of a chosen signal kind (SRAM kinds into a
  buffer, DRAM kinds into the DRAM tensor ``D``), automatic or manual expectation,
  submitted at once or by a later ``submit()``, optionally only from even ranks (the
  receivers' expectation then comes from the hoisted automatic count);
- ``put_loop``: puts to every other rank in a ``T.serial`` loop (the destination rank
  depends on the loop variable);
- ``cross_row``: a put to the next row of rank ``rank + k`` (``k`` may be 0: an
  on-chip transfer); ``routed``: a ``routed_put`` table from source rows;
- ``put_signal``; ``barrier``; ``barrier_arrive`` then its wait;
- ``all_gather`` (axis ``None``/0/-1; with ``signals=``: drained by ``wait_all`` or a
  ``wait_any`` loop), ``all_reduce`` (sum/max/min), ``all_to_all`` (rank or row
  domain), ``all_to_allv`` (counts from a rank pattern; ``signal`` or ``signals``);
- ``loop_ring``: a loop of put, wait, accumulate, ``wait()``, barrier;
- ``shard_in``: the column sums of each core's part of ``R``, a ``T.MeshTensor`` split
  over the ranks (``rank_placement=T.dist.placement.shard(0)``: balanced, uneven sizes,
  some parts empty), then over the cores (by rows, or in linear core order);
  ``shard_out``: a buffer written into each core's part of ``S``, split likewise;
- ``core_cond``: a put and its wait (automatic, or a manual expectation that depends
  on the core) only on the cores of one column parity: the other cores run past;
- ``stagger``: ranks 0 and 1 trade buffers through manual expectations that differ
  between the cores (odd cores of rank 0 wait first, even ones send first): cores of
  a chip that waited for each other at every op would deadlock (they run their own
  programs: decision 175).

A *planted* program carries one defect the chip does not define, and must be refused:
a read of a put's destination before its wait (a tile op, or a loop), a source
written before ``T.dist.wait()``, a destination written before the wait, a manual
expectation one too high (deadlock), a barrier only rank 0 reaches (deadlock), a put
never submitted, the order of ``wait_any`` reaching the result, or (``W = 1``) any
communication; ``deadlock_cores``: a ``stagger`` in which every core of rank 0 waits
first (its core 0 then waits for rank 1's core 0, which waits for it).
"""

from __future__ import annotations

import textwrap
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Program", "Phase", "generate", "PLANTS", "KINDS"]

SRAM_KINDS = ("sram_flagreg_inc", "sram_flagreg_value", "sram_memory")
DRAM_KINDS = ("dram_flagreg_inc", "dram_flagreg_value", "dram_memory")
KINDS = SRAM_KINDS + DRAM_KINDS
PLANTS = ("read_before_wait_tile", "read_before_wait_loop", "write_source", "write_dest",
          "deadlock_manual", "deadlock_barrier", "deadlock_cores", "unsubmitted",
          "wait_any_order", "world_one")
F32 = np.float32


@dataclass
class Phase:
    """One phase: ``kind`` and its parameters (``p``)."""

    kind: str
    p: dict = field(default_factory=dict)


@dataclass
class Program:
    """A generated program (see the module docstring)."""

    seed: str
    index: int
    world: int
    mesh: tuple[int, int]
    n: int
    phases: list[Phase]
    nbufs: int = 0
    ngath: int = 0
    nsig: int = 0
    slots: int = 0
    dslots: int = 0
    gshapes: list = field(default_factory=list)
    plant: str | None = None
    features: set = field(default_factory=set)
    #: the rank-split tensors: rows and core placement (``"line"`` or ``"row"``) of the
    #: input ``R`` and the output ``S`` (``None``: not in the program)
    rdims: tuple | None = None
    sdims: tuple | None = None

    @property
    def cores(self) -> int:
        return self.mesh[0] * self.mesh[1]

    # ---- the kernel's source -------------------------------------------------------------
    def source(self) -> str:
        """Python source defining ``build()``, which returns the kernel."""
        W, (NR, NC), N, C = self.world, self.mesh, self.n, self.cores
        body: list[str] = []
        for b in range(self.nbufs):
            body.append(f"b{b} = T.alloc_shared(({N},), 'float32')")
        for g, shape in enumerate(self._gather_shapes()):
            body.append(f"g{g} = T.alloc_shared({shape}, 'float32')")
        # every buffer starts defined, and no put lands before every rank has started
        body.append(f"for j in T.serial({N}):")
        body += [f"    b{b}[j] = T.float32(-7)" for b in range(self.nbufs)]
        for g, shape in enumerate(self._gather_shapes()):
            idx = ", ".join(f"i{d}" for d in range(len(shape)))
            body.append(f"for {idx} in T.grid({', '.join(map(str, shape))}):")
            body.append(f"    g{g}[{idx}] = T.float32(-5)")
        body.append("T.copy(A[bx, 0:N], b0)".replace("N", str(N)))
        if W > 1:
            body.append("T.dist.barrier()")
        for ph in self.phases:
            body += _emit(self, ph)
        inner = textwrap.indent("\n".join(body), " " * 16)
        split = ""
        for name, dims in (("R", self.rdims), ("S", self.sdims)):
            if dims is not None:
                place = "mesh_as_line(0)" if dims[1] == "line" else "row_shard(0)"
                split += (f", {name}: T.MeshTensor(({dims[0]}, {N}), T.placement.{place}, "
                          f"T.float32, rank_placement=T.dist.placement.shard(0))")
        return f'''import tilelang
import tilelang.language as T
from meshtensor.tilelang import tilelang_mesh as tm


def build():
    tm.enable(mesh=({NR}, {NC}))
    with tm.world({W}):
        @T.prim_func
        def k(A: T.Tensor(({C}, {N}), "float32"), B: T.Tensor(({C}, {max(self.slots, 1) * N}), "float32"),
              D: T.Tensor(({C}, {max(self.dslots, 1) * N}), "float32"){split}, rank_id: T.dist.RankId):
            with T.Kernel({C}, threads=1) as bx:
{inner}
    return k
'''

    # ---- the tensors split over ranks ----------------------------------------------------------
    def parts(self, dims: tuple, rank: int) -> list[tuple[int, int]]:
        """Each core's rows ``[lo, hi)`` within rank ``rank``'s part of a rank-split
        tensor of ``dims`` (balanced over the ranks, then over the cores)."""
        n = _extents(dims[0], self.world)[rank]
        n = n[1] - n[0]
        if dims[1] == "line":
            return _extents(n, self.cores)
        rows = _extents(n, self.mesh[0])
        return [rows[c // self.mesh[1]] for c in range(self.cores)]

    def slot_rows(self, dims: tuple) -> int:
        """Rows of each core's slot (the kernel's buffer): the rank slot ceil-divided."""
        per_rank = -(-dims[0] // self.world)
        k = self.cores if dims[1] == "line" else self.mesh[0]
        return -(-per_rank // k)

    def rank_parts(self, dims: tuple) -> list[tuple[int, int]]:
        """Each rank's rows ``[lo, hi)`` of a rank-split tensor of ``dims``."""
        return _extents(dims[0], self.world)

    def _gather_shapes(self) -> list[tuple]:
        return [tuple(s) for s in self.gshapes]

    # ---- inputs and the model -------------------------------------------------------------------
    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng([zlib.crc32(self.seed.encode()), self.index, 1])
        return [rng.integers(-9, 10, (self.cores, self.n)).astype(F32)
                for _ in range(self.world)]

    def r_input(self) -> np.ndarray | None:
        """The global ``R`` (``None`` when the program has none)."""
        if self.rdims is None:
            return None
        rng = np.random.default_rng([zlib.crc32(self.seed.encode()), self.index, 2])
        return rng.integers(-9, 10, (self.rdims[0], self.n)).astype(F32)

    def model(self, A: list[np.ndarray]) -> tuple[list, list, np.ndarray | None]:
        """Every rank's ``B`` and ``D`` after the program, and the global ``S`` (``None``
        when the program has none)."""
        W, C, N = self.world, self.cores, self.n
        bufs = [[[np.full(N, -7, F32) for _ in range(self.nbufs)] for _ in range(C)]
                for _ in range(W)]
        gath = [[[np.full(s, -5, F32) for s in self._gather_shapes()] for _ in range(C)]
                for _ in range(W)]
        B = [np.zeros((C, max(self.slots, 1) * N), F32) for _ in range(W)]
        D = [np.zeros((C, max(self.dslots, 1) * N), F32) for _ in range(W)]
        for r in range(W):
            for c in range(C):
                bufs[r][c][0] = A[r][c].copy()
        st = _State(self, bufs, gath, B, D)
        st.R = self.r_input()
        st.S = None if self.sdims is None else np.zeros((self.sdims[0], N), F32)
        for ph in self.phases:
            _apply(st, ph)
        return B, D, st.S


class _State:
    def __init__(self, prog: Program, bufs: list, gath: list, B: list, D: list):
        self.prog, self.bufs, self.gath, self.B, self.D = prog, bufs, gath, B, D
        self.W, self.C, self.N = prog.world, prog.cores, prog.n
        self.NR, self.NC = prog.mesh
        self.R: np.ndarray | None = None  # the global inputs and outputs split over ranks
        self.S: np.ndarray | None = None


# -- source of each phase -------------------------------------------------------------------------
def _sig(prog: Program, ph: Phase) -> list[str]:
    """The declaration of a phase's signal (``s`` names it)."""
    s = ph.p["sig"]
    kind = ph.p.get("skind")
    k = "" if kind is None else f"kind=T.dist.SignalKind.{kind.upper()}"
    if ph.p.get("manual"):
        return [f"sl{s} = T.dist.signals(1, expect='manual'{', ' + k if k else ''})",
                f"s{s} = sl{s}[0]"]
    return [f"s{s} = T.dist.signal({k})"]


def _wait(ph: Phase, delta: Any = None) -> str:
    s = ph.p["sig"]
    if ph.p.get("manual"):
        return f"T.dist.wait_signal(s{s}, expected_delta={delta})"
    return f"T.dist.wait_signal(s{s})"


def _emit(prog: Program, ph: Phase) -> list[str]:
    W, (NR, NC), N = prog.world, prog.mesh, prog.n
    p, k = ph.p, ph.kind
    nxt = f"(rank_id + {p.get('k', 1)}) % {W}"
    if k == "compute":
        a, b, c, d = p["coef"]
        line = f"b{p['out']}[j] = b{p['x']}[j] * T.float32({a}) + T.float32({b} + {c} * rank_id + {d} * bx)"
        if "cond" in p:
            a2, b2, c2, d2 = p["coef2"]
            alt = f"b{p['out']}[j] = b{p['x']}[j] * T.float32({a2}) + T.float32({b2} + {c2} * rank_id + {d2} * bx)"
            return [f"if rank_id % 2 == {p['cond']}:", f"    for j in T.serial({N}):",
                    f"        {line}", "else:", f"    for j in T.serial({N}):", f"        {alt}"]
        return [f"for j in T.serial({N}):", f"    {line}"]
    if k == "store":
        sl = p["slot"]
        return [f"T.copy(b{p['x']}, B[bx, {sl * N}:{(sl + 1) * N}])"]
    if k == "store_g":  # a gather buffer, element by element
        g, sl, shape = p["g"], p["slot"], p["gshape_of"]
        idx = ", ".join(f"i{d}" for d in range(len(shape)))
        flat = " + ".join(f"i{d} * {int(np.prod(shape[d + 1:]))}" for d in range(len(shape)))
        return [f"for {idx} in T.grid({', '.join(map(str, shape))}):",
                f"    B[bx, {sl * N} + {flat}] = g{g}[{idx}]"]
    if k in ("put", "cross_row", "routed"):
        out = _sig(prog, ph)
        if p.get("dram"):
            dst = f"D[bx, {p['dslot'] * N}:{(p['dslot'] + 1) * N}]"
        else:
            dst = f"b{p['out']}"
        sub = "True" if p.get("submit_now", True) else "False"
        plant = prog.plant if p.get("planted") else None
        if plant == "unsubmitted":
            sub = "False"
        if k == "put":
            call = f"T.dist.put(b{p['x']}, {dst}, {nxt}, signal=s{p['sig']}, submit={sub})"
        elif k == "cross_row":
            call = (f"T.dist.put(b{p['x']}, {dst}, {nxt}, dst_row=(bx // {NC} + 1) % {NR}, "
                    f"signal=s{p['sig']}, submit={sub})")
        else:
            routes = ", ".join(f"[{sr}, {nxt}, {dr}]" for sr, dr in p["routes"])
            call = f"T.dist.routed_put(b{p['x']}, {dst}, [{routes}], signal=s{p['sig']}, submit={sub})"
        if p.get("even"):
            out += ["if rank_id % 2 == 0:", f"    {call}"]
        else:
            out.append(call)
        if p.get("submit_now", True) is False and plant != "unsubmitted":
            out.append("T.dist.submit()")
        if plant == "write_source":
            out += [f"for j in T.serial({N}):", f"    b{p['x']}[j] = b{p['x']}[j] + T.float32(100)"]
        if plant == "write_dest":
            out += [f"for j in T.serial({N}):", f"    b{p['out']}[j] = T.float32(55)"]
        if plant == "read_before_wait_tile":
            out.append(f"T.copy(b{p['out']}, B[bx, {p['pslot'] * N}:{(p['pslot'] + 1) * N}])")
        if plant == "read_before_wait_loop":
            out += [f"for j in T.serial({N}):", f"    B[bx, {p['pslot'] * N} + j] = b{p['out']}[j]"]
        delta = p.get("delta", 1)
        if plant == "deadlock_manual":
            delta += 1
        out.append(_wait(ph, delta))
        if plant == "write_source":
            out.append("T.dist.wait()")
        return out
    if k == "put_loop":
        g = p["g"]
        out = _sig(prog, ph)
        out.append(f"T.copy(b{p['x']}, g{g}[rank_id, 0:{N}])")
        out += [f"for i in T.serial({W - 1}):",
                f"    T.dist.put(b{p['x']}, g{g}[rank_id, 0:{N}], (rank_id + i + 1) % {W}, "
                f"signal=s{p['sig']})", "T.dist.submit()", _wait(ph, W - 1)]
        return out
    if k == "put_signal":
        return _sig(prog, ph) + [f"T.dist.put_signal(s{p['sig']}, {nxt}, submit=True)", _wait(ph)]
    if k == "barrier":
        if prog.plant == "deadlock_barrier" and p.get("planted"):
            return ["if rank_id == 0:", "    T.dist.barrier()"]
        return ["T.dist.barrier()"]
    if k == "barrier_arrive":
        return _sig(prog, ph) + [f"T.dist.barrier_arrive(s{p['sig']}, submit=True)", _wait(ph)]
    if k == "all_gather":
        g, axis = p["g"], p["axis"]
        if p.get("signals"):
            out = [f"sl{p['sig']} = T.dist.signals({W})",
                   f"c{p['sig']} = T.dist.all_gather(b{p['x']}, g{g}, signals=sl{p['sig']}, "
                   f"axis={axis}, submit=True)"]
            if p.get("drain") == "wait_any" or (prog.plant == "wait_any_order" and p.get("planted")):
                out += [f"while T.dist.has_pending(c{p['sig']}):",
                        f"    m{p['sig']} = T.dist.wait_any(c{p['sig']})"]
                if prog.plant == "wait_any_order" and p.get("planted"):
                    out += [f"    for j in T.serial({N}):",
                            f"        B[bx, {p['pslot'] * N} + j] = T.float32(m{p['sig']})"]
                else:
                    out += [f"    b{p['out']}[0] = b{p['out']}[0] + T.float32(1)"]
            else:
                out.append(f"T.dist.wait_all(c{p['sig']})")
            return out
        return _sig(prog, ph) + [f"T.dist.all_gather(b{p['x']}, g{g}, signal=s{p['sig']}, "
                                 f"axis={axis}, submit=True)", _wait(ph)]
    if k == "all_reduce":
        return _sig(prog, ph) + [f"T.dist.all_reduce(b{p['x']}, b{p['out']}, '{p['op']}', "
                                 f"signal=s{p['sig']})"]
    if k in ("all_to_all", "all_to_allv"):
        gs, gd, dom = p["gs"], p["gd"], p["domain"]
        shape = p["shape"]
        idx = ", ".join(f"i{d}" for d in range(len(shape)))
        extra = " + ".join([f"i{d} * {10 ** (d + 1)}" for d in range(len(shape) - 1)])
        out = [f"for {idx} in T.grid({', '.join(map(str, shape))}):",
               f"    g{gs}[{idx}] = b{p['x']}[i{len(shape) - 1}] + T.float32({extra})"]
        if k == "all_to_all":
            return out + _sig(prog, ph) + [
                f"T.dist.all_to_all(g{gs}, g{gd}, signal=s{p['sig']}, domain='{dom}', "
                f"submit=True)", _wait(ph)]
        ep = shape[:-1]
        n_ep = int(np.prod(ep))
        cidx = ", ".join(f"e{d}" for d in range(len(ep)))
        lin = " + ".join(f"e{d} * {int(np.prod(ep[d + 1:]))}" for d in range(len(ep)))
        me = f"(rank_id * {NR} + bx // {NC})" if dom == "row" else "rank_id"
        act = f"T.if_then_else(({me} + ({lin}) + {p['pat']}) % 2 == 0, 1, 0)"
        out += [f"sc{p['sig']} = T.alloc_shared({ep}, 'int32')",
                f"rc{p['sig']} = T.alloc_shared({ep}, 'int32')",
                f"for {cidx} in T.grid({', '.join(map(str, ep))}):",
                f"    sc{p['sig']}[{cidx}] = {act}",
                f"    rc{p['sig']}[{cidx}] = {act}"]
        if p.get("signals"):
            out += [f"sl{p['sig']} = T.dist.signals({n_ep})",
                    f"c{p['sig']} = T.dist.all_to_allv(g{gs}, g{gd}, send_counts=sc{p['sig']}, "
                    f"recv_counts=rc{p['sig']}, signals=sl{p['sig']}, domain='{dom}', submit=True)",
                    f"T.dist.wait_all(c{p['sig']})"]
        else:
            out += [f"s{p['sig']} = T.dist.signal()",
                    f"T.dist.all_to_allv(g{gs}, g{gd}, send_counts=sc{p['sig']}, "
                    f"recv_counts=rc{p['sig']}, signal=s{p['sig']}, domain='{dom}', submit=True)",
                    f"T.dist.wait_signal(s{p['sig']})"]
        return out
    if k == "loop_ring":
        m = p["m"]
        return _sig(prog, ph) + [
            f"for it in T.serial({m}):",
            f"    for j in T.serial({N}):",
            f"        b{p['tmp']}[j] = b{p['x']}[j] + T.float32(it)",
            f"    T.dist.put(b{p['tmp']}, b{p['dst']}, {nxt}, signal=s{p['sig']}, submit=True)",
            f"    T.dist.wait_signal(s{p['sig']})",
            f"    for j in T.serial({N}):",
            f"        b{p['out']}[j] = b{p['out']}[j] + b{p['dst']}[j]",
            "    T.dist.wait()",
            "    T.dist.barrier()"]
    if k == "shard_in":
        L = prog.slot_rows(prog.rdims)
        return [f"rs{p['out']} = T.alloc_shared(({L}, {N}), 'float32')",
                f"T.copy(R, rs{p['out']})",
                f"for j in T.serial({N}):",
                f"    b{p['out']}[j] = T.float32(0)",
                f"    for i in T.serial({L}):",
                f"        b{p['out']}[j] = b{p['out']}[j] + rs{p['out']}[i, j]"]
    if k == "shard_out":
        L = prog.slot_rows(prog.sdims)
        return [f"for i, j in T.grid({L}, {N}):",
                f"    S[i, j] = b{p['x']}[j] * T.float32(i + 1) + T.float32(7 * rank_id)"]
    if k == "core_cond":
        par = p["par"]
        out = _sig(prog, ph)
        # the column's parity: a put's condition must be the same on every row of a
        # column (the upstream's rule; decision 88)
        col = f"bx % {prog.mesh[1]} % 2"
        delta = f"T.if_then_else({col} == {par}, 1, 0)"
        wait = _wait(ph, delta) if p.get("manual") else _wait(ph)
        if p.get("manual"):  # the wait outside the branch: cores of the other parity
            return out + [f"if {col} == {par}:",       # expect nothing
                          f"    T.dist.put(b{p['x']}, b{p['out']}, {nxt}, signal=s{p['sig']}, "
                          f"submit=True)", wait]
        return out + [f"if {col} == {par}:",
                      f"    T.dist.put(b{p['x']}, b{p['out']}, {nxt}, signal=s{p['sig']}, "
                      f"submit=True)", f"    {wait}"]
    if k == "stagger":
        a, t, v = p["sig"], p["sig3"], p["sig4"]
        x, out = p["x"], p["out"]
        one = lambda par: f"T.if_then_else(bx % 2 == {par}, 1, 0)"  # noqa: E731
        return [f"ss{a} = T.dist.signals(1, expect='manual')",
                f"ss{t} = T.dist.signals(1, expect='manual')",
                f"ss{v} = T.dist.signals(1, expect='manual')",
                "if rank_id == 0:",
                f"    T.dist.wait_signal(ss{a}[0], expected_delta="
                f"{1 if prog.plant == 'deadlock_cores' and p.get('planted') else one(1)})",
                f"    T.dist.wait_signal(ss{v}[0], expected_delta=0)",
                f"    T.dist.put(b{x}, b{out}, 1, signal=ss{t}[0], submit=True)",
                f"    T.dist.wait_signal(ss{a}[0], expected_delta={one(0)})",
                "if rank_id == 1:",
                f"    T.dist.wait_signal(ss{t}[0], expected_delta={one(0)})",
                f"    T.dist.put(b{x}, b{out}, 0, signal=ss{a}[0], submit=True)",
                f"    T.dist.wait_signal(ss{t}[0], expected_delta={one(1)})",
                "T.dist.wait()"]
    if k == "comm_at_w1":
        return ["T.dist.barrier()"]
    raise AssertionError(k)


# -- the model of each phase -------------------------------------------------------------------------
def _apply(st: _State, ph: Phase) -> None:
    W, C, N, NR, NC = st.W, st.C, st.N, st.NR, st.NC
    p, k = ph.p, ph.kind
    if k == "compute":
        for r in range(W):
            for c in range(C):
                a, b, cc, d = p["coef"]
                if "cond" in p and r % 2 != p["cond"]:
                    a, b, cc, d = p["coef2"]
                x = st.bufs[r][c][p["x"]]
                st.bufs[r][c][p["out"]] = (x * F32(a) + F32(b + cc * r + d * c)).astype(F32)
        return
    if k == "store":
        for r in range(W):
            for c in range(C):
                st.B[r][c, p["slot"] * N:(p["slot"] + 1) * N] = st.bufs[r][c][p["x"]]
        return
    if k == "store_g":
        for r in range(W):
            for c in range(C):
                v = st.gath[r][c][p["g"]].reshape(-1)
                st.B[r][c, p["slot"] * N:p["slot"] * N + v.size] = v
        return
    if k in ("put", "cross_row", "routed"):
        new = {}
        for r in range(W):
            if p.get("even") and r % 2:
                continue
            q = (r + p.get("k", 1)) % W
            for c in range(C):
                row, col = divmod(c, NC)
                if k == "put":
                    targets = [(q, c)]
                elif k == "cross_row":
                    targets = [(q, ((row + 1) % NR) * NC + col)]
                else:
                    targets = [(q, dr * NC + col) for sr, dr in p["routes"] if sr == row]
                for tq, tc in targets:
                    new[(tq, tc)] = st.bufs[r][c][p["x"]].copy()
        for (q, c), v in new.items():
            if p.get("dram"):
                st.D[q][c, p["dslot"] * N:(p["dslot"] + 1) * N] = v
            else:
                st.bufs[q][c][p["out"]] = v
        return
    if k == "put_loop":
        for r in range(W):
            for c in range(C):
                g = st.gath[r][c][p["g"]]
                for q in range(W):
                    g[q] = st.bufs[q][c][p["x"]]
        return
    if k == "all_gather":
        for r in range(W):
            for c in range(C):
                parts = [st.bufs[q][c][p["x"]] for q in range(W)]
                g = st.gath[r][c][p["g"]]
                g[...] = np.stack(parts) if p["axis"] is None else \
                    np.concatenate(parts).reshape(g.shape)
                if p.get("signals") and p.get("drain") == "wait_any":
                    st.bufs[r][c][p["out"]][0] += F32(W - 1)
        return
    if k == "all_reduce":
        for r in range(W):
            for c in range(C):
                xs = [st.bufs[q][c][p["x"]] for q in range(W)]
                if p["op"] == "sum":
                    acc = np.zeros(N, F32)
                    for x in xs:
                        acc = (acc + x).astype(F32)
                else:
                    acc = (np.max if p["op"] == "max" else np.min)(np.stack(xs), axis=0)
                st.bufs[r][c][p["out"]] = acc.astype(F32)
        return
    if k in ("all_to_all", "all_to_allv"):
        shape = p["shape"]
        row_dom = p["domain"] == "row"

        def src_val(q: int, c: int, ep: tuple) -> np.ndarray:
            x = st.bufs[q][c][p["x"]]
            return (x + F32(sum(i * 10 ** (d + 1) for d, i in enumerate(ep)))).astype(F32)

        def lin(ep: tuple) -> int:
            return ep[0] * NR + ep[1] if row_dom else ep[0]

        for r in range(W):
            for c in range(C):
                row, col = divmod(c, NC)
                g = st.gath[r][c][p["gd"]]
                for q in range(W):
                    for r1 in (range(NR) if row_dom else [row]):
                        sc = r1 * NC + col
                        ep_src = (r, row) if row_dom else (r,)     # what q sent (its slot for me)
                        ep_dst = (q, r1) if row_dom else (q,)      # where it lands here
                        if k == "all_to_allv" and (lin(ep_dst) + lin(ep_src) + p["pat"]) % 2:
                            continue  # the sender's count for this endpoint is 0
                        g[ep_dst] = src_val(q, sc, ep_src)
        return
    if k == "loop_ring":
        for it in range(p["m"]):
            new = {}
            for r in range(W):
                q = (r + p.get("k", 1)) % W
                for c in range(C):
                    tmp = (st.bufs[r][c][p["x"]] + F32(it)).astype(F32)
                    st.bufs[r][c][p["tmp"]] = tmp
                    new[(q, c)] = tmp
            for (q, c), v in new.items():
                st.bufs[q][c][p["dst"]] = v
            for r in range(W):
                for c in range(C):
                    st.bufs[r][c][p["out"]] = (st.bufs[r][c][p["out"]] +
                                               st.bufs[r][c][p["dst"]]).astype(F32)
        return
    if k == "shard_in":
        R = st.R
        for r in range(W):
            lo = st.prog.rank_parts(st.prog.rdims)[r][0]
            for c, (a, b) in enumerate(st.prog.parts(st.prog.rdims, r)):
                acc = np.zeros(N, F32)
                for i in range(b - a):  # in slot order, from zero (the kernel's loop)
                    acc = (acc + R[lo + a + i]).astype(F32)
                st.bufs[r][c][p["out"]] = acc
        return
    if k == "shard_out":
        L = st.prog.slot_rows(st.prog.sdims)
        for r in range(W):
            lo = st.prog.rank_parts(st.prog.sdims)[r][0]
            for c, (a, b) in enumerate(st.prog.parts(st.prog.sdims, r)):
                x = st.bufs[r][c][p["x"]]
                for i in range(min(b - a, L)):
                    st.S[lo + a + i] = (x * F32(i + 1) + F32(7 * r)).astype(F32)
        return
    if k == "core_cond":
        new = {}
        for r in range(W):
            q = (r + p.get("k", 1)) % W
            for c in range(C):
                if c % NC % 2 == p["par"]:
                    new[(q, c)] = st.bufs[r][c][p["x"]].copy()
        for (q, c), v in new.items():
            st.bufs[q][c][p["out"]] = v
        return
    if k == "stagger":
        x0 = [st.bufs[0][c][p["x"]].copy() for c in range(C)]
        x1 = [st.bufs[1][c][p["x"]].copy() for c in range(C)]
        for c in range(C):
            st.bufs[0][c][p["out"]] = x1[c]
            st.bufs[1][c][p["out"]] = x0[c]
        return
    # put_signal, barrier, barrier_arrive, comm_at_w1: no data


def _extents(n: int, k: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` of ``k`` balanced parts of ``n`` (the first ``n % k`` one longer)."""
    base, rem = divmod(int(n), int(k))
    out, lo = [], 0
    for i in range(k):
        hi = lo + base + (1 if i < rem else 0)
        out.append((lo, hi))
        lo = hi
    return out


# -- the generator ---------------------------------------------------------------------------------------
MESHES = ((1, 1), (1, 2), (2, 2), (2, 3), (2, 1))


def generate(seed: str, index: int, plant_rate: float = 0.25,
             plant: str | None = None) -> Program:
    """Program ``index`` of run ``seed`` (a pure function of both); ``plant`` forces
    that defect (and a world it can occur in)."""
    rng = np.random.default_rng([zlib.crc32(str(seed).encode()), index, 0])
    W = int(rng.integers(1, 5))
    if plant is not None:
        W = 1 if plant == "world_one" else max(W, 3 if plant == "wait_any_order" else 2)
    mesh = MESHES[int(rng.integers(len(MESHES)))]
    N = int(rng.choice([2, 4]))
    prog = Program(str(seed), index, W, mesh, N, [])
    if plant is not None:
        if plant not in PLANTS:
            raise ValueError(f"plant must be one of {PLANTS}, got {plant!r}")
    elif rng.random() < plant_rate:
        choices = [x for x in PLANTS[:-1] if not (x == "wait_any_order" and W < 3)]
        plant = "world_one" if W == 1 else str(rng.choice(choices))
    prog.plant = plant
    gen = _Gen(prog, rng)
    gen.build()
    return prog


class _Gen:
    def __init__(self, prog: Program, rng: np.random.Generator):
        self.prog, self.rng = prog, rng
        prog.nbufs = 1          # b0 holds the input
        self.live = [0]         # buffers with model values
        self.inc = 1            # INC registers in use (SRAM): the first barrier's
        self.gshapes: list = []

    def buf(self) -> int:
        self.prog.nbufs += 1
        return self.prog.nbufs - 1

    def gather(self, shape: tuple) -> int:
        self.prog.gshapes.append(tuple(shape))
        self.prog.ngath += 1
        return self.prog.ngath - 1

    def sig(self) -> int:
        self.prog.nsig += 1
        return self.prog.nsig - 1

    def room(self, n: int = 1) -> bool:
        """Whether ``n`` more SRAM INC registers fit (8 per scope on the chip)."""
        if self.inc + n > 8:
            return False
        self.inc += n
        return True

    def slot(self) -> int:
        self.prog.slots += 1
        return self.prog.slots - 1

    def pick(self) -> int:
        return int(self.rng.choice(self.live))

    def add(self, kind: str, **p: Any) -> Phase:
        ph = Phase(kind, p)
        self.prog.phases.append(ph)
        self.prog.features.add(kind)
        return ph

    def store(self, x: int) -> None:
        self.add("store", x=x, slot=self.slot())

    def build(self) -> None:
        prog, rng = self.prog, self.rng
        W = prog.world
        if W == 1:
            for _ in range(int(rng.integers(1, 4))):
                getattr(self, str(rng.choice(["compute", "compute", "shard_in",
                                               "shard_out"])))()
            if prog.plant == "world_one":
                self.add("comm_at_w1")
            for b in self.live:
                self.store(b)
            return
        ops = ["compute", "put", "put", "put_loop", "cross_row", "routed", "put_signal",
               "barrier", "barrier_arrive", "all_gather", "all_reduce", "all_to_all",
               "all_to_allv", "loop_ring", "shard_in", "shard_out", "core_cond",
               "stagger"]
        n = int(rng.integers(2, 6))
        chosen = [str(rng.choice(ops)) for _ in range(n)]
        plant_at = None
        if prog.plant is not None:
            plant_at = int(rng.integers(0, n + 1))
        cost = {"loop_ring": 2, "put": 0, "compute": 0, "shard_in": 0, "shard_out": 0,
                "stagger": 3}
        for i, op in enumerate(chosen + ["end"]):
            if i == plant_at:
                self.planted()
            if op == "end":
                continue
            if op in cost and cost[op] == 0 or self.room(cost.get(op, 1)):
                getattr(self, op)()
        for b in self.live[1:]:
            self.store(b)

    # phases ---------------------------------------------------------------------------------------
    def compute(self) -> None:
        rng = self.rng
        coef = lambda: (int(rng.choice([1, -1, 2])), int(rng.integers(-5, 6)),  # noqa: E731
                        int(rng.integers(-2, 3)), int(rng.integers(-2, 3)))
        out = self.buf()
        p = dict(x=self.pick(), out=out, coef=coef())
        if rng.random() < 0.3:
            p.update(cond=int(rng.integers(2)), coef2=coef())
            self.prog.features.add("rank-condition")
        self.add("compute", **p)
        self.live.append(out)

    def _kind(self, dram: bool) -> str | None:
        r = self.rng.random()
        if r < 0.4:
            return None
        kinds = DRAM_KINDS if dram else SRAM_KINDS
        return str(self.rng.choice(kinds))

    def put(self, planted: bool = False) -> None:
        rng, W = self.rng, self.prog.world
        dram = bool(rng.random() < 0.25) and not planted
        kind = self._kind(dram)
        if not dram and (kind is None or "inc" in kind) and not self.room():
            kind = str(rng.choice(SRAM_KINDS[1:]))  # one sender per receiver: VALUE/MEMORY
        manual = bool(rng.random() < 0.3) and not planted
        even = bool(rng.random() < 0.25) and not manual and not planted and \
            (kind is None or "inc" in kind)
        if manual and kind is not None and "memory" in kind:
            pass
        p = dict(x=self.pick(), k=int(rng.integers(1, W)), sig=self.sig(), skind=kind,
                 manual=manual, even=even, submit_now=bool(rng.random() < 0.7), dram=dram)
        if even:  # receivers of odd senders keep their buffer: only the even ones
            p["submit_now"] = True
        if manual:
            self.prog.features.add("manual-expect")
        if kind:
            self.prog.features.add(kind)
        if dram:
            p["dslot"] = self.prog.dslots
            self.prog.dslots += 1
        else:
            p["out"] = self.buf()
        if planted:
            p["planted"] = True
            p["pslot"] = self.slot()
        self.add("put", **p)
        if not dram:
            self.live.append(p["out"])

    def put_loop(self) -> None:
        W, N = self.prog.world, self.prog.n
        g = self.gather((W, N))
        p = dict(x=self.pick(), g=g, sig=self.sig())
        self.add("put_loop", **p)
        self.add("store_g", g=g, gshape_of=(W, N), slot=self._gslot(W))

    def _gslot(self, blocks: int) -> int:
        s = self.prog.slots
        self.prog.slots += blocks
        return s

    def cross_row(self) -> None:
        if self.prog.mesh[0] < 2:
            return self.put()
        kind = self._kind(False)
        p = dict(x=self.pick(), k=int(self.rng.integers(0, self.prog.world)), sig=self.sig(),
                 skind=kind, out=self.buf())
        self.add("cross_row", **p)
        self.live.append(p["out"])

    def routed(self) -> None:
        NR = self.prog.mesh[0]
        if NR < 2:
            return self.put()
        rows = list(self.rng.permutation(NR))
        dsts = list(self.rng.permutation(NR))  # one sender per destination row: no race
        n = int(self.rng.integers(1, NR + 1))
        routes = [(int(rows[i]), int(dsts[i])) for i in range(n)]
        p = dict(x=self.pick(), k=int(self.rng.integers(1, self.prog.world)), sig=self.sig(),
                 skind=None, routes=routes, out=self.buf())
        self.add("routed", **p)
        self.live.append(p["out"])

    def put_signal(self) -> None:
        self.add("put_signal", k=int(self.rng.integers(1, self.prog.world)), sig=self.sig(),
                 skind=None)

    def barrier(self) -> None:
        self.add("barrier")

    def barrier_arrive(self) -> None:
        self.add("barrier_arrive", sig=self.sig(), skind=None)

    def all_gather(self, planted: bool = False) -> None:
        rng, W, N = self.rng, self.prog.world, self.prog.n
        axis = [None, 0, -1][int(rng.integers(3))]
        shape = (W, N) if axis is None else (W * N,)
        g = self.gather(shape)
        p = dict(x=self.pick(), g=g, axis=axis, sig=self.sig(), skind=None)
        if planted or rng.random() < 0.4:
            p["signals"] = True
            p["drain"] = "wait_any" if (planted or rng.random() < 0.5) else "wait_all"
            if p["drain"] == "wait_any" and not planted:
                p["out"] = self.buf()  # counts the members; starts at -7, as the model
                self.live.append(p["out"])
        if planted:
            p["planted"] = True
            p["pslot"] = self.slot()
        self.add("all_gather", **p)
        self.add("store_g", g=g, gshape_of=shape, slot=self._gslot(W))

    def all_reduce(self) -> None:
        out = self.buf()
        self.add("all_reduce", x=self.pick(), out=out,
                 op=str(self.rng.choice(["sum", "max", "min"])), sig=self.sig(), skind=None)
        self.live.append(out)

    def all_to_all(self, v: bool = False) -> None:
        W, N, NR = self.prog.world, self.prog.n, self.prog.mesh[0]
        dom = "row" if NR > 1 and self.rng.random() < 0.5 else "rank"
        shape = (W, N) if dom == "rank" else (W, NR, N)
        gs, gd = self.gather(shape), self.gather(shape)
        p = dict(x=self.pick(), gs=gs, gd=gd, domain=dom, shape=shape, sig=self.sig(),
                 skind=None, pat=int(self.rng.integers(2)))
        if v:
            p["signals"] = bool(self.rng.random() < 0.5)
        self.add("all_to_allv" if v else "all_to_all", **p)
        blocks = int(np.prod(shape)) // N
        self.add("store_g", g=gd, gshape_of=shape, slot=self._gslot(blocks))

    def all_to_allv(self) -> None:
        self.all_to_all(v=True)

    def loop_ring(self) -> None:
        tmp, dst, out = self.buf(), self.buf(), self.buf()
        x = self.pick()
        # out starts at -7 (the fill), as in the model
        self.add("loop_ring", x=x, tmp=tmp, dst=dst, out=out, m=int(self.rng.integers(1, 4)),
                 k=int(self.rng.integers(1, self.prog.world)), sig=self.sig(), skind=None)
        self.live += [out]

    def _split_dims(self, output: bool = False) -> tuple:
        """Rows of a rank-split tensor (often not a multiple of the world, sometimes
        fewer than ranks times cores: empty parts) and its core placement (an output
        one core each: by rows, the cores of a row would hold copies that differ)."""
        W, C = self.prog.world, self.prog.cores
        rows = int(self.rng.integers(1, 3 * W * C + 2))
        return (rows, "line" if output or self.rng.random() < 0.5 else "row")

    def shard_in(self) -> None:
        if self.prog.rdims is None:
            self.prog.rdims = self._split_dims()
            self.prog.features.add(f"rank-split:{self.prog.rdims[1]}")
        out = self.buf()
        self.add("shard_in", out=out)
        self.live.append(out)

    def shard_out(self) -> None:
        if self.prog.sdims is not None:
            return  # one writer of S
        self.prog.sdims = self._split_dims(output=True)
        self.prog.features.add(f"rank-split:{self.prog.sdims[1]}")
        self.add("shard_out", x=self.pick())

    def core_cond(self) -> None:
        manual = bool(self.rng.random() < 0.5)
        out = self.buf()
        self.add("core_cond", x=self.pick(), out=out, par=int(self.rng.integers(2)),
                 k=int(self.rng.integers(1, self.prog.world)), sig=self.sig(), skind=None,
                 manual=manual)
        if manual:
            self.prog.features.add("manual-expect")
        self.live.append(out)

    def stagger(self) -> None:
        out = self.buf()
        self.add("stagger", x=self.pick(), out=out, sig=self.sig(), sig3=self.sig(),
                 sig4=self.sig())
        self.prog.features.add("manual-expect")
        # ranks past 1 keep out at its fill, as the model (which writes ranks 0 and 1)
        self.live.append(out)

    def planted(self) -> None:
        plant = self.prog.plant
        self.prog.features.add("plant:" + plant)
        if plant in ("read_before_wait_tile", "read_before_wait_loop", "write_source",
                     "write_dest", "deadlock_manual", "unsubmitted"):
            if plant == "deadlock_manual":
                ph_manual = True
            else:
                ph_manual = False
            self.put(planted=True)
            ph = self.prog.phases[-1]
            if ph_manual:
                ph.p["manual"] = True
                ph.p["skind"] = None
            if plant == "write_dest":
                # the value written is stored after the wait: the order shows there
                self.store(ph.p["out"])
        elif plant == "deadlock_barrier":
            self.add("barrier", planted=True)
        elif plant == "deadlock_cores":
            self.stagger()
            self.prog.phases[-1].p["planted"] = True
        elif plant == "wait_any_order":
            self.all_gather(planted=True)


