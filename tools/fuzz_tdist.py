"""Random multi-rank T.dist programs against their NumPy model (docs/tdist.md).

Every correct program must run (checked: the early and the late delivery agree) equal
to its model or be refused with a ValueError; every planted one (a deadlock, a race,
misuse) must be refused; a wrong result, a missed plant or a crash is a finding.

    PYTHONPATH=src:tools python tools/fuzz_tdist.py --programs 1000 --seed 7
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tdist_fuzz.runner import run_many, summary  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="fuzz_tdist.py", description=__doc__.splitlines()[0],
                                 formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
    ap.add_argument("--programs", type=int, default=100, metavar="N")
    ap.add_argument("--seed", default="0", metavar="S")
    ap.add_argument("--first", type=int, default=0, metavar="I")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="worker processes (0: this process)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    ap.add_argument("--plant-rate", type=float, default=0.25,
                    help="share of programs with a planted defect (default 0.25)")
    ap.add_argument("--json", metavar="FILE", help="write every outcome here")
    args = ap.parse_args(argv)
    t0 = time.time()
    bad = []

    def progress(o):
        if o.status in ("wrong", "missed", "other", "crash"):
            bad.append(o)
            print(f"  {o.status}: program {o.seed}/{o.index} ({o.plant or 'correct'}): "
                  f"{o.message.splitlines()[0][:300]}", flush=True)

    outcomes = run_many(args.seed, list(range(args.first, args.first + args.programs)),
                        workers=args.jobs, timeout=args.timeout,
                        plant_rate=args.plant_rate, progress=progress)
    print(summary(outcomes))
    print(f"in {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([o.__dict__ for o in outcomes], f, indent=1, default=str)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
