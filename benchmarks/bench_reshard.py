"""Reshard plans: bytes vs the lower bound and vs PyTorch DTensor, busiest links,
planner latency against DTensor's planner, and planning cost from 16 to 16384 devices.

    python benchmarks/bench_reshard.py [--quick] [--parts 123] [--rounds 50]

Part 1, for each case (2-D and 3-D meshes, even and uneven, seed 001's TODO cases):
our ``bytes_moved / lower_bound`` and ``max_link_bytes`` (busiest link under XY
routing); DTensor's bytes for the same ``redistribute`` (its own plan from
``_gen_transform_infos``, costed with our model: direct collectives, all_gather /
reduce_scatter padded to equal chunks as DTensor sends them) and the collectives it
really issues (``CommDebugMode`` under ``LocalTensorMode`` on CPU, one fake process
group).

Part 2, 4x4 mesh, rank-3 tensor: cold planning (our plan cache cleared before every
call; "all cold" also clears the per-sharding region caches and interned layouts)
against DTensor's uncached ``_gen_transform_infos_non_cached``, and cached lookups
(``plan_reshard`` hit) against DTensor's cached ``_gen_transform_infos``. Planning is the
decision both sides make: our steps (ops, axes, layouts, bytes) and lower bound against
DTensor's transform infos; neither builds per-device data (our flows and transfer rows
are built when a step's flows are first read: the "+flows" column). Each round times
every column as a ``timeit`` loop of ``BATCH`` calls (set-up included: clearing our
plan cache costs about 0.2 us, all our caches about 0.4 us), one column after the
other; the table gives medians over rounds, the garbage collector off while timing
(as ``timeit`` does). These are steady-state times with warm CPU caches, for both
planners. Timed one call at a time, the first call after the other planner's code
ran paid a few microseconds of cache refills on both sides (ours 2-6 us, DTensor's
2-4 us), which weighs most on the fastest calls: the swap measured 11.5x and the
split 4.6x that way.

Part 3: cold planning time including the steps (every cache cleared, best of 5: the
machine may be shared) and peak traced memory
(tracemalloc, a separate run) against device count, 2-D and 3-D meshes, for a tensor
a user plans at that scale (``POD_SHAPE``: activations of batch 256, sequence 32768,
hidden 8192, 1 TiB in float32), for an axis swap, a gather to replicated, moving an axis between dims, a split
of a replicated tensor and a halo change; then the fitted growth exponent of time vs
devices (least squares on log-log, 256 to 16384 devices; goal <= 1.2) and the goals
(< 50 ms at 4096 devices; < 500 ms and < 1 GB at 16384).

``--quick`` runs every part small (part 1 and 2 on small tensors, part 2 two rounds, part 3 up to
256 devices, once); a test
runs it, so a broken benchmark fails the suite. Its numbers are not measurements.
"""
import gc
import os
import sys
import time
from statistics import median

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import meshtensor as mt  # noqa: E402
from meshtensor import boxes, sharding  # noqa: E402
from meshtensor.resharding import even, execute  # noqa: E402

# (name, mesh shape, global shape, src split_axes, tgt split_axes, src partial axes,
#  DTensor src placements, DTensor tgt placements) ; "S0" = Shard(0), "R", "P".
CASES = [
    ("swap S(x)S(y)->S(y)S(x)", (4, 4), (1024, 1024), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("move S(x)->RS(x)", (4, 4), (1024, 1024), [[0]], [[], [0]], None, "S0 R", "S1 R"),
    ("gather S(x)S(y)->R", (4, 4), (1024, 1024), [[0], [1]], [], None, "S0 S1", "R R"),
    ("split R->S(x,y)", (4, 4), (1024, 1024), [], [[0, 1]], None, "R R", "S0 S0"),
    ("S(x,y)->S(x)S(y)", (4, 4), (1024, 1024), [[0, 1]], [[0], [1]], None, "S0 S0", "S0 S1"),
    ("uneven swap 1000x999", (4, 4), (1000, 999), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed 2x3 swap 6x6", (2, 3), (6, 6), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed 2x6 swap 6x6", (2, 6), (6, 6), [[0], [1]], [[1], [0]], None, "S0 S1", "S1 S0"),
    ("seed [[0],[1,2]]->[[0],[2]]", (2, 2, 2), (64, 128), [[0], [1, 2]], [[0], [2]], None,
     "S0 S1 S1", "S0 R S1"),
    ("seed [[0],[1,2]]->[[0,1],[2]]", (2, 2, 2), (64, 64), [[0], [1, 2]], [[0, 1], [2]], None,
     "S0 S1 S1", "S0 S0 S1"),
    ("3-D S(x)S(y)S(z)->S(z)S(y)S(x)", (2, 2, 2), (64, 64, 64), [[0], [1], [2]], [[2], [1], [0]],
     None, "S0 S1 S2", "S2 S1 S0"),
    ("partial P(x)->S(x)", (4, 4), (1024, 1024), [], [[0]], [0], "P R", "S0 R"),
    ("partial P(x)->R", (4, 4), (1024, 1024), [], [], [0], "P R", "R R"),
]


def ours(mesh_shape, shape, src, tgt, partial):
    m = mt.Mesh(mesh_shape)
    s = mt.Sharding(m, src, partial={a: "sum" for a in partial} if partial else None)
    t = mt.Sharding(m, tgt)
    plan = mt.plan_reshard(s, t, shape, 4)
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        mt.plan_reshard(s, t, shape, 4)
        times.append(time.perf_counter() - t0)
    return plan, median(times)


def _placements(text):
    from torch.distributed.tensor import Partial, Replicate, Shard
    return [Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[1:]))
            for p in text.split()]


def dtensor(mesh_shape, shape, src, tgt):
    """DTensor's plan, its bytes under our cost model, its collectives, planner latency."""
    import torch
    from torch.distributed._local_tensor import LocalTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor
    from torch.distributed.tensor import _redistribute as R
    from torch.distributed.tensor.debug import CommDebugMode
    n = int(np.prod(mesh_shape))
    with LocalTensorMode(n):
        mesh = init_device_mesh("cpu", mesh_shape)
        x = torch.zeros(shape)
        d = distribute_tensor(x, mesh, _placements(src))
        with CommDebugMode() as comm:
            y = d.redistribute(mesh, _placements(tgt))
        infos = R._gen_transform_infos_non_cached(d._spec, y._spec)
        times = []
        for _ in range(30):
            t0 = time.perf_counter()
            R._gen_transform_infos_non_cached(d._spec, y._spec)
            times.append(time.perf_counter() - t0)
    return dtensor_bytes(infos, mesh_shape), comm.get_total_counts(), median(times)


def dtensor_bytes(infos, mesh_shape, itemsize=4):
    """Bytes DTensor's plan (its ``_TransformInfo`` list) moves under our cost model."""
    n = int(np.prod(mesh_shape))
    total = 0
    for info in infos:
        k = mesh_shape[info.mesh_dim]
        a, b = info.src_dst_placements
        L = list(info.logical_shape)
        vol = int(np.prod(L))
        if a.is_shard() and b.is_replicate():  # all_gather of padded chunks
            chunk = -(-L[a.dim] // k) * vol // max(L[a.dim], 1)
            total += n * (k - 1) * chunk
        elif a.is_shard() and b.is_shard():  # all_to_all: k-1 of k pieces
            piece = -(-L[a.dim] // k) * -(-L[b.dim] // k) * vol // max(L[a.dim] * L[b.dim], 1)
            total += n * (k - 1) * piece
        elif a.is_partial() and b.is_replicate():
            total += n * 2 * (vol - vol // k)
        elif a.is_partial() and b.is_shard():
            total += n * (k - 1) * (-(-L[b.dim] // k) * vol // max(L[b.dim], 1))
    return total * itemsize


def _clear_caches(all_of_them: bool = True) -> None:
    mt.plan_reshard.cache_clear()
    if all_of_them:
        sharding._regions.cache_clear()
        sharding._windows.cache_clear()
        boxes.held_boxes.cache_clear()
        execute._own_boxes.cache_clear()
        even.layout.cache_clear()
        even.dim_starts.cache_clear()


def part1(quick: bool = False) -> None:
    print(f"{'case':34s} {'mesh':6s} {'ours/LB':>8s} {'ours B':>10s} {'max link B':>10s} "
          f"{'DTensor B':>10s} {'DT/ours':>8s} {'DT colls':>8s}")
    worst = 1.0
    for name, mesh_shape, shape, src, tgt, partial, dsrc, dtgt in CASES:
        if quick:  # DTensor runs every rank's copy: small sizes, still uneven where they were
            shape = tuple(d if d <= 128 else 64 + d % 64 for d in shape)
        plan, _ = ours(mesh_shape, shape, src, tgt, partial)
        lb = plan.lower_bound_bytes
        ratio = plan.bytes_moved / lb if lb else 1.0
        if not partial:
            worst = max(worst, ratio)
        try:
            d_bytes, d_colls, _ = dtensor(mesh_shape, shape, dsrc, dtgt)
            dt = f"{d_bytes:10d} {d_bytes / max(plan.bytes_moved, 1):8.2f} {d_colls:8d}"
        except Exception as e:  # a DTensor that cannot express the pair says so
            dt = f"{'n/a: ' + type(e).__name__:>28s}"
        print(f"{name:34s} {'x'.join(map(str, mesh_shape)):6s} {ratio:8.2f} "
              f"{plan.bytes_moved:10d} {plan.max_link_bytes:10d} {dt}")
    print(f"worst ours/lower-bound over non-partial cases: {worst:.2f}")


LATENCY_PAIRS = [  # 4x4 mesh, rank-3 tensor: (name, src, tgt, DTensor src, DTensor tgt)
    ("swap S(x)S(y)->S(y)S(x)", [[0], [1]], [[1], [0]], "S0 S1", "S1 S0"),
    ("gather S(x)S(y)->R", [[0], [1]], [], "S0 S1", "R R"),
    ("move S(x)->RS(x)", [[0]], [[], [0]], "S0 R", "S1 R"),
    ("split R->S(x)S(y)", [], [[0], [1]], "R R", "S0 S1"),
    ("S(x,y)->S(x)S(y)", [[0, 1]], [[0], [1]], "S0 S0", "S0 S1"),
]


#: Calls per column and round in the latency table (a ``timeit`` loop).
BATCH = 20


def part2(rounds: int, shape: tuple[int, ...] = (1024, 1024, 64)) -> None:
    import torch
    from torch.distributed._local_tensor import LocalTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor
    from torch.distributed.tensor import _redistribute as R
    m = mt.Mesh([4, 4])
    print(f"\nplanner latency, 4x4 mesh, shape {shape}, us per call: medians of {rounds} "
          f"interleaved rounds of {BATCH} calls")
    print(f"{'pair':26s} {'ours cold':>9s} {'all cold':>9s} {'+flows':>7s} {'DT uncached':>11s} "
          f"{'DT/ours':>8s} {'ours hit':>9s} {'DT cached':>9s} {'DT/ours':>8s}")
    worst = float("inf")
    with LocalTensorMode(16):
        dmesh = init_device_mesh("cpu", (4, 4))
        for name, src, tgt, dsrc, dtgt in LATENCY_PAIRS:
            s, t = mt.Sharding(m, src), mt.Sharding(m, tgt)
            x = torch.zeros(shape)
            d = distribute_tensor(x, dmesh, _placements(dsrc))
            y = d.redistribute(dmesh, _placements(dtgt))
            a, b = d._spec, y._spec
            R._gen_transform_infos(a, b)
            mt.plan_reshard(s, t, shape, 4)
            plan = lambda: mt.plan_reshard(s, t, shape, 4)  # noqa: E731
            # (name, set-up before each call, the call), timed in interleaved rounds
            runs = [("cold", lambda: _clear_caches(False), plan),
                    ("all cold", lambda: _clear_caches(True), plan),
                    ("+flows", lambda: _clear_caches(False),
                     lambda: [s.flows for s in plan().steps]),
                    ("DT uncached", None, lambda: R._gen_transform_infos_non_cached(a, b)),
                    ("hit", None, plan),
                    ("DT cached", None, lambda: R._gen_transform_infos(a, b))]
            got: dict[str, list[float]] = {name: [] for name, _, _ in runs}
            gc.collect()
            gc.disable()  # as timeit does: a collection landing in one call is noise
            try:
                for _ in range(rounds):
                    for run_name, setup, fn in runs:
                        t0 = time.perf_counter()
                        if setup is None:
                            for _ in range(BATCH):
                                fn()
                        else:
                            for _ in range(BATCH):
                                setup()
                                fn()
                        got[run_name].append((time.perf_counter() - t0) / BATCH)
            finally:
                gc.enable()
            c, ac, st, u, h, uh = (median(v) * 1e6 for v in got.values())
            worst = min(worst, u / c)
            print(f"{name:26s} {c:9.0f} {ac:9.0f} {st:7.0f} {u:11.0f} {u / c:8.1f} {h:9.2f} {uh:9.2f} "
                  f"{uh / h:8.2f}")
    print(f"cold planning vs DTensor's uncached planner: at least {worst:.1f}x faster (goal >= 10x)")


def scaling_pairs(ndim: int) -> list[tuple[str, list, list, list | None, list | None]]:
    """(name, src split, tgt split, src halo, tgt halo) on a mesh of ``ndim`` axes."""
    if ndim == 2:
        return [("axis swap", [[0], [1]], [[1], [0]], None, None),
                ("gather to R", [[0], [1]], [], None, None),
                ("move axis", [[0], [1]], [[0], [], [1]], None, None),
                ("split R", [], [[0], [1]], None, None),
                ("halo change", [[0], [1]], [[0], [1]], [1] * 4, [2] * 4)]
    return [("axis swap", [[0], [1], [2]], [[2], [1], [0]], None, None),
            ("gather to R", [[0], [1], [2]], [], None, None),
            ("move axis", [[0], [1], [2]], [[0, 2], [1]], None, None),
            ("split R", [], [[0], [1], [2]], None, None),
            ("halo change", [[0], [1], [2]], [[0], [1], [2]], [1] * 6, [2] * 6)]


MESHES = {2: [(4, 4), (16, 16), (32, 32), (64, 64), (128, 128)],
          3: [(2, 2, 4), (4, 8, 8), (8, 8, 16), (16, 16, 16), (16, 32, 32)]}


#: Part 3's tensor: the activations of a transformer at pod scale, (batch, sequence,
#: hidden) = 256 x 32768 x 8192, float32. Every mesh axis divides it, and the plan's
#: byte-hop counts stay far inside int64 at 16384 devices.
POD_SHAPE = (256, 32768, 8192)


def part3(quick: bool) -> None:
    import tracemalloc
    shape = POD_SHAPE
    print(f"\ncold planning vs devices, rank-3 tensor {shape}: ms (best of 5) / peak MB")
    ok = True
    for ndim, meshes in MESHES.items():
        if quick:
            meshes = meshes[:2]
        sizes = [int(np.prod(s)) for s in meshes]
        print(f"{ndim}-D meshes {'':14s}" + "".join(f"{'x'.join(map(str, s)):>17s}" for s in meshes)
              + f"{'exponent':>10s}")
        for name, src, tgt, hs, ht in scaling_pairs(ndim):
            times, cells = [], []
            for mshape, n in zip(meshes, sizes):
                m = mt.Mesh(list(mshape))
                s = mt.Sharding(m, src, halo_sizes=hs)
                t = mt.Sharding(m, tgt, halo_sizes=ht)
                runs = []
                for _ in range(1 if quick else 5):
                    _clear_caches()
                    t0 = time.perf_counter()
                    p = mt.plan_reshard(s, t, shape, 4)
                    [st.flows for st in p.steps]  # flows and transfer rows too (built lazily)
                    runs.append(time.perf_counter() - t0)
                _clear_caches()
                tracemalloc.start()
                [st.flows for st in mt.plan_reshard(s, t, shape, 4).steps]
                peak = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                assert p.bytes_moved == p.lower_bound_bytes, (name, mshape)
                ms = min(runs) * 1e3
                times.append(ms)
                cells.append(f"{ms:.1f}/{peak:.1f}")
                if n == 4096 and ms >= 50 or n == 16384 and (ms >= 500 or peak >= 1024):
                    ok = False
                    cells[-1] += "!"
            fit = [(n, ms) for n, ms in zip(sizes, times) if n >= 256]
            fit = fit if len(fit) > 1 else list(zip(sizes, times))  # --quick
            slope = np.polyfit(np.log([n for n, _ in fit]), np.log([ms for _, ms in fit]), 1)[0]
            print(f"  {name:26s}" + "".join(f"{c:>17s}" for c in cells) + f"{slope:10.2f}")
    print("goals (< 50 ms at 4096 devices; < 500 ms and < 1 GB at 16384): "
          + ("met" if ok else "MISSED (marked !)"))


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description="reshard plans vs DTensor, and at scale")
    ap.add_argument("--quick", action="store_true",
                    help="every part small (2 rounds, up to 256 devices): checks it runs")
    ap.add_argument("--rounds", type=int, default=50, help="rounds for the latency table")
    ap.add_argument("--parts", default="123", help="which parts to run, e.g. 3 or 12")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"argument --rounds: must be >= 1, got {args.rounds}")
    if not args.parts or set(args.parts) - set("123"):
        ap.error(f"argument --parts: digits among 1, 2, 3, got {args.parts!r}")
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=64)
    import logging
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    if "1" in args.parts:
        part1(args.quick)
    if "2" in args.parts:
        # DTensor's set-up holds 16 local copies of the tensor: a small one when quick
        part2(2, (64, 64, 8)) if args.quick else part2(args.rounds)
    if "3" in args.parts:
        part3(args.quick)


if __name__ == "__main__":
    main()
