"""``meshtensor calibrate``: fit a machine's numbers to measured runs of the built-in
GEMMs and write a machine file.

    meshtensor calibrate runs.csv --out mychip.json
    meshtensor calibrate runs.json --fit flops,link_bandwidth,hop_latency

The file and the arguments are checked before TileLang is imported.
"""

from __future__ import annotations

import argparse
import json
import textwrap
import pathlib
from typing import Any

from .measurements import DEFAULT_FIT as _DEFAULT, FITTABLE, OPTIONAL, REQUIRED, \
    load_measurements

HELP = "fit a machine's numbers to measured GEMM runs; write a machine file"
DEFAULT_FIT = ",".join(_DEFAULT)
DESCRIPTION = f"""\
Fit a machine's numbers to measured runs of the built-in GEMMs: the
performance model estimates each run on the machine the runs name, and a
least-squares fit of the relative errors chooses the numbers. Prints the fit
and each run's error, and writes the fitted machine as a machine file.

MEASUREMENTS is a .json list of runs or a .csv with a header; a run has
{', '.join(REQUIRED)} (seconds), and optionally
{', '.join(OPTIONAL)} (docs/perf.md, "Calibration")."""
EPILOG = """\
examples:
  meshtensor calibrate runs.csv --out mychip.json
  meshtensor calibrate runs.json --fit flops,link_bandwidth,hop_latency

numbers it fits: """ + "\n  ".join(textwrap.wrap(", ".join(FITTABLE), 70))


def _fit_list(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in names if x not in FITTABLE]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers among {', '.join(FITTABLE)}, got {text!r}")
    return names


def add_calibrate_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``calibrate`` on the ``meshtensor`` command's subparsers."""
    p = sub.add_parser("calibrate", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("measurements", metavar="MEASUREMENTS",
                   help="a .json or .csv file of measured runs")
    p.add_argument("--fit", type=_fit_list, default=_fit_list(DEFAULT_FIT),
                   help=f"the numbers to fit (default {DEFAULT_FIT})")
    p.add_argument("--out", metavar="OUT.json",
                   help="write the fitted machine here (default: MACHINE-calibrated.json "
                        "beside the measurements)")
    p.add_argument("--name", help="the fitted machine's name (default MACHINE-calibrated)")
    p.set_defaults(func=run_calibrate)
    return p


def run_calibrate(args: argparse.Namespace) -> int:
    """The ``calibrate`` command: the file is read and checked first."""
    runs = load_measurements(args.measurements)
    machines = sorted({r.machine for r in runs})
    if len(machines) > 1:
        raise ValueError(f"calibrate: the runs name machines {', '.join(machines)}; "
                         f"calibrate one machine at a time")
    if args.out is not None and pathlib.Path(args.out).suffix.lower() != ".json":
        raise ValueError(f"--out: expected a file name ending in .json, got {args.out!r}")
    from .machines import get_machine
    base = get_machine(machines[0])
    name = args.name or f"{base.name}-calibrated"
    out = pathlib.Path(args.out) if args.out else \
        pathlib.Path(args.measurements).with_name(f"{name}.json")
    if not out.parent.is_dir():
        raise ValueError(f"--out: the folder {str(out.parent)!r} does not exist")
    from .tilelang.logs import quiet_tilelang
    quiet_tilelang()
    from .tilelang.kernels.calibration import calibrate
    c = calibrate(runs, fit=args.fit, machine=base, name=name)
    print(c.table())
    out.write_text(json.dumps(c.machine.as_dict(), indent=1) + "\n")
    print(f"saved {out} (use it as --machine {out})")
    return 0
