"""Measured runs of the built-in GEMMs, read from a file for ``meshtensor calibrate``:
plain data, checked row by row (no TileLang needed).

A file is JSON (a list of objects, or ``{"measurements": [...]}``) or CSV (a header
row, then one run per row) with these fields:

- ``kernel``: a distributed-memory built-in GEMM (:data:`meshtensor.gemms.COMM_ALGORITHMS`);
- ``shape``: ``M`` or ``MxNxK``;
- ``machine``: the machine it ran on (a preset name or machine file): the fit starts
  from it and keeps every number it does not fit;
- ``time``: the measured seconds (> 0);
- optional ``mesh`` (``n`` or ``nxn``; default the machine's smaller side), ``dtype``
  (default ``float32``), ``tiles`` (``BMxBNxBK``) and ``copies`` (2.5D's layers).

Anything wrong is one ``ValueError`` that names the file, the row (counting runs from
1) and the field.

>>> import json, pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "runs.json"
>>> _ = p.write_text(json.dumps([{"kernel": "summa_comm", "shape": "512",
...                               "machine": "generic", "time": -1}]))
>>> load_measurements(p)
Traceback (most recent call last):
...
ValueError: measurements file ...runs.json' row 1: time -1 must be a number of seconds > 0
"""

from __future__ import annotations

import csv
import io
import json
import math
import pathlib
from dataclasses import dataclass
from typing import Any

from .gemms import COMM_ALGORITHMS

__all__ = ["Measurement", "REQUIRED", "OPTIONAL", "FITTABLE", "DEFAULT_FIT",
           "load_measurements", "parse_measurements"]

REQUIRED = ("kernel", "shape", "machine", "time")
OPTIONAL = ("mesh", "dtype", "tiles", "copies")
#: The numbers ``meshtensor calibrate`` can fit (``flops`` scales every FLOP/s figure),
#: and those it fits by default.
FITTABLE = ("flops", "mem_bandwidth", "link_bandwidth", "barrier_latency", "overlap",
            "hop_latency", "message_overhead", "mem_bandwidth_total",
            "injection_bandwidth", "multicast_bandwidth")
DEFAULT_FIT = ("flops", "mem_bandwidth", "link_bandwidth", "barrier_latency", "overlap")


@dataclass(frozen=True)
class Measurement:
    """One measured run: ``kernel`` on ``shape`` (M, N, K) over an ``mesh x mesh`` mesh of
    ``machine``, element type ``dtype``, ``tiles`` (or ``None``), ``copies`` (or
    ``None``), measured ``time`` seconds; ``row`` counts the file's runs from 1."""

    row: int
    kernel: str
    shape: tuple[int, int, int]
    machine: str
    time: float
    mesh: int | None = None
    dtype: str = "float32"
    tiles: tuple[int, int, int] | None = None
    copies: int | None = None


def _ints(where: str, key: str, v: Any, count: tuple[int, ...]) -> tuple[int, ...]:
    text = str(v).strip().lower()
    parts = text.split("x")
    if len(parts) not in count or not all(p.strip().isdigit() for p in parts) \
            or any(int(p) < 1 for p in parts):
        forms = {(1, 3): "M or MxNxK", (3,): "BMxBNxBK", (1, 2): "n or nxn"}[count]
        raise ValueError(f"{where}: {key} {v!r} must be positive ints as {forms}")
    return tuple(int(p) for p in parts)


def _row(where: str, i: int, raw: Any) -> Measurement:
    at = f"{where} row {i}"
    if not isinstance(raw, dict):
        raise ValueError(f"{at}: expected an object with fields {', '.join(REQUIRED)}, got "
                         f"{type(raw).__name__}")
    row = {str(k).strip(): v for k, v in raw.items() if v not in (None, "")}
    for key in REQUIRED:
        if key not in row:
            raise ValueError(f"{at}: missing field {key} (a run needs "
                             f"{', '.join(REQUIRED)})")
    unknown = sorted(set(row) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ValueError(f"{at}: unknown field {unknown[0]}; a run has "
                         f"{', '.join(REQUIRED + OPTIONAL)}")
    kernel = str(row["kernel"]).strip()
    if kernel not in COMM_ALGORITHMS:
        raise ValueError(f"{at}: kernel {kernel!r} is not a built-in distributed-memory "
                         f"GEMM; kernels: {', '.join(COMM_ALGORITHMS)}")
    shape = _ints(at, "shape", row["shape"], (1, 3))
    M, N, K = (shape * 3)[:3] if len(shape) == 1 else shape
    t = row["time"]
    try:
        seconds = float(t) if not isinstance(t, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"{at}: time {t!r} must be a number of seconds > 0")
    mesh = None
    if "mesh" in row:
        sides = _ints(at, "mesh", row["mesh"], (1, 2))
        if len(set(sides)) != 1:
            raise ValueError(f"{at}: mesh {row['mesh']!r} must be square (the built-in "
                             f"GEMMs run on n x n meshes)")
        mesh = sides[0]
    tiles = _ints(at, "tiles", row["tiles"], (3,)) if "tiles" in row else None
    copies = None
    if "copies" in row:
        c = row["copies"]
        if isinstance(c, bool) or not str(c).strip().isdigit() or int(c) < 1:
            raise ValueError(f"{at}: copies {c!r} must be a positive int")
        copies = int(c)
    return Measurement(i, kernel, (M, N, K), str(row["machine"]).strip(), seconds, mesh,
                       str(row.get("dtype", "float32")).strip(), tiles, copies)


def parse_measurements(text: str, fmt: str, where: str = "measurements") -> list[Measurement]:
    """The runs of a file's ``text`` (``fmt``: ``"json"`` or ``"csv"``)."""
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not valid JSON ({e})") from None
        if isinstance(data, dict) and "measurements" in data:
            data = data["measurements"]
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a list of runs (or {{\"measurements\": "
                             f"[...]}}), got {type(data).__name__}")
        rows = data
    elif fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None:
            raise ValueError(f"{where}: empty CSV; the header names {', '.join(REQUIRED)}")
        missing = [k for k in REQUIRED if k not in [f.strip() for f in reader.fieldnames]]
        if missing:
            raise ValueError(f"{where} row 1: missing field {missing[0]} (the header names "
                             f"{', '.join(f.strip() for f in reader.fieldnames)}; a run "
                             f"needs {', '.join(REQUIRED)})")
        rows = [dict(r) for r in reader]
    else:
        raise ValueError(f"{where}: expected a .json or .csv file")
    if not rows:
        raise ValueError(f"{where}: no runs")
    return [_row(where, i + 1, r) for i, r in enumerate(rows)]


def load_measurements(path: str | pathlib.Path) -> list[Measurement]:
    """The runs of a ``.json`` or ``.csv`` file; one ``ValueError`` naming the file, the
    row and the field for anything wrong."""
    p = pathlib.Path(path)
    where = f"measurements file {str(p)!r}"
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"{where}: cannot read it ({e.strerror or e})") from None
    return parse_measurements(text, p.suffix.lower().lstrip("."), where)
