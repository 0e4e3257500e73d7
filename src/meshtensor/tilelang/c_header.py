"""TileLang's C header, precompiled once per set of compiler flags.

Every kernel TileLang compiles for target ``"c"`` starts with ``#include
<tl_templates/cpp/common.h>``, some 70,000 lines of C++ once preprocessed: g++ spends
1.8 s on them at ``-O3`` before it reaches the kernel (0.2 s is left for a small
kernel). :func:`header_flags` builds a precompiled header of them with g++ (about 4 s,
once per flag set, on that set's second compile; the 8 newest are kept under TileLang's
cache directory) and returns the flags that make g++ read it: ``-include`` of a one-line
header that includes ``common.h``, with the ``.gch`` beside it. The kernel's own
``#include`` of ``common.h`` is then empty (``#pragma once``), so the compiled code is
the same; g++ ignores a precompiled header built with other options and reads the text
instead, so a mismatch costs time, never correctness.

Only g++ is supported (clang's precompiled headers work differently); with another
compiler, a cache directory that cannot be written, or ``MESHTENSOR_PCH=0`` in the
environment, :func:`header_flags` returns ``[]`` and kernels compile as before. Each
precompiled header takes some 70 MB.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["PCH_ENV", "header_flags"]

#: Set to ``0`` to compile every kernel without the precompiled header.
PCH_ENV = "MESHTENSOR_PCH"
_HEADER = "tl_templates/cpp/common.h"


@functools.lru_cache(maxsize=None)
def _compiler() -> tuple[str, str] | None:
    """TileLang's C++ compiler and its version line, if it is g++."""
    from tilelang.contrib.cc import get_cplus_compiler

    cxx = get_cplus_compiler()
    if not cxx:
        return None
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or "Free Software Foundation" not in out.stdout:
        return None
    return cxx, out.stdout.splitlines()[0]


def _template_path() -> str:
    from tilelang.env import TILELANG_TEMPLATE_PATH
    return str(TILELANG_TEMPLATE_PATH)


def _cache_root() -> Path:
    from tilelang.env import env
    return Path(env.TILELANG_CACHE_DIR) / "meshtensor_pch"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (processes building the same header wait for the
    first; without POSIX locks each builds its own copy)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


#: Flag sets whose header failed to build in this process: not tried again.
_FAILED: set[str] = set()
#: How many precompiled headers (flag sets) the cache keeps; the oldest go first.
KEEP = 8


def _key(cxx: str, version: str, flags: list[str], templates: str) -> str | None:
    """A name for the header built by this compiler with these flags from the template
    folder as it is now (every file's size and time: ``common.h`` includes others,
    and g++ does not check those when it reads a precompiled header)."""
    folder = Path(templates) / Path(_HEADER).parent
    try:
        stats = [(f.name, f.stat()) for f in folder.iterdir() if f.is_file()]
        files = sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    except OSError:
        return None
    return hashlib.sha256(repr((cxx, version, flags, templates, files)).encode()
                          ).hexdigest()[:20]


def header_flags(compile_flags: Sequence[str]) -> list[str]:
    """The flags that make g++ read TileLang's C header precompiled with
    ``compile_flags``, or ``[]``: the first compile with a flag set only notes it (a
    one-off set does not pay the 4 s build), the second builds the header.

    >>> flags = header_flags(["-O0"])
    >>> flags == [] or (flags[0] == "-include" and flags[1].endswith("tl_common.h"))
    True
    """
    if os.environ.get(PCH_ENV, "1") == "0":
        return []
    found = _compiler()
    if found is None:
        return []
    cxx, version = found
    flags = [item for flag in compile_flags for item in str(flag).split()]
    templates = _template_path()
    key = _key(cxx, version, flags, templates)
    if key is None or key in _FAILED:
        return []
    folder = _cache_root() / key
    header = folder / "tl_common.h"
    if any(c.isspace() for c in str(header)):
        return []  # TileLang splits every flag at white space
    gch = folder / "tl_common.h.gch"
    if gch.exists():
        return ["-include", str(header)]
    try:
        if not (folder / "seen").exists():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "seen").touch()
            return []
        with _locked(folder / "lock"):
            if not gch.exists():
                _build(cxx, templates, flags, header, gch)
                _evict(folder.parent, KEEP)
    except (OSError, subprocess.SubprocessError):
        pass
    if not gch.exists():
        _FAILED.add(key)
        return []
    return ["-include", str(header)]


def _evict(root: Path, keep: int) -> None:
    """Remove all but the ``keep`` newest precompiled headers under ``root`` (each
    some 70 MB)."""
    built = sorted(root.glob("*/tl_common.h.gch"), key=lambda f: f.stat().st_mtime,
                   reverse=True)
    for old in built[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _build(cxx: str, templates: str, flags: list[str], header: Path, gch: Path) -> None:
    """Write the one-line header and precompile it as TileLang compiles a kernel
    (``-std=c++17 -fPIC``, its template folder, then ``flags``); the ``.gch`` appears
    whole or not at all."""
    header.write_text(f"#include <{_HEADER}>\n")
    fd, tmp = tempfile.mkstemp(dir=header.parent, suffix=".gch.tmp")
    os.close(fd)
    try:
        done = subprocess.run([cxx, "-std=c++17", "-fPIC", "-I" + templates, *flags,
                               "-x", "c++-header", str(header), "-o", tmp],
                              capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            os.chmod(tmp, 0o644)  # as readable as the kernels in the cache beside it
            os.replace(tmp, gch)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
