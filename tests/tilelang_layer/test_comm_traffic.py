"""VerifyMeshTensors(owner_only=True) and the traffic of comm ops: bytes, per-superstep
link loads under XY routing, and the alpha-beta NoC time (compile-free)."""
import numpy as np
import pytest

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401
import tilelang.language as T  # noqa: E402
import tvm  # noqa: E402

from meshtensor import Mesh  # noqa: E402
from meshtensor.cost import hops  # noqa: E402
from meshtensor.tilelang import mesh_tensor_functions  # noqa: E402
from meshtensor.tilelang import mesh_comm  # noqa: E402
from meshtensor.tilelang.kernels.gemm import build_gemm  # noqa: E402
from meshtensor.tilelang import (AnalyzeMeshCommunication, VerifyMeshTensors,  # noqa: E402
                                 analyze_mesh_communication, verify_mesh_tensors)
from meshtensor.tilelang.analysis.traffic import (DEFAULT_HOP_LATENCY,  # noqa: E402
                                                  DEFAULT_LINK_BANDWIDTH)

N = 4
MESH = Mesh({"x": N, "y": N})
MC = mesh_comm({"x": N, "y": N})
F = mesh_tensor_functions({"x": N, "y": N})
annotate, mcopy, init = F["annotate_mesh_tensor_info"], F["mesh_tensor_copy"], F["init_mesh_tensor_info"]
TILE = 16 * 16 * 4


def broadcast_then_rotate():
    """Each core loads its tile, broadcasts it along y from every root in turn
    (``root=[s]``), rotates it by -1 along y, and stores its own tile."""
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16)), B: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(N, N, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            R = T.alloc_shared((16, 16), "float32", scope="shared")
            mcopy(A, S, src_coord=(bx, by))
            for s in T.serial(N):
                MC.broadcast(S, R, ["y"], root=[s])
            MC.shift(S, R, ["y"], "y", -1, rotate=True)
            mcopy(R, B, dst_coord=(bx, by))

    return k


# -- owner_only --------------------------------------------------------------------------------
def test_owner_only_passes_on_own_shards_and_comm_ops():
    assert verify_mesh_tensors(broadcast_then_rotate(), owner_only=True) == []
    assert verify_mesh_tensors(build_gemm("local", 30, 22, 26), owner_only=True) == []  # replicas


@pytest.mark.parametrize("algorithm", ["summa", "cannon"])
def test_owner_only_fails_on_global_view_gemms(algorithm):
    f = build_gemm(algorithm, 30, 22, 26)
    assert verify_mesh_tensors(f) == []
    issues = verify_mesh_tensors(f, owner_only=True)
    assert [(i.kind, i.buffer, i.copy) for i in issues] == [("remote", "A", 0), ("remote", "B", 1)]
    a = issues[0]
    assert a.program == (0, 0) and a.cores == ((0, 1),) and a.count == 48  # 16 cores x 3 steps
    assert a.message.startswith("copy 0 reads A[0:8, 7:14] on program (0, 0): not its own shard: "
                                "owned by [(0, 1)]")
    mod = tvm.IRModule({"main": f})
    VerifyMeshTensors()(mod)  # whole blocks of one core: fine without owner_only
    with pytest.raises(ValueError, match=r"VerifyMeshTensors: copy 0 reads A\[0:8, 7:14\].*"
                                         r"not its own shard"):
        VerifyMeshTensors(owner_only=True)(mod)


def test_owner_only_flags_an_access_outside_copies():
    """An element read of a global tensor can't be placed on a shard: owner_only must not
    pass it silently (it reads the other row's shard here)."""
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16)), B: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(N, N, threads=1) as (bx, by):
            S = T.alloc_local((16, 16), "float32")
            for i, j in T.grid(16, 16):
                S[i, j] = A[(3 - bx) * 16 + i, by * 16 + j]
            mcopy(S, B, dst_coord=(bx, by))

    assert verify_mesh_tensors(k) == []  # copies alone are fine
    [issue] = verify_mesh_tensors(k, owner_only=True)
    assert (issue.kind, issue.buffer, issue.copy, issue.count) == ("direct_access", "A", -1, 1)
    assert issue.message.startswith("the kernel reads A[(3 - bx) * 16 + i, by * 16 + j] "
                                    "outside T.copy (1 such accesses)")


def test_owner_only_flags_a_remote_write():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        annotate({A: init({"x": 0, "y": 1}, (16, 16)), B: init({"x": 0, "y": 1}, (16, 16))})
        with T.Kernel(N, N, threads=1) as (bx, by):
            S = T.alloc_shared((16, 16), "float32")
            mcopy(A, S, src_coord=(bx, by))
            mcopy(S, B, dst_coord=(by, bx))  # transposed: off-diagonal cores write remotely

    (issue,) = verify_mesh_tensors(k, owner_only=True)
    assert issue.kind == "remote" and issue.buffer == "B" and issue.count == 12
    assert "copy 1 writes B[16:32, 0:16] on program (0, 1): not its own shard: owned by [(1, 0)]" \
        in issue.message


def test_owner_only_must_be_a_bool():
    with pytest.raises(TypeError, match="owner_only must be a bool, got 'yes'"):
        VerifyMeshTensors(owner_only="yes")


# -- comm-op traffic ---------------------------------------------------------------------------
def test_broadcast_from_a_loop_root_and_rotation_traffic():
    r = analyze_mesh_communication(broadcast_then_rotate())
    assert r.comm_ops == ("comm 0: broadcast S -> R over ('y',)", "comm 1: shift S -> R over ('y',)")
    pc = r.per_core()
    # every core receives N - 1 broadcast tiles... of which it is the root once: N - 1
    # receipts per core from the broadcasts, one from the rotation
    assert pc["comm_received"].tolist() == [N * TILE] * 16
    assert pc["comm_sent"].tolist() == [N * TILE] * 16
    assert pc["local_read"].tolist() == [TILE] * 16 and pc["remote_read"].sum() == 0
    assert r.remote_bytes == r.comm_bytes == 16 * N * TILE and r.local_bytes == 2 * 16 * TILE
    steps = r.supersteps
    assert [(s.statement[:6], s.execution) for s in steps] == \
        [("comm 0", 0), ("comm 0", 1), ("comm 0", 2), ("comm 0", 3), ("comm 1", 0)]
    y = MESH.axis_names.index("y")
    for k, s in enumerate(steps[:N]):
        # N rows, root k sends one tile to each of the N - 1 others: N(N - 1) receipts
        assert s.nbytes == N * (N - 1) * TILE and s.flows == N * (N - 1)
        j = np.arange(N)
        up = np.where(j >= k, N - 1 - j, 0) * TILE  # link j -> j+1 carries flows to d > j
        down = np.where(j < k, j + 1, 0) * TILE  # link j+1 -> j carries flows to d <= j
        assert (s.link_loads[y, 0] == up[None, :]).all() and (s.link_loads[y, 1] == down[None, :]).all()
        assert not s.link_loads[1 - y].any()
        assert s.max_link_bytes == max(k, N - 1 - k) * TILE
        assert s.hop_bytes == {h: N * TILE * ((k - h >= 0) + (k + h < N)) for h in range(1, N)
                               if (k - h >= 0) + (k + h < N)}
    rot = steps[N]
    # rotation by -1: N(N-1) one-hop transfers and N wraparounds of N - 1 hops; every
    # directed y-link carries exactly one tile (the wraparounds use the +y links)
    assert rot.hop_bytes == {1: N * (N - 1) * TILE, N - 1: N * TILE}
    assert (rot.link_loads[y, :, :, :N - 1] == TILE).all() and rot.max_link_bytes == TILE
    assert (r.link_loads() == sum(s.link_loads for s in steps)).all()
    # every remote byte crosses hops(sender, receiver) links
    far = r.core != r.peer
    assert r.link_loads().sum() == (r.nbytes[far] * hops(MESH, r.core[far], r.peer[far])).sum()
    assert "comm recv" in r.table() and "total" in r.superstep_table()


def test_noc_time_is_the_alpha_beta_sum_over_supersteps():
    r = analyze_mesh_communication(broadcast_then_rotate())
    bw, lat = 1e9, 1e-6
    want = sum(lat * max(s.hop_bytes) + s.max_link_bytes / bw for s in r.supersteps)
    # by hand: broadcasts from roots 0..3 reach 3, 2, 2, 3 hops and load 3, 2, 2, 3 tiles;
    # the rotation 3 hops and one tile
    hand = lat * (3 + 2 + 2 + 3 + 3) + TILE * (3 + 2 + 2 + 3 + 1) / bw
    assert r.noc_time(link_bandwidth=bw, hop_latency=lat) == pytest.approx(want) == pytest.approx(hand)
    assert r.noc_time() == pytest.approx(13 * DEFAULT_HOP_LATENCY + 11 * TILE / DEFAULT_LINK_BANDWIDTH)
    with pytest.raises(ValueError, match="link_bandwidth must be > 0 bytes/s, got 0"):
        r.noc_time(link_bandwidth=0)
    with pytest.raises(ValueError, match="hop_latency must be >= 0 s, got -1"):
        r.noc_time(hop_latency=-1)


def test_comm_ops_without_annotations_are_analysed():
    @T.prim_func
    def k():
        with T.Kernel(N * N, threads=1) as bid:
            S = T.alloc_shared((8,), "float32")
            MC.all_gather(S[0:2], S, ["x"], gather_axis=0)
            MC.barrier()

    r = analyze_mesh_communication(k)
    assert r.copies == () and len(r.supersteps) == 2 and r.supersteps[1].flows == 0
    assert r.comm_bytes == 16 * (N - 1) * 2 * 4 and r.supersteps[1].time() == 0.0
    mod = AnalyzeMeshCommunication()(tvm.IRModule({"main": k}))
    attr = mod["main"].attrs["mesh_communication"]
    assert int(attr["comm_bytes"]) == r.comm_bytes and int(attr["max_link_bytes"]) == r.max_link_bytes()


def test_comm_op_roots_and_counts_must_not_depend_on_the_core():
    @T.prim_func
    def by_core_root():
        with T.Kernel(N, N, threads=1) as (bx, by):
            S = T.alloc_shared((4,), "float32")
            MC.broadcast(S, S, ["y"], root=[bx])

    @T.prim_func
    def by_core_count():
        with T.Kernel(N, N, threads=1) as (bx, by):
            S = T.alloc_shared((4,), "float32")
            for i in T.serial(bx):
                MC.shift(S, S, ["y"], "y", 1)

    with pytest.raises(ValueError, match=r"AnalyzeMeshCommunication: the root of comm 0: broadcast "
                                         r"S -> S over \('y',\) differs between cores"):
        analyze_mesh_communication(by_core_root)
    with pytest.raises(ValueError, match=r"comm 0: shift S -> S over \('y',\) runs between 0 and 3 "
                                         r"times on different cores"):
        analyze_mesh_communication(by_core_count)


# -- the distributed-memory GEMMs against the closed forms of docs/traffic.md ------------------
GEMM_SIZES = [(64, 64, 64), (50, 37, 19), (1, 1, 1)]
GEMM_IDS = ["64", "50x37x19", "1x1x1"]


def _ceil(a, b):
    return -(-a // b)


def gemm_closed_form(algorithm, M, N, K, n=N, itemsize=4):
    """Per core (linear order): own-shard bytes read and written, comm bytes received; and
    per superstep: (bytes, {hops: bytes}, max link bytes) (docs/traffic.md)."""
    from meshtensor import chunk_bounds
    rm, ck, rk, cn = (np.diff(chunk_bounds(v, n)) for v in (M, K, K, N))
    tm, tn, tk = _ceil(M, n), _ceil(N, n), _ceil(K, n)
    tA, tB = tm * tk * itemsize, tk * tn * itemsize  # comm ops move whole static tiles
    i, j = np.divmod(np.arange(n * n), n)
    if algorithm == "ksplit_comm":
        piece = np.diff(chunk_bounds(N, n)) * tm * itemsize  # C row panel cut along N
        read = (rm[i] * ck[j] + rk[j] * N) * itemsize
        recv = (n - 1) * piece[j]
        up = np.array([(p + 1) * piece[p + 1:].sum() for p in range(n - 1)])
        down = np.array([(n - 1 - p) * piece[:p + 1].sum() for p in range(n - 1)])
        hop = {}
        for s in range(n):
            for d in range(n):
                if s != d:
                    hop[abs(s - d)] = hop.get(abs(s - d), 0) + n * piece[d]
        steps = [(n * (n - 1) * piece.sum(), hop, max(up.max(initial=0), down.max(initial=0)))]
        return read, rm[i] * cn[j] * itemsize, recv, steps
    read = (rm[i] * ck[j] + rk[i] * cn[j]) * itemsize
    write = rm[i] * cn[j] * itemsize
    if algorithm == "summa_comm":
        recv = np.full(n * n, (n - 1) * (tA + tB))
        steps = []
        for k in range(n):
            hop = {h: n * ((k - h >= 0) + (k + h < n)) for h in range(1, n)}
            for t in (tA, tB):  # the A broadcast along y, then B along x (each step k)
                steps.append((n * (n - 1) * t, {h: c * t for h, c in hop.items() if c},
                              max(k, n - 1 - k) * t))
        return read, write, recv, steps  # in the order they run: A0, B0, A1, B1, ...
    assert algorithm == "cannon_comm"
    recv = (i != 0) * tA + (j != 0) * tB + (n - 1) * (tA + tB)
    steps = []
    for t in (tA, tB):  # skew: row i of A moves i left (n - i cores i hops, i cores n - i)
        hop = {}
        for r in range(1, n):
            hop[r] = hop.get(r, 0) + (n - r) * t
            hop[n - r] = hop.get(n - r, 0) + r * t
        steps.append((n * (n - 1) * t, hop, None))
    # rotations, in the order they run (A then B after each of the first n - 1 products):
    # n(n-1) one-hop tiles, n wraparounds of n-1 hops
    for _ in range(n - 1):
        for t in (tA, tB):
            rot = {1: n * (n - 1) * t}
            rot[n - 1] = rot.get(n - 1, 0) + n * t
            steps.append((n * n * t, rot, t))
    return read, write, recv, steps


@pytest.mark.parametrize("algorithm", ["summa_comm", "cannon_comm", "ksplit_comm"])
@pytest.mark.parametrize("shape", GEMM_SIZES, ids=GEMM_IDS)
def test_comm_gemm_traffic_matches_closed_forms(algorithm, shape):
    f = build_gemm(algorithm, *shape)
    assert verify_mesh_tensors(f, owner_only=True) == []
    r = analyze_mesh_communication(f)
    read, write, recv, steps = gemm_closed_form(algorithm, *shape)
    pc = r.per_core()
    assert pc["local_read"].tolist() == read.tolist()
    assert pc["local_write"].tolist() == write.tolist()
    assert pc["remote_read"].sum() == pc["remote_write"].sum() == 0
    assert pc["comm_received"].tolist() == recv.tolist()
    assert r.comm_bytes == r.remote_bytes == sum(s[0] for s in steps)
    assert len(r.supersteps) == len(steps)
    for got, (nbytes, hop, max_link) in zip(r.supersteps, steps):
        assert (got.nbytes, got.hop_bytes) == (nbytes, {h: b for h, b in hop.items() if b}), got.statement
        if max_link is not None:
            assert got.max_link_bytes == max_link, got.statement


def test_cannon_rotations_load_every_link_with_one_tile():
    r = analyze_mesh_communication(build_gemm("cannon_comm", 64, 64, 64))
    rotations = [s for s in r.supersteps if "shift" in s.statement]
    assert len(rotations) == 2 * (N - 1)
    for s in rotations:
        axis = 1 if "over ('y',)" in s.statement else 0
        loads = s.link_loads[axis]  # (direction, x, y): links p -> p+1 and back
        assert (np.take(loads, range(N - 1), axis=1 + axis) == TILE).all()
        assert not np.take(loads, [N - 1], axis=1 + axis).any()  # no link past the edge
        assert not s.link_loads[1 - axis].any()
        assert s.time(1e9, 1e-6) == pytest.approx((N - 1) * 1e-6 + TILE / 1e9)


def test_summa_comm_moves_what_the_global_view_reads_remotely():
    comm = analyze_mesh_communication(build_gemm("summa_comm", 64, 64, 64))
    view = analyze_mesh_communication(build_gemm("summa", 64, 64, 64))
    assert comm.comm_bytes == view.remote_bytes == 16 * 6144
    def remote(r):
        return {h: b for h, b in r.by_hops().items() if h}
    assert remote(comm) == remote(view) and comm.supersteps[0].hop_bytes == view.supersteps[0].hop_bytes
    # 2n broadcasts; from root k the busiest link carries max(k, n-1-k) tiles
    lat, bw = 1e-6, 1e9
    assert comm.noc_time(bw, lat) == pytest.approx(2 * (lat + TILE / bw) * (3 + 2 + 2 + 3))


def test_superstep_table_total_row_is_the_columns_total():
    """Issue 30: the demo's "bytes by hops" table ended with an empty total, and the
    total of `max link` (262144) was neither the sum (1310720) nor the maximum (196608)
    of its column: it was the busiest link over the whole kernel. Now the total row
    holds each column's sum (max link: its largest), and the kernel-wide busiest link
    is a sentence of its own."""
    r = analyze_mesh_communication(build_gemm("summa_comm", 64, 64, 64, N))
    lines = r.superstep_table(width=200).splitlines()
    head = next(ln for ln in lines if ln.startswith("step"))
    total = next(ln for ln in lines if ln.startswith("total "))
    cols = head.index("max link"), head.index("bytes by hops")
    steps = r.supersteps
    want = {}
    for s in steps:
        for h, b in s.hop_bytes.items():
            want[h] = want.get(h, 0) + b
    assert total[cols[1]:].strip() == ", ".join(f"{h}: {b}" for h, b in sorted(want.items()))
    fields = total[:cols[1]].split()
    assert fields[1] == str(sum(s.nbytes for s in steps))
    assert fields[3] == str(max(s.max_link_bytes for s in steps))
    assert f"the busiest link carries {r.max_link_bytes()} bytes" in " ".join(lines)
    assert max(map(len, r.superstep_table().splitlines())) <= 80
