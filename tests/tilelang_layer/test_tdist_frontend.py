"""T.dist's front end: every op emits one record; the upstream's front-end checks are
ValueError / TypeError with its text (no kernel is compiled here)."""

import pytest

import tilelang
import tilelang.language as T
from tvm import tirx

from meshtensor.tilelang import tilelang_mesh as tm
from meshtensor.tilelang.ir.dist_op import decode, find_dist_ops
from meshtensor.tilelang.language import dist


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(2, 2))


def build(body, world=4, params=None):
    """A 2x2-mesh kernel for ``world`` ranks whose body is ``body(ns)``: ``ns`` holds
    src, dst (shared) and the rank id."""
    with tm.world(world):
        @T.prim_func
        def k(A: T.Tensor((4, 8), "float32"), rank_id: T.dist.RankId):
            with T.Kernel(4, threads=1) as bx:
                src = T.alloc_shared((8,), "float32")
                dst = T.alloc_shared((world, 8), "float32")
                body(dict(src=src, dst=dst, rank=rank_id, A=A, bx=bx))
    return k


def ops(func):
    return [decode(f.call) for f in find_dist_ops(func)]


def test_world_context_and_world_size():
    assert dist.current_world() == 1
    with tm.world(3):
        assert int(T.dist.world_size()) == 3
        with tm.world(3):
            pass
        with pytest.raises(ValueError, match="Conflicting nested world_size values: 3 and 2"):
            with tm.world(2):
                pass
    with pytest.raises(ValueError, match="world_size must be a positive int, got 0"):
        with tm.world(0):
            pass
    with pytest.raises(ValueError, match="positive int, got True"):
        with tm.world(True):
            pass


def test_rank_extents_and_placement():
    assert dist.rank_extents(17, 4) == [(0, 5), (5, 9), (9, 13), (13, 17)]
    assert dist.rank_extents(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    p = T.dist.placement.shard(1)
    assert repr(p) == "RankShard(1)" and p.rank_shape((3, 10), 4) == (3, 3)
    assert repr(T.dist.placement.replicated()) == "RankReplicated()"
    with pytest.raises(ValueError, match="Rank shard dim must be a non-negative int, got -1"):
        T.dist.placement.shard(-1)
    with pytest.raises(ValueError, match="Invalid Rank shard dimension: 2, tensor rank is 2"):
        T.dist.placement.shard(2).check(2)


def test_every_op_emits_one_record():
    def body(n):
        s = T.dist.signal()
        sl = T.dist.signals(4)
        T.dist.put(n["src"], n["dst"][n["rank"], 0:8], (n["rank"] + 1) % 4, signal=s,
                   submit=True)
        T.dist.wait_signal(s)
        T.dist.wait_signal(s, dst=n["dst"])  # the upstream's earlier spelling (decision 176)
        T.dist.routed_put(n["src"], n["dst"][0, 0:8], [[0, 1, 1]], signal=s)
        T.dist.put_signal(s, 1)
        T.dist.submit()
        T.dist.wait()
        T.dist.barrier()
        T.dist.barrier_arrive(s, submit=True)
        c = T.dist.all_gather(n["src"], n["dst"], signals=sl, submit=True)
        T.dist.wait_all(c)
        T.dist.wait_all(sl)
    names = [o.op for o in ops(build(body))]
    assert names == ["signal_decl", "signal_decl", "put", "wait_signal", "wait_signal",
                     "routed_put",
                     "put_signal", "submit", "wait_send", "signal_decl", "barrier",
                     "barrier_arrive", "all_gather", "wait_all", "wait_all"]


def test_earlier_api_spellings():
    """The upstream's earlier API (decisions 176, 189): ``wait_all(..., dst=)`` is
    checked and without effect; ``all_reduce`` without ``signal=`` makes its own SRAM
    INC signal."""
    def body(n):
        sl = T.dist.signals(2)
        T.dist.wait_all(sl, dst=n["dst"])
        T.dist.all_reduce(n["src"], T.alloc_shared((8,), "float32"), "sum")
    o = ops(build(body))
    assert [x.op for x in o] == ["signal_decl", "wait_all", "signal_decl", "all_reduce"]
    assert o[2]["kind"] == "sram_flagreg_inc" and o[3]["signal"].id == o[2]["id"]


def test_record_round_trip():
    def body(n):
        s = T.dist.signal(kind=T.dist.SignalKind.SRAM_FLAGREG_VALUE)
        T.dist.put(n["src"], n["dst"][n["rank"], 0:8], 2, dst_row=1, signal=s)
    o = [o for o in ops(build(body)) if o.op == "put"][0]
    assert o.world == 4 and o.mesh_shape == (2, 2)
    assert int(o["dst_rank"]) == 2 and int(o["dst_row"]) == 1
    assert o["src"].buffer.name == "src" and str(o["dst"].starts[0]) == "rank_id"
    assert o["signal"].id == 0 and o["signal"].member is None


@pytest.mark.parametrize("call, err, text", [
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 4, signal=T.dist.signal()),
     ValueError, r"dst_rank 4 is outside \[0, 4\)"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], True, signal=T.dist.signal()),
     TypeError, "dst_rank must be an integer or TIR PrimExpr, got bool"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 1, signal=3),
     TypeError, "signal must be created by T.dist.signal, got int"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 1, dst_row=2, signal=T.dist.signal()),
     ValueError, r"dst_row 2 is outside \[0, 2\)"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:4], 1, signal=T.dist.signal()),
     ValueError, "same shape"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 1, signal=T.dist.signal(), submit=1),
     TypeError, "submit must be a bool"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 1,
                          signal=T.dist.signal(expect="manual")),
     ValueError, "expect='manual' requires a SignalList member"),
    (lambda n: T.dist.signal(kind="inc"), TypeError, "kind must be a T.dist.SignalKind"),
    (lambda n: T.dist.signal(expect="never"), ValueError,
     "expect must be None, 'auto', or 'manual'"),
    (lambda n: T.dist.signals(0), ValueError, "count must be a positive compile-time int"),
    (lambda n: T.dist.signals(2)[2], ValueError, "SignalList index out of range"),
    (lambda n: T.dist.signals(2)[True], TypeError, "index must be an integer"),
    (lambda n: T.dist.signals(2, expect="auto")[n["bx"]], TypeError,
     "Dynamic SignalList indexing cannot use expect='auto'"),
    (lambda n: T.dist.put(n["src"], n["dst"][0, 0:8], 1, signal=T.dist.signals(2)[n["bx"]]),
     ValueError, "dynamic SignalList member passed to T.dist.put requires expect='manual'"),
    (lambda n: T.dist.routed_put(n["src"], n["dst"][0, 0:8], [], signal=T.dist.signal()),
     TypeError, "routes must be a non-empty list"),
    (lambda n: T.dist.routed_put(n["src"], n["dst"][0, 0:8], [[0, 1]], signal=T.dist.signal()),
     TypeError, r"each route must be \[src_row, dst_rank, dst_row\]"),
    (lambda n: T.dist.routed_put(n["src"], n["dst"][0, 0:8], [[0, 1, 0]],
                                 signal=T.dist.signal(), src_rank=9),
     ValueError, r"src_rank 9 is outside \[0, 4\)"),
    (lambda n: T.dist.put_signal(T.dist.signals(1, expect="manual")[0], 1), ValueError,
     "put_signal with expect='manual' is not supported"),
    (lambda n: T.dist.wait_signal(T.dist.signal(), expected_delta=1), ValueError,
     "expected_delta requires expect='manual'"),
    (lambda n: T.dist.wait_signal(T.dist.signals(1, expect="manual")[0], expected_delta=-1),
     ValueError, "expected_delta must be non-negative"),
    (lambda n: T.dist.wait_signal(T.dist.signal(), dst=3), TypeError,
     "dst must be a buffer or a region"),
    (lambda n: T.dist.wait_all(3), TypeError, "expects a SignalList or DistCompletion"),
    (lambda n: T.dist.wait_all(T.dist.signals(2), dst=3), TypeError,
     "dst must be a buffer or a region"),
    (lambda n: T.evaluate(T.dist.signals(2)[n["rank"]]), TypeError,
     "a T.dist.Signal is a handle for T.dist ops, not a TIR value"),
    (lambda n: T.evaluate(T.dist.signals(2)), TypeError, "a T.dist.SignalList is a handle"),
    (lambda n: T.dist.signal() + 1, TypeError, "unsupported operand"),
    (lambda n: T.dist.wait_signals(T.dist.signals(2), expected_deltas=n["src"]), ValueError,
     "requires a SignalList declared with expect='manual'"),
    (lambda n: T.dist.completion(T.dist.signals(2, expect="manual")), ValueError,
     "without expected_deltas cannot use expect='manual'"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"], axis=1, signal=T.dist.signal()),
     ValueError, "only supports axis=None, axis=0, or axis=-1"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"]), TypeError,
     "requires exactly one of signal or signals"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"], signals=T.dist.signals(3)), ValueError,
     "requires one signal per source Rank, got 3"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"][0:2, 0:8], signal=T.dist.signal()),
     ValueError, "destination shape must be"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"], group=(0, 1), signal=T.dist.signal()),
     ValueError, "group is reserved"),
    (lambda n: T.dist.all_gather(n["src"], n["dst"],
                                 signal=T.dist.signal(kind=T.dist.SignalKind.SRAM_MEMORY)),
     ValueError, "requires an automatic or INC flagreg signal"),
    (lambda n: T.dist.all_reduce(n["src"], n["dst"][0, 0:8], "prod", signal=T.dist.signal()),
     ValueError, "reduce_type must be one of"),
    (lambda n: T.dist.all_reduce(n["src"], n["dst"][0, 0:8], 3, signal=T.dist.signal()),
     TypeError, "reduce_type must be a string"),
    (lambda n: T.dist.all_reduce(n["src"], n["A"][0, 0:8], signal=T.dist.signal()),
     ValueError, "must use RSRAM or generic shared scope"),
    (lambda n: T.dist.all_reduce(
        n["src"], n["dst"][0, 0:8], signal=T.dist.signal(kind=T.dist.SignalKind.DRAM_FLAGREG_INC)),
     ValueError, "requires an SRAM INC signal"),
    (lambda n: T.dist.all_to_all(n["src"], n["dst"][0, 0:8], signal=T.dist.signal(),
                                 domain="col"),
     ValueError, "domain must be 'rank' or 'row'"),
    (lambda n: T.dist.all_to_all(n["dst"][0:4, 0:4], n["dst"][0:4, 4:8], signal=T.dist.signal()),
     ValueError, "overlapping source and destination"),
    (lambda n: T.dist.has_pending(3), TypeError, "completion must be created by"),
])
def test_front_end_checks(call, err, text):
    with pytest.raises(err, match=text):
        build(call)


def test_outside_a_kernel_and_without_rank_id():
    with pytest.raises(ValueError, match="can only be used while constructing a PrimFunc"):
        T.dist.submit()
    with pytest.raises(ValueError, match="require one PrimFunc parameter annotated with "
                                         "T.dist.RankId"):
        @T.prim_func
        def k(A: T.Tensor((4,), "float32")):
            with T.Kernel(4, threads=1):
                T.dist.submit()
    with pytest.raises(ValueError, match="at most one T.dist.RankId"):
        @T.prim_func
        def k2(r: T.dist.RankId, q: T.dist.RankId):
            with T.Kernel(4, threads=1):
                T.dist.submit()


def test_two_rank_ids_refused_without_a_dist_op():
    # the upstream refuses the kernel when it is built, whether or not it uses T.dist
    with pytest.raises(ValueError, match="at most one T.dist.RankId parameter, got "
                                         r"\['r', 'q'\]"):
        @T.prim_func
        def k(r: T.dist.RankId, q: T.dist.RankId):
            T.evaluate(r + q)


def test_evaluate_of_a_dist_op_emits_it_once():
    # the upstream's ops return their call and its kernels may write
    # T.evaluate(T.dist.put(...)); ours emit the statement and return None, which
    # T.evaluate must take (TileLang's stopped with "Check failed: value.defined()")
    with tm.world(2):
        @T.prim_func
        def k(rank_id: T.dist.RankId):
            with T.Kernel():
                src = T.alloc_shared((8,), "float32")
                dst = T.alloc_shared((8,), "float32")
                s = T.dist.signal()
                T.evaluate(T.dist.put(src, dst, (rank_id + 1) % 2, signal=s))
                T.dist.submit()
                T.dist.wait_signal(s)
    assert [op.op for op in ops(k)] == ["signal_decl", "put", "submit", "wait_signal"]


def test_signal_used_in_another_kernel():
    held = []

    def first(n):
        held.append(T.dist.signal())
    build(first)

    def second(n):
        T.dist.put_signal(held[0], 1)
    with pytest.raises(ValueError, match="cannot be used across different PrimFuncs"):
        build(second)


def test_dir_lists_only_the_public_names():
    """``dir(T.dist)`` (tab completion, ``help``) shows what a kernel writer uses, not
    the module's imports and helpers; every name stays reachable."""
    names = dir(T.dist)
    assert T.dist is dist
    assert [n for n in names if not n.startswith("__")] == sorted(dist.__all__)
    assert "__doc__" in names and "__name__" in names
    assert "np" not in names and "_context" not in names
    assert T.dist.np is dist.np and callable(T.dist._context)
