"""``T.dist`` kernels with one rank per process on torch.distributed.

``run_kernel(kernel, *global_tensors)`` starts one process per rank with
:func:`~meshtensor.dist.run` (``torchrun`` across hosts: each process runs its own
rank). Every process compiles the kernel (TileLang's cache makes all but the first
compile a load) and runs its rank under the same deterministic schedule as the
in-process run (:mod:`meshtensor.tilelang.runtime.dist_rank`): the *baton* (the shared
state: every rank's signal registers, who waits for what, the data on its way to
each rank) travels as a real message (``torch.distributed`` send/recv) to the next
rank that can make progress, which lands the data sent to it and runs. The results
are those of the in-process call, bit for bit. A deadlock or an error found by a rank
is sent to every rank at once, and the call raises it, the failing rank's error first.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

__all__ = ["run_kernel", "TorchBaton"]


class TorchBaton:
    """The baton between processes: ``("baton", state)`` to the next holder,
    ``("error", (rank, exception))`` and ``("final", state)`` to every rank."""

    def __init__(self, rank: int, world: int, state: Any):
        self.rank = rank
        self.world = world
        self.state = state      # held here (rank 0 starts with it) or None
        self.done = False

    # transport: a length, then the pickled message
    def _send(self, to: int, msg: Any) -> None:
        import torch
        import torch.distributed as dist
        data = pickle.dumps(msg)
        dist.send(torch.tensor([len(data)], dtype=torch.int64), dst=to)
        dist.send(torch.frombuffer(bytearray(data), dtype=torch.uint8), dst=to)

    def _recv(self) -> Any:
        import torch
        import torch.distributed as dist
        n = torch.zeros(1, dtype=torch.int64)
        src = dist.recv(n, src=None)
        buf = torch.empty(int(n.item()), dtype=torch.uint8)
        dist.recv(buf, src=src)
        return pickle.loads(buf.numpy().tobytes())

    def _take(self, msg: Any) -> Any:
        kind, payload = msg
        if kind == "error":
            origin, err = payload
            st = self.state if self.state is not None else self._empty()
            st.error = err
            st.origin = origin
            self.state = st
        else:
            self.state = payload
            if kind == "final":
                self.done = True
        return self.state

    def _empty(self) -> Any:
        from meshtensor.tilelang.runtime.dist_rank import JobState
        return JobState(self.world, 1, 1, "early")

    def registered(self, rank: int) -> None:  # data lands at a resume: nothing to wait for
        pass

    def acquire(self, rank: int) -> Any:
        st = self.state
        if st is not None and (st.holder == rank or st.error is not None):
            return st
        return self._take(self._recv())

    def give(self, rank: int | None) -> None:
        st = self.state
        if rank is None:  # every rank is done: the last one tells the others
            st.holder = None
            for q in range(self.world):
                if q != self.rank:
                    self._send(q, ("final", st))
            self.done = True
            return
        st.holder = rank
        self._send(rank, ("baton", st))
        self.state = None

    def fail(self, error: Exception) -> None:
        if self.state is None:
            self.state = self._empty()
        if self.state.error is not None:
            return
        self.state.error = error
        self.state.origin = self.rank
        for q in range(self.world):
            if q != self.rank:
                self._send(q, ("error", (self.rank, error)))

    def wait_final(self) -> Any:
        """After this rank finished: wait for the end of the job (or its error)."""
        while not self.done and (self.state is None or self.state.error is None):
            self._take(self._recv())
        return self.state


def _rank_main(dm: Any, kernel: Any, per_rank: list) -> Any:
    """One rank's process: run its rank, return its (rank-level) arguments, or the
    job's error as ``("error", origin rank, exception)``."""
    from meshtensor.tilelang.runtime.dist_rank import JobState, ProcessJob
    r = dm.rank
    prog = kernel.program
    first = JobState(prog.world, prog.ncores, prog.nslots, "early")
    first.holder = 0
    baton = TorchBaton(r, prog.world, first if r == 0 else None)
    job = ProcessJob(prog, r, baton)
    args = per_rank[r]
    kernel_args = kernel._to_cores(list(args))
    kernel_args[prog.rank_param] = r
    kernel.run_in_process(job, kernel_args)
    st = job.state
    if st.error is None:
        st = baton.wait_final()
        job.state = st
        if st.error is None:
            job.ranks[r].apply_inbox()  # what arrived after this rank finished
    if st.error is not None:
        import time
        return ("error", getattr(st, "origin", r), st.error, time.time())
    kernel._from_cores(kernel_args, list(args))
    return ("ok", [a.numpy() if hasattr(a, "numpy") else a for a in args])


def run_kernel(kernel: Any, *args: Any, backend: str = "gloo", timeout: float = 300.0,
               deadline: float | None = None) -> None:
    """Run a compiled ``T.dist`` kernel (``compile_mesh_kernel``'s
    :class:`~meshtensor.tilelang.runtime.dist_kernel.DistKernel`) with one process per
    rank and write the results into the GLOBAL tensors ``args`` (every parameter but
    the ``T.dist.RankId`` one), exactly as the in-process call does. ``timeout``:
    seconds a rank may wait for the baton (ranks take turns: a long rank makes the
    others wait); ``deadline``: for the whole job (see :func:`meshtensor.dist.run`).
    Under ``torchrun`` each process runs its own rank and writes its rank's results.

    Example (in a script)::

        k = compile_mesh_kernel(ring)          # a T.dist kernel for 4 ranks
        run_kernel(k, a, b)                    # 4 processes; b holds the result
    """
    import torch

    from .launch import DistRunError, run
    from meshtensor.tilelang.runtime.dist_rank import DistRuntimeError

    per_rank = kernel._split(args)
    try:
        results = run(_rank_main, (kernel.world,), kernel, per_rank, backend=backend,
                      timeout=timeout, deadline=deadline)
    except DistRunError as e:
        # the rank that failed first (not one its peers' wait timed out on)
        order = sorted(e.outcomes.items(), key=lambda kv: ("Collective" in kv[1]
                                                          or "stopped" in kv[1], kv[0]))
        raise DistRunError("meshtensor.dist.run_kernel: " + "; ".join(
            f"rank {r} {t}" for r, t in order), e.outcomes) from None
    errors = [x for x in results if x[0] == "error"]
    if errors:
        origin, err = errors[0][1], errors[0][2]
        out = type(err)(f"rank {origin}: {err}") if isinstance(
            err, (DistRuntimeError, ValueError, TypeError)) else \
            DistRuntimeError(f"rank {origin}: {type(err).__name__}: {err}")
        # when the last rank learnt of it (every rank stops at once)
        out.reported_at = max(x[3] for x in errors)
        if hasattr(err, "detected_at"):
            out.detected_at = err.detected_at
        raise out
    ranks = len(results)
    if ranks == kernel.world:
        per = [[torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a
                for a in res[1]] for res in results]
        kernel._merge(args, per)
        return
    # under torchrun: this process's rank only
    import torch.distributed as dist
    r = dist.get_rank()
    kinds = [k for k in kernel._kinds() if k[0] != "rank"]
    for k, a, v in zip(kinds, args, results[0][1]):
        if k[0] == "scalar":
            continue
        box = k[4].rank_box(tuple(a.shape), kernel.world, r) if k[0] == "mesh" else ()
        a[box] = torch.from_numpy(np.array(v))
