import subprocess
import sys

import pytest

from meshtensor import Mesh, Sharding
from meshtensor.cli import main, parse_shape, parse_sharding


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
    assert "is not a literal" in capsys.readouterr().err


def test_bad_input_messages(capsys):
    assert main(["plan", "--mesh", "2y2", "--shape", "4", "--from", "[]", "--to", "[]"]) == 2
    assert "expected sizes like '4x4'" in capsys.readouterr().err
    assert main(["plan", "--mesh", "2", "--shape", "4", "--from", "[]", "--to", "[[3]]"]) == 2
    assert "out of range" in capsys.readouterr().err


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
