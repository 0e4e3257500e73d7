"""The corpus: kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang) and of the older fork
(wanghz18/Tilelang-Mesh), from their tests and examples that use T.comm or
T.MeshTensor, ported by changing import lines only (tests/tilelang_layer/corpus/*.py name
each source file and commit), each run here and checked against a NumPy reference
written from the upstream's semantics, or refused with a ValueError where the upstream
itself gives the kernel no defined result (CASES says why). docs/tilelang_mesh.md has the
table; test_the_docs_table_is_this_corpus keeps them in step.

Most kernels are IR tests that write nothing to global memory: the harness observes
their on-chip buffers at the end of each block's program (corpus/harness.py). A kernel
that reads a buffer before anything writes it (an accumulator never cleared) has no
defined value there: only its defined buffers are compared.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402,F401
import torch  # noqa: E402

import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "tm_corpus_harness", pathlib.Path(__file__).parent / "corpus" / "harness.py")
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness  # (dataclasses look their module up there)
_spec.loader.exec_module(harness)
as_np, load, make_inputs, observe = harness.as_np, harness.load, harness.make_inputs, \
    harness.observe
references = harness.load("references")
gemm, rnd = references.gemm, references.rnd
from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402

FLAGS = ["-O1"]
FORK = "wanghz18/Tilelang-Mesh@cf111439"
UP = "SUNMMIO/Tilelang"


@dataclass
class Case:
    """One corpus kernel: ``build()`` makes it (after ``tm.enable(mesh, compat)``);
    ``observe`` names on-chip buffers to read back; ``check(inputs, obs, out)``
    compares with NumPy (``obs``: buffer -> (blocks, *shape); ``out``: parameter
    name -> the tensor after the call). ``refused``: the ValueError's message (a regex)
    when the upstream gives the kernel no defined result; ``why``: the table's note."""

    id: str
    source: str
    module: str
    build: Callable[[Any], Any]
    mesh: tuple = (4, 4)
    compat: str | None = None
    observe: list = field(default_factory=list)
    shapes: dict = field(default_factory=dict)
    check: Callable | None = None
    refused: str | None = None
    why: str = ""
    #: the kernel has no defined result (it reads memory nothing wrote): it must run,
    #: nothing is compared; the reason
    undefined: str = ""
    #: the inputs' random seed (another where seed 0 draws an input that leaves the
    #: kernel's work empty)
    seed: int = 0
    #: the kernel reads ``A.shape`` of a ``T.MeshTensor`` parameter (the older API)
    legacy_shape: bool = False


# -- references ----------------------------------------------------------------------------------
def _tiles(a: np.ndarray, gx: int, gy: int) -> list:
    """Block b = bx + gx * by's tile of A (rows by, columns bx)."""
    bm, bn = a.shape[0] // gy, a.shape[1] // gx
    return [a[(b // gx) * bm:(b // gx + 1) * bm, (b % gx) * bn:(b % gx + 1) * bn]
            for b in range(gx * gy)]


def _waves(nblocks: int, n: int = 16) -> list:
    """Per block: the blocks its core runs in the same wave (core c runs c, c+n, ...)."""
    return [[(b // n) * n + k for k in range(n)] for b in range(nblocks)]


def comm_reference(kind: str) -> Callable:
    """The fork's comm tests: T.Kernel(gx, gy), block b copies its tile of A, then one
    or more comm ops over the 16 cores of its wave."""
    def check(inp, obs, out):
        a = inp.arrays[0]
        gx = gy = 8
        tiles = _tiles(a, gx, gy)
        for b, wave in enumerate(_waves(64)):
            core = b % 16
            row, col = divmod(core, 4)
            if kind in ("broadcast", "api"):
                np.testing.assert_array_equal(obs["B_shared"][b], tiles[wave[6]], str(b))
            if kind == "put" and core in (10, 11):  # dst (2, 3) and its turn core (2, 2)
                np.testing.assert_array_equal(obs["B_shared"][b], tiles[wave[6]], str(b))
            if kind in ("gather", "api"):
                np.testing.assert_array_equal(obs["C_shared"][b], np.stack([tiles[w] for w in wave]))
            if kind == "api":
                np.testing.assert_array_equal(obs["R0_shared"][b],
                                              np.concatenate([tiles[w] for w in wave], axis=0))
                np.testing.assert_array_equal(obs["R1_shared"][b],
                                              np.concatenate([tiles[w] for w in wave], axis=1))
            if kind == "axis0":
                np.testing.assert_array_equal(obs["R_shared"][b],
                                              np.concatenate([tiles[w] for w in wave], axis=0))
            if kind == "last_all":
                np.testing.assert_array_equal(obs["R_shared"][b],
                                              np.concatenate([tiles[w] for w in wave], axis=1))
            if kind == "last_h":
                mine = [wave[row * 4 + j] for j in range(4)]
                np.testing.assert_array_equal(obs["R_shared"][b],
                                              np.concatenate([tiles[w] for w in mine], axis=1))
    return check


# the fork's comm tests at (256, 256, 32, 32): the tests' 8x8 grid (4 waves of the 16
# cores) with 32x32 tiles instead of 128x128 (a quarter of a second each to run)
SMALL = dict(M=256, N=256, block_M=32, block_N=32)


def _fork_comm(name, kind, obs):
    return Case(f"fork_comm_{name}", f"{FORK} testing/python/language/test_tilelang_language_"
                f"comm.py::test_comm_{name}", "fork_comm",
                lambda m: getattr(m, f"comm_{name}")(**SMALL), observe=obs,
                check=comm_reference(kind))


CASES: list[Case] = [
    _fork_comm("python_api", "api", ["B_shared", "C_shared", "R0_shared", "R1_shared"]),
    _fork_comm("broadcast_lower", "broadcast", ["B_shared"]),
    _fork_comm("put_lower", "put", ["B_shared"]),
    _fork_comm("all_gather_lower", "gather", ["C_shared"]),
    _fork_comm("all_gather_axis0_all_lower", "axis0", ["R_shared"]),
    _fork_comm("all_gather_axis_last_horizontal_lower", "last_h", ["R_shared"]),
    _fork_comm("all_gather_axis_last_all_lower", "last_all", ["R_shared"]),
]


# -- the older fork's other kernels --------------------------------------------------------------
def _fork(id_, path, build, **kw):
    return Case(f"fork_{id_}", f"{FORK} {path}", "fork_kernels", build, **kw)


SKELETON = "testing/python/target/test_sunmmio_codegen_skeleton.py"
SYNC = "testing/python/transform/test_tilelang_transform_inject_sunmmio_sync.py"
DATAPATH = "testing/python/transform/test_tilelang_transform_legalize_sunmmio_datapath.py"


def _comm_zeros(n: int) -> Callable:
    """Everything cleared, then sent (on 4x4, ``n x n`` tiles): zeros wherever a
    transfer lands (the other cores' remote buffers are never written)."""
    def check(inp, obs, out):
        z = np.zeros((n, n), np.float32)
        for core in range(16):
            row, col = divmod(core, 4)
            np.testing.assert_array_equal(obs["A_remote_1"][core], z)
            if row == 0:
                np.testing.assert_array_equal(obs["A_remote_2"][core], z)
            if col == 0:
                np.testing.assert_array_equal(obs["A_remote_3"][core], z)
            for name, cores in (("B_remote_1", (10, 11)), ("B_remote_2", (7,)),
                                ("B_remote_3", (14,))):
                if core in cores:
                    np.testing.assert_array_equal(obs[name][core], z)
            for name in ("C_allgather_1", "C_allgather_2", "C_allgather_3"):
                assert not obs[name][core].any(), (name, core)
    return check


check_func_comm = _comm_zeros(32)


def check_broadcast_kernel(inp, obs, out):
    """Row 0's blocks (by = 0) get block (0, 0)'s tile of A; the other rows' B_shared is
    never written (their part of B is undefined)."""
    a = inp.arrays[0]
    for bx in range(4):
        np.testing.assert_array_equal(out["B"][0:32, bx * 32:bx * 32 + 32], a[0:32, 0:32])


def check_broadcast_from_dram(inp, obs, out):
    """Row 0 (by = 0) receives A from DRAM (through core (0, 0)), then C's row block is
    A times the sum of B's row blocks of its column (the kernel multiplies the same A by
    each K step); the other rows' A_shared is never written."""
    a, b = inp.arrays[0], inp.arrays[1]
    bsum = sum(b[k * 32:k * 32 + 32] for k in range(4))
    np.testing.assert_array_equal(out["C"][0:32], (a @ bsum).astype(np.float16))


def check_put_from_dram(inp, obs, out):
    """Core (1, 1) gets A from DRAM through core (0, 0), and so does the turn core
    (1, 0): blocks (bx, by) = (1, 1) and (0, 1)."""
    a, b = inp.arrays[0], inp.arrays[1]
    bsum = sum(b[k * 32:k * 32 + 32] for k in range(4))
    want = (a @ bsum).astype(np.float16)
    np.testing.assert_array_equal(out["C"][32:64, 0:64], np.concatenate([want[:, 0:32],
                                                                         want[:, 32:64]], 1))


def check_gemm(inp, obs, out):
    np.testing.assert_array_equal(out["C"], inp.arrays[0] @ inp.arrays[1])


def check_sync_kernel(inp, obs, out):
    """Row 0 ends with D = E = zeros but [0, 0] = 10 (ten rounds of a row broadcast and
    an increment); the rest of the kernel reads buffers nothing writes."""
    want = np.zeros((1024, 1024), np.float32)
    want[0, 0] = 10
    for core in range(4):
        np.testing.assert_array_equal(obs["D_shared"][core], want)
        np.testing.assert_array_equal(obs["E_shared"][core], want)


CASES += [
    _fork("skeleton_func_comm_kernel", f"{SKELETON}::func_comm_kernel",
          lambda m: m.func_comm_kernel(128, 128, 128, 32, 32, 32),
          observe=["A_remote_1", "A_remote_2", "A_remote_3", "B_remote_1", "B_remote_2",
                   "B_remote_3", "C_allgather_1", "C_allgather_2", "C_allgather_3"],
          shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)}, check=check_func_comm),
    _fork("inject_sync_broadcast_kernel", f"{SYNC}::broadcast_kernel",
          lambda m: m.broadcast_kernel(128, 128, 32, 32), check=check_broadcast_kernel),
    _fork("inject_sync_if", f"{SYNC}::test_inject_sunmmio_sync_if",
          lambda m: m.inject_sync_if_kernel(128, 128, 128, 32, 32, 32),
          undefined="T.gemm accumulates into C_shared, which nothing writes first; the "
                    "broadcast sends it"),
    _fork("inject_sync_loop", f"{SYNC}::test_inject_sunmmio_sync_loop",
          lambda m: m.inject_sync_loop_kernel(128, 128, 32, 32),
          undefined="the first broadcast sends C_shared, which nothing writes first"),
    _fork("datapath_broadcast_from_dram", f"{DATAPATH}::gemm_broadcast_from_dram",
          lambda m: m.gemm_broadcast_from_dram(128, 128, 128, 32, 32, 32)["main"],
          check=check_broadcast_from_dram),
    _fork("datapath_put_from_dram", f"{DATAPATH}::gemm_put_from_dram",
          lambda m: m.gemm_put_from_dram(128, 128, 128, 32, 32, 32)["main"],
          check=check_put_from_dram),
    _fork("datapath_allgather_from_dram", f"{DATAPATH}::allgather_dram_to_asram",
          lambda m: m.allgather_dram_to_asram(32, 32)["main"],
          refused=r"involves cores \[\(0, 1\), \(0, 2\), \(0, 3\)\], which run no block of "
                  r"the launch grid \(1, 1\)",
          why="T.Kernel(1, 1) on 16 cores: one program, yet an all_gather over a row whose "
              "other cores run no block (on the chip the op never completes)"),
    _fork("example_sunmmio_gemm", "examples/gemm/sunmmio_example_gemm.py::matmul_persistent",
          lambda m: m.matmul_persistent(256, 256, 256, 32, 32, 16, 2),
          shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)}, check=check_gemm),
]


# -- SUNMMIO's TileLang ---------------------------------------------------------------------------
UP_COMM = "SUNMMIO/Tilelang@38dd2c6d testing/python/language/test_tilelang_language_comm.py"


def _up_comm(name, kind, obs):
    """The current upstream's comm tests hold the fork's kernels unchanged (the same
    text; only the IR they expect differs)."""
    return Case(f"upstream_comm_{name}", f"{UP_COMM}::test_comm_{name}", "fork_comm",
                lambda m: getattr(m, f"comm_{name}")(**SMALL), observe=obs,
                check=comm_reference(kind))


def check_summa_sharded(inp, obs, out):
    """C = A @ B (the SUMMA's K tiles cycle over the mesh's columns and rows)."""
    want = inp.arrays[0] @ inp.arrays[1]
    np.testing.assert_array_equal(out["C"], want)


def check_pipeline_comm(inp, obs, out):
    """Every core's tile of its 1x1 per-core domain: core 0's is tile (0, 0), the
    others name tiles past their domain (their copies read and write nothing), yet
    every core runs the comm ops (SUNMMIO's single wave has no guard). All sources are
    cleared: every buffer a transfer lands in holds zeros."""
    z = np.zeros((64, 64), np.float32)
    for core in range(16):
        row, col = divmod(core, 4)
        np.testing.assert_array_equal(obs["A_remote_1"][core], z)
        if row == 0:
            np.testing.assert_array_equal(obs["A_remote_2"][core], z)
        if col == 0:
            np.testing.assert_array_equal(obs["A_remote_3"][core], z)
        assert not obs["C_allgather_1"][core].any() and not obs["C_allgather_2"][core].any()


def check_pipeline_overall(inp, obs, out):
    """Each core multiplies its own shards' tiles (the test checks IR, not a GEMM):
    core (0, 0) names tile (0, 0) of its 32x32 shards, the rest tiles past them.
    C_remote of row 0 is core (0, 0)'s A B + Bias; only core (0, 0)'s tile lands in C."""
    a, b, bias, c0 = inp.arrays[:4]
    want = a[0:32, 0:32] @ b[0:32, 0:32] + bias[0:32, 0:32]
    np.testing.assert_array_equal(out["C"][0:32, 0:32], want)
    rest = np.ones(c0.shape, bool)
    rest[0:32, 0:32] = False
    np.testing.assert_array_equal(out["C"][rest], c0[rest])


CASES += [
    _up_comm("python_api", "api", ["B_shared", "C_shared", "R0_shared", "R1_shared"]),
    _up_comm("broadcast_lower", "broadcast", ["B_shared"]),
    _up_comm("put_lower", "put", ["B_shared"]),
    _up_comm("all_gather_lower", "gather", ["C_shared"]),
    _up_comm("all_gather_axis0_all_lower", "axis0", ["R_shared"]),
    _up_comm("all_gather_axis_last_horizontal_lower", "last_h", ["R_shared"]),
    _up_comm("all_gather_axis_last_all_lower", "last_all", ["R_shared"]),
    Case("upstream_comm_buffer_like_region_python_api",
         f"{UP_COMM}::test_comm_buffer_like_region_python_api", "upstream_kernels",
         lambda m: m.comm_buffer_like_region_python_api(),
         refused=r"involves cores \[\(0, 1\), \(0, 2\), \(0, 3\)\], which run no block of "
                 r"the launch grid \(1,\)",
         why="T.Kernel(1) on 16 cores: one program, yet comm ops over a row whose other "
             "cores run no block (on the chip the ops never complete)"),
    Case("upstream_summa_opt_validate",
         "SUNMMIO/Tilelang@3cb93397 testing/python/sunmmio/codegen/test_summa_opt_validate.py"
         "::summa_matmul", "upstream_kernels", lambda m: m.summa_matmul_opt_validate(),
         compat="2025", shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)},
         check=check_summa_sharded),
    Case("upstream_summa_compile_pipeline",
         "SUNMMIO/Tilelang@48cff264 testing/python/compile_pipeline/test_summa.py::summa_matmul",
         "upstream_kernels", lambda m: m.summa_matmul_pipeline(128, 128, 128, 32, 32, 32),
         check=check_summa_sharded),
    Case("upstream_mesh_matmul_new",
         "SUNMMIO/Tilelang@3b5993cb testing/python/transform/sunmmio_mesh_kernel_new_syntax_"
         "reference.py::mesh_matmul_new", "upstream_kernels",
         lambda m: m.mesh_matmul_new(256, 256, 256, block_M=64, block_N=64),
         shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)},
         check=check_summa_sharded),
    Case("fork_pipeline_comm", "wanghz18/Tilelang-Mesh@b5c29b04 testing/python/compile_pipeline/"
         "test_comm.py::kernel_comm", "fork_pipeline",
         lambda m: m.kernel_comm(256, 256, 256, 64, 64, 64),
         observe=["A_remote_1", "A_remote_2", "A_remote_3", "C_allgather_1", "C_allgather_2"],
         shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)}, check=check_pipeline_comm),
    Case("fork_pipeline_overall", "wanghz18/Tilelang-Mesh@b5c29b04 testing/python/"
         "compile_pipeline/test_overall.py::kernel_overall", "fork_pipeline",
         lambda m: m.kernel_overall(128, 128, 128, 64, 64, 32),
         shapes={"A": (128, 128), "B": (128, 128), "Bias": (128, 128), "C": (128, 128)},
         check=check_pipeline_overall),
]


# -- the older fork's bfloat16 GEMMs (LegalizeSunmmioGemm tests) ---------------------------------
LEGALIZE = "testing/python/transform/test_tilelang_transform_sunmmio_legalize_gemm.py"
GEMM_ARGS = (128, 128, 128, 32, 32, 32)  # 32x32 shards on 4x4: each core's tiles fit its shard


def _shard(x: np.ndarray, core: int) -> np.ndarray:
    r, c = divmod(core, 4)
    h, w = x.shape[0] // 4, x.shape[1] // 4
    return x[r * h:(r + 1) * h, c * w:(c + 1) * w]


def _per_core(fn: Callable[[int], np.ndarray], shape=(128, 128)) -> np.ndarray:
    out = np.zeros(shape, np.float32)
    for core in range(16):
        r, c = divmod(core, 4)
        h, w = shape[0] // 4, shape[1] // 4
        out[r * h:(r + 1) * h, c * w:(c + 1) * w] = fn(core)
    return out


def _bf16_acc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """T.gemm into a bfloat16 accumulator: each product and each sum rounded to
    bfloat16, k in order (TileLang's scalar GEMM)."""
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    a, b = a.astype(bf), b.astype(bf)
    acc = np.zeros((a.shape[0], b.shape[1]), bf)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
    return acc.astype(np.float32)


def _local(x, y):
    return lambda core: _shard(x, core) @ _shard(y, core)


def legalize_check(kind: str) -> Callable:
    def check(inp, obs, out):
        arr = dict(zip(out, inp.arrays))
        if kind == "global":
            np.testing.assert_array_equal(out["C"], arr["A"] @ arr["B"])
        elif kind == "local":
            np.testing.assert_array_equal(out["C"], _per_core(_local(arr["A"], arr["B"])))
        elif kind == "local_bf16":
            np.testing.assert_array_equal(out["C"], _per_core(
                lambda c: _bf16_acc(_shard(arr["A"], c), _shard(arr["B"], c))))
        elif kind == "two_writers":
            np.testing.assert_array_equal(out["C"], _per_core(_local(arr["A"], arr["B"])))
            np.testing.assert_array_equal(out["C2"], _per_core(_local(arr["A2"], arr["B"])))
        elif kind == "two_consumers":
            np.testing.assert_array_equal(out["C"], _per_core(_local(arr["A"], arr["B"])))
            np.testing.assert_array_equal(out["C2"], _per_core(_local(arr["A"], arr["B"])))
        elif kind == "two_consumers_b2":
            np.testing.assert_array_equal(out["C"], _per_core(_local(arr["A"], arr["B"])))
            np.testing.assert_array_equal(out["C2"], _per_core(_local(arr["A"], arr["B2"])))
        elif kind == "writers_by_core":
            np.testing.assert_array_equal(out["C"], _per_core(
                lambda c: _shard(arr["A2"] if c == 0 else arr["A"], c) @ _shard(arr["B"], c)))
        elif kind == "flash":
            def o(c):
                s_ = _bf16_acc(_shard(arr["Q"], c), _shard(arr["Kt"], c))
                return s_ @ _shard(arr["V"], c)
            np.testing.assert_array_equal(out["O"], _per_core(o))
    return check


def _lg(name, kind=None, undefined=""):
    shapes = {n: (128, 128) for n in ("A", "A2", "B", "B2", "C", "C2", "Q", "Kt", "V", "O")}
    extra = dict(check=legalize_check(kind)) if kind else dict(undefined=undefined)
    return _fork(f"legalize_gemm_{name}", f"{LEGALIZE}::bf16_gemm_{name}".replace(
        "bf16_gemm_flash", "bf16_flash"), lambda m: getattr(m, (
            "bf16_flash_attention_shaped" if name == "flash_attention_shaped"
            else f"bf16_gemm_{name}"))(*GEMM_ARGS), shapes=shapes, **extra)


CASES += [
    _lg("with_allgather", "global"),
    _lg("with_copy_to_asram", undefined="T.gemm reads A_dist's other cores' slots, which "
                                         "nothing writes (only slot 0 is copied)"),
    _lg("with_hoisted_copy_writer", "local"),
    _lg("with_hoisted_copy_writer_bf16_acc", "local_bf16"),
    _lg("with_two_independent_hoisted_writers", "two_writers"),
    _lg("with_hoisted_writer_dirty_source", "local"),
    _lg("with_hoisted_allgather", "global"),
    _lg("with_hoisted_allgather_dirty_source", "global"),
    _lg("multi_consumer_groupable", "two_consumers"),
    _lg("multi_consumer_non_groupable", "two_consumers_b2"),
    _lg("flash_attention_shaped", "flash"),
    _lg("no_reaching_writer", undefined="T.gemm reads A_shared, which nothing writes"),
    _lg("multiple_writers", "writers_by_core"),
    _lg("diverging_scopes", "local"),
]
for _c in CASES[-14:]:
    _c.module = "fork_legalize_gemm"



# -- the older fork's newest branch (dev/codegen): its tests' and examples' kernels -------------
FORK_NEW = "wanghz18/Tilelang-Mesh@52fed911"


def _fn(id_, module, path, build, **kw):
    return Case(f"fork_{id_}", f"{FORK_NEW} {path}", module, build, **kw)


def check_unchanged(inp, obs, out):
    """A kernel without T.Kernel runs nothing on the cores: every tensor is as it was."""
    for (name, got), want in zip(out.items(), inp.arrays):
        np.testing.assert_array_equal(got, want, name)


def check_gemm_f16(inp, obs, out):
    """C = A @ B accumulated in float32, stored as float16 (one core runs every block)."""
    want = gemm(np.zeros((128, 128), np.float32), inp.arrays[0], inp.arrays[1])
    np.testing.assert_array_equal(out["C"], rnd(want, "float16"))


def check_roundtrip(inp, obs, out):
    """Every core copies the replicated A into its RSRAM and back out to its B."""
    np.testing.assert_array_equal(out["B"], inp.arrays[0])


ALLREDUCE = "testing/python/ops/test_tilelang_ops_sunmmio_allreduce.py::allreduce_kernel"
MESH_TENSOR = ("testing/python/language/test_tilelang_language_sunmmio_mesh_tensor.py::"
               "test_mesh_tensor_in_kernel")


def _allreduce(direction, cores):
    return _fn(f"allreduce_{direction}", "fork_allreduce", ALLREDUCE,
               lambda m: m.allreduce_kernel(direction)["main"],
               refused=rf"T.comm.all_reduce \(comm op #0\) involves cores \[{cores}",
               why="T.Kernel(1) on 16 cores: one program, yet an all_reduce over cores that "
                   "run no block (on the chip the op never completes)")


CASES += [
    _allreduce("all", r"\(0, 1\), \(0, 2\), \(0, 3\), \(1, 0\)"),
    _allreduce("h", r"\(0, 1\), \(0, 2\), \(0, 3\)\]"),
    _allreduce("v", r"\(1, 0\), \(2, 0\), \(3, 0\)\]"),
    _fn("mesh_tensor_in_kernel", "fork_mesh_tensor_kernel", MESH_TENSOR,
        lambda m: m.test_mesh_tensor_in_kernel(), mesh=(2, 2),
        shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)}, check=check_unchanged),
    _fn("target_binding", "fork_target_binding",
        "testing/python/utils/test_target.py::test_sunmmio_target_binding",
        lambda m: m.test_sunmmio_target_binding(), shapes={"A": (1024, 1024)},
        check=check_unchanged),
    _fn("example_gemm_with_mesh_tensor", "fork_example_gemm_mesh_tensor",
        "examples/gemm/example_gemm_with_mesh_tensor.py::matmul",
        lambda m: m.matmul(128, 128, 128, 32, 32, 32), mesh=(1, 1),
        shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)}, check=check_gemm_f16),
    _fn("layout_transform_roundtrip", "fork_layout_roundtrip",
        "testing/python/target/test_sunmmio_codegen_layout_transform_opt_validate.py::"
        "layout_transform_roundtrip_kernel", lambda m: m.layout_transform_roundtrip_kernel(),
        shapes={"A": (128, 128), "B": (128, 128)}, check=check_roundtrip),
]


COMM_DEV = "testing/python/language/test_tilelang_language_comm.py::"
LAYOUT_T = "testing/python/transform/test_tilelang_transform_sunmmio_layout_transform.py::"


def check_copied(inp, obs, out):
    """Block 0 (core 0) copies the replicated A through RSRAM to B; the idle cores'
    copies are not the result."""
    np.testing.assert_array_equal(out["B"], inp.arrays[0])


def check_reduce_f16(inp, obs, out):
    """Out = A summed over its last axis, float16, from 0 one element at a time."""
    a = inp.arrays[0]
    want = references.row_sum(a.reshape(-1, a.shape[2]), "float16").reshape(a.shape[:2])
    np.testing.assert_array_equal(out["Out"], want)


def _dyn_core(name, direction):
    return _fn(f"comm_{name}", "fork_comm_dev", f"{COMM_DEV}test_comm_{name}",
               lambda m: getattr(m, f"test_comm_{name}")(),
               refused=r"cores \(0, 0\) and \(0, 1\) both broadcast to \[\(0, 0\), "
                       rf"\(0, 1\), \(0, 2\), \(0, 3\){direction}",
               why="every block broadcasts from its own core: two senders to one "
                   "destination in one op (the chip defines no winner)")


CASES += [
    _fn("comm_buffer_like_region_python_api", "fork_comm_dev",
        f"{COMM_DEV}test_comm_buffer_like_region_python_api",
        lambda m: m.test_comm_buffer_like_region_python_api(),
        refused=r"involves cores \[\(0, 1\), \(0, 2\), \(0, 3\)\], which run no block of "
                r"the launch grid \(1,\)",
        why="T.Kernel(1) on 16 cores: one program, yet comm ops over a row whose other "
            "cores run no block (on the chip the ops never complete)"),
    _dyn_core("dynamic_core_python_api", r"\] in one"),
    _dyn_core("dynamic_core_lower", r", \(1, 0\)"),
    _fn("layout_transform_mismatched_copy", "fork_layout_transform",
        f"{LAYOUT_T}mismatched_copy_kernel", lambda m: m.mismatched_copy_kernel()["main"],
        shapes={"A": (128, 128), "B": (128, 128)}, check=check_copied),
    _fn("layout_transform_zz_dram", "fork_layout_transform", f"{LAYOUT_T}zz_dram_kernel",
        lambda m: m.zz_dram_kernel()["main"], shapes={"A": (128, 128), "B": (128, 128)},
        check=check_copied),
    _fn("layout_transform_matched_copy", "fork_layout_transform",
        f"{LAYOUT_T}matched_copy_kernel", lambda m: m.matched_copy_kernel()["main"],
        shapes={"A": (128, 128)}, check=check_unchanged),
    _fn("layout_transform_zz_dram_reduce", "fork_layout_transform",
        f"{LAYOUT_T}zz_dram_reduce_kernel", lambda m: m.zz_dram_reduce_kernel()["main"],
        shapes={"A": (3, 256, 256), "Out": (3, 256)}, check=check_reduce_f16),
]


GLOBAL_LAYOUT = "testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::"
DYNAMIC = "testing/python/target/test_sunmmio_codegen_base_dynamic_opt_validate.py::"
NO_CLEAR = "T.gemm accumulates into C_shared, which nothing writes first"
GL_SHAPES = {"A": (64, 64), "B": (64, 64), "C": (64, 64)}
DYN_SHAPES = {"A": (128, 32), "B": (32, 128), "C": (128, 128)}

CASES += [
    _fn("global_layout_populated", "fork_global_layout",
        f"{GLOBAL_LAYOUT}test_global_buffer_layout_populated_for_sunmmio",
        lambda m: m.test_global_buffer_layout_populated_for_sunmmio(), mesh=(2, 2),
        shapes=GL_SHAPES, undefined=NO_CLEAR),
    _fn("global_layout_row_major_values", "fork_global_layout",
        f"{GLOBAL_LAYOUT}test_row_major_global_layout_values",
        lambda m: m.test_row_major_global_layout_values(), mesh=(2, 2), shapes=GL_SHAPES,
        undefined=NO_CLEAR),
    _fn("global_layout_dynamic_shape", "fork_global_layout",
        f"{GLOBAL_LAYOUT}test_dynamic_shape_global_buffer_layout",
        lambda m: m.test_dynamic_shape_global_buffer_layout(), mesh=(2, 2), shapes=GL_SHAPES,
        refused=r"T.MeshTensor output 'C' .* is replicated, but the copies of cores \(0, 0\) "
                r"and \(0, 1\) disagree",
        why="C is replicated on the 2x2 mesh, yet each core writes only its own block's "
            "tile of its copy: the copies differ, so C has no one value"),
    _fn("dynamic_allocate_copy_mma", "fork_dynamic",
        f"{DYNAMIC}dynamic_allocate_copy_mma_kernel",
        lambda m: m.dynamic_allocate_copy_mma_kernel(), shapes=DYN_SHAPES, undefined=NO_CLEAR),
    _fn("dynamic_zz_allocate_copy_mma", "fork_dynamic",
        f"{DYNAMIC}dynamic_zz_allocate_copy_mma_kernel",
        lambda m: m.dynamic_zz_allocate_copy_mma_kernel(), shapes=DYN_SHAPES,
        undefined=NO_CLEAR),
]


def check_causal_attention(inp, obs, out):
    """The GQA example with groups=1: core (r, c) holds batch r, head c; each 64-row
    query tile attends causally to the key blocks up to its own (attention_tile), the
    output rounded to bfloat16."""
    q, k, v = (rnd(x, "bfloat16") for x in inp.arrays[:3])
    nb, seq, nh, dim = q.shape
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    want = np.zeros(q.shape, np.float32)
    rows = np.arange(64)[:, None]
    for b in range(nb):
        for h in range(nh):
            for bx in range(seq // 64):
                def scores(kk, b=b, h=h, bx=bx):
                    mask = np.where(bx * 64 + rows >= kk * 64 + rows.T, 0, -np.inf)
                    return gemm(mask.astype(np.float32), q[b, bx * 64:bx * 64 + 64, h],
                                k[b, kk * 64:kk * 64 + 64, h].T)
                o, _, _ = references.attention_tile(
                    scores, lambda kk, b=b, h=h: v[b, kk * 64:kk * 64 + 64, h], bx + 1, scale)
                want[b, bx * 64:bx * 64 + 64, h] = rnd(o, "bfloat16")
    np.testing.assert_array_equal(out["Output"], want)


QKV = {n: (4, 128, 4, 64) for n in ("Q", "K", "V", "Output")}
CASES += [
    _fn("example_sunmmio_gemm_dev", "fork_example_gemm",
        "examples/gemm/sunmmio_example_gemm.py::matmul_persistent",
        lambda m: m.matmul_persistent(256, 256, 256, 32, 32, 32, 2),
        shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)}, check=check_gemm),
    _fn("example_gqa_fwd_bhsd", "fork_examples",
        "examples/flash_attention/sunmmio_example_gqa_fwd_bhsd.py::flashattn",
        lambda m: m.flashattn(4, 4, 128, 64), shapes=QKV, check=check_causal_attention),
]


def _cross_tiles(a, b, c0, step):
    """The fork's cross_mesh_dim=0 GEMMs at 128^3, 32^3 tiles on 2x2: each core holds
    32 rows of A, B and C; block (bx, by) runs on core bx and only by = 0 names a tile
    inside the core's shard (the others read zeros and write nothing), and only its
    first K tile is inside B's 32 rows. Core c's tile (0, c) of C is step(A_c's tile,
    B_c's tiles); the rest of C is as the caller gave it."""
    want = c0.copy()
    for c in range(4):
        rows = slice(32 * c, 32 * c + 32)
        at = [references.tile(a[rows], (0, 32 * k), (32, 32)) for k in range(4)]
        bt = [references.tile(b[rows], (32 * k, 32 * c), (32, 32)) for k in range(4)]
        want[rows, 32 * c:32 * c + 32] = step(at, bt)
    return want


def _plain(at, bt):
    acc = np.zeros((32, 32), np.float32)
    for x, y in zip(at, bt):
        acc = gemm(acc, x, y)
    return acc


def _aliased(at, bt):
    """T.gemm(A, B, C); T.gemm(C, B, C); T.gemm(A, C, C): each reads its operands
    before it writes C, in C's dtype."""
    acc = np.zeros((32, 32), np.float32)
    for x, y in zip(at, bt):
        acc = gemm(acc, x, y)
        acc = gemm(acc, acc, y)
        acc = gemm(acc, x, acc)
    return acc


def cross_check(step):
    def check(inp, obs, out):
        np.testing.assert_array_equal(out["C"], _cross_tiles(*inp.arrays[:3], step))
    return check


def check_sliced_conflict(inp, obs, out):
    """Block 0 (core 0): the T.gemms that write A_shared and B_shared (in float16, from
    operands read first); C_shared accumulates from memory nothing wrote (not compared)."""
    a, b = (rnd(x[0:32, 0:32], "float16") for x in inp.arrays[:2])
    b2 = b.copy()
    b2[0:16, 0:16] = gemm(b[0:16, 0:16], a[0:16, 0:16], b[0:16, 4:20], "float16")
    a2 = a.copy()
    a2[0:16, 0:16] = gemm(a[0:16, 0:16], a[0:16, 0:16], b2[0:16, 4:20], "float16")
    np.testing.assert_array_equal(obs["A_shared"][0], a2)
    np.testing.assert_array_equal(obs["B_shared"][0], b2)


SRAM = "testing/python/transform/test_tilelang_transform_sunmmio_infer_sram_scope.py::"
S128 = {"A": (128, 128), "B": (128, 128), "C": (128, 128)}
CASES += [
    _fn("pipeline_pass_matmul", "fork_pipeline_pass",
        "testing/python/transform/test_tilelang_transform_sunmmio_pipeline.py::matmul",
        lambda m: m.matmul(128, 128, 128, 32, 32, 32, 2), mesh=(2, 2), shapes=S128,
        check=cross_check(_plain)),
    _fn("sram_scope_matmul", "fork_sram_scope", f"{SRAM}matmul",
        lambda m: m.matmul(128, 128, 128, 32, 32, 32), mesh=(2, 2), shapes=S128,
        check=cross_check(_plain)),
    _fn("sram_scope_auto_insert_copy_matmul", "fork_sram_scope",
        f"{SRAM}auto_insert_copy_matmul",
        lambda m: m.auto_insert_copy_matmul(128, 128, 128, 32, 32, 32), mesh=(2, 2),
        shapes=S128, check=cross_check(_aliased)),
    _fn("sram_scope_sliced_conflict_matmul", "fork_sram_scope",
        f"{SRAM}sliced_conflict_matmul", lambda m: m.sliced_conflict_matmul(), mesh=(2, 2),
        observe=["A_shared", "B_shared"], shapes=S128, check=check_sliced_conflict),
]


def check_datapath_copy(inp, obs, out):
    """cross_mesh_dim=0 on 2x2: core c holds C's rows 32c..32c+31; block (bx, by) runs
    on core bx + 2 by. Each K step copies the 64x64 tile at (64 by, 64 ko) of the shard
    (zeros past its 32 rows) into the SRAMs and back to C (C is as it was), then two
    sub-tiles of C_shared over A_shared and B_shared; observed after the last step."""
    c = inp.arrays[0]
    np.testing.assert_array_equal(out["C"], c)
    for b in range(4):
        t = references.tile(c[32 * b:32 * b + 32], (b // 2 * 64, 64), (64, 64))
        a_t, b_t = t.copy(), t.copy()
        a_t[24:40, 8:40] = t[8:24, 16:48]
        b_t[40:64, 0:8] = t[8:32, 48:56]
        np.testing.assert_array_equal(obs["D_shared"][b], t)
        np.testing.assert_array_equal(obs["A_shared"][b], a_t)
        np.testing.assert_array_equal(obs["B_shared"][b], b_t)


def check_offset_region(inp, obs, out):
    """Each core (x=1, y=0 on 4x4: a 128x128 shard) copies, for by, bx in 8x8, the 32x32
    region its index expressions name from A through A_rsram to B; the part of a
    region past the shard is neither read nor written."""
    a, want = inp.arrays[0], inp.arrays[1].copy()
    for core in range(16):
        r, c = divmod(core, 4)
        sa, sb = (x[128 * r:128 * r + 128, 128 * c:128 * c + 128] for x in (a, want))
        for by in range(8):
            for bx in range(8):
                s, mod = bx + by, ((bx + by) * 3 + 1) // 2 % 7
                lt, le = bx < by + 2, by <= bx + 1
                row_cond = (lt and le) or (bx != by and not (lt and le))
                col_cond = bx > by - 1 or by >= bx - 1
                rd = (min(mod, 7) if bx == by else min(mod + 1, 7)) if row_cond \
                    else max(bx - by, 0)
                cd = (s * 5) % 11 if col_cond else min(by + 3, 7)
                r0, c0 = by * 64 + 8 + rd, bx * 64 + 8 + cd
                sb[r0:r0 + 32, c0:c0 + 32] = sa[r0:r0 + 32, c0:c0 + 32]
    np.testing.assert_array_equal(out["B"], want)


def check_summa_cyclic(inp, obs, out):
    """The dev/codegen SUMMA: K tile k comes from column (row) k % 4 of the mesh; its
    T.gemm(..., transpose_B=True) multiplies by the square B panel transposed:
    C_ij = sum_k A_ik @ B_kj^T (32x32 blocks)."""
    a, b = inp.arrays[:2]
    blk = lambda x, i, j: x[32 * i:32 * i + 32, 32 * j:32 * j + 32]  # noqa: E731
    want = np.block([[sum(blk(a, i, k) @ blk(b, k, j).T for k in range(4)) for j in range(4)]
                     for i in range(4)])
    np.testing.assert_array_equal(out["C"], want)


def check_mma3(inp, obs, out):
    """M = N = K = 16 on 4x4: 4x4 shards. The single persistent tile runs on every core
    (decision 145); only the first 128x32 / 32x128 tiles meet the shard, so core c's C
    is its A @ B in float16 (the other two T.gemms add zero products)."""
    a, b = inp.arrays[:2]
    want = np.zeros((16, 16), np.float32)
    for core in range(16):
        s = (slice(4 * (core // 4), 4 * (core // 4) + 4), slice(4 * (core % 4), 4 * (core % 4) + 4))
        want[s] = gemm(np.zeros((4, 4), np.float32), a[s], b[s], "float16")
    np.testing.assert_array_equal(out["C"], want)


COPY_EXPR = "testing/python/target/test_sunmmio_codegen_allocate_copy_expr_opt_validate.py::"
CASES += [
    _fn("datapath_copy", "fork_datapath_copy",
        "testing/python/ops/test_tilelang_ops_sunmmio_datapath.py::copy",
        lambda m: m.copy(128, 64, 64, 64)["main"], mesh=(2, 2), shapes={"C": (128, 128)},
        observe=["A_shared", "B_shared", "D_shared"], check=check_datapath_copy),
    _fn("copy_expr_basic_allocate_copy_mma", "fork_copy_expr",
        f"{COPY_EXPR}basic_allocate_copy_mma_kernel",
        lambda m: m.basic_allocate_copy_mma_kernel(),
        shapes={"A": (32, 32), "B": (32, 32), "C": (32, 32)}, undefined=NO_CLEAR),
    _fn("copy_expr_allocate_dma_copy_plus", "fork_copy_expr",
        f"{COPY_EXPR}allocate_dma_copy_kernel_plus",
        lambda m: m.allocate_dma_copy_kernel_plus(),
        shapes={"A": (512, 256), "C": (512, 512)}, undefined=NO_CLEAR),
    _fn("copy_expr_offset_region_copy_plus", "fork_copy_expr",
        f"{COPY_EXPR}offset_region_copy_kernel_plus",
        lambda m: m.offset_region_copy_kernel_plus(),
        shapes={"A": (512, 512), "B": (512, 512)}, check=check_offset_region),
    _fn("matmul_persistent_opt_validate", "fork_matmul_opt_validate",
        "testing/python/target/test_sunmmio_codegen_matmul_persistent_opt_validate.py::"
        "matmul_persistent_kernel", lambda m: m.matmul_persistent_kernel(), shapes=S128,
        check=check_gemm),
    _fn("codegen_gemm_matmul_persistent", "fork_codegen_gemm",
        "testing/python/target/test_sunmmio_codegen_gemm.py::matmul_persistent_kernel",
        lambda m: m.matmul_persistent_kernel(), shapes=S128, check=check_gemm),
    _fn("codegen_summa", "fork_codegen_summa",
        "testing/python/target/test_sunmmio_codegen_summa_opt_validate.py::summa_matmul",
        lambda m: m.summa_matmul(), shapes=S128, check=check_summa_cyclic),
    _fn("compile_pipeline_summa", "fork_cp_summa",
        "testing/python/compile_pipeline/test_summa.py::summa_matmul",
        lambda m: m.summa_matmul(128, 128, 128, 32, 32, 32), shapes=S128,
        undefined="both broadcasts are from core (0, 0): a core outside row 0 gets no A "
                  "tile, one outside column 0 no B tile, and T.gemm reads them"),
    _fn("compile_pipeline_mma_3times", "fork_cp_mma3",
        "testing/python/compile_pipeline/test_mma_3times.py::kernel_mma_3times_single_thread",
        lambda m: m.kernel_mma_3times_single_thread(),
        shapes={"A": (16, 16), "B": (16, 16), "C": (16, 16)}, check=check_mma3),
]


LAYOUT_INF = "testing/python/transform/test_tilelang_transform_sunmmio_layout_inference.py::"


def _idle_comm(name, op, grid, why):
    return _fn(f"layout_inference_{name}", "fork_layout_inference", f"{LAYOUT_INF}{name}_kernel",
               lambda m: m.__dict__[f"{name}_kernel"]()["main"],
               refused=rf"T.comm.{op} \(comm op #0\) involves cores \[.*\], which run no "
                       rf"block of the launch grid \({grid}\)",
               why=why)


FEW = ("T.Kernel(2, 2) on 16 cores: 4 programs, yet a comm op over cores that run no "
       "block (on the chip the op never completes)")
ONE = ("T.Kernel(1) on 16 cores: one program, yet a comm op over cores that run no block "
       "(on the chip the op never completes)")
CASES += [
    _idle_comm("broadcast_zz", "broadcast", "2, 2", FEW),
    _idle_comm("broadcast_zn", "broadcast", "1,", ONE),
    _idle_comm("broadcast_from_global_to_rsram", "broadcast", "1,", ONE),
    _idle_comm("put_zz", "put", "2, 2", FEW),
    _idle_comm("allgather_zz", "all_gather", "2, 2", FEW),
    _idle_comm("allgather_row_major", "all_gather", "1,", ONE),
    _idle_comm("broadcast_mismatched_layouts", "broadcast", "1,", ONE),
    _fn("layout_inference_matmul_persistent", "fork_layout_inference",
        f"{LAYOUT_INF}matmul_persistent",
        lambda m: m.matmul_persistent(128, 128, 128, 32, 32, 32, 2)["main"], shapes=S128,
        check=check_gemm),
]


def check_row_broadcast(inp, obs, out):
    """T.Kernel(4): row 0's cores; each gets core (0, 0)'s tile A[0:32, 0:32] and writes
    it to its 32 columns of B's first rows; the rest of B is as it was."""
    a, want = inp.arrays[0], inp.arrays[1].copy()
    for bx in range(4):
        want[0:32, 32 * bx:32 * bx + 32] = a[0:32, 0:32]
    np.testing.assert_array_equal(out["B"], want)


def _cs(name, **kw):
    return _fn(f"comm_sync_{name}", "fork_comm_sync", f"{COMM_SYNC}{name}_kernel",
               lambda m: getattr(m, f"{name}_kernel")(), **kw)


COMM_SYNC = "testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::"
GRID4 = ("T.Kernel(4) on 16 cores: row 0 runs, yet the comm op involves cores that run no "
         "block (on the chip it never completes)")
CASES += [
    _cs("comm_broadcast", check=check_row_broadcast),
    _cs("comm_put", refused=r"T.comm.put \(comm op #0\) involves cores \[\(1, 2\), "
        r"\(2, 2\), \(2, 3\)\], which run no block of the launch grid \(4,\)", why=GRID4),
    _cs("comm_all_gather", refused=r"T.comm.all_gather \(comm op #0\) involves cores "
        r"\[\(1, 0\).*\], which run no block of the launch grid \(4,\)", why=GRID4),
    _cs("sync_if_broadcast", refused=r"T.comm.broadcast \(comm op #0\) is under `if .*bx == "
        r"0`, which holds on some cores of its group",
        why="a row broadcast under `if bx == 0`: the row's other cores never take part (on "
            "the chip the op never completes)"),
    _cs("sync_loop_broadcast", undefined="the first broadcast sends C_shared, which nothing "
        "writes first"),
]


CASES += [
    _fn("flash_attention_gqa_fwd_bhsd_opt_validate", "fork_gqa",
        "testing/python/target/test_sunmmio_codegen_flash_attention_gqa_fwd_bhsd_opt_validate.py"
        "::flashattn_gqa_fwd_bhsd", lambda m: m.flashattn_gqa_fwd_bhsd(4, 4, 128, 64),
        shapes=QKV, check=check_causal_attention),
]

def check_fp8_cast(inp, obs, out):
    """Per row and 128-column group: amax = max(|x|, 1e-4), scale = amax / 448, X_fp8 =
    clamp(x / scale, -448, 448) stored as float8_e4m3fn, X_amax = scale (float32). The
    X[32 bx, 128 by] tiles the loops name past a core's 64x256 shard read zeros and
    write nothing; those inside it cover the shard, so the result is the global cast."""
    x = inp.arrays[0]
    g = x.reshape(x.shape[0], -1, 128)
    scale = np.maximum(np.abs(g).max(axis=2), np.float32(1e-4)) / np.float32(448.0)
    q = np.clip(g / scale[:, :, None], np.float32(-448.0), np.float32(448.0))
    np.testing.assert_array_equal(out["X_fp8"], rnd(q.reshape(x.shape), "float8_e4m3fn"))
    np.testing.assert_array_equal(out["X_amax"], scale)


FP8 = "testing/python/target/test_sunmmio_codegen_per_token_cast_to_fp8_opt_validate.py::"
FP8_SHAPES = {"X": (256, 1024), "X_fp8": (256, 1024), "X_amax": (256, 8)}
CASES += [
    _fn(name, "fork_fp8_cast", f"{FP8}{name}",
        lambda m, name=name: getattr(m, name)(M=256, N=1024), shapes=FP8_SHAPES,
        check=check_fp8_cast)
    for name in ("per_token_cast_to_fp8_kernel", "per_token_cast_to_fp8_kernel_rowmajor",
                 "per_token_cast_to_fp8_transition_kernel")
]

def check_topk(inp, obs, out):
    """Replicated: every core runs all four 32-row tiles. Per round k: the row's max is
    gate k, its index the largest column holding it (reduce_max over the columns that
    hit, -1 elsewhere), and every column holding it becomes -10000 (ties are common:
    the inputs are small integers)."""
    x = inp.arrays[0].copy()
    cols = np.arange(x.shape[1])
    gates, idx = [], []
    for _ in range(2):
        top = x.max(axis=1)
        hit = x == top[:, None]
        gates.append(top)
        idx.append(np.where(hit, cols, -1).max(axis=1))
        x = np.where(hit, np.float32(-10000.0), x)
    np.testing.assert_array_equal(out["topk_gates"], np.stack(gates, axis=1))
    np.testing.assert_array_equal(out["topk_indices"], np.stack(idx, axis=1))


TOPK = "testing/python/target/test_sunmmio_codegen_topk_opt_validate.py::"
CASES += [
    _fn(name, "fork_topk", f"{TOPK}{name}", lambda m, name=name: getattr(m, name)(),
        check=check_topk)
    for name in ("topk_full_kernel", "topk_transition_kernel")
]

MLA_SCALE = float((64 + 64) ** -0.5 * 1.44269504)
LOG2E = np.float32(1.44269504)


def _mla(inp, start, steps):
    """The MLA decode tile of each mesh column c (heads 32c..32c+31 of batch 0, which
    row 0 holds; rows 1-3 hold no batch, and what they compute lands nowhere): key
    blocks of 64 from ``start``, scores ``q kv^T + q_pe k_pe^T`` (two T.gemms into
    acc_s), probabilities stored in float16. Returns (acc_o / logsum, logsum, max) per
    column, stacked over the 128 heads."""
    q, q_pe, kv, k_pe = (a[0] for a in inp.arrays[:4])
    kv, k_pe = kv[:, 0], k_pe[:, 0]
    parts = []
    for c in range(4):
        h = slice(32 * c, 32 * c + 32)
        blk = lambda x, k: x[start + 64 * k:start + 64 * k + 64]  # noqa: E731

        def scores(k, h=h):
            s_ = gemm(np.zeros((32, 64), np.float32), q[h], blk(kv, k).T)
            return gemm(s_, q_pe[h], blk(k_pe, k).T)
        parts.append(references.attention_tile(scores, lambda k: blk(kv, k), steps,
                                                MLA_SCALE, "float16"))
    return [np.concatenate(x) for x in zip(*parts)]


def check_mla_no_split(inp, obs, out):
    """Output = the decode over all 128 keys, stored in float16."""
    o, _, _ = _mla(inp, 0, 2)
    np.testing.assert_array_equal(out["Output"][0], rnd(o, "float16"))


def check_mla_split(inp, obs, out):
    """Split bz of 2 attends to keys 64 bz..64 bz+63; its Output_partial is that tile's
    output in float16, its glse log2(logsum) + max * scale (logf, then * 1.44269504)."""
    for bz in range(2):
        o, logsum, smax = _mla(inp, 64 * bz, 1)
        lse = np.float32(references.logf(logsum) * LOG2E) + np.float32(smax * np.float32(
            MLA_SCALE))
        np.testing.assert_array_equal(out["Output_partial"][0, :, bz], rnd(o, "float16"))
        np.testing.assert_array_equal(out["glse"][0, :, bz], lse.astype(np.float32))


def check_mla_combine(inp, obs, out):
    """Per head: lse = log2(sum_k exp2(glse_k - max)) + max, then Output = sum over the
    splits of Output_partial_k * exp2(glse_k - lse), in float32, stored in float16."""
    glse, part = inp.arrays[0][0], inp.arrays[1][0]
    top = glse.max(axis=1)
    total = np.zeros(glse.shape[0], np.float32)
    for k in range(glse.shape[1]):
        total = total + references.exp2f(glse[:, k] - top)
    lse = (references.logf(total) * LOG2E).astype(np.float32) + top
    acc = np.zeros(part.shape[::2], np.float32)
    for k in range(glse.shape[1]):
        acc = acc + part[:, k] * references.exp2f(glse[:, k] - lse)[:, None]
    np.testing.assert_array_equal(out["Output"][0], rnd(acc, "float16"))


MLA = "testing/python/target/test_sunmmio_codegen_mla_decode_opt_validate.py::"
MLA_SHAPES = {"Q": (1, 128, 64), "Q_pe": (1, 128, 64), "KV": (1, 128, 1, 64),
              "K_pe": (1, 128, 1, 64), "Output": (1, 128, 64), "glse": (1, 128, 2),
              "Output_partial": (1, 128, 2, 64)}
CASES += [
    _fn(name, "fork_mla", f"{MLA}{name}", lambda m, name=name: getattr(m, name)(),
        shapes=MLA_SHAPES, check=check)
    for name, check in (("mla_decode_no_split", check_mla_no_split),
                        ("mla_decode_dynamic_length_no_split", check_mla_no_split),
                        ("mla_decode_split", check_mla_split),
                        ("mla_decode_split_combine_probe", check_mla_combine),
                        ("mla_decode_dynamic_kv_zzlayout_probe", check_unchanged))
]

# --- i27b: the older fork's remaining kernels (hierarchical layouts, the compile pipeline's
# flash attention and sync kernels, layout inference's ZN DRAM copies, comm_sync's gathers)
FORK_CI = "wanghz18/Tilelang-Mesh@f2597d94"  # branch copy_insert
HIER = "testing/python/transform/test_tilelang_transform_sunmmio_global_layout_utils.py::"


def check_hier_dma(inp, obs, out):
    """copy(K=128, 64, 64, 32) on 2x2, C split by rows over the 4 cores (32x128 each,
    kept in the hierarchical layout; values are logical). Block (bx, by) on core
    bx + 2 by reads rows 64 by.. of its own part: by = 0 reads its 32 rows and 32 rows
    past them (zeros), by = 1 only rows past them; each step writes back what it read,
    so C is unchanged. The last step (ko = 3) leaves columns 96..159 in C_shared = D_shared
    (128.. past the part); A_shared and B_shared hold that tile with C_shared[8:24, 16:48]
    and C_shared[8:32, 48:56] copied over their corners."""
    c = inp.arrays[0]
    np.testing.assert_array_equal(out["C"], c)
    for b in range(4):
        by = b // 2
        part = np.zeros((32 + 64 + 64, 128 + 64), np.float32)
        part[:32, :128] = c[32 * b:32 * b + 32]
        tile = part[64 * by:64 * by + 64, 96:160]
        np.testing.assert_array_equal(obs["C_shared"][b], tile, str(b))
        np.testing.assert_array_equal(obs["D_shared"][b], tile, str(b))
        a, w = tile.copy(), tile.copy()
        a[24:40, 8:40] = tile[8:24, 16:48]
        w[40:64, 0:8] = tile[8:32, 48:56]
        np.testing.assert_array_equal(obs["A_shared"][b], a, str(b))
        np.testing.assert_array_equal(obs["B_shared"][b], w, str(b))


CASES += [
    Case("fork_hierarchical_layout_values", f"{FORK_CI} {HIER}test_hierarchical_layout_values",
         "fork_hierarchical", lambda m: m.test_hierarchical_layout_values(), mesh=(2, 2),
         shapes={"A": (64, 64), "B": (64, 64), "C": (64, 64)},
         undefined="T.gemm accumulates into C_shared, which nothing writes first (the "
                   "test's T.clear is commented out)"),
    Case("fork_dma_copy_hierarchical", f"{FORK_CI} testing/python/ops/"
         "test_tilelang_ops_sunmmio_dma_copy.py::copy", "fork_hierarchical_dma",
         lambda m: m.copy(128, 64, 64, 32)["main"], mesh=(2, 2), shapes={"C": (128, 128)},
         observe=["A_shared", "B_shared", "C_shared", "D_shared"], check=check_hier_dma),
]

def check_flashattn_f16(inp, obs, out):
    """The compile pipeline's flash attention, all float16 (accumulators too), at
    (8, 8, 256, 128), block 128: core (r, c) holds batches 2r.., heads 2c.. (a 2x2x2
    tile domain). T.Persistent over that domain with the 16 cores as its wave: core c
    runs tile c, (bz, by, bx) = (c // 4, c // 2 % 2, c % 2), of its own part (one wave,
    no guard: cores 8-15 name tiles past their part, read zeros and write nothing).
    Each tile: attention_tile with float16 accumulators (T.gemm rounding each product
    and sum, as TileLang types it; the exp2 arguments float32, as TileLang types
    ``x * scale``), output stored in float16."""
    q, k, v, o0 = inp.arrays[:4]
    scale = (1.0 / 128) ** 0.5 * 1.44269504
    want = o0.copy()
    for core in range(8):
        r, c = divmod(core, 4)
        bz, by, bx = core // 4, core // 2 % 2, core % 2
        b, h, rows = 2 * r + bz, 2 * c + by, slice(128 * bx, 128 * bx + 128)

        def scores(kk, b=b, h=h, rows=rows):
            return gemm(np.zeros((128, 128), np.float32), q[b, rows, h],
                        k[b, 128 * kk:128 * kk + 128, h].T, "float16")
        o, _, _ = references.attention_tile(
            scores, lambda kk, b=b, h=h: v[b, 128 * kk:128 * kk + 128, h], 2, scale,
            "float16", "float16")
        want[b, rows, h] = o
    np.testing.assert_array_equal(out["Output"], want)


CASES += [
    _fn("compile_pipeline_flashattn", "fork_cp_flashattn",
        "testing/python/compile_pipeline/test_flashattn.py::kernel_flashattn",
        lambda m: m.kernel_flashattn(8, 8, 256, 128, False, block_M=128, block_N=128,
                                     num_stages=1, threads=1),
        shapes={n: (8, 256, 8, 128) for n in ("Q", "K", "V", "Output")},
        check=check_flashattn_f16),
]

def check_dram_zn_to_asram(inp, obs, out):
    """T.Kernel(1, 1) on 2x2: core 0 alone copies the 64x32 tile at A[0, 0] from its
    32x16 part of A (zeros past it), the 32x64 tile of B from its 16x32 part, multiplies
    (float32 accumulator) and writes C_shared's corner that fits its 32x32 part of C:
    C[0:32, 0:32] = A[0:32, 0:16] @ B[0:16, 0:32]; the other cores run nothing. A's ZN
    DRAM layout moves no value (the fork stages the copy through RSRAM)."""
    a, b, c0 = inp.arrays[:3]
    want = c0.copy()
    want[0:32, 0:32] = gemm(np.zeros((32, 32), np.float32), a[0:32, 0:16], b[0:16, 0:32])
    np.testing.assert_array_equal(out["C"], want)


CASES += [
    _fn("layout_inference_dram_zn_to_asram", "fork_layout_inference",
        f"{LAYOUT_INF}dram_zn_to_asram_kernel",
        lambda m: m.dram_zn_to_asram_kernel()["main"], mesh=(2, 2),
        shapes={"A": (64, 32), "B": (32, 64), "C": (64, 64)}, check=check_dram_zn_to_asram),
    _fn("layout_inference_dram_zn_to_wsram", "fork_layout_inference",
        f"{LAYOUT_INF}dram_zn_to_wsram_kernel",
        lambda m: m.dram_zn_to_wsram_kernel()["main"], mesh=(2, 2),
        shapes={"A": (64, 32), "B": (32, 64), "C": (64, 64)},
        refused=r"T.copy\(B -> B_shared\): B is kept in DRAM in layout zn\(.*SUNMMIO's "
                r"DMA writes B_shared, in WSRAM \(T.gemm's B operand\), only from a ZZ-like "
                r"DRAM layout",
        why="a DMA from B's ZN DRAM layout into WSRAM: the fork's compiler refuses it "
            "(\"copy requires ZZ-like DRAM layout\"; its ASRAM copy is staged through "
            "RSRAM and runs)"),
]

def check_row_gather_last(inp, obs, out):
    """T.Kernel(4): row 0's cores, block bx holding A[0:32, 32 bx:32 bx + 32]; the
    horizontal all_gather along the last axis gives each of them A[0:32, 0:128]."""
    a = inp.arrays[0]
    for b in range(4):
        np.testing.assert_array_equal(obs["R_shared"][b], a[0:32, 0:128], str(b))


GATHER_TEST = ("testing/python/target/test_sunmmio_codegen_comm_sync_kernels_opt_validate.py::"
               "test_comm_all_gather_kernel_codegen_validates_with_npuir_opt")


def _cs_gather(case, direction, axis, **kw):
    return _fn(f"comm_sync_{case}", "fork_comm_sync", f"{GATHER_TEST}[{case}]",
               lambda m: m.comm_all_gather_kernel(direction=direction, axis=axis), **kw)


CASES += [
    _cs_gather("all_gather_axis0_all", "all", 0,
               refused=r"T.comm.all_gather \(comm op #0\) involves cores \[\(1, 0\).*\], "
                       r"which run no block of the launch grid \(4,\)", why=GRID4),
    _cs_gather("all_gather_axis_last_horizontal", "horizontal", -1, observe=["R_shared"],
               check=check_row_gather_last),
    _cs_gather("all_gather_axis_last_all", "all", -1,
               refused=r"T.comm.all_gather \(comm op #0\) involves cores \[\(1, 0\).*\], "
                       r"which run no block of the launch grid \(4,\)", why=GRID4),
]


# --- i27: the current SUNMMIO/Tilelang's tests (testing/python/sunmmio/) not yet above -------
UPC = "SUNMMIO/Tilelang@039b4417 testing/python/sunmmio/language/test_comm.py::"
UPC_SYNC = ("SUNMMIO/Tilelang@1c3c809a testing/python/sunmmio/codegen/"
            "test_comm_sync_kernels_opt_validate.py::")
NOTHING_WRITES = ("its comm ops send on-chip buffers that nothing writes (the test checks "
                  "how the operands are normalized)")
RACE = ("every core names itself (bx) as the broadcast's source: each row's four cores "
        "broadcast at once into the same buffers (on the chip a race)")


def _upc(name, **kw):
    return Case(f"upstream_{name}", f"{UPC}{name}", "upstream_current",
                lambda m: getattr(m, name)(), **kw)


# T.Kernel() on 4x4, 64x64 shards, one 64x64 tile each: every source is cleared before
# it is sent (puts from (1, 2): to (2, 3) through the turn core (2, 2), to (1, 3), to
# (3, 2))
check_pipeline_comm_current = _comm_zeros(64)


def check_ffn(inp, obs, out):
    """full_shard(0, 1) on 4x4: each core's row-block of X is gathered along its mesh
    row and its column-block of WUp along its mesh column, so the 32-wide K tiles of
    the four cores together cover the whole hidden axis: Mid = bf16(relu(X @ WUp)),
    Y = Mid @ WDown (float32; integer values, every sum exact)."""
    x, wup, wdown = inp.arrays[:3]
    mid = rnd(np.maximum(x @ wup, 0), "bfloat16")
    np.testing.assert_array_equal(out["Mid"], mid)
    np.testing.assert_array_equal(out["Y"], mid @ wdown)


def check_overall_current(inp, obs, out):
    """T.serial loops over 64x64 tiles of 32x32 shards: each core's one tile meets its
    shard in the top-left 32x32 (the rest of the copies lie past the shard: zeros read,
    nothing written), so C_shared = A_loc @ B_loc + Bias_loc there. The row broadcast
    from (0, 0) reaches row 0 only: its four cores store core (0, 0)'s result in their
    shards of C. Rows 1-3 store C_remote, which nothing writes there (no defined value:
    not compared)."""
    a, b, bias = inp.arrays[:3]
    want = a[0:32, 0:32] @ b[0:32, 0:32] + bias[0:32, 0:32]
    for col in range(4):
        np.testing.assert_array_equal(out["C"][0:32, 32 * col:32 * col + 32], want, str(col))


def check_datapath_copy_current(inp, obs, out):
    """cross_mesh_dim=0 on 2x2: each core holds 32 rows of C. T.Kernel(): every core
    loops over by < 2 and the K tiles; each step copies the 64x64 tile at (64 by, 32 ko)
    of its 32x128 shard (zeros past it) through the SRAMs and back (C is as it was).
    The last step's tile (64, 96) lies wholly past the shard: every SRAM holds zeros."""
    np.testing.assert_array_equal(out["C"], inp.arrays[0])
    for name in ("A_shared", "B_shared", "D_shared"):
        assert not obs[name].any(), name


def check_gather_from_dram(name, k):
    """Every core gathers the same global A (each reads it from DRAM): all ``k`` slots
    of its ``name`` hold A (stacked, or concatenated along axis 0)."""
    def check(inp, obs, out):
        a = inp.arrays[0]
        for core in range(16):
            got = obs[name][core].reshape(k, *a.shape)
            for j in range(k):
                np.testing.assert_array_equal(got[j], a, f"{core} {j}")
    return check


def check_broadcast_from_dram_current(direction):
    """A broadcast of global A from core (0, 0): row 0 ("h"), column 0 ("v") or every
    core ("a") holds A; the other cores' A_broadcast is never written (not compared)."""
    def check(inp, obs, out):
        a = inp.arrays[0]
        for core in range(16):
            row, col = divmod(core, 4)
            if direction == "a" or (direction == "h" and row == 0) or (
                    direction == "v" and col == 0):
                np.testing.assert_array_equal(obs["A_broadcast"][core], a, str(core))
    return check


def check_dram_zn_to_asram(inp, obs, out):
    """T.Kernel(1, 1) on 2x2: only core 0 runs. Its 64x32 and 32x64 tiles reach past its
    32x16 and 16x32 shards (zeros read), so its C shard is A_00 @ B_00; the other cores'
    shards of C are as they were."""
    a, b, c = inp.arrays[:3]
    want = c.copy()
    want[0:32, 0:32] = a[0:32, 0:16] @ b[0:16, 0:32]
    np.testing.assert_array_equal(out["C"], want)


def check_sum(inp, obs, out):
    """C = A + B (bfloat16 inputs: integer values, the sum exact), stored in float32."""
    np.testing.assert_array_equal(out["C"], inp.arrays[0] + inp.arrays[1])


def check_reduction_example(inp, obs, out):
    """y=0, x=1 on 4x4: core (r, c) holds A[m, K-part c, :]. It sums its N tiles
    (Acc[i, j] = sum over the tiles of A[m, k_c + i, tile + j]), gathers the row's four
    Accs side by side and reduces them: B[m, k_c + i] is the sum over the row's parts
    c' of A's row sums at k_c' + i (the same i in every part)."""
    a = inp.arrays[0]
    rs = a.sum(axis=2)                       # (M, K): integer sums, exact in float32
    kp = a.shape[1] // 4
    parts = rs.reshape(a.shape[0], 4, kp).sum(axis=1)
    np.testing.assert_array_equal(out["B"], np.tile(parts, (1, 4)))


def check_rmsnorm(inp, obs, out):
    """Per row: the sum of squares (integer, exact in float32), inv_rms =
    1 / sqrtf(sum / N + eps) in float32, Y = X * inv_rms rounded to bfloat16."""
    x = inp.arrays[0]
    n = np.float32(x.shape[1])
    total = (x * x).sum(axis=1).astype(np.float32)
    inv = np.float32(1) / np.sqrt((total / n + np.float32(1e-12)).astype(np.float32))
    np.testing.assert_array_equal(out["Y"], rnd(x * inv[:, None], "bfloat16"))


def check_bf16_product(inp, obs, out):
    """C = A * B, the product of two bfloat16 values in bfloat16 (TIR's own type),
    stored in float32."""
    np.testing.assert_array_equal(out["C"], rnd(inp.arrays[0] * inp.arrays[1], "bfloat16"))


def check_row_gather_last(inp, obs, out):
    """T.Kernel(4): row 0's cores; each gathers the row's tiles A[0:32, 32 bx:32 bx+32]
    along its last axis: R_shared = A[0:32, 0:128] on each of the four."""
    a = inp.arrays[0]
    for core in range(4):
        np.testing.assert_array_equal(obs["R_shared"][core], a[0:32, 0:128])


UP_LAYOUT = ("SUNMMIO/Tilelang@1f6a0068 testing/python/sunmmio/transform/"
             "test_layout_inference.py::")


def _ulg(name, kind=None, undefined=""):
    """The current upstream's LegalizeSunmmioGemm kernels (T.Kernel(), A.local_shape):
    the same programs as the fork's above, run under the upstream's name."""
    c = _lg(name, kind, undefined)
    return Case(c.id.replace("fork_", "upstream_"), "SUNMMIO/Tilelang@25478d65 testing/python/"
                "sunmmio/transform/test_legalize_gemm.py::" + c.source.split("::", 1)[1],
                "upstream_legalize_gemm", c.build, shapes=c.shapes, check=c.check,
                undefined=c.undefined)


def _up_sync(name, build, **kw):
    """The current upstream's comm/sync codegen kernels: the fork's text unchanged
    (fork_comm_sync.py), run again under the upstream's name."""
    return Case(f"upstream_comm_sync_{name}", f"{UPC_SYNC}{build}", "fork_comm_sync",
                kw.pop("make", lambda m: getattr(m, build)()), **kw)


CASES += [
    Case("upstream_allreduce_frontend_kernel", f"{UPC}_allreduce_frontend_kernel",
         "upstream_current", lambda m: m._allreduce_frontend_kernel("all", clear=False),
         refused=r"T.comm.all_reduce \(comm op #0\) involves cores \[\(0, 1\)",
         why=ONE),
    _upc("test_comm_one_to_one_regions_follow_copy_normalization_rules",
         undefined=NOTHING_WRITES),
    _upc("test_comm_one_to_one_full_buffer_extent_mismatch_is_rejected",
         refused=r"T.comm.broadcast extent mismatch: exact match is required",
         why="the upstream's frontend raises the same ValueError: a (32, 32) buffer "
             "broadcast into a (32, 64) one"),
    _upc("test_comm_explicit_region_oob_is_warned_and_clipped", undefined=NOTHING_WRITES),
    _upc("test_comm_all_gather_regions_follow_copy_normalization_rules",
         undefined=NOTHING_WRITES),
    _upc("test_comm_all_gather_buffer_load_pair_is_rejected",
         refused=r"T.comm.all_gather cannot infer extents when both operands are BufferLoad",
         why="the upstream's frontend raises the same ValueError: two single elements "
             "give no extents"),
    _upc("test_comm_all_gather_full_buffer_extent_mismatch_is_rejected",
         refused=r"T.comm.all_gather.*\[4, 32, 32\].*\[4, 64, 32\]",
         why="the upstream's frontend raises a ValueError: a (4, 64, 32) buffer cannot "
             "receive four (32, 32) slots exactly"),
    _upc("test_comm_all_reduce_regions_follow_copy_normalization_rules",
         undefined=NOTHING_WRITES),
    _upc("test_comm_all_reduce_full_buffer_extent_mismatch_is_rejected",
         refused=r"T.comm.all_reduce: invalid reduce output shape",
         why="the upstream's frontend raises a ValueError: a (32, 64) buffer reduced "
             "over dim 1 into a (64,) one"),
    _upc("test_comm_all_reduce_buffer_load_pair_is_rejected",
         refused=r"T.comm.all_reduce cannot infer extents when both operands are BufferLoad",
         why="the upstream's frontend raises the same ValueError: two single elements "
             "give no extents"),
    _upc("test_comm_dynamic_core_python_api",
         refused=r"T.comm.broadcast \(comm op #0\): cores \(0, 0\) and \(0, 1\) both "
                 r"broadcast to", why=RACE),
    _upc("test_comm_dynamic_core_lower",
         refused=r"T.comm.broadcast \(comm op #0\): cores \(0, 0\) and \(0, 1\) both "
                 r"broadcast to", why=RACE),
    Case("upstream_pipeline_kernel_comm", "SUNMMIO/Tilelang@039b4417 testing/python/sunmmio/"
         "pipeline/test_comm.py::kernel_comm", "upstream_current",
         lambda m: m.kernel_comm(256, 256, 256, 64, 64, 64),
         observe=["A_remote_1", "A_remote_2", "A_remote_3", "B_remote_1", "B_remote_2",
                  "B_remote_3", "C_allgather_1", "C_allgather_2", "C_allgather_3"],
         shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)},
         check=check_pipeline_comm_current),
    Case("upstream_pipeline_summa", "SUNMMIO/Tilelang@3cb87329 testing/python/sunmmio/"
         "pipeline/test_summa.py::summa_matmul", "upstream_current",
         lambda m: m.summa_matmul(128, 128, 128, 32, 32, 32), shapes=S128,
         undefined="both broadcasts are from core (0, 0): a core outside row 0 gets no A "
                   "tile, one outside column 0 no B tile, and T.gemm reads them"),
    Case("upstream_pipeline_kernel_overall", "SUNMMIO/Tilelang@1c3c809a testing/python/"
         "sunmmio/pipeline/test_overall.py::kernel_overall", "upstream_current",
         lambda m: m.kernel_overall(128, 128, 128, 64, 64, 32),
         shapes={"A": (128, 128), "B": (128, 128), "Bias": (128, 128), "C": (128, 128)},
         check=check_overall_current),
    Case("upstream_pipeline_greedy_collective_mesh_ffn_new", "SUNMMIO/Tilelang@a24545be "
         "testing/python/sunmmio/pipeline/test_sunmmio_pipeline_greedy_collective.py::"
         "mesh_ffn_new", "upstream_current", lambda m: m.mesh_ffn_new(),
         shapes={"X": (128, 512), "WUp": (512, 512), "WDown": (512, 512),
                 "Mid": (128, 512), "Y": (128, 512)}, check=check_ffn),
    Case("upstream_ops_datapath_copy", "SUNMMIO/Tilelang@3cb93397 testing/python/sunmmio/"
         "ops/test_datapath.py::copy", "upstream_current",
         lambda m: m.copy(128, 64, 64, 32)["main"], mesh=(2, 2), shapes={"C": (128, 128)},
         observe=["A_shared", "B_shared", "D_shared"], check=check_datapath_copy_current),
] + [
    Case(f"upstream_ops_allreduce_{d}", "SUNMMIO/Tilelang@21c4bbe1 testing/python/sunmmio/"
         "ops/test_allreduce.py::allreduce_kernel", "upstream_current",
         lambda m, d=d: m.allreduce_kernel(d)["main"],
         refused=r"T.comm.all_reduce: invalid reduce output shape, buffer shape is "
                 r"\[32, 32\], dim is 1, output shape is \[32, 32\]",
         why="a (32, 32) buffer reduced over dim 1 into a (32, 32) one: the upstream's "
             "frontend raises a ValueError too (its output must be (32,) or (32, 1))")
    for d in ("h", "v", "all")
] + [
    Case(f"upstream_inject_sync_{name}", "SUNMMIO/Tilelang@06981bef testing/python/sunmmio/"
         f"transform/test_inject_sync.py::{test}", "fork_kernels", build, **kw)
    for name, test, build, kw in (
        ("broadcast_kernel", "broadcast_kernel",
         lambda m: m.broadcast_kernel(128, 128, 32, 32), dict(check=check_broadcast_kernel)),
        ("if", "test_inject_sunmmio_sync_if",
         lambda m: m.inject_sync_if_kernel(128, 128, 128, 32, 32, 32),
         dict(undefined="T.gemm accumulates into C_shared, which nothing writes first; the "
                        "broadcast sends it")),
        ("loop", "test_inject_sunmmio_sync_loop",
         lambda m: m.inject_sync_loop_kernel(128, 128, 32, 32),
         dict(undefined="the first broadcast sends C_shared, which nothing writes first")))
] + [
    Case(f"upstream_legalize_datapath_{name}", "SUNMMIO/Tilelang@16e4e53c testing/python/"
         f"sunmmio/transform/test_legalize_datapath.py::{name}", "upstream_current",
         lambda m, name=name: getattr(m, name)(128, 128, 128, 32, 32, 32)["main"],
         refused=r"a race on 'C' element \[0, 0\]: core \(0, 0\) writes it in "
                 r"`T.copy\(C_shared\[0, 0\], C\[by \* 32, bx \* 32\]\)` and core "
                 r"\(0, 1\) writes it",
         why="T.Kernel(): every core loops over every C tile and stores it, so 16 cores "
             "write each tile (with different values: only the receiving cores hold A); on "
             "the chip the result depends on timing")
    for name in ("gemm_broadcast_from_dram", "gemm_put_from_dram")
] + [
    Case("upstream_legalize_datapath_allgather_dram_to_asram", "SUNMMIO/Tilelang@16e4e53c "
         "testing/python/sunmmio/transform/test_legalize_datapath.py::allgather_dram_to_asram",
         "upstream_current", lambda m: m.allgather_dram_to_asram(32, 32)["main"],
         observe=["A_gathered"], check=check_gather_from_dram("A_gathered", 4)),
] + [
    Case(f"upstream_legalize_datapath_broadcast_dram_to_rsram_{d}", "SUNMMIO/Tilelang@"
         "16e4e53c testing/python/sunmmio/transform/test_legalize_datapath.py::"
         "broadcast_dram_to_rsram", "upstream_current",
         lambda m, d=d: m.broadcast_dram_to_rsram(32, 32, d)["main"],
         observe=["A_broadcast"], check=check_broadcast_from_dram_current(d))
    for d in ("h", "v", "a")
] + [
    Case(f"upstream_legalize_datapath_allgather_dram_to_rsram_{d}", "SUNMMIO/Tilelang@"
         "16e4e53c testing/python/sunmmio/transform/test_legalize_datapath.py::"
         "allgather_dram_to_rsram", "upstream_current",
         lambda m, d=d: m.allgather_dram_to_rsram(32, 32, direction=d)["main"],
         observe=["A_gathered"], check=check_gather_from_dram("A_gathered", k))
    for d, k in (("h", 4), ("v", 4), ("a", 16))
] + [
    Case(f"upstream_layout_inference_{name}", f"{UP_LAYOUT}{name}_kernel",
         "fork_layout_inference", lambda m, name=name: m.__dict__[f"{name}_kernel"]()["main"],
         refused=rf"T.comm.{op} \(comm op #0\) involves cores \[.*\], which run no "
                 rf"block of the launch grid \({grid}\)", why=why)
    for name, op, grid, why in (
        ("broadcast_zz", "broadcast", "2, 2", FEW), ("broadcast_zn", "broadcast", "1,", ONE),
        ("broadcast_from_global_to_rsram", "broadcast", "1,", ONE),
        ("put_zz", "put", "2, 2", FEW), ("allgather_zz", "all_gather", "2, 2", FEW),
        ("allgather_row_major", "all_gather", "1,", ONE),
        ("broadcast_mismatched_layouts", "broadcast", "1,", ONE))
] + [
    Case("upstream_layout_inference_dram_zn_to_asram", f"{UP_LAYOUT}dram_zn_to_asram_kernel",
         "fork_layout_inference", lambda m: m.dram_zn_to_asram_kernel()["main"], mesh=(2, 2),
         shapes={"A": (64, 32), "B": (32, 64), "C": (64, 64)}, check=check_dram_zn_to_asram),
    Case("upstream_layout_inference_dram_zn_to_wsram", f"{UP_LAYOUT}dram_zn_to_wsram_kernel",
         "fork_layout_inference", lambda m: m.dram_zn_to_wsram_kernel()["main"], mesh=(2, 2),
         refused=r"T.copy\(B -> B_shared\): B is kept in DRAM in layout zn\(.*B_shared, "
                 r"in WSRAM",
         why="a ZN-laid DRAM tensor copied into WSRAM (T.gemm's B): the chip's DMA needs a "
             "ZZ-like DRAM layout there, and SUNMMIO's compiler refuses the kernel"),
    Case("upstream_layout_inference_matmul_persistent", f"{UP_LAYOUT}matmul_persistent",
         "fork_layout_inference",
         lambda m: m.matmul_persistent(128, 128, 128, 32, 32, 32, 2)["main"], shapes=S128,
         check=check_gemm),
    Case("upstream_pipeline_mma_3times", "SUNMMIO/Tilelang@1c3c809a testing/python/sunmmio/"
         "pipeline/test_mma_3times.py::kernel_mma_3times_single_thread", "upstream_current",
         lambda m: m.kernel_mma_3times_single_thread(),
         shapes={"A": (16, 16), "B": (16, 16), "C": (16, 16)}, check=check_mma3),
    Case("upstream_example_sunmmio_gemm", "SUNMMIO/Tilelang@3cb93397 examples/gemm/"
         "sunmmio_example_gemm.py::matmul_persistent", "upstream_current",
         lambda m: m.matmul_persistent(128, 128, 128, 32, 32, 32, 2), shapes=S128,
         check=check_gemm),
    Case("upstream_example_gemm_with_mesh_tensor", "SUNMMIO/Tilelang@5101cfe4 examples/gemm/"
         "example_gemm_with_mesh_tensor.py::matmul", "upstream_example_gemm_mesh_tensor",
         lambda m: m.matmul(128, 128, 128, 32, 32, 32), mesh=(1, 1), shapes=S128,
         check=check_gemm_f16),
    Case("upstream_example_elementwise_add", "SUNMMIO/Tilelang@1c3c809a examples/sunmmio/"
         "elementwise/elementwise_add.py::_elementwise_add_prim_func", "upstream_current",
         lambda m: m._elementwise_add_prim_func(256, 256, 32, 32, T.bfloat16, T.float32),
         shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)}, check=check_sum),
    Case("upstream_example_bf16_gemm", "SUNMMIO/Tilelang@4e463000 examples/sunmmio/gemm/"
         "bf16_gemm.py::matmul_persistent", "upstream_current",
         lambda m: m.bf16_gemm_matmul_persistent(128, 128, 128, 32, 32, 32), shapes=S128,
         check=check_gemm),
    Case("upstream_example_reduction", "SUNMMIO/Tilelang@3cb93397 examples/sunmmio/"
         "reduction/reduction.py::reduction", "upstream_current",
         lambda m: m.reduction(8, 128, 64, 32, 32, T.bfloat16, T.float32),
         shapes={"A": (8, 128, 64), "B": (8, 128)}, check=check_reduction_example),
    Case("upstream_example_rmsnorm", "SUNMMIO/Tilelang@3cb93397 examples/sunmmio/rmsnorm/"
         "rmsnorm.py::rmsnorm_kernel", "upstream_current",
         lambda m: m.rmsnorm_kernel(128, 256, 32, 32),
         shapes={"X": (128, 256), "Y": (128, 256)}, check=check_rmsnorm),
    Case("upstream_example_1d_reduction", "SUNMMIO/Tilelang@3cb93397 examples/sunmmio/"
         "reduction/1d_reduction.py::reduction", "upstream_current",
         lambda m: m.reduction_1d(1024, 128, T.bfloat16, T.bfloat16),
         shapes={"A": (1024,), "B": (1,)},
         refused=r"T.MeshTensor output 'B' .* is replicated, but the copies of cores "
                 r"\(0, 0\) and \(1, 0\) disagree",
         why="B is replicated on every core (replicate=ALL), yet each mesh row sums its "
             "own part of A into its copies: the copies differ, so B has no one value"),
    Case("upstream_example_bf16_gemm_zzn", "SUNMMIO/Tilelang@4e463000 examples/sunmmio/gemm/"
         "bf16_gemm_zzn.py::matmul_persistent_zzn", "upstream_current",
         lambda m: m.matmul_persistent_zzn(256, 256, 256, 32, 64, 64),
         shapes={"A": (256, 256), "B": (256, 256), "C": (256, 256)}, check=check_gemm),
    Case("upstream_example_mixed_precision_mul", "SUNMMIO/Tilelang@11b567a9 examples/sunmmio/"
         "elementwise/mixed_precision_mul.py::mixed_precision_mul", "upstream_current",
         lambda m: m.mixed_precision_mul(),
         shapes={"A": (256, 512), "B": (256, 512), "C": (256, 512)}, check=check_bf16_product),
    Case("upstream_example_rmsnorm_pipelined", "SUNMMIO/Tilelang@3cb87329 examples/sunmmio/"
         "rmsnorm/rmsnorm_pipelined.py::rmsnorm_kernel", "upstream_current",
         lambda m: m.rmsnorm_pipelined_kernel(128, 256, 32, 32),
         shapes={"X": (128, 256), "Y": (128, 256)}, check=check_rmsnorm),
    Case("upstream_example_elementwise_add_dynamic", "SUNMMIO/Tilelang@3cb93397 examples/"
         "sunmmio/elementwise/elementwise_add_dynamic.py::_elementwise_add_prim_func",
         "upstream_current",
         lambda m: m._elementwise_add_dynamic_prim_func(32, 32, T.bfloat16, T.float32),
         shapes={"A": (200, 136), "B": (200, 136), "C": (200, 136)}, check=check_sum),
] + [
    _ulg("with_allgather", "global"),
    _ulg("with_copy_to_asram", undefined="T.gemm reads A_dist's other cores' slots, which "
                                          "nothing writes (only slot 0 is copied)"),
    _ulg("with_hoisted_copy_writer", "local"),
    _ulg("with_hoisted_copy_writer_bf16_acc", "local_bf16"),
    _ulg("with_two_independent_hoisted_writers", "two_writers"),
    _ulg("with_hoisted_writer_dirty_source", "local"),
    _ulg("with_hoisted_allgather", "global"),
    _ulg("with_hoisted_allgather_dirty_source", "global"),
    _ulg("multi_consumer_groupable", "two_consumers"),
    _ulg("multi_consumer_non_groupable", "two_consumers_b2"),
    _ulg("flash_attention_shaped", "flash"),
    _ulg("no_reaching_writer", undefined="T.gemm reads A_shared, which nothing writes"),
    _ulg("multiple_writers", "writers_by_core"),
    _ulg("diverging_scopes", "local"),
] + [
    _up_sync("comm_broadcast", "comm_broadcast_kernel", check=check_row_broadcast),
    _up_sync("comm_put", "comm_put_kernel",
             refused=r"T.comm.put \(comm op #0\) involves cores \[\(1, 2\), \(2, 2\), "
                     r"\(2, 3\)\], which run no block of the launch grid \(4,\)", why=GRID4),
    _up_sync("comm_all_gather_axis0_all", "comm_all_gather_kernel",
             make=lambda m: m.comm_all_gather_kernel(direction="all", axis=0),
             refused=r"T.comm.all_gather \(comm op #0\) involves cores \[\(1, 0\).*\], "
                     r"which run no block of the launch grid \(4,\)", why=GRID4),
    _up_sync("comm_all_gather_axis_last_horizontal", "comm_all_gather_kernel",
             make=lambda m: m.comm_all_gather_kernel(direction="horizontal", axis=-1),
             observe=["R_shared"], check=check_row_gather_last),
    _up_sync("comm_all_gather_axis_last_all", "comm_all_gather_kernel",
             make=lambda m: m.comm_all_gather_kernel(direction="all", axis=-1),
             refused=r"T.comm.all_gather \(comm op #0\) involves cores \[\(1, 0\).*\], "
                     r"which run no block of the launch grid \(4,\)", why=GRID4),
    _up_sync("sync_if_broadcast", "sync_if_broadcast_kernel",
             refused=r"T.comm.broadcast \(comm op #0\) is under `if .*bx == 0`, which "
                     r"holds on some cores of its group",
             why="a row broadcast under `if bx == 0`: the row's other cores never take "
                 "part (on the chip the op never completes)"),
    _up_sync("sync_loop_broadcast", "sync_loop_broadcast_kernel",
             undefined="the first broadcast sends C_shared, which nothing writes first"),
]



# --- i27 codegen: the current SUNMMIO/Tilelang's testing/python/sunmmio/codegen/ tests --------
UPCG = "SUNMMIO/Tilelang@{} testing/python/sunmmio/codegen/{}.py::{}"
STORES_UNWRITTEN = ("it stores an RSRAM buffer that nothing writes (the test checks the "
                    "DMA the store lowers to)")


def check_every_core_holds(name, index):
    """Every core (T.Kernel(): one program per core) copies the same region of the
    replicated tensor into its ``name``: each holds ``src[index]``."""
    def check(inp, obs, out):
        want = inp.arrays[0][index]
        for core in range(16):
            np.testing.assert_array_equal(obs[name][core].reshape(want.shape), want, str(core))
    return check


def check_every_core_scalar(**want):
    """Every core's scalar variables (T.alloc_var) end with these values."""
    def check(inp, obs, out):
        for name, value in want.items():
            np.testing.assert_array_equal(obs[name].reshape(16), np.full(16, value), name)
    return check


def check_twice_local_gemm(inp, obs, out):
    """y=0, x=1 on 4x4 (32x32 shards): each core clears C_shared, multiplies its shards
    of A and B once in the loop and once more in the while loop (T.gemm accumulates),
    and stores C_shared into its shard: C = 2 A_loc @ B_loc (bf16 integer values,
    float32 sums: exact)."""
    a, b = inp.arrays[:2]
    want = np.zeros_like(out["C"])
    for r in range(4):
        for c in range(4):
            s = np.s_[32 * r:32 * r + 32, 32 * c:32 * c + 32]
            want[s] = 2 * (a[s] @ b[s])
    np.testing.assert_array_equal(out["C"], want)


def check_plus_one(inp, obs, out):
    """Each core adds its bias variable (1.0) to its 32x32 shard of A and stores it
    into its shard of B: B = A + 1."""
    np.testing.assert_array_equal(out["B"], inp.arrays[0] + 1)


def _offset_region_reference(a, b, shard=512, block=64, tile=32):
    """offset_region_copy_kernel_plus: per core and 64x64 tile (by, bx) of its 512x512
    shard, the index expressions the kernel computes (Python's ints and bools: the
    values are non-negative where TIR's and Python's // and % differ) give a 32x32
    region that is copied A -> RSRAM -> B; the rest of B is as it was."""
    want = b.copy()
    for r in range(a.shape[0] // shard):
        for c in range(a.shape[1] // shard):
            src = a[r * shard:(r + 1) * shard, c * shard:(c + 1) * shard]
            dst = want[r * shard:(r + 1) * shard, c * shard:(c + 1) * shard]
            for by in range(shard // block):
                for bx in range(shard // block):
                    total, mod = bx + by, ((bx + by) * 3 + 1) // 2 % 7
                    lt, le = bx < by + 2, by <= bx + 1
                    row_cond = (lt and le) or (bx != by and not (lt and le))
                    col_cond = bx > by - 1 or by >= bx - 1
                    row_delta = ((min(mod, 7) if bx == by else min(mod + 1, 7))
                                 if row_cond else max(bx - by, 0))
                    col_delta = (total * 5) % 11 if col_cond else min(by + 3, 7)
                    i, j = by * block + 8 + row_delta, bx * block + 8 + col_delta
                    dst[i:i + tile, j:j + tile] = src[i:i + tile, j:j + tile]
    return want


def check_offset_region(inp, obs, out):
    np.testing.assert_array_equal(out["B"], _offset_region_reference(*inp.arrays[:2]))


def check_every_core_put_last_tile(inp, obs, out):
    """T.Kernel(): every core copies A[0:32, 32 bx:32 bx + 32] for bx < 4; the put from
    (1, 2) to (2, 3) (through the turn core (2, 2)) leaves the last tile there."""
    tile = inp.arrays[0][0:32, 96:128]
    for core in (10, 11):
        np.testing.assert_array_equal(obs["B_shared"][core], tile, str(core))


def check_every_core_gathers_last_tile(k, axis):
    """Every core holds the same last tile A[0:32, 96:128]: each gathers ``k`` copies of
    it (stacked, or concatenated along ``axis``)."""
    def check(inp, obs, out):
        tile = inp.arrays[0][0:32, 96:128]
        want = np.stack([tile] * k) if axis is None else np.concatenate([tile] * k, axis)
        for core in range(16):
            np.testing.assert_array_equal(obs["R_shared"][core], want, str(core))
    return check


def check_every_core_copies(name, src, dst=np.s_[:]):
    """Every core (T.Kernel()) copies the replicated tensor's region ``src`` into the
    region ``dst`` of its ``name`` (the rest of the buffer is never written: not
    compared)."""
    def check(inp, obs, out):
        want = inp.arrays[0][src]
        for core in range(16):
            np.testing.assert_array_equal(obs[name][core][dst], want, str(core))
    return check


def check_every_core_copies_its_shard(inp, obs, out):
    """y=0, x=1 on 4x4, 256x256: core (r, c)'s A_shared is its 64x64 shard of A."""
    a = inp.arrays[0]
    for core in range(16):
        r, c = divmod(core, 4)
        np.testing.assert_array_equal(obs["A_shared"][core],
                                      a[64 * r:64 * r + 64, 64 * c:64 * c + 64], str(core))


def check_zeroed(inp, obs, out):
    """Every core fills its tile with 1, 2 and 3, clears it, and stores it over its own
    copy of the replicated A: every copy of A is zeros (the inputs are not)."""
    assert inp.arrays[0].any()
    np.testing.assert_array_equal(out["A"], np.zeros_like(out["A"]))


def check_copied(inp, obs, out):
    """A replicated on every core: each copies it through its RSRAM into its copy of B
    (replicated too): B = A."""
    np.testing.assert_array_equal(out["B"], inp.arrays[0])


def check_predicated_store(inp, obs, out):
    """Every core clears its 512-element tile, sets its first 33 elements to 7 and
    stores it over its own copy of the replicated out: 33 sevens, then zeros."""
    want = np.zeros(512, np.float32)
    want[:33] = 7
    np.testing.assert_array_equal(out["out"].astype(np.float32), want)


def check_reduce_sum(axis):
    """Every core sums its replicated copy of A along ``axis`` (clear=True) and stores
    the sums over its copy of Out. Each sum is of at most 64 integers in [-3, 3], so every
    partial sum is an integer below 256 in magnitude: exact in bfloat16 in any order."""
    def check(inp, obs, out):
        np.testing.assert_array_equal(out["Out"], inp.arrays[0].sum(axis=axis))
    return check


def check_pick_2d(inp, obs, out):
    """Every core walks the whole replicated 17x19 table; the last (row 16, col 18)
    pick stays: out[i] = table[16, 18] + 16 + 18 + i (int32)."""
    t = inp.arrays[0]
    np.testing.assert_array_equal(out["out"], t[16, 18] + 34 + np.arange(32))


def check_pick_3d(inp, obs, out):
    """Every core sums the whole replicated mask (int32) for each output tile: out[t, i]
    = sum(mask) + i."""
    t = inp.arrays[0]
    want = np.broadcast_to(t.sum() + np.arange(32), out["out"].shape)
    np.testing.assert_array_equal(out["out"], want)


def check_pick_rsram(inp, obs, out):
    """side_data[i] = i; core c picks side_data[c % 128] and side_data[128 + c % 128]."""
    np.testing.assert_array_equal(obs["first_tile_value"].reshape(16), np.arange(16))
    np.testing.assert_array_equal(obs["second_tile_value"].reshape(16), 128 + np.arange(16))


def _aligned(name, make, index, shapes=None):
    """A test_aligned_row_dma_copy.py kernel, "load" (checked) and "store" (no defined
    result) directions."""
    src = UPCG.format("0e5af169", "test_aligned_row_dma_copy", make)
    return [
        Case(f"upstream_codegen_aligned_row_{name}_load", src, "upstream_codegen",
             lambda m, f=make: getattr(m, f)("load", **(shapes or {})), observe=["dst"],
             check=check_every_core_holds("dst", index)),
        Case(f"upstream_codegen_aligned_row_{name}_store", src, "upstream_codegen",
             lambda m, f=make: getattr(m, f)("store", **(shapes or {})),
             undefined=STORES_UNWRITTEN),
    ]


CASES += [
    *_aligned("vector_rank1", "aligned_row_vector_copy_kernel", 1, dict(rsram_rank=1)),
    *_aligned("vector_rank2", "aligned_row_vector_copy_kernel", 1, dict(rsram_rank=2)),
    # the test's (500, 500) "full" case at (100, 100): the same unaligned rows
    *_aligned("matrix_full", "aligned_row_matrix_copy_kernel", 2, dict(rows=100, cols=100)),
    *_aligned("matrix_row_subset", "aligned_row_matrix_copy_kernel", np.s_[2, 7:12],
              dict(rows=20, cols=500, row_start=7, copy_rows=5)),
    *_aligned("matrix_full_fp32", "aligned_row_matrix_copy_kernel", 2,
              dict(rows=3, cols=250, dtype=T.float32)),
    *_aligned("matrix_already_aligned", "aligned_row_matrix_copy_kernel", 2,
              dict(rows=3, cols=512)),
    *_aligned("effective_rank3", "aligned_row_effective_rank3_kernel", np.s_[:]),
    *_aligned("alignment_mismatch", "aligned_row_alignment_mismatch_kernel", np.s_[0:2]),
] + [
    Case("upstream_codegen_alloc_var_scalar_state", UPCG.format(
        "04931c88", "test_alloc_var_opt_validate", "alloc_var_scalar_state_kernel"),
        "upstream_codegen", lambda m: m.alloc_var_scalar_state_kernel(), observe=["running"],
        shapes={"A": (32, 32)}, check=check_every_core_scalar(running=10)),
    Case("upstream_codegen_alloc_var_all_control_flow", UPCG.format(
        "04931c88", "test_alloc_var_opt_validate", "alloc_var_all_control_flow_kernel"),
        "upstream_codegen", lambda m: m.alloc_var_all_control_flow_kernel(),
        observe=["running", "idx"], shapes={"A": (32, 32)},
        check=check_every_core_scalar(running=13, idx=4)),
    Case("upstream_codegen_alloc_var_copy_mma_control_flow", UPCG.format(
        "04931c88", "test_alloc_var_opt_validate", "alloc_var_copy_mma_control_flow_kernel"),
        "upstream_codegen", lambda m: m.alloc_var_copy_mma_control_flow_kernel(),
        shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)},
        check=check_twice_local_gemm),
    Case("upstream_codegen_alloc_var_tiles", UPCG.format(
        "04931c88", "test_alloc_var_opt_validate", "alloc_var_tiles_kernel"),
        "upstream_codegen", lambda m: m.alloc_var_tiles_kernel(),
        shapes={"A": (128, 128), "B": (128, 128)}, check=check_plus_one),
] + [
    Case(f"upstream_codegen_{name}", UPCG.format(
        "25478d65", "test_allocate_copy_expr_opt_validate", name), "upstream_codegen",
        lambda m, name=name: getattr(m, name)(), shapes=S128, check=check_gemm)
    for name in ("basic_allocate_copy_mma_kernel", "pipelined_allocate_copy_mma_kernel")
] + [
    Case("upstream_codegen_allocate_dma_copy_kernel_plus", UPCG.format(
        "25478d65", "test_allocate_copy_expr_opt_validate", "allocate_dma_copy_kernel_plus"),
        "upstream_codegen", lambda m: m.allocate_dma_copy_kernel_plus(),
        shapes={"A": (512, 512), "C": (512, 512)},
        undefined="T.gemm accumulates into C_shared, which nothing writes first (and the "
                  "kernel stores nothing)"),
    Case("upstream_codegen_offset_region_copy_kernel_plus", UPCG.format(
        "25478d65", "test_allocate_copy_expr_opt_validate", "offset_region_copy_kernel_plus"),
        "upstream_codegen", lambda m: m.offset_region_copy_kernel_plus(),
        shapes={"A": (2048, 2048), "B": (2048, 2048)}, check=check_offset_region),
    # (its dynamic_allocate_copy_mma_kernel: in the i27b codegen tiles section below)
    Case("upstream_codegen_dynamic_zz_allocate_copy_mma_kernel", UPCG.format(
        "1c3c809a", "test_base_dynamic_opt_validate", "dynamic_zz_allocate_copy_mma_kernel"),
        "upstream_codegen", lambda m: m.dynamic_zz_allocate_copy_mma_kernel(),
        shapes={"A": (128, 32), "B": (32, 128), "C": (128, 128)},
        undefined="T.gemm accumulates into C_shared, which nothing writes first (and the "
                  "kernel stores nothing)"),
]
_CS = ("e2f6b2de", "test_comm_sync_kernels_opt_validate")
CASES += [
    Case("upstream_codegen_comm_sync_comm_broadcast", UPCG.format(*_CS, "comm_broadcast_kernel"),
         "upstream_codegen", lambda m: m.comm_broadcast_kernel(),
         refused=r"a race on 'B' element \[0, 0\]: core \(0, 0\) writes it in "
                 r"`T.copy\(B_shared\[0, 0\], B\[0, bx \* 32\]\)` and core \(0, 1\)",
         why="T.Kernel(): all 16 cores store their B_shared into the same B tiles (row 0's "
             "hold A's tile, the other rows' nothing written): on the chip the result "
             "depends on timing"),
    Case("upstream_codegen_comm_sync_comm_put", UPCG.format(*_CS, "comm_put_kernel"),
         "upstream_codegen", lambda m: m.comm_put_kernel(), observe=["B_shared"],
         check=check_every_core_put_last_tile),
] + [
    Case(f"upstream_codegen_comm_sync_comm_all_gather_{name}",
         UPCG.format(*_CS, "comm_all_gather_kernel"), "upstream_codegen",
         lambda m, d=d, axis=axis: m.comm_all_gather_kernel(direction=d, axis=axis),
         observe=["R_shared"], check=check_every_core_gathers_last_tile(k, axis))
    for name, d, axis, k in (("all", "all", None, 16), ("axis0_all", "all", 0, 16),
                             ("axis_last_horizontal", "horizontal", -1, 4),
                             ("axis_last_all", "all", -1, 16))
] + [
    Case("upstream_codegen_comm_sync_sync_if_broadcast",
         UPCG.format(*_CS, "sync_if_broadcast_kernel"), "upstream_codegen",
         lambda m: m.sync_if_broadcast_kernel(),
         undefined="T.gemm accumulates into C_shared, which nothing writes first; the "
                   "broadcast sends it"),
    Case("upstream_codegen_comm_sync_sync_loop_broadcast",
         UPCG.format(*_CS, "sync_loop_broadcast_kernel"), "upstream_codegen",
         lambda m: m.sync_loop_broadcast_kernel(),
         undefined="the first broadcast sends C_shared, which nothing writes first"),
]
_CR = ("22223a03", "test_copy_region_validate")
CASES += [
    Case(f"upstream_codegen_copy_region_{name}", UPCG.format(*_CR, name), "upstream_codegen",
         lambda m, name=name: getattr(m, name)(), observe=[buf],
         check=check_every_core_copies(buf, src, dst))
    for name, buf, src, dst in (
        ("zz_major_sub_block_copy_kernel", "A_shared", np.s_[0:8, 0:32], np.s_[0:8, 0:32]),
        ("zz_non_major_sub_block_copy_kernel", "A_shared", np.s_[0:32, 0:8],
         np.s_[0:32, 0:8]),
        ("zz_both_dims_sub_block_copy_kernel", "A_shared", np.s_[0:8, 0:8], np.s_[0:8, 0:8]),
        ("zz_major_sub_block_multi_block_copy_kernel", "A_shared", np.s_[0:8, 0:64],
         np.s_[0:8, 0:64]),
        # the loop's last copy (bk = 1) is what stays
        ("zz_fully_coalesced_full_block_copy_kernel", "B_shared", np.s_[32:64, :], np.s_[:]),
        ("zz_fully_coalesced_non_major_sub_block_copy_kernel", "B_shared", np.s_[0:32, 0:8],
         np.s_[0:32, 0:8]))
] + [
    Case("upstream_codegen_copy_region_let_bound_mesh_local_shape_copy_kernel",
         UPCG.format(*_CR, "let_bound_mesh_local_shape_copy_kernel"), "upstream_codegen",
         lambda m: m.let_bound_mesh_local_shape_copy_kernel(), observe=["A_shared"],
         shapes={"A": (256, 256)}, check=check_every_core_copies_its_shard),
    Case("upstream_codegen_copy_region_singleton_dimension_broadcast_kernel",
         UPCG.format(*_CR, "singleton_dimension_broadcast_kernel"), "upstream_codegen",
         lambda m: m.singleton_dimension_broadcast_kernel(),
         undefined="it broadcasts src_shared, which nothing writes (the test checks the "
                   "multicast it lowers to)"),
    # the test's (128, 128, 128) of its four shapes
    Case("upstream_codegen_copy_region_summa_output_copy_kernel",
         UPCG.format(*_CR, "summa_output_copy_kernel"), "upstream_codegen",
         lambda m: m.summa_output_copy_kernel(), shapes=S128,
         undefined="it stores C_local, which nothing writes, into every tile of C (the "
                   "test checks the DMA the store lowers to)"),
]
CASES += [
    # the test's (64, 512, 1024) at (32, 512, 256) and (512, 1024) at (512, 512): the same
    # tiles, two of them along each dim that has more than one
    Case("upstream_codegen_fill_tiled_test", UPCG.format(
        "14d16e11", "test_fill_opt_validate", "fill_tiled_test"), "upstream_codegen",
        lambda m: m.fill_tiled_test(b=32, m=512, n=256), check=check_zeroed),
    Case("upstream_codegen_fill_tiled_2d_test", UPCG.format(
        "14d16e11", "test_fill_opt_validate", "fill_tiled_2d_test"), "upstream_codegen",
        lambda m: m.fill_tiled_2d_test(m=512, n=512), check=check_zeroed),
    Case("upstream_codegen_layout_transform_roundtrip_kernel", UPCG.format(
        "1c3c809a", "test_layout_transform_opt_validate", "layout_transform_roundtrip_kernel"),
        "upstream_codegen", lambda m: m.layout_transform_roundtrip_kernel(),
        check=check_copied),
] + [
    # (its float16 case checks that SUNMMIO's code generator rejects float16: not a kernel
    # to run)
    Case(f"upstream_codegen_predicated_store_mask_{dt}", UPCG.format(
        "36f76a2a", "test_mask_index_dtype_opt_validate", "predicated_store_mask_dtype_kernel"),
        "upstream_codegen",
        lambda m, dt=dt: m.predicated_store_mask_dtype_kernel(getattr(T, dt)),
        check=check_predicated_store)
    for dt in ("bfloat16", "int16", "float32", "int32")
] + [
    # A's rows split over the mesh rows (each row's copy replicated), B's columns over the
    # mesh columns: each core's one 128x128 tile is its block of A @ B
    Case(f"upstream_codegen_pipelined_gemm_kernel_stage{ns}", UPCG.format(
        "8ccd90a9", "test_pipeline_ping_pong_opt_validate", "pipelined_gemm_kernel"),
        "upstream_codegen", lambda m, ns=ns: m.pipelined_gemm_kernel(num_stages=ns),
        shapes={"A": (512, 256), "B": (256, 512), "C": (512, 512)}, check=check_gemm)
    for ns in (4, 3)
]
_RD = ("1ceec508", "test_reduce_opt_validate", "reduce_kernel_builder")


def _shape_id(shape):
    return "x".join(map(str, shape))


CASES += [
    Case(f"upstream_codegen_reduce_{_shape_id(shape)}_axis{axis}_{dt}", UPCG.format(*_RD),
         "upstream_codegen",
         lambda m, shape=shape, axis=axis, dt=dt: m.reduce_kernel_builder(shape, axis, dtype=dt),
         check=check_reduce_sum(axis))
    for shape, axis, dt in (((1024, 32), 1, "bfloat16"), ((64, 256, 128), 0, "bfloat16"),
                            ((4, 128), 0, "float32"))
] + [
    Case(f"upstream_codegen_reduce_{_shape_id(shape)}_axis{axis}_noclear", UPCG.format(*_RD),
         "upstream_codegen",
         lambda m, shape=shape, axis=axis: m.reduce_kernel_builder(shape, axis, clear=False),
         undefined="reduce_sum(clear=False) adds into Out_shared, which nothing writes first")
    for shape, axis in (((32, 1024), 1), ((32, 1024), 0), ((256, 128), 0), ((256, 128), 1),
                        ((32, 256, 128), 1))
]
_TP = ("388c0740", "test_tile_pick_scalar_access")
CASES += [
    Case("upstream_codegen_pick_1d_side_data_kernel",
         UPCG.format(*_TP, "pick_1d_side_data_kernel"), "upstream_codegen",
         lambda m: m.pick_1d_side_data_kernel(),
         refused=r"T.MeshTensor output 'out' \(MeshShardingPolicy\(\)\) is replicated, but "
                 r"the copies of cores \(0, 0\) and \(0, 1\) disagree",
         why="out is replicated (MeshShardingPolicy()), yet each core picks "
             "values[(cid + 7) % 64] and stores its own values into its copy: the copies "
             "differ, so out has no one value"),
    Case("upstream_codegen_pick_2d_side_data_kernel",
         UPCG.format(*_TP, "pick_2d_side_data_kernel"), "upstream_codegen",
         lambda m: m.pick_2d_side_data_kernel(), check=check_pick_2d),
    # at the sizes its codegen test uses (2, 5, 256; 2 tiles)
    Case("upstream_codegen_pick_3d_side_data_kernel",
         UPCG.format(*_TP, "pick_3d_side_data_kernel"), "upstream_codegen",
         lambda m: m.pick_3d_side_data_kernel(heads=2, q_blocks=5, k_blocks=256, out_tiles=2),
         check=check_pick_3d),
    Case("upstream_codegen_pick_1d_rsram_side_data_kernel",
         UPCG.format(*_TP, "pick_1d_rsram_side_data_kernel"), "upstream_codegen",
         lambda m: m.pick_1d_rsram_side_data_kernel(),
         observe=["first_tile_value", "second_tile_value"], check=check_pick_rsram),
]


# -- the runner --------------------------------------------------------------------------------
def run_case(case: Case, seed: int = 0) -> None:
    tm.enable(mesh=case.mesh, compat=case.compat, legacy_shape=case.legacy_shape)
    try:
        mod = load(case.module)
        if case.refused is not None:
            # refused when it compiles, or at the call (a replicated output whose
            # copies the cores write differently)
            with pytest.raises(ValueError, match=case.refused):
                func = case.build(mod)
                if case.observe:
                    func = observe(func, case.observe)
                kernel = compile_mesh_kernel(func, compile_flags=FLAGS)
                kernel(*harness.call_args(func, make_inputs(
                    func, case.shapes, np.random.default_rng(seed or case.seed)).tensors))
            return
        func = case.build(mod)
        if case.observe:
            func = observe(func, case.observe)
        kernel = compile_mesh_kernel(func, compile_flags=FLAGS)
        inp = make_inputs(func, case.shapes, np.random.default_rng(seed or case.seed))
        kernel(*harness.call_args(func, inp.tensors))
        if case.undefined:
            return
        obs = {k: as_np(v) for k, v in inp.obs.items()}
        out = {str(func.buffer_map[p].name): as_np(t) for p, t in zip(func.params, inp.tensors)}
        case.check(inp, obs, out)
    finally:
        tm.enable(mesh=(4, 4))


# --- i27b ops/language/examples: the current SUNMMIO/Tilelang's ops/, language/, jit/ tests
# and examples/sunmmio/ kernels that use T.MeshTensor or T.comm ---------------------------------
UPT = ("SUNMMIO/Tilelang@3c56f270 testing/python/sunmmio/ops/test_transpose.py::"
       "mesh_transpose_kernel")


def check_transpose(transposed):
    """a replicated on every core (replicate=ALL): each core copies it to RSRAM and
    transposes it (the loop form: two round trips, so src is a again), and stores the
    result into its copy of b: b = a.T (or a). The DRAM and RSRAM layouts (ZZ, ZN) move
    no value."""
    def check(inp, obs, out):
        a = inp.arrays[0]
        np.testing.assert_array_equal(out["b"], a.T if transposed else a)
    return check


CASES += [
    Case(f"upstream_ops_transpose_{dt}_{lf}_{m}x{n}", UPT, "upstream_ops_language",
         lambda m_, m=m, n=n, dt=dt, lf=lf: m_.mesh_transpose_kernel(m, n, dt, lf),
         check=check_transpose(True))
    for m, n, dt, lf in ((64, 64, "bfloat16", "zz"), (64, 128, "bfloat16", "zn"),
                         (64, 128, "float32", "zz"))
] + [
    Case("upstream_ops_transpose_loop", UPT, "upstream_ops_language",
         lambda m_: m_.mesh_transpose_kernel(64, 128, "float32", "zn", control_flow="loop",
                                             expect_transposed=False),
         check=check_transpose(False)),
]



UPCL = ("SUNMMIO/Tilelang@14d16e11 testing/python/sunmmio/language/test_copy_legality.py::")


def check_shard_copy(inp, obs, out):
    """y=0, x=1 on 4x4: core (r, c) copies its 64x64 shard of A (the ZZ DRAM layout
    moves no value) into A_shared, sized by A.local_shape."""
    a = inp.arrays[0]
    for core in range(16):
        r, c = divmod(core, 4)
        np.testing.assert_array_equal(obs["A_shared"][core],
                                      a[64 * r:64 * r + 64, 64 * c:64 * c + 64], str(core))


CASES += [
    Case("upstream_copy_legality_let_bound_mesh_copy", f"{UPCL}_make_let_bound_mesh_copy_kernel",
         "upstream_ops_language", lambda m: m._make_let_bound_mesh_copy_kernel(),
         shapes={"A": (256, 256)}, observe=["A_shared"], check=check_shard_copy),
    Case("upstream_copy_legality_mismatched_let_bound_mesh_copy",
         f"{UPCL}_make_mismatched_let_bound_mesh_copy_kernel", "upstream_ops_language",
         lambda m: m._make_mismatched_let_bound_mesh_copy_kernel(), shapes={"A": (256, 256)},
         refused=r"StructuralEqual check failed",
         why="a (64, 64) shard copied whole into a (64, 65) buffer: the upstream's frontend "
             "raises a ValueError too (a whole-buffer copy needs equal extents)"),
]



def check_unchanged(inp, obs, out):
    """The kernel has no statement (it reads A.local_shape and B.local_shape only): every
    tensor is as it was."""
    for name, arr in zip(("A", "B", "C"), inp.arrays):
        np.testing.assert_array_equal(out[name], arr, name)


CASES += [
    Case("upstream_mesh_tensor_in_kernel", "SUNMMIO/Tilelang@5ede4cf4 testing/python/sunmmio/"
         "language/test_mesh_tensor.py::test_mesh_tensor_in_kernel", "upstream_ops_language",
         lambda m: m.test_mesh_tensor_in_kernel(), mesh=(2, 2),
         shapes={"A": (128, 128), "B": (128, 128), "C": (128, 128)}, check=check_unchanged),
]



CASES += [
    Case("upstream_jit_elementwise_add_jit", "SUNMMIO/Tilelang@04931c88 testing/python/sunmmio/"
         "jit/test_jit.py::elementwise_add_jit", "upstream_ops_language",
         lambda m: m.elementwise_add_jit.get_tir(64, 64, 32, 32, T.bfloat16, T.float32),
         shapes={"A": (64, 64), "B": (64, 64), "C": (64, 64)}, check=check_sum),
]



def check_exp2(inp, obs, out):
    """B = exp2(A) in float32 (integer A: every power of two exact), over the symbolic
    shape's uneven shards."""
    np.testing.assert_array_equal(out["B"], np.exp2(inp.arrays[0]))


CASES += [
    Case("upstream_example_elementwise_exp2_dynamic", "SUNMMIO/Tilelang@3cb93397 examples/"
         "sunmmio/elementwise/elementwise_exp2_dynamic.py::_elementwise_exp2_prim_func",
         "upstream_ops_language",
         lambda m: m._elementwise_exp2_prim_func(32, 32, T.float32, T.float32),
         shapes={"A": (200, 136), "B": (200, 136)}, check=check_exp2),
]



CASES += [
    Case("upstream_example_gqa_fwd_bhsd", "SUNMMIO/Tilelang@75d8f2ee examples/flash_attention/"
         "sunmmio_example_gqa_fwd_bhsd.py::flashattn", "upstream_ops_language",
         lambda m: m.flashattn(4, 4, 128, 64), shapes=QKV, check=check_causal_attention),
]



def check_gqa_decode(inp, obs, out):
    """GQA decoding at (4, 16, 4, 256, 128), block_N 128, float16 with float32
    accumulators: core (r, c) holds batch r, heads 4c.. and KV head c (the group of 4
    query heads that share it); mask rows replicated along each mesh row. Per key block:
    acc_s = Q K^T, -inf where mask == 0 (the mask is uint16: the inputs' negatives wrap,
    nonzero), then attention_tile's steps; the output acc_o / logsum stored in float16."""
    q, k, v, mask = (inp.arrays[i] for i in range(4))
    nb, nh, dim = q.shape
    nkv = k.shape[2]
    g = nh // nkv
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    want = np.zeros(q.shape, np.float32)
    for b in range(nb):
        for kh in range(nkv):
            qs = q[b, kh * g:(kh + 1) * g]

            def scores(kk, b=b, kh=kh, qs=qs):
                s = gemm(np.zeros((g, 128), np.float32), qs,
                         k[b, kk * 128:kk * 128 + 128, kh].T)
                return np.where(mask[b, kk * 128:kk * 128 + 128][None, :] != 0, s,
                                -np.inf).astype(np.float32)
            o, _, _ = references.attention_tile(
                scores, lambda kk, b=b, kh=kh: v[b, kk * 128:kk * 128 + 128, kh],
                k.shape[1] // 128, scale, "float16")
            want[b, kh * g:(kh + 1) * g] = rnd(o, "float16")
    assert np.isfinite(want).all() and want.any()
    np.testing.assert_array_equal(out["Output"], want)


CASES += [
    Case("upstream_example_gqa_decode", "SUNMMIO/Tilelang@3cb93397 examples/sunmmio/"
         "flash_decoding/example_gqa_decode.py::gqa_flashattn", "upstream_ops_language",
         lambda m: m.gqa_flashattn(4, 16, 4, 256, 128),
         shapes={"Q": (4, 16, 128), "K": (4, 256, 4, 128), "V": (4, 256, 4, 128),
                 "mask": (4, 256), "Output": (4, 16, 128)}, check=check_gqa_decode),
]



def check_mla_decode_mesh(inp, obs, out):
    """MLA decode at (4, 64, 1, 256, 64, 64), block_N 64, block_H 16, float16 with float32
    accumulators: core (r, c) holds batch r, heads 16c.. of Q/Q_pe/Output and keys
    64c.. of KV/K_pe. Each core gathers its row's heads; per head block h, each column c
    attends to its own 64 keys (attention_tile: scores q kv^T + q_pe k_pe^T), lse_c =
    log2f(logsum_c) + max_c * scale; the row gathers the lse_c and the scaled partials
    o_c * exp2f(lse_c - max) / sum_c exp2f(lse_c - max) (float32, summed over c in
    order) and column h stores head block h in float16."""
    q, q_pe, kv, k_pe = inp.arrays[:4]
    scale = float((64 + 64) ** -0.5 * 1.44269504)
    import ctypes
    references._LIBM.log2f.restype = ctypes.c_float
    references._LIBM.log2f.argtypes = [ctypes.c_float]
    log2f = references._libm("log2f")
    want = np.zeros(q.shape, np.float32)
    for b in range(4):
        for h in range(4):
            hs = slice(16 * h, 16 * h + 16)
            parts = []
            for c in range(4):
                ks = slice(64 * c, 64 * c + 64)

                def scores(_, hs=hs, ks=ks):
                    s_ = gemm(np.zeros((16, 64), np.float32), q[b, hs], kv[b, ks, 0].T)
                    return gemm(s_, q_pe[b, hs], k_pe[b, ks, 0].T)
                o, logsum, smax = references.attention_tile(
                    scores, lambda _, ks=ks: kv[b, ks, 0], 1, scale, "float16")
                parts.append((o, log2f(logsum) + smax * np.float32(scale)))
            lses = np.stack([p[1] for p in parts])
            top = lses.max(axis=0)
            denom = np.zeros(16, np.float32)
            for c in range(4):
                denom = denom + references.exp2f(lses[c] - top)
            total = np.zeros((16, 64), np.float32)
            for c in range(4):
                e = references.exp2f(parts[c][1] - top)
                total = total + (parts[c][0] * e[:, None]) / denom[:, None]
            want[b, hs] = rnd(total, "float16")
    assert np.isfinite(want).all() and want.any()
    np.testing.assert_array_equal(out["Output"], want)


CASES += [
    Case("upstream_example_mla_decode", "SUNMMIO/Tilelang@3cb93397 examples/sunmmio/"
         "deepseek_mla/mla_decode.py::mla_decode", "upstream_ops_language",
         lambda m: m.mla_decode(4, 64, 1, 256, 64, 64),
         shapes={"Q": (4, 64, 64), "Q_pe": (4, 64, 64), "KV": (4, 256, 1, 64),
                 "K_pe": (4, 256, 1, 64), "Output": (4, 64, 64)}, check=check_mla_decode_mesh),
]



def check_dynamic_online_softmax(inp, obs, out):
    """full_shard(0, 1) on 4x4 at (128, 128), 16x16 tiles: core (r, c) holds rows 32r..,
    columns 32c.. (bfloat16). Per row tile, over the core's column tiles: m = the tile's
    row max, s = sum from 0 of exp2f(x * scale - m * scale) (float32: TileLang widens
    the bfloat16 value to the float32 constant), lse = m * scale + log2f(exp2f(lse -
    m * scale) + s); the row gathers the four lse, top = their max, g = top +
    log2f(sum over c in order of exp2f(lse_c - top)); Y = exp2f(x * scale - g) rounded
    to bfloat16."""
    x = inp.arrays[0]
    sc = np.float32(1.44269504)
    exp2f = references.exp2f
    import ctypes
    references._LIBM.log2f.restype = ctypes.c_float
    references._LIBM.log2f.argtypes = [ctypes.c_float]
    log2f = references._libm("log2f")
    want = np.zeros(x.shape, np.float32)
    for r in range(4):
        for bx in range(2):
            rows = slice(32 * r + 16 * bx, 32 * r + 16 * bx + 16)
            lses = []
            for c in range(4):
                lse = np.full(16, -np.inf, np.float32)
                for by in range(2):
                    t = x[rows, 32 * c + 16 * by:32 * c + 16 * by + 16]
                    m = t.max(axis=1)
                    e = exp2f(t * sc - (m * sc)[:, None])
                    s = references.row_sum(e)
                    lse = m * sc + log2f(exp2f(lse - m * sc) + s)
                lses.append(lse)
            top = np.max(lses, axis=0)
            g = np.zeros(16, np.float32)
            for c in range(4):
                g = g + exp2f(lses[c] - top)
            g = top + log2f(g)
            want[rows] = rnd(exp2f(x[rows] * sc - g[:, None]), "bfloat16")
    assert np.isfinite(want).all() and want.any()
    np.testing.assert_array_equal(out["Y"], want)


CASES += [
    Case("upstream_example_dynamic_online_softmax", "SUNMMIO/Tilelang@75d8f2ee examples/"
         "sunmmio/softmax/dynamic_online_softmax.py::dynamic_softmax_kernel",
         "upstream_ops_language", lambda m: m.dynamic_softmax_kernel(16, 16, T.bfloat16),
         shapes={"X": (128, 128), "Y": (128, 128)}, check=check_dynamic_online_softmax),
]



CASES += [
    Case("upstream_example_online_softmax", "SUNMMIO/Tilelang@06f6788d examples/sunmmio/"
         "softmax/online_softmax.py::softmax_kernel", "upstream_ops_language",
         lambda m: m.softmax_kernel(128, 128, 16, 16, T.bfloat16),
         shapes={"X": (128, 128), "Y": (128, 128)}, check=check_dynamic_online_softmax),
]



def check_flashattn_bf16(inp, obs, out):
    """The current pipeline's flash attention, non-causal, all bfloat16 (accumulators
    too), at (4, 4, 256, 128), block 128: core (r, c) holds batch r, head c. Each query
    tile: attention_tile over both key blocks with bfloat16 accumulators (T.gemm
    rounding each product and sum; the exp2 arguments float32), stored in bfloat16."""
    q, k, v = inp.arrays[:3]
    scale = (1.0 / 128) ** 0.5 * 1.44269504
    want = np.zeros(q.shape, np.float32)
    for b in range(4):
        for h in range(4):
            for bx in range(2):
                rows = slice(128 * bx, 128 * bx + 128)

                def scores(kk, b=b, h=h, rows=rows):
                    return gemm(np.zeros((128, 128), np.float32), q[b, rows, h],
                                k[b, 128 * kk:128 * kk + 128, h].T, "bfloat16")
                o, _, _ = references.attention_tile(
                    scores, lambda kk, b=b, h=h: v[b, 128 * kk:128 * kk + 128, h], 2, scale,
                    "bfloat16", "bfloat16")
                want[b, rows, h] = o
    assert np.isfinite(want).all() and want.any()
    np.testing.assert_array_equal(out["Output"], want)


CASES += [
    Case("upstream_pipeline_flashattn", "SUNMMIO/Tilelang@3cb93397 testing/python/sunmmio/"
         "pipeline/test_flashattn.py::kernel_flashattn", "upstream_ops_language",
         lambda m: m.kernel_flashattn(4, 4, 256, 128, False, block_M=128, block_N=128,
                                      num_stages=1, threads=1),
         shapes={n: (4, 256, 4, 128) for n in ("Q", "K", "V", "Output")},
         check=check_flashattn_bf16),
]


# --- i26: the current codegen SUMMA that passes transpose_B=True with a square B tile -----
def check_summa_transposed_b(inp, obs, out):
    """transpose_B=True: the upstream's T.gemm takes B's tile as (N, K) (its K is the
    tile's last extent) and lays the WSRAM operand out ZZ for it (ZN without the flag),
    so the MMA multiplies by the tile's transpose. On a square tile both readings fit;
    the language's gives C's block (i, j) = sum_k A_ik @ B_kj^T, whatever the kernel's
    comment says (a later version of the file drops the flag). bf16 integer values,
    float32 sums: exact."""
    a, b = inp.arrays[:2]
    blk = [np.s_[32 * i:32 * i + 32] for i in range(4)]
    want = np.zeros_like(out["C"])
    for i in range(4):
        for j in range(4):
            want[blk[i], blk[j]] = sum(a[blk[i], blk[k]] @ b[blk[k], blk[j]].T
                                       for k in range(4))
    np.testing.assert_array_equal(out["C"], want)


CASES += [
    Case("upstream_codegen_summa_matmul_transpose_b",
         UPCG.format("60b0c120", "test_summa_opt_validate", "summa_matmul"),
         "upstream_codegen_summa", lambda m: m.summa_matmul(), shapes=S128,
         check=check_summa_transposed_b),
    Case("upstream_target_binding", "SUNMMIO/Tilelang@749eff01 testing/python/sunmmio/target/"
         "test_target.py::test_sunmmio_target_binding", "upstream_target",
         lambda m: m.test_sunmmio_target_binding(), shapes={"A": (1024, 1024)},
         check=check_unchanged),
]


# -- i28b: the current upstream's MX quantise/dequantise kernels (codegen/test_mx_quant_dequant_
# opt_validate.py), T.mxfp8 and T.mxfp4 in on-chip buffers --------------------------------------
def mx_quantize(a: np.ndarray, element: str, data_max: float) -> np.ndarray:
    """The upstream kernels' OCP MX quantisation of a (32, 32) bfloat16 tile, one scale
    per row of 32: amax = max |a| (float32), scale = bfloat16(max(amax, 1e-4) *
    float32(1 / data_max)) converted to float8_e8m0fnu (ties up), read back through
    bfloat16; each element float32(a) / scale, clamped to +-data_max, converted to the
    element kind. Returns the dequantised values, element times scale (exact in
    float32), which T.mx_pack / T.mx_unpack carry unchanged and an MX T.gemm
    multiplies."""
    import ml_dtypes

    a = np.asarray(a, np.float32)
    amax = np.abs(a).max(axis=1)
    safe = np.maximum(amax, np.float32(1e-4))
    s_bf = rnd(safe * np.float32(1.0 / data_max), "bfloat16")
    e8 = s_bf.astype(ml_dtypes.float8_e8m0fnu)
    sf = e8.astype(ml_dtypes.bfloat16).astype(np.float32)
    raw = a / sf[:, None]
    clamped = np.minimum(np.maximum(raw, np.float32(-data_max)), np.float32(data_max))
    q = clamped.astype(getattr(ml_dtypes, element)).astype(np.float32)
    return q * sf[:, None]


def mx_quant_dequant(a: np.ndarray, element: str, data_max: float) -> np.ndarray:
    """The upstream's OCP MX quantise, T.mx_pack, T.mx_unpack, dequantise of a (32, 32)
    bfloat16 block, one scale per row of 32: amax = max |a| (float32), scale =
    bfloat16(max(amax, 1e-4) * float32(1 / data_max)) converted to float8_e8m0fnu (ties
    up); each element float32(a) / scale (float32 through bfloat16), clamped to
    +-data_max, converted to the element kind; the round trip through the MX buffer
    gives back data and scales; y = bfloat16(element * scale)."""
    return rnd(mx_quantize(a, element, data_max), "bfloat16")


def mx_mma(a: np.ndarray, b: np.ndarray, element: str, data_max: float,
           b_by_cols: bool) -> np.ndarray:
    """The upstream's quantised MMA kernels: A (32, 64) quantised per 32x32 tile along
    its rows; B (32, 64) the same (``T.gemm(..., transpose_B=True)``), or B (64, 32)
    per 32x32 tile along its columns (MXZNZ, ``reduce_absmax`` over dim 0); C =
    T.gemm of the dequantised values into a cleared bfloat16 accumulator."""
    def q(x):
        return np.concatenate([mx_quantize(x[:, 32 * k:32 * k + 32], element, data_max)
                               for k in range(x.shape[1] // 32)], axis=1)

    ad = q(a)
    bd = q(b.T).T if b_by_cols else q(b).T
    return gemm(np.zeros((32, 32), np.float32), ad, bd, "bfloat16")


MX_CHAIN = {"mxfp8": ("float8_e4m3fn", 448.0), "mxfp4": ("float4_e2m1fn", 6.0)}


def check_mx_chain(kind):
    element, data_max = MX_CHAIN[kind]

    def check(inp, obs, out):
        want = mx_quant_dequant(inp.arrays[0], element, data_max)
        assert np.isfinite(want).all() and want.any()
        np.testing.assert_array_equal(out["Y"], want)
    return check


def _mx_args(kind):
    element, data_max = MX_CHAIN[kind]
    return (getattr(T, kind), getattr(T, element), element, data_max)


CASES += [
    Case(f"upstream_codegen_mx_{variant}_{kind}", "SUNMMIO/Tilelang@6b3a471c testing/python/"
         f"sunmmio/codegen/test_mx_quant_dequant_opt_validate.py::mx_ocp_quant_dequant_full_"
         f"chain_kernel_{variant}", "upstream_codegen_mx",
         lambda m, kind=kind, variant=variant: getattr(
             m, f"mx_ocp_quant_dequant_full_chain_kernel_{variant}")(*_mx_args(kind)),
         shapes={"A": (32, 32), "Y": (32, 32)}, check=check_mx_chain(kind))
    for variant in ("for_debug", "original") for kind in ("mxfp8", "mxfp4")
]


def check_mx_mma(kind, b_by_cols):
    element, data_max = MX_CHAIN[kind]

    def check(inp, obs, out):
        want = mx_mma(inp.arrays[0], inp.arrays[1], element, data_max, b_by_cols)
        assert np.isfinite(want).all() and want.any()
        np.testing.assert_array_equal(out["C"], want)
    return check


MX_MMA = {"quantized_mma_kernel_for_debug": False,
          "quantized_mma_mxznz_weight_kernel_for_debug": True}

CASES += [
    Case(f"upstream_codegen_mx_{name.replace('_kernel_for_debug', '')}_{kind}",
         "SUNMMIO/Tilelang@6b3a471c testing/python/sunmmio/codegen/test_mx_quant_dequant_"
         f"opt_validate.py::mx_ocp_{name}", "upstream_codegen_mx",
         lambda m, kind=kind, name=name: getattr(m, f"mx_ocp_{name}")(*_mx_args(kind)),
         shapes={"A": (32, 64), "B": (64, 32) if cols else (32, 64), "C": (32, 32)},
         check=check_mx_mma(kind, cols))
    for name, cols in MX_MMA.items() for kind in ("mxfp8", "mxfp4")
]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MX_MMA))
@pytest.mark.parametrize("kind", ["mxfp8", "mxfp4"])
def test_mx_mma_rounds_real_values_as_the_upstream_defines(kind, name):
    """The quantised MMA kernels on bfloat16 values of every magnitude: quantisation
    rounds, the bfloat16 accumulator rounds each product and sum, and the result is
    the reference's bit for bit."""
    tm.enable(mesh=(4, 4))
    try:
        m = load("upstream_codegen_mx")
        kernel = compile_mesh_kernel(getattr(m, f"mx_ocp_{name}")(*_mx_args(kind)),
                                     compile_flags=FLAGS)
        rng = np.random.default_rng(6)
        cols = MX_MMA[name]

        def draw(shape):
            x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, (shape[0], 1)))
            return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        a, b = draw((32, 64)), draw((64, 32) if cols else (32, 64))
        c = torch.zeros((32, 32), dtype=torch.bfloat16)
        kernel(a, b, c)
        want = mx_mma(a.float().numpy(), b.float().numpy(), *MX_CHAIN[kind], cols)
        assert np.isfinite(want).all()
        np.testing.assert_array_equal(c.float().numpy(), want)
    finally:
        tm.enable(mesh=(4, 4))


# --- i27 (branch i27, issue 27): the current SUNMMIO/Tilelang's codegen tests whose steps
# call C math functions (corpus/upstream_codegen_math.py), checked against references
# that call the C library's float32 functions as the generated C does ------------------
UPM = "SUNMMIO/Tilelang@{} testing/python/sunmmio/codegen/{}.py::{}"


def check_softplus(dtype):
    """mesh_as_line(0) over the 16 cores, N = 9000 (balanced shards of 563 and 562: the
    last tile of each a partial one, under T.Tiles' T.min extent): every element is
    max(v, 0) + logf(1 + expf(-|v|)), the C library's float32 functions, each
    operation rounded to ``dtype`` (bfloat16: expf's result, 1 + e, logf's result and
    the sum each rounded once)."""
    def check(inp, obs, out):
        v = rnd(inp.arrays[0], dtype)
        op = references.op
        e = op(references.expf(-np.abs(v)), dtype)
        lg = op(references.logf(op(np.float32(1) + e, dtype)), dtype)
        want = op(np.maximum(v, np.float32(0)) + lg, dtype)
        np.testing.assert_array_equal(out["B"], want)
    return check


_SP = ("ebc40d27", "test_softplus_1d_dynamic_opt_validate")
CASES += [
    Case(f"upstream_codegen_softplus_{name}", UPM.format(*_SP, fn), "upstream_codegen_math",
         lambda m, fn=fn, bn=bn, dt=dt: getattr(m, fn)(block_N=bn, in_dtype=getattr(T, dt),
                                                       out_dtype=getattr(T, dt)),
         shapes={"A": (9000,), "B": (9000,)}, check=check_softplus(dt))
    for name, fn, bn, dt in (
        ("bound_value", "softplus_1d_dynamic", 256, "float32"),
        ("inline_load", "softplus_1d_dynamic_inline", 256, "float32"),
        ("bound_value_bf16", "softplus_1d_dynamic", 512, "bfloat16"),
        ("inline_load_bf16", "softplus_1d_dynamic_inline", 512, "bfloat16"))
]


def _roundf(x):
    """C's roundf: halves away from zero."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x - np.trunc(x)) == np.float32(0.5),
                    np.trunc(x) + np.sign(x), np.round(x)).astype(np.float32)


def check_tile_ops(inp, obs, out):
    """Replicated A, B, C (bfloat16): every core computes all of C. As the generated C
    computes it: x = max(a, b); y = min(x, bf(expf(b))); z = logf(|y| + 1) in float32
    (the T.float32 constant); C = bf(z > 0.5 ? 1 / sqrtf(z + 1) : 1 / (z + 2)) (T.rsqrt
    is TVM's 1 / sqrt, T.ieee_frcp 1 / x in round-to-nearest); then C = bf(bf(bf(bf(
    bf(ceilf(C)) + bf(floorf(a))) + bf(roundf(b))) + bf(truncf(a))) - a + fmodf(b, 3)),
    the last two terms float32 (bf: one rounding to bfloat16)."""
    bf = lambda v: rnd(v, "bfloat16")  # noqa: E731
    a, b = (bf(v) for v in inp.arrays[:2])
    f1 = np.float32(1)
    y = np.minimum(np.maximum(a, b), bf(references.expf(b)))
    z = references.logf(np.abs(y) + f1)
    c = bf(np.where(z > np.float32(0.5), f1 / references.sqrtf(z + f1),
                    f1 / (z + np.float32(2))))
    s = bf(bf(np.ceil(c)) + bf(np.floor(a)))
    s = bf(s + bf(_roundf(b)))
    s = bf(s + bf(np.trunc(a)))
    want = bf((s + (np.float32(0) - a)) + np.fmod(b, np.float32(3)))
    np.testing.assert_array_equal(out["C"], want)


_TO = ("14d16e11", "test_tile_ops_opt_validate")
CASES += [
    Case("upstream_codegen_tile_elementwise_ops_2d", UPM.format(
        *_TO, "tile_elementwise_ops_2d_test"), "upstream_codegen_math",
        lambda m: m.tile_elementwise_ops_2d_test(), check=check_tile_ops),
    Case("upstream_codegen_tile_elementwise_ops", UPM.format(*_TO, "tile_elementwise_ops_test"),
         "upstream_codegen_math", lambda m: m.tile_elementwise_ops_test(), check=check_tile_ops),
]


def check_softmax_dynamic(bm, bn):
    """full_shard(0, 1) on 4x4 (float32): core (r, c) holds a quarter of X's rows and of
    its columns, in bm x bn tiles. Per row tile, over the core's column tiles: m = the
    tile's row max, s = the sum from 0 of exp2f(x * scale - m * scale), lse = m * scale
    + log2f(exp2f(lse - m * scale) + s) (from -inf); the row gathers the four lse, top =
    their max, g = top + log2f(the sum from 0, in column order, of exp2f(lse_c -
    top)); Y = exp2f(x * scale - g). Each operation in float32, the C library's exp2f
    and log2f."""
    def check(inp, obs, out):
        x = inp.arrays[0]
        sc = np.float32(1.44269504)
        exp2f, log2f = references.exp2f, references.log2f
        lm, ln = x.shape[0] // 4, x.shape[1] // 4
        want = np.zeros(x.shape, np.float32)
        for r in range(4):
            for bx in range(lm // bm):
                rows = slice(lm * r + bm * bx, lm * r + bm * bx + bm)
                lses = []
                for c in range(4):
                    lse = np.full(bm, -np.inf, np.float32)
                    for by in range(ln // bn):
                        t = x[rows, ln * c + bn * by:ln * c + bn * by + bn]
                        m = t.max(axis=1)
                        e = exp2f(t * sc - (m * sc)[:, None])
                        lse = m * sc + log2f(exp2f(lse - m * sc) + references.row_sum(e))
                    lses.append(lse)
                top = np.max(lses, axis=0)
                g = np.zeros(bm, np.float32)
                for c in range(4):
                    g = g + exp2f(lses[c] - top)
                g = top + log2f(g)
                want[rows] = exp2f(x[rows] * sc - g[:, None])
        assert np.isfinite(want).all() and want.any()
        np.testing.assert_array_equal(out["Y"], want)
    return check


def check_sinkhorn(inp, obs, out):
    """mesh_as_line(0) over the 16 cores, 4096 tokens (256 a core): each core takes its
    first token t = 256 c. rms = 1 / sqrtf(sqrsum[t] / 512 + 1e-6) (T.rsqrt: TVM's 1 /
    sqrt); cm = 0 but its 4x4 corner cm[i, j] = gemm_mul[t, 8 + 4i + j] * rms *
    scale[0, 2] + base[0, 8 + 4i + j]; on the corner only (the reductions name
    cm[0:4, 0:4]): cm = expf(cm - its row max), / (its row sum from 0 + 1e-6), / (its
    column sum from 0 + 1e-6); CombMix[t] = cm, the other tokens as given. float32
    throughout; a core whose sqrsum is negative computes NaN (compared as NaN)."""
    gm, sq, scale, base, comb = inp.arrays[:5]
    want = comb.copy()
    f1, eps = np.float32(1), np.float32(1e-6)
    with np.errstate(invalid="ignore"):
        for c in range(16):
            t = 256 * c
            rms = f1 / references.sqrtf(np.float32(sq[t] / np.float32(512)) + eps)
            mixes = gm[t] * rms
            cm = np.zeros((4, 32), np.float32)
            k = 8 + np.arange(16).reshape(4, 4)
            cm[:, :4] = mixes[k] * scale[0, 2] + base[0, k]
            cm[:, :4] = references.expf(cm[:, :4] - cm[:, :4].max(axis=1)[:, None])
            cm[:, :4] = cm[:, :4] / (references.row_sum(cm[:, :4]) + eps)[:, None]
            cm[:, :4] = cm[:, :4] / (references.row_sum(cm[:, :4].T) + eps)[None, :]
            want[t] = cm
    assert np.isfinite(want[::256]).any()
    np.testing.assert_array_equal(out["CombMix"], want)


CASES += [
    # the test's default 128x128 tiles at (1024, 1024): two tiles a dim on each core
    Case("upstream_codegen_hybrid_loop_softmax_dynamic", UPM.format(
        "60b0c120", "test_hybrid_loop_opt_validate", "softmax_dynamic"),
        "upstream_codegen_math", lambda m: m.softmax_dynamic(),
        shapes={"X": (1024, 1024), "Y": (1024, 1024)}, check=check_softmax_dynamic(128, 128)),
    Case("upstream_codegen_hybrid_tail_predicate_mask", UPM.format(
        "75d8f2ee", "test_hybrid_tail_predicate_mask_opt_validate",
        "hybrid_tail_predicate_mask_kernel"), "upstream_codegen_math",
        lambda m: m.hybrid_tail_predicate_mask_kernel(),
        shapes={"GemmOutMul": (4096, 32), "GemmOutSqrsum": (4096,), "HcScale": (1, 32),
                "HcBase": (1, 32), "CombMix": (4096, 4, 32)}, check=check_sinkhorn),
]


def check_window_attention(groups, local_window=None, global_window=0):
    """Causal GQA attention (bfloat16, float32 accumulators), 64x64 blocks: query tile
    bx of head h attends to key blocks 0..bx of KV head h // groups; a key is masked
    (-inf before the T.gemm adds q k^T) past the causal diagonal and, with
    ``local_window``, at or before q - local_window; in key block 0 of a query tile
    past the first, the first ``global_window`` keys are unmasked. Then attention_tile
    (libm's exp2f, sums in index order), the output rounded to bfloat16."""
    def check(inp, obs, out):
        q, k, v = (rnd(x, "bfloat16") for x in inp.arrays[:3])
        nb, seq, nh, dim = q.shape
        scale = (1.0 / dim) ** 0.5 * 1.44269504
        want = np.zeros(q.shape, np.float32)
        ii, jj = np.arange(64)[:, None], np.arange(64)[None, :]
        for b in range(nb):
            for h in range(nh):
                kh = h // groups
                for bx in range(seq // 64):
                    def scores(kk, b=b, kh=kh, bx=bx, h=h):
                        qp, kp = bx * 64 + ii, kk * 64 + jj
                        ok = qp >= kp
                        if local_window is not None:
                            ok = ok & (kp > qp - local_window)
                        if kk == 0 and bx > 0:
                            ok = ok | (jj < global_window)
                        mask = np.where(ok, 0, -np.inf).astype(np.float32)
                        return gemm(mask, q[b, bx * 64:bx * 64 + 64, h],
                                    k[b, kk * 64:kk * 64 + 64, kh].T)
                    o, _, _ = references.attention_tile(
                        scores, lambda kk, b=b, kh=kh: v[b, kk * 64:kk * 64 + 64, kh], bx + 1,
                        scale)
                    want[b, bx * 64:bx * 64 + 64, h] = rnd(o, "bfloat16")
        assert np.isfinite(want).all() and want.any()
        np.testing.assert_array_equal(out["Output"], want)
    return check


def _qkv(b, s, hq, hkv, d):
    return {"Q": (b, s, hq, d), "K": (b, s, hkv, d), "V": (b, s, hkv, d),
            "Output": (b, s, hq, d)}


CASES += [
    # the test's own sizes: batch 1 (mesh row 0 holds it, the other rows none), 4 heads
    Case("upstream_codegen_flashattn_gqa_fwd_bhsd", UPM.format(
        "3cb87329", "test_flash_attention_gqa_fwd_bhsd_opt_validate", "flashattn_gqa_fwd_bhsd"),
        "upstream_codegen_math", lambda m: m.flashattn_gqa_fwd_bhsd(),
        shapes=_qkv(1, 128, 4, 4, 64), check=check_window_attention(1)),
] + [
    Case(f"upstream_codegen_sliding_window_attention_qh{hq}_lw{lw}", UPM.format(
        "b7b0ca69", "test_sliding_window_attention_gqa_fwd_bhsd_opt_validate",
        "sliding_window_attention_gqa_fwd_bhsd"), "upstream_codegen_math",
        lambda m, hq=hq, lw=lw: m.sliding_window_attention_gqa_fwd_bhsd(
            1, hq, 8, 128, 128, 4, lw), shapes=_qkv(1, 128, hq, 8, 128),
        check=check_window_attention(hq // 8, lw, 4))
    for hq, lw in ((32, 64), (48, 96))
]


def check_gqa_decode_pr223(masked):
    """The test's sizes on 4x4 (float16, float32 accumulators): batch 1 on mesh row 0,
    one query head a core (core (0, c): head c), the one KV head on column 0 only
    (balanced split: the others hold none). block_H = 4: each core copies Q[0, 0:4] of
    its one-head shard (the rows past it read zeros, as every access past a shard) and
    K, V of KV head 0 of its own shard (zeros off column 0); acc_s = Q K^T (-inf where
    mask == 0 with the mask), attention_tile over the one key block, and the output's
    row 0 (the others fall past the shard) is Output[0, c], rounded to float16."""
    def check(inp, obs, out):
        q, k, v, mask = (inp.arrays[i] for i in range(4))
        scale = (1.0 / 64) ** 0.5 * 1.44269504
        want = np.zeros(q.shape, np.float32)
        for c in range(4):
            qs = np.zeros((4, 64), np.float32)
            qs[0] = q[0, c]
            kc = k[0, :, 0] if c == 0 else np.zeros((128, 64), np.float32)
            vc = v[0, :, 0] if c == 0 else np.zeros((128, 64), np.float32)

            def scores(_, qs=qs, kc=kc):
                s_ = gemm(np.zeros((4, 128), np.float32), qs, kc.T)
                if masked:
                    s_ = np.where(mask[0][None, :] != 0, s_, -np.inf).astype(np.float32)
                return s_
            o, _, _ = references.attention_tile(scores, lambda _, vc=vc: vc, 1, scale,
                                                 "float16")
            want[0, c] = rnd(o[0], "float16")
        assert np.isfinite(want).all() and want.any()
        np.testing.assert_array_equal(out["Output"], want)
    return check


CASES += [
    Case(f"upstream_codegen_gqa_decode_pr223_{'with' if masked else 'without'}_mask",
         UPM.format("4a06af7a", "test_gqa_decode_pr223_opt_validate", "gqa_decode_pr223"),
         "upstream_codegen_math",
         lambda m, masked=masked: m.gqa_decode_pr223(heads=4, kv_heads=1, dim=64,
                                                     enable_mask=masked),
         shapes={"Q": (1, 4, 64), "K": (1, 128, 1, 64), "V": (1, 128, 1, 64),
                 "mask": (1, 128), "Output": (1, 4, 64)}, check=check_gqa_decode_pr223(masked))
    for masked in (False, True)
]


def check_mixed_product(a_dt, b_dt, out_dt):
    """full_shard(0, 1) on 4x4 at (256, 512): C = A * B elementwise, in float32 when an
    operand is float32 (TileLang promotes the bfloat16 one, exactly), rounded to
    bfloat16 when both are, then stored in ``out_dt`` (one rounding)."""
    def check(inp, obs, out):
        a, b = rnd(inp.arrays[0], a_dt), rnd(inp.arrays[1], b_dt)
        prod = a * b
        if a_dt == b_dt == "bfloat16":
            prod = rnd(prod, "bfloat16")
        np.testing.assert_array_equal(out["C"], rnd(prod, out_dt))
    return check


_MP = "SUNMMIO/Tilelang@89a2375c testing/python/sunmmio/codegen/test_mixed_precision_tiles_" \
    "opt_validate.py::test_mixed_precision_tiles_preserve_multiply_and_cast_dtypes"
CASES += [
    Case(f"upstream_codegen_mixed_precision_tiles_{a[0]}{a[-2:]}_{b[0]}{b[-2:]}_{o[0]}{o[-2:]}",
         _MP, "upstream_codegen_math",
         lambda m, a=a, b=b, o=o: m.mixed_precision_mul.get_tir(a_dtype=a, b_dtype=b,
                                                                out_dtype=o),
         shapes={"A": (256, 512), "B": (256, 512), "C": (256, 512)},
         check=check_mixed_product(a, b, o))
    for a, b, o in (("bfloat16", "bfloat16", "float32"), ("float32", "float32", "bfloat16"),
                    ("bfloat16", "float32", "bfloat16"), ("bfloat16", "float32", "float32"))
]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mxfp8", "mxfp4"])
def test_mx_chain_rounds_real_values_as_the_upstream_defines(kind):
    """The full-chain kernel on bfloat16 values of every magnitude (the corpus' integer
    inputs quantise exactly): the element and scale conversions round, and the result
    is still the reference's, bit for bit."""
    tm.enable(mesh=(4, 4))
    try:
        m = load("upstream_codegen_mx")
        func = m.mx_ocp_quant_dequant_full_chain_kernel_original(*_mx_args(kind))
        kernel = compile_mesh_kernel(func, compile_flags=FLAGS)
        rng = np.random.default_rng(5)
        a = (rng.standard_normal((32, 32)) * np.exp2(rng.integers(-20, 20, (32, 1)))
             ).astype(np.float32)
        a[3] = 0.0  # a row under the 1e-4 floor
        at = torch.from_numpy(a).to(torch.bfloat16)
        y = torch.zeros((32, 32), dtype=torch.bfloat16)
        kernel(at, y)
        want = mx_quant_dequant(at.float().numpy(), *MX_CHAIN[kind])
        assert (want != rnd(at.float().numpy(), "bfloat16")).any()  # it does round
        np.testing.assert_array_equal(y.float().numpy(), want)
    finally:
        tm.enable(mesh=(4, 4))


# --- i27b codegen tiles: the current SUNMMIO/Tilelang's codegen/test_tiles_*.py kernels
# (T.Tiles loops), test_reduce_opt_validate.py's tail-region max and long bfloat16 sums ------
_TL = "SUNMMIO/Tilelang@{} testing/python/sunmmio/codegen/{}.py::{}"
_TT = ("75d8f2ee", "test_tiles_opt_validate")
_TF = ("75d8f2ee", "test_tiles_fallback_opt_validate")
_expf = references._libm("expf")


def _bf(x):
    return rnd(x, "bfloat16")


def check_dot_mul(inp, obs, out):
    """Every core (replicated tensors) computes, per element in bfloat16 (each operation
    rounded once): a2 = a * 2, b2 = a2 * b, c = exp(a2) + exp(b2), exp as the C
    library's expf; integer inputs keep a2 and b2 exact."""
    a, b = inp.arrays[:2]
    a2 = _bf(a * 2)
    b2 = _bf(a2 * b)
    want = _bf(_bf(_expf(a2)) + _bf(_expf(b2)))
    assert np.isfinite(want).all()
    np.testing.assert_array_equal(out["C"], want)


def _block_of(d, shape, bm, bn):
    """``d`` (m,) seen by the element (…, row, col) of a 3-D tensor tiled in bm x bn
    blocks: D_shared holds d[by * bm:(by + 1) * bm], indexed by the element's row
    (``i``) or column (``j``) inside its block."""
    rows = np.arange(shape[-2])
    cols = np.arange(shape[-1])
    di = d[rows][:, None] + 0 * cols[None, :]
    dj = d[(rows // bm * bm)[:, None] + (cols % bn)[None, :]]
    return di, dj


def check_tiles_broadcast(bm, bn):
    """C = (2 * (2 * (a + D_shared[i]) + D_shared[j])) * b, each step rounded to bfloat16
    (integer values below 256: exact)."""
    def check(inp, obs, out):
        a, b, _, d = inp.arrays
        di, dj = _block_of(d, a.shape, bm, bn)
        a4 = _bf(2 * _bf(_bf(2 * _bf(a + di)) + dj))
        np.testing.assert_array_equal(out["C"], _bf(a4 * b))
    return check


def check_tiles_broadcast_copy(bm, bn):
    """The second loop overwrites C: 0 where D_shared[j] >= 0, else -inf (times 2)."""
    def check(inp, obs, out):
        a, _, _, d = inp.arrays
        _, dj = _block_of(d, a.shape, bm, bn)
        want = np.broadcast_to(np.where(dj >= 0, 0.0, -np.inf).astype(np.float32), a.shape)
        np.testing.assert_array_equal(out["C"], want)
    return check


def check_tiles_1d(inp, obs, out):
    np.testing.assert_array_equal(out["C"], _bf(inp.arrays[0] * inp.arrays[1]))


def check_dynamic_extent_store(inp, obs, out):
    """q_len = clamp(q_lengths[0], 0, 128): the first ceil(q_len / 32) row tiles of 32
    are ones, the rest zeros."""
    q = int(np.clip(inp.arrays[1][0], 0, 128))
    want = np.zeros((128, 32), np.float32)
    want[:32 * -(-q // 32)] = 1
    np.testing.assert_array_equal(out["Output"], want)


def _corner(shape, rows, cols, inside=1.0, outside=0.0):
    want = np.full(shape, outside, np.float32)
    want[..., :rows, :cols] = inside
    return want


def check_every_token(name, want):
    """``name`` (16, ...) split one token per core (mesh_as_line(0) or cross_mesh_dim=0):
    every core stores the same ``want`` into its token."""
    def check(inp, obs, out):
        np.testing.assert_array_equal(out[name], np.broadcast_to(want, out[name].shape))
    return check


def check_every_core_buffer(name, want):
    def check(inp, obs, out):
        np.testing.assert_array_equal(obs[name], np.broadcast_to(want, obs[name].shape))
    return check


def check_zz_slices(inp, obs, out):
    """comb is zeroed, then its 4x16 corner copies cm, which nothing writes (no defined
    value there): rows 4-7 and columns 16-31 of every token are zeros."""
    np.testing.assert_array_equal(out["out"][:, 4:, :], 0)
    np.testing.assert_array_equal(out["out"][:, :, 16:], 0)


def _packed_2d_to_1d():
    want = np.ones((32, 32), np.float32)
    want[31] = 0
    want[31, 8:24] = 1  # A_shared[8 + 4 i + j] = 1 for i, j < 4
    return want


def check_dynamic_domain(limit):
    """valid = clamp(lengths[0], 0, limit): ones in rows 0-3, columns below valid."""
    def check(inp, obs, out):
        valid = int(np.clip(inp.arrays[1][0], 0, limit))
        check_every_token("out", _corner((32, 32), 4, valid))(inp, obs, out)
    return check


def _shape_predicate():
    want = _corner((64, 64), 60, 60, 2.0, 4.0)  # 4 / 2 inside 60x60 ...
    want[:50, :50] = 1.0                          # ... and once more inside 50x50
    return want


def check_reduce_max_rows(inp, obs, out):
    """Every region is a prefix of the tile's rows and columns, the last ones the whole
    tile: Out (filled with -inf) ends as the row maxima of A."""
    np.testing.assert_array_equal(out["Out"], inp.arrays[0].max(axis=1))


_LONG_SUM = ("the upstream lowers a bfloat16 sum along a tiled dim as per-lane bfloat16 "
             "sums across its 32-wide tiles, then one suvm.tile.reduce per tile, whose "
             "order and accumulator its SUVM dialect (outside the repository) defines; "
             "past 256 the partial sums round, so the result depends on that order")
OUT_TOKENS = {"out": (16, 8, 32)}
OUT_TOKENS32 = {"out": (16, 32, 32)}
CASES += [
    Case("upstream_codegen_tiles_dot_mul_tiled_parallel_3d", _TL.format(
        *_TT, "dot_mul_tiled_parallel_3d"), "upstream_codegen_tiles",
        # (64, 512, 1024) in blocks (2, 256, 128) at (4, 64, 64) in (2, 32, 32)
        lambda m: m.dot_mul_tiled_parallel_3d(batch=4, m=64, n=64, block_b=2, block_m=32,
                                              block_n=32),
        check=check_dot_mul),
    Case("upstream_codegen_tiles_dot_mul_tiled_parallel_2d", _TL.format(
        *_TT, "dot_mul_tiled_parallel_2d"), "upstream_codegen_tiles",
        lambda m: m.dot_mul_tiled_parallel_2d(m=64, n=128, block_m=32, block_n=64),
        check=check_dot_mul),
    Case("upstream_codegen_tiles_broadcast", _TL.format(*_TT, "tiles_broadcast"),
         "upstream_codegen_tiles",
         lambda m: m.tiles_broadcast(batch=4, m=128, n=64, block_b=2, block_m=64, block_n=32),
         check=check_tiles_broadcast(64, 32)),
    Case("upstream_codegen_tiles_broadcast_copy", _TL.format(*_TT, "tiles_broadcast_copy"),
         "upstream_codegen_tiles",
         lambda m: m.tiles_broadcast_copy(batch=4, m=128, n=64, block_b=2, block_m=64,
                                          block_n=32),
         check=check_tiles_broadcast_copy(64, 32)),
    Case("upstream_codegen_tiles_1d", _TL.format(*_TT, "tiles_1d"), "upstream_codegen_tiles",
         lambda m: m.tiles_1d(), check=check_tiles_1d),
    Case("upstream_codegen_tiles_dynamic_extent_zz_store", _TL.format(
        *_TT, "tiles_dynamic_extent_zz_store"), "upstream_codegen_tiles",
        # (seed 9: q_lengths[0] = 3, one row tile of ones; seed 0 draws 0, no tile)
        lambda m: m.tiles_dynamic_extent_zz_store(), check=check_dynamic_extent_store,
        seed=9),
    Case("upstream_codegen_tiles_rank2_first_tile_partial", _TL.format(
        *_TT, "tiles_rank2_first_tile_partial"), "upstream_codegen_tiles",
        lambda m: m.tiles_rank2_first_tile_partial(),
        check=check_every_token("output", _corner((32, 32), 4, 4))),
    Case("upstream_codegen_tiles_serialized_rank1_zz_slices", _TL.format(
        *_TF, "serialized_rank1_zz_slices_kernel"), "upstream_codegen_tiles",
        lambda m: m.serialized_rank1_zz_slices_kernel(), shapes=OUT_TOKENS,
        check=check_zz_slices),
    Case("upstream_codegen_tiles_temp_stage_subaligned_then_direct", _TL.format(
        *_TF, "temp_stage_subaligned_then_direct_kernel"), "upstream_codegen_tiles",
        lambda m: m.temp_stage_subaligned_then_direct_kernel(), shapes=OUT_TOKENS,
        check=check_every_token("out", _corner((8, 32), 4, 4))),
    Case("upstream_codegen_tiles_packed_1d_to_2d_rank1_fallback", _TL.format(
        *_TF, "packed_1d_to_2d_rank1_fallback_kernel"), "upstream_codegen_tiles",
        lambda m: m.packed_1d_to_2d_rank1_fallback_kernel(), shapes=OUT_TOKENS32,
        check=check_every_token("out", _corner((32, 32), 4, 4))),
    Case("upstream_codegen_tiles_packed_2d_to_1d_rank1_fallback", _TL.format(
        *_TF, "packed_2d_to_1d_rank1_fallback_kernel"), "upstream_codegen_tiles",
        lambda m: m.packed_2d_to_1d_rank1_fallback_kernel(), shapes=OUT_TOKENS32,
        check=check_every_token("out", _packed_2d_to_1d())),
    Case("upstream_codegen_tiles_mixed_rank_unit_side_load", _TL.format(
        *_TF, "mixed_rank_unit_side_load_kernel"), "upstream_codegen_tiles",
        lambda m: m.mixed_rank_unit_side_load_kernel(), observe=["A_shared"],
        check=check_every_core_buffer("A_shared", np.full((64, 128), 3, np.float32))),
] + [
    Case(f"upstream_codegen_tiles_{name}_scalar_fallback", _TL.format(
        *_TF, f"{name}_scalar_fallback_kernel"), "upstream_codegen_tiles",
        lambda m, name=name: getattr(m, f"{name}_scalar_fallback_kernel")(), observe=["dst"],
        check=check_every_core_buffer("dst", _corner((16, 16), 4, 4)))
    for name in ("non_unit_coefficient", "multi_axis_index", "transposed_access")
] + [
    Case("upstream_codegen_tiles_dynamic_rank2_domain", _TL.format(
        "45037a58", "test_tiles_dynamic_domain_opt_validate", "dynamic_rank2_domain_kernel"),
        "upstream_codegen_tiles", lambda m: m.dynamic_rank2_domain_kernel(),
        shapes=OUT_TOKENS32, check=check_dynamic_domain(32)),
    Case("upstream_codegen_tiles_dynamic_rank1_tail_mask", _TL.format(
        "3969fa44", "test_tiles_rank1_tail_mask_opt_validate",
        "dynamic_rank1_tail_mask_kernel"), "upstream_codegen_tiles",
        lambda m: m.dynamic_rank1_tail_mask_kernel(), shapes=OUT_TOKENS32,
        check=check_dynamic_domain(4)),
    Case("upstream_codegen_tiles_shape_rank1_side_buffer_predicate", _TL.format(
        "11b567a9", "test_tiles_shape_predicate_projection_opt_validate",
        "tiles_shape_rank1_side_buffer_predicate_kernel"), "upstream_codegen_tiles",
        lambda m: m.tiles_shape_rank1_side_buffer_predicate_kernel(),
        shapes={"Out": (16, 64, 64)}, check=check_every_token("Out", _shape_predicate())),
    Case("upstream_codegen_reduce_tail_region_kernel", UPCG.format(
        "1ceec508", "test_reduce_opt_validate", "reduce_tail_region_kernel"),
        "upstream_codegen", lambda m: m.reduce_tail_region_kernel(),
        check=check_reduce_max_rows),
] + [
    Case(f"upstream_codegen_reduce_{_shape_id(shape)}_axis{axis}_bfloat16", UPCG.format(*_RD),
         "upstream_codegen",
         lambda m, shape=shape, axis=axis: m.reduce_kernel_builder(shape, axis),
         undefined=_LONG_SUM)
    for shape, axis in (((256, 128), 1), ((32, 256, 128), 2), ((512, 128), 1),
                        ((32, 64, 256), 2))
] + [
    # (64, 512, 1024) in blocks (32, 256, 128) at (32, 512, 256): two blocks along the
    # reduced and the kept dims
    Case(f"upstream_codegen_reduce_tiled_test_axis{axis}", UPCG.format(
        "1ceec508", "test_reduce_opt_validate", "reduce_tiled_test"), "upstream_codegen_tiles",
        lambda m, axis=axis, clear=clear: m.reduce_tiled_test(
            b=32, m=512, n=256, reduce_axis=axis, clear=clear),
        undefined=_LONG_SUM)
    for axis, clear in ((1, False), (2, True))
] + [
    # T.MeshTensor dims m * nrows, k * ncols: sizes read back from the caller's tensors;
    # its all_gathers run in loops over the symbolic shard: compiled for each call's sizes
    # (two row tiles and two k steps per core)
    Case("upstream_codegen_dynamic_allocate_copy_mma_kernel", UPCG.format(
        "1c3c809a", "test_base_dynamic_opt_validate", "dynamic_allocate_copy_mma_kernel"),
        "upstream_codegen", lambda m: m.dynamic_allocate_copy_mma_kernel(),
        shapes={"A": (256, 256), "B": (256, 128), "C": (256, 128)}, check=check_gemm),
    Case("upstream_example_dynamic_b16_gemm", "SUNMMIO/Tilelang@49f101be examples/sunmmio/"
         "gemm/dynamic_b16_gemm.py::matmul_persistent_dynamic", "upstream_current",
         lambda m: m.matmul_persistent_dynamic(128, 32, 32, 32),
         shapes={"A": (256, 128), "B": (128, 256), "C": (256, 256)}, check=check_gemm),
]


# The kernels above that read ``A.shape`` of a ``T.MeshTensor`` parameter: written for the
# older API (the fork, SUNMMIO's TileLang before its shape API), they run with
# ``tm.enable(..., legacy_shape=True)``; SUNMMIO's current frontend calls it ambiguous.
READS_SHAPE = {
    "fork_codegen_gemm_matmul_persistent", "fork_codegen_summa",
    "upstream_codegen_dynamic_allocate_copy_mma_kernel",
    "upstream_codegen_gqa_decode_pr223_without_mask",
    "upstream_codegen_gqa_decode_pr223_with_mask",
    "fork_compile_pipeline_flashattn", "fork_compile_pipeline_mma_3times",
    "fork_compile_pipeline_summa", "fork_example_gemm_with_mesh_tensor",
    "fork_example_gqa_fwd_bhsd", "fork_example_sunmmio_gemm",
    "fork_example_sunmmio_gemm_dev", "fork_flash_attention_gqa_fwd_bhsd_opt_validate",
    "fork_layout_inference_matmul_persistent", "fork_legalize_gemm_diverging_scopes",
    "fork_legalize_gemm_flash_attention_shaped",
    "fork_legalize_gemm_multi_consumer_groupable",
    "fork_legalize_gemm_multi_consumer_non_groupable",
    "fork_legalize_gemm_multiple_writers", "fork_legalize_gemm_no_reaching_writer",
    "fork_legalize_gemm_with_allgather", "fork_legalize_gemm_with_copy_to_asram",
    "fork_legalize_gemm_with_hoisted_allgather",
    "fork_legalize_gemm_with_hoisted_allgather_dirty_source",
    "fork_legalize_gemm_with_hoisted_copy_writer",
    "fork_legalize_gemm_with_hoisted_copy_writer_bf16_acc",
    "fork_legalize_gemm_with_hoisted_writer_dirty_source",
    "fork_legalize_gemm_with_two_independent_hoisted_writers",
    "fork_matmul_persistent_opt_validate", "fork_mesh_tensor_in_kernel",
    "fork_mla_decode_dynamic_length_no_split", "fork_mla_decode_no_split",
    "fork_mla_decode_split", "fork_mla_decode_split_combine_probe", "fork_pipeline_comm",
    "fork_pipeline_overall", "upstream_codegen_dynamic_zz_allocate_copy_mma_kernel",
    "upstream_example_elementwise_add", "upstream_example_gemm_with_mesh_tensor",
    "upstream_layout_inference_matmul_persistent", "upstream_pipeline_kernel_overall",
    "upstream_pipeline_mma_3times",
}
assert READS_SHAPE <= {c.id for c in CASES}
CASES = [replace(c, legacy_shape=True) if c.id in READS_SHAPE else c for c in CASES]


# --- i28: the current SUNMMIO/Tilelang's transform/, layout/, pipeline/ and language/ tests not
# yet above (corpus/upstream_transform_layout.py) -----------------------------------------------
UPT28 = "SUNMMIO/Tilelang@{} testing/python/sunmmio/{}.py::{}"


def _t28(id_, commit, path, name, build, **kw):
    return Case(id_, UPT28.format(commit, path, name), "upstream_transform_layout", build, **kw)


def check_params_unchanged(inp, obs, out):
    """No statement writes a tensor: each is as the caller gave it."""
    for p, arr in zip(out, inp.arrays):
        if arr is not None:
            np.testing.assert_array_equal(out[p], arr, p)


def check_scratch(index, want):
    """Every core stores ``want`` at ``index`` of its ``scratch`` (the rest of it is never
    written: not compared)."""
    def check(inp, obs, out):
        for core in range(obs["scratch"].shape[0]):
            assert obs["scratch"][core][index] == want, core
    return check


def check_gemm_exact(inp, obs, out):
    """C = A @ B in float32 (integer bfloat16 values: every sum exact)."""
    np.testing.assert_array_equal(out["C"], inp.arrays[0] @ inp.arrays[1])


def check_row_tiled(name, reps):
    """Every core's ``name`` holds A repeated ``reps`` (the gathered copies of its
    row's cores, each read from DRAM or copied from the same global A)."""
    def check(inp, obs, out):
        want = np.tile(inp.arrays[0], reps)
        for core in range(obs[name].shape[0]):
            np.testing.assert_array_equal(obs[name][core], want, str(core))
    return check


def check_symbolic_gqa(inp, obs, out):
    """y=0, x=2 on 4x4 of (2, 32, 4, 32) Q/Output and (2, 32, 2, 32) K/V, balanced: core
    (r, c) holds batch r (rows 0-1), Q head c and, for c < 2, KV head c (the others'
    slots hold zeros past their empty parts). Each core with a batch: acc_s = Q K^T,
    acc_o = bf16(acc_s) V, both bfloat16 accumulators, stored in bfloat16; heads 2-3 read
    a zero K and V (0)."""
    q, k, v = inp.arrays[:3]
    want = np.zeros(q.shape, np.float32)
    for r in range(2):
        for c in range(2):
            s = gemm(np.zeros((32, 32), np.float32), q[r, :, c], k[r, :, c].T, "bfloat16")
            want[r, :, c] = gemm(np.zeros((32, 32), np.float32), s, v[r, :, c], "bfloat16")
    assert want.any()
    np.testing.assert_array_equal(out["Output"], want)


def _line_blocks(a, b, c0, ncores, grid, step):
    """cross_mesh_dim=0 on ``ncores`` cores (each its ``rows`` of A, B and C, in order)
    with T.Kernel(gx, gy): block (bx, by) runs on core (bx + gx by) % ncores, reads its
    core's 32x32 tiles (zeros past the part) and stores tile (by, bx) of its part of C
    (nothing past it). ``step(a_tiles, b_tiles)`` is the block's C tile."""
    gx, gy = grid
    rows = a.shape[0] // ncores
    want = c0.copy()
    for by in range(gy):
        for bx in range(gx):
            core = (bx + gx * by) % ncores
            part = slice(rows * core, rows * core + rows)
            at = [references.tile(a[part], (by * 32, 32 * kk), (32, 32)) for kk in range(4)]
            bt = [references.tile(b[part], (32 * kk, bx * 32), (32, 32)) for kk in range(4)]
            acc = step(at, bt)
            r0 = by * 32
            n = max(0, min(32, rows - r0))
            want[part][r0:r0 + n, bx * 32:bx * 32 + 32] = acc[:n]
    return want


def line_check(ncores, grid, step):
    def check(inp, obs, out):
        a, b, c = (rnd(x, "float16") for x in inp.arrays[:3])
        np.testing.assert_array_equal(out["C"], _line_blocks(a, b, c, ncores, grid, step))
    return check


def _late_k(at, bt):
    """``if k > 1`` around the k step: only K tiles 2 and 3 (zeros past a 32-row part)."""
    acc = np.zeros((32, 32), np.float32)
    for x, y in list(zip(at, bt))[2:]:
        acc = gemm(acc, x, y)
    return acc


def check_sliced_conflict_line(inp, obs, out):
    """T.Kernel() on 4x4, cross_mesh_dim=0: core c holds rows 8c.. of A and B; its
    32x32 A_shared and B_shared hold them (zeros past row 8, float16). The T.gemms that
    write B_shared then A_shared read their operands first; C_shared accumulates from
    memory nothing wrote (not compared)."""
    for core in range(16):
        a, b = (rnd(references.tile(x[8 * core:8 * core + 8], (0, 0), (32, 32)), "float16")
                for x in inp.arrays[:2])
        b2 = b.copy()
        b2[0:16, 0:16] = gemm(b[0:16, 0:16], a[0:16, 0:16], b[0:16, 4:20], "float16")
        a2 = a.copy()
        a2[0:16, 0:16] = gemm(a[0:16, 0:16], a[0:16, 0:16], b2[0:16, 4:20], "float16")
        np.testing.assert_array_equal(obs["A_shared"][core], a2, str(core))
        np.testing.assert_array_equal(obs["B_shared"][core], b2, str(core))


def check_copy_b(src=np.s_[:], dst=np.s_[:]):
    """T.Kernel(1): core 0 copies the replicated A through RSRAM into B[dst] (the
    layouts, padded or not, move no value); the rest of B is as it was."""
    def check(inp, obs, out):
        a, b = inp.arrays[:2]
        want = b.copy()
        want[dst] = a[src]
        np.testing.assert_array_equal(out["B"], want)
    return check


def check_core0_holds(name, src):
    """T.Kernel(1): core 0's ``name`` holds A[src] (the other cores run nothing)."""
    def check(inp, obs, out):
        np.testing.assert_array_equal(obs[name][0], inp.arrays[0][src])
    return check


LT = ("18c17731", "transform/test_layout_transform")
RMS = ("25478d65", "transform/test_resolve_mesh_symbols")
GLU = ("75d8f2ee", "transform/test_global_layout_utils")
ISS = ("3cb87329", "transform/test_infer_sram_scope")
VTV = ("4e815297", "transform/test_tilelang_transform_validate_tile_view_regions")
S64 = {"A": (64, 64), "B": (64, 64), "C": (64, 64)}
NOT_CLEARED = "T.gemm accumulates into C_shared, which nothing writes first"
NOTHING_SENT = ("its comm op sends an on-chip buffer that nothing writes (the test checks "
                "the regions)")

CASES += [
    _t28("upstream_language_mesh_tensor_shape_api_in_kernel", "1f6a0068",
         "language/test_mesh_tensor_shape_api", "test_mesh_tensor_shape_api_in_kernel",
         lambda m: m.test_mesh_tensor_shape_api_in_kernel(), shapes={"A": (513, 4097)},
         check=check_params_unchanged),
    _t28("upstream_language_mesh_tensor_same_dim_row_then_col_extent", "1f6a0068",
         "language/test_mesh_tensor_shape_api", "test_mesh_tensor_same_dim_row_then_col_extent",
         lambda m: m.test_mesh_tensor_same_dim_row_then_col_extent(), shapes={"A": (65, 9)},
         check=check_params_unchanged),
    _t28("upstream_transform_resolve_mesh_symbols_gemm", *RMS, "_symbolic_mesh_gemm_mod",
         lambda m: m._symbolic_mesh_gemm_mod()["main"], shapes=S128, check=check_gemm_exact),
    _t28("upstream_transform_resolve_mesh_symbols_all_gather", *RMS,
         "_symbolic_mesh_all_gather_mod", lambda m: m._symbolic_mesh_all_gather_mod()["main"],
         observe=["A_shared_dist"], check=check_row_tiled("A_shared_dist", (1, 4))),
    _t28("upstream_transform_resolve_mesh_symbols_gqa", *RMS, "_symbolic_mesh_gqa_mod",
         lambda m: m._symbolic_mesh_gqa_mod()["main"],
         shapes={"Q": (2, 32, 4, 32), "K": (2, 32, 2, 32), "V": (2, 32, 2, 32),
                 "Output": (2, 32, 4, 32)}, check=check_symbolic_gqa),
    _t28("upstream_transform_resolve_mesh_symbols_intrinsics", *RMS,
         "test_resolve_replaces_mesh_intrinsics_in_body_and_kernel_extent",
         lambda m: m.test_resolve_replaces_mesh_intrinsics_in_body_and_kernel_extent()["main"],
         observe=["scratch"], check=check_scratch((0, 0, 0), 24.0)),
    _t28("upstream_transform_resolve_mesh_symbols_buffer_map", *RMS,
         "test_resolve_updates_default_mesh_tensor_buffer_map_and_layout_metadata",
         lambda m: m.test_resolve_updates_default_mesh_tensor_buffer_map_and_layout_metadata()[
             "main"], shapes={"A": (128, 96)}, check=check_params_unchanged),
    _t28("upstream_transform_resolve_mesh_symbols_default_ncores", *RMS,
         "test_lower_and_optimize_resolve_kernel_default_mesh_ncores",
         lambda m: m.test_lower_and_optimize_resolve_kernel_default_mesh_ncores()["main"],
         observe=["scratch"], check=check_scratch((0,), 24.0)),
    _t28("upstream_transform_global_layout_populated", *GLU,
         "test_global_buffer_layout_populated_for_sunmmio",
         lambda m: m.test_global_buffer_layout_populated_for_sunmmio(), shapes=S64,
         undefined=NOT_CLEARED),
    _t28("upstream_transform_global_layout_row_major_values", *GLU,
         "test_row_major_global_layout_values",
         lambda m: m.test_row_major_global_layout_values(), shapes=S64, undefined=NOT_CLEARED),
    _t28("upstream_transform_global_layout_dynamic_shape", *GLU,
         "test_dynamic_shape_global_buffer_layout",
         lambda m: m.test_dynamic_shape_global_buffer_layout(), shapes=S64,
         refused=r"T.MeshTensor output 'C' .* is replicated, but the copies of cores \(0, 0\) "
                 r"and \(0, 1\) disagree",
         why="C is replicated on every core, yet each block writes only its own tile of its "
             "core's copy: the copies differ, so C has no one value"),
    _t28("upstream_transform_sram_scope_matmul", *ISS, "matmul",
         lambda m: m.matmul(128, 128, 128, 32, 32, 32), shapes=S128,
         check=line_check(16, (4, 4), _plain)),
    _t28("upstream_transform_sram_scope_auto_insert_copy_matmul", *ISS,
         "auto_insert_copy_matmul", lambda m: m.auto_insert_copy_matmul(128, 128, 128, 32, 32, 32),
         shapes=S128, check=line_check(16, (4, 4), _aliased)),
    _t28("upstream_transform_sram_scope_sliced_conflict_matmul", *ISS, "sliced_conflict_matmul",
         lambda m: m.sliced_conflict_matmul(), shapes=S128, observe=["A_shared", "B_shared"],
         check=check_sliced_conflict_line),
    _t28("upstream_pipeline_transform_matmul", "1f6a0068", "transform/test_pipeline", "matmul",
         lambda m: m.pipeline_matmul(128, 128, 128, 32, 32, 32, 3), mesh=(2, 2), shapes=S128,
         check=line_check(4, (4, 4), _plain)),
    _t28("upstream_pipeline_transform_if_matmul", "1f6a0068", "transform/test_pipeline",
         "if_matmul", lambda m: m.if_matmul(128, 128, 128, 32, 32, 32, 3), mesh=(2, 2),
         shapes=S128, check=line_check(4, (4, 4), _late_k)),
    _t28("upstream_layout_transform_mismatched_copy", *LT, "mismatched_copy_kernel",
         lambda m: m.mismatched_copy_kernel()["main"],
         shapes={"A": (128, 128), "B": (128, 128)}, check=check_copy_b()),
    _t28("upstream_layout_transform_zz_dram", *LT, "zz_dram_kernel",
         lambda m: m.zz_dram_kernel()["main"], shapes={"A": (128, 128), "B": (128, 128)},
         check=check_copy_b()),
    _t28("upstream_layout_transform_matched_copy", *LT, "matched_copy_kernel",
         lambda m: m.matched_copy_kernel()["main"], shapes={"A": (128, 128)},
         check=check_params_unchanged),
    _t28("upstream_layout_transform_zz_dram_reduce", *LT, "zz_dram_reduce_kernel",
         lambda m: m.zz_dram_reduce_kernel()["main"],
         shapes={"A": (3, 256, 256), "Out": (3, 256)}, check=check_reduce_f16),
] + [
    _t28(f"upstream_layout_transform_padded_rsram_copy_{r}x{c}", *LT, "padded_rsram_copy_kernel",
         lambda m, r=r, c=c: m.padded_rsram_copy_kernel(r, c)["main"],
         shapes={"A": (r, c), "B": (r, c)}, check=check_copy_b())
    for r, c in ((2, 40), (32, 40))
] + [
    _t28("upstream_layout_transform_padded_rsram_copy_3d", *LT, "padded_rsram_copy_kernel_3d",
         lambda m: m.padded_rsram_copy_kernel_3d(2, 3, 40)["main"],
         shapes={"A": (2, 3, 40), "B": (2, 3, 40)}, check=check_copy_b()),
    _t28("upstream_layout_transform_unit_dim_source", *LT, "unit_dim_source_kernel",
         lambda m: m.unit_dim_source_kernel()["main"], shapes={"A": (2, 2, 2, 64)},
         observe=["S"], check=check_core0_holds("S", np.s_[0, :, 0, :])),
    _t28("upstream_layout_transform_unit_dim_dest", *LT, "unit_dim_dest_kernel",
         lambda m: m.unit_dim_dest_kernel()["main"], shapes={"A": (2, 64), "B": (2, 2, 2, 64)},
         check=check_copy_b(dst=np.s_[0, :, 0, :])),
    _t28("upstream_layout_transform_unit_dim_source_pad", *LT, "unit_dim_source_pad_kernel",
         lambda m: m.unit_dim_source_pad_kernel()["main"], shapes={"A": (2, 2, 2, 40)},
         observe=["X"], check=check_core0_holds("X", np.s_[0, :, 0, :])),
    _t28("upstream_layout_transform_leading_unit_dim_3d", *LT, "leading_unit_dim_3d_kernel",
         lambda m: m.leading_unit_dim_3d_kernel()["main"], shapes={"A": (2, 2, 64)},
         observe=["S"], check=check_core0_holds("S", np.s_[0])),
    _t28("upstream_layout_transform_aligned_rsram_copy", *LT,
         "test_aligned_rsram_copy_already_32_multiple_stays_plain",
         lambda m: m.test_aligned_rsram_copy_already_32_multiple_stays_plain(),
         shapes={"A": (2, 64), "B": (2, 64)}, check=check_copy_b()),
] + [
    _t28(f"upstream_transform_validate_tile_view_{c}", *VTV, f"_make_comm_kernel({c!r})",
         lambda m, c=c: m._make_comm_kernel(c)["main"], undefined=NOTHING_SENT)
    for c in ("broadcast_valid", "broadcast_illegal_non_major_split", "put_valid",
              "allgather_legacy_valid", "allgather_axis_last_valid", "allgather_axis0_valid")
] + [
    _t28("upstream_transform_validate_tile_view_broadcast_scalar_src_oob", *VTV,
         "_make_comm_kernel('broadcast_scalar_src_oob')",
         lambda m: m._make_comm_kernel("broadcast_scalar_src_oob")["main"],
         refused=r"T.comm.broadcast region starts outside buffer shape: A_shared\[dim=0\], "
                 r"min=999",
         why="the source A_shared[999, 0] lies past the (128, 128) buffer: the upstream's "
             "frontend raises the same ValueError"),
    _t28("upstream_transform_validate_tile_view_allgather_axis0_nonzero_recv_min_oob", *VTV,
         "_make_comm_kernel('allgather_axis0_nonzero_recv_min_oob')",
         lambda m: m._make_comm_kernel("allgather_axis0_nonzero_recv_min_oob")["main"],
         refused=r"T.comm.all_gather: receive buffer shape must be \[512, 32\] to hold "
                 r"gathered data from 16 cores, but got \[480, 32\]",
         why="R_shared[32:544] is clipped to the buffer's 480 rows, too few for 16 slots of "
             "32: the upstream's frontend raises a ValueError too (its src extent is larger "
             "than the dst extent)"),
    Case("upstream_transform_legalize_datapath_allgather_dram_to_rsram_axis0",
         "SUNMMIO/Tilelang@bfb622b4 testing/python/sunmmio/transform/test_legalize_datapath.py"
         "::allgather_dram_to_rsram", "upstream_transform_layout",
         lambda m: m.allgather_dram_to_rsram(32, 32)["main"], observe=["A_gathered"],
         check=check_gather_from_dram("A_gathered", 4)),
    Case("upstream_pipeline_ilp_mesh_flashattn_new", "SUNMMIO/Tilelang@3b5993cb testing/python/"
         "transform/sunmmio_mesh_kernel_new_syntax_reference.py::mesh_flashattn_new",
         "upstream_transform_layout",
         lambda m: m.mesh_flashattn_new(batch=4, heads=4, seq_len=256, dim=128, groups=1,
                                        block_M=128, block_N=128, num_stages=1),
         shapes={n: (4, 256, 4, 128) for n in ("Q", "K", "V", "Output")},
         check=check_flashattn_bf16),
    Case("upstream_transform_make_packed_api_dynamic", "SUNMMIO/Tilelang@749eff01 testing/"
         "python/sunmmio/transform/test_make_packed_api_mesh_tensor.py::"
         "_elementwise_add_prim_func", "upstream_current",
         lambda m: m._elementwise_add_prim_func(T.dynamic("m"), T.dynamic("n"), 32, 32,
                                                T.bfloat16, T.float32),
         shapes={"A": (200, 136), "B": (200, 136), "C": (200, 136)}, check=check_sum,
         legacy_shape=True),
] + [
    _t28(f"upstream_layout_transform_padded_rsram_copy_{r}x{c}", *LT, "padded_rsram_copy_kernel",
         lambda m, r=r, c=c: m.padded_rsram_copy_kernel(r, c)["main"],
         shapes={"A": (r, c), "B": (r, c)},
         refused=rf"T.copy\(A -> X\): X is laid out padded row-major \(40 columns at a pitch "
                 rf"of 64\).*at most 32, here {r}",
         why=f"{r} rows of 40 float16 columns, padded to 64 in RSRAM: SUNMMIO's pad/unpad "
             f"layout transform moves at most 32 rows, and its compiler refuses the copy "
             f"(the chip cannot run it as written)")
    for r, c in ((40, 40), (33, 40))
]


# -- i28b (second round): MX T.MeshTensor parameters and comm ops on MX buffers: the
# quantise-only and dequantise-only kernels (codegen/test_mx_quant_dequant_opt_validate.py),
# the SUMMAs over MX slices (codegen/test_mx_gemm.py, codegen/test_sunmmio_codegen_mx_dtype_
# opt_validate.py) --------------------------------------------------------------------------
def mx_quantize_parts(a: np.ndarray, element: str, data_max: float) -> tuple:
    """:func:`mx_quantize` of an (R, 32 n) bfloat16 array, each row's 32-element
    groups on their own: the elements (float32 values of ``element``) and the scale
    grid (R, n) (float32 values of float8_e8m0fnu)."""
    import ml_dtypes

    a = np.asarray(a, np.float32)
    qs, ss = [], []
    for k in range(a.shape[1] // 32):
        t = a[:, 32 * k:32 * k + 32]
        safe = np.maximum(np.abs(t).max(axis=1), np.float32(1e-4))
        e8 = rnd(safe * np.float32(1.0 / data_max), "bfloat16").astype(
            ml_dtypes.float8_e8m0fnu)
        sf = e8.astype(ml_dtypes.bfloat16).astype(np.float32)
        clamped = np.clip(t / sf[:, None], np.float32(-data_max), np.float32(data_max))
        qs.append(clamped.astype(getattr(ml_dtypes, element)).astype(np.float32))
        ss.append(e8.astype(np.float32))
    return np.concatenate(qs, axis=1), np.stack(ss, axis=1)


def _element_values(x: np.ndarray, element: str) -> np.ndarray:
    """An MX output's elements as float32 values (float4 comes back as its codes)."""
    import ml_dtypes
    if element == "float4_e2m1fn":
        return x.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    return x


def check_mx_quant(kind):
    element, data_max = MX_CHAIN[kind]

    def check(inp, obs, out):
        q, s = mx_quantize_parts(inp.arrays[0], element, data_max)
        assert q.any() and np.isfinite(s).all()
        np.testing.assert_array_equal(_element_values(out["MX"], element), q)
        np.testing.assert_array_equal(out["MX_scales"], s)
    return check


def check_mx_dequant(kind):
    def check(inp, obs, out):
        e, s = inp.arrays[0], inp.arrays[1]
        want = rnd(e * np.repeat(s, 32, axis=1), "bfloat16")
        assert want.any()
        np.testing.assert_array_equal(out["Y"], want)
    return check


MX_SHAPES = {"kernel": (128, 32), "generic_shape_kernel": (64, 64)}
CASES += [
    Case(f"upstream_codegen_mx_{op}_{shape.replace('kernel', '').strip('_') or 'aligned'}_"
         f"{kind}", "SUNMMIO/Tilelang@6b3a471c testing/python/sunmmio/codegen/test_mx_quant_"
         f"dequant_opt_validate.py::mx_ocp_{op}_{shape}_for_debug", "upstream_codegen_mx",
         lambda m, kind=kind, op=op, shape=shape: getattr(
             m, f"mx_ocp_{op}_{shape}_for_debug")(*_mx_args(kind)),
         check=(check_mx_quant if op == "quant" else check_mx_dequant)(kind))
    for op in ("quant", "dequant") for shape in MX_SHAPES for kind in ("mxfp8", "mxfp4")
]


def check_mx_summa(a_kind, b_kind):
    """C = T.gemm of A's values by B's (one K step: each core's slices of K gathered
    into the whole K, in order) in the bfloat16 accumulator; an MX operand's values
    are its elements times the scale of their 32-element group along K."""
    def values(arrays, i, kind, axis):
        if kind is None:
            return arrays[i], i + 1
        return arrays[i] * np.repeat(arrays[i + 1], 32, axis=axis), i + 2

    def check(inp, obs, out):
        a, i = values(inp.arrays, 0, a_kind, 1)
        b, _ = values(inp.arrays, i, b_kind, 0)
        want = gemm(np.zeros((a.shape[0], b.shape[1]), np.float32), a, b, "bfloat16")
        assert want.any()
        np.testing.assert_array_equal(out["C"], want)
    return check


def _summa_case(source, factory, test, kind, a_kind, b_layout="mxznz", a_layout=None):
    n, block_n = (256, 64) if kind == "mxfp8" else (128, 32)
    kw = dict(K=512, N=n, block_N=block_n, block_K=128, b_layout_kind=b_layout)
    if a_layout:
        kw["a_layout_kind"] = a_layout
    # T.mxfp8 exists once tm.enable ran: the dtypes are read when the case builds
    return Case(f"upstream_codegen_mx_{test}_{kind}", f"{source}::{test}",
                "upstream_codegen_mx",
                lambda m, kw=kw: getattr(m, factory)(
                    a_dtype=getattr(T, a_kind or "bfloat16"), b_dtype=getattr(T, kind), **kw),
                shapes={"A": (128, 512), "A_scales": (128, 16), "B": (512, n),
                        "B_scales": (16, n), "C": (128, n)},
                check=check_mx_summa(a_kind, kind))


_MX_GEMM = "SUNMMIO/Tilelang@b7b0ca69 testing/python/sunmmio/codegen/test_mx_gemm.py"
_MX_DTYPE = ("SUNMMIO/Tilelang@fbc7887a testing/python/sunmmio/codegen/test_sunmmio_codegen_"
             "mx_dtype_opt_validate.py")
CASES += [
    case for kind in ("mxfp8", "mxfp4") for case in (
        _summa_case(_MX_GEMM, "matmul_mx_operand_kernel", "gemm_only_b", kind, None),
        _summa_case(_MX_GEMM, "matmul_mx_operand_kernel", "gemm_row_major_a", kind, kind),
        _summa_case(_MX_GEMM, "matmul_mx_operand_kernel", "gemm_both_a_b", kind, kind,
                    a_layout="mxzz"),
        _summa_case(_MX_DTYPE, "matmul_mx_operand_kernel_mx_dtype", "row_major_activation",
                    kind, kind),
        _summa_case(_MX_DTYPE, "matmul_mx_operand_kernel_mx_dtype",
                    "activation_and_weight", kind, kind, a_layout="mxzz"))
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel(case):
    run_case(case)


def test_every_case_names_its_source_and_says_what_it_expects():
    for c in CASES:
        assert re.match(r"(wanghz18/Tilelang-Mesh|SUNMMIO/Tilelang)@[0-9a-f]{8} \S+", c.source)
        assert sum((c.refused is not None, c.check is not None, bool(c.undefined))) == 1, c.id
        assert c.refused is None or c.why, c.id
    assert len({c.id for c in CASES}) == len(CASES)


def test_the_docs_table_is_this_corpus():
    """docs/tilelang_mesh.md lists every case, with its source and result, and the
    counts; a case added here and not there (or the other way) fails."""
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "tilelang_mesh.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\S+) `([^`]+)` \| (exact|refused|no defined result)",
                      doc, re.MULTILINE)
    want = [(c.id, *c.source.split(" ", 1),
             "exact" if c.check else "refused" if c.refused else "no defined result")
            for c in CASES]
    assert rows == want
    n = len(CASES)
    exact = sum(1 for c in CASES if c.check)
    assert f"Of\n{n} kernels: {exact} exact" in doc or f"Of {n} kernels: {exact} exact" in doc
