"""What the chips do for a ``T.dist`` kernel: signals, expected values, generations,
send queues, completions and the collectives, for one rank (:class:`RankRuntime`),
under a deterministic schedule shared by all ranks (:class:`Job`).

**Schedule.** Every core of every rank is an *actor* (its own program, as on the chip:
:mod:`..transform.split_cores`), numbered ``rank * cores + core``. Exactly one actor
runs at a time, C code included: it holds the *baton* from when it starts (or resumes)
until it blocks (in a wait no arrival has satisfied, or at a barrier of its chip's
cores the others have not reached), or finishes; then the baton goes to the next actor
that can make progress, in a fixed cyclic order. Nothing depends on thread timing, so
a run gives the same bits every time and on every executor (threads in one process,
or one process per rank passing the baton as a message, :mod:`meshtensor.dist.kernel`).
A kernel whose result does not depend on the order of arrivals (every one the chip
defines) gets that result under any schedule; the checked run (``policy="late"``) finds
the ones whose result does.

**Deadlock.** When the actor holding the baton blocks or finishes and no actor can make
progress (none is new, none has its wait satisfied, no put in flight could satisfy
one), the job stops at once with a :class:`DistDeadlockError` naming every blocked
rank, core, op, signal, expected and current value.

**Policies.** ``"early"`` (every run): a put's source is read when it is submitted
and its data and signal land at once. ``"late"`` (the second run of a checked call):
actors take turns in the opposite order; a put's data is read from its source at the
sender's ``T.dist.wait()`` (or when it is needed) and lands only when a receiver's wait
cannot be satisfied without it, newest sender first (a sender's messages to one core
stay in order); until it lands, its destination holds a poison pattern (NaN payloads,
``0xA5`` bytes). A source written before ``T.dist.wait()`` or a destination written
before the covering wait is then a :class:`DistRaceError` naming the put; a read of
a destination before its covering wait gives the poison, which the caller finds by
comparing the two runs' results.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...text import fitted, plural
from ..transform.lower_dist import DistProgram, SignalPlan, Site

__all__ = ["Job", "RankRuntime", "DistDeadlockError", "DistRaceError", "DistRuntimeError",
           "InProcessBaton", "np_dtype", "POISON"]


class DistRuntimeError(ValueError):
    """A ``T.dist`` kernel did what the chip does not define (raised by the call; its
    report in lines of at most 80 columns)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        fitted(self)


class DistDeadlockError(DistRuntimeError):
    """Every rank waits and nothing in flight can wake one (``detected_at``: when the
    last rank blocked, ``time.time()``)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        import time
        self.detected_at = time.time()


class DistRaceError(DistRuntimeError):
    """A result that depends on the order of arrivals."""


def np_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a TIR dtype (bfloat16 and float8 kinds via ``ml_dtypes``)."""
    name = str(dtype)
    if name in ("bool",):
        return np.dtype(np.bool_)
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


# byte patterns of the poison a late run writes over a destination in flight
_NAN_POISON = {2: b"\xa5\x7f", 4: b"\xa5\xa5\xc0\x7f", 8: b"\xa5\xa5\xa5\xa5\xa5\xa5\xf8\x7f"}


def POISON(dtype: np.dtype) -> bytes:  # noqa: N802 (a constant table by dtype)
    """One element of poison: a NaN with a payload for floats, ``0xA5`` bytes else."""
    if dtype.kind == "f" and dtype.itemsize in _NAN_POISON:
        return _NAN_POISON[dtype.itemsize]
    name = dtype.name
    if "bfloat16" in name:
        return b"\xa5\x7f"
    if "float8" in name:
        return b"\x7f"
    return b"\xa5" * dtype.itemsize


def _arrived(obs: int, exp: int, plan: SignalPlan) -> bool:
    if plan.mode == "inc":  # 8-bit registers compare with wraparound
        return ((obs - exp) & 0xFF) < 128
    return obs >= exp


@dataclass
class Cond:
    """What a blocked core waits for, at op ``site``: ``mode`` ``"all"`` or ``"any"``
    of ``items`` ``(slot, expected)`` (signals); ``"sync"``: every core of ``items[0]``
    (a tuple of cores) at the barrier ``site`` ``items[1]`` times."""

    core: int
    mode: str
    items: list
    site: Site


class Message:
    """One put (or bare signal update) on its way."""

    __slots__ = ("src_rank", "src_core", "dst_rank", "dst_core", "target", "src_ref",
                 "payload", "snapshot", "slot", "value", "site", "seq", "landed",
                 "staged", "clobbered")

    def __init__(self, **kw: Any):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


# -- the job: every rank's runtime and the shared schedule ----------------------------------------
class JobState:
    """The state every rank shares (it travels with the baton between processes)."""

    def __init__(self, world: int, ncores: int, nslots: int, policy: str):
        self.ncores = ncores
        self.status = ["new"] * (world * ncores)  # per actor: new | run | blocked | done
        self.cond: list[Cond | None] = [None] * (world * ncores)
        self.arrivals: dict = {}               # (rank, barrier site) -> arrivals per core
        self.signals = np.zeros((world, ncores, max(nslots, 1)), dtype=np.int64)
        self.senders: dict = {}                # value-kind receiver -> its one sender
        self.inflight: list[Message] = []      # late policy: sent, not landed
        self.inbox: list[list] = [[] for _ in range(world)]  # data to land at a resume
        self.queued: dict = {}                 # blocked actor -> sends it has queued
        self.error: Exception | None = None
        self.origin: int | None = None         # the rank that found the error
        self.holder: int | None = None         # the actor holding the baton
        self.policy = policy


class InProcessBaton:
    """The baton between the threads of one process (one per actor). Each actor waits
    on its own condition, so handing the baton on wakes one thread, not all."""

    def __init__(self, state: JobState, first: int):
        self.state = state
        self.lock = threading.Lock()
        self.cvs: dict = {}
        state.holder = first

    def _cv(self, actor: int) -> threading.Condition:
        cv = self.cvs.get(actor)
        if cv is None:
            cv = self.cvs[actor] = threading.Condition(self.lock)
        return cv

    def acquire(self, actor: int) -> JobState:
        with self.lock:
            cv = self._cv(actor)
            while self.state.holder != actor and self.state.error is None:
                cv.wait()
        return self.state

    def give(self, actor: int | None) -> None:
        with self.lock:
            self.state.holder = actor
            if actor is not None:
                self._cv(actor).notify()

    def fail(self, error: Exception) -> None:
        with self.lock:
            if self.state.error is None:
                self.state.error = error
                self.state.origin = self.state.holder
            self.state.holder = None
            for cv in self.cvs.values():
                cv.notify_all()


class Job:
    """One call of a ``T.dist`` kernel on every rank of a world (in this process)."""

    def __init__(self, prog: DistProgram, policy: str = "early"):
        if policy not in ("early", "late"):
            raise ValueError(f"policy must be 'early' or 'late', got {policy!r}")
        self.prog = prog
        self.policy = policy
        self.state = JobState(prog.world, prog.ncores, prog.nslots, policy)
        self.baton = InProcessBaton(self.state, self.first())
        self.ranks = [RankRuntime(self, r) for r in range(prog.world)]
        self.log: list | None = None  # transfers, when the traffic is recorded

    def record(self, *item: Any) -> None:
        """A transfer: ``("chip", src rank, dst rank, core, bytes, site)`` between
        corresponding cores of two chips, or ``("onchip", rank, src core, dst core,
        bytes, site)`` on one chip (a routed put's first leg, an on-chip put)."""
        if self.log is not None:
            self.log.append(item)

    def first(self) -> int:
        """The actor that starts (every actor is ``rank * cores + core``)."""
        return 0 if self.policy == "early" else self.prog.world * self.prog.ncores - 1

    def order(self, after: int) -> list[int]:
        """The actors in the order the baton visits them after ``after``."""
        n = self.prog.world * self.prog.ncores
        step = 1 if self.policy == "early" else -1
        return [(after + step * i) % n for i in range(1, n + 1)]

    def rank_view(self, rank: int, core: int, target: tuple) -> np.ndarray:
        return self.ranks[rank].target_view(core, target)

    def deliver(self, rank: int, core: int, target: tuple, data: np.ndarray) -> None:
        """Early policy: put ``data`` into rank ``rank``'s memory now (it is paused)."""
        dst = self.rank_view(rank, core, target)
        dst[...] = data.reshape(dst.shape)

    def runnable(self, actor: int) -> bool:
        st = self.state
        if st.status[actor] == "new":
            return True
        if st.status[actor] != "blocked":
            return False
        return satisfiable(self.prog, st, actor // self.prog.ncores, st.cond[actor])


def slot_plan(prog: DistProgram, slot: int) -> tuple[SignalPlan, int]:
    """The signal (list) holding ``slot`` and the member index."""
    for plan in prog.signals.values():
        if plan.base <= slot < plan.base + plan.slots:
            return plan, slot - plan.base
    raise AssertionError(slot)  # pragma: no cover


def signal_after(prog: DistProgram, current: int, m: Message) -> int:
    plan, _ = slot_plan(prog, m.slot)
    if plan.mode == "inc":
        return (current + 1) & 0xFF
    return int(m.value) & 0xFFFFFFFF


def satisfied(prog: DistProgram, sig: np.ndarray, cond: Cond) -> bool:
    """Whether a signal ``cond`` holds for signal values ``sig`` (one rank's,
    ``(cores, slots)``)."""
    hits = (_arrived(int(sig[cond.core, s]), e, slot_plan(prog, s)[0]) for s, e in cond.items)
    return all(hits) if cond.mode == "all" else any(hits)


def sync_done(st: JobState, rank: int, cond: Cond) -> bool:
    """Whether a ``"sync"`` ``cond`` of a core of ``rank`` holds."""
    cores, times = cond.items
    got = st.arrivals.get((rank, cond.site.index))
    return got is not None and min(got[c] for c in cores) >= times


def satisfiable(prog: DistProgram, st: JobState, rank: int, cond: Cond) -> bool:
    """Satisfied now, or (a signal wait) once every put in flight to that core has
    landed."""
    if cond.mode == "sync":
        return sync_done(st, rank, cond)
    if satisfied(prog, st.signals[rank], cond):
        return True
    mine = [m for m in st.inflight if m.dst_rank == rank and m.dst_core == cond.core]
    if not mine:
        return False
    sig = st.signals[rank].copy()
    for m in mine:
        if m.slot is not None:
            sig[m.dst_core, m.slot] = signal_after(prog, int(sig[m.dst_core, m.slot]), m)
    return satisfied(prog, sig, cond)


def deadlock_text(prog: DistProgram, st: JobState) -> str:
    """Every blocked rank, core, op, signal, expected and current value."""
    ncols, n = prog.mesh_shape[1], prog.ncores
    lines = ["deadlock: every rank is blocked and no put in flight can satisfy a wait:"]
    for q in range(prog.world):
        mine = range(q * n, q * n + n)
        if all(st.status[a] == "done" for a in mine):
            lines.append(f"  rank {q} has finished")
            continue
        for a in mine:
            core = divmod(a - q * n, ncols)
            c = st.cond[a]
            if st.status[a] == "done":
                lines.append(f"  rank {q} core {core} has finished")
                continue
            if st.status[a] != "blocked" or c is None:
                continue
            if c.mode == "sync":
                got = st.arrivals.get((q, c.site.index), [0] * n)
                late = [divmod(x, ncols) for x in c.items[0] if got[x] < c.items[1]]
                lines.append(f"  rank {q} core {core} waits at the barrier of {c.site.name} "
                             f"for core(s) {', '.join(map(str, late))} of its chip")
                continue
            parts = []
            for slot, exp in c.items:
                plan, member = slot_plan(prog, slot)
                name = plan.name + (f"[{member}]" if plan.count else "")
                parts.append(f"{name} expected {exp}, current "
                             f"{int(st.signals[q, c.core, slot])}")
            how = "any of " if c.mode == "any" else "all of " if len(parts) > 1 else ""
            lines.append(f"  rank {q} core {core} waits in {c.site.name} for "
                         f"{how}{'; '.join(parts)}")
            if st.queued.get(a):
                lines.append(f"    with {plural(st.queued[a], 'queued send')} not submitted "
                             f"(the send queue is not submitted: call T.dist.submit(), "
                             f"or put with submit=True, before the wait)")
    return "\n".join(lines)


class ProcessJob(Job):
    """One rank of a job whose ranks are processes: the other ranks' memory is theirs,
    so what this rank sends them travels in the shared state (``inbox``) with the
    baton, and lands when they resume. Only the early policy (the checked run needs
    every rank's memory at hand)."""

    def __init__(self, prog: DistProgram, rank: int, baton: Any):
        self.prog = prog
        self.policy = "early"
        self.baton = baton
        self.state = baton.state if baton.state is not None else \
            JobState(prog.world, prog.ncores, prog.nslots, "early")
        self.rank = rank
        self.ranks = {rank: RankRuntime(self, rank)}
        self.log = None

    def deliver(self, rank: int, core: int, target: tuple, data: np.ndarray) -> None:
        self.state.inbox[rank].append((core, target, np.array(data, copy=True)))


# -- one rank ----------------------------------------------------------------------------------------
class RankRuntime:
    """The runtime of one rank: its memory map, receiver and sender state, and the
    handling of each ``meshtensor_rt_call`` its cores make."""

    def __init__(self, job: Job, rank: int):
        self.job = job
        self.prog = prog = job.prog
        self.rank = rank
        self.W = prog.world
        self.nrows, self.ncols = prog.mesh_shape
        n = prog.ncores
        self.bases = np.zeros((n, len(prog.buffers)), dtype=np.int64)
        self._views: dict = {}
        self.expected = np.zeros((n, max(prog.nslots, 1)), dtype=np.int64)
        self.auto_delta = np.zeros_like(self.expected)
        self.gens: dict = {}
        self.queue: list[list[Message]] = [[] for _ in range(n)]
        self.unread: list[list[Message]] = [[] for _ in range(n)]
        self.completions: dict = {}
        self.last_completion: dict = {}
        self.scratch: dict = {}
        self.seq = 0
        self.aborted = False
        self.dtypes = [np_dtype(b.dtype) for b in prog.buffers]

    def actor(self, core: int) -> int:
        return self.rank * self.prog.ncores + core

    # ---- the call from the kernel --------------------------------------------------------------
    def call(self, args: list, value: bool) -> int:
        """One op of a core's program (it holds the baton: an actor runs only then)."""
        if self.aborted:
            return 0
        site = self.prog.sites[args[1]]
        core = int(args[2])
        try:
            return int(getattr(self, "op_" + site.op)(site, core, args[3:]) or 0)
        except Exception as e:  # noqa: BLE001 - nothing may cross back into C
            self.fail(e)
            return 0

    def where(self, core: int) -> str:
        return f"rank {self.rank} core {divmod(core, self.ncols)}"

    def error(self, site: Site, core: int, text: str) -> DistRuntimeError:
        return DistRuntimeError(f"{site.name} on {self.where(core)}: {text}")

    # ---- the baton ------------------------------------------------------------------------------
    def acquire(self, core: int) -> None:
        """Wait for the baton (a core runs only while it holds it)."""
        st = self.job.baton.acquire(self.actor(core))
        self.job.state = st
        if st.error is not None:
            self.aborted = True
            return
        st.status[self.actor(core)] = "run"
        self.apply_inbox()

    def apply_inbox(self) -> None:
        """Land what other processes sent here while this rank was paused."""
        st = self.job.state
        box, st.inbox[self.rank] = st.inbox[self.rank], []
        for core, target, data in box:
            dst = self.target_view(core, target)
            dst[...] = data.reshape(dst.shape)

    def start(self, core: int) -> None:
        """Before a core's program runs: wait for the baton."""
        self.acquire(core)

    def fail(self, e: Exception) -> None:
        self.aborted = True
        self.job.baton.fail(e)

    def _yield(self, core: int) -> None:
        """Give the baton to the next actor that can progress (deadlock if none)."""
        st = self.job.state
        me = self.actor(core)
        for q in self.job.order(me):
            if q != me and self.job.runnable(q):
                self.job.baton.give(q)
                return
        if any(x == "blocked" for x in st.status):
            self.job.baton.fail(DistDeadlockError(deadlock_text(self.prog, st)))
            return
        self.job.baton.give(None)  # every actor is done

    def satisfied(self, cond: Cond) -> bool:
        if cond.mode == "sync":
            return sync_done(self.job.state, self.rank, cond)
        return satisfied(self.prog, self.job.state.signals[self.rank], cond)

    def block_until(self, cond: Cond) -> None:
        """Return once ``cond`` holds; meanwhile other actors run."""
        me = self.actor(cond.core)
        while not self.aborted:
            st = self.job.state  # (a process gets a new one with each baton)
            if self.satisfied(cond):
                st.status[me] = "run"
                st.cond[me] = None
                return
            if st.policy == "late" and cond.mode in ("all", "any") and self._land_one(cond):
                continue
            st.status[me] = "blocked"
            st.cond[me] = cond
            st.queued[me] = len(self.queue[cond.core])  # (for the deadlock report)
            self._yield(cond.core)
            self.acquire(cond.core)

    def finish(self, core: int) -> None:
        """A core's program returned: check its queue, hand the baton on."""
        if self.aborted:
            return
        try:
            if self.queue[core]:
                m = self.queue[core][0]
                raise self.error(m.site, core, f"{len(self.queue[core])} queued send(s) "
                                 f"were never submitted: the send queue is not submitted "
                                 f"before the kernel ends; call T.dist.submit() (or pass "
                                 f"submit=True)")
            self._read_unread(core)
            st = self.job.state
            st.status[self.actor(core)] = "done"
            st.cond[self.actor(core)] = None
            self._yield(core)
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    # ---- memory ---------------------------------------------------------------------------------
    def op_register(self, site: Site, core: int, args: list) -> None:
        """A core's buffers. Every core registers before any runs (a first call of the
        kernel per core that returns after it: :meth:`~.dist_kernel.DistKernel`), so
        a put writes into another core's memory at once; the call as each core's
        program starts finds the same addresses."""
        bases = np.asarray(args[:len(self.prog.buffers)], dtype=np.int64)
        if not np.array_equal(self.bases[core], bases):
            self.bases[core, :] = bases
            for k in [k for k in self._views if k[0] == core]:
                del self._views[k]

    def op_sync(self, site: Site, core: int, args: list) -> None:
        """A barrier of this core's group of its chip (the cores whose coordinates agree
        with its own off ``site.info["axes"]``): the on-chip synchronisation of a comm
        op."""
        st = self.job.state
        got = st.arrivals.setdefault((self.rank, site.index), [0] * self.prog.ncores)
        got[core] += 1
        self.block_until(Cond(core, "sync", [_group(site, core), got[core]], site))

    def view(self, core: int, buf: int) -> np.ndarray:
        key = (core, buf)
        v = self._views.get(key)
        if v is None:
            info = self.prog.buffers[buf]
            addr = int(self.bases[core, buf])
            if addr == 0:
                raise DistRuntimeError(f"buffer {info.name!r} of {self.where(core)} is not "
                                       f"registered")
            dt = self.dtypes[buf]
            n = int(np.prod(info.shape, dtype=np.int64)) * dt.itemsize
            raw = (ctypes.c_uint8 * max(n, 1)).from_address(addr)
            v = np.frombuffer(raw, dtype=dt, count=int(np.prod(info.shape))).reshape(info.shape)
            self._views[key] = v
        return v

    def target_view(self, core: int, target: tuple) -> np.ndarray:
        """The view of a message target: ``("buf", id, slices)`` or ``("scratch", site,
        slices)``."""
        kind, key, sl = target
        base = self.view(core, key) if kind == "buf" else self.scratch_of(core, key)
        return base[sl]

    def scratch_of(self, core: int, site_index: int) -> np.ndarray:
        key = (core, site_index)
        s = self.scratch.get(key)
        if s is None:
            site = self.prog.sites[site_index]
            buf, ext = site.info["src"]
            s = np.zeros((self.W,) + tuple(ext), dtype=self.dtypes[buf])
            self.scratch[key] = s
        return s

    def region(self, site: Site, core: int, key: str, starts: Sequence[int]) -> tuple:
        """The slices of the site's ``key`` region at ``starts`` (checked in range)."""
        buf, ext = site.info[key]
        shape = self.prog.buffers[buf].shape
        sl = []
        for d, (s, e, n) in enumerate(zip(starts, ext, shape)):
            s = int(s)
            if s < 0 or s + e > n:
                raise self.error(site, core, f"{key} region of {self.prog.buffers[buf].name!r} "
                                 f"runs outside dim {d} of size {n}: start {s}, extent {e}")
            sl.append(slice(s, s + e))
        return ("buf", buf, tuple(sl))

    # ---- signals ----------------------------------------------------------------------------------
    def slot_plan(self, slot: int) -> tuple[SignalPlan, int]:
        return slot_plan(self.prog, slot)

    def slot(self, site: Site, core: int, sid: int, member: int) -> tuple[SignalPlan, int]:
        plan = self.prog.signals[sid]
        if plan.count:
            m = int(member)
            if not 0 <= m < plan.count:
                raise self.error(site, core, f"SignalList index {m} out of range for "
                                 f"{plan.name} of {plan.count} signals")
            return plan, plan.base + m
        return plan, plan.base

    def add_expected(self, core: int, plan: SignalPlan, slot: int, delta: int,
                     auto: bool = False) -> None:
        if auto and plan.auto_completion:
            self.auto_delta[core, slot] += delta
            return
        mask = (1 << plan.bits) - 1
        self.expected[core, slot] = (int(self.expected[core, slot]) + int(delta)) & mask

    def _signal_after(self, current: int, m: Message) -> int:
        return signal_after(self.prog, current, m)

    def _next_gen(self, core: int, slot: int, dst: tuple) -> int:
        key = (core, slot) + dst
        g = self.gens.get(key, 0) + 1
        self.gens[key] = g
        return g

    # ---- sending ----------------------------------------------------------------------------------
    def _msg(self, site: Site, core: int, dst_rank: int, dst_core: int, target: Any,
             src_ref: Any, slot: int | None) -> Message:
        self.seq += 1
        value = None
        if slot is not None:
            value = self._next_gen(core, slot, (dst_rank, dst_core))
        return Message(src_rank=self.rank, src_core=core, dst_rank=dst_rank, dst_core=dst_core,
                       target=target, src_ref=src_ref, slot=slot, value=value, site=site,
                       seq=self.seq, landed=False)

    def _read(self, m: Message) -> np.ndarray:
        core, target = m.src_ref
        return np.array(self.target_view(core, target), copy=True)

    def enqueue(self, site: Site, core: int, m: Message, submit_now: bool) -> None:
        if m.target is not None and m.dst_core // self.ncols != core // self.ncols:
            m.payload = self._read(m)  # staged through the egress core at the put: read now
            m.staged = True
        self.queue[core].append(m)
        if submit_now:
            self.submit(core)

    def begin_batch(self, site: Site, core: int, submit: Any) -> None:
        if submit and self.queue[core]:
            raise self.error(site, core, f"submit=True requires an empty send queue, but "
                             f"{len(self.queue[core])} send(s) are queued; call "
                             f"T.dist.submit() first")

    def submit(self, core: int) -> None:
        q, self.queue[core] = self.queue[core], []
        for m in q:
            self.send(m)

    def send(self, m: Message) -> None:
        st = self.job.state
        if self.job.log is not None:
            nbytes = 0
            if m.target is not None:
                core, target = m.src_ref
                nbytes = int(self.target_view(core, target).nbytes)
            if m.dst_core != m.src_core:  # the on-chip leg to the egress core first
                self.job.record("onchip", self.rank, m.src_core, m.dst_core, nbytes, m.site)
            self.job.record("chip", self.rank, m.dst_rank, m.dst_core, nbytes, m.site)
        if st.policy == "early":
            if m.target is not None:
                core, target = m.src_ref
                data = m.payload if m.payload is not None else self.target_view(core, target)
                self.job.deliver(m.dst_rank, m.dst_core, m.target, data)
            self.land_signal(m)
            m.landed = True
            return
        # late: the destination is undefined until it lands
        if m.target is not None:
            if m.payload is None:
                m.snapshot = self._read(m)
                self.unread[m.src_core].append(m)
            _poison(self.job.rank_view(m.dst_rank, m.dst_core, m.target))
        st.inflight.append(m)

    def land_signal(self, m: Message) -> None:
        if m.slot is None:
            return
        st = self.job.state
        plan, member = self.slot_plan(m.slot)
        key = (m.dst_rank, m.dst_core, m.slot)
        if plan.mode != "inc":
            first = st.senders.setdefault(key, (m.src_rank, m.src_core))
            if first != (m.src_rank, m.src_core):
                name = plan.name + (f"[{member}]" if plan.count else "")
                raise DistRuntimeError(
                    f"{m.site.name}: {name} has kind {plan.kind}, which allows one sender "
                    f"per receiving core, but rank {m.dst_rank} core "
                    f"{divmod(m.dst_core, self.ncols)} receives from rank {first[0]} core "
                    f"{divmod(first[1], self.ncols)} and rank {m.src_rank} core "
                    f"{divmod(m.src_core, self.ncols)}; use one independent signal per sender")
        st.signals[key] = self._signal_after(int(st.signals[key]), m)

    def _late_read(self, m: Message) -> None:
        """Read a put's source now (late policy) and check it is what was submitted."""
        if m.payload is not None:
            return
        sender = self.job.ranks[m.src_rank]
        now = sender._read(m)
        if not np.array_equal(now.view(np.uint8), m.snapshot.view(np.uint8)):
            bad = np.argwhere(now.view(np.uint8).reshape(now.shape + (-1,)).any(axis=-1) !=
                              m.snapshot.view(np.uint8).reshape(now.shape + (-1,)).any(axis=-1))
            diff = np.argwhere(~((now == m.snapshot) | ((now != now) & (m.snapshot != m.snapshot))))
            at = tuple(int(i) for i in (diff[0] if len(diff) else bad[0] if len(bad) else ()))
            raise DistRaceError(
                f"{m.site.name} on rank {m.src_rank} core {divmod(m.src_core, self.ncols)}: its "
                f"source was written before the send completed (element {list(at)} of the "
                f"region: {m.snapshot[at]!r} when submitted, {now[at]!r} later); the chip "
                f"reads a put's source any time until T.dist.wait() returns, so reuse it "
                f"only after T.dist.wait()")
        m.payload = now
        if m in sender.unread[m.src_core]:
            sender.unread[m.src_core].remove(m)

    def _read_unread(self, core: int) -> None:
        for m in list(self.unread[core]):
            self._late_read(m)
        self.unread[core] = []

    def land(self, m: Message) -> None:
        """Late policy: put ``m``'s data and signal in place now."""
        st = self.job.state
        if m.target is not None:
            self._late_read(m)
            dst = self.job.rank_view(m.dst_rank, m.dst_core, m.target)
            poison = np.frombuffer(POISON(dst.dtype) * dst.size, dtype=np.uint8)
            written = (dst.view(np.uint8).reshape(-1) != poison).reshape(
                dst.size, -1).any(axis=1)
            if m.clobbered is not None:  # other puts landed there meanwhile: not a write
                written &= ~m.clobbered
            if written.any():
                raise DistRaceError(
                    f"{m.site.name} from rank {m.src_rank} core "
                    f"{divmod(m.src_core, self.ncols)}: rank {m.dst_rank} core "
                    f"{divmod(m.dst_core, self.ncols)} wrote the put's destination "
                    f"{_target_text(self.prog, m.target)} before the wait that covers its "
                    f"arrival; the data lands any time until then")
            dst[...] = m.payload.reshape(dst.shape)
            self._clobber(m, dst)
        self.land_signal(m)
        m.landed = True
        st.inflight.remove(m)

    def _clobber(self, m: Message, dst: np.ndarray) -> None:
        """Mark the elements of other in-flight puts' destinations that ``m`` just wrote
        (several puts may carry data into one place: only a write by the receiving
        core itself is a race)."""
        mine = None
        for x in self.job.state.inflight:
            if x is m or x.target is None or (x.dst_rank, x.dst_core) != (m.dst_rank,
                                                                       m.dst_core):
                continue
            view = self.job.rank_view(x.dst_rank, x.dst_core, x.target)
            if view.dtype != dst.dtype:
                continue
            mine = _addresses(dst) if mine is None else mine
            hit = np.isin(_addresses(view), mine)
            if hit.any():
                x.clobbered = hit if x.clobbered is None else (x.clobbered | hit)

    def _land_one(self, cond: Cond) -> bool:
        """Late policy: land the in-flight put to this core that helps ``cond`` most
        recently sent by the highest sender (after its earlier messages to this core,
        which arrive first). ``False`` when none helps."""
        st = self.job.state
        want = {s for s, e in cond.items}
        mine = [m for m in st.inflight if m.dst_rank == self.rank and m.dst_core == cond.core]
        helps = [m for m in mine if m.slot in want]
        if not helps:
            return False
        pick = max(helps, key=lambda m: (m.src_rank, m.src_core, -m.seq))
        for m in [x for x in mine if (x.src_rank, x.src_core) == (pick.src_rank, pick.src_core)
                  and x.seq <= pick.seq]:
            self.land(m)
        return True

    # ---- the ops --------------------------------------------------------------------------------------
    def op_expect(self, site: Site, core: int, args: list) -> None:
        plan, slot = self.slot(site, core, site.info["signal"], args[0])
        self.add_expected(core, plan, slot, int(args[1]), auto=True)

    def _dst_core(self, site: Site, core: int, rank: int, row: int) -> int:
        if not 0 <= rank < self.W:
            raise self.error(site, core, f"dst_rank {rank} is outside [0, {self.W})")
        if not 0 <= row < self.nrows:
            raise self.error(site, core, f"dst_row {row} is outside [0, {self.nrows})")
        return row * self.ncols + core % self.ncols

    def _copy_local(self, core: int, src: tuple, dst_core: int, dst: tuple) -> None:
        d = self.target_view(dst_core, dst)
        if dst_core != core and self.job.log is not None:
            self.job.record("onchip", self.rank, core, dst_core, int(d.nbytes), None)
        d[...] = np.array(self.target_view(core, src)).reshape(d.shape)

    def _put(self, site: Site, core: int, src: tuple, dst: tuple, rank: int, row: int,
             slot: int | None) -> Message | None:
        dcore = self._dst_core(site, core, rank, row)
        if rank == self.rank:  # a local copy, or an on-chip put to another row
            self._copy_local(core, src, dcore, dst)
            return None
        return self._msg(site, core, rank, dcore, dst, (core, src), slot)

    def op_put(self, site: Site, core: int, args: list) -> None:
        ns = len(site.info["src"][1])
        nd = len(site.info["dst"][1])
        src = self.region(site, core, "src", args[:ns])
        dst = self.region(site, core, "dst", args[ns:ns + nd])
        rank, row, member = (int(x) for x in args[ns + nd:ns + nd + 3])
        plan, slot = self.slot(site, core, site.info["signal"], member)
        self.begin_batch(site, core, site.info["submit"])
        m = self._put(site, core, src, dst, rank, row, slot)
        if m is not None:
            self.enqueue(site, core, m, False)
        if site.info["submit"]:
            self.submit(core)

    def op_routed_put(self, site: Site, core: int, args: list) -> None:
        ns = len(site.info["src"][1])
        nd = len(site.info["dst"][1])
        src = self.region(site, core, "src", args[:ns])
        dst = self.region(site, core, "dst", args[ns:ns + nd])
        routes = site.info["routes"]
        vals = [int(x) for x in args[ns + nd:ns + nd + 2 * len(routes)]]
        member = int(args[ns + nd + 2 * len(routes)])
        plan, slot = self.slot(site, core, site.info["signal"], member)
        self.begin_batch(site, core, site.info["submit"])
        mine = core // self.ncols
        only = site.info["src_rank"]
        if only < 0 or only == self.rank:
            for i, srow in enumerate(routes):
                if srow != mine:
                    continue
                m = self._put(site, core, src, dst, vals[2 * i], vals[2 * i + 1], slot)
                if m is not None:
                    self.enqueue(site, core, m, False)
        if site.info["submit"]:
            self.submit(core)

    def op_put_signal(self, site: Site, core: int, args: list) -> None:
        rank, member = int(args[0]), int(args[1])
        plan, slot = self.slot(site, core, site.info["signal"], member)
        dcore = self._dst_core(site, core, rank, core // self.ncols)
        if rank == self.rank:
            raise self.error(site, core, f"T.dist.put_signal only supports a remote peer Rank; "
                             f"source Rank {self.rank} targets itself")
        self.begin_batch(site, core, site.info["submit"])
        self.queue[core].append(self._msg(site, core, rank, dcore, None, None, slot))
        if site.info["submit"]:
            self.submit(core)

    def op_submit(self, site: Site, core: int, args: list) -> None:
        self.submit(core)

    def op_wait_send(self, site: Site, core: int, args: list) -> None:
        if self.job.state.policy == "late":
            self._read_unread(core)

    def op_wait_signal(self, site: Site, core: int, args: list) -> None:
        plan, slot = self.slot(site, core, site.info["signal"], args[0])
        delta = int(args[1])
        if delta >= 0:
            self.add_expected(core, plan, slot, delta)
        self.block_until(Cond(core, "all", [(slot, int(self.expected[core, slot]))], site))

    def _list_slots(self, site: Site, core: int, lid: int) -> tuple[SignalPlan, list[int]]:
        plan = self.prog.signals[lid]
        return plan, [plan.base + i for i in range(plan.slots)]

    def _read_counts(self, ptr: int, n: int, dtype: str) -> np.ndarray:
        dt = np_dtype(dtype)
        raw = (ctypes.c_uint8 * (n * dt.itemsize)).from_address(int(ptr))
        return np.frombuffer(raw, dtype=dt, count=n).astype(np.int64)

    def op_wait_signals(self, site: Site, core: int, args: list) -> None:
        plan, slots = self._list_slots(site, core, site.info["list"])
        deltas = self._read_counts(args[0], len(slots), site.info["deltas_dtype"])
        for s, d in zip(slots, deltas):
            self.add_expected(core, plan, s, int(d))
        self.block_until(Cond(core, "all", [(s, int(self.expected[core, s])) for s in slots],
                              site))

    def op_wait_all(self, site: Site, core: int, args: list) -> None:
        cid = site.info["completion"]
        if cid < 0:
            plan, slots = self._list_slots(site, core, site.info["list"])
            self.block_until(Cond(core, "all", [(s, int(self.expected[core, s]))
                                                for s in slots], site))
            return
        c = self._completion(site, core, cid)
        items = [(s, e) for s, e, p in zip(c["slots"], c["expect"], c["pending"]) if p]
        if items:
            self.block_until(Cond(core, "all", items, site))
        c["pending"] = [False] * len(c["pending"])

    # completions: member i is pending until its expected arrivals have come
    def _completion(self, site: Site, core: int, cid: int) -> dict:
        c = self.completions.get((core, cid))
        if c is None:
            raise self.error(site, core, f"completion #{cid} is used before it was created "
                             f"on this core")
        return c

    def _new_completion(self, site: Site, core: int, cid: int, lid: int,
                        deltas: Sequence[int]) -> None:
        plan, slots = self._list_slots(site, core, lid)
        prev = self.last_completion.get((core, lid))
        if prev is not None:
            p = self.completions[(core, prev)]
            if p["progress"] and any(p["pending"]):
                raise self.error(site, core, f"{plan.name}: T.dist SignalList previous "
                                 f"completion must be drained before creating another "
                                 f"completion; use T.dist.wait_all(completion) or while "
                                 f"T.dist.has_pending(completion): T.dist.wait_any(completion)")
        expect = []
        for s, d in zip(slots, deltas):
            self.add_expected(core, plan, s, int(d))
            expect.append(int(self.expected[core, s]))
        self.completions[(core, cid)] = {"slots": slots, "expect": expect,
                                         "pending": [int(d) > 0 for d in deltas],
                                         "progress": False, "site": site}
        self.last_completion[(core, lid)] = cid

    def op_completion(self, site: Site, core: int, args: list) -> None:
        lid = site.info["list"]
        plan, slots = self._list_slots(site, core, lid)
        if site.info["mode"] == "manual":
            deltas = list(self._read_counts(args[0], len(slots), site.info["deltas_dtype"]))
        else:
            deltas = [int(self.auto_delta[core, s]) for s in slots]
            self.auto_delta[core, slots] = 0
        self._new_completion(site, core, site.info["id"], lid, deltas)

    def op_has_pending(self, site: Site, core: int, args: list) -> int:
        c = self._completion(site, core, site.info["completion"])
        c["progress"] = True
        return int(any(c["pending"]))

    def op_wait_any(self, site: Site, core: int, args: list) -> int:
        c = self._completion(site, core, site.info["completion"])
        c["progress"] = True
        members = [i for i, p in enumerate(c["pending"]) if p]
        if not members:
            raise self.error(site, core, "T.dist.wait_any on a completion with no pending "
                             "member would wait forever (check T.dist.has_pending first)")
        items = [(c["slots"][i], c["expect"][i]) for i in members]
        self.block_until(Cond(core, "any", items, site))
        plan = self.slot_plan(items[0][0])[0]
        sig = self.job.state.signals[self.rank, core]
        ready = [i for i in members if _arrived(int(sig[c["slots"][i]]), c["expect"][i], plan)]
        pick = min(ready) if self.job.state.policy == "early" else max(ready)
        c["pending"][pick] = False
        return pick

    # collectives
    def _implicit_expect(self, core: int, sid: int | None, member: int, n: int,
                         site: Site) -> tuple[SignalPlan, int] | None:
        if sid is None:
            return None
        plan, slot = self.slot(site, core, sid, member)
        if plan.expect == "auto":
            self.add_expected(core, plan, slot, n, auto=True)
        return plan, slot

    def op_barrier(self, site: Site, core: int, args: list) -> None:
        self.op_wait_send(site, core, args)
        plan, slot = self.slot(site, core, site.info["signal"], args[0])
        self.add_expected(core, plan, slot, self.W - 1)
        for off in range(1, self.W):
            q = (self.rank + off) % self.W
            self.send(self._msg(site, core, q, core, None, None, slot))
        self.block_until(Cond(core, "all", [(slot, int(self.expected[core, slot]))], site))

    def op_barrier_arrive(self, site: Site, core: int, args: list) -> None:
        plan, slot = self.slot(site, core, site.info["signal"], args[0])
        self.begin_batch(site, core, site.info["submit"])
        self.add_expected(core, plan, slot, self.W - 1)
        for off in range(1, self.W):
            q = (self.rank + off) % self.W
            self.queue[core].append(self._msg(site, core, q, core, None, None, slot))
        if site.info["submit"]:
            self.submit(core)

    def _src_dst(self, site: Site, core: int, args: list) -> tuple[tuple, tuple, list]:
        ns = len(site.info["src"][1])
        nd = len(site.info["dst"][1])
        return (self.region(site, core, "src", args[:ns]),
                self.region(site, core, "dst", args[ns:ns + nd]), args[ns + nd:])

    @staticmethod
    def _sub(region: tuple, dim: int, start: int, extent: int) -> tuple:
        kind, key, sl = region
        sl = list(sl)
        base = sl[dim].start
        sl[dim] = slice(base + start, base + start + extent)
        return (kind, key, tuple(sl))

    def _slot_region(self, dst: tuple, axis: int, ext: Sequence[int], r: int) -> tuple:
        if axis == -2:   # stacked: dst[r]
            return self._sub(dst, 0, r, 1)
        d = 0 if axis == 0 else len(ext) - 1
        return self._sub(dst, d, r * ext[d], ext[d])

    def op_all_gather(self, site: Site, core: int, args: list) -> None:
        src, dst, rest = self._src_dst(site, core, args)
        member = int(rest[0])
        axis = site.info["axis"]
        ext = site.info["src"][1]
        self.begin_batch(site, core, site.info["submit"])
        lid = site.info["list"]
        if lid >= 0:
            plan, slots = self._list_slots(site, core, lid)
            slot_of = lambda r: plan.base + r  # noqa: E731 (member = source rank)
        else:
            plan, s0 = self.slot(site, core, site.info["signal"], member)
            slot_of = lambda r: s0  # noqa: E731
            if plan.expect == "auto":
                self.add_expected(core, plan, s0, self.W - 1, auto=True)
        self._copy_local(core, src, core, self._slot_region(dst, axis, ext, self.rank))
        for off in range(1, self.W):
            q = (self.rank + off) % self.W
            m = self._msg(site, core, q, core, self._slot_region(dst, axis, ext, self.rank),
                          (core, src), slot_of(self.rank))
            self.queue[core].append(m)
        if lid >= 0:
            self._new_completion(site, core, site.info["completion"], lid,
                                 [int(r != self.rank) for r in range(self.W)])
        if site.info["submit"]:
            self.submit(core)
        self.op_wait_send(site, core, [])

    def op_all_to_all(self, site: Site, core: int, args: list) -> None:
        src, dst, rest = self._src_dst(site, core, args)
        plan, slot = self.slot(site, core, site.info["signal"], int(rest[0]))
        row_domain = site.info["domain"] == "row"
        myrow = core // self.ncols
        self.begin_batch(site, core, site.info["submit"])
        if plan.expect == "auto":
            self.add_expected(core, plan, slot, (self.W - 1) * (self.nrows if row_domain else 1),
                              auto=True)
        for off in range(self.W):
            q = (self.rank + off) % self.W
            for r1 in (range(self.nrows) if row_domain else [myrow]):
                s = self._sub(src, 0, q, 1)
                d = self._sub(dst, 0, self.rank, 1)
                if row_domain:
                    s = self._sub(s, 1, r1, 1)
                    d = self._sub(d, 1, myrow, 1)
                m = self._put(site, core, s, d, q, r1, slot)
                if m is not None:
                    self.enqueue(site, core, m, False)
        if site.info["submit"]:
            self.submit(core)
        self.op_wait_send(site, core, [])

    def op_all_to_allv(self, site: Site, core: int, args: list) -> None:
        src, dst, rest = self._src_dst(site, core, args)
        send_ptr, recv_ptr, member = int(rest[0]), int(rest[1]), int(rest[2])
        row_domain = site.info["domain"] == "row"
        nrow = self.nrows if row_domain else 1
        n = self.W * nrow
        sends = self._read_counts(send_ptr, n, site.info["counts_dtype"])
        recvs = self._read_counts(recv_ptr, n, site.info["counts_dtype"])
        myrow = core // self.ncols
        me = self.rank * nrow + (myrow if row_domain else 0)
        self.begin_batch(site, core, site.info["submit"])
        lid = site.info["list"]
        active = [int(e // nrow != self.rank and recvs[e] > 0) for e in range(n)]
        if lid >= 0:
            plan, slots = self._list_slots(site, core, lid)
            slot_of = lambda e: plan.base + e  # noqa: E731 (member = source endpoint)
        else:
            plan, s0 = self.slot(site, core, site.info["signal"], member)
            slot_of = lambda e: s0  # noqa: E731
            self.add_expected(core, plan, s0, sum(active))
        for off in range(self.W):
            q = (self.rank + off) % self.W
            for r1 in (range(self.nrows) if row_domain else [myrow]):
                e = q * nrow + (r1 if row_domain else 0)
                if sends[e] <= 0:
                    continue
                s = self._sub(src, 0, q, 1)
                d = self._sub(dst, 0, self.rank, 1)
                if row_domain:
                    s = self._sub(s, 1, r1, 1)
                    d = self._sub(d, 1, myrow, 1)
                m = self._put(site, core, s, d, q, r1, slot_of(me))
                if m is not None:
                    self.enqueue(site, core, m, False)
        if lid >= 0:
            self._new_completion(site, core, site.info["completion"], lid, active)
        if site.info["submit"]:
            self.submit(core)
        self.op_wait_send(site, core, [])

    def op_all_reduce(self, site: Site, core: int, args: list) -> None:
        src, dst, rest = self._src_dst(site, core, args)
        plan, slot = self.slot(site, core, site.info["signal"], int(rest[0]))
        g = self.scratch_of(core, site.index)
        g[self.rank] = np.array(self.target_view(core, src)).reshape(g.shape[1:])
        mine = ("scratch", site.index, (slice(self.rank, self.rank + 1),))
        if plan.expect == "auto":
            self.add_expected(core, plan, slot, self.W - 1, auto=True)
        for off in range(1, self.W):
            q = (self.rank + off) % self.W
            self.send(self._msg(site, core, q, core, mine, (core, ("scratch", site.index,
                                                                   (slice(self.rank,
                                                                          self.rank + 1),))),
                                slot))
        self.block_until(Cond(core, "all", [(slot, int(self.expected[core, slot]))], site))
        out = self.target_view(core, dst)
        out[...] = _fold(g, site.info["reduce_type"]).reshape(out.shape)
        self.op_wait_send(site, core, [])


def _fold(g: np.ndarray, kind: str) -> np.ndarray:
    """Reduce ``g`` over its first axis in index order, from the identity, in its own
    dtype (one rounding per step, as the chip's reduce)."""
    dt = g.dtype
    if kind == "sum":
        acc = np.zeros(g.shape[1:], dtype=dt)
        for x in g:
            acc = (acc + x).astype(dt)
        return acc
    fn = np.maximum if kind == "max" else np.minimum
    acc = g[0].copy()
    for x in g[1:]:
        acc = fn(acc, x).astype(dt)
    return acc


def _group(site: Site, core: int) -> tuple:
    """The cores of ``core``'s group of a barrier site: those whose coordinates agree
    with its own on every mesh axis not in ``site.info["axes"]``."""
    shape = tuple(site.info["shape"])
    axes = set(site.info["axes"])
    mine = np.unravel_index(core, shape)
    return tuple(int(c) for c in range(int(np.prod(shape)))
                 if all(a in axes or x == y for a, (x, y) in
                        enumerate(zip(np.unravel_index(c, shape), mine))))


def _poison(dst: np.ndarray) -> None:
    """Fill ``dst`` with the poison pattern of its dtype."""
    dst.view(np.uint8)[...] = np.frombuffer(
        POISON(dst.dtype) * dst.size, dtype=np.uint8).reshape(dst.view(np.uint8).shape)


def _addresses(view: np.ndarray) -> np.ndarray:
    """The address of every element of ``view`` (row-major order)."""
    out = np.full(view.shape, view.__array_interface__["data"][0], dtype=np.int64)
    for d, stride in enumerate(view.strides):
        shape = [1] * view.ndim
        shape[d] = view.shape[d]
        out = out + np.arange(view.shape[d], dtype=np.int64).reshape(shape) * stride
    return out.reshape(-1)


def _target_text(prog: DistProgram, target: tuple) -> str:
    kind, key, sl = target
    name = prog.buffers[key].name if kind == "buf" else f"all_reduce staging #{key}"
    return f"{name}[{', '.join(f'{s.start}:{s.stop}' for s in sl)}]"
