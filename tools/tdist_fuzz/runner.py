"""Run generated ``T.dist`` programs and classify each one.

Every program is built from its source, compiled and run in process under the checked
run (``check_races=True``: the early and the late delivery must give the same bits),
then compared with its NumPy model. Outcomes:

- ``equal``: ran, and every rank's outputs equal the model;
- ``refused``: a ``ValueError`` (or ``TypeError``) from meshtensor; for a *planted*
  program (a deadlock, a race or misuse on purpose) that is the goal: ``caught``;
- ``wrong``: ran, but an output differs from the model;
- ``missed``: a planted program that ran without an error; ``other``: one refused for
  another reason than its defect (:data:`EXPECTED`);
- ``crash``: anything else (another exception, a dead worker, a timeout).

``run_one`` runs one program in this process; ``Pool`` runs many in worker processes
(a crash of one worker loses only its program).
"""
from __future__ import annotations

import multiprocessing
import time
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, TimeoutError as FutTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import numpy as np

from .program import Program, generate

__all__ = ["Outcome", "run_one", "run_many", "summary", "EXPECTED"]

#: what each planted defect must be refused with (a refusal for another reason is
#: ``other``: a finding, since it may hide a generator or a meshtensor bug)
EXPECTED = {
    "read_before_wait_tile": r"before the wait that covers its arrival",
    "read_before_wait_loop": r"the result depends on the order of arrivals",
    "write_source": r"source was written before the send completed|put's source .* before "
                    r"T.dist.wait",
    "write_dest": r"the result depends on the order of arrivals|wrote the put's destination",
    "deadlock_manual": r"^deadlock: every rank is blocked",
    "deadlock_barrier": r"^deadlock: every rank is blocked",
    "deadlock_cores": r"^deadlock: every rank is blocked",
    "unsubmitted": r"^deadlock: every rank is blocked|never submitted",
    "wait_any_order": r"order T.dist.wait_any returns the members in",
    "world_one": r"world_size=1 disables Rank communication",
}


@dataclass
class Outcome:
    seed: str
    index: int
    status: str
    plant: str | None = None
    message: str = ""
    seconds: float = 0.0
    features: list = field(default_factory=list)
    world: int = 0
    mesh: tuple = ()


def run_one(seed: str, index: int, plant_rate: float = 0.25,
            plant: str | None = None) -> Outcome:
    """Program ``index`` of ``seed``: built, compiled, run (checked), compared
    (``plant`` forces a defect)."""
    import torch

    from meshtensor.tilelang import compile_mesh_kernel

    t0 = time.perf_counter()
    prog: Program = generate(seed, index, plant_rate, plant)
    out = Outcome(seed, index, "crash", prog.plant, features=sorted(prog.features),
                  world=prog.world, mesh=prog.mesh)
    try:
        ns: dict = {}
        src, fname = prog.source(), f"<tdist program {seed}/{index}>"
        import linecache  # TileLang reads the kernel's source through inspect
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        exec(compile(src, fname, "exec"), ns)
        kernel = compile_mesh_kernel(ns["build"](), check_races=True)
        A = prog.inputs()
        C, N = prog.cores, prog.n
        per = [[torch.from_numpy(A[r].copy()), torch.zeros(C, max(prog.slots, 1) * N),
                torch.zeros(C, max(prog.dslots, 1) * N)] for r in range(prog.world)]
        R = prog.r_input()
        for r in range(prog.world):  # each rank's part of the tensors split over ranks
            if R is not None:
                lo, hi = prog.rank_parts(prog.rdims)[r]
                per[r].append(torch.from_numpy(R[lo:hi].copy()))
            if prog.sdims is not None:
                lo, hi = prog.rank_parts(prog.sdims)[r]
                per[r].append(torch.zeros(hi - lo, N))
        kernel.run_ranks(per)
    except (ValueError, TypeError) as e:
        import re
        out.message = f"{type(e).__name__}: {e}"
        if prog.plant is None:
            out.status = "refused"
        elif (re.search(EXPECTED[prog.plant], str(e), re.MULTILINE) or
              re.search(EXPECTED[prog.plant], " ".join(str(e).split()))):  # (wrapped text)
            out.status = "caught"
        else:
            out.status = "other"
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        out.message = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    else:
        if prog.plant:
            out.status = "missed"
            out.message = f"planted {prog.plant} ran without an error"
        else:
            B, D, S = prog.model(A)
            bad = []
            for r in range(prog.world):
                checks = [("B", per[r][1].numpy(), B[r]), ("D", per[r][2].numpy(), D[r])]
                if prog.sdims is not None:  # S: the rank's part of the model's
                    lo, hi = prog.rank_parts(prog.sdims)[r]
                    checks.append((f"S (rows {lo}:{hi})", per[r][-1].numpy(),
                                   S[lo:hi]))
                for name, got, want in checks:
                    if not np.array_equal(got, want):
                        at = tuple(int(i) for i in np.argwhere(got != want)[0])
                        bad.append(f"rank {r} {name}{list(at)}: {got[at]} vs model {want[at]}")
            out.status = "wrong" if bad else "equal"
            out.message = "; ".join(bad[:3])
    out.seconds = time.perf_counter() - t0
    return out


def _init() -> None:
    import tilelang  # noqa: F401  (each worker imports it once)


def run_many(seed: str, indices: list[int], workers: int = 2, timeout: float = 300.0,
             plant_rate: float = 0.25, progress=None) -> list[Outcome]:
    """Programs ``indices`` of ``seed`` on ``workers`` processes (a program that takes
    longer than ``timeout`` seconds, or kills its worker, is a crash)."""
    if workers <= 0:
        return [run_one(seed, i, plant_rate) for i in indices]
    ctx = multiprocessing.get_context("spawn")
    todo = list(indices)
    results: dict[int, Outcome] = {}
    while todo:
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init)
        futs = {i: pool.submit(run_one, seed, i, plant_rate) for i in todo}
        broken = False
        for i, f in futs.items():
            try:
                results[i] = f.result(timeout=None if broken else timeout)
            except FutTimeout:
                results[i] = Outcome(seed, i, "crash", message=f"no result in {timeout:g} s")
                broken = True
            except BrokenProcessPool:
                results.setdefault(i, Outcome(seed, i, "crash", message="its worker died"))
                broken = True
            except Exception as e:  # noqa: BLE001
                results[i] = Outcome(seed, i, "crash", message=f"{type(e).__name__}: {e}")
            if progress is not None and i in results:
                progress(results[i])
            if broken:
                break
        pool.shutdown(wait=not broken, cancel_futures=True)
        if broken:
            for p in list(getattr(pool, "_processes", {}).values()):
                p.kill()
        todo = [i for i in todo if i not in results]
    return [results[i] for i in indices]


def summary(outcomes: list[Outcome]) -> str:
    """Counts by outcome, planted or not, and per plant."""
    c = Counter(o.status for o in outcomes)
    lines = [f"{len(outcomes)} programs: " + ", ".join(f"{k} {c[k]}" for k in
                                                       ("equal", "refused", "caught", "wrong",
                                                        "missed", "other", "crash"))]
    plants = Counter((o.plant, o.status) for o in outcomes if o.plant)
    for (plant, status), n in sorted(plants.items()):
        lines.append(f"  planted {plant}: {status} {n}")
    return "\n".join(lines)
