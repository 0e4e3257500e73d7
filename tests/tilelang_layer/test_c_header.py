"""The precompiled TileLang C header: g++ reads it, kernels compile to the same code and
results with it, and anything that stands in its way turns it off instead of failing."""
import subprocess

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402

from meshtensor.tilelang import c_header, compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang.engine import CPU_FLAGS  # noqa: E402

FLAGS = ["-O0"]  # the build is the point here, not the code's speed


def _gpp():
    found = c_header._compiler()
    if found is None:
        pytest.skip("TileLang's C++ compiler is not g++")
    return found[0]


@pytest.mark.slow
def test_gpp_reads_the_precompiled_header(tmp_path, monkeypatch):
    cxx = _gpp()
    monkeypatch.setattr(c_header, "_cache_root", lambda: tmp_path / "pch")
    assert c_header.header_flags(FLAGS) == []  # a flag set's first compile only notes it
    flags = c_header.header_flags(FLAGS)
    assert flags[0] == "-include" and flags[1].endswith("tl_common.h")
    src = tmp_path / "k.cpp"
    src.write_text('#include <tl_templates/cpp/common.h>\nextern "C" int f() { return 0; }\n')
    # -H lists each header read; "!" marks a precompiled header that was used
    out = subprocess.run([cxx, "-std=c++17", "-fPIC", "-shared", str(src),
                          "-I" + c_header._template_path(), *FLAGS, *flags, "-H",
                          "-Winvalid-pch", "-o", str(tmp_path / "k.so")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"! {flags[1]}.gch" in out.stderr, out.stderr[:2000]
    assert c_header.header_flags(FLAGS) == flags  # built once, then found


@T.prim_func
def _scale(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
    with T.Kernel(1, threads=1) as _:
        for i, j in T.grid(8, 8):
            B[i, j] = A[i, j] * 2.0 + 1.0


@pytest.mark.slow
def test_a_kernel_compiled_with_it_computes_what_it_computes_without(monkeypatch):
    import torch
    _gpp()
    seen = []
    real = c_header.header_flags
    monkeypatch.setattr("meshtensor.tilelang.engine.header_flags",
                        lambda f: seen.append(real(f)) or seen[-1])
    c_header.header_flags(FLAGS)  # noted, so that the next compile uses it
    a = torch.from_numpy(np.arange(64, dtype=np.float32).reshape(8, 8))
    got = {}
    for pch in ("1", "0"):
        monkeypatch.setenv(c_header.PCH_ENV, pch)
        b = torch.zeros(8, 8)
        compile_mesh_kernel(_scale, compile_flags=FLAGS)(a, b)
        got[pch] = b.numpy().copy()
    assert seen[0][0] == "-include" and seen[1] == []  # with it, then without
    np.testing.assert_array_equal(got["1"], got["0"])
    np.testing.assert_array_equal(got["1"], a.numpy() * 2 + 1)


def test_off_by_environment(monkeypatch):
    monkeypatch.setenv(c_header.PCH_ENV, "0")
    assert c_header.header_flags(CPU_FLAGS) == []


def test_another_compiler_turns_it_off(monkeypatch):
    monkeypatch.setattr(c_header, "_compiler", lambda: None)
    assert c_header.header_flags(CPU_FLAGS) == []


def test_a_cache_folder_it_cannot_write_turns_it_off(monkeypatch, tmp_path):
    _gpp()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(c_header, "_cache_root", lambda: blocker / "pch")
    assert c_header.header_flags(["-O1", "-DMESHTENSOR_TEST_UNWRITABLE"]) == []


def test_a_failing_build_turns_it_off_once(monkeypatch, tmp_path):
    _gpp()
    monkeypatch.setattr(c_header, "_cache_root", lambda: tmp_path / "pch")
    monkeypatch.setattr(c_header, "_FAILED", set())
    builds = []
    real = c_header._build
    monkeypatch.setattr(c_header, "_build", lambda *a: builds.append(a) or real(*a))
    for _ in range(4):
        assert c_header.header_flags(["-fno-such-flag-exists"]) == []
    assert len(builds) == 1  # noted, built once, failed, not tried again
    assert not list((tmp_path / "pch").rglob("*.gch*"))  # no half-written header left


def test_the_cache_keeps_the_newest_headers(tmp_path):
    import os
    for i in range(5):
        (tmp_path / f"k{i}").mkdir()
        gch = tmp_path / f"k{i}" / "tl_common.h.gch"
        gch.write_bytes(b"x")
        os.utime(gch, (1000 + i, 1000 + i))
    c_header._evict(tmp_path, 3)
    assert sorted(p.parent.name for p in tmp_path.glob("*/tl_common.h.gch")) == \
        ["k2", "k3", "k4"]


def test_a_change_to_any_template_header_changes_the_key(tmp_path):
    (tmp_path / "tl_templates" / "cpp").mkdir(parents=True)
    half = tmp_path / "tl_templates" / "cpp" / "half.hpp"
    half.write_text("a")
    (tmp_path / "tl_templates" / "cpp" / "common.h").write_text("#include \"half.hpp\"")
    before = c_header._key("g++", "v", ["-O0"], str(tmp_path))
    half.write_text("ab")
    assert c_header._key("g++", "v", ["-O0"], str(tmp_path)) != before
