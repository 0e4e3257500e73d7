"""Machine descriptions for the performance model: plain data, validated.

A :class:`Machine` says how fast one core computes (FLOP/s per element type), how fast
it moves bytes between global memory and itself, how fast its mesh links are, what a
hop and a message cost, and how much local memory it has. The performance model of
``meshtensor.tilelang`` (``estimate_mesh_kernel``) divides a kernel's counts by these
numbers. Presets (:data:`PRESETS`): ``generic`` (every number an assumption) and
published mesh chips; docs/perf.md gives each preset number's source and whether it is
a published figure, derived from published figures, measured, or assumed.

A machine file (JSON, or TOML on Python 3.11+) holds the same fields::

    {"name": "mychip", "mesh_shape": [4, 4], "flops_per_s": {"float32": 2e9},
     "mem_bandwidth": 8e9, "link_bandwidth": 8e9, "hop_latency": 1.5e-9,
     "message_overhead": 1e-8, "local_memory_bytes": 32768}

Units: FLOP/s per core, bytes/s (memory bandwidth per core; link bandwidth per
*directed* link), seconds, bytes.

>>> m = get_machine("epiphany-e16g301")
>>> m.mesh_shape, m.rate("float32"), m.local_memory_bytes
((4, 4), 2000000000.0, 32768)
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .mesh import _is_int

__all__ = ["Machine", "PRESETS", "FIELDS", "CHIP_LINK_DEFAULTS", "get_machine",
           "load_machine", "machine_names"]

#: The numeric fields of a machine and what each must be (the first word is the check).
FIELDS = {
    "mesh_shape": "positive ints: the largest mesh of cores (one size per axis)",
    "flops_per_s": "positive numbers: FLOP/s of one core per element type",
    "mem_bandwidth": "positive: bytes/s between global memory and one core",
    "link_bandwidth": "positive: bytes/s of one directed link between neighbours",
    "hop_latency": "non-negative: seconds per router hop",
    "message_overhead": "non-negative: seconds a core spends per message it sends",
    "local_memory_bytes": "positive int: bytes of one core's local memory",
}
#: Chip-to-chip links (T.dist kernels: core (r, c) of one chip to core (r, c) of
#: another), optional in a machine file: bandwidth per directed link and a fixed cost
#: per message; the defaults are assumptions.
CHIP_LINK_DEFAULTS = {"chip_link_bandwidth": 25e9, "chip_link_latency": 1e-6}
_OPTIONAL = ("name", "description", "sources") + tuple(CHIP_LINK_DEFAULTS)


def _number(where: str, key: str, v: Any, positive: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: {key} must be a number, got {v!r} "
                         f"({type(v).__name__})")
    v = float(v)
    if math.isnan(v) or math.isinf(v) or (v <= 0 if positive else v < 0):
        need = "> 0" if positive else ">= 0"
        raise ValueError(f"{where}: {key} must be {need} and finite, got {v!r}")
    return v


@dataclass(frozen=True)
class Machine:
    """A mesh chip as the performance model sees it (see the module docstring).

    ``flops_per_s`` maps element types (TIR names: ``float32``, ``bfloat16``,
    ``int8``...) to one core's FLOP/s; :meth:`rate` looks one up. ``sources`` maps a
    field to where its number comes from (``"published: ..."``, ``"derived: ..."``,
    ``"measured: ..."`` or ``"assumed: ..."``). Every number is checked when the
    machine is made: a negative or missing one is a ``ValueError`` naming it.

    >>> m = Machine("toy", (2, 2), {"float32": 1e9}, mem_bandwidth=1e9,
    ...             link_bandwidth=2e9, hop_latency=1e-9, message_overhead=0.0,
    ...             local_memory_bytes=65536)
    >>> m.replace(link_bandwidth=4e9).link_bandwidth
    4000000000.0
    >>> Machine("bad", (2, 2), {"float32": 1e9}, 1e9, -1.0, 0.0, 0.0, 1)
    Traceback (most recent call last):
    ...
    ValueError: machine 'bad': link_bandwidth must be > 0 and finite, got -1.0
    """

    name: str
    mesh_shape: tuple[int, ...]
    flops_per_s: Mapping[str, float]
    mem_bandwidth: float
    link_bandwidth: float
    hop_latency: float
    message_overhead: float
    local_memory_bytes: int
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    chip_link_bandwidth: float = CHIP_LINK_DEFAULTS["chip_link_bandwidth"]
    chip_link_latency: float = CHIP_LINK_DEFAULTS["chip_link_latency"]

    def __post_init__(self) -> None:
        where = f"machine {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"machine: name must be a non-empty string, got {self.name!r}")
        shape = self.mesh_shape
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or not shape \
                or any(not _is_int(s) or s < 1 for s in shape):
            raise ValueError(f"{where}: mesh_shape must be a non-empty list of positive "
                             f"ints, got {shape!r}")
        rates = self.flops_per_s
        if not isinstance(rates, Mapping) or not rates:
            raise ValueError(f"{where}: flops_per_s must map element types to FLOP/s "
                             f"(e.g. {{'float32': 2e9}}), got {rates!r}")
        clean = {}
        for k, v in rates.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: flops_per_s keys are element type names, got "
                                 f"{k!r}")
            clean[k] = _number(where, f"flops_per_s[{k!r}]", v, True)
        mem = self.local_memory_bytes
        if not _is_int(mem) or mem < 1:
            raise ValueError(f"{where}: local_memory_bytes must be a positive int, got "
                             f"{mem!r}")
        set_ = object.__setattr__
        set_(self, "mesh_shape", tuple(int(s) for s in shape))
        set_(self, "flops_per_s", MappingProxyType(dict(sorted(clean.items()))))
        set_(self, "local_memory_bytes", int(mem))
        for key in ("mem_bandwidth", "link_bandwidth"):
            set_(self, key, _number(where, key, getattr(self, key), True))
        for key in ("hop_latency", "message_overhead", "chip_link_latency"):
            set_(self, key, _number(where, key, getattr(self, key), False))
        set_(self, "chip_link_bandwidth",
             _number(where, "chip_link_bandwidth", self.chip_link_bandwidth, True))
        src = self.sources
        if not isinstance(src, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in src.items()):
            raise ValueError(f"{where}: sources must map field names to where their "
                             f"numbers come from (strings), got {src!r}")
        set_(self, "sources", MappingProxyType(dict(src)))

    def __hash__(self) -> int:
        return hash((self.name, self.mesh_shape, tuple(self.flops_per_s.items()),
                     self.mem_bandwidth, self.link_bandwidth, self.hop_latency,
                     self.message_overhead, self.local_memory_bytes))

    def rate(self, dtype: str) -> float:
        """One core's FLOP/s for ``dtype``; ``ValueError`` naming the types it has.

        >>> get_machine("epiphany-e16g301").rate("float16")
        Traceback (most recent call last):
        ...
        ValueError: machine 'epiphany-e16g301' has no FLOP/s for float16 (it lists float32); add it to flops_per_s
        """
        try:
            return self.flops_per_s[str(dtype)]
        except KeyError:
            raise ValueError(f"machine {self.name!r} has no FLOP/s for {dtype} (it lists "
                             f"{', '.join(self.flops_per_s)}); add it to flops_per_s"
                             ) from None

    def replace(self, **changes: Any) -> "Machine":
        """A copy with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def fits(self, mesh_shape: tuple[int, ...]) -> bool:
        """Whether a kernel's mesh fits on this machine's (axis by axis; a mesh with
        fewer axes is padded with 1s: a row of 4 fits a 4x4 chip).

        >>> get_machine("epiphany-e16g301").fits((4,)), get_machine("epiphany-e16g301").fits((8, 2))
        (True, False)
        """
        if len(mesh_shape) > len(self.mesh_shape):
            return False
        padded = tuple(mesh_shape) + (1,) * (len(self.mesh_shape) - len(mesh_shape))
        return all(a <= b for a, b in zip(padded, self.mesh_shape))

    def as_dict(self) -> dict[str, Any]:
        """The machine as a machine file's fields (JSON-ready)."""
        return {"name": self.name, "mesh_shape": list(self.mesh_shape),
                "flops_per_s": dict(self.flops_per_s), "mem_bandwidth": self.mem_bandwidth,
                "link_bandwidth": self.link_bandwidth, "hop_latency": self.hop_latency,
                "message_overhead": self.message_overhead,
                "local_memory_bytes": self.local_memory_bytes,
                "chip_link_bandwidth": self.chip_link_bandwidth,
                "chip_link_latency": self.chip_link_latency,
                "description": self.description, "sources": dict(self.sources)}

    @staticmethod
    def from_dict(data: Mapping[str, Any], where: str = "machine") -> "Machine":
        """A machine from a machine file's fields; ``ValueError`` naming every missing
        field, or an unknown one.

        >>> Machine.from_dict({"name": "x", "mesh_shape": [2, 2]})
        Traceback (most recent call last):
        ...
        ValueError: machine: missing flops_per_s, mem_bandwidth, link_bandwidth, hop_latency, message_overhead, local_memory_bytes (a machine needs mesh_shape, flops_per_s, mem_bandwidth, link_bandwidth, hop_latency, message_overhead, local_memory_bytes)
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a table of fields, got "
                             f"{type(data).__name__}")
        unknown = sorted(set(data) - set(FIELDS) - set(_OPTIONAL))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; a machine has "
                             f"{', '.join(list(FIELDS) + list(_OPTIONAL))}")
        missing = [k for k in FIELDS if k not in data]
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)} (a machine needs "
                             f"{', '.join(FIELDS)})")
        shape = data["mesh_shape"]
        return Machine(name=str(data.get("name", "machine")),
                       mesh_shape=tuple(shape) if isinstance(shape, list) else shape,
                       flops_per_s=data["flops_per_s"],
                       mem_bandwidth=data["mem_bandwidth"],
                       link_bandwidth=data["link_bandwidth"],
                       hop_latency=data["hop_latency"],
                       message_overhead=data["message_overhead"],
                       local_memory_bytes=data["local_memory_bytes"],
                       description=str(data.get("description", "")),
                       sources=data.get("sources", {}),
                       **{k: data.get(k, v) for k, v in CHIP_LINK_DEFAULTS.items()})


def _preset(name: str, description: str, **fields: tuple[Any, str]) -> Machine:
    """A preset from ``field=(value, source)`` pairs: every number carries its source."""
    return Machine(name=name, description=description,
                   sources={k: s for k, (_, s) in fields.items()},
                   **{k: v for k, (v, _) in fields.items()})


# Sources are spelt out in docs/perf.md ("Machines"); the short forms here say the status.
PRESETS: Mapping[str, Machine] = MappingProxyType({m.name: m for m in (
    _preset(
        "generic", "assumed: 1 GHz cores, 32 float32 FLOP/cycle, 1 MiB each",
        mesh_shape=((16, 16), "assumed: a mid-size mesh of 256 cores"),
        flops_per_s=({"float32": 32e9, "float16": 64e9, "bfloat16": 64e9, "int8": 128e9},
                     "assumed: 1 GHz, 16 float32 FMA lanes (32 FLOP/cycle), 2x for 16-bit, "
                     "4x for int8"),
        mem_bandwidth=(16e9, "assumed: 16 B/cycle from global memory per core"),
        link_bandwidth=(32e9, "assumed: 32 B/cycle per directed link (as "
                        "DEFAULT_LINK_BANDWIDTH of the traffic analysis)"),
        hop_latency=(1e-9, "assumed: 1 cycle per hop (as DEFAULT_HOP_LATENCY)"),
        message_overhead=(1e-7, "assumed: 100 cycles to issue one message"),
        local_memory_bytes=(1 << 20, "assumed: 1 MiB"),
    ),
    _preset(
        "epiphany-e16g301", "Adapteva Epiphany-III (E16G301), 16 cores at 1 GHz",
        mesh_shape=((4, 4), "derived: 16 cores [E16], the farthest 6 hops apart [FAB]"),
        flops_per_s=({"float32": 2e9}, "derived: 32 GFLOPS peak / 16 cores [E16]; "
                     "single precision only [EARM]"),
        mem_bandwidth=(0.5e9, "derived: 8 GB/s off-chip / 16 cores [E16]"),
        link_bandwidth=(8e9, "derived: 8 B/cycle per direction [EARM] x 1 GHz [E16]"),
        hop_latency=(1.5e-9, "published: 1.5 ns per hop [E16]"),
        message_overhead=(1e-8, "assumed: about 10 cycles per remote store sequence"),
        local_memory_bytes=(32768, "published: 32 KiB per core [E16, EARM]"),
    ),
    _preset(
        "epiphany-e64g401", "Adapteva Epiphany-IV (E64G401), 64 cores at 800 MHz",
        mesh_shape=((8, 8), "derived: 64 cores [E64]; edge to edge in 12 cycles at "
                    "1.5 per hop [EARM]"),
        flops_per_s=({"float32": 1.6e9}, "published: 1.6 GFLOPS per core [E64]"),
        mem_bandwidth=(0.1e9, "derived: 6.4 GB/s off-chip / 64 cores [E64]"),
        link_bandwidth=(6.4e9, "derived: 8 B/cycle [EARM] x 800 MHz [E64]"),
        hop_latency=(1.875e-9, "derived: 1.5 cycles [EARM] at 800 MHz [E64]"),
        message_overhead=(1.25e-8, "assumed: about 10 cycles per remote store sequence"),
        local_memory_bytes=(32768, "derived: 2 MB / 64 cores [E64]"),
    ),
    _preset(
        "wormhole-n300", "Tenstorrent Wormhole (one n300 ASIC), Tensix cores at 1 GHz",
        mesh_shape=((8, 8), "derived: 8 columns of Tensix cores; 8 of the 10 rows "
                    "enabled on an n300 ASIC (64 cores) [WH-ISA, WH-SPEC]"),
        flops_per_s=({"bfloat16": 2.048e12, "float16": 1.024e12, "float32": 6.4e10,
                      "int8": 1.024e12, "float8_e4m3fn": 4.096e12, "float8_e5m2": 4.096e12},
                     "published: matrix unit per Tensix, 2 fidelity phases for bfloat16, 4 "
                     "for float16 and int8, 1 for float8; float32 on the vector unit [WH-ISA]"),
        mem_bandwidth=(4.5e9, "derived: 288 GB/s GDDR6 per ASIC [WH-ISA, WH-SPEC] / 64 "
                       "cores"),
        link_bandwidth=(32e9, "published: 32 GB/s per NoC hop [WH-ISA]"),
        hop_latency=(9e-9, "published: 9 cycles router to router at 1 GHz [WH-ISA]"),
        message_overhead=(2.94e-7, "derived: 294 cycles fixed cost of a write + barrier, "
                          "a least-squares fit to Tenstorrent's measured one-to-one "
                          "times [TTM]"),
        local_memory_bytes=(1499136, "published: 1464 KiB L1 per Tensix [WH-ISA]"),
    ),
)})


def machine_names() -> list[str]:
    """The preset names.

    >>> machine_names()
    ['epiphany-e16g301', 'epiphany-e64g401', 'generic', 'wormhole-n300']
    """
    return sorted(PRESETS)


def load_machine(path: str | pathlib.Path) -> Machine:
    """A machine from a ``.json`` or ``.toml`` file (its name defaults to the file's
    stem); ``ValueError`` naming the file and what is missing or wrong."""
    p = pathlib.Path(path)
    where = f"machine file {str(p)!r}"
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"{where}: cannot read it ({e.strerror or e})") from None
    suffix = p.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not valid JSON ({e})") from None
    elif suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise ValueError(f"{where}: TOML machine files need Python 3.11 (tomllib); "
                             f"write it as JSON") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{where}: not valid TOML ({e})") from None
    else:
        raise ValueError(f"{where}: expected a .json or .toml file")
    if isinstance(data, dict) and "name" not in data:
        data = {**data, "name": p.stem}
    return Machine.from_dict(data, where)


def get_machine(spec: str | pathlib.Path | Machine) -> Machine:
    """A :class:`Machine` from a preset name, a machine file's path, or a machine.

    >>> get_machine("wormhole-n300").mesh_shape
    (8, 8)
    >>> get_machine("tpu")
    Traceback (most recent call last):
    ...
    ValueError: unknown machine 'tpu'; known machines: epiphany-e16g301, epiphany-e64g401, generic, wormhole-n300 (or a .json/.toml machine file)
    """
    if isinstance(spec, Machine):
        return spec
    text = str(spec)
    if text in PRESETS:
        return PRESETS[text]
    if pathlib.Path(text).suffix.lower() in (".json", ".toml"):
        return load_machine(text)
    raise ValueError(f"unknown machine {text!r}; known machines: "
                     f"{', '.join(machine_names())} (or a .json/.toml machine file)")
