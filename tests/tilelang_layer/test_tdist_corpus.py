"""The corpus of T.dist kernels: the kernels of SUNMMIO's TileLang (SUNMMIO/Tilelang)
inter_rank tests, ported by changing import lines only (tdist_corpus/*.py name each
source file and commit), each run on every rank in process, checked (the early and the
late delivery agree) and compared with a NumPy reference written from the upstream's
semantics, or refused where the upstream gives the kernel no defined result (CASES
says why). docs/tdist.md has the table; test_the_docs_table_is_this_corpus keeps them
in step.

The kernels are IR tests: their on-chip buffers are never written by the kernel. The
harness (tdist_corpus/harness.py) gives the buffers a kernel reads values when each
core's program starts (``seed``) and reads buffers back when it ends (``observe``); a
MeshTensor parameter takes the global tensor (every rank a copy: none is rank-sharded).
"""
from __future__ import annotations

import importlib.util
import pathlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402
import torch  # noqa: E402

from meshtensor.tilelang import compile_mesh_kernel  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402

if not hasattr(tm, "mesh_ncols"):  # SUNMMIO's T.Kernel() and T.MeshTensor API (issue 27)
    pytest.skip("the corpus needs SUNMMIO's current launch and T.MeshTensor API",
                allow_module_level=True)

_spec = importlib.util.spec_from_file_location(
    "tdist_corpus_harness", pathlib.Path(__file__).parent / "tdist_corpus" / "harness.py")
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)

pytestmark = pytest.mark.slow
UP = "SUNMMIO/Tilelang"
SHOW = "inter_rank/show_dist_tir.py @6642f434"
MESH = (2, 2)


@dataclass
class Case:
    """One corpus kernel: ``factory`` of module ``module`` built for ``world`` ranks on
    :data:`MESH`; ``seeds``: on-chip buffer -> how to fill it (``"rand"``, or a function
    ``(rank, core) -> array``); ``observe``: buffers read back; ``tensors``: parameter
    name -> global shape (a MeshTensor); ``check(env)`` compares with NumPy.
    ``refused``: the error (a regex) where the upstream gives no defined result;
    ``why``: the table's note. ``kwargs``: ``get_tir``'s arguments (beside the
    world); ``error``: the refusal's type; ``gap``: a kernel with a defined result that
    we refuse (a strict xfail naming what is missing); ``rank_inputs``: each rank its own values of the MeshTensors
    (``env.before[name][rank]``), not one copy; ``scalars``: the scalar parameters'
    values (every rank; in parameter order); ``mesh``: the core mesh (the upstream's own
    where its kernels name rows or cores that :data:`MESH` lacks); ``split``: the
    MeshTensors go in as global tensors, each rank getting its part as a call of the
    kernel gives it (``env.tensors[name][0]``: the global result; no seeds, no observed
    buffers). A ``factory`` that is a test function of the upstream defining its kernel
    inside itself is called as it is (inside ``tm.world(world)``): refused cases only."""

    id: str
    module: str
    factory: str
    world: int = 4
    seeds: dict = field(default_factory=dict)
    observe: list = field(default_factory=list)
    tensors: dict = field(default_factory=dict)
    check: Callable | None = None
    refused: str | None = None
    why: str = ""
    source: str = SHOW
    kwargs: dict = field(default_factory=dict)
    rank_inputs: bool = False
    error: type = ValueError
    gap: str = ""
    scalars: dict = field(default_factory=dict)
    mesh: tuple = MESH
    split: bool = False


@dataclass
class Env:
    """What a run saw: ``init[name][rank]`` and ``obs[name][rank]`` (``(cores, *shape)``
    float64 arrays), ``tensors[name][rank]`` (after the run), the world and mesh."""

    world: int
    init: dict
    obs: dict
    tensors: dict
    before: dict
    mesh: tuple = MESH
    func: Any = None  # the kernel as built (split cases)

    @property
    def cores(self) -> int:
        return self.mesh[0] * self.mesh[1]

    def rc(self, core: int) -> tuple[int, int]:
        return divmod(core, self.mesh[1])

    def core(self, r: int, c: int) -> int:
        return r * self.mesh[1] + c


def eq(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(got, want, err_msg=what)


# -- references (rank q receives from rank p; cores linear, (row, col) = divmod) ---------
def ring_copy(pairs: list, src_row: Callable = lambda r: r) -> Callable:
    """``dst`` (a region of it) on rank q, core (r, c) = ``src`` of rank q - 1, core
    (src_row(r), c): ``pairs`` of (src name, dst name, dst slice)."""
    def check(e: Env) -> None:
        W = e.world
        for q in range(W):
            for k in range(e.cores):
                r, c = e.rc(k)
                sk = e.core(src_row(r), c)
                for s, d, sl in pairs:
                    eq(e.obs[d][q][k][sl], e.init[s][(q - 1) % W][sk], f"{d} rank {q} core {k}")
    return check


def all_gather_check(e: Env) -> None:
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            srcs = [e.init["src"][p][k] for p in range(W)]
            eq(e.obs["dst_new_axis"][q][k], np.stack(srcs), f"rank {q} core {k}")
            eq(e.obs["dst_axis0"][q][k], np.concatenate(srcs, axis=0), f"rank {q} core {k}")
            eq(e.obs["dst_last_axis"][q][k], np.concatenate(srcs, axis=-1), f"rank {q} core {k}")


def gather_new_axis(e: Env) -> None:
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            eq(e.obs["dst"][q][k], np.stack([e.init["src"][p][k] for p in range(W)]),
               f"rank {q} core {k}")


def all_to_all_rank(e: Env) -> None:
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            for p in range(W):
                eq(e.obs["dst"][q][k][p], e.init["src"][p][k][q], f"rank {q} core {k} slot {p}")


def all_to_all_row(e: Env) -> None:
    W, nrows = e.world, MESH[0]
    for q in range(W):
        for k in range(e.cores):
            r1, c = e.rc(k)
            for p in range(W):
                for r in range(nrows):
                    eq(e.obs["dst"][q][k][p, r], e.init["src"][p][e.core(r, c)][q, r1],
                       f"rank {q} core {k} slot {(p, r)}")


def all_reduce(e: Env) -> None:
    import ml_dtypes
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            acc = e.init["src"][0][k].astype(ml_dtypes.bfloat16)
            for p in range(1, W):  # in rank order, rounded per addition
                acc = (acc + e.init["src"][p][k].astype(ml_dtypes.bfloat16)).astype(
                    ml_dtypes.bfloat16)
            eq(e.obs["dst"][q][k], acc.astype(np.float64), f"rank {q} core {k}")


def all_to_allv_rank(e: Env) -> None:
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            for p in range(W):
                if e.init["send_counts"][p][k][q] > 0:  # a slot not sent is not defined
                    eq(e.obs["dst"][q][k][p], e.init["src"][p][k][q],
                       f"rank {q} core {k} slot {p}")


def all_to_allv_row(e: Env) -> None:
    W, nrows = e.world, MESH[0]
    for q in range(W):
        for k in range(e.cores):
            r1, c = e.rc(k)
            for p in range(W):
                for r in range(nrows):
                    sk = e.core(r, c)
                    if e.init["send_counts"][p][sk][q, r1] > 0:
                        eq(e.obs["dst"][q][k][p, r], e.init["src"][p][sk][q, r1],
                           f"rank {q} core {k} slot {(p, r)}")


def dram_cross_row(e: Env) -> None:
    # routes [[0, rank + 1, 1]]: row 0 of each column sends its A shard to B on row 1 of
    # the next rank; B's row-0 shards keep their input
    A, B0, W = e.before["A"], e.before["B"], e.world
    for q in range(W):
        eq(e.tensors["B"][q][:16], B0[:16], f"B rank {q} rows 0-15")
        eq(e.tensors["B"][q][16:], A[:16], f"B rank {q} rows 16-31")


def signal_kinds(e: Env) -> None:
    W = e.world
    for q in range(W):
        for k in range(e.cores):
            eq(e.obs["dst"][q][k], e.init["src"][(q - 1) % W][k], f"dst rank {q} core {k}")
        eq(e.tensors["B"][q], e.init["src"][(q - 1) % W][0], f"B rank {q}")


def scope_matrix(e: Env) -> None:
    W, A = e.world, e.before["A"]
    for q in range(W):
        p = (q - 1) % W
        for k in range(e.cores):
            eq(e.obs["shared_dst0"][q][k], e.init["shared_src"][p][k], f"rank {q} core {k}")
            eq(e.obs["shared_dst1"][q][k], A[0:32], f"rank {q} core {k}")
        eq(e.tensors["B"][q][0:32], e.init["shared_src"][p][0], f"B rank {q}")
        eq(e.tensors["B"][q][32:64], A[32:64], f"B rank {q}")


def rank_guarded(e: Env) -> None:
    # only rank 1's row-0 cores send, to row 1 of rank 2 (the rest of dst is not defined)
    for c in range(MESH[1]):
        eq(e.obs["dst"][2][e.core(1, c)], e.init["src"][1][e.core(0, c)], f"rank 2 col {c}")


def local_routes(e: Env) -> None:
    # the local copy, then the on-chip put from the row above overwrites it
    for q in range(e.world):
        for k in range(e.cores):
            r, c = e.rc(k)
            eq(e.obs["dst"][q][k], e.init["src"][q][e.core((r - 1) % MESH[0], c)],
               f"rank {q} core {k}")


def tensor_ring(src: str, dst: str) -> Callable:
    """``dst`` on rank q = ``src`` of rank q - 1 (every core moves its own block)."""
    def check(e: Env) -> None:
        for q in range(e.world):
            eq(e.tensors[dst][q], e.before[src][(q - 1) % e.world], f"{dst} rank {q}")
    return check


def full_shard_block(a: np.ndarray, core: int) -> np.ndarray:
    """Core ``core``'s block of ``a`` under ``full_shard(0, 1)`` (rows over mesh rows,
    columns over mesh columns)."""
    (r, c), (h, w) = divmod(core, MESH[1]), (a.shape[0] // MESH[0], a.shape[1] // MESH[1])
    return a[r * h:(r + 1) * h, c * w:(c + 1) * w]


def dram_to_rsram(e: Env) -> None:
    for q in range(e.world):
        for k in range(e.cores):
            eq(e.obs["dst"][q][k], full_shard_block(e.before["A"][(q - 1) % e.world], k),
               f"dst rank {q} core {k}")


def local_copy(e: Env) -> None:
    for q in range(e.world):
        for k in range(e.cores):
            eq(e.obs["dst"][q][k], e.init["src"][q][k], f"dst rank {q} core {k}")


def multi_signal(e: Env) -> None:
    W = e.world
    for q in range(W):
        eq(e.tensors["B"][q], e.before["A"][(q - 1) % W], f"B rank {q}")
        for k in range(e.cores):
            want = full_shard_block(e.before["A"][(q - 1) % W], k)
            for d in ("sram_dst_0", "sram_dst_1"):
                eq(e.obs[d][q][k], want, f"{d} rank {q} core {k}")


def from_rank0(e: Env) -> None:
    # rank 0 sends to ranks 1 and 2; dst of ranks 0 and 3 is not defined
    for q in (1, 2):
        for k in range(e.cores):
            eq(e.obs["dst"][q][k], e.init["src"][0][k], f"dst rank {q} core {k}")


def routed_to(dst_row: int) -> Callable:
    """Row 0 of each column sends to row ``dst_row`` of the next rank (the rest of
    ``dst`` is not defined)."""
    def check(e: Env) -> None:
        for q in range(e.world):
            for c in range(MESH[1]):
                eq(e.obs["dst"][q][e.core(dst_row, c)],
                   e.init["src"][(q - 1) % e.world][e.core(0, c)], f"rank {q} col {c}")
    return check


def runs(e: Env) -> None:
    """Nothing to compare (signals only): it must run, without deadlock or race."""


def _same_over_cores(shape: tuple) -> Callable:
    """A seed equal on every core of a rank (a core-replicated output is written from it)."""
    def f(rank: int, core: int, rng: Any) -> np.ndarray:
        return np.random.default_rng(1000 + rank).integers(-8, 9, shape).astype(np.float32)
    return f


CASES = [
    Case("rsram_cross_row", "show_dist_tir", "rsram_cross_row_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))], src_row=lambda r: (r - 1) % MESH[0]),
         why="a put to the next rank's next row (routed on the source chip)"),
    Case("signal_list_wait_all", "show_dist_tir", "signal_list_wait_all_kernel_factory",
         seeds={"src0": "rand", "src1": "rand"}, observe=["dst"],
         check=ring_copy([("src0", "dst", slice(0, 32)), ("src1", "dst", slice(32, 64))]),
         why="two puts into regions of one buffer, a SignalList, wait_all"),
    Case("dram_cross_row", "show_dist_tir", "dram_cross_row_kernel_factory",
         tensors={"A": (32, 32), "B": (32, 32)}, check=dram_cross_row,
         why="routed_put between DRAM shards, row 0 to row 1 of the next rank"),
    Case("local_rank_routes", "show_dist_tir", "local_rank_routes_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=local_routes,
         why="puts to one's own rank: a local copy, then an on-chip put to the next row "
             "(synchronous, in program order, as the upstream lowers them)"),
    Case("signal_kind_generation", "show_dist_tir", "signal_kind_generation_kernel_factory",
         seeds={"src": _same_over_cores((32,))}, observe=["dst"],
         tensors={"B": (32,)}, check=signal_kinds,
         why="the six signal kinds, three puts into RSRAM and three into DRAM"),
    Case("p2p_scope_matrix", "show_dist_tir", "p2p_scope_matrix_kernel_factory",
         seeds={"shared_src": _same_over_cores((32,))},
         observe=["shared_dst0", "shared_dst1"], tensors={"A": (64,), "B": (64,)},
         check=scope_matrix, why="RSRAM/DRAM sources and destinations, all four pairs"),
    Case("rank_guarded_routed_put", "show_dist_tir", "rank_guarded_routed_put_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=rank_guarded,
         why="routed_put with src_rank=1"),
    Case("signal_only_sync", "show_dist_tir", "signal_only_sync_kernel_factory", check=runs,
         why="put_signal, barrier_arrive and their waits"),
    Case("manual_sender_wait", "show_dist_tir", "manual_sender_wait_kernel_factory",
         seeds={"src": "rand",
                "send_counts": lambda r, k, rng: np.array(
                    [1 if p == (r + 1) % 4 else 0 for p in range(4)], np.float32),
                "recv_counts": lambda r, k, rng: np.array(
                    [1 if p == (r - 1) % 4 else 0 for p in range(4)], np.float32)},
         observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
         why="manual expectations per sender (VALUE signals), puts under a count test; "
             "counts seeded as a ring"),
    Case("manual_signal_wave", "show_dist_tir", "manual_signal_wave_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
         why="20 manual VALUE signals in waves of 8 (the same src each time)"),
    Case("collective_all_gather", "show_dist_tir", "collective_all_gather_kernel_factory",
         seeds={"src": "rand"}, observe=["dst_new_axis", "dst_axis0", "dst_last_axis"],
         check=all_gather_check, why="all_gather with axis None, 0 and -1"),
    Case("collective_all_gather_wait_any", "show_dist_tir",
         "collective_all_gather_wait_any_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=gather_new_axis,
         why="all_gather's completion drained by wait_any"),
    Case("collective_all_to_all_rank", "show_dist_tir",
         "collective_all_to_all_rank_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=all_to_all_rank,
         why="all_to_all over ranks"),
    Case("collective_all_to_all_row", "show_dist_tir", "collective_all_to_all_row_kernel_factory",
         world=2, seeds={"src": "rand"}, observe=["dst"], check=all_to_all_row,
         why="all_to_all over (rank, row) endpoints (world 2, as upstream)"),
    Case("collective_all_reduce", "show_dist_tir", "collective_all_reduce_kernel_factory",
         seeds={"src": "rand"}, observe=["dst"], check=all_reduce,
         why="all_reduce sum in bfloat16, in rank order"),
    Case("collective_all_to_allv_rank", "show_dist_tir",
         "collective_all_to_allv_rank_kernel_factory",
         seeds={"src": "rand", **{k: None for k in ("send_counts", "recv_counts")}},
         observe=["dst"], check=all_to_allv_rank,
         why="all_to_allv over ranks, completion drained by wait_any"),
    Case("collective_all_to_allv_wait_all", "show_dist_tir",
         "collective_all_to_allv_wait_all_kernel_factory",
         seeds={"src": "rand", **{k: None for k in ("send_counts", "recv_counts")}},
         observe=["dst"], check=all_to_allv_rank, why="all_to_allv, wait_all"),
    Case("collective_all_to_allv_single_signal", "show_dist_tir",
         "collective_all_to_allv_single_signal_kernel_factory",
         seeds={"src": "rand", **{k: None for k in ("send_counts", "recv_counts")}},
         observe=["dst"], check=all_to_allv_rank, why="all_to_allv with one INC signal"),
    Case("collective_all_to_allv_row", "show_dist_tir", "collective_all_to_allv_row_kernel_factory",
         world=2,
         seeds={"src": "rand", **{k: None for k in ("send_counts", "recv_counts")}},
         observe=["dst"], check=all_to_allv_row,
         why="all_to_allv over (rank, row) endpoints, wait_any (world 2)"),
    Case("dist_barrier", "show_dist_tir", "dist_barrier_kernel_factory", check=runs,
         why="barrier"),
]

P2P = "inter_rank/test_dist_p2p.py @6642f434"
BARRIER = "inter_rank/test_dist_barrier.py @5dbb28cb"
GATHER = "inter_rank/test_dist_collective_allgather.py @592789f1"
ONE_RANK = "world_size=1 disables Rank communication"
NEVER_SUBMITTED = "deadlock: every rank is blocked"
# the upstream's earlier API (592789f1): a put left at once; under the current one
# (6642f434) a put waits in the core's queue for a T.dist.submit() the kernel lacks
EARLIER_API = "earlier API: no T.dist.submit(), so its puts never leave (below)"
_AB = {"A": (32, 32), "B": (32, 32)}
CASES += [
    Case("p2p_minimal_put", "dist_p2p", "minimal_put_kernel_factory", source=P2P,
         kwargs={"M": 32, "N": 32}, tensors=_AB, rank_inputs=True,
         check=tensor_ring("A", "B"),
         why="DRAM shard -> RSRAM, put to the next rank, wait_signal, wait, RSRAM -> DRAM"),
    Case("p2p_wait_signal_global_acquire", "dist_p2p",
         "wait_signal_global_acquire_kernel_factory", source=P2P,
         kwargs={"M": 32, "N": 32}, tensors=_AB, rank_inputs=True,
         check=tensor_ring("A", "B"),
         why="an unrelated copy between submit and wait_signal; the source never drained"),
    Case("p2p_dram_to_dram", "dist_p2p", "dram_to_dram_kernel_factory", source=P2P,
         tensors=_AB, rank_inputs=True, check=tensor_ring("A", "B"),
         why="a put from a DRAM shard into the next rank's DRAM shard"),
    Case("p2p_dram_to_rsram", "dist_p2p", "dram_to_rsram_kernel_factory", source=P2P,
         tensors={"A": (32, 32)}, rank_inputs=True, observe=["dst"], check=dram_to_rsram,
         why="a put from a DRAM shard into the next rank's RSRAM"),
    Case("p2p_minimal_put_world1", "dist_p2p", "minimal_put_kernel_factory", source=P2P,
         world=1, kwargs={"M": 32, "N": 32}, tensors=_AB, refused=ONE_RANK,
         why="world 1: the upstream refuses communication in a one-rank kernel"),
    Case("barrier_auto", "dist_barrier", "barrier_kernel_factory", source=BARRIER,
         check=runs, why="barrier with its internal INC signal (group=None spelled out)"),
    Case("barrier_dram_inc", "dist_barrier", "barrier_kernel_factory", source=BARRIER,
         kwargs={"explicit": True, "signal_kind": "DRAM_FLAGREG_INC"}, check=runs,
         why="barrier on an explicit DRAM INC signal"),
    Case("barrier_repeated", "dist_barrier", "repeated_barrier_kernel_factory",
         source=BARRIER, check=runs, why="two barriers on one signal (two epochs)"),
    Case("barrier_world1", "dist_barrier", "barrier_kernel_factory", source=BARRIER,
         world=1, refused=ONE_RANK, why="world 1: the upstream requires world_size > 1"),
    Case("barrier_group", "dist_barrier", "barrier_kernel_factory", source=BARRIER,
         kwargs={"group": (0, 1)}, refused="group is reserved",
         why="a group: reserved upstream (its NotImplementedError)"),
    Case("barrier_value_signal", "dist_barrier", "barrier_kernel_factory", source=BARRIER,
         kwargs={"explicit": True, "signal_kind": "SRAM_FLAGREG_VALUE"},
         refused="automatic or INC flagreg signal",
         why="a VALUE signal: the upstream requires an INC one"),
]
for _id, _kw in (("allgather_axis_none", {}), ("allgather_axis0", {"axis": 0}),
                 ("allgather_axis_last", {"axis": -1})):
    CASES.append(Case(_id, "dist_collective_allgather", "allgather_kernel_factory",
                      source=GATHER, kwargs=_kw, seeds={"src": "rand"},
                      refused=NEVER_SUBMITTED, why=EARLIER_API))
CASES += [
    Case("allgather_scope_combinations", "dist_collective_allgather",
         "allgather_scope_combinations_kernel_factory", source=GATHER, world=2,
         seeds={"src": "rand"}, tensors={"A": (32, 32), "B": (2, 32, 32)},
         refused=NEVER_SUBMITTED, why=EARLIER_API + " (world 2, as upstream)"),
    Case("allgather_repeated_signal", "dist_collective_allgather",
         "repeated_allgather_signal_kernel_factory", source=GATHER, seeds={"src": "rand"},
         refused="dedicated to one collective",
         why=EARLIER_API + ": one signal for two all_gathers, which the current upstream "
             "refuses (a collective's signal serves one call)"),
    Case("allgather_signal_group_member", "dist_collective_allgather",
         "allgather_signal_group_member_kernel_factory", source=GATHER,
         kwargs={"signal_kind": "SRAM_FLAGREG_INC"}, seeds={"src": "rand"},
         refused=NEVER_SUBMITTED, why=EARLIER_API),
    Case("allgather_auto_group_member", "dist_collective_allgather",
         "allgather_signal_group_member_kernel_factory", source=GATHER,
         seeds={"src": "rand"}, refused=NEVER_SUBMITTED,
         why="the upstream refused an automatic SignalList member then; the current API "
             "takes it, and the puts are never submitted (as above)"),
    Case("allgather_world1", "dist_collective_allgather", "allgather_kernel_factory",
         source=GATHER, world=1, refused=ONE_RANK,
         why="world 1: the upstream requires world_size > 1"),
    Case("allgather_group", "dist_collective_allgather", "allgather_kernel_factory",
         source=GATHER, kwargs={"group": (0, 1)}, refused="group is reserved",
         why="a group: reserved upstream (its NotImplementedError)"),
    Case("allgather_axis1", "dist_collective_allgather", "allgather_kernel_factory",
         source=GATHER, kwargs={"axis": 1}, refused="only supports axis=None, axis=0",
         why="axis 1: the upstream takes None, 0 or -1"),
    Case("allgather_value_signal", "dist_collective_allgather", "allgather_kernel_factory",
         source=GATHER, kwargs={"signal_kind": "SRAM_FLAGREG_VALUE"},
         refused="automatic or INC flagreg signal",
         why="a VALUE signal: the upstream requires an automatic or INC one"),
    Case("allgather_invalid_shape", "dist_collective_allgather",
         "invalid_allgather_shape_kernel_factory", source=GATHER,
         refused="destination shape must be", why="a destination of the wrong shape"),
    Case("allgather_mismatched_dtype", "dist_collective_allgather",
         "mismatched_allgather_dtype_kernel_factory", source=GATHER, error=TypeError,
         refused="dtypes must match", why="float32 destination, bfloat16 source (TypeError)"),
    Case("allgather_overlapping", "dist_collective_allgather",
         "overlapping_allgather_kernel_factory", source=GATHER,
         refused="overlapping source and destination",
         why="the source a region of the destination"),
]


SUBMIT = "inter_rank/test_dist_submit.py @27830dcb"
_R32 = {"A": (32,), "B": (32,)}
CASES += [
    Case("submit_explicit_batch", "dist_submit", "explicit_batch_kernel_factory",
         source=SUBMIT, tensors={"A": (64,), "B": (64,)}, rank_inputs=True,
         check=tensor_ring("A", "B"),
         why="two puts of core-replicated DRAM halves in one batch, wait_all"),
    Case("submit_sugar", "dist_submit", "submit_sugar_kernel_factory", source=SUBMIT,
         tensors=_R32, rank_inputs=True, check=tensor_ring("A", "B"),
         why="put(..., submit=True)"),
    Case("submit_collective", "dist_submit", "collective_submit_kernel_factory",
         source=SUBMIT, seeds={"src": "rand"}, observe=["dst"], check=gather_new_axis,
         why="all_gather(..., submit=True)"),
    Case("submit_barrier_arrive", "dist_submit", "barrier_arrive_submit_kernel_factory",
         source=SUBMIT, check=runs, why="barrier_arrive(..., submit=True), wait_signal"),
    Case("submit_missing", "dist_submit", "missing_submit_kernel_factory", source=SUBMIT,
         tensors=_R32, refused="never submitted",
         why="a put never submitted: the upstream rejects it (send queue not submitted)"),
    Case("submit_nonempty_sugar", "dist_submit", "nonempty_sugar_kernel_factory",
         source=SUBMIT, tensors=_R32, refused="requires an empty send queue",
         why="submit=True behind a queued put: the upstream rejects it"),
    Case("submit_local_empty", "dist_submit", "local_empty_submit_kernel_factory",
         source=SUBMIT, seeds={"src": "rand"}, observe=["dst"], check=local_copy,
         why="a put to one's own rank (a local copy), then an empty submit"),
    Case("submit_cross_iteration", "dist_submit", "cross_iteration_submit_kernel_factory",
         source=SUBMIT, seeds={"src": "rand"}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))]),
         why="submit and wait at a loop's top, the put at its bottom (automatic expects)"),
    Case("submit_cross_iteration_while", "dist_submit",
         "cross_iteration_while_submit_kernel_factory", source=SUBMIT,
         seeds={"src": "rand"}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))]),
         why="the same in a while loop, manual expects of 0 then 1"),
]


STATE = "inter_rank/test_dist_signal_state.py @27830dcb"
_RING = ring_copy([("src", "dst", slice(None))])
CASES += [
    Case("state_explicit_memory_signal", "dist_signal_state",
         "explicit_memory_signal_kernel_factory", source=STATE, seeds={"src": "rand"},
         observe=["dst"], check=_RING, why="a ring put on an SRAM_MEMORY signal"),
    Case("state_reused_signal", "dist_signal_state", "reused_signal_kernel_factory",
         source=STATE, seeds={"src": "rand"}, observe=["dst"], check=_RING,
         why="one VALUE signal reused by a put and a wait in each of two iterations"),
    Case("state_two_puts_two_waits", "dist_signal_state",
         "two_puts_two_waits_kernel_factory", source=STATE, seeds={"src": "rand"},
         observe=["dst"], check=_RING,
         why="two puts of one source into one destination on a VALUE signal, two waits"),
    Case("state_multi_signal", "dist_signal_state", "multi_signal_kernel_factory",
         source=STATE, kwargs={"M": 32, "N": 32}, tensors=_AB, rank_inputs=True,
         observe=["sram_dst_0", "sram_dst_1"], check=multi_signal,
         why="four signals (SRAM INC twice, SRAM VALUE, DRAM INC, DRAM_MEMORY), five puts"),
    Case("state_multi_destination_value", "dist_signal_state",
         "multi_destination_value_kernel_factory", source=STATE, seeds={"src": "rand"},
         observe=["dst"], check=from_rank0,
         why="rank 0 puts to ranks 1 and 2 on a VALUE signal; every rank waits"),
    Case("state_multi_destination_memory", "dist_signal_state",
         "multi_destination_value_kernel_factory", source=STATE,
         kwargs={"signal_kind": "SRAM_MEMORY"}, seeds={"src": "rand"}, observe=["dst"],
         check=from_rank0, why="the same on an SRAM_MEMORY signal"),
]

MANUAL = "inter_rank/test_dist_manual_expect.py @27830dcb"
_RING_COUNTS = {
    "send_counts": lambda r, k, rng: np.array([1 if p == (r + 1) % 4 else 0
                                               for p in range(4)], np.float32),
    "expected_deltas": lambda r, k, rng: np.array([1 if p == (r - 1) % 4 else 0
                                                   for p in range(4)], np.float32)}
_A2AV = {"src": "rand", "send_counts": None, "recv_counts": None}
_ROUTED = "routed_expect_mode_kernel_factory"
CASES += [
    Case("manual_routed_r1_repeat", "dist_manual_expect", _ROUTED, source=MANUAL,
         kwargs={"dst_row": 1, "repeat": True}, seeds={"src": "rand"}, observe=["dst"],
         check=routed_to(1), why="two routed puts to row 1, a manual wait for 2 there"),
    Case("manual_routed_member_r0_value", "dist_manual_expect", _ROUTED, source=MANUAL,
         kwargs={"group_member": True, "dst_row": 0, "signal_kind": "SRAM_FLAGREG_VALUE",
                 "repeat": True}, seeds={"src": "rand"}, observe=["dst"],
         check=routed_to(0), why="the same on a VALUE SignalList member, to row 0"),
    Case("manual_routed_r1_memory", "dist_manual_expect", _ROUTED, source=MANUAL,
         kwargs={"dst_row": 1, "signal_kind": "SRAM_MEMORY", "repeat": True},
         seeds={"src": "rand"}, observe=["dst"], check=routed_to(1),
         why="the same on an SRAM_MEMORY signal"),
    Case("manual_routed_auto", "dist_manual_expect", _ROUTED, source=MANUAL,
         kwargs={"expect_mode": None, "dst_row": 1}, seeds={"src": "rand"},
         observe=["dst"], check=routed_to(1),
         why="one routed put, automatic expects: every core waits (row 0 expects none)"),
    Case("manual_routed_auto_member", "dist_manual_expect", _ROUTED, source=MANUAL,
         kwargs={"expect_mode": "auto", "group_member": True, "dst_row": 1},
         seeds={"src": "rand"}, observe=["dst"], check=routed_to(1),
         why="the same on a SignalList member, expect='auto'"),
    Case("manual_sender_signals", "dist_manual_expect",
         "manual_sender_signals_kernel_factory", source=MANUAL,
         seeds={"src": "rand", **_RING_COUNTS}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))]),
         why="a put under a seeded count test, one VALUE signal per sender, wait_signals "
             "with seeded deltas (a ring)"),
    Case("manual_sender_signals_cross", "dist_manual_expect",
         "manual_sender_signals_kernel_factory", source=MANUAL, kwargs={"cross_row": True},
         seeds={"src": "rand", **_RING_COUNTS}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))], src_row=lambda r: (r - 1) % MESH[0]),
         why="the same, to the next row: each source core's count test decides its "
             "put (the upstream carries it to the relay core)"),
    Case("manual_sender_signals_auto", "dist_manual_expect",
         "manual_sender_signals_kernel_factory", source=MANUAL,
         kwargs={"expect_mode": "auto"}, error=TypeError, refused="expect='manual'",
         why="a dynamic member of an expect='auto' list (TypeError, as upstream)"),
    Case("manual_sender_signals_bad_mode", "dist_manual_expect",
         "manual_sender_signals_kernel_factory", source=MANUAL,
         kwargs={"expect_mode": "invalid"}, refused="expect must be",
         why="expect='invalid'"),
    Case("manual_signal_wave_params", "dist_manual_expect",
         "manual_signal_wave_kernel_factory", source=MANUAL, seeds={"src": "rand"},
         observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
         why="show_dist_tir's manual_signal_wave with its sizes as parameters"),
    Case("manual_destination_loop", "dist_manual_expect",
         "manual_destination_loop_kernel_factory", source=MANUAL, seeds={"src": "rand"},
         observe=["dst"], refused="depends on the order of arrivals",
         why="every rank puts its src into one dst of every other rank: three senders' "
             "values land in one place, in an order the chip does not fix"),
    Case("manual_dynamic_member_wait", "dist_manual_expect",
         "manual_dynamic_member_wait_kernel_factory", source=MANUAL,
         seeds={"src": "rand",
                "expected_deltas": lambda r, k, rng: np.ones(7, np.float32)},
         observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
         why="a loop of puts and waits on member expert, deltas read from memory "
             "(seeded 1)"),
    Case("manual_protocol_member_none", "dist_manual_expect",
         "protocol_dynamic_member_kernel_factory", source=MANUAL, seeds=_A2AV,
         observe=["dst"], check=all_to_allv_rank,
         why="all_to_allv twice on a dynamic INC member, expect=None"),
    Case("manual_protocol_member_manual", "dist_manual_expect",
         "protocol_dynamic_member_kernel_factory", source=MANUAL,
         kwargs={"expect_mode": "manual"}, seeds=_A2AV, observe=["dst"],
         check=all_to_allv_rank, why="the same, expect='manual'"),
    Case("manual_protocol_member_auto", "dist_manual_expect",
         "protocol_dynamic_member_kernel_factory", source=MANUAL,
         kwargs={"expect_mode": "auto"}, error=TypeError,
         refused="cannot use expect='auto'",
         why="the same, expect='auto' (TypeError, as upstream)"),
]

COMPLETION = "inter_rank/test_dist_completion.py @27830dcb"
# no kernel of test_dist_completion.py sends to its manual lists: deltas seeded 0
_ZERO2 = {"expected_deltas": lambda r, k, rng: np.zeros(2, np.float32)}
CASES += [
    Case(f"completion_manual_{kind.lower()}", "dist_completion",
         "manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"signal_kind": kind}, seeds=_ZERO2, check=runs,
         why=f"has_pending / wait_any over a manual {kind} completion (deltas seeded 0)")
    for kind in ("SRAM_FLAGREG_INC", "DRAM_FLAGREG_INC", "SRAM_FLAGREG_VALUE",
                 "DRAM_FLAGREG_VALUE", "SRAM_MEMORY", "DRAM_MEMORY")]
CASES += [
    Case("completion_manual_waits_for_nobody", "dist_completion",
         "manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"signal_kind": "SRAM_FLAGREG_INC"},
         seeds={"expected_deltas": lambda r, k, rng: np.ones(2, np.float32)},
         refused="deadlock: every rank is blocked",
         why="the same with deltas seeded 1: nobody sends, every rank waits for ever"),
    Case("completion_auto", "dist_completion", "auto_completion_kernel_factory",
         source=COMPLETION, seeds={"src": "rand"}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))]),
         why="an automatic completion over two members, one of them put to"),
    Case("completion_auto_after_loop", "dist_completion",
         "auto_completion_after_loop_kernel_factory", source=COMPLETION,
         seeds={"src": "rand"}, observe=["dst"],
         check=ring_copy([("src", "dst", slice(None))]),
         why="the same with the put in a loop's first iteration"),
    Case("completion_repeated", "dist_completion",
         "repeated_manual_completion_kernel_factory", source=COMPLETION, seeds=_ZERO2,
         check=runs, why="two manual completions on one list, the first never observed"),
    Case("completion_repeated_drained", "dist_completion",
         "repeated_manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"drain_first": True}, seeds=_ZERO2, check=runs,
         why="the same, the first drained by wait_all"),
    Case("completion_repeated_observed", "dist_completion",
         "repeated_manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"observe_first": True}, seeds=_ZERO2,
         refused="must be drained",
         why="the first observed by wait_any, not drained before the second: the "
             "upstream refuses it"),
    Case("completion_loop", "dist_completion", "loop_manual_completion_kernel_factory",
         source=COMPLETION, seeds=_ZERO2, check=runs,
         why="a manual completion per iteration, never observed"),
    Case("completion_loop_drained", "dist_completion",
         "loop_manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"drain_each": True}, seeds=_ZERO2, check=runs,
         why="the same, drained in each iteration"),
    Case("completion_loop_observed", "dist_completion",
         "loop_manual_completion_kernel_factory", source=COMPLETION,
         kwargs={"observe_each": True}, seeds=_ZERO2, refused="drained in that iteration",
         why="observed in each iteration, not drained in it: the upstream refuses it"),
]


def reduce_ref(op: str, dtype: str = "bfloat16", zero_col0: bool = False,
               add_col0: bool = False) -> Callable:
    """``dst`` on every rank = ``op`` over the ranks' ``src`` in rank order 0..W-1, each
    step rounded to ``dtype``; ``zero_col0``/``add_col0``: the kernel's compute loops
    (``src[i, 0] = 0`` before, ``dst[i, 0] += 1`` after)."""
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    f = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]

    def check(e: Env) -> None:
        for k in range(e.cores):
            srcs = [e.init["src"][p][k].astype(dt) for p in range(e.world)]
            if zero_col0:
                for a in srcs:
                    a[:, 0] = 0
            acc = srcs[0]
            for a in srcs[1:]:
                acc = f(acc, a).astype(dt)
            if add_col0:
                acc[:, 0] += 1
            for q in range(e.world):
                eq(e.obs["dst"][q][k], acc.astype(np.float64), f"rank {q} core {k}")
    return check


REDUCE = "inter_rank/test_dist_collective_allreduce.py @27830dcb"
_AR = "allreduce_kernel_factory"
ORDER = "depends on the order of arrivals"
_ARL = "allreduce_loop_boundary_kernel_factory"
CASES += [
    Case(f"allreduce_{op}", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"reduce_type": op}, seeds={"src": "rand"}, observe=["dst"],
         check=reduce_ref(op.lower()),
         why=f"all_reduce {op!r} in bfloat16 (gathered, reduced in rank order)")
    for op in ("sum", "max", "min", "SUM")]
CASES += [
    Case("allreduce_compute_loops", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"compute_loops": True}, seeds={"src": "rand"}, observe=["dst"],
         check=reduce_ref("sum", zero_col0=True, add_col0=True),
         why="a local loop writes src before all_reduce, another updates dst after"),
    Case("allreduce_repeated", "dist_collective_allreduce",
         "repeated_allreduce_kernel_factory", source=REDUCE, seeds={"src": "rand"},
         observe=["dst"], check=reduce_ref("max", "float32"),
         why="sum then max into one dst on two signals (float32): max is left"),
    Case("allreduce_in_loop", "dist_collective_allreduce", "loop_allreduce_kernel_factory",
         source=REDUCE, seeds={"src": "rand"}, observe=["dst"],
         refused="all_reduce inside For/While",
         why="all_reduce in a loop: the upstream refuses it (its receive staging is "
             "reused before every rank consumed it)"),
] + [
    Case(f"allreduce_loop_{kind}", "dist_collective_allreduce", _ARL, source=REDUCE,
         kwargs={"loop_kind": kind}, scalars={"rounds": 2}, seeds={"src": "rand"},
         observe=["dst"], refused="all_reduce inside For/While",
         why=f"all_reduce in a loop ({kind}, 2 iterations), src unchanged: the upstream "
             "refuses any loop")
    for kind in ("serial", "unroll", "while", "nested", "dynamic")
] + [
    Case("allreduce_loop_distinct_members", "dist_collective_allreduce", _ARL,
         source=REDUCE, kwargs={"distinct_members": True}, scalars={"rounds": 2},
         seeds={"src": "rand"}, observe=["dst"], refused="receive staging",
         why="the same with a SignalList member per iteration: the upstream refuses it "
             "(distinct signals do not protect the staging)"),
    Case("allreduce_world1", "dist_collective_allreduce", _AR, source=REDUCE, world=1,
         refused=ONE_RANK, why="world 1: the upstream requires world_size > 1"),
    Case("allreduce_group", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"group": (0, 1)}, refused="group is reserved",
         why="a group: reserved upstream (its NotImplementedError)"),
    Case("allreduce_dram_signal", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"signal_kind": "DRAM_FLAGREG_INC"}, refused="requires an SRAM INC signal",
         why="a DRAM INC signal: the upstream requires an SRAM INC one"),
    Case("allreduce_value_signal", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"signal_kind": "SRAM_FLAGREG_VALUE"},
         refused="automatic or INC flagreg", why="a VALUE signal"),
    Case("allreduce_manual_expect", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"expect_mode": "manual"}, refused="cannot use expect='manual'",
         why="a manual-expect signal"),
    Case("allreduce_prod", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"reduce_type": "prod"}, refused="reduce_type must be one of",
         why="reduce_type 'prod': the upstream takes sum, max, min"),
    Case("allreduce_reduce_type_int", "dist_collective_allreduce", _AR, source=REDUCE,
         kwargs={"reduce_type": 0}, error=TypeError, refused="reduce_type must be a string",
         why="reduce_type 0 (TypeError, as upstream)"),
    Case("allreduce_mismatched_shape", "dist_collective_allreduce",
         "mismatched_allreduce_shape_kernel_factory", source=REDUCE,
         refused="identical shapes", why="dst (4, 7), src (4, 8)"),
    Case("allreduce_mismatched_dtype", "dist_collective_allreduce",
         "mismatched_allreduce_dtype_kernel_factory", source=REDUCE, error=TypeError,
         refused="dtypes must match", why="float32 dst, bfloat16 src (TypeError)"),
    Case("allreduce_overlapping", "dist_collective_allreduce",
         "overlapping_allreduce_kernel_factory", source=REDUCE,
         refused="overlapping source and destination", why="src and dst one buffer"),
    Case("allreduce_global_source", "dist_collective_allreduce",
         "global_allreduce_source_kernel_factory", source=REDUCE,
         tensors={"src": (4, 8)}, refused="source must use RSRAM",
         why="a DRAM (MeshTensor) source: the upstream requires RSRAM"),
]

A2A = "inter_rank/test_dist_collective_alltoall.py @592789f1"
_A2A = "alltoall_kernel_factory"
CASES += [
    Case("alltoall_rank", "dist_collective_alltoall", _A2A, source=A2A,
         seeds={"src": "rand"}, refused=NEVER_SUBMITTED, why=EARLIER_API),
    Case("alltoall_rank_world2", "dist_collective_alltoall", _A2A, source=A2A, world=2,
         seeds={"src": "rand"}, refused=NEVER_SUBMITTED, why=EARLIER_API + " (world 2)"),
    Case("alltoall_row", "dist_collective_alltoall", _A2A, source=A2A,
         kwargs={"domain": "row"}, seeds={"src": "rand"}, refused=NEVER_SUBMITTED,
         why=EARLIER_API + " (domain 'row')"),
    Case("alltoall_row_world2", "dist_collective_alltoall", _A2A, source=A2A, world=2,
         kwargs={"domain": "row"}, seeds={"src": "rand"}, refused=NEVER_SUBMITTED,
         why=EARLIER_API + " (domain 'row', world 2)"),
    Case("alltoall_scope_combinations", "dist_collective_alltoall",
         "alltoall_scope_combinations_kernel_factory", source=A2A, world=2,
         seeds={"src": "rand"}, tensors={"A": (2, 32, 32), "B": (2, 32, 32)},
         refused=NEVER_SUBMITTED, why=EARLIER_API + " (world 2, as upstream)"),
    Case("alltoall_world1", "dist_collective_alltoall", _A2A, source=A2A, world=1,
         refused=ONE_RANK, why="world 1: the upstream requires world_size > 1"),
    Case("alltoall_bad_domain", "dist_collective_alltoall", _A2A, source=A2A,
         kwargs={"domain": "ROW"}, refused="domain must be 'rank' or 'row'",
         why="domain 'ROW' (the names are lower case)"),
    Case("alltoall_group", "dist_collective_alltoall", _A2A, source=A2A,
         kwargs={"group": (0, 1)}, refused="group is reserved",
         why="a group: reserved upstream (its NotImplementedError)"),
    Case("alltoall_value_signal", "dist_collective_alltoall", _A2A, source=A2A,
         kwargs={"signal_kind": "SRAM_FLAGREG_VALUE"},
         refused="automatic or INC flagreg signal", why="a VALUE signal"),
    Case("alltoall_rank_extent", "dist_collective_alltoall",
         "invalid_alltoall_rank_extent_kernel_factory", source=A2A,
         refused="leading extent 0", why="a leading extent of world + 1"),
    Case("alltoall_row_extent", "dist_collective_alltoall",
         "invalid_alltoall_row_extent_kernel_factory", source=A2A,
         refused="leading extent 1", why="domain 'row' with 3 row slots on 2 mesh rows"),
    Case("alltoall_mismatched_shape", "dist_collective_alltoall",
         "mismatched_alltoall_shape_kernel_factory", source=A2A,
         refused="identical shapes", why="dst (W, 4, 7), src (W, 4, 8)"),
    Case("alltoall_mismatched_dtype", "dist_collective_alltoall",
         "mismatched_alltoall_dtype_kernel_factory", source=A2A, error=TypeError,
         refused="dtypes must match", why="float32 dst, bfloat16 src (TypeError)"),
    Case("alltoall_overlapping", "dist_collective_alltoall",
         "overlapping_alltoall_kernel_factory", source=A2A,
         refused="overlapping source and destination", why="src and dst one buffer"),
]

A2AV = "inter_rank/test_dist_collective_alltoallv.py @0f76f2d1"
_CNT = {"send_counts": None, "recv_counts": None}
_SRC_CNT = {"src": "rand", **_CNT}
CASES += [
    Case("alltoallv_rank_wait_all", "dist_collective_alltoallv",
         "alltoallv_rank_kernel_factory", source=A2AV, seeds=_SRC_CNT, observe=["dst"],
         refused=NEVER_SUBMITTED, why=EARLIER_API + ": over ranks, wait_all"),
    Case("alltoallv_rank_wait_any", "dist_collective_alltoallv",
         "alltoallv_rank_kernel_factory", source=A2AV, kwargs={"wait_mode": "any"},
         seeds=_SRC_CNT, observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": over ranks, has_pending / wait_any"),
    Case("alltoallv_row_wait_all", "dist_collective_alltoallv",
         "alltoallv_row_kernel_factory", source=A2AV, world=2, seeds=_SRC_CNT,
         observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": over (rank, row), wait_all (world 2)"),
    Case("alltoallv_row_wait_any", "dist_collective_alltoallv",
         "alltoallv_row_kernel_factory", source=A2AV, world=2, kwargs={"wait_mode": "any"},
         seeds=_SRC_CNT, observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": over (rank, row), wait_any (world 2)"),
    Case("alltoallv_single_signal_rank", "dist_collective_alltoallv",
         "alltoallv_single_signal_rank_kernel_factory", source=A2AV, seeds=_SRC_CNT,
         observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": one INC signal, wait_signal"),
    Case("alltoallv_single_signal_row", "dist_collective_alltoallv",
         "alltoallv_single_signal_row_kernel_factory", source=A2AV, world=2,
         seeds=_SRC_CNT, observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": one signal, over (rank, row) (world 2)"),
    Case("alltoallv_single_signal_dram", "dist_collective_alltoallv",
         "alltoallv_single_signal_dram_kernel_factory", source=A2AV, seeds=_CNT,
         tensors={"src": (4, 4, 8), "dst": (4, 4, 8)}, rank_inputs=True,
         refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": one signal, between DRAM MeshTensors"),
    Case("alltoallv_inc_group_member", "dist_collective_alltoallv",
         "alltoallv_inc_group_member_kernel_factory", source=A2AV, seeds=_SRC_CNT,
         observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": on an INC SignalList member, wait_signal"),
    Case("alltoallv_repeated", "dist_collective_alltoallv",
         "repeated_alltoallv_kernel_factory", source=A2AV, seeds=_SRC_CNT,
         observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": twice on one SignalList, each completion drained by wait_all"),
    Case("alltoallv_scope_combinations", "dist_collective_alltoallv",
         "alltoallv_scope_combinations_kernel_factory", source=A2AV, world=2,
         seeds=_SRC_CNT, tensors={"A": (2, 4, 8), "B": (2, 4, 8)}, rank_inputs=True,
         observe=["dst"], refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": RSRAM/DRAM sources and destinations, all four pairs (world 2)"),
    Case("alltoallv_world1", "dist_collective_alltoallv", "alltoallv_rank_kernel_factory",
         source=A2AV, world=1, refused=ONE_RANK,
         why="world 1: the upstream requires world_size > 1"),
    Case("alltoallv_count_shape", "dist_collective_alltoallv",
         "invalid_alltoallv_count_shape_kernel_factory", source=A2AV,
         refused="send_counts shape", why="send_counts (W, 1) for a rank domain"),
    Case("alltoallv_single_signal_value", "dist_collective_alltoallv",
         "alltoallv_single_signal_rank_kernel_factory", source=A2AV,
         kwargs={"signal_kind": "SRAM_FLAGREG_VALUE"}, refused="INC flagreg",
         why="one VALUE signal: the upstream requires an INC one"),
]

def routed(src_row: int, dst_row: int, src_ranks: Callable = lambda W: range(W),
           dst_rank: Callable = lambda p, W: (p + 1) % W, cols: Callable | None = None,
           sl: tuple = (slice(None), slice(None))) -> Callable:
    """Row ``src_row`` of rank p (each of ``src_ranks(W)``; columns ``cols(ncols)``,
    all by default) puts ``src[sl[0]]`` into ``dst[sl[1]]`` of row ``dst_row`` of rank
    ``dst_rank(p, W)``, same column (the rest of ``dst`` is not defined)."""
    def check(e: Env) -> None:
        for p in src_ranks(e.world):
            q = dst_rank(p, e.world)
            for c in (cols(e.mesh[1]) if cols else range(e.mesh[1])):
                eq(e.obs["dst"][q][e.core(dst_row, c)][sl[1]],
                   e.init["src"][p][e.core(src_row, c)][sl[0]], f"rank {q} col {c}")
    return check


def dram_block(a: np.ndarray, r: int, c: int, mesh: tuple) -> np.ndarray:
    """Block (r, c) of ``a`` under ``full_shard(0, 1)`` on ``mesh``."""
    h, w = a.shape[0] // mesh[0], a.shape[1] // mesh[1]
    return a[r * h:(r + 1) * h, c * w:(c + 1) * w]


def dram_rows(dst_of: Callable, src_row: Callable, rank_of: Callable,
              rsram: bool = False) -> Callable:
    """DRAM ``B`` (or RSRAM ``dst``) block (r, c) of rank q, for r in ``dst_of(nrows)``,
    = ``A`` block (src_row(r), c) of rank ``rank_of(q, W)``; other B blocks keep their
    input."""
    def check(e: Env) -> None:
        m = e.mesh
        for q in range(e.world):
            A = e.before["A"][rank_of(q, e.world)]
            for r in range(m[0]):
                for c in range(m[1]):
                    if rsram:
                        if r in dst_of(m[0]):
                            eq(e.obs["dst"][q][e.core(r, c)],
                               dram_block(A, src_row(r), c, m), f"dst rank {q} {(r, c)}")
                        continue
                    want = (dram_block(A, src_row(r), c, m) if r in dst_of(m[0])
                            else dram_block(e.before["B"][q], r, c, m))
                    eq(dram_block(e.tensors["B"][q], r, c, m), want, f"B rank {q} {(r, c)}")
    return check


def dynamic_offset(e: Env) -> None:
    for q in range(e.world):
        p = (q - 1) % e.world
        for k in range(e.cores):
            sl = slice(p * 32, p * 32 + 32)
            eq(e.obs["dst"][q][k][sl], e.init["src"][p][k][sl], f"rank {q} core {k}")


ROUTING = "inter_rank/test_dist_row_routing.py @6642f434"
M44 = (4, 4)
_NEXT_ROW = lambda r: (r - 1) % 4  # noqa: E731  (the source row of row r, 4 rows)


def _rr(id: str, factory: str, **kw: Any) -> Case:
    kw.setdefault("mesh", M44)
    return Case(id, "dist_row_routing", factory, source=ROUTING, **kw)


_S = {"seeds": {"src": "rand"}, "observe": ["dst"]}
CASES += [
    _rr("routing_row_shift", "row_shift_kernel_factory", **_S,
        check=ring_copy([("src", "dst", slice(None))], src_row=_NEXT_ROW),
        why="a put to the next rank's next row (4x4 mesh), submit, wait_signal, wait"),
    _rr("routing_explicit_peer_row", "explicit_peer_row_kernel_factory", **_S,
        check=ring_copy([("src", "dst", slice(None))]),
        why="dst_row = the core's own row: a direct peer put"),
    _rr("routing_public_routed_put", "public_routed_put_kernel_factory", **_S,
        check=routed(1, 2), why="routed_put from row 1 to row 2 of the next rank"),
    _rr("routing_dynamic_offset", "dynamic_offset_put_kernel_factory", **_S,
        check=dynamic_offset,
        why="a same-row put of the region at rank_id * 32 (offsets the sender computes)"),
    _rr("routing_rank_guarded_routed_put", "rank_guarded_routed_put_kernel_factory",
        **_S, check=routed(1, 2, lambda W: [0], lambda p, W: 1),
        why="rank 0's row 1 to rank 1's row 2, under if rank_id == 0; every rank waits"),
    _rr("routing_rank_guarded_peer_put", "rank_guarded_peer_put_kernel_factory", **_S,
        check=lambda e: [eq(e.obs["dst"][1][k], e.init["src"][0][k], f"core {k}")
                         for k in range(e.cores)],
        why="rank 0 puts to rank 1 under if rank_id == 0; every rank waits"),
    _rr("routing_column_guarded_routed_put", "column_guarded_routed_put_kernel_factory",
        **_S, check=routed(1, 2, cols=lambda n: [1]),
        why="only column 1 sends, row 1 to row 2 of the next rank"),
    _rr("routing_dram_cross_row", "dram_cross_row_kernel_factory",
        tensors={"A": (32, 32), "B": (32, 32)}, rank_inputs=True,
        check=dram_rows(lambda n: [1], lambda r: 0, lambda q, W: (q - 1) % W),
        why="routed_put between DRAM shards, row 0 to row 1 of the next rank"),
    _rr("routing_dram_to_rsram_cross_row", "dram_to_rsram_cross_row_kernel_factory",
        tensors={"A": (32, 32)}, rank_inputs=True, observe=["dst"],
        check=dram_rows(lambda n: [1], lambda r: 0, lambda q, W: (q - 1) % W, rsram=True),
        why="routed_put from a DRAM shard to RSRAM, row 0 to row 1 of the next rank"),
    _rr("routing_explicit_source_rank", "explicit_source_rank_kernel_factory", **_S,
        check=routed(0, 1, lambda W: [1], lambda p, W: 2),
        why="routed_put with src_rank=1: rank 1's row 0 to rank 2's row 1"),
    _rr("routing_local_peer", "local_peer_kernel_factory", **_S, check=local_copy,
        why="a put to one's own rank, same row: a local copy"),
    _rr("routing_local_cross_row", "local_cross_row_kernel_factory", **_S,
        check=lambda e: [eq(e.obs["dst"][q][k],
                            e.init["src"][q][e.core(_NEXT_ROW(e.rc(k)[0]), e.rc(k)[1])],
                            f"rank {q} core {k}")
                         for q in range(e.world) for k in range(e.cores)],
        why="a put to one's own rank's next row (on-chip)"),
    _rr("routing_local_dram_cross_row", "local_dram_cross_row_kernel_factory",
        tensors={"A": (32, 32), "B": (32, 32)}, rank_inputs=True,
        check=dram_rows(lambda n: range(n), _NEXT_ROW, lambda q, W: q),
        why="a DRAM shard put to one's own rank's next row"),
    _rr("routing_multiple_routed_put", "multiple_routed_put_kernel_factory", **_S,
        check=lambda e: (routed(0, 1, sl=(slice(8, 40), slice(16, 48)))(e),
                         routed(2, 3, sl=(slice(32, 64), slice(80, 112)))(e)),
        why="two routed_puts of overlapping source regions (rows 0 to 1, 2 to 3), "
            "a SignalList, wait_all"),
]
CASES += [
    _rr("routing_dynamic_row", "dynamic_row_kernel_factory", seeds={"src": "rand"},
        refused="cannot depend on BufferLoad",
        why="dst_row read from memory: the upstream routes rows at compile time"),
    _rr("routing_fixed_destination_row", "fixed_destination_row_kernel_factory",
        seeds={"src": "rand"}, observe=["dst"],
        refused="region offsets must be compile-time constants",
        why="every row puts into row 0 at an offset of its own row: the upstream "
            "requires constant offsets for a cross-row put"),
    _rr("routing_static_row_minus1", "invalid_static_row_kernel_factory",
        kwargs={"dst_row": -1}, refused="dst_row -1 is outside",
        why="dst_row -1"),
    _rr("routing_static_row_4", "invalid_static_row_kernel_factory",
        kwargs={"dst_row": 4}, refused="dst_row 4 is outside",
        why="dst_row 4 on a 4-row mesh"),
    _rr("routing_cross_row_loop", "cross_row_loop_kernel_factory", seeds={"src": "rand"},
        observe=["dst"], refused="Cross-row T.dist.put inside loops",
        why="a cross-row put in a for loop: its relay staging would be reused (refused "
            "upstream)"),
    _rr("routing_cross_row_while", "cross_row_while_kernel_factory",
        seeds={"src": "rand"}, observe=["dst"],
        refused="Cross-row T.dist.put inside a while loop",
        why="the same in a while loop, manual expects, submit=True"),
    _rr("routing_cross_row_while_routed", "cross_row_while_kernel_factory",
        kwargs={"explicit_routes": True}, seeds={"src": "rand"}, observe=["dst"],
        refused="T.dist.routed_put inside loops",
        why="the same with an explicit routed_put"),
    _rr("routing_dynamic_offset_cross_row", "dynamic_offset_put_kernel_factory",
        kwargs={"cross_row": True}, seeds={"src": "rand"}, observe=["dst"],
        refused="region offsets must be compile-time constants",
        why="the rank_id * 32 region put to the next row: not a constant offset"),
    _rr("routing_cid_guarded_put", "cid_guarded_put_kernel_factory",
        seeds={"src": "rand"}, refused="Use T.dist.routed_put",
        why="a put under core_id == 5, a condition not uniform over rows: the upstream "
            "asks for a routed_put"),
    _rr("routing_row_guarded_routed_put", "row_guarded_routed_put_kernel_factory",
        seeds={"src": "rand"}, refused="uniform across rows",
        why="routed_put under a row condition: the upstream wants the source row in the "
            "route table"),
    _rr("routing_route_source_row", "invalid_route_kernel_factory",
        kwargs={"routes": ((4, 1, 0),)}, refused="source row is outside",
        why="a route from row 4 of a 4-row mesh"),
    _rr("routing_route_dst_rank", "invalid_route_kernel_factory",
        kwargs={"routes": ((0, 4, 0),)}, refused="dst_rank 4 is outside",
        why="a route to rank 4 of 4"),
    _rr("routing_route_duplicate", "invalid_route_kernel_factory",
        kwargs={"routes": ((0, 1, 0), (0, 1, 0))}, refused="duplicate static route",
        why="the same route twice"),
]

LOOP = "inter_rank/test_dist_minimal_loop.py @fad2e7ed"
CASES += [
    Case("minimal_put", "dist_minimal_loop", "minimal_put_kernel_factory", source=LOOP,
         kwargs={"M": 32, "N": 32}, tensors=_AB, rank_inputs=True,
         refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": DRAM -> RSRAM, put, wait, RSRAM -> DRAM"),
    Case("minimal_explicit_memory_signal", "dist_minimal_loop",
         "explicit_memory_signal_kernel_factory", source=LOOP, seeds={"src": "rand"},
         refused=NEVER_SUBMITTED, why=EARLIER_API + ": a put on an SRAM_MEMORY signal"),
    Case("minimal_reused_signal", "dist_minimal_loop", "reused_signal_kernel_factory",
         source=LOOP, seeds={"src": "rand"}, refused=NEVER_SUBMITTED,
         why=EARLIER_API + ": a put and a wait in each of two iterations"),
    Case("minimal_two_puts_two_waits", "dist_minimal_loop",
         "two_puts_two_waits_kernel_factory", source=LOOP, seeds={"src": "rand"},
         refused=NEVER_SUBMITTED, why=EARLIER_API + ": two puts on one signal, two waits"),
    Case("minimal_too_many_signals", "dist_minimal_loop", "too_many_signals_kernel_factory",
         source=LOOP, refused="never submitted",
         why="nine automatic signals, puts never submitted: the upstream refused the ninth "
             "signal then (eight flag registers); its later planner, as ours, puts it in "
             "memory, and the unsubmitted puts are refused (earlier API)"),
    Case("minimal_asram_payload", "dist_minimal_loop",
         "invalid_payload_scope_kernel_factory", source=LOOP,
         refused="must use shared.rsram or global",
         why="a put between shared.asram buffers: the upstream requires RSRAM or DRAM"),
    Case("minimal_signal_in_loop", "dist_minimal_loop", "signal_in_loop_kernel_factory",
         source=LOOP, refused="outside loops and conditionals",
         why="a signal declared in a loop: the upstream refuses it (its RuntimeError; "
             "ours is a ValueError)"),
    Case("minimal_put_world1", "dist_minimal_loop", "minimal_put_kernel_factory",
         source=LOOP, world=1, kwargs={"M": 32, "N": 32}, tensors=_AB, refused=ONE_RANK,
         why="world 1: the upstream refuses communication in a one-rank kernel"),
]

def one_way(sender: int) -> Callable:
    """World 2: every core of the other rank gets ``src`` of rank ``sender``."""
    def check(e: Env) -> None:
        for k in range(e.cores):
            eq(e.obs["dst"][1 - sender][k], e.init["src"][sender][k], f"core {k}")
    return check


def col0_ring(e: Env) -> None:
    """Column-0 cores of rank q get ``src`` of rank q - 1 (the rest not defined)."""
    for q in range(e.world):
        for r in range(e.mesh[0]):
            k = e.core(r, 0)
            eq(e.obs["dst"][q][k], e.init["src"][(q - 1) % e.world][k], f"rank {q} core {k}")


def a2av_variable(e: Env) -> None:
    """all_to_allv into ``variable_dst``: slot p on rank q = ``src`` slot q of rank p
    where p sends to q."""
    for q in range(e.world):
        for k in range(e.cores):
            for p in range(e.world):
                if e.init["send_counts"][p][k][q] > 0:
                    eq(e.obs["variable_dst"][q][k][p], e.init["src"][p][k][q],
                       f"rank {q} core {k} slot {p}")


FLOW = "inter_rank/test_dist_expect_control_flow.py @27830dcb"


def _cf(id: str, factory: str, **kw: Any) -> Case:
    return Case(id, "dist_expect_control_flow", factory, source=FLOW, **kw)


_PHASE = "Cannot.*T.dist|sent after a wait"
_LOOP = "cannot prove matching.*loop"
_SC = {"choice": 1}
_LS = {"rounds": 2, "recv_count": 2}
CASES += [
    _cf(f"flow_branch_s{s}_n{n}_{res}", "branch_exchange_kernel_factory", world=2,
        kwargs={"sender_rank": s, "send_count": n, "resource": res},
        seeds={"src": "rand"}, observe=["dst"], check=one_way(s),
        why=f"rank {s} puts {n}x to the other under if rank_id, which waits "
            f"({res}); world 2")
    for s, n, res in ((0, 1, "single"), (1, 2, "single"), (0, 2, "member"),
                      (1, 1, "all"))
] + [
    _cf(f"flow_unsafe_{pat}" + ("" if e else "_then"), "unsafe_phase_kernel_factory",
        world=2, kwargs={"pattern": pat, "send_in_else": e}, scalars=_SC,
        seeds={"src": "rand"}, refused=_PHASE,
        why=f"pattern {pat!r}: a wait and a send on one signal under a core condition "
            "the receiver cannot see (refused upstream)")
    for pat, e in (("reuse", True), ("wait_first", True), ("wait_first", False),
                   ("group_all", True), ("group_member", True), ("nested", True),
                   ("completion", True), ("runtime_condition", True))
] + [
    _cf(f"flow_sender_local_{st}_{op}", "sender_local_condition_kernel_factory",
        kwargs={"structure": st, "op": op}, scalars={"enabled": 1, "recv_count": 1},
        seeds={"src": "rand"}, refused="sender-local condition.*expect='manual'",
        why=f"a {op} under a runtime condition ({st}), automatic expects (refused "
            "upstream)")
    for st in ("if", "if_else", "nested", "nested_else") for op in ("put", "put_signal")
] + [
    _cf("flow_sender_local_manual", "sender_local_condition_kernel_factory",
        kwargs={"manual": True}, scalars={"enabled": 1, "recv_count": 1},
        seeds={"src": "rand"}, observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
        why="the same with expect='manual', enabled 1 and recv_count 1"),
    _cf("flow_conditional_two_phase", "conditional_two_phase_signal_kernel_factory",
        seeds={"src": "rand"}, observe=["dst"], check=col0_ring,
        why="column 0 puts, waits, puts and waits again on one signal"),
    _cf("flow_nested_conditional_wait", "nested_conditional_wait_kernel_factory",
        seeds={"src": "rand"}, refused="split the condition into phases",
        why="a wait under rank_id == 0 between two puts under a core condition"),
] + [
    _cf(f"flow_conditional_while_{n}", "conditional_while_put_kernel_factory",
        kwargs={"iterations": n}, seeds={"src": "rand"}, refused=_LOOP,
        why=f"column 0 puts in a while loop of {n}; automatic expects cannot count it")
    for n in (0, 2)
] + [
    _cf(f"flow_loop_{b}_{f}", "loop_expect_kernel_factory", kwargs={"bound": b, "form": f},
        scalars=_LS, seeds={"src": "rand"}, refused=_LOOP,
        why=f"puts in a {f} loop bounded by {b}: automatic expects (refused upstream)")
    for b, f in (("rank", "for"), ("param", "for"), ("buffer", "for"), ("rank", "while"),
                 ("param", "while"), ("static", "while"), ("param", "nested"))
] + [
    _cf(f"flow_loop_auto_{n}", "loop_expect_kernel_factory", kwargs=kw, scalars=_LS,
        seeds={"src": "rand"}, refused="use expect='manual'",
        why=f"a {n} in a loop of a rank-dependent bound: automatic expects")
    for n, kw in (("member", {"group_member": True}), ("put_signal", {"signal_only": True}),
                  ("auto", {"expect_mode": "auto"}))
] + [
    _cf(f"flow_loop_static_{f}", "loop_expect_kernel_factory",
        kwargs={"bound": "static", "form": f}, scalars=_LS, seeds={"src": "rand"},
        observe=["dst"], check=ring_copy([("src", "dst", slice(None))]),
        why=f"puts in a static {f} loop, automatic expects")
    for f in ("for", "nested")
] + [
    _cf(f"flow_loop_manual_{b}_{f}", "loop_expect_kernel_factory",
        kwargs={"bound": b, "form": f, "group_member": True, "expect_mode": "manual"},
        scalars=_LS, seeds={"src": "rand"}, observe=["dst"],
        check=ring_copy([("src", "dst", slice(None))]),
        why=f"puts in a {f} loop bounded by {b}, manual expects (rounds 2, recv_count 2)")
    for b, f in (("param", "for"), ("buffer", "for"), ("param", "while"))
] + [
    _cf("flow_collective_loop_gather", "collective_loop_kernel_factory",
        scalars={"rounds": 2}, seeds={"src": "rand"}, refused="use expect='manual'",
        why="all_gather in a loop of a runtime bound, automatic completion: its "
            "arrivals cannot be counted (as upstream)"),
    _cf("flow_collective_loop_alltoallv", "collective_loop_kernel_factory",
        kwargs={"variable_counts": True}, scalars={"rounds": 2},
        seeds={"src": "rand", "send_counts": None, "recv_counts": None},
        observe=["variable_dst"], check=a2av_variable,
        why="all_to_allv in a loop of a runtime bound (its manual protocol)"),
]

# --- i28b: test_dist_foundation, test_dist_collective_signal_ownership,
# test_dist_pipeline_admission, test_dist_routing_memory_signal, test_dist_signal_planning
def unchanged(name: str) -> Callable:
    """``name`` (a global result of a ``split`` case) as it went in: the kernel moves
    nothing."""
    def check(e: Env) -> None:
        eq(e.tensors[name][0], e.before[name], f"{name} unchanged")
    return check


def unchanged_in_slots(name: str, slot: tuple) -> Callable:
    """:func:`unchanged`, and the kernel's parameter ``name`` is the per-core slot
    ``slot`` (the upstream's ``local_shape``)."""
    def check(e: Env) -> None:
        unchanged(name)(e)
        bufs = [b for b in e.func.buffer_map.values() if str(b.name) == name]
        assert tuple(int(n) for n in bufs[0].shape) == slot, (name, bufs[0].shape)
    return check


def gathered_ring(e: Env) -> None:
    """all_gather of ``src`` into ``gathered``: slot p on every rank = ``src`` of p."""
    for q in range(e.world):
        for k in range(e.cores):
            eq(e.obs["gathered"][q][k], np.stack([e.init["src"][p][k] for p in range(e.world)]),
               f"rank {q} core {k}")


def output_from_previous(e: Env) -> None:
    """DRAM ``output`` on rank q = ``src`` of rank q - 1 (equal over its cores)."""
    for q in range(e.world):
        eq(e.tensors["output"][q], e.init["src"][(q - 1) % e.world][0], f"output rank {q}")


FOUND = "inter_rank/test_dist_foundation.py @6642f434"
OWN = "inter_rank/test_dist_collective_signal_ownership.py @6642f434"
PIPE = "inter_rank/test_dist_pipeline_admission.py @6642f434"
RMS = "inter_rank/test_dist_routing_memory_signal.py @27830dcb"
PLAN = "inter_rank/test_dist_signal_planning.py @6642f434"
DEDICATED = "dedicated to one collective|exclusive collective signal"
_OWN = {"seeds": {"src": "rand", "send_counts": None, "recv_counts": None},
        "scalars": {"rounds": 2}}
_OWN_OBS = {"all_gather": (["gathered"], gathered_ring), "all_to_all": (["dst"], all_to_all_rank),
            "all_reduce": (["dst"], reduce_ref("sum")),
            "all_to_allv": (["dst"], all_to_allv_rank)}


def _own(id: str, **kw: Any) -> Case:
    return Case(id, "dist_collective_signal_ownership", "collective_signal_kernel_factory",
                source=OWN, **_OWN, **kw)


def _pipe(id: str, factory: str = "pipeline_dist_kernel_factory", **kw: Any) -> Case:
    return Case(id, "dist_pipeline_admission", factory, source=PIPE, **kw)


def _rms(id: str, **kw: Any) -> Case:
    kw.setdefault("scalars", {"enabled": 1, "recv_count": 1})
    kw.setdefault("tensors", {"output": (32,)})
    return Case(id, "dist_routing_memory_signal", "memory_route_kernel_factory",
                source=RMS, **kw)


def _plan(id: str, factory: str, **kw: Any) -> Case:
    return Case(id, "dist_signal_planning", factory, source=PLAN, **kw)


CASES += [
    Case("foundation_rank_sharded", "dist_foundation", "rank_sharded_kernel_factory",
         source=FOUND, kwargs={"M": 17, "N": 32}, tensors={"A": (17, 32)}, split=True,
         check=unchanged_in_slots("A", (3, 32)),
         why="a MeshTensor split over 4 ranks (17 rows: 5, 4, 4, 4) and rows of the "
             "mesh; get_local_extent, world_size(); nothing moves: A comes back as it "
             "went in, from per-core slots of (3, 32) as upstream"),
    Case("foundation_rank_sharded_world2", "dist_foundation", "rank_sharded_kernel_factory",
         source=FOUND, world=2, kwargs={"M": 17, "N": 32}, tensors={"A": (17, 32)},
         split=True, check=unchanged_in_slots("A", (5, 32)),
         why="the same on 2 ranks (9 and 8 rows; slots of (5, 32))"),
    Case("foundation_replicated", "dist_foundation", "replicated_kernel_factory",
         source=FOUND, kwargs={"M": 17, "N": 32}, tensors={"A": (17, 32)}, split=True,
         check=unchanged_in_slots("A", (17, 32)),
         why="no rank_placement: every rank and core a whole copy; nothing moves, A "
             "unchanged"),
    Case("foundation_replicated_world3", "dist_foundation", "replicated_kernel_factory",
         source=FOUND, world=3, kwargs={"M": 8, "N": 16}, tensors={"A": (8, 16)},
         split=True, check=unchanged_in_slots("A", (8, 16)),
         why="the same, (8, 16) on 3 ranks"),
] + [
    Case(f"foundation_world_{name}", "dist_foundation", "rank_sharded_kernel_factory",
         source=FOUND, world=w, kwargs={"M": 17, "N": 32},
         refused="world_size must be a positive int", why=f"world_size={w!r}")
    for name, w in (("0", 0), ("minus1", -1), ("true", True), ("float", 2.0),
                    ("none", None))
] + [
    Case("foundation_two_rank_ids", "dist_foundation",
         "test_prim_func_rejects_multiple_rank_id_parameters", source=FOUND,
         refused="at most one T.dist.RankId",
         why="two T.dist.RankId parameters, refused when the kernel is built"),
]
CASES += [
    _own(f"own_reuse_{op}_{sc}", kwargs={"op": op, "scenario": sc},
         observe=_OWN_OBS[op][0], refused=DEDICATED,
         why=f"{op} twice on one signal ({sc}): the upstream refuses it")
    for op in _OWN_OBS for sc in ("repeat", "serial", "while")
    if not (op == "all_reduce" and sc != "repeat")
] + [
    _own(f"own_reuse_all_reduce_{sc}", kwargs={"op": "all_reduce", "scenario": sc},
         observe=["dst"], refused="all_reduce inside For/While",
         why=f"all_reduce twice on one signal in a {sc} loop: refused as upstream, for "
             "the loop")
    for sc in ("serial", "while")
] + [
    _own(f"own_member_{k.lower()}_{sc}", world=2,
         kwargs={"scenario": sc, "member": True, **({"kind": k} if k != "auto" else {})},
         observe=["gathered"], refused=DEDICATED,
         why=f"all_gather twice on a SignalList member ({sc}, {k} signal, world 2): the "
             "upstream refuses it")
    for k in ("auto", "SRAM_FLAGREG_INC") for sc in ("repeat", "unroll")
] + [
    _own(f"own_mixed_{x}" + ("_first" if first else ""),
         kwargs={"scenario": "mixed", "extra": x, "extra_first": first},
         observe=["gathered"], refused=DEDICATED,
         why=f"all_gather and a {x} on one signal ({x if first else 'all_gather'} "
             "first): the upstream refuses it")
    for x in ("put", "routed_put", "rank_routed_put", "put_signal") for first in (False, True)
] + [
    _own(f"own_mixed_{x}" + ("_first" if first else ""),
         kwargs={"scenario": "mixed", "extra": x, "extra_first": first},
         observe=["gathered"], refused=DEDICATED,
         why=f"all_gather and a {x} on one signal ({x if first else 'all_gather'} "
             "first): the upstream refuses it (a wait could be met by the other's "
             "arrivals before all_gather's data lands)")
    for x in ("barrier_arrive", "barrier") for first in (False, True)
] + [
    _own("own_group_overlap" + ("_first" if first else ""),
         kwargs={"scenario": "group_overlap", "member": True, "extra_first": first},
         observe=["gathered"], refused=DEDICATED,
         why="all_gather on a SignalList member and all_gather on the whole list "
             f"({'the whole list' if first else 'the member'} first): the upstream "
             "refuses it (the member's wait could be met by the other all_gather's "
             "arrivals)")
    for first in (False, True)
] + [
    _own(f"own_wait_again_{op}", kwargs={"op": op, "scenario": "wait_again"},
         observe=_OWN_OBS[op][0], check=_OWN_OBS[op][1],
         why=f"one {op}, its signal waited twice")
    for op in _OWN_OBS
] + [
    _own("own_independent" + ("_member" if m else ""),
         kwargs={"scenario": "independent", "member": m}, observe=["gathered"],
         check=gathered_ring,
         why="two all_gathers on two signals" + (" (SignalList members)" if m else ""))
    for m in (False, True)
] + [
    _own("own_dynamic_for", kwargs={"op": "all_to_allv", "scenario": "dynamic_for"},
         observe=["dst"], refused="exclusive collective signal",
         why="all_to_allv on one signal in a loop of a runtime bound (2): the upstream "
             "refuses it (it cannot prove one call per signal)"),
    _own("own_unknown_member", kwargs={"op": "all_to_allv", "scenario": "unknown_member"},
         observe=["dst"], refused=DEDICATED,
         why="all_to_allv on signals[rank_id], waited on signals[rank_id]: the upstream "
             "refuses it (a member it cannot prove exclusive)"),
]
CASES += [
    _pipe(f"pipe_{op}", kwargs={"op": op}, seeds={"src": "rand"},
          refused="move communication, submit and waits outside",
          why=f"{op} in T.Pipelined(4, num_stages=2)")
    for op in ("put", "routed_put", "put_signal", "barrier", "wait_signal", "wait_all",
               "wait_delta", "wait_signals", "completion", "wait_any", "has_pending",
               "wait_completion", "all_gather", "all_to_allv")
] + [
    _pipe(f"pipe_nested_{n}", kwargs={"nested": n}, seeds={"src": "rand"},
          refused="T.Pipelined", why=f"a put in a {n} loop inside T.Pipelined")
    for n in ("serial", "disabled_pipeline", "while")
] + [
    _pipe(f"pipe_queue_{op}_stages{st}", "pipeline_queue_only_kernel_factory",
          kwargs={"op": op, "stages": st}, refused="T.Pipelined",
          why=f"T.dist.{op}() alone in T.Pipelined(4, num_stages={st})")
    for op in ("wait", "submit") for st in (1, 2)
] + [
    _pipe("pipe_stages0", kwargs={"stages": 0}, seeds={"src": "rand"}, check=runs,
          why="a put in T.Pipelined(4, num_stages=0) (a serial loop); no wait covers it, "
              "so dst is not defined and not compared"),
    _pipe("pipe_local_after_dist", "local_pipeline_after_dist_kernel_factory",
          seeds={"src": _same_over_cores((32,))}, tensors={"output": (128,)},
          check=lambda e: [eq(e.tensors["output"][q],
                              np.tile(e.init["src"][(q - 1) % e.world][0], 4),
                              f"output rank {q}") for q in range(e.world)],
          why="a put and its wait, then a local T.Pipelined copy of dst into 4 chunks "
              "of output"),
]
_XR = ring_copy([("src", "dst", slice(None))], src_row=lambda r: (r - 1) % MESH[0])
_ROUTE_WHY = {"implicit": "put(dst_row=next row)", "member": "the same on a SignalList member",
              "explicit": "routed_put from row 0 to row 1",
              "active": "put(dst_row=next row) under active[0] > 0, manual expects "
                        "(enabled 1, recv_count 1)"}


def _rms_route(sc: str, k: str, route: str) -> Case:
    kw: dict = {"check": output_from_previous if sc == "dram" else
                (routed(0, 1) if route == "explicit" else _XR)}
    why = f"{_ROUTE_WHY[route]} into {'DRAM' if sc == 'dram' else 'RSRAM'}, {k} signal"
    if route == "active":
        why += " (each source core's condition decides its put, as the upstream carries it "
        why += "to the relay core)"
    elif sc == "dram" and route == "explicit":
        kw = {"refused": "copies of cores .* disagree"}
        why += (": only row 1's copies of the core-replicated output are written, so "
                "its copies disagree (a replicated output is written alike or refused)")
    return _rms(f"rms_{sc}_{route}", kwargs={"kind": k, "dram": sc == "dram", "route": route},
                seeds={"src": _same_over_cores((32,)) if sc == "dram" else "rand"},
                observe=[] if sc == "dram" else ["dst"], why=why, **kw)


CASES += [
    _rms_route(sc, k, route)
    for sc, k in (("sram", "SRAM_MEMORY"), ("dram", "DRAM_MEMORY"))
    for route in ("implicit", "explicit", "member", "active")
] + [
    _rms(f"rms_spill_{sc}", kwargs={"kind": None, "dram": sc == "dram",
                                   "peer_signal_count": 40},
         seeds={"src": _same_over_cores((32,))}, observe=[] if sc == "dram" else ["dst"],
         check=output_from_previous if sc == "dram" else _XR,
         why="40 automatic signals with a same-row put each (never waited), then the "
             "cross-row put, waited; src equal over a rank's cores, so every put brings "
             "the same values")
    for sc in ("sram", "dram")
] + [
    _rms(f"rms_scope_{sc}_{k.lower()}", kwargs={"kind": k, "dram": sc == "dram"},
         refused="explicitly requests.*destination scope",
         why=f"a {k} signal on a put into {'DRAM' if sc == 'dram' else 'RSRAM'}")
    for sc, k in (("sram", "DRAM_MEMORY"), ("dram", "SRAM_MEMORY"))
] + [
    _rms(f"rms_multi_sender_{sc}_{k.lower()}",
         kwargs={"kind": k, "dram": sc == "dram", "multi_sender": True},
         seeds={"src": "rand"}, refused="allows one sender per receiving core",
         why=f"every rank puts to rank 0 on one {k} signal: one sender per receiving "
             "core (the upstream: multiple physical senders)")
    for sc, k in (("sram", "SRAM_MEMORY"), ("dram", "DRAM_MEMORY"),
                  ("sram", "SRAM_FLAGREG_VALUE"), ("dram", "DRAM_FLAGREG_VALUE"))
]
_MN = {"M": 32, "N": 32}
CASES += [
    _plan("plan_mixed_scope", "mixed_scope_signal_kernel_factory", kwargs=_MN,
          tensors={"B": (32, 32)}, refused="inconsistent destination scopes",
          why="one signal for a put into RSRAM and one into DRAM"),
    _plan("plan_sram_signal_on_dram", "explicit_sram_signal_on_dram_kernel_factory",
          kwargs=_MN, tensors={"B": (32, 32)}, refused="explicitly requests sram_flagreg_inc",
          why="an SRAM_FLAGREG_INC signal for a put into DRAM"),
    _plan("plan_too_many_explicit_inc", "too_many_explicit_sram_inc_flagregs_kernel_factory",
          refused="sram_flagreg_inc signal capacity exceeded",
          why="nine explicit SRAM_FLAGREG_INC signals (eight registers)"),
] + [
    _plan(f"plan_signal_list_{k.lower()}", "signal_list_kernel_factory",
          kwargs={"signal_kind": k} if k != "auto" else {},
          seeds={"src0": "rand", "src1": "rand"}, observe=["dst"],
          check=ring_copy([("src0", "dst", slice(0, 32)), ("src1", "dst", slice(32, 64))]),
          why=f"two puts into halves of dst on a SignalList ({k}), wait_all")
    for k in ("auto", "SRAM_FLAGREG_INC")
] + [
    _plan("plan_mixed_scope_list", "mixed_scope_signal_list_kernel_factory",
          tensors={"B": (32,)}, refused="inconsistent destination scopes",
          why="a SignalList whose members cover puts into RSRAM and DRAM"),
    _plan("plan_multiple_senders_inc", "multiple_sender_one_signal_kernel_factory",
          seeds={"src": "rand"}, observe=["dst"], refused="wrote the put's destination",
          why="every rank puts its src into rank 0's dst on one automatic (INC) signal: "
              "rank 0's own put (a local copy) writes dst while the others' are in "
              "flight, and three senders' values land in one place (no defined result)"),
] + [
    _plan(f"plan_multiple_senders_{k.lower()}", "multiple_sender_one_signal_kernel_factory",
          kwargs={"signal_kind": k}, seeds={"src": "rand"},
          refused="allows one sender per receiving core",
          why=f"the same on a {k} signal: one sender per receiving core (the upstream: "
              "multiple physical senders)")
    for k in ("SRAM_FLAGREG_VALUE", "SRAM_MEMORY")
] + [
    _plan("plan_too_many_signals", "too_many_signals_kernel_factory",
          seeds={"src": "rand"}, check=runs,
          why="nine automatic signals, nine puts, no wait (so dst is not defined and not "
              "compared)"),
    _plan("plan_asram_payload", "invalid_payload_scope_kernel_factory",
          refused="must use shared.rsram or global",
          why="a put between shared.asram buffers: the upstream requires RSRAM or DRAM"),
    _plan("plan_signal_in_loop", "signal_in_loop_kernel_factory",
          refused="outside loops and conditionals",
          why="a signal declared in a loop: the upstream refuses it (its RuntimeError; "
              "ours is a ValueError)"),
    _plan("plan_all_signal_kinds", "all_signal_kinds_kernel_factory", kwargs=_MN,
          tensors={"B": (32, 32)}, seeds={"src": "rand"},
          check=lambda e: [eq(full_shard_block(e.tensors["B"][q], k),
                              e.init["src"][(q - 1) % e.world][k], f"B rank {q} core {k}")
                           for q in range(e.world) for k in range(e.cores)],
          why="six puts, one per signal kind, three into RSRAM and three into DRAM, no "
              "wait: B, read after the kernel (every put landed), is the previous rank's "
              "src; the RSRAM destination is not compared"),
    _plan("plan_generation_cost", "generation_cost_planning_kernel_factory",
          seeds={"src": "rand"}, check=runs,
          why="nine automatic signals, ten puts (rank 0 to ranks 1 and 2 on one), no "
              "wait (so dst is not defined and not compared)"),
    _plan("plan_list_index_out_of_range",
          "test_signal_list_rejects_out_of_range_static_index",
          refused="index out of range",
          why="signals(2)[2]: a ValueError here (the upstream's is an IndexError)"),
]

# --- i28: test_dist_stage3_completion.py, test_dist_pass_tir_print.py,
# test_dsl_to_device_tir.py, test_lowering.py; the early_return/exit kernels of
# test_dist_submit.py and test_dist_expect_control_flow.py
STAGE3 = "inter_rank/test_dist_stage3_completion.py @5dbb28cb"
PRINT = "inter_rank/test_dist_pass_tir_print.py @0f76f2d1"
# an earlier-API put never submitted: the end of the kernel or a wait finds it first
UNSUBMITTED = "never submitted|deadlock: every rank is blocked"


def _s3(id: str, factory: str, **kw: Any) -> Case:
    return Case(id, "dist_stage3_completion", factory, source=STAGE3, **kw)


def _pp(id: str, factory: str, **kw: Any) -> Case:
    return Case(id, "dist_pass_tir_print", factory, source=PRINT, **kw)


_SRC = {"seeds": {"src": "rand"}}


def same_rank_next_row(e: Env) -> None:
    """``dst`` on core (r, c) of rank q = ``src`` of core (r - 1, c) of rank q."""
    for q in range(e.world):
        for k in range(e.cores):
            r, c = e.rc(k)
            eq(e.obs["dst"][q][k], e.init["src"][q][e.core((r - 1) % e.mesh[0], c)],
               f"rank {q} core {k}")


def dram_next_row(e: Env) -> None:
    """``B`` on rank q: its mesh row r's blocks = ``A``'s mesh row r - 1 blocks of rank q
    (``full_shard(0, 1)``: row blocks over mesh rows)."""
    R = e.mesh[0]
    for q in range(e.world):
        a, h = e.before["A"][q], e.before["A"][q].shape[0] // R
        want = np.concatenate([a[((r - 1) % R) * h:((r - 1) % R + 1) * h] for r in range(R)])
        eq(e.tensors["B"][q], want, f"B rank {q}")


CASES += [
    _s3("stage3_signal_list", "signal_list_kernel_factory",
        seeds={"src0": "rand", "src1": "rand"}, refused=UNSUBMITTED,
        why=EARLIER_API + ": two puts into regions of one buffer, wait_all"),
    _s3("stage3_signal_list_inc", "signal_list_kernel_factory",
        kwargs={"signal_kind": "SRAM_FLAGREG_INC"},
        seeds={"src0": "rand", "src1": "rand"}, refused=UNSUBMITTED,
        why=EARLIER_API + ": the same on an explicit SRAM INC list"),
    _s3("stage3_mixed_scope_signal_list", "mixed_scope_signal_list_kernel_factory",
        tensors={"B": (32,)}, **_SRC, refused="inconsistent destination scopes",
        why="one SignalList, a put into RSRAM and one into DRAM: mixed destination "
            "scopes, refused as upstream"),
    _s3("stage3_dram_to_dram", "dram_to_dram_kernel_factory", tensors=_AB,
        rank_inputs=True, refused=UNSUBMITTED,
        why=EARLIER_API + ": a put between DRAM shards"),
    _s3("stage3_dram_cross_row", "dram_cross_row_kernel_factory", tensors=_AB,
        rank_inputs=True, refused=UNSUBMITTED,
        why=EARLIER_API + ": routed_put between DRAM shards, row 0 to row 1"),
    _s3("stage3_dram_to_rsram", "dram_to_rsram_kernel_factory", tensors={"A": (32, 32)},
        rank_inputs=True, refused=UNSUBMITTED,
        why=EARLIER_API + ": a put from a DRAM shard into RSRAM"),
    _s3("stage3_dram_to_rsram_cross_row", "dram_to_rsram_cross_row_kernel_factory",
        tensors={"A": (32, 32)}, rank_inputs=True, refused=UNSUBMITTED,
        why=EARLIER_API + ": routed_put from a DRAM shard into RSRAM, row 0 to row 1"),
    _s3("stage3_explicit_source_rank", "explicit_source_rank_kernel_factory", **_SRC,
        refused=UNSUBMITTED, why=EARLIER_API + ": routed_put with src_rank=1"),
    _s3("stage3_local_peer", "local_peer_kernel_factory", **_SRC, observe=["dst"],
        check=local_copy, why="a put to one's own rank: a local copy, no submit needed"),
    _s3("stage3_local_cross_row", "local_cross_row_kernel_factory", **_SRC,
        observe=["dst"], check=same_rank_next_row,
        why="a put to one's own rank's next row: an on-chip put"),
    _s3("stage3_local_dram_cross_row", "local_dram_cross_row_kernel_factory",
        tensors=_AB, rank_inputs=True, check=dram_next_row,
        why="a put between DRAM shards of one's own rank, to the next row"),
    _s3("stage3_multiple_routed_put", "multiple_routed_put_kernel_factory", **_SRC,
        mesh=M44, refused=UNSUBMITTED,
        why=EARLIER_API + ": two routed_puts of overlapping source regions (4x4 mesh)"),
] + [
    _s3(f"stage3_route_{n}", "invalid_route_kernel_factory", kwargs={"routes": r},
        mesh=M44, refused=m, why=w)
    for n, r, m, w in (
        ("source_row", ((4, 1, 0),), "source row is outside",
         "a route from row 4 of a 4-row mesh"),
        ("dst_rank", ((0, 4, 0),), "dst_rank 4 is outside", "a route to rank 4 of 4"),
        ("duplicate", ((0, 1, 0), (0, 1, 0)), "duplicate static route",
         "the same route twice"))
] + [
    _s3("stage3_multiple_senders_inc", "multiple_sender_one_signal_kernel_factory",
        **_SRC, refused=UNSUBMITTED,
        why=EARLIER_API + ": every rank puts into rank 0's one dst (submitted, four "
            "values would land in one place in an order the chip does not fix)"),
] + [
    _s3(f"stage3_multiple_senders_{k.lower()}",
        "multiple_sender_one_signal_kernel_factory", kwargs={"signal_kind": k}, **_SRC,
        refused=UNSUBMITTED,
        why=EARLIER_API + f": the same on an {k} signal, whose several senders the "
            "upstream refuses, as our run does once they are submitted")
    for k in ("SRAM_FLAGREG_VALUE", "SRAM_MEMORY")
] + [
    _s3("stage3_dynamic_index", "test_signal_list_rejects_dynamic_indexing",
        error=TypeError, refused="T.dist.Signal is a handle",
        why="T.evaluate of a SignalList member at index rank_id: refused upstream "
            "(TypeError)"),
    _s3("stage3_index_out_of_range", "test_signal_list_rejects_out_of_range_static_index",
        refused="index out of range",
        why="a SignalList of 2 indexed at 2 (the upstream's IndexError)"),
]


CASES += [
    _pp(f"print_{n}", f"{n}_kernel_factory", world=w, **_SRC, refused=UNSUBMITTED,
        why=EARLIER_API + (f" (world {w})" if w != 4 else ""))
    for n, w in (("rsram_cross_row", 4), ("collective_all_gather", 4),
                 ("collective_all_to_all_rank", 4), ("collective_all_to_all_row", 2))
] + [
    _pp("print_dram_cross_row", "dram_cross_row_kernel_factory", tensors=_AB,
        rank_inputs=True, refused=UNSUBMITTED,
        why=EARLIER_API + ": routed_put between DRAM shards"),
    _pp("print_signal_list_wait_all", "signal_list_wait_all_kernel_factory",
        seeds={"src0": "rand", "src1": "rand"}, refused=UNSUBMITTED, why=EARLIER_API),
    _pp("print_local_rank_routes", "local_rank_routes_kernel_factory", **_SRC,
        observe=["dst"], check=local_routes,
        why="puts to one's own rank: a local copy, then an on-chip put to the next row"),
    _pp("print_collective_all_reduce", "collective_all_reduce_kernel_factory", **_SRC,
        observe=["dst"], check=all_reduce, why="all_reduce sum in bfloat16, in rank order"),
] + [
    _pp(f"print_{n}", f"{n}_kernel_factory", world=w, seeds=_SRC_CNT,
        refused=UNSUBMITTED, why=EARLIER_API + (f" (world {w})" if w != 4 else ""))
    for n, w in (("collective_all_to_allv_rank", 4),
                 ("collective_all_to_allv_single_signal", 4),
                 ("collective_all_to_allv_row", 2))
] + [
    _pp("print_dist_barrier", "dist_barrier_kernel_factory", check=runs, why="barrier"),
]
DSL = "inter_rank/test_dsl_to_device_tir.py @1e58c224"
LOWERING = "inter_rank/test_lowering.py @6642f434"
_BCAST_WHY = ("no T.dist: every core copies A, row 0 gets core (0, 0)'s copy by "
              "T.comm.broadcast(direction='h'), and every core copies its dst into all "
              "of B: the cores write B over each other (those off row 0 a dst nothing "
              "wrote), undefined on the chip")
CASES += [
    Case("dsl_broadcast", "dist_dsl_to_device_tir",
         "test_simple_broadcast_dsl_lowers_to_sunmmio_device_kernel_tir", source=DSL,
         world=1, tensors=_AB, refused="a race on 'B'", why=_BCAST_WHY),
    Case("lowering_broadcast", "dist_lowering",
         "test_lowering_captures_passes_and_extracts_device_kernel", source=LOWERING,
         world=1, tensors=_AB, refused="a race on 'B'", why=_BCAST_WHY),
]
CASES += [
    Case(f"submit_early_return_{cf}_stop{st}", "dist_submit", "early_return_kernel_factory",
         source=SUBMIT, kwargs={"control_flow": cf}, scalars={"stop": st}, **_SRC,
         check=runs,
         why=f"put(..., submit=True), then `return` under stop != 0 ({cf}; stop {st}), "
             "then wait(); nobody waits for the signal, so nothing is read")
    for cf in ("if", "for", "while") for st in (0, 1)
] + [
    _cf("flow_unsafe_early_return", "unsafe_phase_kernel_factory", world=2,
        kwargs={"pattern": "early_return", "send_in_else": True}, scalars=_SC,
        seeds={"src": "rand"}, refused=_PHASE,
        why="pattern 'early_return': rank 0's column-0 cores return where the others "
            "put: an automatic expectation the upstream cannot prove, refused"),
    _cf("flow_loop_static_exit", "loop_expect_kernel_factory",
        kwargs={"bound": "static", "form": "exit"}, scalars=_LS, seeds={"src": "rand"},
        refused=_LOOP,
        why="puts in a static loop that rank 0 leaves by `return`: automatic expects "
            "cannot count it (refused upstream)"),
]


def _counts(name: str, W: int, rows: int | None) -> Callable:
    """Send/receive counts of an all_to_allv: rank r sends to r + 1 and r + 2 (every
    row), so each receiver knows its senders."""
    def f(r: int, core: int, rng: Any) -> np.ndarray:
        if name == "send_counts":
            v = np.array([1 if (p - r) % W in (1, 2) else 0 for p in range(W)], np.float32)
        else:
            v = np.array([1 if (r - p) % W in (1, 2) else 0 for p in range(W)], np.float32)
        return v if rows is None else np.repeat(v[:, None], rows, axis=1)
    return f


def _alloc_shape(func: Any, name: str) -> tuple:
    from tvm import tirx
    found: list = []

    def visit(n: Any) -> None:
        if isinstance(n, tirx.SBlock):
            found.extend(b for b in n.alloc_buffers if str(b.name) == name)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    return tuple(int(s) for s in found[0].shape), str(found[0].dtype)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.float().numpy().astype(np.float64) if t.is_floating_point() else \
        t.numpy().astype(np.float64)


def run_case(case: Case) -> Env:
    tm.enable(mesh=case.mesh)
    mod = harness.load(case.module)
    kw = {k: getattr(T.dist.SignalKind, v) if k in ("signal_kind", "kind") and v else v
          for k, v in case.kwargs.items()}
    obj = getattr(mod, case.factory)
    if not isinstance(obj, harness.Factory):
        # an upstream test function: one that builds (and checks) its kernel itself
        # returns nothing; one ported to return the kernel it defines inside itself
        with tm.world(case.world):
            obj = obj()
        if obj is None:
            return Env(case.world, {}, {}, {}, {}, case.mesh)
    func = obj.get_tir(world_size=case.world, **kw) if isinstance(
        obj, harness.Factory) else obj
    seeds = list(case.seeds)
    # seeds are read back too, but not unsigned ones: tilelang's C wrapper takes no
    # unsigned parameter
    func = harness.observe(harness.seed(func, seeds), list(dict.fromkeys(
        case.observe + [s for s in seeds if s not in case.observe
                        and not _alloc_shape(func, s)[1].startswith("uint")])))
    kernel = compile_mesh_kernel(func, check_races=True)
    W, C = case.world, case.mesh[0] * case.mesh[1]
    rows = case.mesh[0] if "row" in case.id else None
    rng = np.random.default_rng(0)
    per = [[] for _ in range(W)]
    init: dict = {}
    obs_names: list = []
    tensors: dict = {}
    before: dict = {}
    nscalar = 0
    for i, p in enumerate(func.params):
        if str(p.name) == "rank_id":
            continue
        if p not in func.buffer_map:
            # by name, else by position (TVMScript renames a parameter a kernel aliases,
            # as ``limit = rounds``)
            v = case.scalars.get(str(p.name), list(case.scalars.values())[nscalar])
            nscalar += 1
            for r in range(W):
                per[r].append(v)
            continue
        buf = func.buffer_map[p]
        name, dt = str(buf.name), getattr(torch, str(buf.dtype))
        if name.startswith("INIT_"):
            b = name[5:]
            how = case.seeds[b]
            shape = tuple(int(s) for s in buf.shape)[1:]
            if how is None:
                how = _counts(b, W, rows)
            init[b] = []
            for r in range(W):
                if how == "rand":
                    a = rng.integers(-8, 9, (C,) + shape).astype(np.float32)
                else:
                    a = np.stack([np.asarray(how(r, k, rng), np.float32).reshape(shape)
                                  for k in range(C)])
                init[b].append(a.astype(np.float64))
                per[r].append(torch.from_numpy(a).to(dt))
        elif name.startswith("OBS_"):
            obs_names.append(name[4:])
            for r in range(W):
                per[r].append(torch.zeros(tuple(int(s) for s in buf.shape), dtype=dt))
        else:
            shape = case.tensors[name]
            a = rng.integers(-8, 9, shape).astype(np.float32)
            before[name] = a.astype(np.float64)
            tensors[name] = len(per[0])
            if case.rank_inputs:
                a = rng.integers(-8, 9, (W,) + tuple(shape)).astype(np.float32)
                before[name] = [x.astype(np.float64) for x in a]
            for r in range(W):
                per[r].append(torch.from_numpy((a[r] if case.rank_inputs else a).copy()).to(dt))
    if case.split:  # global tensors (MeshTensor parameters only): the kernel splits them
        args = [per[0][j].clone() for j in tensors.values()]
        kernel(*args)
        return Env(W, init, {}, {n: [_np(a)] for n, a in zip(tensors, args)}, before,
                   case.mesh, func)
    if hasattr(kernel, "run_ranks"):
        kernel.run_ranks(per)
    else:  # a kernel without T.dist: one rank
        kernel(*per[0])
    base = len(per[0]) - len(obs_names)
    obs = {n: [_np(per[r][base + j]) for r in range(W)] for j, n in enumerate(obs_names)}
    outs = {n: [_np(per[r][j]) for r in range(W)] for n, j in tensors.items()}
    return Env(W, init, obs, outs, before, case.mesh)


def _params() -> list:
    return [pytest.param(c, id=c.id, marks=pytest.mark.xfail(strict=True, reason=c.gap))
            if c.gap else pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_corpus_kernel(case):
    if case.refused:
        with pytest.raises(case.error, match=case.refused):
            run_case(case)
        return
    case.check(run_case(case))


def test_the_docs_table_is_this_corpus():
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "tdist.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (runs exactly|refused|not yet: refused) \|", doc,
                      re.MULTILINE)
    assert dict(rows) == {c.id: ("not yet: refused" if c.gap else "refused" if c.refused
                                 else "runs exactly") for c in CASES}
