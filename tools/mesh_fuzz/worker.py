"""The worker process: imports a generated kernel module, compiles it with
``compile_mesh_kernel``, runs it and analyses it with ``analyze_mesh_communication``.

It runs in its own process (started by :class:`Worker`) so that a native crash of the
compiled code, or a hang, costs the worker and not the fuzzer; TileLang is imported
only here. A request is a dict, so is the answer (see :func:`handle`).
"""
from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import shutil
import signal
import sys
import traceback
from pathlib import Path

import numpy as np

STARTUP_TIMEOUT = 300.0


def _meshtensor_dir() -> str:
    import meshtensor
    return os.path.dirname(os.path.abspath(meshtensor.__file__)) + os.sep


def error_info(e: BaseException, phase: str) -> dict:
    """``status`` ``refused`` for a ``ValueError`` raised by meshtensor's own code, else
    ``crash``; with the phase, type, message and traceback."""
    tb = e.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    ours = last is not None and os.path.abspath(last).startswith(_meshtensor_dir())
    status = "refused" if isinstance(e, ValueError) and ours else "crash"
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return {"status": status, "phase": phase, "type": type(e).__name__,
            "message": str(e), "traceback": text[-6000:]}


def _import(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod


def _report(rep) -> dict | None:
    if rep is None:
        return None
    n, size = len(rep.comm_ops), rep.mesh.size
    rec = np.zeros((n, size), dtype=np.int64)
    sent = np.zeros((n, size), dtype=np.int64)
    rows = rep.op >= 0
    np.add.at(rec, (rep.op[rows], rep.core[rows]), rep.nbytes[rows])
    np.add.at(sent, (rep.op[rows], rep.peer[rows]), rep.nbytes[rows])
    return {"names": tuple(rep.mesh.axis_names), "shape": tuple(rep.mesh.shape),
            "received": rec, "sent": sent}


_COUNT = [0]


def handle(req: dict) -> dict:
    """``req``: ``path`` (a kernel module defining ``fuzz_kernel``), ``args`` (arrays
    in parameter order), ``compile`` (False: build and analyse only), ``flags`` (C
    compiler flags, ``None`` for ``compile_mesh_kernel``'s). Answer:
    ``status`` ok/refused/crash, ``outputs`` (the arrays after the call), ``report``
    (comm bytes per op and core) or ``analysis`` (the analysis' error)."""
    from meshtensor.tilelang import analyze_mesh_communication, compile_mesh_kernel

    _COUNT[0] += 1
    phase = "build"
    out: dict = {"status": "ok"}
    try:
        func = _import(req["path"], f"fuzz_kernel_{os.getpid()}_{_COUNT[0]}").fuzz_kernel
        target = func
        if req.get("compile", True):
            phase = "compile"
            flags = req.get("flags")
            kernel = (compile_mesh_kernel(func) if flags is None else
                      compile_mesh_kernel(func, compile_flags=list(flags)))
            target = kernel
            phase = "run"
            import torch
            args = [torch.from_numpy(np.array(a)) for a in req["args"]]
            kernel(*args)
            out["outputs"] = [a.numpy().copy() for a in args]
    except Exception as e:  # noqa: BLE001 (every failure is classified)
        return error_info(e, phase)
    try:
        out["report"] = _report(analyze_mesh_communication(target))
    except Exception as e:  # noqa: BLE001
        out["analysis"] = error_info(e, "analysis")
    return out


def _serve(conn, workdir: str) -> None:
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    tmp = Path(workdir) / f"tmp-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)
    import tempfile
    tempfile.tempdir = str(tmp)
    log = os.open(Path(workdir) / f"worker-{os.getpid()}.log",
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    import tilelang  # noqa: F401
    import torch
    torch.set_num_threads(1)
    import meshtensor.tilelang  # noqa: F401
    conn.send({"status": "ready"})
    while True:
        req = conn.recv()
        if req is None:
            break
        start = os.lseek(log, 0, os.SEEK_END)
        t0 = _cpu()
        try:
            ans = handle(req)
        except BaseException as e:  # noqa: BLE001
            ans = error_info(e, "worker")
        ans["cpu"] = _cpu() - t0
        if ans["status"] == "crash" and "error:" not in ans["message"]:
            # the C compiler writes its errors to our stderr, not into the exception
            with open(Path(workdir) / f"worker-{os.getpid()}.log", errors="replace") as f:
                f.seek(start)
                errs = [ln.strip() for ln in f if "error:" in ln]
            if errs:
                ans["message"] = "\n".join(errs[:5]) + "\n" + ans["message"]
        for f in tmp.iterdir():  # tilelang leaves its .cpp/.so files in TMPDIR
            if f.is_dir():
                shutil.rmtree(f, ignore_errors=True)
            else:
                f.unlink(missing_ok=True)
        conn.send(ans)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the C compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Worker:
    """A worker process; :meth:`call` sends one request and waits for the answer, or
    reports the worker's death (a native crash) or a timeout as a crash."""

    def __init__(self, workdir: str, timeout: float = 300.0):
        self.workdir, self.timeout = workdir, timeout
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.workdir), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(STARTUP_TIMEOUT):
            raise RuntimeError("fuzz worker did not start")
        self.conn.recv()

    def call(self, req: dict) -> dict:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send(req)
            if self.conn.poll(self.timeout):
                return self.conn.recv()
            self.stop(kill=True)
            return {"status": "crash", "phase": "run", "type": "Timeout",
                    "message": f"no answer within {self.timeout:.0f} s", "traceback": ""}
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self.proc.exitcode if self.proc is not None else None
            if self.proc is not None:
                self.proc.join(5)
                code = self.proc.exitcode
            self.proc = None
            sig = ""
            if code is not None and code < 0:
                sig = f" ({signal.Signals(-code).name})"
            return {"status": "crash", "phase": "native", "type": "WorkerDied",
                    "message": f"the worker process died with exit code {code}{sig}",
                    "traceback": ""}

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if not kill:
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (BrokenPipeError, OSError):
                pass
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.proc = None
