"""Chip-to-chip traffic and time of a ``T.dist`` kernel.

:func:`analyze_dist_communication` runs the compiled kernel (in process, on the given
global tensors, or zeros) and counts every transfer the chips make: the bytes and
messages on each directed chip-to-chip link (core ``(r, c)`` of one rank to core
``(r, c)`` of another: the topology of SUNMMIO's rank layer), and the on-chip legs (a
put to another row first travels on the source chip to the egress core ``(dst_row,
c)``, as the upstream routes it; an on-chip put to one's own rank; bytes, and hops on
the XY route). A bare signal (``put_signal``, a barrier's arrivals) is a message of 0
bytes. The counts are exact for those inputs (a kernel whose sends depend on data
sends what those inputs make it send).

:meth:`DistTraffic.time` is an alpha-beta estimate: each directed chip-to-chip link is
busy ``bytes / chip_link_bandwidth + messages * chip_link_latency`` (the
:class:`~meshtensor.Machine`'s chip link; defaults are assumptions), links work in
parallel, and the chips' time is the busiest link's; the on-chip legs add each source
core's ``bytes / link_bandwidth + hops * hop_latency + message_overhead``, the busiest
core's. Computation is not counted (``meshtensor profile`` adds the per-rank kernel's
own estimate).

>>> DistTraffic(2, (1, 1), {(0, 1, 0): (16, 1), (1, 0, 0): (16, 1)}, {}).chip_bytes
32
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["DistTraffic", "analyze_dist_communication"]


@dataclass(frozen=True)
class DistTraffic:
    """What a ``T.dist`` kernel's chips moved: ``chip[(src rank, dst rank, core)] =
    (bytes, messages)`` on each directed chip-to-chip link between corresponding cores
    (``core`` a linear id), and ``onchip[(rank, src core, dst core)] = (bytes,
    transfers)`` on the chips' meshes (read-only)."""

    world: int
    mesh_shape: tuple[int, int]
    chip: Mapping = field(default_factory=dict)
    onchip: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("chip", "onchip"):
            object.__setattr__(self, name, MappingProxyType(
                {k: (int(v[0]), int(v[1])) for k, v in getattr(self, name).items()}))

    @property
    def chip_bytes(self) -> int:
        return int(sum(b for b, _ in self.chip.values()))

    @property
    def chip_messages(self) -> int:
        return int(sum(m for _, m in self.chip.values()))

    @property
    def onchip_bytes(self) -> int:
        return int(sum(b for b, _ in self.onchip.values()))

    def hops(self, a: int, b: int) -> int:
        ncols = self.mesh_shape[1]
        (ra, ca), (rb, cb) = divmod(a, ncols), divmod(b, ncols)
        return abs(ra - rb) + abs(ca - cb)

    @property
    def onchip_byte_hops(self) -> int:
        return int(sum(b * self.hops(s, d) for (_, s, d), (b, _) in self.onchip.items()))

    def rank_bytes(self) -> list[tuple[int, int]]:
        """Per rank: bytes sent to and received from other chips."""
        out = [[0, 0] for _ in range(self.world)]
        for (s, d, _), (b, _) in self.chip.items():
            out[s][0] += b
            out[d][1] += b
        return [tuple(x) for x in out]  # type: ignore[misc]

    def table(self) -> str:
        """The chip-to-chip links, one line each (busiest first), and the totals."""
        ncols = self.mesh_shape[1]
        rows = sorted(self.chip.items(), key=lambda kv: (-kv[1][0], kv[0]))
        lines = [f"{'link':26s} {'bytes':>12s} {'messages':>9s}"]
        for (s, d, c), (b, m) in rows:
            lines.append(f"{f'rank {s} -> {d} core {divmod(c, ncols)}':26s} {b:>12d} {m:>9d}")
        lines.append(f"{'chip-to-chip total':26s} {self.chip_bytes:>12d} "
                     f"{self.chip_messages:>9d}")
        lines.append(f"{'on-chip legs':26s} {self.onchip_bytes:>12d} "
                     f"{sum(t for _, t in self.onchip.values()):>9d}  "
                     f"({self.onchip_byte_hops} byte-hops)")
        return "\n".join(lines)

    def time(self, machine: Any = "generic") -> dict:
        """The alpha-beta estimate (see the module docstring), in seconds:
        ``{"chip": busiest link, "onchip": busiest core's legs, "total": their sum,
        "links": {link: seconds}}``."""
        from ...machines import get_machine
        m = get_machine(machine)
        links = {k: b / m.chip_link_bandwidth + n * m.chip_link_latency
                 for k, (b, n) in self.chip.items()}
        legs: dict = {}
        for (r, s, d), (b, n) in self.onchip.items():
            legs[(r, s)] = legs.get((r, s), 0.0) + b / m.link_bandwidth + \
                n * (self.hops(s, d) * m.hop_latency + m.message_overhead)
        chip = max(links.values(), default=0.0)
        onchip = max(legs.values(), default=0.0)
        return {"chip": chip, "onchip": onchip, "total": chip + onchip, "links": links}


def _zeros(kernel: Any) -> tuple:
    """Zero global tensors for every parameter but the rank id."""
    import torch
    from .dist_rank import np_dtype
    out = []
    for k in kernel._kinds():
        if k[0] == "rank":
            continue
        if k[0] == "scalar":
            raise ValueError(f"analyze_dist_communication: the kernel has a scalar parameter "
                             f"({kernel.prim_func.params[k[1]].name!r}): pass its arguments")
        if k[0] == "mesh":
            shape, dtype = k[2].global_shape, k[2].dtype
        else:
            buf = kernel.prim_func.buffer_map[kernel.prim_func.params[k[1]]]
            shape, dtype = tuple(int(n) for n in buf.shape), str(buf.dtype)
        dt = np_dtype(dtype)
        out.append(torch.zeros(shape, dtype=getattr(torch, dt.name, torch.float32)))
    return tuple(out)


def analyze_dist_communication(kernel: Any, *args: Any) -> DistTraffic:
    """Run a compiled ``T.dist`` kernel (``compile_mesh_kernel``'s ``DistKernel``) on
    ``args`` (its GLOBAL tensors, or zeros when none are given; not written) and count
    what its chips moved (see the module docstring)."""
    args = args or _zeros(kernel)
    per_rank = kernel._split(tuple(a.clone() if hasattr(a, "clone") else a for a in args))
    kernel_args = []
    for r, a in enumerate(per_rank):
        ka = kernel._to_cores(list(a))
        ka[kernel.program.rank_param] = r
        kernel_args.append(ka)
    job = kernel.run_job(kernel_args, "early", record=True)
    chip: dict = {}
    onchip: dict = {}
    for kind, a, b, c, nbytes, _ in job.log:
        got = (chip if kind == "chip" else onchip).setdefault((a, b, c), [0, 0])
        got[0] += int(nbytes)
        got[1] += 1
    return DistTraffic(kernel.world, kernel.mesh_shape, chip, onchip)
