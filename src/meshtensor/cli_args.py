"""Argument checks the command-line tools share (``meshtensor`` and its subcommands):
a leaf module, so each command's module imports it and none imports another."""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
from typing import Callable

__all__ = ["_int_at_least", "prepare_png"]


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type`` for integers >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def prepare_png(path: str) -> pathlib.Path:
    """Check a ``--png`` path before anything is drawn or printed: it ends in ``.png``,
    is not a folder, matplotlib is installed, and the file can be written there (tried
    by opening it). A missing folder is created only where it is the last one (its
    parent exists), so a mistyped path does not grow a tree of folders.

    >>> prepare_png("/nonexistent/dir/x.png")
    Traceback (most recent call last):
    ...
    ValueError: --png: the folder '/nonexistent' does not exist (only the last folder of the path is created)
    """
    p = pathlib.Path(path)
    if p.suffix.lower() != ".png":
        raise ValueError(f"--png: expected a file name ending in .png, got {path!r}")
    if p.is_dir():
        raise ValueError(f"--png: {path!r} is a folder; give a file name like {path}/out.png")
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--png needs matplotlib: pip install 'meshtensor[viz]'")
    folder = p.parent
    made = False
    if not folder.exists():
        if not folder.parent.is_dir():
            missing = folder
            while not missing.parent.exists():
                missing = missing.parent
            raise ValueError(f"--png: the folder {str(missing)!r} does not exist (only the "
                             f"last folder of the path is created)")
        try:
            folder.mkdir()
            made = True
        except OSError as e:
            raise ValueError(f"--png: cannot create the folder {str(folder)!r}: "
                             f"{e.strerror or e}") from None
    elif not folder.is_dir():
        raise ValueError(f"--png: cannot create the folder {str(folder)!r}: "
                         f"{str(folder)!r} is a file")
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
    except OSError as e:
        if made:
            folder.rmdir()
        raise ValueError(f"--png: cannot write {str(p)!r}: {e.strerror or e}") from None
    if not existed:
        p.unlink()  # written for real after the drawing
    return p
