"""Start one process per device and run a function on each: on this machine (loopback,
``run``) or under ``torchrun`` across hosts (``init_from_env``)."""

from __future__ import annotations

import datetime
import os
import pickle
import queue as queue_mod
import socket
import sys
import time
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from ..mesh import Mesh


class DistRunError(RuntimeError):
    """One or more ranks failed; ``outcomes`` maps rank -> what happened to it, ``cause``
    is the rank whose own failure came first (its error leads the message, the other
    ranks' follow) and ``traceback`` that rank's traceback ("" when it has none)."""

    def __init__(self, message: str, outcomes: dict[int, str], cause: int | None = None,
                 traceback: str = ""):
        super().__init__(message)
        self.outcomes = outcomes
        self.cause = cause
        self.traceback = traceback


def _because_of_a_peer(e: BaseException) -> bool:
    """Whether a rank's exception is the echo of another rank's failure (a collective
    that lost its peer, torch.distributed's own transport and store errors) rather
    than its own cause."""
    from .engine import DistCollectiveError
    try:
        from torch.distributed import DistError
    except ImportError:  # an older torch
        DistError = DistCollectiveError  # noqa: N806
    return isinstance(e, (DistCollectiveError, DistError)) or (
        isinstance(e, RuntimeError) and "Connection closed by peer" in str(e))


#: Set to 1 to see everything torch's C++ layer logs in the spawned ranks (warnings with
#: ``frame #...`` backtraces when a peer is gone); by default they are off, as the
#: DistRunError summary already says which rank failed and why.
DEBUG_ENV = "MESHTENSOR_DIST_DEBUG"


def _child_env() -> dict[str, str]:
    """Environment variables ``run`` sets for the ranks it spawns: torch's C++ log level
    at ERROR (its warnings carry dozens of ``frame #...`` lines), unless the debug mode
    is on or the caller chose a level (``TORCH_CPP_LOG_LEVEL``) already."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0") or "TORCH_CPP_LOG_LEVEL" in os.environ:
        return {}
    return {"TORCH_CPP_LOG_LEVEL": "ERROR"}


#: What the fork server imports once, so that a rank starts in milliseconds instead of
#: importing torch itself (about 2.5 s of CPU per rank, 7 s of wall time for a 2x3 job
#: on 2 cores); DTensor's module too, for the bridge (another second per rank), and
#: torch._dynamo, which ``DTensor.from_local`` imports on its first call (1.2 s more
#: per rank; 1.2 s once for the server of a job that does not use DTensor).
_PRELOAD = ["torch", "torch.distributed", "torch.distributed.tensor", "torch._dynamo",
            "meshtensor.dist"]
#: Variables read when torch or Python starts or imports (torch's log levels and
#: debug modes, its thread pools', the interpreter's own): a rank forked from the
#: preloaded server keeps the values the server started with. Compared by prefix, so
#: that a change to any of them (``TORCH_DISTRIBUTED_DEBUG``, ``TORCH_LOGS``,
#: ``PYTHONWARNINGS``...) gets freshly spawned ranks.
_IMPORT_TIME_PREFIXES = ("TORCH", "PYTHON", "OMP_", "MKL_", "KMP_", "GLOO_", "NCCL_",
                         "CUDA_")
#: Those variables as the fork server was started with them (None: not started by us);
#: a job that wants other values starts with "spawn".
_server_env: dict[str, str] | None = None
#: The process that started it: a process forked from that one inherits Python's
#: record of the server but cannot use it (the server is not its child).
_server_owner: int | None = None


def _import_time(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(_IMPORT_TIME_PREFIXES)}


def _context(environ: dict[str, str]) -> tuple[Any, bool]:
    """``(multiprocessing context, whether its first start starts the fork server)``
    for a job whose ranks get the environment ``environ``: Python's fork server with
    torch imported, where this platform has one and the server's import-time variables
    are the job's; "spawn" (each rank imports torch itself) otherwise."""
    global _server_env, _server_owner
    import multiprocessing
    import torch.multiprocessing as mp
    spawn = mp.get_context("spawn"), False
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return spawn
    from multiprocessing import forkserver
    server = getattr(forkserver, "_forkserver", None)
    wanted = _import_time(environ)
    if _server_owner is not None and _server_owner != os.getpid():
        return spawn  # forked from the process that started it
    if _server_env is None:
        if getattr(server, "_forkserver_pid", 0) is not None:
            # started by someone else (its preload and log level unknown), or a Python
            # whose fork server we do not know
            return spawn
        # keep what the caller asked its fork server to import, but not "__main__"
        # (under pytest or a notebook that is not a script)
        theirs = [m for m in getattr(server, "_preload_modules", []) if m != "__main__"]
        forkserver.set_forkserver_preload(list(dict.fromkeys(theirs + _PRELOAD)))
        _server_env = wanted  # run starts the server with the job's environment
        _server_owner = os.getpid()
        return mp.get_context("forkserver"), True
    return (mp.get_context("forkserver"), False) if wanted == _server_env else spawn


class _CallerFd:
    """One of the caller's file descriptors, handed to a rank as it starts: a rank
    forked from the fork server would otherwise write to the server's stdout and
    stderr, which are the first job's caller's."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self):
        from multiprocessing import reduction
        return _detach, (reduction.DupFd(self.fd),)


def _detach(dup: Any) -> int:
    return dup.detach()


def _caller_fd(fd: int) -> "_CallerFd | None":
    try:
        os.fstat(fd)
    except OSError:  # closed in the caller: the rank keeps what it has
        return None
    return _CallerFd(fd)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _plain(x: Any) -> Any:
    """Results cross process boundaries as NumPy / Python values."""
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple takes fields
        return type(x)(*(_plain(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _seconds(api: str, name: str, value: Any, optional: bool = False) -> float | None:
    """A positive number of seconds (or None where ``optional``), else a clear error."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"meshtensor.dist.{api}: {name} must be a number of seconds"
                        f"{' or None' if optional else ''}, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"meshtensor.dist.{api}: {name} must be positive, got {value!r}")
    return float(value)


def init_from_env(mesh_shape: Any, backend: str = "gloo", timeout: float = 60.0):
    """Initialise torch.distributed from the environment (``torchrun`` sets ``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) and return a :class:`DistMesh`
    whose collectives time out after ``timeout`` seconds.

    Example (in a script started by ``torchrun --nproc-per-node 4``)::

        dm = init_from_env((2, 2))
    """
    import torch.distributed as dist

    from .engine import DistMesh
    td = datetime.timedelta(seconds=_seconds("init_from_env", "timeout", timeout))
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=td)
    return DistMesh(Mesh(mesh_shape) if not isinstance(mesh_shape, Mesh) else mesh_shape, timeout=td)


def _worker(rank: int, world: int, mesh_shape: Any, backend: str, port: int, timeout: float,
            job: bytes, results: Any, environ: dict[str, str], stdio: tuple) -> None:
    # A rank forked from the fork server has the server's environment and stdio: take
    # the caller's, as a spawned rank would.
    for fd, std in zip(stdio, (1, 2)):
        if fd is not None and fd != std:
            os.dup2(fd, std)
            os.close(fd)
    os.environ.clear()
    os.environ.update(environ)
    import torch
    import torch.distributed as dist

    from .engine import DistMesh
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world))
    try:
        fn, args = pickle.loads(job)  # under the caller's environment
        td = datetime.timedelta(seconds=timeout)
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=td)
        dm = DistMesh(mesh_shape, timeout=td)
        results.put((rank, "ok", _plain(fn(dm, *args))))
    except BaseException as e:  # report everything, including SystemExit
        status = "echo" if _because_of_a_peer(e) else "error"
        results.put((rank, status, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass


def run(fn: Callable, mesh_shape: Any, *args: Any, backend: str = "gloo",
        timeout: float = 60.0, deadline: float | None = None) -> list[Any]:
    """Run ``fn(dist_mesh, *args)`` on one process per device and return each rank's
    result (NumPy arrays for tensors), in rank order.

    On this machine it starts ``mesh.size`` processes talking over loopback, forked
    from Python's fork server with torch already imported, so that every job after the
    first starts in a fraction of a second (where the platform has no fork server, each
    rank is spawned and imports torch). Under ``torchrun`` (``RANK`` is set) it runs in
    the current process and returns ``[this rank's result]``. ``fn`` must be a
    module-level function and ``args`` picklable (each rank receives its own copy), and
    a script that calls ``run`` must guard it with ``if __name__ == "__main__":``.

    Two limits, independent of each other:

    - ``timeout`` (seconds): how long one collective waits for its peers. If a rank
      raises or dies, the others fail with :class:`DistCollectiveError` within about
      ``timeout``, every process is stopped, and :class:`DistRunError` reports what
      happened to each rank. A healthy job may run any number of collectives.
    - ``deadline`` (seconds, default None: no limit): wall-clock limit for the whole
      job, start-up included. When it passes, every process is stopped and
      :class:`DistRunError` says which ranks had no result. Under ``torchrun`` the job's
      lifetime is torchrun's business and ``deadline`` is not applied.

    The ranks run with torch's C++ logging at ERROR, so a failure prints the
    :class:`DistRunError` summary without torch's C++ backtraces (``frame #...``);
    ``MESHTENSOR_DIST_DEBUG=1`` in the environment keeps them (and a
    ``TORCH_CPP_LOG_LEVEL`` you set is left alone).

    Example (in a script)::

        def work(dm):
            return dm.rank
        if __name__ == "__main__":
            print(run(work, (2, 2), timeout=30))     # [0, 1, 2, 3]
    """
    mesh = mesh_shape if isinstance(mesh_shape, Mesh) else Mesh(mesh_shape)
    _seconds("run", "timeout", timeout)
    deadline = _seconds("run", "deadline", deadline, optional=True)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dm = init_from_env(mesh, backend, timeout)
        return [_plain(fn(dm, *args))]
    try:  # plain pickle: a copy per rank, and no file descriptor per tensor to pass
        job = pickle.dumps((fn, args))
    except Exception as e:  # noqa: BLE001 (pickle raises several types)
        raise TypeError(f"meshtensor.dist.run: fn and args must be picklable (fn a "
                        f"module-level function): {type(e).__name__}: {e}") from e
    child = _child_env()
    environ = {**os.environ, **child}
    ctx, starting = _context(environ)
    results = ctx.Queue()
    port = _free_port()
    stdio = (_caller_fd(1), _caller_fd(2))
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(r, mesh.size, mesh.as_dict, backend, port, timeout, job,
                               results, environ, stdio))
             for r in range(mesh.size)]
    extra = dict(child)
    if starting:  # the fork server imports what the caller would (Python 3.11's server
        # ignores the caller's sys.path)
        extra["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    saved = {k: os.environ.get(k) for k in extra}
    stop_at = None if deadline is None else time.monotonic() + deadline  # start-up too
    os.environ.update(extra)  # a spawned rank, or the fork server, copies os.environ
    try:
        for p in procs:
            p.start()
    except BaseException:
        for p in procs:
            if p.pid is not None and p.is_alive():
                p.kill()
        raise
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outcomes: dict[int, tuple[str, Any]] = {}
    failed_at: float | None = None
    why = "no result"
    try:
        while len(outcomes) < mesh.size:
            try:
                rank, status, payload = results.get(timeout=0.2)
                outcomes[rank] = (status, payload)
                if status == "error" and failed_at is None:
                    failed_at = time.monotonic()
            except queue_mod.Empty:
                pass
            for r, p in enumerate(procs):
                if r not in outcomes and p.exitcode is not None:
                    time.sleep(0.2)  # its message may still be in the pipe
                    try:
                        while True:
                            rank, status, payload = results.get_nowait()
                            outcomes[rank] = (status, payload)
                    except queue_mod.Empty:
                        pass
                    if r not in outcomes:
                        outcomes[r] = ("died", f"exited with code {p.exitcode} without a result")
                        failed_at = failed_at or time.monotonic()
            now = time.monotonic()
            if failed_at is not None and now - failed_at > timeout + 10:
                # survivors had their collective timeout to notice; stop waiting
                why = f"no result {timeout:g} s (the collective timeout) + 10 s after a failure"
                break
            if stop_at is not None and now > stop_at:
                why = f"no result within the deadline of {deadline:g} s"
                break
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
        results.close()
    bad = {r: v for r, v in outcomes.items() if v[0] != "ok"}
    missing = [r for r in range(mesh.size) if r not in outcomes]
    if bad or missing:
        raise _run_error(mesh, outcomes, missing, why)
    return [outcomes[r][1] for r in range(mesh.size)]


def _run_error(mesh: Mesh, outcomes: dict[int, tuple[str, Any]], missing: list[int],
               why: str) -> DistRunError:
    """The job's failure, root cause first: the first rank (in the order their reports
    arrived) that raised or died on its own, then the ranks that failed because a peer
    had (their collectives lost it), those stopped without a result, those that
    finished; with the first rank's traceback at the end."""
    lines = {r: "finished" if v[0] == "ok" else
             f"{'error' if v[0] == 'echo' else v[0]}: {str(v[1]).splitlines()[0]}"
             for r, v in outcomes.items()}
    for r in missing:
        lines[r] = f"stopped: {why}"
    rank_of = {"error": 0, "died": 0, "echo": 1, "stopped": 2, "ok": 3}

    def kind(r: int) -> int:
        return rank_of[outcomes[r][0] if r in outcomes else "stopped"]

    # the cause: the first report of the most telling kind (outcomes is in arrival
    # order, and min() keeps the first); the others by kind, then rank
    first = min(lines, key=kind)
    order = [first] + sorted((r for r in lines if r != first), key=lambda r: (kind(r), r))
    text = [f"meshtensor.dist.run: rank {first} {mesh.multi_index(first)} {lines[first]}"]
    if len(order) > 1:
        text.append("the other ranks:")
        text += [f"  rank {r} {mesh.multi_index(r)} {lines[r]}" for r in order[1:]]
    tb = ""
    if first in outcomes and outcomes[first][0] in ("error", "echo"):
        tb = str(outcomes[first][1]).split("\n", 1)[1].rstrip() if "\n" in str(
            outcomes[first][1]) else ""
        if tb:
            text.append(f"rank {first}'s traceback:")
            text += ["  " + ln for ln in tb.splitlines()]
    return DistRunError("\n".join(text), dict(sorted(lines.items())), cause=first,
                        traceback=tb)


def local_part(x: np.ndarray, sharding, rank: int):
    """This rank's local array of ``x`` under ``sharding`` as a torch tensor (helper for
    tests and examples that start from a global array on every rank)."""
    import torch

    from ..mesh_array import distribute
    return torch.from_numpy(np.array(distribute(x, sharding).local(rank)))
