"""The worker process: imports a generated kernel module, compiles it with
``compile_mesh_kernel``, runs it and analyses it with ``analyze_mesh_communication``;
in the spmdize mode (:func:`handle_spmdize`) it also runs ``spmdize`` on each program
and compiles, runs, verifies and analyses what it returns.

It runs in its own process (started by :class:`Worker`) so that a native crash of the
compiled code, or a hang, costs the worker and not the fuzzer; TileLang is imported
only here. A request is a dict, so is the answer (see :func:`handle`).
"""
from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import re
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
            "message": " ".join(str(e).split()),  # (wrapped at 80 columns: joined)
            "traceback": text[-6000:]}


def first_line(info: dict) -> str:
    """The type and first line of an :func:`error_info` message (a C compiler's first
    ``error:`` line, when it has one), at most 500 characters."""
    msg = (info.get("message") or "").strip()
    lines = msg.splitlines() or [""]
    errs = [ln.strip() for ln in lines if "error:" in ln]
    return f"{info.get('type', '')}: {errs[0] if errs else lines[0]}"[:500]


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
_PREFIX = re.compile(r"\bp(\d+)_")


def _program_of(name: str) -> int | None:
    """The program a buffer, tensor or statement name belongs to (``p<i>_...``)."""
    m = _PREFIX.search(name)
    return int(m.group(1)) if m else None


def _fresh() -> int:
    """A number not used before in this process (module and file names)."""
    _COUNT[0] += 1
    return _COUNT[0]


def _load(path: str):
    """The ``fuzz_kernel`` of the kernel module at ``path``, under a fresh name."""
    return _import(path, f"fuzz_kernel_{os.getpid()}_{_fresh()}").fuzz_kernel


def _build(batch, workdir: str):
    """The ``fuzz_kernel`` of ``batch``, from its source written under ``workdir``."""
    from .program import batch_source

    path = Path(workdir) / f"spmd_{os.getpid()}_{_fresh()}.py"
    path.write_text(batch_source(batch))
    try:
        return _load(str(path))
    finally:
        path.unlink(missing_ok=True)


def _compile(func, flags, check_races: bool = False):
    """``compile_mesh_kernel(func)`` with the C flags ``flags`` (``None``: its own)
    and, with ``check_races``, its run-time race check."""
    from meshtensor.tilelang import compile_mesh_kernel
    kw: dict = {} if flags is None else {"compile_flags": list(flags)}
    if check_races:
        kw["check_races"] = True
    return compile_mesh_kernel(func, **kw)


def _run(kernel, arrays: list) -> list:
    import torch
    args = [torch.from_numpy(np.array(a)) for a in arrays]
    kernel(*args)
    return [a.numpy().copy() for a in args]


def _plan(program_batch, workdir: str) -> dict:
    """``spmdize``'s verdict on one program alone: ``status`` ok / refused / crash, the
    ``message``, and the plan of each copy (``src``, ``dst``, ``kind``, ``first``: the
    kind of a carried copy's first iteration)."""
    from meshtensor.tilelang.transform.spmdize import plan_mesh_copies, spmdize

    phase = "build"
    try:
        func = _build(program_batch, workdir)
        phase = "spmdize"
        spmdize(func)
        plans = [{"src": p.copy.src.buffer.name, "dst": p.copy.dst.buffer.name,
                  "kind": p.kind, "first": p.first.kind if p.first is not None else "",
                  "text": str(p)} for p in plan_mesh_copies(func)]
    except Exception as e:  # noqa: BLE001 (every failure is classified)
        return error_info(e, phase)
    return {"status": "ok", "copies": plans}


def _per_program(rep) -> dict:
    """Per program: the bytes its global-view copies move between cores
    (``remote``) and the bytes its comm ops deliver (``comm``), from a
    ``CommReport``."""
    out: dict = {}
    if rep is None:
        return out
    far = rep.core != rep.peer
    for ci, name in enumerate(rep.copies):
        i = _program_of(name)
        rows = (rep.copy == ci) & far
        out.setdefault(i, {"remote": 0, "comm": 0})["remote"] += int(rep.nbytes[rows].sum())
    for oi, name in enumerate(rep.comm_ops):
        i = _program_of(name)
        rows = rep.op == oi
        out.setdefault(i, {"remote": 0, "comm": 0})["comm"] += int(rep.nbytes[rows].sum())
    return out


def handle_spmdize(req: dict, workdir: str) -> dict:
    """The spmdize mode: ``req`` has ``batch`` (a :class:`~.program.Batch`), ``args``
    (arrays in parameter order), ``compile`` and ``flags`` as for :func:`handle`.

    Compiles and runs the global-view kernel (``outputs``), analyses it (``report``:
    per program ``remote`` bytes), runs ``spmdize`` on each program alone (``plans``),
    then on the programs it accepts together: their
    ``verify_mesh_tensors(owner_only=True)`` issues (``issues``), the outputs of the
    compiled result (``sp_outputs``, by tensor name) and its analysis (``sp_report``:
    per program ``comm`` bytes). A failure of either kernel is the answer's
    ``status`` and ``phase`` (``spmdize...`` for the second), as in :func:`handle`; a
    ``ValueError`` compiling spmdize's output of an accepted global view is a crash
    (spmdize returned a kernel the layer refuses). When the layer refuses the global
    view of a batch of one program, the answer is that refusal, with what spmdize
    made of the program (``plans``, ``issues``, ``sp_outputs``, ``sp_error``)."""
    from meshtensor.tilelang import analyze_mesh_communication, verify_mesh_tensors
    from meshtensor.tilelang.transform.spmdize import spmdize

    batch, flags, compile_ = req["batch"], req.get("flags"), req.get("compile", True)
    names = [t.name for t in batch.params()]
    pristine = dict(zip(names, req["args"]))
    out: dict = {"status": "ok"}
    phase = "build"
    try:
        func = _build(batch, workdir)
        if compile_:
            phase = "compile"
            kernel = _compile(func, flags)
            phase = "run"
            out["outputs"] = _run(kernel, req["args"])
    except Exception as e:  # noqa: BLE001
        out = error_info(e, phase)
        if len(batch.programs) > 1 or phase != "compile" or out["status"] != "refused":
            return out
    if out["status"] == "ok":
        try:
            out["report"] = _per_program(analyze_mesh_communication(func))
        except Exception as e:  # noqa: BLE001
            out["analysis"] = error_info(e, "analysis")
    plans = {p.index: _plan(batch.with_programs((p,)), workdir) for p in batch.programs}
    out["plans"] = plans
    ok = tuple(p for p in batch.programs if plans[p.index]["status"] == "ok")
    if not ok:
        return out
    sub = batch.with_programs(ok)
    phase = "spmdize"
    try:
        sp = spmdize(_build(sub, workdir))
        phase = "spmdize-verify"
        issues: dict = {}
        for i in verify_mesh_tensors(sp, owner_only=True):
            issues.setdefault(_program_of(i.buffer), []).append(f"{i.kind}: {i.message}")
        out["issues"] = issues
        if compile_:
            phase = "spmdize-compile"
            kernel = _compile(sp, flags)
            phase = "spmdize-run"
            sp_names = [t.name for t in sub.params()]
            got = _run(kernel, [pristine[n] for n in sp_names])
            out["sp_outputs"] = dict(zip(sp_names, got))
    except Exception as e:  # noqa: BLE001
        err = error_info(e, phase)
        if out["status"] != "ok":  # the global view is refused: a note on the refusal
            out["sp_error"] = err
            return out
        if phase != "spmdize" and err["status"] == "refused":
            err["status"] = "crash"  # spmdize returned a kernel the layer refuses
            err["message"] = "the layer refuses spmdize's output: " + err["message"]
        err["plans"] = plans
        return err
    try:
        out["sp_report"] = _per_program(analyze_mesh_communication(sp))
    except Exception as e:  # noqa: BLE001
        out["sp_analysis"] = error_info(e, "spmdize-analysis")
    return out


def handle(req: dict) -> dict:
    """``req``: ``path`` (a kernel module defining ``fuzz_kernel``), ``args`` (arrays
    in parameter order), ``compile`` (False: build and analyse only), ``build_only``
    (build, nothing else), ``flags`` (C compiler flags, ``None`` for
    ``compile_mesh_kernel``'s), ``check_races`` (compile with the run-time race
    check). Answer:
    ``status`` ok/refused/crash, ``outputs`` (the arrays after the call), ``report``
    (comm bytes per op and core) or ``analysis`` (the analysis' error)."""
    from meshtensor.tilelang import analyze_mesh_communication

    phase = "build"
    out: dict = {"status": "ok"}
    try:
        func = _load(req["path"])
        if req.get("build_only"):
            return out
        target = func
        if req.get("compile", True):
            phase = "compile"
            kernel = target = _compile(func, req.get("flags"), req.get("check_races", False))
            phase = "run"
            out["outputs"] = _run(kernel, req["args"])
    except Exception as e:  # noqa: BLE001 (every failure is classified)
        return error_info(e, phase)
    try:
        out["report"] = _report(analyze_mesh_communication(target))
    except Exception as e:  # noqa: BLE001
        out["analysis"] = error_info(e, "analysis")
    return out


def _serve(conn, workdir: str, cache: bool = False) -> None:
    if not cache:  # a long run would fill TileLang's kernel cache with one-off kernels
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
            ans = handle_spmdize(req, str(tmp)) if req.get("mode") == "spmdize" \
                else handle(req)
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
    reports the worker's death (a native crash) or a timeout as a crash; ``cache``:
    whether its compilations use TileLang's kernel cache (off by default)."""

    def __init__(self, workdir: str, timeout: float = 300.0, cache: bool = False):
        self.workdir, self.timeout, self.cache = workdir, timeout, cache
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.workdir, self.cache),
                                daemon=True)
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
