"""A compiled ``T.dist`` kernel: every rank of the world, in this process.

:class:`DistKernel` is what ``compile_mesh_kernel`` returns for a kernel with ``T.dist``
ops. Called with the GLOBAL tensors (every parameter but the ``T.dist.RankId`` one, in
order), it gives each rank its part (a ``T.MeshTensor`` with
``rank_placement=T.dist.placement.shard(d)``: the rank's balanced slice; any other
tensor: the whole of it), runs every core of the W ranks on a thread of its own under
the deterministic schedule of :mod:`.dist_rank`, and writes the results back: a
rank-sharded tensor from each rank's slice, any other from the ranks' copies, which
must agree (else ``ValueError`` naming the tensor, the ranks and an element).

``check_races=True`` (at compile or per call) runs the kernel twice, with the early and
the late delivery policy, and refuses a result that differs (a read of a put's
destination before its covering wait, or a result that depends on ``wait_any``'s
order), as well as what the late run shows directly (a source written before
``T.dist.wait()``, a destination written before its covering wait).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...text import fitted
from ..transform.lower_dist import DistProgram
from . import shim
from .dist_rank import DistRaceError, DistRuntimeError, Job, RankRuntime

__all__ = ["DistKernel", "RankArgs"]


@dataclass(frozen=True, eq=False)
class RankArgs:
    """How one call's global arguments become each rank's arguments: per parameter of
    the source kernel, ``("tensor", i)``, ``("mesh", i, MeshParam, written,
    placement)``, ``("scalar", i)`` or ``("rank",)``."""

    kinds: tuple


def _placement(p: Any) -> Any:
    """The rank placement a ``T.MeshTensor`` record carries (replicated if none)."""
    from ..language.dist import RankPlacementSpec, placement
    rp = getattr(p, "rank_placement", None)
    if rp is None:
        return placement.replicated()
    if isinstance(rp, RankPlacementSpec):
        return rp
    if isinstance(rp, (tuple, list)) and len(rp) == 2:  # (kind, dim) as the upstream records
        return placement.shard(int(rp[1])) if int(rp[0]) == 1 else placement.replicated()
    if isinstance(rp, str):
        return placement.replicated() if "Replic" in rp else placement.shard(
            int("".join(ch for ch in rp if ch.isdigit())))
    return rp


@dataclass(frozen=True, eq=False)
class DistKernel:
    """A compiled ``T.dist`` kernel (see the module docstring). ``prim_func`` is the
    source, ``lowered`` the per-rank kernel of :func:`~..transform.lower_dist.lower_dist`,
    ``program`` its :class:`~..transform.lower_dist.DistProgram`, ``mesh_kernel`` the
    compiled per-rank :class:`~..engine.MeshKernel` (one binary for every rank)."""

    prim_func: Any
    lowered: Any
    program: DistProgram
    mesh_kernel: Any
    check_races: bool = False
    rebuild: Any = None  # the compiler's function that remakes it from its pickled source
    _lock: Any = field(default_factory=threading.Lock)
    _workspaces: list = field(default_factory=list)  # one per rank, kept across calls
    _threads: list = field(default_factory=list)     # the actors' threads, kept likewise

    def workspace(self, rank: int) -> Any:
        """Rank ``rank``'s scratch array for the lowered kernel's per-core buffers
        (allocated once: a fresh one page-faults on every call; zeroed, so a kernel
        that reads on-chip memory it never wrote reads the same bits in every
        process), or ``None``."""
        import torch
        ws = self.mesh_kernel.workspace
        if ws is None:
            return None
        while len(self._workspaces) <= rank:
            self._workspaces.append(torch.zeros(int(ws.numel()), dtype=torch.uint8))
        return self._workspaces[rank]

    @property
    def world(self) -> int:
        return self.program.world

    @property
    def mesh_shape(self) -> tuple[int, int]:
        return self.program.mesh_shape

    def get_kernel_source(self) -> str:
        return self.mesh_kernel.get_kernel_source()

    # ---- arguments --------------------------------------------------------------------------------
    def _kinds(self) -> list:
        mesh = {i: (p, w) for i, p, w in self.mesh_kernel.mesh_tensors}
        out = []
        for i, var in enumerate(self.prim_func.params):
            if i == self.program.rank_param:
                out.append(("rank",))
            elif i in mesh:
                p, w = mesh[i]
                out.append(("mesh", i, p, w, _placement(p)))
            elif var in self.prim_func.buffer_map:
                out.append(("tensor", i))
            else:
                out.append(("scalar", i))
        return out

    def _split(self, args: tuple) -> list[list]:
        """Each rank's arguments (rank level: a rank-sharded ``T.MeshTensor`` gets the
        rank's slice, any other tensor a copy of the whole) from the global ones."""
        import torch
        W = self.world
        kinds = [k for k in self._kinds() if k[0] != "rank"]
        if len(args) != len(kinds):
            raise ValueError(f"DistKernel: the kernel takes {len(kinds)} arguments (every "
                             f"parameter but its T.dist.RankId, global tensors for its "
                             f"tensors), got {len(args)}")
        per_rank: list[list] = [[] for _ in range(W)]
        for k, a in zip(kinds, args):
            if k[0] == "scalar":
                for r in range(W):
                    per_rank[r].append(a)
                continue
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"DistKernel: argument for parameter "
                                f"{self.prim_func.params[k[1]].name!r} must be a torch "
                                f"tensor, got {type(a).__name__}")
            if k[0] == "mesh":
                k[2].check(a, k[1])
            for r in range(W):
                box = k[4].rank_box(tuple(a.shape), W, r) if k[0] == "mesh" else ()
                per_rank[r].append(a[box].detach().clone().contiguous())
        return per_rank

    def _merge(self, args: tuple, per_rank: list[list]) -> None:
        """Write the ranks' results into the global tensors: a rank-sharded one from each
        rank's slice; any other from the ranks' copies, which must agree."""
        kinds = [k for k in self._kinds() if k[0] != "rank"]
        names = [_param_name(self.prim_func, v) for i, v in enumerate(self.prim_func.params)
                 if i != self.program.rank_param]
        for j, (k, a) in enumerate(zip(kinds, args)):
            if k[0] == "scalar" or (k[0] == "mesh" and not k[3]):
                continue
            copies = [per_rank[r][j] for r in range(self.world)]
            if k[0] == "mesh" and k[4].kind == "shard":
                for r in range(self.world):
                    a[k[4].rank_box(tuple(a.shape), self.world, r)] = copies[r]
                continue
            what = "T.MeshTensor" if k[0] == "mesh" else "T.Tensor"
            _agree(f"{what} output {names[j]!r} (rank-replicated)", copies)
            a.copy_(copies[0])

    def _to_cores(self, rank_args: list) -> list:
        """One rank's kernel arguments: each ``T.MeshTensor`` split over the cores."""
        out, it = [], iter(rank_args)
        for k in self._kinds():
            if k[0] == "rank":
                out.append(None)
                continue
            a = next(it)
            out.append(_scatter(k[2], a) if k[0] == "mesh" else a)
        return out

    def _from_cores(self, kernel_args: list, rank_args: list) -> None:
        j = 0
        for i, k in enumerate(self._kinds()):
            if k[0] == "rank":
                continue
            if k[0] == "mesh" and k[3]:
                _gather_cores(k[2], kernel_args[i], rank_args[j])
            j += 1

    def run_ranks(self, per_rank: list[list], check_races: bool | None = None) -> None:
        """Run the kernel on per-rank arguments (a list per rank: every parameter but the
        ``T.dist.RankId``, rank level: a rank-sharded ``T.MeshTensor`` is the rank's
        slice); their tensors get the results in place. ``check_races`` as for a
        call."""
        checked = self.check_races if check_races is None else check_races
        if len(per_rank) != self.world:
            raise ValueError(f"DistKernel.run_ranks: expected {self.world} argument lists "
                             f"(one per rank), got {len(per_rank)}")
        with self._lock:
            kernel_args = [self._to_cores(list(a)) for a in per_rank]
            for r, ka in enumerate(kernel_args):
                ka[self.program.rank_param] = r
            if checked:
                late = [[x.clone() if hasattr(x, "clone") else x for x in ka]
                        for ka in kernel_args]
            self.run_job(kernel_args, "early")
            if checked:
                self.run_job(late, "late")
                _compare_runs(self, kernel_args, late)
            for ka, ra in zip(kernel_args, per_rank):
                self._from_cores(ka, list(ra))

    # ---- running ----------------------------------------------------------------------------------
    def run_in_process(self, job: Any, kernel_args: list) -> None:
        """Run the one rank of a :class:`~.dist_rank.ProcessJob` (one rank per process):
        a thread per core."""
        rt = job.ranks[job.rank]
        ctx = shim.register(rt.call)
        try:
            self._run_actors([self._actor(rt, c, kernel_args, ctx, self.workspace(job.rank))
                              for c in range(self.program.ncores)])
        finally:
            shim.unregister(ctx)

    def _actor(self, rt: RankRuntime, core: int, kernel_args: list, ctx: int, space: Any
               ) -> Callable[[], None]:
        """Core ``core`` of ``rt``'s rank: its program, run when the schedule gives it
        the baton."""
        mk = self.mesh_kernel

        def call(register_only: int) -> None:
            args = _as_bits(list(kernel_args), mk) + [ctx, core, register_only]
            if space is not None:
                args.append(space)
            mk.jit_kernel(*args)

        def run() -> None:
            rt.start(core)
            if rt.aborted:
                return
            try:
                call(0)
            except Exception as e:  # noqa: BLE001
                rt.fail(e)
                return
            rt.finish(core)

        call(1)  # the core registers its buffers now, before any core runs
        return run

    def _run_actors(self, actors: list) -> None:
        """Run every actor on a thread of its own and return when all have returned.
        The threads are kept for the next call (on a loaded machine, starting twenty
        threads costs more than the kernel)."""
        while len(self._threads) < len(actors):
            inbox: queue.SimpleQueue = queue.SimpleQueue()

            def serve(inbox: queue.SimpleQueue = inbox) -> None:
                while True:
                    fn, done = inbox.get()
                    try:
                        fn()
                    finally:
                        done.release()

            threading.Thread(target=serve, daemon=True,
                             name=f"meshtensor-actor-{len(self._threads)}").start()
            self._threads.append(inbox)
        done = threading.Semaphore(0)
        for inbox, fn in zip(self._threads, actors):
            inbox.put((fn, done))
        for _ in actors:
            done.acquire()

    def __reduce__(self) -> tuple:
        """Pickled as its source (TVM's JSON) and ``T.MeshTensor`` records: unpickling
        compiles it again (TileLang's cache makes that a load), as a rank process does."""
        import tvm
        from ..ir import mesh_param
        registered = getattr(mesh_param, "registered", None)
        regs = []  # records kept beside the kernel (where they are not its attributes)
        for i, var in enumerate(self.prim_func.params):
            buf = self.prim_func.buffer_map.get(var)
            p = None if buf is None or registered is None else registered(buf)
            if p is not None:
                regs.append((i, p))
        if self.rebuild is None:
            raise TypeError("DistKernel: this kernel cannot be pickled (made without its "
                            "compiler's rebuild function)")
        return self.rebuild, (tvm.ir.save_json(self.prim_func), regs, self.check_races)

    def run_job(self, per_rank: list[list], policy: str, record: bool = False) -> Job:
        """Run every rank on its arguments (a list per rank, in the lowered kernel's
        order without the context) under ``policy``; return the finished job (with its
        ``log`` of transfers when ``record``)."""
        job = Job(self.program, policy)
        if record:
            job.log = []
        ctxs = [shim.register(rt.call) for rt in job.ranks]
        spaces = [self.workspace(r) for r in range(self.world)]
        try:
            self._run_actors([self._actor(job.ranks[r], c, per_rank[r], ctxs[r], spaces[r])
                              for r in range(self.world) for c in range(self.program.ncores)])
        finally:
            for c in ctxs:
                shim.unregister(c)
        if job.state.error is not None:
            raise job.state.error
        if policy == "late":  # what is still in flight lands after every rank is done
            st = job.state
            while st.inflight:
                pick = max(st.inflight, key=lambda m: (m.src_rank, m.src_core, -m.seq))
                first = min((m for m in st.inflight if (m.src_rank, m.src_core, m.dst_rank,
                                                         m.dst_core) ==
                             (pick.src_rank, pick.src_core, pick.dst_rank, pick.dst_core)),
                            key=lambda m: m.seq)
                job.ranks[first.dst_rank].land(first)
        return job

    def __call__(self, *args: Any, check_races: bool | None = None) -> None:
        """Run every rank on the GLOBAL tensors (see the module docstring)."""
        per_rank = self._split(args)
        self.run_ranks(per_rank, check_races)
        self._merge(args, per_rank)


# -- helpers -------------------------------------------------------------------------------------------

def _as_bits(call: list, mesh_kernel: Any) -> list:
    """The arguments of narrow float parameters (bfloat16, float8: the compiled kernel
    takes their bits, ``MeshKernel.narrow`` lists them) as views of their bits."""
    import torch
    for i, _ in getattr(mesh_kernel, "narrow", ()):
        a = call[i] if i < len(call) else None
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            call[i] = a.view(torch.uint16 if a.element_size() == 2 else torch.uint8)
    return call


def _rank_param(p: Any, tensor: Any) -> Any:
    """The record of one rank's part of a ``T.MeshTensor``: its valid extent, split over
    the cores as the kernel's placement splits a tensor of that shape (a balanced split
    is recomputed: ranks' parts may differ by one), the cores' slots the kernel's."""
    import dataclasses

    from ...sharding import Sharding
    from ..language.dist import rank_extents
    shape = tuple(int(n) for n in tensor.shape)
    if shape == tuple(p.global_shape):
        return p
    s = p.sharding
    if s.sharded_dims_offsets:  # balanced: the core split of this rank's extent
        offsets: list = []
        for d, axes in enumerate(s.split_axes):
            if axes:
                k = int(np.prod([s.mesh.shape[a] for a in axes]))
                offsets += [lo for lo, _ in rank_extents(shape[d], k)] + [shape[d]]
        s = Sharding(s.mesh, s.spec(), sharded_dims_offsets=offsets)
    return dataclasses.replace(p, global_shape=shape, sharding=s)


def _boxes(p: Any, tensor: Any) -> list:
    starts, stops = _rank_param(p, tensor).regions()
    return [(tuple(slice(0, int(b - a)) for a, b in zip(lo, hi)),
             tuple(slice(int(a), int(b)) for a, b in zip(lo, hi)))
            for lo, hi in zip(starts, stops)]


def _scatter(p: Any, tensor: Any) -> Any:
    """The per-core stack of one rank's part of a ``T.MeshTensor`` (zero past the
    valid edge; the stack has the kernel's shard shape)."""
    import torch
    out = torch.zeros((p.mesh.size,) + tuple(p.shard_shape), dtype=tensor.dtype)
    for c, (local, glob) in enumerate(_boxes(p, tensor)):
        out[(c,) + local] = tensor[glob]
    return out


def _gather_cores(p: Any, stack: Any, tensor: Any) -> None:
    """Write the cores' valid parts back into one rank's part; copies over cores (a
    replicated placement) must agree."""
    owner: dict = {}
    for c, (local, glob) in enumerate(_boxes(p, tensor)):
        key = tuple((s.start, s.stop) for s in glob)
        piece = stack[(c,) + local]
        if piece.numel() == 0:  # a core with no part (a rank's part is short)
            continue
        if key in owner:
            _agree(f"T.MeshTensor output {p.name!r} (replicated over cores)",
                   [stack[(owner[key],) + local], piece], who="cores")
            continue
        owner[key] = c
        tensor[glob] = piece


def _bits(t: Any) -> np.ndarray:
    a = t.detach().cpu().contiguous()
    try:
        arr = a.numpy()
    except TypeError:  # bfloat16 and friends: compare their bits
        import torch
        arr = a.view(torch.int16 if a.element_size() == 2 else torch.uint8).numpy()
    return arr.view(np.uint8).reshape(tuple(a.shape) + (-1,)) if a.dim() else \
        arr.view(np.uint8).reshape(1, -1)


def _param_name(func: Any, v: Any) -> str:
    """A parameter as the kernel's author named it (a tensor's buffer name: TVM calls
    its handle ``<name>_handle``)."""
    b = func.buffer_map.get(v)
    return str(b.name) if b is not None else str(v.name)


def _agree(what: str, copies: list, who: str = "ranks") -> None:
    """``ValueError`` unless every copy has the same bits."""
    ref = _bits(copies[0])
    for r, c in enumerate(copies[1:], 1):
        b = _bits(c)
        diff = (b != ref).any(axis=-1)
        if diff.any():
            at = tuple(int(i) for i in np.argwhere(diff)[0])
            raise fitted(ValueError(f"{what} is one tensor, but the copies of {who} "
                             f"0 and {r} disagree at {int(diff.sum())} of {diff.size} elements "
                             f"(first at {list(at)}: {copies[0][at].item()} vs "
                             f"{c[at].item()}); every copy of a replicated output must be "
                             f"written alike" + (
                                 "; to give each rank its own tensors, call "
                                 "kernel.run_ranks(per_rank_args)" if who == "ranks" else "")))


def _compare_runs(kernel: DistKernel, early: list[list], late: list[list]) -> None:
    """A checked call: refuse a result that differs between the two delivery policies."""
    names = [_param_name(kernel.prim_func, v) for v in kernel.prim_func.params]
    for r in range(kernel.world):
        for j, (a, b) in enumerate(zip(early[r], late[r])):
            if not hasattr(a, "shape") or j == kernel.program.rank_param:
                continue
            x, y = _bits(a), _bits(b)
            diff = (x != y).any(axis=-1)
            if diff.any():
                at = tuple(int(i) for i in np.argwhere(diff)[0])
                raise DistRaceError(
                    f"the result depends on the order of arrivals: on rank {r}, {names[j]!r} "
                    f"element {list(at)} is {a[at].item()} when every put lands as soon as "
                    f"it is sent and {b[at].item()} when each lands as late as the waits "
                    f"allow (its destination holds NaN / 0xA5 until then): the kernel reads "
                    f"a put's destination before the wait that covers its arrival, or its "
                    f"result depends on the order T.dist.wait_any returns the members in")
