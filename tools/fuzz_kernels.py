"""Random mesh-kernel fuzzer for meshtensor.tilelang (see docs/fuzzing.md).

Every generated program must run equal to its NumPy model or be refused with a
ValueError; a wrong result or a crash gets a standalone reproducer script. With
``--mode spmdize`` the programs are global-view kernels, and ``spmdize`` must refuse
each one or return a kernel that passes the owner-only check, runs equal to the model
and the global view, and receives the comm bytes docs/spmdize.md promises.

    PYTHONPATH=src python tools/fuzz_kernels.py --programs 3000 --seed 1
    PYTHONPATH=src python tools/fuzz_kernels.py --mode spmdize --programs 300 --seed 1
"""
import argparse
import json
import os
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mesh_fuzz import global_view  # noqa: E402
from mesh_fuzz.generate import FEATURES, OPS, known_feature  # noqa: E402
from mesh_fuzz.runner import (MODES, Fuzzer, feature_table, outcomes_json,  # noqa: E402
                              planted_refusal_table, planted_table, refusal_table)

#: features that hit known bugs of the kernel layer, for --exclude-known
KNOWN_BUGS = ("axis-order", "let-after-write", "prefetch-root", "fragment", "helper")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="fuzz_kernels.py",
        description="Run random mesh kernels against their NumPy model.",
        epilog="Exit status 1 when a program was wrong or crashed. Feature names "
               "for --exclude: " + ", ".join(list(FEATURES) + list(OPS)) + "; with "
               "--mode spmdize: " + ", ".join(global_view.FEATURES) + ".",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
    ap.add_argument("--mode", choices=MODES, default="kernels",
                    help="kernels: mesh programs with comm ops (default); spmdize: "
                         "global-view programs through spmdize")
    ap.add_argument("--programs", type=int, default=200, metavar="N",
                    help="how many programs (default 200)")
    ap.add_argument("--seed", default="0", metavar="S",
                    help="run seed; a program is a function of seed and index")
    ap.add_argument("--first", type=int, default=0, metavar="I",
                    help="index of the first program (default 0)")
    ap.add_argument("--batch", type=int, default=16, metavar="K",
                    help="programs compiled together in one kernel (default 16)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    metavar="J", help="worker processes (default: 2 or the CPU count)")
    ap.add_argument("--cflags", default=None, metavar="F",
                    help="C compiler flags, e.g. --cflags=-O1 (default: "
                         "compile_mesh_kernel's, -O3 -march=native)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="folder for reproducers (default: a new temp folder)")
    ap.add_argument("--exclude", default=os.environ.get("MESH_FUZZ_EXCLUDE", ""),
                    metavar="F,..",
                    help="features or comm ops never generated (default: "
                         "$MESH_FUZZ_EXCLUDE)")
    ap.add_argument("--exclude-known", action="store_true",
                    help="also exclude " + ", ".join(KNOWN_BUGS) + " (kernels mode)")
    ap.add_argument("--confirm", type=int, default=20, metavar="M",
                    help="wrong programs re-run alone for a smaller reproducer "
                         "(default 20)")
    ap.add_argument("--minimize", type=int, default=0, metavar="T",
                    help="shrink each failing program with up to T kernel tries "
                         "before writing its reproducer (default 0: off)")
    ap.add_argument("--timeout", type=float, default=300.0, metavar="SEC",
                    help="limit per kernel build and run (default 300)")
    ap.add_argument("--json", default=None, metavar="FILE",
                    help="write every program's outcome to FILE")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    ex = {f.strip() for f in args.exclude.split(",") if f.strip()}
    known = (lambda f: f in global_view.FEATURES) if args.mode == "spmdize" \
        else known_feature
    unknown = sorted(f for f in ex if not known(f))
    if unknown:
        ap.error(f"--exclude: unknown feature(s) {', '.join(unknown)}"
                 f"{' (spmdize mode)' if args.mode == 'spmdize' else ''}")
    if args.exclude_known and args.mode == "kernels":
        ex |= set(KNOWN_BUGS)
    args.exclude_set = frozenset(ex)
    if args.programs < 1 or args.batch < 1 or args.jobs < 1:
        ap.error("--programs, --batch and --jobs must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="mesh-fuzz-")
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    print(f"{'spmdize mode, ' if args.mode == 'spmdize' else ''}seed {args.seed}, "
          f"programs {args.first}..{args.first + args.programs - 1}, "
          f"batches of {args.batch}, {args.jobs} job(s)", flush=True)
    print(f"reproducers in {out}", flush=True)
    if args.exclude_set:
        print(textwrap.fill("excluded: " + ", ".join(sorted(args.exclude_set)), 80,
                            break_on_hyphens=False),
              flush=True)
    t0 = time.monotonic()
    fz = Fuzzer(args.seed, args.programs, out, batch_size=args.batch, jobs=args.jobs,
                exclude=args.exclude_set, confirm=args.confirm, timeout=args.timeout,
                log=log, first=args.first,
                flags=None if args.cflags is None else args.cflags.split(),
                minimize=args.minimize, mode=args.mode)
    summary = fz.run()
    dt = time.monotonic() - t0
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "mode": args.mode, "seconds": dt,
                       "summary": summary.line(),
                       "outcomes": outcomes_json(summary)}, f, indent=1)
    refusals = refusal_table(summary)
    if refusals:
        print("refusals of valid programs (count, message):")
        print("\n".join(refusals[:12]))
    planted = planted_table(summary)
    if planted:
        print("programs planted to be refused, by reason:")
        print("\n".join(planted))
        refused = planted_refusal_table(summary)
        if refused:
            print("their refusals (count, reason: message):")
            print("\n".join(refused[:8]))
    if summary.batch_refusals:
        print(f"{len(summary.batch_refusals)} batch(es) refused although each of "
              f"their programs is accepted alone; first:")
        print(textwrap.fill(summary.batch_refusals[0][:300], 80, initial_indent="  ",
                            subsequent_indent="  "))
    failed = summary.failed
    if failed:
        print("features of wrong or crashed programs (feature: used, failed):")
        rows = [f"{f}: {n}, {b}" for f, n, b in feature_table(summary) if b]
        print(textwrap.fill("; ".join(rows), 80, break_on_hyphens=False))
    n = len(summary.outcomes)
    cpu = summary.worker_cpu + summary.own_cpu
    print(f"{dt:.0f} s, {n / dt:.2f} programs/s; {cpu / n:.2f} CPU-s per program "
          f"({summary.worker_cpu / n:.2f} in workers)")
    refused, valid = summary.valid_refused()
    print(f"valid programs refused: {refused} of {valid} "
          f"({100 * refused / max(valid, 1):.1f}%)")
    print(summary.line())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
