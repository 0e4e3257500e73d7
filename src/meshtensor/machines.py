"""Machine descriptions for the performance model: plain data, validated.

A :class:`Machine` says how fast one core computes (FLOP/s per element type), how fast
it moves bytes between global memory and itself (its own port, and the chip's total
that the cores moving bytes at once share), how fast its mesh links are, what a hop, a
message and a barrier cost, whether it multicasts and whether its axes wrap around,
how much of an exchange its data-movement engines hide behind compute, and how much
local memory it has (in all, and per memory scope). The performance model of
``meshtensor.tilelang`` (``estimate_mesh_kernel``) divides a kernel's counts by these
numbers. Presets (:data:`PRESETS`): ``generic`` (every number an assumption) and
published mesh chips; docs/perf.md gives each preset number's source and whether it is
a published figure, derived from published figures, measured, or assumed.

A machine file (JSON, or TOML on Python 3.11+) holds the same fields; those of
:data:`FIELDS` are required, those of :data:`OPTIONAL_FIELDS` have defaults::

    {"name": "mychip", "mesh_shape": [4, 4], "flops_per_s": {"float32": 2e9},
     "mem_bandwidth": 8e9, "link_bandwidth": 8e9, "hop_latency": 1.5e-9,
     "message_overhead": 1e-8, "local_memory_bytes": 32768,
     "barrier_latency": 1.5e-8, "overlap": 1.0}

Units: FLOP/s per core, bytes/s (memory bandwidth per core and for the chip; link
bandwidth per *directed* link), seconds, bytes. ``meshtensor calibrate`` writes such a
file from measured runs.

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

__all__ = ["Machine", "PRESETS", "FIELDS", "OPTIONAL_FIELDS", "CHIP_LINK_DEFAULTS",
           "get_machine", "load_machine", "machine_names"]

#: The required numeric fields of a machine and what each must be (the first word is the
#: check).
FIELDS = {
    "mesh_shape": "positive ints: the largest mesh of cores (one size per axis)",
    "flops_per_s": "positive numbers: FLOP/s of one core per element type",
    "mem_bandwidth": "positive: bytes/s between global memory and one core (its port)",
    "link_bandwidth": "positive: bytes/s of one directed link between neighbours",
    "hop_latency": "non-negative: seconds per router hop",
    "message_overhead": "non-negative: seconds a core spends issuing one message",
    "local_memory_bytes": "positive int: bytes of one core's local memory, in all",
}
#: The optional fields, what each must be, and what leaving it out means.
OPTIONAL_FIELDS = {
    "mem_bandwidth_total": "positive or absent: bytes/s of global memory for the whole "
                           "chip, shared by the cores moving bytes at once (absent: "
                           "each core gets mem_bandwidth)",
    "injection_bandwidth": "positive or absent: bytes/s one core puts on the network "
                           "(absent: link_bandwidth)",
    "barrier_latency": "non-negative: seconds to know an exchange (or one dependent "
                       "round of it) is complete (default 0)",
    "multicast_bandwidth": "positive or absent: bytes/s of one multicast write to a "
                           "row, column or rectangle of cores (absent: no multicast)",
    "multicast_overhead": "non-negative: seconds a core spends issuing one multicast "
                          "(default 0)",
    "torus": "booleans, one per axis: the axis has wraparound links (default none)",
    "overlap": "number in [0, 1]: the share of the time an exchange could run beside "
               "compute that the machine hides (0: none, the default; 1: all)",
    "memories": "positive ints by scope: bytes of the memory a buffer scope names "
                "(e.g. shared.rsram); each is checked besides the total",
    "chip_link_bandwidth": "positive: bytes/s of one chip-to-chip link, core (r, c) of "
                           "one chip to core (r, c) of another (T.dist kernels; default "
                           "25e9, assumed)",
    "chip_link_latency": "non-negative: seconds per chip-to-chip message (default 1e-6, "
                         "assumed)",
}
#: Chip-to-chip links (T.dist kernels: core (r, c) of one chip to core (r, c) of
#: another), optional in a machine file: bandwidth per directed link and a fixed cost
#: per message; the defaults are assumptions.
CHIP_LINK_DEFAULTS = {"chip_link_bandwidth": 25e9, "chip_link_latency": 1e-6}
_OPTIONAL = ("name", "description", "sources")
_DEFAULTS = {"mem_bandwidth_total": None, "injection_bandwidth": None, "barrier_latency": 0.0,
             "multicast_bandwidth": None, "multicast_overhead": 0.0, "torus": (),
             "overlap": 0.0, "memories": {}, **CHIP_LINK_DEFAULTS}


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
    """A mesh chip as the performance model sees it (see the module docstring and
    :data:`FIELDS`, :data:`OPTIONAL_FIELDS`).

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
    >>> m.injection, m.multicast, m.wraps((2, 2))
    (2000000000.0, False, (False, False))
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
    mem_bandwidth_total: float | None = None
    injection_bandwidth: float | None = None
    barrier_latency: float = 0.0
    multicast_bandwidth: float | None = None
    multicast_overhead: float = 0.0
    torus: tuple[bool, ...] = ()
    overlap: float = 0.0
    memories: Mapping[str, int] = field(default_factory=dict)
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
        for key in ("hop_latency", "message_overhead", "barrier_latency",
                    "multicast_overhead", "chip_link_latency"):
            set_(self, key, _number(where, key, getattr(self, key), False))
        set_(self, "chip_link_bandwidth",
             _number(where, "chip_link_bandwidth", self.chip_link_bandwidth, True))
        for key in ("mem_bandwidth_total", "injection_bandwidth", "multicast_bandwidth"):
            if getattr(self, key) is not None:
                set_(self, key, _number(where, key, getattr(self, key), True))
        ov = _number(where, "overlap", self.overlap, False)
        if ov > 1:
            raise ValueError(f"{where}: overlap must be in [0, 1], got {ov!r}")
        set_(self, "overlap", ov)
        torus = self.torus
        if isinstance(torus, (str, bytes)) or not hasattr(torus, "__len__") or \
                any(not isinstance(t, bool) for t in torus) or \
                (len(torus) and len(torus) != len(self.mesh_shape)):
            raise ValueError(f"{where}: torus must list one boolean per mesh axis "
                             f"({len(self.mesh_shape)}), got {torus!r}")
        set_(self, "torus", tuple(torus))
        mems = self.memories
        if not isinstance(mems, Mapping) or any(
                not isinstance(k, str) or not _is_int(v) or v < 1 for k, v in mems.items()):
            raise ValueError(f"{where}: memories must map buffer scopes to positive ints "
                             f"(bytes), got {mems!r}")
        set_(self, "memories", MappingProxyType({k: int(v) for k, v in sorted(mems.items())}))
        src = self.sources
        if not isinstance(src, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in src.items()):
            raise ValueError(f"{where}: sources must map field names to where their "
                             f"numbers come from (strings), got {src!r}")
        set_(self, "sources", MappingProxyType(dict(src)))

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:  # computed once: the collective costs are cached by machine
            h = self._key()
            object.__setattr__(self, "_hash", h)
        return h

    def _key(self) -> int:
        return hash((self.name, self.mesh_shape, tuple(self.flops_per_s.items()),
                     self.mem_bandwidth, self.link_bandwidth, self.hop_latency,
                     self.message_overhead, self.local_memory_bytes,
                     self.mem_bandwidth_total, self.injection_bandwidth,
                     self.barrier_latency, self.multicast_bandwidth,
                     self.multicast_overhead, self.torus, self.overlap,
                     tuple(self.memories.items())))

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

    @property
    def injection(self) -> float:
        """Bytes/s one core puts on the network (``link_bandwidth`` unless given)."""
        return self.link_bandwidth if self.injection_bandwidth is None \
            else self.injection_bandwidth

    @property
    def multicast(self) -> bool:
        """Whether the machine writes one message to many cores (a row, a column, a
        rectangle) at once."""
        return self.multicast_bandwidth is not None

    def core_mem_bandwidth(self, cores: int) -> float:
        """Bytes/s of global memory one core gets while ``cores`` cores move bytes at
        once: its port, or its share of the chip's total, whichever is less.

        >>> get_machine("wormhole-n300").core_mem_bandwidth(64) / 1e9
        4.5
        """
        if self.mem_bandwidth_total is None or cores < 1:
            return self.mem_bandwidth
        return min(self.mem_bandwidth, self.mem_bandwidth_total / cores)

    def wraps(self, mesh_shape: tuple[int, ...]) -> tuple[bool, ...]:
        """Per axis of a kernel's mesh: whether its routes may use wraparound links. An
        axis wraps only where the machine's does and the kernel spans all of it (a
        4-core row on an 8-core ring has no link from its last core to its first).

        >>> get_machine("wormhole-n300").wraps((8, 8)), get_machine("wormhole-n300").wraps((4, 8))
        ((True, True), (False, True))
        """
        torus = self.torus or (False,) * len(self.mesh_shape)
        return tuple(a < len(torus) and torus[a] and s == self.mesh_shape[a]
                     for a, s in enumerate(mesh_shape))

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
        """The machine as a machine file's fields (JSON-ready; an optional field left at
        its default is left out)."""
        out = {"name": self.name, "mesh_shape": list(self.mesh_shape),
               "flops_per_s": dict(self.flops_per_s), "mem_bandwidth": self.mem_bandwidth,
               "link_bandwidth": self.link_bandwidth, "hop_latency": self.hop_latency,
               "message_overhead": self.message_overhead,
               "local_memory_bytes": self.local_memory_bytes}
        for key, default in _DEFAULTS.items():
            v = getattr(self, key)
            if key == "torus":
                v = list(v)
            elif key == "memories":
                v = dict(v)
            if v != default and not (key == "torus" and not v):
                out[key] = v
        out.update(description=self.description, sources=dict(self.sources))
        return out

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
        known = list(FIELDS) + list(OPTIONAL_FIELDS) + list(_OPTIONAL)
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; a machine has "
                             f"{', '.join(known)}")
        missing = [k for k in FIELDS if k not in data]
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)} (a machine needs "
                             f"{', '.join(FIELDS)})")
        shape = data["mesh_shape"]
        opt = {k: data[k] for k in OPTIONAL_FIELDS if k in data}
        if isinstance(opt.get("torus"), list):
            opt["torus"] = tuple(opt["torus"])
        return Machine(name=str(data.get("name", "machine")),
                       mesh_shape=tuple(shape) if isinstance(shape, list) else shape,
                       flops_per_s=data["flops_per_s"],
                       mem_bandwidth=data["mem_bandwidth"],
                       link_bandwidth=data["link_bandwidth"],
                       hop_latency=data["hop_latency"],
                       message_overhead=data["message_overhead"],
                       local_memory_bytes=data["local_memory_bytes"],
                       description=str(data.get("description", "")),
                       sources=data.get("sources", {}), **opt)


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
        message_overhead=(1e-8, "assumed: 10 cycles to issue one message"),
        barrier_latency=(1e-7, "assumed: 100 cycles for the acknowledgements and a flag"),
        overlap=(1.0, "assumed: a DMA engine per core moves data beside compute"),
        local_memory_bytes=(1 << 20, "assumed: 1 MiB"),
    ),
    _preset(
        "epiphany-e16g301", "Adapteva Epiphany-III (E16G301), 16 cores at 1 GHz",
        mesh_shape=((4, 4), "derived: 16 cores [E16], the farthest 6 hops apart [FAB]"),
        flops_per_s=({"float32": 2e9}, "derived: 32 GFLOPS peak / 16 cores [E16]; "
                     "single precision only [EARM]"),
        mem_bandwidth=(8e9, "derived: one mesh link, 8 B/cycle [EARM] at 1 GHz"),
        mem_bandwidth_total=(8e9, "published: 8 GB/s off-chip [E16]"),
        link_bandwidth=(8e9, "derived: 8 B/cycle per direction [EARM] x 1 GHz [E16]"),
        hop_latency=(1.5e-9, "published: 1.5 ns per hop [E16]"),
        message_overhead=(1e-8, "assumed: about 10 cycles per remote store sequence"),
        barrier_latency=(1.45e-8, "derived: a flag's round trip, 11.5 + 1.5 x 2 cycles "
                         "measured at 1 hop [FAB]"),
        overlap=(1.0, "published: two DMA channels per core run beside the CPU [EARM]"),
        torus=((False, False), "published: a 2-D mesh without wraparound [EARM]"),
        local_memory_bytes=(32768, "published: 32 KiB per core [E16, EARM]"),
    ),
    _preset(
        "epiphany-e64g401", "Adapteva Epiphany-IV (E64G401), 64 cores at 800 MHz",
        mesh_shape=((8, 8), "derived: 64 cores [E64]; edge to edge in 12 cycles at "
                    "1.5 per hop [EARM]"),
        flops_per_s=({"float32": 1.6e9}, "published: 1.6 GFLOPS per core [E64]"),
        mem_bandwidth=(6.4e9, "derived: one mesh link, 8 B/cycle [EARM] at 800 MHz"),
        mem_bandwidth_total=(6.4e9, "published: 6.4 GB/s off-chip [E64]"),
        link_bandwidth=(6.4e9, "derived: 8 B/cycle [EARM] x 800 MHz [E64]"),
        hop_latency=(1.875e-9, "derived: 1.5 cycles [EARM] at 800 MHz [E64]"),
        message_overhead=(1.25e-8, "assumed: about 10 cycles per remote store sequence"),
        barrier_latency=(1.8125e-8, "derived: the E16G301's 14.5-cycle flag round trip "
                         "[FAB] at 800 MHz"),
        overlap=(1.0, "published: two DMA channels per core run beside the CPU [EARM]"),
        torus=((False, False), "published: a 2-D mesh without wraparound [EARM]"),
        local_memory_bytes=(32768, "derived: 2 MB / 64 cores [E64]"),
    ),
    _preset(
        "wormhole-n300", "Tenstorrent Wormhole (one n300 ASIC), Tensix cores at 1 GHz",
        mesh_shape=((8, 8), "derived: 8 columns of Tensix cores; 8 of the 10 rows "
                    "enabled on an n300 ASIC (64 cores) [WH-ISA, WH-SPEC]"),
        flops_per_s=({"bfloat16": 2.048e12, "float16": 1.024e12, "float32": 1.024e12,
                      "int8": 1.024e12, "float8_e4m3fn": 4.096e12, "float8_e5m2": 4.096e12},
                     "published: matrix unit per Tensix, 2 fidelity phases for bfloat16, 4 "
                     "for float16, int8 and float32 (read as TF32), 1 for float8 [WH-ISA]"),
        mem_bandwidth=(22e9, "measured: 22 B/cycle one core reading DRAM [TTM-IDEAL]"),
        mem_bandwidth_total=(288e9, "published: 288 GB/s GDDR6 per ASIC [WH-ISA, WH-SPEC]"),
        link_bandwidth=(32e9, "published: 32 GB/s per NoC hop [WH-ISA]"),
        hop_latency=(9e-9, "published: 9 cycles router to router at 1 GHz [WH-ISA]"),
        message_overhead=(2.2e-8, "derived: 22 cycles per extra write before one barrier, "
                          "a fit to the measured one-to-one times [TTM]"),
        barrier_latency=(2.68e-7, "derived: 268 cycles fixed per write barrier, the same "
                         "fit [TTM]"),
        multicast_bandwidth=(17.8e9, "derived: 17.8 B/cycle, a fit to the measured 5x5 "
                             "multicast times [TTM-MC]"),
        multicast_overhead=(1.9e-7, "derived: 190 cycles per multicast write, the same "
                            "fit [TTM-MC]"),
        torus=((True, True), "published: the NoCs are 2-D tori [WH-ISA]"),
        overlap=(1.0, "published: two data-movement RISC-V cores beside the three that "
                 "drive the matrix unit [WH-ISA]"),
        local_memory_bytes=(1499136, "published: 1464 KiB L1 per Tensix [WH-ISA]"),
    ),
    _preset(
        "sunmmio-a4e", "SUNMMIO A4E as its TileLang target describes it: a 4x4 mesh, "
        "three SRAMs per core; timings assumed",
        mesh_shape=((4, 4), "published: target mattr device_mesh_nrow_4, "
                    "device_mesh_ncol_4 [SUN-T]"),
        flops_per_s=({"bfloat16": 2e12, "float16": 2e12, "float32": 5e11, "int8": 4e12},
                     "assumed: not in the target; a matrix unit of 1024 bf16 FMA per "
                     "cycle at 1 GHz"),
        mem_bandwidth=(32e9, "assumed: 32 B/cycle per core from global memory"),
        mem_bandwidth_total=(256e9, "assumed: 256 GB/s for the chip"),
        link_bandwidth=(64e9, "assumed: 64 B/cycle per directed link"),
        hop_latency=(1e-9, "assumed: 1 cycle per hop"),
        message_overhead=(2e-8, "assumed: 20 cycles per message"),
        barrier_latency=(2e-7, "assumed: 200 cycles per synchronisation"),
        overlap=(1.0, "derived: the target copies with DMA (T.dma_load, T.dma_store) "
                 "[SUN-T]; the share hidden is assumed"),
        local_memory_bytes=(4681728, "derived: the three SRAMs together [SUN-P]"),
        memories=({"shared.asram": 1048576, "shared.wsram": 2097152,
                   "shared.rsram": 1536000},
                  "published: ASRAM 1 MiB (T.gemm's A), WSRAM 2 MiB (B), RSRAM 1536000 B "
                  "(C and comm staging) per core [SUN-P, SUN-S]"),
    ),
)})


def machine_names() -> list[str]:
    """The preset names.

    >>> machine_names()
    ['epiphany-e16g301', 'epiphany-e64g401', 'generic', 'sunmmio-a4e', 'wormhole-n300']
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
    ValueError: unknown machine 'tpu'; known machines: epiphany-e16g301, epiphany-e64g401, generic, sunmmio-a4e, wormhole-n300 (or a .json/.toml machine file)
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
