"""The C functions a lowered ``T.dist`` kernel calls, and how they reach Python.

A lowered kernel calls ``meshtensor_rt_call(int64_t *args, int32_t n)`` for each op
and ``meshtensor_rt_value(int64_t ctx, int32_t site, int32_t core)`` for the values
of ``wait_any`` / ``has_pending`` (:mod:`..transform.lower_dist`). Both live in a
twelve-line C library built on first use (with TileLang's C compiler, under its cache
directory) and loaded with ``RTLD_GLOBAL`` before any such kernel is compiled, so the
kernel's shared object finds them. They forward to ONE Python function through a
``ctypes`` callback; ``args[0]`` (the context) names the rank runtime the call is for.

A Python exception cannot cross the callback back into C: :func:`dispatch` catches it,
hands it to the runtime (which records it, stops the job and returns at once from every
later call) and returns 0 to the kernel.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

__all__ = ["load", "register", "unregister"]

_SOURCE = r"""
#include <stdint.h>
typedef int32_t (*meshtensor_cb)(int64_t *args, int32_t n);
static meshtensor_cb callback = 0;
void meshtensor_rt_set_callback(meshtensor_cb f) { callback = f; }
int32_t meshtensor_rt_call(int64_t *args, int32_t n) { return callback(args, n); }
int32_t meshtensor_rt_value(int64_t ctx, int32_t site, int32_t core) {
  int64_t a[3] = {ctx, (int64_t)site, (int64_t)core};
  return callback(a, -3);
}
"""

_CB = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32)
_HANDLERS: dict[int, Callable[[list, bool], int]] = {}
_LOCK = threading.Lock()
_NEXT = [1]


def _dispatch(args: Any, n: int) -> int:
    value = n < 0
    n = -n if value else n
    vals = [args[i] for i in range(n)]
    handler = _HANDLERS.get(vals[0])
    if handler is None:  # a kernel called outside a job (or after it ended)
        return 0
    return handler(vals, value)


_CALLBACK = _CB(_dispatch)


def _build_dir() -> Path:
    try:
        from tilelang import env
        root = Path(env.TILELANG_CACHE_DIR) / "meshtensor_dist"
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".w"
        probe.touch()
        return root
    except (OSError, ImportError, AttributeError):
        return Path(tempfile.gettempdir())


@functools.lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    """Build (once per machine) and load the C library, globally visible."""
    key = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    root = _build_dir()
    lib = root / f"libmeshtensor_dist_{key}.so"
    if not lib.exists():
        from tilelang.contrib.cc import get_cplus_compiler
        cc = os.environ.get("CC") or get_cplus_compiler() or "cc"
        src = root / f"meshtensor_dist_{key}.{os.getpid()}.c"
        tmp = root / f"libmeshtensor_dist_{key}.{os.getpid()}.so"
        src.write_text(_SOURCE)
        lang = ["-x", "c"] if "++" in Path(cc).name else []
        out = subprocess.run([cc, *lang, "-O2", "-shared", "-fPIC", str(src), "-o", str(tmp)],
                             capture_output=True, text=True, timeout=120)
        src.unlink(missing_ok=True)
        if out.returncode != 0:
            raise RuntimeError(f"meshtensor could not build its T.dist runtime library with "
                               f"{cc}: {out.stderr.strip()[:500]}")
        os.replace(tmp, lib)  # whole, by rename: a concurrent build writes the same bytes
    handle = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    handle.meshtensor_rt_set_callback(_CALLBACK)
    return handle


def register(handler: Callable[[list, bool], int]) -> int:
    """A new context number whose calls go to ``handler(args, is_value)``."""
    with _LOCK:
        ctx = _NEXT[0]
        _NEXT[0] += 1
        _HANDLERS[ctx] = handler
    return ctx


def unregister(ctx: int) -> None:
    with _LOCK:
        _HANDLERS.pop(ctx, None)
