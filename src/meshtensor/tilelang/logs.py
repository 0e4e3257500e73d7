"""Keep TileLang's INFO lines ("TileLang begins to compile kernel ...") out of our
command-line and example output, while letting users see them when they ask.

TileLang's ``"tilelang"`` logger prints at INFO level to stdout. :func:`quiet_tilelang`
raises it to WARNING for the duration of a block (our compiles) and restores it after;
it also drops TileLang's warning that a kernel was "found in memory cache" (advice to
use ``@tilelang.jit``, which does not apply to kernels built by our passes).
Errors our kernel layer raises while TileLang builds a kernel (a comm op with bad
arguments) reach the user without TileLang's CRITICAL dump of the generated source
(:func:`install_error_filter`, installed when ``meshtensor.tilelang`` is imported).
To see TileLang's messages, set the environment variable ``MESHTENSOR_TILELANG_LOG`` to
a level name (``INFO``, ``DEBUG``...), used inside the block instead; a logger already
set below INFO (``tilelang.set_log_level("DEBUG")``) is left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Iterator

LOG_ENV = "MESHTENSOR_TILELANG_LOG"


@contextlib.contextmanager
def quiet_tilelang(level: str | int | None = None) -> Iterator[logging.Logger]:
    """Set the ``"tilelang"`` logger to ``level`` (default: ``$MESHTENSOR_TILELANG_LOG``,
    else ``WARNING`` unless the logger is already set below INFO) inside the block; the
    previous level comes back after it.

    >>> import logging
    >>> with quiet_tilelang() as log:
    ...     log.level == logging.WARNING or "MESHTENSOR_TILELANG_LOG" in os.environ
    True
    """
    log = logging.getLogger("tilelang")
    if level is None:
        level = os.environ.get(LOG_ENV) or \
            (log.level if logging.NOTSET < log.level < logging.INFO else "WARNING")
    if isinstance(level, str):
        name = level.strip().upper()
        if not isinstance(getattr(logging, name, None), int):
            raise ValueError(f"quiet_tilelang: unknown log level {level!r} (from "
                             f"{LOG_ENV} or the argument); use DEBUG, INFO, WARNING or ERROR")
        level = getattr(logging, name)
    before = log.level
    log.setLevel(level)
    cache_log = logging.getLogger("tilelang.cache.kernel_cache")
    quiet = level >= logging.WARNING
    if quiet:
        cache_log.addFilter(_drop_memory_cache_advice)
    try:
        yield log
    finally:
        log.setLevel(before)
        if quiet:
            cache_log.removeFilter(_drop_memory_cache_advice)


def _drop_memory_cache_advice(record: logging.LogRecord) -> bool:
    return "in memory cache" not in record.getMessage()


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILDER_LOGGER = "tilelang.language.eager.builder"


def _raised_by_us(err: BaseException | None) -> bool:
    """Whether ``err`` is a ``ValueError``/``TypeError`` raised inside meshtensor (its
    innermost frame is one of our files): an error that already names the statement."""
    if not isinstance(err, (ValueError, TypeError)):
        return False
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(
        _PACKAGE_DIR + os.sep)


def _drop_dump_before_our_errors(record: logging.LogRecord) -> bool:
    """TileLang logs CRITICAL "Failed to build prim_func" with the kernel's generated
    source before re-raising any error met while building a kernel; for our own errors
    (which name the op and the value) that dump is noise, so it is dropped."""
    if record.levelno >= logging.CRITICAL and \
            str(record.msg).startswith("Failed to build prim_func"):
        return not _raised_by_us(sys.exc_info()[1])
    return True


def install_error_filter() -> None:
    """Install :func:`_drop_dump_before_our_errors` on TileLang's builder logger (once)."""
    log = logging.getLogger(BUILDER_LOGGER)
    if _drop_dump_before_our_errors not in log.filters:
        log.addFilter(_drop_dump_before_our_errors)
