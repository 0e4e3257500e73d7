"""The built-in GEMMs' structure by formula (gemm_model) against the tool (the
performance model on the built kernel's TIR): serial and overlapped times, supersteps,
memory and the time by bound, for square and rectangular shapes, repeated C blocks
included (the model times two blocks and extrapolates); the tile candidates; and
calibration (synthetic runs recovered, bad measurement files refused)."""
import json

import pytest
from cli_text import read

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401

from meshtensor.cli import main  # noqa: E402
from meshtensor.machines import PRESETS, Machine, load_machine  # noqa: E402
from meshtensor.measurements import Measurement, load_measurements  # noqa: E402
from meshtensor.tilelang import count_mesh_kernel, estimate_mesh_kernel  # noqa: E402
from meshtensor.tilelang.kernels.calibration import calibrate, model_time  # noqa: E402
from meshtensor.tilelang.kernels.gemm import build_gemm, check_tiles  # noqa: E402
from meshtensor.tilelang.kernels.gemm_model import (model_gemm,  # noqa: E402
                                                    tile_candidates)

TOY = Machine("toy", (8, 8), {"float32": 3e10, "bfloat16": 9e10}, mem_bandwidth=7e9,
              link_bandwidth=5e9, hop_latency=2e-9, message_overhead=5e-8,
              local_memory_bytes=1 << 20, barrier_latency=3e-7, mem_bandwidth_total=2e10,
              multicast_bandwidth=4e9, multicast_overhead=1e-7, torus=(True, True),
              overlap=0.7)
SLOWNET = TOY.replace(name="slownet", link_bandwidth=2e8, injection_bandwidth=1e8)
MACHINES = [TOY, SLOWNET, PRESETS["generic"], PRESETS["wormhole-n300"]]

CASES = [  # (algorithm, (M, N, K), mesh, tiles or copies)
    ("summa_comm", (64, 64, 64), 2, (16, 16, 8)),
    ("summa_comm", (96, 64, 32), 2, (16, 16, 8)),        # 6 C blocks: extrapolated
    ("summa_comm", (48, 96, 72), 3, (8, 16, 4)),
    ("summa_comm", (256, 128, 512), 4, (32, 32, 16)),
    ("summa_comm", (32, 32, 32), 1, (16, 16, 16)),
    ("cannon_comm", (96, 64, 32), 2, (16, 8, 16)),
    ("cannon_comm", (48, 96, 72), 3, (8, 16, 24)),
    ("cannon_comm", (64, 64, 64), 8, (8, 8, 8)),         # the torus wraps on 8x8
    ("splitk_comm", (128, 64, 32), 2, (16, 8, 4)),       # 64 blocks: extrapolated
    ("splitk_comm", (108, 48, 36), 3, (18, 8, 2)),
    ("splitk_comm", (64, 256, 64), 4, (16, 16, 4)),
    ("ksplit_comm", (64, 48, 32), 4, None),
    ("cannon25d_comm", (32, 32, 64), 4, 4),
    ("cannon25d_comm", (32, 64, 256), 8, 16),
    ("cannon25d_comm", (96, 48, 64), 4, 4),
]


@pytest.mark.parametrize("algorithm,shape,n,form", CASES,
                         ids=[f"{a}-{'x'.join(map(str, s))}-{n}" for a, s, n, _ in CASES])
def test_model_equals_the_tool(algorithm, shape, n, form):
    copies = form if algorithm == "cannon25d_comm" else None
    tiles = None if copies or form is None else form
    w = count_mesh_kernel(build_gemm(algorithm, *shape, mesh=n, tiles=tiles, copies=copies))
    for m in MACHINES:
        r = estimate_mesh_kernel(w, m)
        e = model_gemm(algorithm, *shape, n, m, "float32", tiles, copies)
        assert e.serial == pytest.approx(r.serial, rel=1e-12), m.name
        assert e.overlapped == pytest.approx(r.overlapped, rel=1e-12), m.name
        assert e.total == pytest.approx(r.total, rel=1e-12), m.name
        assert e.compute == pytest.approx(sum(s.compute for s in r.steps), rel=1e-12)
        assert e.supersteps == len(r.steps) and e.local_bytes == w.local_bytes
        assert e.exchanges == sum(1 for s in r.steps if s.work.has_exchange)
        bb = r.by_bound()
        assert all(dict(e.by_bound)[k] == pytest.approx(bb[k], rel=1e-9, abs=1e-18)
                   for k in bb)
        assert set(e.algorithms) == set(r.algorithms())


def test_tile_candidates_divide_as_the_kernels_need():
    for alg, shape, n in (("summa_comm", (1024, 512, 256), 4), ("cannon_comm", (96, 64, 32), 2),
                          ("splitk_comm", (512, 512, 8192), 4)):
        cands = tile_candidates(alg, *shape, n)
        assert cands and cands[0].bm * cands[0].bn >= cands[-1].bm * cands[-1].bn
        for t in cands:
            check_tiles(alg, *shape, n, t)  # raises if a tile does not divide
    assert tile_candidates("splitk_comm", 100, 100, 100, 4) == []  # 16 does not divide K
    with pytest.raises(ValueError, match="model_gemm: ksplit_comm is modelled for shapes "
                                         "the mesh side 4 divides, got 50x50x50"):
        model_gemm("ksplit_comm", 50, 50, 50, 4)


# -- calibration ---------------------------------------------------------------------------
RUNS = [("summa_comm", (1024, 1024, 1024), 4, (256, 256, 32)),
        ("summa_comm", (256, 256, 256), 4, (64, 64, 16)),
        ("cannon_comm", (512, 512, 512), 4, (128, 128, 128)),
        ("splitk_comm", (256, 256, 4096), 4, (256, 256, 256)),
        ("splitk_comm", (512, 512, 8192), 4, (256, 256, 512)),
        ("cannon_comm", (128, 128, 128), 4, (32, 32, 32)),
        ("summa_comm", (2048, 2048, 256), 8, (256, 256, 32)),
        ("cannon_comm", (2048, 2048, 2048), 8, (128, 128, 256)),
        ("splitk_comm", (64, 64, 65536), 8, (64, 64, 256)),
        ("summa_comm", (512, 512, 512), 2, (128, 128, 64))]


def synthetic(true: Machine, base: str = "wormhole-n300") -> list[Measurement]:
    out = []
    for i, (k, shape, n, t) in enumerate(RUNS):
        probe = Measurement(0, k, shape, base, 1.0, n, "bfloat16", t)
        out.append(Measurement(i + 1, k, shape, base, model_time(probe, true), n,
                               "bfloat16", t))
    return out


def test_calibrate_recovers_synthetic_parameters_within_2_percent():
    base = PRESETS["wormhole-n300"]
    true = base.replace(flops_per_s={d: r * 0.8 for d, r in base.flops_per_s.items()},
                        mem_bandwidth=15e9, link_bandwidth=25e9, barrier_latency=400e-9,
                        overlap=0.7)
    c = calibrate(synthetic(true))
    want = {"flops": 0.8, "mem_bandwidth": 15e9, "link_bandwidth": 25e9,
            "barrier_latency": 400e-9, "overlap": 0.7}
    assert set(c.fitted) == set(want) and c.unconstrained == ()
    for name, (start, got) in c.fitted.items():
        assert got == pytest.approx(want[name], rel=0.02), name
    m = c.machine
    assert m.rate("bfloat16") == pytest.approx(true.rate("bfloat16"), rel=0.02)
    assert c.rms < 0.01 and all(len(line) <= 80 for line in c.table().splitlines())
    assert m.sources["link_bandwidth"].startswith("measured: fitted by meshtensor "
                                                   "calibrate to 10 runs")


def test_calibrate_leaves_what_no_run_bounds():
    """Runs on one core exchange nothing: they say nothing of the hop latency, which
    keeps its start."""
    base = PRESETS["wormhole-n300"]
    runs = []
    for i, s in enumerate((64, 128, 256)):
        probe = Measurement(0, "summa_comm", (s, s, s), base.name, 1.0, 1, "bfloat16")
        runs.append(Measurement(i + 1, "summa_comm", (s, s, s), base.name,
                                model_time(probe, base), 1, "bfloat16"))
    c = calibrate(runs, fit=["flops", "hop_latency"])
    assert c.fitted["flops"][1] == pytest.approx(1.0, rel=1e-6)
    assert c.unconstrained == ("hop_latency",) and c.machine.hop_latency == base.hop_latency


def test_calibrate_command_writes_a_machine_file(tmp_path, capsys):
    base = PRESETS["wormhole-n300"]
    true = base.replace(link_bandwidth=20e9, barrier_latency=5e-7)
    rows = synthetic(true)
    csv = tmp_path / "runs.csv"
    csv.write_text("kernel,shape,machine,time,mesh,dtype,tiles\n" + "".join(
        f"{r.kernel},{'x'.join(map(str, r.shape))},wormhole-n300,{r.time!r},{r.mesh},"
        f"bfloat16,{'x'.join(map(str, r.tiles))}\n" for r in rows))
    out = tmp_path / "wh.json"
    assert main(["calibrate", str(csv), "--fit", "link_bandwidth,barrier_latency",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(len(line) <= 80 for line in text.splitlines() if not line.startswith("saved"))
    m = load_machine(out)
    assert m.name == "wormhole-n300-calibrated"
    assert m.link_bandwidth == pytest.approx(20e9, rel=0.02)
    assert m.barrier_latency == pytest.approx(5e-7, rel=0.02)


@pytest.mark.parametrize("rows,message", [
    pytest.param([{"kernel": "summa_comm", "shape": "512", "machine": "generic"}],
                 r"runs.json' row 1: missing field time \(a run needs kernel, shape, "
                 r"machine, time\)", id="missing-time"),
    pytest.param([{"kernel": "summa_comm", "shape": "512", "machine": "generic",
                   "time": 1e-3},
                  {"kernel": "summa_comm", "shape": "512", "machine": "generic",
                   "time": -2}],
                 r"runs.json' row 2: time -2 must be a number of seconds > 0",
                 id="negative-time"),
    pytest.param([{"kernel": "gemm3d", "shape": "512", "machine": "generic", "time": 1}],
                 r"row 1: kernel 'gemm3d' is not a built-in distributed-memory GEMM; "
                 r"kernels: summa_comm", id="unknown-kernel"),
    pytest.param([{"kernel": "summa", "shape": "512", "machine": "generic", "time": 1}],
                 r"row 1: kernel 'summa' is not a built-in distributed-memory GEMM",
                 id="global-view-kernel"),
    pytest.param([{"kernel": "summa_comm", "shape": "5x12", "machine": "generic",
                   "time": 1}], r"row 1: shape '5x12' must be positive ints as M or MxNxK",
                 id="bad-shape"),
    pytest.param([{"kernel": "summa_comm", "shape": "64", "machine": "generic", "time": 1,
                   "when": "today"}], "row 1: unknown field when", id="unknown-field"),
    pytest.param([{"kernel": "summa_comm", "shape": "64", "machine": "generic", "time": 1,
                   "mesh": "2x4"}], "row 1: mesh '2x4' must be square", id="mesh"),
    pytest.param({"runs": []}, r"expected a list of runs", id="not-a-list"),
])
def test_bad_measurement_files(tmp_path, rows, message):
    p = tmp_path / "runs.json"
    p.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=message) as e:
        load_measurements(p)
    assert str(e.value).count("\n") == 0


def test_bad_csv_and_the_command(tmp_path, capsys):
    p = tmp_path / "runs.csv"
    p.write_text("kernel,shape,time\nsumma_comm,512,1e-3\n")
    with pytest.raises(ValueError, match=r"runs.csv' row 1: missing field machine"):
        load_measurements(p)
    p.write_text("kernel,shape,machine,time\nsumma_comm,512,generic,1e-3\n"
                 "summa_comm,512,generic,abc\n")
    assert main(["calibrate", str(p)]) == 2
    err = read(capsys)[1]  # one message, wrapped to 80 columns
    assert "row 2: time 'abc' must be a number of seconds > 0" in err and err.count("\n") == 1
    q = tmp_path / "two.json"
    q.write_text(json.dumps([{"kernel": "summa_comm", "shape": "64", "machine": m,
                              "time": 1} for m in ("generic", "wormhole-n300")]))
    assert main(["calibrate", str(q)]) == 2
    assert "the runs name machines generic, wormhole-n300; calibrate one machine at a time" \
        in read(capsys)[1]
    with pytest.raises(SystemExit):
        main(["calibrate", str(q), "--fit", "speed"])
    assert "expected comma-separated numbers among flops" in read(capsys)[1]


def test_calibrate_help_fits_80_columns(capsys):
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    out = capsys.readouterr().out
    assert "MEASUREMENTS" in out and all(len(line) <= 80 for line in out.splitlines())
