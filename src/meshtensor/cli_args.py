"""Argument checks the command-line tools share (``meshtensor`` and its subcommands):
a leaf module, so each command's module imports it and none imports another."""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import re
from typing import Callable

import numpy as np

from .mesh import Mesh

__all__ = ["_int_at_least", "prepare_png", "prepare_output", "dtype_itemsize", "parse_mesh",
           "EXTRA_ITEMSIZES"]

# Element types numpy lacks, by size in bytes (the planner only needs the size).
EXTRA_ITEMSIZES = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}



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
    """Check a ``--png`` path before anything is drawn or printed: matplotlib is
    installed, and :func:`prepare_output` accepts the path.

    >>> prepare_png("/nonexistent/dir/x.png")
    Traceback (most recent call last):
    ...
    ValueError: --png: the folder '/nonexistent' does not exist (only the last folder of the path is created)
    """
    p = pathlib.Path(path)
    if p.suffix.lower() == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise ImportError("--png needs matplotlib: pip install 'meshtensor[viz]'")
    return prepare_output(path, "--png", ".png")


def prepare_output(path: str, flag: str, suffix: str) -> pathlib.Path:
    """Check an output file's path before any work starts: it ends in ``suffix``, is not
    a folder, and the file can be written there (tried by opening it). A missing folder
    is created only where it is the last one (its parent exists), so a mistyped path
    does not grow a tree of folders; a file where a folder should be is named.

    >>> prepare_output("/nonexistent/dir/t.json", "--trace", ".json")
    Traceback (most recent call last):
    ...
    ValueError: --trace: the folder '/nonexistent' does not exist (only the last folder of the path is created)
    """
    p = pathlib.Path(path)
    if p.suffix.lower() != suffix:
        raise ValueError(f"{flag}: expected a file name ending in {suffix}, got {path!r}")
    if p.is_dir():
        raise ValueError(f"{flag}: {path!r} is a folder; give a file name like "
                         f"{path}/out{suffix}")
    folder = p.parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():  # a file where the path needs a folder
        raise ValueError(f"{flag}: {str(existing)!r} is a file, not a folder, so "
                         f"{path!r} cannot be written")
    made = False
    if not folder.exists():
        if existing != folder.parent:
            missing = folder
            while missing.parent != existing:
                missing = missing.parent
            raise ValueError(f"{flag}: the folder {str(missing)!r} does not exist (only "
                             f"the last folder of the path is created)")
        try:
            folder.mkdir()
            made = True
        except OSError as e:
            raise ValueError(f"{flag}: cannot create the folder {str(folder)!r}: "
                             f"{e.strerror or e}") from None
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
    except OSError as e:
        if made:
            folder.rmdir()
        raise ValueError(f"{flag}: cannot write {str(p)!r}: {e.strerror or e}") from None
    if not existed:
        p.unlink()  # written for real after the work
    return p


def dtype_itemsize(text: str) -> int:
    """Bytes per element of a numeric element type: a numpy name (``"float32"``,
    ``"int8"``) or one numpy lacks (``"bfloat16"`` = 2).

    >>> dtype_itemsize("bfloat16"), dtype_itemsize("float64")
    (2, 8)
    """
    name = text.strip()
    if name in EXTRA_ITEMSIZES:
        return EXTRA_ITEMSIZES[name]
    try:
        dt = np.dtype(name)
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biufc":
        raise argparse.ArgumentTypeError(
            f"unknown element type {text!r}: give a numeric numpy type (float32, "
            f"float16, int8, uint8, bool, complex64, ...) or {', '.join(EXTRA_ITEMSIZES)}")
    return dt.itemsize


def parse_mesh(text: str) -> Mesh:
    """``--mesh``: sizes like ``"4x4"`` or a target name (``"a4e"``).

    >>> parse_mesh("2x3").shape
    (2, 3)
    """
    if re.fullmatch(r"\s*-?\d+(\s*x\s*-?\d+)*\s*", text.lower()) and "-" in text:
        raise ValueError(f"--mesh: mesh sizes must be >= 1, got {text!r}")
    try:
        return Mesh.parse(text)
    except ValueError as e:
        raise ValueError(str(e).replace("Mesh.parse:", "--mesh:", 1)) from None
