import os
import pathlib
import subprocess
import sys

import pytest

from meshtensor import Mesh, Sharding
from meshtensor.cli import main, parse_shape, parse_sharding
from cli_text import read, unwrap


def test_plan_command_prints_plan(capsys):
    assert main(["plan", "--mesh", "2x3", "--shape", "6x6", "--from", "[[0],[1]]",
                 "--to", "[[1],[0]]"]) == 0
    out = capsys.readouterr().out
    assert "reshard S(x)S(y) -> S(y)S(x)" in out and "ratio 1.00" in out


def test_plan_command_seed_dict_partial_and_halo(capsys):
    assert main(["plan", "--mesh", "4x2", "--shape", "8x6", "--from", "[]", "--from-partial",
                 "x:sum", "--to", '{"x": 0, "y": None}']) == 0
    assert "reduce_scatter" in capsys.readouterr().out
    assert main(["plan", "--mesh", "4", "--shape", "16", "--from", "[[0]]", "--to", "[[0]]",
                 "--to-halo", "1,1", "--dtype", "float64"]) == 0
    assert "update_halo" in capsys.readouterr().out


@pytest.mark.parametrize("spec", ["__import__('os').system('true')", "[[0]] + [[1]]", "open('x')"])
def test_specs_are_parsed_safely(spec, capsys):
    assert main(["plan", "--mesh", "2x2", "--shape", "4x4", "--from", spec, "--to", "[]"]) == 2
    assert "is not a literal" in read(capsys)[1]


def test_bad_input_messages(capsys):
    assert main(["plan", "--mesh", "2y2", "--shape", "4", "--from", "[]", "--to", "[]"]) == 2
    assert "expected sizes like '4x4'" in read(capsys)[1]
    assert main(["plan", "--mesh", "2", "--shape", "4", "--from", "[]", "--to", "[[3]]"]) == 2
    assert "out of range" in read(capsys)[1]


def test_parsers():
    m = Mesh([2, 2])
    assert parse_shape("8x12") == (8, 12) and parse_shape("scalar") == ()
    assert parse_sharding(m, '[["y"], []]') == Sharding(m, [[1]])
    assert parse_sharding(m, '{"x": 1}') == Sharding(m, [[], [0]])
    assert parse_sharding(m, "[]", partial="1:max").partial == {"y": "max"}


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "meshtensor", "plan", "--mesh", "2", "--shape",
                        "4", "--from", "[[0]]", "--to", "[]"], capture_output=True, text=True)
    assert r.returncode == 0 and "all_gather" in r.stdout


def test_cli_docstring_examples():
    import doctest
    from meshtensor import cli
    res = doctest.testmod(cli)
    assert res.failed == 0 and res.attempted >= 2


def test_version(capsys):
    from importlib.metadata import version
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"meshtensor {version('meshtensor')}\n"


def test_help_says_what_each_command_does(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "distributed tensors over a mesh" in out
    for line in ("show      draw which part of a tensor each device holds",
                 "plan      plan a reshard between two shardings",
                 "demo      compile, check and time a SUMMA GEMM"):
        assert line in out


PLAN = ["plan", "--mesh", "2x3", "--shape", "6x6", "--from", "[[0],[1]]", "--to", "[[1],[0]]"]
SHOW = ["show", "--mesh", "2x3", "--shape", "6x6", "--sharding", "[[0],[1]]"]


@pytest.mark.parametrize("argv,message", [
    pytest.param(["demo", "--size", "0"], "argument --size: must be >= 1, got 0", id="size-0"),
    pytest.param(["demo", "--size", "8x"], "argument --size: expected an integer, got '8x'",
                 id="size-not-int"),
    pytest.param(["demo", "--repeat", "0"], "argument --repeat: must be >= 1, got 0",
                 id="repeat-0"),
    pytest.param(PLAN + ["--pairs", "-1"], "argument --pairs: must be >= 0, got -1",
                 id="pairs-negative"),
    pytest.param(PLAN + ["--dtype", "bfloat17"], "argument --dtype: unknown element type "
                 "'bfloat17': give a numeric numpy type (float32, float16, int8, uint8, "
                 "bool, complex64, ...) or bfloat16, float8_e4m3fn, float8_e5m2",
                 id="dtype-unknown"),
    pytest.param(PLAN + ["--dtype", "str"], "unknown element type 'str'", id="dtype-not-numeric"),
    pytest.param(SHOW + ["--width", "0"], "argument --width: must be >= 40, got 0", id="width-0"),
    pytest.param(PLAN + ["--width", "39"], "argument --width: must be >= 40, got 39",
                 id="plan-width-39"),
    pytest.param(["demo", "--width", "20"], "argument --width: must be >= 40, got 20",
                 id="demo-width-20"),
    pytest.param([], "meshtensor: error: the following arguments are required: COMMAND",
                 id="no-command"),
    pytest.param(["shwo"], "argument COMMAND: invalid choice: 'shwo'", id="unknown-command"),
    pytest.param(["plan", "--mesh", "2"], "the following arguments are required: --shape",
                 id="missing-flag"),
])
def test_argument_errors_are_one_line_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    out, err = read(capsys)
    assert out == "" and message in err
    assert err.count("\n") == 1 and "--help" in err and "Traceback" not in err


def test_argument_error_from_the_command_line():
    r = subprocess.run([sys.executable, "-m", "meshtensor", "demo", "--size", "0"],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("meshtensor demo: error: argument --size: must be >= 1, got 0 "
                        "(see 'meshtensor\n  demo --help')\n")  # wrapped to 80 columns


@pytest.mark.parametrize("argv,message", [
    pytest.param(PLAN + ["--png", "out.txt"], "--png: expected a file name ending in .png",
                 id="png-suffix"),
    pytest.param(SHOW + ["--offsets", "[[0,1,6]]"], "--offsets: one list per split dim: "
                 "S(x)S(y) splits 2 dims [0, 1], got 1 lists", id="offsets-dims"),
    pytest.param(SHOW + ["--offsets", "[[0,1,6],[0,6]]"], "--offsets: dim 1 needs 4 values, "
                 "got 2: [0, 6]", id="offsets-dim-length"),
    pytest.param(SHOW + ["--offsets", "0,1;6"], "--offsets: expected comma-separated ints or "
                 "one list of ints per split dim, got '0,1;6'", id="offsets-syntax"),
    pytest.param(PLAN + ["--to-offsets", "[[0,1,6],[0,2,4,6]]"], "--to-offsets: dim 0 needs "
                 "4 values, got 3", id="to-offsets-named"),
    pytest.param(SHOW + ["--halo", "[[1,1],[2]]"], "--halo: dim 1 needs 2 values, got 1",
                 id="halo-dim-length"),
    pytest.param(["show", "--mesh", "4x4", "--shape", "100000x100000", "--sharding", "[[0]]",
                  "--values"], "--values builds arange(10000000000) for --shape "
                 "100000x100000; at most 16777216 elements", id="values-too-big"),
    pytest.param(["show", "--mesh", "2x3", "--shape", "6", "--sharding", "[[0],[1]]"],
                 "--shape: sharding S(x)S(y) splits dim 1 but the tensor has rank 1",
                 id="shape-rank"),
])
def test_bad_values_fail_before_printing(argv, message, capsys):
    assert main(argv) == 2
    out, err = read(capsys)
    assert out == "" and message in err and err.count("\n") == 1


def test_dtype_bfloat16_is_two_bytes(capsys):
    def moved(dtype):
        assert main(PLAN + ["--dtype", dtype]) == 0
        out = capsys.readouterr().out
        return int(out.split("bytes_moved ")[1].split(",")[0])
    assert moved("bfloat16") * 2 == moved("float32") == moved("int32") * 1 > 0


def test_pairs_zero_lists_none(capsys):
    assert main(PLAN + ["--pairs", "0"]) == 0
    out = capsys.readouterr().out
    assert " -> (" not in out and "... 12 more device pairs" in out


def test_offsets_flat_and_per_dim_forms_agree(capsys):
    m = Mesh([2, 3])
    flat = parse_sharding(m, "[[0],[1]]", offsets="0,1,6,0,2,4,6")
    assert parse_sharding(m, "[[0],[1]]", offsets="[[0,1,6],[0,2,4,6]]") == flat
    assert parse_sharding(m, "[[0],[1]]", offsets="[0,1,6,0,2,4,6]") == flat
    assert flat.offsets(0) == (0, 1, 6) and flat.offsets(1) == (0, 2, 4, 6)
    assert parse_sharding(m, "[[0],[1]]", halo="[[1,0],[0,2]]").halo_sizes == (1, 0, 0, 2)
    assert main(SHOW + ["--offsets", "[[0,1,6],[0,2,4,6]]"]) == 0
    assert "[1:6, 4:6]" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "flat as in MLIR (e.g. 0,2,6) or one list per split dim" in help_text


def test_png_creates_only_the_last_missing_folder(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "new" / "layout.png"
    assert main(SHOW + ["--png", str(target)]) == 0
    assert target.stat().st_size > 0 and f"saved {target}" in capsys.readouterr().out
    deep = tmp_path / "typo" / "dir" / "layout.png"
    assert main(SHOW + ["--png", str(deep)]) == 2
    out, err = read(capsys)
    assert out == "" and not (tmp_path / "typo").exists()
    assert f"--png: the folder '{tmp_path / 'typo'}' does not exist (only the last folder" in err
    (tmp_path / "file").write_text("")
    assert main(PLAN + ["--png", str(tmp_path / "file" / "plan.png")]) == 2
    out, err = read(capsys)
    assert out == "" and f"--png: '{tmp_path / 'file'}' is a file, not a folder" in err
    assert main(SHOW + ["--png", str(tmp_path)]) == 2
    assert "expected a file name ending in .png" in read(capsys)[1]


@pytest.mark.parametrize("path, message", [
    pytest.param("/proc/x.png", "--png: cannot write '/proc/x.png'", id="proc"),
    pytest.param("/nonexistent/dir/x.png", "--png: the folder '/nonexistent' does not exist",
                 id="nonexistent"),
])
def test_png_path_is_checked_before_drawing(path, message, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import importlib
    V = importlib.import_module("meshtensor.visualize")  # the package's name is the function

    def no_drawing(*args, **kwargs):
        raise AssertionError("drew before checking the path")
    monkeypatch.setattr(V, "save_png", no_drawing)
    monkeypatch.setattr(V, "save_plan_png", no_drawing)
    for argv in (SHOW, PLAN):
        assert main(argv + ["--png", path]) == 2
        out, err = read(capsys)
        assert out == "" and message in err and err.count("\n") == 1
    assert not pathlib.Path("/nonexistent").exists()


def test_png_leaves_no_file_when_the_check_passes_but_nothing_is_drawn(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "new" / "x.png"
    assert main(SHOW + ["--sharding", "[[5]]", "--png", str(target)]) == 2  # fails earlier
    assert not target.exists()


@pytest.mark.parametrize("argv, message", [
    pytest.param(["show", "--mesh", "-2x3", "--shape", "4", "--sharding", "[]"],
                 "meshtensor show: error: --mesh: mesh sizes must be >= 1, got '-2x3'",
                 id="mesh-negative"),
    pytest.param(["plan", "--mesh", "2x-3", "--shape", "4", "--from", "[]", "--to", "[]"],
                 "meshtensor plan: error: --mesh: mesh sizes must be >= 1, got '2x-3'",
                 id="mesh-negative-inner"),
    pytest.param(["show", "--mesh", "2x3", "--shape", "-4x2", "--sharding", "[]"],
                 "meshtensor show: error: --shape: sizes must be >= 0, got '-4x2'",
                 id="shape-negative"),
    pytest.param(["show", "--mesh", "2x2", "--shape", "4x4", "--sharding", '{"x": null}'],
                 "(Python literals: write None, not null)", id="json-null"),
    pytest.param(["plan", "--mesh", "2x2", "--shape", "4x4", "--from", '{"x": 0, "y": null}',
                  "--to", "[]"], "write None, not null", id="json-null-plan"),
    pytest.param(["demo", "--spmdize", "--algorithm", "cannon_comm"],
                 "meshtensor demo: error: --algorithm: with --spmdize (which rewrites a "
                 "global-view kernel), one of summa, cannon, got 'cannon_comm'",
                 id="spmdize-comm-algorithm"),
    pytest.param(["demo", "--spmdize", "--algorithm", "local"], "one of summa, cannon, got "
                 "'local'", id="spmdize-local"),
    pytest.param(["demo", "--algorithm", "summa_com"], "meshtensor demo: error: --algorithm: "
                 "one of summa_comm, cannon_comm, ksplit_comm, splitk_comm, cannon25d_comm, "
                 "local, summa, cannon, got 'summa_com'", id="algorithm-typo"),
    pytest.param(["demo", "--spmdize", "--target", "cuda"], "--spmdize runs on CPU "
                 "(--target c), got --target cuda", id="spmdize-cuda"),
])
def test_our_own_messages(argv, message, capsys):
    assert main(argv) == 2
    out, err = read(capsys)
    assert out == "" and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_mesh_value_with_a_dash_is_one_token():
    from meshtensor.cli import _values_as_one_token, build_parser
    p = build_parser()
    assert _values_as_one_token(p, ["show", "--mesh", "-2x3", "--values", "--width", "-1"]) == \
        ["show", "--mesh=-2x3", "--values", "--width=-1"]
    assert _values_as_one_token(p, ["plan", "--matrix", "-2"]) == ["plan", "--matrix", "-2"]


def test_demo_target_cuda_without_a_gpu_says_so_at_once():
    code = ("import sys, time; t0 = time.perf_counter(); from meshtensor.cli import main; "
            "rc = main(['demo', '--target', 'cuda']); "
            "print(rc, 'torch' in sys.modules, 'tilelang' in sys.modules, "
            "time.perf_counter() - t0)")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    rc, torch_loaded, tilelang_loaded, seconds = r.stdout.split()
    # the 3.6 s it took were torch's and tilelang's imports: neither happens now (a
    # wall-clock bound would only measure how busy the machine is)
    assert (rc, torch_loaded, tilelang_loaded) == ("2", "False", "False")
    assert unwrap(r.stderr) == ("meshtensor demo: error: --target cuda needs a CUDA GPU; "
                                "none is visible (no /dev/nvidia* device, or "
                                "CUDA_VISIBLE_DEVICES hides them)\n")


@pytest.mark.parametrize("files, hidden, want", [
    ([], None, False),
    (["nvidia0"], None, True),
    (["nvidiactl"], None, False),  # the driver's control node alone: no device
    (["dxg"], None, True),  # WSL's GPU
    (["nvidia0"], "", False),
    (["nvidia0"], "-1", False),
    (["nvidia0"], "0", True),
], ids=["none", "nvidia0", "ctl-only", "wsl", "hidden-empty", "hidden-minus-1", "device-0"])
def test_cuda_visible(files, hidden, want, tmp_path, monkeypatch):
    from meshtensor.cli import cuda_visible
    if sys.platform != "linux":
        pytest.skip("the /dev probe is Linux's")
    for f in files:
        (tmp_path / f).write_text("")
    if hidden is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
    assert cuda_visible(str(tmp_path)) is want


@pytest.mark.slow  # imports torch and tilelang
def test_bench_gemm_rejects_size_0_before_running(capsys, monkeypatch):
    pytest.importorskip("tilelang")
    import runpy
    bench = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gemm.py"
    monkeypatch.setattr(sys, "argv", [str(bench), "0"])
    monkeypatch.syspath_prepend(str(bench.parent))
    with pytest.raises(SystemExit) as e:  # in this process: tilelang is imported once
        runpy.run_path(str(bench), run_name="__main__")
    out = capsys.readouterr()
    assert (e.value.code, out.out) == (2, "")
    assert "bench_gemm.py: error: argument size: must be >= 1, got 0" in out.err


def test_seed_dict_is_checked_against_the_shape_rank(capsys):
    # The CLI knows the rank from --shape: a batch dim past mesh.ndim is fine, a dim
    # past the shape's rank names both numbers (not "pass ndim=", which no flag sets).
    assert main(["show", "--mesh", "2x2", "--shape", "2x2x2x8", "--sharding", '{"y": 3}']) == 0
    assert "[0:2, 0:2, 0:2, 0:4]" in capsys.readouterr().out
    assert main(["plan", "--mesh", "2x2", "--shape", "2x2x2x8", "--from", '{"y": 3}',
                 "--to", "[]"]) == 0
    capsys.readouterr()
    assert main(["show", "--mesh", "2x2", "--shape", "8x12", "--sharding", '{"x": 5}']) == 2
    assert "tensor dim 5, out of range [0, 2) for ndim=2" in read(capsys)[1]


# -- 80 columns ---------------------------------------------------------------------------
SWAP_4X4 = ["plan", "--mesh", "4x4", "--shape", "16x16", "--from", "[[0],[1]]",
            "--to", "[[1],[0]]"]
DEFAULT_OUTPUTS = {  # inputs whose output was wider than 80 columns (up to 121)
    "show-4x4": ["show", "--mesh", "4x4", "--shape", "8x12", "--sharding", "[[0],[1]]"],
    "show-values": ["show", "--mesh", "4x4", "--shape", "8x12", "--sharding", "[[0],[1]]",
                    "--values"],
    "show-3d-mesh": ["show", "--mesh", "2x2x2", "--shape", "4x8", "--sharding", "[[0],[1,2]]"],
    "show-partial": ["show", "--mesh", "4x4", "--shape", "7x7", "--sharding", "[]",
                     "--partial", "x:sum"],
    "plan-64x64": ["plan", "--mesh", "64x64", "--shape", "4096x4096", "--from", "[[0],[1]]",
                   "--to", "[]"],
    "plan-halo": ["plan", "--mesh", "4x4", "--shape", "4096x4096", "--from", "[[0],[1]]",
                  "--to", "[[0],[1]]", "--to-halo", "1,1,1,1"],
    "plan-matrix-4x4": SWAP_4X4 + ["--matrix"],
    "help": ["--help"],
    "show-help": ["show", "--help"],
    "plan-help": ["plan", "--help"],
    "demo-help": ["demo", "--help"],
    "profile-help": ["profile", "--help"],
}


def output_of(argv, capsys):
    try:
        assert main(argv) == 0
    except SystemExit as e:  # --help
        assert e.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", DEFAULT_OUTPUTS.values(), ids=DEFAULT_OUTPUTS.keys())
def test_default_output_fits_80_columns(argv, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    lines = output_of(argv, capsys).splitlines()
    assert len(lines) > 3
    wide = [line for line in lines if len(line) > 80]
    assert not wide, wide


def test_plan_matrix_wraps_receivers_into_blocks(capsys):
    out = output_of(SWAP_4X4 + ["--matrix"], capsys)
    assert "receivers (0, 0) to (1, 3):" in out and "receivers (2, 0) to (3, 3):" in out
    wide = output_of(SWAP_4X4 + ["--matrix", "--width", "130"], capsys)
    assert "receivers" not in wide and max(len(line) for line in wide.splitlines()) > 80
    # the blocks hold every cell once: 12 copies of 64 bytes, 16 x 16 - 12 dots
    for text in (out, wide):
        matrix = text.split("bytes sent")[1].split()
        assert matrix.count("64") == 12 and matrix.count(".") == 16 * 16 - 12


def test_width_is_the_terminals_when_stdout_is_one(capsys, monkeypatch):
    import os as os_
    import shutil
    from meshtensor import cli
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: os_.terminal_size((132, 40)))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert cli.output_width() == 132
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: os_.terminal_size((20, 40)))
    assert cli.output_width() == 40  # the narrowest layout
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert cli.output_width() == 80  # piped: 80 whatever COLUMNS says


@pytest.mark.parametrize("argv", [
    ["show", "--mesh", "64x64", "--shape", "1024x1024", "--sharding", "[[0],[1]]"],
    ["plan", "--mesh", "64x64", "--shape", "1024x1024", "--from", "[[0],[1]]",
     "--to", "[[1],[0]]"],
], ids=["show", "plan"])
def test_closed_pipe_ends_quietly(argv):
    """Issue 30: `meshtensor show ... | head -1` printed 'error: [Errno 32] Broken pipe'
    and exited 2. The reader here closes the pipe before the command writes a byte,
    so the write always fails: the command must end quietly with status 141, as a C
    tool killed by SIGPIPE does."""
    p = subprocess.Popen([sys.executable, "-m", "meshtensor", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == ""


def test_closed_pipe_on_help_is_quiet():
    """argparse's help swallows the failed write itself and exits 0."""
    p = subprocess.Popen([sys.executable, "-m", "meshtensor", "--help"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    assert p.stderr.read().decode() == "" and p.wait(timeout=60) in (0, 141)


@pytest.mark.parametrize("size, free, words", [
    ("100000", None, "TileLang indexes buffers with int32"),
    ("46214", None, "at most --size 46213"),
    ("40000", 24 * 2 ** 30, "needs about 107.3 GiB of memory"),
    ("4000", 2 ** 30, "at most --size 3861"),
], ids=["int32", "int32-edge", "memory", "memory-small"])
def test_demo_refuses_huge_sizes_before_building(size, free, words, capsys, monkeypatch):
    """Issue 30: `demo --size 100000` printed its header, then TVM's 'Check failed:
    value < 1LL << (dtype.bits() - 1)'; `--size 40000` ended in torch's allocation
    traceback. Both are refused before anything is built or printed."""
    from meshtensor import cli
    monkeypatch.setattr(cli, "available_memory", lambda: free)
    assert main(["demo", "--size", size]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and words in cap.err


def test_demo_size_refusal_imports_nothing_heavy():
    code = ("import sys; from meshtensor.cli import main; rc = main(['demo', '--size', "
            "'100000']); heavy = {'tilelang', 'torch', 'tvm'} & set(sys.modules); "
            "print(rc, sorted(heavy))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split("\n")[0] == "2 []", r.stdout + r.stderr


def test_available_memory_reads_meminfo_and_cgroup(tmp_path):
    from meshtensor.cli import available_memory
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    cg = tmp_path / "cg"
    cg.mkdir()
    assert available_memory(str(tmp_path / "meminfo"), str(cg)) == 2048 * 1024
    (cg / "memory.max").write_text("1048576\n")
    (cg / "memory.current").write_text("524288\n")
    assert available_memory(str(tmp_path / "meminfo"), str(cg)) == 524288
    (cg / "memory.max").write_text("max\n")
    assert available_memory(str(tmp_path / "meminfo"), str(cg)) == 2048 * 1024


@pytest.mark.parametrize("flag, name", [("--trace", "t.json"), ("--png", "g.png")])
def test_profile_output_paths_are_checked_like_show(flag, name, tmp_path, capsys):
    """Issue 30: `profile --trace /nonexistent/dir/t.json` created /nonexistent/dir
    (show and plan refuse such paths); `--trace afile/sub/t.json` gave a bare
    '[Errno 20] Not a directory'."""
    if flag == "--png":
        pytest.importorskip("matplotlib")
    deep = tmp_path / "typo" / "dir" / name
    assert main(["profile", flag, str(deep)]) == 2
    out, err = read(capsys)
    assert out == "" and not (tmp_path / "typo").exists()
    assert f"{flag}: the folder '{tmp_path / 'typo'}' does not exist" in err
    (tmp_path / "afile").write_text("")
    assert main(["profile", flag, str(tmp_path / "afile" / "sub" / name)]) == 2
    out, err = read(capsys)
    assert out == "" and f"{flag}: '{tmp_path / 'afile'}' is a file, not a folder" in err
    assert "Errno" not in err


@pytest.mark.parametrize("argv", [
    PLAN + ["--dtype", "foo"],
    ["plan", "--mesh", "2y3", "--shape", "6", "--from", "[]", "--to", "[]"],
    ["show", "--mesh", "2x3", "--shape", "6x6", "--sharding", "[[0],[1]]", "--halo",
     "[[1,1,1],[0,2]]"],
    ["demo", "--size", "100000"],
    ["profile", "--machine", "no-such-machine-name-at-all"],
], ids=["dtype", "mesh", "halo", "demo-size", "profile-machine"])
def test_errors_fit_80_columns(argv, capsys):
    """Issue 30: `--dtype foo` gave a line of about 300 characters, `--mesh 2y3` about
    100. Messages are wrapped to the width, later lines indented by two."""
    try:
        assert main(argv) == 2
    except SystemExit as e:
        assert e.code == 2
    err = capsys.readouterr().err
    assert err.startswith("meshtensor ") and "error: " in err
    assert max(map(len, err.splitlines())) <= 80, err
    assert all(ln.startswith("  ") for ln in err.splitlines()[1:])


@pytest.mark.parametrize("argv, words", [
    (["--mesh", "4y4"], "expected a square mesh like 4x4"),
    (["nofile.py:gemm"], "'nofile.py' is not a Python file"),
    (["--mesh", "32x32"], "a 32x32 mesh does not fit machine 'generic'"),
    (["--dtype", "foo"], "--dtype: unknown element type 'foo'"),
    (["--compare", "--mesh", "3x4"], "square n x n mesh"),
    (["nofile.py:gemm", "--mesh", "2y2"], "'nofile.py' is not a Python file"),
], ids=["mesh-typo", "no-file", "mesh-too-big", "dtype", "compare-not-square",
        "file-and-mesh"])
def test_profile_refuses_before_heavy_imports(argv, words):
    """Issue 30: `profile --mesh 4y4` took 4.2 s to fail, a missing kernel file 6.3 s,
    `--mesh 32x32` 9.0 s: the arguments were checked after importing TileLang."""
    code = (f"import sys; from meshtensor.cli import main; rc = main({['profile'] + argv!r}); "
            f"print(rc, sorted({{'tilelang', 'torch', 'tvm'}} & set(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.splitlines()[-1] == "2 []", r.stdout + r.stderr
    assert words in unwrap(r.stderr)


def test_smaller_messages_say_what_is_true(capsys):
    """Issue 30 item 12: `[["x","x"]]` said "used twice, by dims 0 and 0";
    `[[0],[1],[]]` was accepted silently for a 2-D shape; "a target (a4e)" was not
    explained in --help."""
    assert main(["show", "--mesh", "2x2", "--shape", "4x4", "--sharding",
                 '[["x","x"]]']) == 2
    err = read(capsys)[1]
    assert "mesh axis 'x' (0) is listed twice in split_axes[0]" in err and "0 and 0" not in err
    for argv in (["show", "--mesh", "2x2", "--shape", "4x4", "--sharding", "[[0],[1],[]]"],
                 ["plan", "--mesh", "2x2", "--shape", "4x4", "--from", "[[0],[1],[]]",
                  "--to", "[]"]):
        assert main(argv) == 2
        out, err = read(capsys)
        assert out == "" and "has 3 entries, one per tensor dim, but --shape has rank 2" in err
    assert main(["show", "--mesh", "2x2", "--shape", "4x4x1", "--sharding", "[[0],[1],[]]"]) == 0
    capsys.readouterr()
    for cmd in ("show", "plan"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "a named mesh accelerator (a target) and its mesh of cores: a4e: 4x4, " \
               "a4e-lite: 2x4" in " ".join(capsys.readouterr().out.split())
