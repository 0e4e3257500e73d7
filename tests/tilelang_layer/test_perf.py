"""The performance model (estimate_mesh_kernel): the closed forms of docs/perf.md
against the tool (square and rectangular, several machines), the collective
algorithms, the serial and overlapped schedules, properties, the superstep order
against the lowering, the trace, memory fit, the GEMM choice and its tile search, the
profile command, and bad input. Nothing is compiled."""
import ast
import importlib.util
import itertools
import json
import math
import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("tilelang")
import tilelang  # noqa: E402,F401
import tilelang.language as T  # noqa: E402
from tvm import tirx  # noqa: E402

from meshtensor import Mesh  # noqa: E402
from meshtensor.cli import main  # noqa: E402
from cli_text import read  # noqa: E402
from meshtensor.cost import exchange_time  # noqa: E402
from meshtensor.machines import PRESETS, Machine  # noqa: E402
from meshtensor.tilelang import (count_mesh_kernel, estimate_mesh_kernel,  # noqa: E402
                                 lower_mesh_comm, mesh_comm, mesh_tensor_functions,
                                 trace_events, write_trace)
from meshtensor.tilelang.analysis.comm_cost import (Exchange, exchange_cost,  # noqa: E402
                                                    ring_hops)
from meshtensor.tilelang.analysis.perf import PlanStep, time_plan  # noqa: E402
from meshtensor.tilelang.analysis.timeline import CORES_PID, NETWORK_PID  # noqa: E402
from meshtensor.tilelang.analysis.traffic import analyze_mesh_communication  # noqa: E402
from meshtensor.tilelang.ir.evaluate import eval_np  # noqa: E402
from meshtensor.tilelang.kernels.gemm import (CB, KSPLIT_CHUNK, RB, build_gemm,  # noqa: E402
                                              check_copies)
from meshtensor.tilelang.kernels.gemm_choice import compare_gemm_algorithms  # noqa: E402
from meshtensor.tilelang.transform.lower_comm import COMM_OP_ATTR  # noqa: E402

# distinct numbers, so that every term of the closed forms shows: a mesh without
# wraparound, no multicast, partial overlap, a chip-wide memory bandwidth
TOY = Machine("toy", (8, 8), {"float32": 3e10, "bfloat16": 9e10}, mem_bandwidth=7e9,
              link_bandwidth=5e9, hop_latency=2e-9, message_overhead=5e-8,
              local_memory_bytes=1 << 20, barrier_latency=3e-7, mem_bandwidth_total=2e10,
              overlap=0.6)
# the same with a torus, multicast and a slow injection port
TORUS = TOY.replace(name="torus", torus=(True, True), multicast_bandwidth=4e9,
                    multicast_overhead=1e-7, injection_bandwidth=3e9)
MACHINES = [TOY, TORUS, PRESETS["generic"], PRESETS["wormhole-n300"]]


# -- closed forms (docs/perf.md, "Closed forms") ----------------------------------------------
def cost(m, op, dims, wrap, B, L, H, S, msgs, P=None):
    """The cheapest algorithm's seconds for an exchange whose direct transfers put ``L``
    bytes on the busiest link over at most ``H`` hops, the busiest sender sending ``S``
    bytes in ``msgs`` messages (docs/perf.md, "Collective algorithms")."""
    if not L:
        return 0.0
    return exchange_cost(Exchange(op, dims, wrap, B, P or B, L, H, S, msgs, 1), m)[0].seconds


def pad(bm, bn):
    return RB * math.ceil(bm / RB), CB * math.ceil(bn / CB)


def bcast_stats(n, c, wrap):
    """A broadcast along a line of ``n`` from position ``c``: (busiest link in pieces,
    longest route)."""
    if wrap:
        return n // 2, n // 2
    return max(c, n - 1 - c), max(c, n - 1 - c)


def ring_sum(n):
    """The busiest directed link of an all-to-all on a ring of ``n``, in pieces: the
    flows going up (ties go up) of every distance."""
    return sum(range(1, n // 2 + 1))


def closed_summa(m, n, M, N, K, t, s=4):
    bm, bn, bk = t
    tm, tn, tk = M // n, N // n, K // n
    bmp, bnp = pad(bm, bn)
    nk, P, NB = tk // bk, n * (tk // bk), (tm // bm) * (tn // bn)
    F, w = m.rate("float32"), m.wraps((n, n))
    f = 2 * bmp * bnp * bk / F
    load = (bm * bk + bk * bn) * s / m.core_mem_bandwidth(2 * n - 1)
    a_b, b_b = bm * bk * s, bk * bn * s
    E = 0.0
    for q in range(P):
        for nb, wr in ((a_b, w[1]), (b_b, w[0])):
            links, hops = bcast_stats(n, q // nk, wr)
            E += cost(m, "broadcast", (n,), (wr,), nb, links * nb, hops, (n - 1) * nb, n - 1)
    g = 2 * f if P >= 2 else f
    bw = m.core_mem_bandwidth(n * n)
    return (load + NB * E + NB * ((P >= 2) * load + max(P - 2, 0) * max(f, load))
            + (NB - 1) * max(g, (bm * bn + bm * bk + bk * bn) * s / bw)
            + max(g, bm * bn * s / bw))


def skew_stats(n, wrap):
    """Cannon's skew: row i moves by i; (busiest link in tiles, longest route)."""
    if n == 1:
        return 0, 0
    return n // 2, (n // 2 if wrap else n - 1)


def closed_cannon(m, n, M, N, K, t, s=4):
    bm, bn = t[:2]
    tm, tn, tk = M // n, N // n, K // n
    bmp, bnp = pad(bm, bn)
    NB = (tm // bm) * (tn // bn)
    F, w = m.rate("float32"), m.wraps((n, n))
    f = 2 * bmp * bnp * tk / F
    bw = m.core_mem_bandwidth(n * n)
    load, store = (bm * tk + tk * bn) * s / bw, bm * bn * s / bw
    a_b, b_b = bm * tk * s, tk * bn * s
    E = 0.0
    for nb, wr in ((a_b, w[1]), (b_b, w[0])):
        links, hops = skew_stats(n, wr)
        E += cost(m, "permute", (n, n), w, nb, links * nb, hops, nb, 1)
        if n > 1:  # a rotation: one tile on every link, the wraparound tile n - 1 hops
            E += (n - 1) * cost(m, "shift", (n,), (wr,), nb, nb, 1 if wr else n - 1, nb, 1)
    g = 2 * f if n >= 2 else f
    return load + NB * E + NB * max(n - 2, 0) * f + (NB - 1) * max(g, load + store) + \
        max(g, store)


def a2a_stats(n, wrap, axes):
    """An all-to-all of equal pieces over ``axes`` of an n x n mesh: (busiest link in
    pieces, longest route)."""
    per_line = ring_sum(n) if wrap else (n // 2) * ((n + 1) // 2)
    hop = n // 2 if wrap else n - 1
    k = len(axes)
    return (per_line * (n if k == 2 else 1), hop * k)


def closed_splitk(m, n, M, N, K, t, s=4):
    bm, bn, bk = t
    P = n * n
    kc = K // P
    bmp, bnp = pad(bm, bn)
    NB, nq = (M // bm) * (N // bn), kc // bk
    F, w = m.rate("float32"), m.wraps((n, n))
    bw = m.core_mem_bandwidth(P)
    phi = nq * 2 * bmp * bnp * bk / F
    lam = nq * (bm * bk + bk * bn) * s / bw
    piece = bm // P * bn * s
    omega = piece / bw
    links, hops = a2a_stats(n, w[0], (0, 1))
    E = cost(m, "reduce_scatter", (n, n), w, bm * bn * s, links * piece, hops,
             (P - 1) * piece, P - 1, piece)
    return NB * E + max(phi, lam) * min(NB, 2) + max(NB - 2, 0) * max(phi, lam + omega) + \
        (2 if NB >= 2 else 1) * omega


def closed_ksplit(m, n, M, N, K, s=4):
    tm, tn, tk = M // n, N // n, K // n
    tmp = RB * math.ceil(tm / RB)
    cw = min(KSPLIT_CHUNK, CB * math.ceil(N / CB))
    cols = cw * math.ceil(N / cw)
    F, w = m.rate("float32"), m.wraps((n, n))
    bw = m.core_mem_bandwidth(n * n)
    piece = tm * tn * s
    links, hops = a2a_stats(n, w[1], (1,))
    E = cost(m, "reduce_scatter", (n,), (w[1],), tm * N * s, links * piece, hops,
             (n - 1) * piece, n - 1, piece)
    return max(2 * tmp * cols * tk / F, (tm * tk + tk * N) * s / bw) + E + piece / bw


def closed_cannon25d(m, n, M, N, K, c, s=4):
    q = check_copies(M, N, K, n, c)
    L = n // q  # layers per mesh side
    tm, tn, tk = M // q, N // q, K // c // q
    tmp, tnp = pad(tm, tn)
    F, w = m.rate("float32"), m.wraps((n, n))
    f = 2 * tmp * tnp * tk / F
    bw = m.core_mem_bandwidth(n * n)
    load = (tm * tk + tk * tn) * s / bw
    E = 0.0
    for nb in (tm * tk * s, tk * tn * s):  # rotations inside the layers, no wraparound link
        if q > 1:
            E += (q - 1) * cost(m, "permute", (n, n), w, nb, nb, q - 1, nb, 1)
    Cb = tm * tn * s
    rounds = int(math.log2(c))
    for r in range(rounds):  # layer l sends to l - 2^r: q cores in line over q 2^r hops
        hop = q * (1 << r) if (1 << r) < L else q * ((1 << r) // L)
        E += cost(m, "permute", (n, n), w, Cb, q * Cb, hop, Cb, 1)
    add = tm * tn / F
    store = Cb / m.core_mem_bandwidth(q * q)
    if q == 1:
        head = max(f, load)
        products = 0.0
    else:
        head = load
        products = (q - 2) * f + 2 * f
    if rounds:
        tail = (rounds - 1) * add + max(add, store)
    else:
        tail = 0.0
        products = products - 2 * f + max(2 * f, store) if q > 1 else 0.0
        head = max(f, load + store) if q == 1 else head
    return head + products + E + tail


CASES = {  # (mesh, M, N, K, tiles): square and rectangular, blocks and panels
    "summa_comm": [(1, 32, 32, 32, (16, 16, 16)), (2, 64, 64, 64, (32, 32, 32)),
                   (2, 96, 64, 32, (16, 16, 8)), (3, 48, 96, 72, (8, 16, 4)),
                   (4, 256, 128, 512, (32, 32, 16)), (8, 512, 512, 512, (64, 32, 16))],
    "cannon_comm": [(1, 32, 32, 32, (16, 16, 0)), (2, 96, 64, 32, (16, 8, 0)),
                    (3, 48, 96, 72, (8, 16, 0)), (4, 256, 128, 512, (32, 16, 0)),
                    (8, 512, 512, 512, (64, 64, 0))],
    "splitk_comm": [(2, 64, 48, 32, (16, 16, 8)), (2, 128, 64, 32, (16, 8, 4)),
                    (3, 108, 48, 36, (18, 8, 2)), (4, 256, 128, 2048, (64, 64, 32)),
                    (8, 256, 64, 8192, (128, 64, 128))],
}


def _cases():
    for alg, cases in CASES.items():
        for n, M, N, K, t in cases:
            yield pytest.param(alg, n, M, N, K, t, id=f"{alg}-{n}x{n}-{M}x{N}x{K}")


@pytest.mark.parametrize("algorithm,n,M,N,K,tiles", list(_cases()))
def test_closed_forms_equal_the_model(algorithm, n, M, N, K, tiles):
    t = tiles if algorithm != "cannon_comm" else (tiles[0], tiles[1], K // n)
    work = count_mesh_kernel(build_gemm(algorithm, M, N, K, mesh=n, tiles=t))
    closed = {"summa_comm": closed_summa, "cannon_comm": closed_cannon,
              "splitk_comm": closed_splitk}[algorithm]
    for m in MACHINES:
        got = estimate_mesh_kernel(work, m).serial
        assert got == pytest.approx(closed(m, n, M, N, K, t), rel=1e-12), m.name


@pytest.mark.parametrize("n,M,N,K", [(1, 32, 32, 32), (2, 64, 48, 32), (4, 256, 256, 256),
                                     (4, 128, 64, 96), (8, 512, 512, 512)])
def test_closed_form_of_ksplit(n, M, N, K):
    work = count_mesh_kernel(build_gemm("ksplit_comm", M, N, K, mesh=n))
    for m in MACHINES:
        assert estimate_mesh_kernel(work, m).serial == \
            pytest.approx(closed_ksplit(m, n, M, N, K), rel=1e-12), m.name


@pytest.mark.parametrize("n,M,N,K,c", [(4, 32, 32, 64, 4), (4, 48, 32, 64, 4),
                                       (4, 64, 32, 64, 1), (8, 64, 64, 128, 4),
                                       (8, 32, 64, 256, 16), (8, 64, 32, 512, 64)])
def test_closed_form_of_cannon25d(n, M, N, K, c):
    work = count_mesh_kernel(build_gemm("cannon25d_comm", M, N, K, mesh=n, copies=c))
    for m in MACHINES:
        assert estimate_mesh_kernel(work, m).serial == \
            pytest.approx(closed_cannon25d(m, n, M, N, K, c), rel=1e-12), m.name


def test_superstep_structure_of_summa():
    """Per superstep of the whole-tile SUMMA: the broadcast's busiest link is
    max(k, n-1-k) tiles over as many hops, and the root sends n - 1 messages; the local
    products sit between them."""
    n, S = 4, 256
    t = (S // n) ** 2 * 4
    w = count_mesh_kernel(build_gemm("summa_comm", S, S, S, mesh=n))
    assert [s.comm_op for s in w.steps] == [0, 1] * n + [-1]
    exch = w.steps[:-1]
    assert [s.max_link_bytes // t for s in exch] == [max(k, n - 1 - k) for k in range(n)
                                                   for _ in "AB"]
    assert [s.max_hops for s in exch] == [max(k, n - 1 - k) for k in range(n) for _ in "AB"]
    assert {s.messages for s in exch} == {n - 1}
    ops = [int(s.ops.get("float32", np.zeros(1))[0]) for s in w.steps]
    assert ops == [0, 0] + [2 * 66 * 64 * 64, 0] * (n - 1) + [2 * 66 * 64 * 64]
    assert [int(s.mem_bytes[5]) for s in w.steps] == [2 * t] + [0] * (2 * n - 1) + [t]
    # what the schedule reads: the buffers each phase and each exchange touch
    assert {"Ar", "Br", "Cl", "acc"} <= w.steps[2].reads and "Cl" in w.steps[2].writes
    assert (w.steps[0].exchange_reads, w.steps[0].exchange_writes) == ({"Ao"}, {"Ar"})


def test_exchange_time_is_the_one_noc_formula():
    """A direct exchange costs cost.exchange_time of its transfers: the traffic
    report's Superstep.time is the same formula without message and barrier terms."""
    f = build_gemm("cannon_comm", 128, 128, 128)
    r = estimate_mesh_kernel(f, TOY)
    comm = analyze_mesh_communication(f).supersteps
    for s, c in zip(r.steps, comm):
        assert c.time(TOY.link_bandwidth, TOY.hop_latency) == exchange_time(
            c.max_link_bytes, c.max_hops, link_bandwidth=TOY.link_bandwidth,
            hop_latency=TOY.hop_latency)
        sent = int(np.bincount(s.work.flow_src, weights=s.work.flow_bytes).max())
        assert s.algorithm == "direct" and s.exchange == pytest.approx(exchange_time(
            c.max_link_bytes, c.max_hops, link_bandwidth=TOY.link_bandwidth,
            hop_latency=TOY.hop_latency, messages=s.work.messages,
            message_overhead=TOY.message_overhead, sent_bytes=sent,
            barrier=TOY.barrier_latency), rel=1e-15)


# -- collective algorithms (docs/perf.md, "Collective algorithms") -------------------------------
def test_collective_formulas():
    m = TORUS
    B = 64 * 1024
    beta, alpha, s, o = m.link_bandwidth, m.hop_latency, m.barrier_latency, m.message_overhead
    ex = Exchange("broadcast", (8,), (False,), B, B, 7 * B, 7, 7 * B, 7, 56)
    got = {c.algorithm.split("/")[0]: c.seconds for c in exchange_cost(ex, m)}
    assert got["direct"] == pytest.approx(max(7 * B / beta, 7 * B / m.injection, 7 * o)
                                          + 7 * alpha + s)
    assert got["multicast"] == pytest.approx(max(B / m.multicast_bandwidth,
                                                 m.multicast_overhead) + 7 * alpha + s)
    chain = min((7 + c - 1) * (max(B / (c * min(beta, m.injection)), o) + alpha + s)
                for c in range(1, 65))
    assert got["chain"] == pytest.approx(chain)
    assert got["tree"] == pytest.approx(3 * (max(B / beta, B / m.injection, o) + s) + 7 * alpha)
    P = B // 8
    rs = Exchange("reduce_scatter", (8,), (False,), B, P, 16 * P, 7, 7 * P, 7, 56)
    got = {c.algorithm: c.seconds for c in exchange_cost(rs, m)}
    step = max(P / beta, P / m.injection, o)
    assert got["ring"] == pytest.approx(7 * (step + 2 * alpha + s))  # a folded ring: 2 hops
    halving = sum(max(d * (8 * P >> (r + 1)) / beta, (8 * P >> (r + 1)) / m.injection, o)
                  + d * alpha + s for r, d in enumerate((4, 2, 1)))
    assert got["halving"] == pytest.approx(halving)
    ar = Exchange("all_reduce", (8,), (True,), B, B, 1, 4, 1, 7, 56)
    got = {c.algorithm: c.seconds for c in exchange_cost(ar, m)}
    assert got["ring"] == pytest.approx(14 * (max(P / beta, P / m.injection, o) + alpha + s))
    # no multicast on a machine without it; one algorithm for the ops that have one
    assert "multicast" not in {c.algorithm for c in exchange_cost(ex, TOY)}
    sh = Exchange("shift", (8,), (False,), B, B, B, 7, B, 1, 8)
    assert [c.algorithm for c in exchange_cost(sh, m)] == ["direct"]
    assert [c.seconds for c in exchange_cost(Exchange("barrier", (), (), 0, 0, 0, 0, 0, 0, 0),
                                             m)] == [s]
    assert (ring_hops((4,), (False,)), ring_hops((4,), (True,)), ring_hops((3, 3), (False,) * 2),
            ring_hops((4, 4), (False,) * 2)) == (2, 1, 2, 1)
    with pytest.raises(ValueError, match="no cost function for comm op 'gather'"):
        exchange_cost(Exchange("gather", (2,), (False,), 1, 1, 1, 1, 1, 1, 1), m)


def test_the_cheapest_algorithm_is_chosen_and_the_traffic_keeps_the_direct_bytes():
    """On Wormhole a SUMMA panel broadcast over a whole 8-core row goes by multicast;
    the traffic report still counts the one-shot transfers the kernel asked for."""
    f = build_gemm("summa_comm", 512, 512, 512, mesh=8, tiles=(64, 64, 64))
    r = estimate_mesh_kernel(f, "wormhole-n300")
    ex = [s for s in r.steps if s.work.has_exchange]
    assert {s.algorithm for s in ex} == {"multicast"}
    assert all(s.exchange == min(a.seconds for a in s.alternatives) for s in ex)
    assert all(s.work.exchange_bytes == 8 * 7 * 64 * 64 * 4 for s in ex)  # 8 rows x 7


def test_torus_wraparound_only_where_the_kernel_spans_the_machine():
    w8 = count_mesh_kernel(build_gemm("cannon_comm", 256, 256, 256, mesh=8, tiles=(32, 32, 32)))
    w4 = count_mesh_kernel(build_gemm("cannon_comm", 256, 256, 256, mesh=4, tiles=(64, 64, 64)))
    rot8 = [s for s in estimate_mesh_kernel(w8, TORUS).steps if s.work.op_kind == "shift"]
    assert {s.work.topology(w8.mesh, (True, True))["max_hops"] for s in rot8} == {1}
    rot4 = [s for s in estimate_mesh_kernel(w4, TORUS).steps if s.work.op_kind == "shift"]
    # a 4x4 kernel on the 8x8 torus has no wraparound link: the wrapping tile goes 3 hops
    assert {s.work.topology(w4.mesh, TORUS.wraps((4, 4)))["max_hops"] for s in rot4} == {3}
    assert TORUS.wraps((4, 4)) == (False, False) and TORUS.wraps((8, 8)) == (True, True)


# -- the schedule: serial and overlapped ---------------------------------------------------------
def test_schedule_rules():
    """A phase waits only for the exchanges whose buffers it uses; an exchange for the
    exchanges whose buffers it uses and those on the same mesh axes; exchanges on
    different axes run side by side; a barrier orders everything."""
    fs = frozenset
    A = PlanStep(1.0, 5.0, True, ex_reads=fs({"a"}), ex_writes=fs({"ra"}), axes=fs({1}))
    B = PlanStep(0.0, 5.0, True, ex_reads=fs({"b"}), ex_writes=fs({"rb"}), axes=fs({0}))
    work = PlanStep(4.0, reads=fs({"x"}), writes=fs({"y"}))  # needs neither exchange
    use = PlanStep(4.0, reads=fs({"ra"}), writes=fs({"y"}))  # needs A's result
    serial, over, _, at = time_plan([A, B, work])
    assert serial == 1 + 5 + 0 + 5 + 4 and over == 1 + 5 and at[1] == (1.0, 1.0)
    serial, over, _, _ = time_plan([A, B, use])
    assert over == 1 + 5 + 4
    same_axis = PlanStep(0.0, 5.0, True, ex_reads=fs({"b"}), ex_writes=fs({"rb"}),
                         axes=fs({1}))
    assert time_plan([A, same_axis, work])[1] == 1 + 5 + 5
    barrier = PlanStep(0.0, 0.5, True, ex_reads=fs({"*"}), ex_writes=fs({"*"}))
    assert time_plan([A, barrier, work])[1] == 1 + 5 + 0.5 + 4


def test_overlap_interpolates_between_serial_and_overlapped():
    f = build_gemm("summa_comm", 256, 256, 256, mesh=4, tiles=(64, 64, 16))
    w = count_mesh_kernel(f)
    r0 = estimate_mesh_kernel(w, TOY.replace(overlap=0.0))
    r1 = estimate_mesh_kernel(w, TOY.replace(overlap=1.0))
    r = estimate_mesh_kernel(w, TOY)
    assert r0.total == r0.serial == r1.serial == r.serial and r1.total == r1.overlapped
    assert r1.overlapped < r1.serial  # the pipelined panels hide their broadcasts
    assert r.total == pytest.approx(r.serial - 0.6 * (r.serial - r.overlapped))
    # the serial timeline is the old bulk-synchronous one: a step starts where the last ends
    for a, b in zip(r0.steps, r0.steps[1:]):
        assert b.start == pytest.approx(a.start + a.total)


# -- properties ----------------------------------------------------------------------------
WORKS = {}


def _work(algorithm, S, n):
    key = (algorithm, S, n)
    if key not in WORKS:
        WORKS[key] = count_mesh_kernel(build_gemm(algorithm, S, S, S, mesh=n))
    return WORKS[key]


rates = st.floats(1e6, 1e14, allow_nan=False)
lat = st.floats(0, 1e-5, allow_nan=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alg=st.sampled_from(["summa_comm", "cannon_comm", "ksplit_comm", "summa"]),
       case=st.sampled_from([(128, 4), (100, 2), (96, 3)]),
       flops=rates, mem=rates, link=rates, hop=lat, msg=lat,
       more_link=st.floats(1, 1e3), more_flops=st.floats(1, 1e3))
def test_more_bandwidth_or_flops_never_increases_a_time(alg, case, flops, mem, link, hop,
                                                        msg, more_link, more_flops):
    work = _work(alg, *case)
    base = Machine("m", (4, 4), {"float32": flops}, mem, link, hop, msg, 1 << 20)
    r0 = estimate_mesh_kernel(work, base)
    for faster in (base.replace(link_bandwidth=link * more_link),
                   base.replace(flops_per_s={"float32": flops * more_flops})):
        r1 = estimate_mesh_kernel(work, faster)
        assert r1.total <= r0.total * (1 + 1e-12)
        for a, b in zip(r0.steps, r1.steps):
            assert b.total <= a.total * (1 + 1e-12)
            assert b.compute <= a.compute * (1 + 1e-12) and b.exchange <= a.exchange * (1 + 1e-12)


F2 = mesh_tensor_functions({"row": 2, "col": 4})
MC2 = mesh_comm({"row": 2, "col": 4})


def stores_kernel(M, N, reps):
    """Global-view work without comm ops: element loads, multiply-adds in loops, a copy."""
    annotate, mcopy, init = (F2["annotate_mesh_tensor_info"], F2["mesh_tensor_copy"],
                             F2["init_mesh_tensor_info"])
    tm, tn = -(-M // 2), -(-N // 4)

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        annotate({A: init({"row": 0, "col": 1}, (tm, tn)),
                  B: init({"row": 0, "col": 1}, (tm, tn))})
        with T.Kernel(2, 4, threads=1) as (bx, by):
            S = T.alloc_local((tm, tn), "float32")
            T.clear(S)
            for r in T.serial(reps):
                for i, j in T.grid(tm, tn):
                    if bx * tm + i < M and by * tn + j < N:
                        S[i, j] = S[i, j] * T.float32(0.5) + A[bx * tm + i, by * tn + j]
            mcopy(S, B, dst_coord=(bx, by))

    return k


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alg=st.sampled_from(["local", "summa", "cannon", "stores"]),
       M=st.integers(1, 40), N=st.integers(1, 40), reps=st.integers(1, 3),
       n=st.integers(1, 4))
def test_a_kernel_without_comm_ops_has_zero_exchange_time(alg, M, N, reps, n):
    f = stores_kernel(M, N, reps) if alg == "stores" else build_gemm(alg, M, N, M, mesh=n)
    r = estimate_mesh_kernel(f, TOY)
    assert len(r.steps) == 1 and r.steps[0].exchange == 0 and r.steps[0].link == 0
    assert r.total == r.steps[0].compute > 0
    if alg == "stores":  # exact counts: 2 ops and one 4-byte load per in-range element
        w = r.work
        per_core = np.array([min(-(-M // 2), max(M - x * -(-M // 2), 0)) *
                             min(-(-N // 4), max(N - y * -(-N // 4), 0))
                             for x in range(2) for y in range(4)])
        assert w.ops()["float32"].tolist() == (2 * reps * per_core).tolist()
        assert w.mem_bytes().tolist() == (4 * reps * per_core + 4 * per_core).tolist()


# -- the superstep order equals the lowering's -----------------------------------------------
def lowered_comm_order(func) -> list[int]:
    """The comm ops in the order the lowered kernel runs them: walk its statements,
    running the loops and ifs that hold exchanges (tagged with COMM_OP_ATTR)."""
    low = lower_mesh_comm(func)
    out: list[int] = []

    def holds(stmt) -> bool:
        hit = []
        tirx.stmt_functor.post_order_visit(stmt, lambda n: hit.append(1) if isinstance(
            n, tirx.AttrStmt) and n.attr_key == COMM_OP_ATTR else None)
        return bool(hit)

    def run(stmt, env):
        if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == COMM_OP_ATTR:
            out.append(int(stmt.value))
        elif not holds(stmt):
            return
        elif isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                run(s, env)
        elif isinstance(stmt, tirx.For):
            lo, ext = eval_np(stmt.min, env), eval_np(stmt.extent, env)
            for v in range(lo, lo + ext):
                run(stmt.body, {**env, stmt.loop_var: v})
        elif isinstance(stmt, tirx.IfThenElse):
            if eval_np(stmt.condition, env):
                run(stmt.then_case, env)
            elif stmt.else_case is not None:
                run(stmt.else_case, env)
        else:
            for attr in ("body", "block"):
                child = getattr(stmt, attr, None)
                if isinstance(child, tirx.Stmt):
                    run(child, env)
                    break

    run(low.body, {})
    return out


@pytest.mark.parametrize("algorithm", ["summa_comm", "cannon_comm", "ksplit_comm"])
def test_gemm_superstep_order_is_the_lowerings(algorithm):
    f = build_gemm(algorithm, 64, 64, 64, mesh=4)
    model = [s.comm_op for s in count_mesh_kernel(f).steps if s.comm_op >= 0]
    assert model == lowered_comm_order(f) and len(model) > 0


_TMP = pathlib.Path(tempfile.mkdtemp(prefix="meshtensor_perf_"))
_OPS = {"shift_row": 'MC2.shift(S, R, ["col"], "col", 1, rotate=True)',
        "shift_col": 'MC2.shift(R, S, ["row"], "row", -1, rotate=True)',
        "bcast": 'MC2.broadcast(S, R, ["col"], root=[{root}])',
        "barrier": "MC2.barrier()",
        "work": "S[0] = S[0] * R[0] + T.float32(1.0)",
        "let": "w = S[1] * R[1] + T.float32(1.0)"}

programs = st.recursive(
    st.lists(st.sampled_from(sorted(_OPS)), min_size=1, max_size=3).map(
        lambda ops: [("op", o) for o in ops]),
    lambda inner: st.lists(st.one_of(
        st.tuples(st.just("loop"), st.integers(0, 3), inner),
        st.tuples(st.just("if"), st.sampled_from(["== 0", "> 0", "< 2"]), inner, inner)),
        min_size=1, max_size=3).map(lambda xs: [x for x in xs]),
    max_leaves=6)


def render(prog, depth=2, loops=()):
    lines, pad = [], "    " * depth
    for item in prog:
        if item[0] == "op":
            root = f"{loops[-1]} % 4" if loops else "1"
            lines.append(pad + _OPS[item[1]].format(root=root))
        elif item[0] == "loop":
            v = f"v{len(loops)}"
            lines.append(f"{pad}for {v} in T.serial({item[1]}):")
            lines += render(item[2], depth + 1, loops + (v,)) or [pad + "    T.evaluate(0)"]
        else:
            v = loops[-1] if loops else "0"
            lines.append(f"{pad}if {v} {item[1]}:")
            lines += render(item[2], depth + 1, loops) or [pad + "    T.evaluate(0)"]
            lines.append(f"{pad}else:")
            lines += render(item[3], depth + 1, loops) or [pad + "    T.evaluate(0)"]
    return lines


def build_program(prog):
    src = "\n".join([
        "import tilelang.language as T",
        "from meshtensor.tilelang import mesh_comm",
        'MC2 = mesh_comm({"row": 2, "col": 4})',
        "@T.prim_func",
        "def k():",
        "    with T.Kernel(2, 4, threads=1) as (bx, by):",
        '        S = T.alloc_local((4,), "float32")',
        '        R = T.alloc_local((4,), "float32")',
        *render(prog)])
    path = _TMP / f"prog_{abs(hash(src))}.py"
    path.write_text(src + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_superstep_order_equals_the_lowerings_on_random_programs(prog):
    f = build_program(prog)
    w = count_mesh_kernel(f, mesh={"row": 2, "col": 4})  # a program may have no comm op
    model = [s.comm_op for s in w.steps if s.comm_op >= 0]
    assert model == lowered_comm_order(f)
    # the work statement lands between the right exchanges: count it per superstep
    total = sum(int(s.ops.get("float32", np.zeros(8)).sum()) for s in w.steps)
    assert total % (2 * 8) == 0  # 2 ops on each of 8 cores per execution (work or let)


def test_work_is_placed_between_the_exchanges_it_runs_between():
    prog = [("op", "work"), ("loop", 3, [("op", "shift_row"), ("op", "work"), ("op", "work")]),
            ("op", "barrier")]
    w = count_mesh_kernel(build_program(prog))
    ops = [int(s.ops["float32"][0]) for s in w.steps]
    assert [s.comm_op for s in w.steps] == [0, 0, 0, 1]  # no tail: nothing after barrier
    assert ops == [2, 4, 4, 4]


def test_a_binding_is_placed_where_it_runs():
    """A binding is counted at its own place in its statement list: before the
    exchange that follows it in the same loop iteration."""
    prog = [("loop", 3, [("op", "let"), ("op", "shift_row"), ("op", "work")])]
    w = count_mesh_kernel(build_program(prog))
    assert [int(s.ops["float32"][0]) for s in w.steps] == [2, 4, 4, 2]


def test_each_phase_of_a_two_phase_op_counts_its_own_messages():
    """A Tilelang-Mesh all-gather over both axes is two supersteps on the chip (down the
    columns, then along the rows): in each, every core sends one message."""
    from meshtensor.tilelang import tilelang_mesh as tm
    tm.enable(mesh=(2, 2))

    @T.prim_func
    def gather_all():
        with T.Kernel(4) as cid:
            S = T.alloc_shared((4,), "float32")
            D = T.alloc_shared((4, 4), "float32")
            T.comm.all_gather(S, D, direction="all")

    r = estimate_mesh_kernel(gather_all, TOY)
    assert [s.work.flows for s in r.steps] == [4, 8]  # the second forwards two pieces
    assert [s.work.sends.tolist() for s in r.steps] == [[1, 1, 1, 1]] * 2
    # one message each: the hop, the barrier; the 16-byte pieces stream in no time
    assert [s.latency for s in r.steps] == pytest.approx([TOY.hop_latency
                                                         + TOY.barrier_latency] * 2)
    assert [s.link for s in r.steps] == pytest.approx([TOY.message_overhead] * 2)


# -- trace ---------------------------------------------------------------------------------
@pytest.mark.parametrize("machine", [TOY, "wormhole-n300", "epiphany-e64g401",
                                     TOY.replace(name="serial", overlap=0.0)],
                         ids=["toy", "wormhole", "epiphany", "serial"])
@pytest.mark.parametrize("algorithm,n,tiles", [("cannon_comm", 4, None),
                                               ("summa_comm", 2, None),
                                               ("summa_comm", 2, (24, 16, 8)),
                                               ("ksplit_comm", 3, None), ("local", 2, None)])
def test_trace_is_valid_and_adds_up_to_the_model(tmp_path, algorithm, n, tiles, machine):
    shape = (96, 80, 72) if tiles is None else (96, 64, 64)
    r = estimate_mesh_kernel(build_gemm(algorithm, *shape, mesh=n, tiles=tiles), machine)
    doc = json.loads(write_trace(r, tmp_path / "t.json").read_text())
    events = doc["traceEvents"]
    for e in events:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(e), e
        assert e["ph"] in ("X", "M", "i") and e["dur"] >= 0 and e["ts"] >= 0
    slices = [e for e in events if e["ph"] == "X"]
    tracks = {}
    for e in slices:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    assert set(tracks) >= {(CORES_PID, c) for c in range(n * n)}
    for evs in tracks.values():
        evs.sort(key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            assert b["ts"] >= a["ts"] + a["dur"], (a, b)  # no overlap, not by one ulp
    pc = r.per_core()
    for c in range(n * n):
        evs = tracks[(CORES_PID, c)]
        dur = {k: sum(e["dur"] for e in evs if e["name"] == k) / 1e6
               for k in ("compute", "memory", "wait")}
        assert dur["compute"] + dur["memory"] == pytest.approx(pc["busy"][c], rel=1e-9)
        assert sum(dur.values()) == pytest.approx(r.timeline_end, rel=1e-9)
        arith = sum(e["args"]["arith_us"] for e in evs if "arith_us" in e["args"]) / 1e6
        assert arith == pytest.approx(pc["arith"][c], rel=1e-9, abs=1e-18)
    net = [e for e in slices if e["pid"] == NETWORK_PID]
    assert len(net) == sum(1 for s in r.steps if s.work.has_exchange and s.exchange > 0)
    assert sum(e["dur"] for e in net) / 1e6 == pytest.approx(
        sum(s.exchange for s in r.steps), rel=1e-9)
    # one network track per comm op: A's and B's exchanges apart
    assert {e["tid"] for e in net} == {s.work.comm_op for s in r.steps if s.exchange > 0}
    marks = [e for e in events if e["ph"] == "i" and e["name"].startswith("superstep")]
    assert len(marks) == len(r.steps)
    assert doc["otherData"]["serial_us"] == pytest.approx(r.serial * 1e6)
    if r.machine.overlap == 0:  # the serial timeline ends at the serial time
        assert r.timeline_end == pytest.approx(r.serial)
    else:
        assert r.timeline_end == pytest.approx(r.overlapped)


def test_trace_flags_a_memory_overflow(tmp_path):
    r = estimate_mesh_kernel(build_gemm("summa_comm", 256, 256, 256), "epiphany-e16g301")
    assert not r.fits_local_memory
    events = trace_events(r)
    assert any(e["name"].startswith("DOES NOT FIT: local") for e in events if e["ph"] == "i")


def test_gantt_png(tmp_path):
    pytest.importorskip("matplotlib")
    from meshtensor.tilelang import save_gantt_png
    r = estimate_mesh_kernel(build_gemm("summa_comm", 64, 64, 64, mesh=2), "generic")
    p = save_gantt_png(r, tmp_path / "g.png")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- local memory, counts of T.gemm and direct accesses -------------------------------------
@T.prim_func
def gemm_tile(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
              C: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        As = T.alloc_shared((32, 64), "float16")
        Bs = T.alloc_shared((64, 32), "float16", scope="shared")
        Cl = T.alloc_local((32, 32), "float32")
        T.clear(Cl)
        T.copy(A[bx * 32:bx * 32 + 32, 0:64], As)
        T.copy(B[0:64, by * 32:by * 32 + 32], Bs)
        T.gemm(As, Bs, Cl)
        for i, j in T.grid(32, 32):
            C[bx * 32 + i, by * 32 + j] = Cl[i, j] * T.float32(2.0)


def test_gemm_and_stores_are_counted():
    w = count_mesh_kernel(gemm_tile, mesh={"row": 2, "col": 2})
    ops = w.ops()
    assert ops["float16"].tolist() == [2 * 32 * 32 * 64] * 4  # T.gemm: 2 M N K
    assert ops["float32"].tolist() == [32 * 32] * 4  # the scaling multiply
    assert w.mem_bytes().tolist() == [2 * 32 * 64 * 2 + 32 * 32 * 4] * 4
    assert w.local_bytes == 3 * 4096
    r = estimate_mesh_kernel(w, "wormhole-n300")  # float16 and float32 (TF32) at 4 phases
    assert r.steps[0].arith[0] == pytest.approx(131072 / 1.024e12 + 1024 / 1.024e12)


# What counts as an operation (docs/perf.md): one small kernel per rule, 2 x 2 cores,
# each core running its loop over a row of 8 elements of a global (8, 8) tensor A.
@T.prim_func
def ops_guarded(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(8):  # the guard's i + 1 < 8 and the index bx * 2 + by: free
            S[i] = T.if_then_else(i + 1 < 8, A[bx * 2 + by, i] * T.float32(2.0),
                                  T.float32(0.0))


@T.prim_func
def ops_let(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(8):
            x = A[bx * 2 + by, i] * T.float32(3.0)  # a binding: 1 op and a 4-byte load
            S[i] = x + x * x  # 2 ops
        for i in T.serial(8):
            r = bx * 8 + i  # index arithmetic bound to a name: free
            S[i] = T.Cast("float32", r) * T.float32(0.5)  # 1 op


@T.prim_func
def ops_constants(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(8):
            S[i] = -T.infinity("float32")  # a constant: free
        for i in T.serial(8):
            S[i] = T.max(S[i], T.exp(A[bx * 2 + by, i]))  # 2 ops, a 4-byte load


@T.prim_func
def ops_stepped(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(1, 8, 2):  # i = 1, 3, 5, 7 (a binding i = 1 + 2 * _)
            S[i] = S[i] * T.float32(2.0) + A[bx * 2 + by, i]  # 2 ops, a 4-byte load
        for i in T.unroll(2, 6):
            if i % 2 == 0:  # i = 2, 4
                S[i] = T.fma(S[i], S[i], S[i])  # 2 ops


@T.prim_func
def ops_address(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(8):
            p = T.address_of(A[bx * 2 + by, i])  # a pointer: no operation, no load
            S[i] = A[bx * 2 + by, i] + T.float32(1.0)  # 1 op, a 4-byte load


@pytest.mark.parametrize("kernel,ops,mem", [
    pytest.param(ops_guarded, {"float32": 8}, 8 * 4, id="guard-and-indices-free"),
    pytest.param(ops_let, {"float32": 8 * 3 + 8}, 8 * 4, id="bindings-counted"),
    pytest.param(ops_constants, {"float32": 8 * 2}, 8 * 4, id="constants-free"),
    pytest.param(ops_stepped, {"float32": 4 * 2 + 2 * 2}, 4 * 4, id="steps-and-ifs"),
    pytest.param(ops_address, {"float32": 8}, 8 * 4, id="addresses-free"),
])
def test_what_counts_as_an_operation(kernel, ops, mem):
    w = count_mesh_kernel(kernel, mesh={"row": 2, "col": 2})
    assert {d: v.tolist() for d, v in w.ops().items()} == {d: [n] * 4 for d, n in ops.items()}
    assert w.mem_bytes().tolist() == [mem] * 4
    # every preset has the float32 rate: the estimate works on all of them
    for m in PRESETS.values():
        assert estimate_mesh_kernel(w, m).total > 0


@pytest.mark.parametrize("machine,size,fits", [("epiphany-e16g301", 64, True),
                                               ("epiphany-e16g301", 256, False),
                                               ("wormhole-n300", 256, True)])
def test_local_memory_fit_is_reported(machine, size, fits):
    r = estimate_mesh_kernel(build_gemm("summa_comm", size, size, size), machine)
    assert r.fits_local_memory is fits
    assert ("(fits)" if fits else "(DOES NOT FIT)") in r.summary()


@T.prim_func
def rsram_heavy(A: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        Sa = T.alloc_shared((256, 256), "float32", scope="shared.rsram")  # 256 KiB
        Sb = T.alloc_shared((256, 256), "float32", scope="shared.rsram")
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32], Sa[0:32, 0:32])
        T.copy(Sa[0:32, 0:32], Sb[0:32, 0:32])


def test_each_memory_of_the_machine_is_checked():
    """SUNMMIO's RSRAM holds 1536000 bytes: 512 KiB fits it; a machine with a smaller
    RSRAM flags that memory alone."""
    sun = PRESETS["sunmmio-a4e"]
    r = estimate_mesh_kernel(rsram_heavy, sun, mesh={"x": 2, "y": 2})
    assert [(u.name, u.used, u.fits) for u in r.memory()] == [
        ("local", 524288, True), ("shared.rsram", 524288, True)]
    small = sun.replace(memories={**sun.memories, "shared.rsram": 300000})
    r = estimate_mesh_kernel(rsram_heavy, small, mesh={"x": 2, "y": 2})
    assert not r.fits_local_memory and [u.name for u in r.memory() if not u.fits] == \
        ["shared.rsram"]
    assert "shared.rsram per core: 512.00 KiB of 292.97 KiB (DOES NOT FIT)" in r.summary()


# -- bad input -----------------------------------------------------------------------------
@T.prim_func
def data_dependent(A: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((32, 32), "float32")
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32], S)
        for i in T.serial(T.cast(S[0, 0], "int32")):
            S[0, 1] = S[0, 1] + T.float32(1.0)
        T.copy(S, A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32])


@T.prim_func
def data_dependent_while(A: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((32, 32), "float32")
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32], S)
        while S[0, 0] < T.float32(10.0):
            S[0, 0] = S[0, 0] + T.float32(1.0)


@pytest.mark.parametrize("kernel,message", [
    pytest.param(data_dependent, r"estimate_mesh_kernel: cannot count the store "
                 r"`S\[0, 1\] = \.\.\.`: loop i runs over .*data-dependent loop bounds",
                 id="loop-bound-read-from-memory"),
    pytest.param(data_dependent_while, r"cannot count the store `S\[0, 0\] = \.\.\.`: it "
                 r"sits in `while .*data-dependent number of times", id="while-loop"),
])
def test_a_kernel_the_model_cannot_count(kernel, message):
    with pytest.raises(ValueError, match=message):
        estimate_mesh_kernel(kernel, "generic", mesh={"x": 2, "y": 2})


@pytest.mark.parametrize("call,message", [
    pytest.param(lambda: estimate_mesh_kernel(build_gemm("summa_comm", 64, 64, 64),
                                              "tpu"), "unknown machine 'tpu'; known",
                 id="unknown-machine"),
    pytest.param(lambda: estimate_mesh_kernel(build_gemm("summa_comm", 64, 64, 64, mesh=8),
                                              "epiphany-e16g301"),
                 "the kernel's 8x8 mesh does not fit machine 'epiphany-e16g301' .4x4 cores.",
                 id="mesh-too-big"),
    pytest.param(lambda: estimate_mesh_kernel(gemm_tile, "epiphany-e16g301",
                                              mesh={"x": 2, "y": 2}),
                 "machine 'epiphany-e16g301' has no FLOP/s for float16", id="no-rate"),
    pytest.param(lambda: count_mesh_kernel(gemm_tile), "neither mesh annotations nor comm "
                 "ops; pass mesh=", id="no-mesh"),
    pytest.param(lambda: count_mesh_kernel(build_gemm("summa_comm", 64, 64, 64),
                                           mesh={"x": 2, "y": 8}),
                 r"mesh=\{'x': 2, 'y': 8\} differs from the kernel's mesh", id="other-mesh"),
])
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- choice --------------------------------------------------------------------------------
def test_compare_names_the_fastest_that_fits_with_its_margin():
    c = compare_gemm_algorithms(256, mesh=4, machine=TOY)
    times = {x.algorithm: x.total for x in c.ranked}
    assert c.fastest == min(times, key=times.get) and c.best.fits
    ranked = sorted(times.values())
    assert c.margin == pytest.approx(ranked[1] / ranked[0] - 1)
    for x in c.ranked:  # the search's estimate is the performance model's on the kernel
        assert x.total == pytest.approx(x.report.total, rel=1e-12)
        assert x.report.fits_local_memory
    table = c.table()
    assert all(len(line) <= 80 for line in table.splitlines())
    assert f"{100 * c.margin:.1f}% (" in table and "why: its compute phases" in table


@pytest.mark.parametrize("shape,fastest", [((512, 512, 8192), "splitk_comm"),
                                           ((4096, 4096, 512), "summa_comm")])
def test_wormhole_4x4_rankings(shape, fastest):
    """Wormhole 4x4, bfloat16: a long K favours the P-way split-K (little to exchange:
    C's partial sums, once); a short K with a large C favours SUMMA, whose panel
    broadcasts go by multicast and hide behind the products."""
    c = compare_gemm_algorithms(*shape, mesh=4, machine="wormhole-n300", dtype="bfloat16")
    assert c.fastest == fastest and c.best.fits
    if fastest == "summa_comm":
        assert "multicast" in c.best.report.algorithms()
    assert all(x.fits for x in c.ranked)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.sampled_from([256, 512, 1024, 2048]),
       k=st.sampled_from([256, 1024, 8192]), n=st.sampled_from([2, 4, 8]),
       machine=st.sampled_from(["generic", "wormhole-n300", "epiphany-e64g401",
                                "sunmmio-a4e"]))
def test_nothing_that_does_not_fit_is_ever_ranked(size, k, n, machine):
    m = PRESETS[machine]
    if not m.fits((n, n)):
        return
    c = compare_gemm_algorithms(size, size, k, mesh=n, machine=m,
                                dtype="float32" if "float32" in m.flops_per_s else "bfloat16")
    for x in c.ranked:
        assert x.local_bytes <= m.local_memory_bytes and x.fits
    for x in c.too_big:
        assert x.local_bytes > m.local_memory_bytes
    if not c.ranked:
        assert "none fits" in c.table() and c.fastest is None


def test_compare_when_nothing_fits():
    c = compare_gemm_algorithms(64, 64, 1 << 20, mesh=2, machine="epiphany-e16g301",
                                algorithms=["cannon_comm", "ksplit_comm"])
    assert c.fastest is None and c.ranked == ()
    assert "none fits: every algorithm's per-core buffers exceed the 32.00 KiB" in c.table()


# -- the profile command -------------------------------------------------------------------# -- the profile command -------------------------------------------------------------------
USER_KERNEL = '''
import tilelang.language as T
from meshtensor.tilelang import mesh_comm
mc = mesh_comm({"row": 2, "col": 4})

@T.prim_func
def ring(A: T.Tensor((8, 32), "float32")):
    with T.Kernel(2, 4, threads=1) as (bx, by):
        S = T.alloc_local((4, 8), "float32")
        R = T.alloc_local((4, 8), "float32")
        T.copy(A[bx * 4:bx * 4 + 4, by * 8:by * 8 + 8], S)
        for s in T.serial(3):
            mc.shift(S, R, ["col"], "col", 1, rotate=True)
            for i, j in T.grid(4, 8):
                S[i, j] = R[i, j] * T.float32(2.0)
        T.copy(S, A[bx * 4:bx * 4 + 4, by * 8:by * 8 + 8])

def make():
    return ring

def build(n, dtype="float32"):
    return ring
'''


@pytest.mark.parametrize("argv", [
    pytest.param(["--algorithm", "cannon_comm", "--size", "1024", "--mesh", "4x4"], id="gemm"),
    pytest.param(["--algorithm", "ksplit_comm", "--size", "512x256x128", "--mesh", "8",
                  "--machine", "wormhole-n300", "--dtype", "bfloat16"], id="wormhole-bf16"),
    pytest.param(["--compare", "--size", "2048", "--mesh", "8x8", "--machine",
                  "wormhole-n300"], id="compare"),
    pytest.param(["--list-machines"], id="machines"),
    pytest.param(["--algorithm", "summa_comm", "--mesh", "16x16", "--size", "4096",
                  "--tiles", "256x256x128", "--steps", "0"], id="16x16-all-steps"),
    pytest.param([], id="default"),
    pytest.param(["--algorithm", "splitk_comm", "--size", "512x512x8192", "--machine",
                  "wormhole-n300", "--dtype", "bfloat16"], id="splitk"),
    pytest.param(["--algorithm", "cannon25d_comm", "--size", "512", "--copies", "4"],
                 id="2.5d"),
])
def test_profile_output_fits_80_columns(argv, capsys):
    assert main(["profile", *argv]) == 0
    out = capsys.readouterr().out
    assert out and all(len(line) <= 80 for line in out.splitlines()), out
    assert all(line == line.rstrip() for line in out.splitlines()), out


def test_list_machines_prints_each_preset_number_unrounded(capsys):
    assert main(["profile", "--list-machines"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("epiphany-e64g401"))
    assert line.split() == ["epiphany-e64g401", "8x8", "1.6", "6.40", "6.4", "1.875", "12.5",
                            "18.125", "32"]


def test_the_default_profile_and_the_help_example_fit_their_machine(capsys):
    """`meshtensor profile` (summa_comm 1024^3 on 4x4, generic) takes the fastest tiles
    that fit; the --help example of --compare names a fastest that fits."""
    assert main(["profile"]) == 0
    out = capsys.readouterr().out
    assert "local memory per core:" in out and "(fits)" in out and "DOES NOT FIT" not in out
    assert ", tiles " in out.splitlines()[0]
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    example = next(line.split("meshtensor ")[1].split() for line in
                   capsys.readouterr().out.splitlines() if "profile --compare" in line)
    assert main(example) == 0
    table = capsys.readouterr().out
    fastest = next(line for line in table.splitlines() if line.startswith("fastest:"))
    name = fastest.split()[1]
    row = next(line for line in table.splitlines() if line.startswith(name))
    assert "too big" not in row


def test_profile_tiles_and_their_refusals(capsys):
    assert main(["profile", "--algorithm", "cannon_comm", "--size", "256", "--tiles",
                 "32x32x64", "--steps", "2"]) == 0
    assert "cannon_comm GEMM 256x256x256 float32 on a 4x4 mesh, tiles 32x32x64" in \
        capsys.readouterr().out
    assert main(["profile", "--algorithm", "ksplit_comm", "--tiles", "8x8x8"]) == 2
    assert "--tiles: ksplit_comm takes no tiles" in read(capsys)[1]
    assert main(["profile", "--algorithm", "summa_comm", "--size", "102", "--tiles",
                 "6x6x6"]) == 2
    assert "summa_comm with tiles: M = 102, N = 102, K = 102 must be multiples of the mesh" \
        in read(capsys)[1]
    with pytest.raises(SystemExit) as e:
        main(["profile", "--tiles", "8x8"])
    assert e.value.code == 2
    assert "argument --tiles: expected positive BMxBNxBK like 128x128x32, got '8x8'" in \
        read(capsys)[1]
    assert main(["profile", "--algorithm", "splitk_comm", "--size", "100"]) == 2
    assert "splitk_comm does not apply to 100x100x100" in read(capsys)[1]


def test_profile_user_kernel_trace_and_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    src = tmp_path / "user_kernels.py"
    src.write_text(USER_KERNEL)
    for name in ("ring", "make"):
        assert main(["profile", f"{src}:{name}", "--machine", "epiphany-e16g301",
                     "--trace", str(tmp_path / "out" / "t.json"),
                     "--png", str(tmp_path / "out" / "g.png")]) == 0
        out = capsys.readouterr().out
        assert "user_kernels.py:" in out and "on a 2x4 mesh" in out
        assert "comm0 shift S #2" in out
        # the summary fits 80 columns (the "saved PATH" lines hold the user's paths)
        assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith("saved"))
    doc = json.loads((tmp_path / "out" / "t.json").read_text())
    assert doc["traceEvents"] and (tmp_path / "out" / "g.png").stat().st_size > 0


def test_profile_lists_supersteps_up_to_steps(capsys):
    assert main(["profile", "--algorithm", "summa_comm", "--size", "256", "--tiles",
                 "64x64x64", "--steps", "3"]) == 0
    out = capsys.readouterr().out  # 4 panels: the loads, then 8 exchanges
    assert "... 6 more supersteps (show all with max_steps=None, or --steps 0)" in out


@pytest.mark.parametrize("argv,message", [
    pytest.param(["--machine", "tpu"], "unknown machine 'tpu'", id="unknown-machine"),
    pytest.param(["--mesh", "2x4"], "--mesh: the built-in GEMMs run on a square n x n mesh",
                 id="not-square"),
    pytest.param(["--trace", "t.txt"], "--trace: expected a file name ending in .json",
                 id="trace-suffix"),
    pytest.param(["nowhere.py:k"], "kernel: 'nowhere.py' is not a Python file",
                 id="no-file"),
    pytest.param(["k.py"], "kernel: expected FILE.py:FUNCTION, got 'k.py'", id="no-function"),
    pytest.param(["--compare", "--png", "x.png"], "--trace and --png draw one kernel",
                 id="compare-png"),
    pytest.param(["--compare", "--algorithm", "cannon_comm"], "--compare searches every "
                 "distributed-memory GEMM and its tiles; drop --algorithm",
                 id="compare-algorithm"),
])
def test_profile_errors_exit_2_before_printing(argv, message, capsys):
    assert main(["profile", *argv]) == 2
    out, err = read(capsys)
    assert out == "" and message in err and err.count("\n") == 1


def test_profile_user_kernel_errors(tmp_path, capsys):
    src = tmp_path / "user_kernels.py"
    src.write_text(USER_KERNEL)
    assert main(["profile", f"{src}:rign"]) == 2
    assert "defines no 'rign' (it defines build, make, ring)" in read(capsys)[1]
    assert main(["profile", f"{src}:build"]) == 2
    assert f"kernel: build() in {src} needs arguments (n); name a kernel, or a function " \
        "of no arguments that returns one" in read(capsys)[1]
    assert main(["profile", f"{src}:ring", "--algorithm", "summa_comm"]) == 2
    assert "a user kernel (FILE.py:FUNCTION) brings its own shape" in read(capsys)[1]
    # a flag for the built-in GEMMs is not dropped silently
    assert main(["profile", f"{src}:ring", "--dtype", "bfloat16"]) == 2
    assert "--dtype is for the built-in GEMMs" in read(capsys)[1]


NO_MESH_KERNEL = '''
import tilelang.language as T

@T.prim_func
def scale(A: T.Tensor((8, 8), "float32")):
    with T.Kernel(2, 2, threads=1) as (bx, by):
        S = T.alloc_local((4, 4), "float32")
        T.copy(A[bx * 4:bx * 4 + 4, by * 4:by * 4 + 4], S)
        for i, j in T.grid(4, 4):
            S[i, j] = S[i, j] * T.float32(2.0)
        T.copy(S, A[bx * 4:bx * 4 + 4, by * 4:by * 4 + 4])
'''


def test_profile_kernel_without_a_mesh_asks_for_mesh(tmp_path, capsys):
    src = tmp_path / "plain.py"
    src.write_text(NO_MESH_KERNEL)
    assert main(["profile", f"{src}:scale"]) == 2
    out, err = read(capsys)
    assert out == "" and err.count("\n") == 1
    assert "names no mesh (no mesh annotations or comm ops); give --mesh, e.g. --mesh 2x2" \
        in err
    assert main(["profile", f"{src}:scale", "--mesh", "2x2", "--machine",
                 "epiphany-e16g301"]) == 0
    out = capsys.readouterr().out
    # 64 B in and 64 out at 8 GB/s over the 4 cores (2 GB/s each); 16 multiplies at
    # 2 GFLOP/s; one superstep (not "1 supersteps")
    assert "estimated time 64.000 ns over 1 superstep\n" in out
    assert "busiest core: 16 FLOP, 128 B to/from global memory" in out
    assert main(["profile", f"{src}:scale", "--mesh", "4x4"]) == 2
    err = read(capsys)[1]
    assert err.count("estimate_mesh_kernel:") == 1 and "launch grid (2, 2)" in err


def test_profile_bad_steps_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["profile", "--steps", "-1"])
    assert e.value.code == 2
    assert "argument --steps: must be >= 0, got -1" in read(capsys)[1]


def test_every_bound_shows_up_somewhere():
    """Across machines and sizes the model names each bound (it is not stuck on one)."""
    seen = set()
    for (alg, S, n), m in itertools.product(
            [("summa_comm", 64, 4), ("cannon_comm", 512, 2), ("ksplit_comm", 256, 4)],
            ["generic", "wormhole-n300", "epiphany-e16g301"]):
        r = estimate_mesh_kernel(_work(alg, S, n), m)
        seen |= {s.bound for s in r.steps}
        assert r.steps[-1].work.exchange == "" or r.steps[-1].work.comm_op >= 0
    assert {"compute", "memory", "link", "latency"} <= seen


def test_mesh_axes_with_user_names():
    src_mesh = Mesh({"row": 2, "col": 4})
    w = count_mesh_kernel(stores_kernel(8, 16, 1))
    assert w.mesh == src_mesh and len(w.steps) == 1


def test_docs_table_is_the_scripts():
    """docs/perf.md's tables are generated by benchmarks/perf_table.py (their 256 rows
    are recomputed here; the rest costs a minute)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("perf_table",
                                                  root / "benchmarks" / "perf_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = (root / "docs" / "perf.md").read_text()
    block = doc.split("<!-- perf-table:generic-float32:begin -->")[1].split("<!--")[0]
    rows = [r for r in block.strip().splitlines() if r.startswith("| 256 |")]
    assert rows == mod.table_rows("generic", sizes=[256])
    assert len(block.strip().splitlines()) == 2 + len(mod.SIZES) * len(mod.MESHES)
    # the Wormhole table (--sizes 256,1024,4096 --meshes 2,4,8): its 256 rows too
    block = doc.split("<!-- perf-table:wormhole-n300-bfloat16:begin -->")[1].split("<!--")[0]
    rows = [r for r in block.strip().splitlines() if r.startswith("| 256 |")]
    assert rows == mod.table_rows("wormhole-n300", sizes=[256], meshes=[2, 4, 8],
                                  dtype="bfloat16")
    assert len(block.strip().splitlines()) == 2 + 3 * 3


@pytest.mark.parametrize("script", ["perf_table.py", "bench_comm_traffic.py"])
def test_benchmarks_run_quick(script, monkeypatch, capsys):
    """The benchmarks of the performance model and the traffic report run (--quick)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(script[:-3], root / "benchmarks" / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr("sys.argv", [script, "--quick"])
    mod.main()
    out = capsys.readouterr().out
    assert "splitk_comm" in out or "split-K" in out


def test_the_command_modules_do_not_import_the_cli():
    """cli imports profile_cli and calibrate_cli to register their commands; neither
    imports cli, not even inside a function: no import circle."""
    root = pathlib.Path(__file__).resolve().parents[2] / "src" / "meshtensor"
    for name in ("profile_cli.py", "calibrate_cli.py", "cli_args.py", "gemms.py",
                 "measurements.py"):
        tree = ast.parse((root / name).read_text())
        imported = {(n.level, n.module) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {(0, a.name) for n in ast.walk(tree) if isinstance(n, ast.Import)
                     for a in n.names}
        assert (1, "cli") not in imported and (0, "meshtensor.cli") not in imported, name


def test_published_measurements_table_is_the_models():
    """docs/perf.md's comparison with Tenstorrent's measurements: the model column is
    recomputed (the NoC rows and the 2048 / 3072 GEMMs; the larger GEMMs cost seconds),
    every ratio is model / measured, and a row that says "within 25%" is."""
    root = pathlib.Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "perf.md").read_text()
    table = doc.split("## Published measurements against the model")[1].split("\n\n## ")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| measurement")]
    assert len(rows) >= 3
    wh = PRESETS["wormhole-n300"]
    hifi4 = wh.replace(name="hifi4", flops_per_s={**wh.flops_per_s, "bfloat16": 1.024e12})

    def unicast(size):  # one core writes `size` bytes to each of 24 cores, then a barrier
        return exchange_time(24 * size, 8, link_bandwidth=wh.link_bandwidth,
                             hop_latency=wh.hop_latency, messages=24,
                             message_overhead=wh.message_overhead, sent_bytes=24 * size,
                             injection_bandwidth=wh.injection, barrier=wh.barrier_latency)

    def gemm(m, size):
        return compare_gemm_algorithms(size, mesh=8, machine=m, dtype="bfloat16").best.total

    recompute = {"64 KiB to each of 24": lambda: unicast(65536) * 1e9,
                 "the same, 2 KiB": lambda: unicast(2048) * 1e9,
                 "the same, 32 B": lambda: unicast(32) * 1e9,
                 "2048^3 bfloat16, HiFi4": lambda: gemm(hifi4, 2048) * 1e6,
                 "3072^3 bfloat16, HiFi4": lambda: gemm(hifi4, 3072) * 1e6,
                 "2048^3 bfloat16, HiFi2": lambda: gemm(wh, 2048) * 1e6}
    seen = 0
    for what, measured, model, ratio, gap in rows:
        meas = float(measured.split()[0].replace(",", ""))
        mod = float(model.split()[0].replace(",", ""))
        assert float(ratio) == pytest.approx(mod / meas, abs=6e-4), what
        if gap.startswith("within 25%"):
            assert abs(mod / meas - 1) <= 0.25, what
        for key, fn in recompute.items():
            if key in what:
                assert fn() == pytest.approx(mod, rel=5e-4, abs=0.6), what
                seen += 1
    assert seen == len(recompute)


TDIST_RING = '''
import tilelang
import tilelang.language as T
from meshtensor.tilelang import tilelang_mesh as tm

L, W = 8, 4
tm.enable(mesh=(2, 2))
with tm.world(W):
    @T.prim_func
    def ring(A: T.Tensor((4, L), "float32"), B: T.Tensor((4, L), "float32"),
             rank_id: T.dist.RankId):
        with T.Kernel(4, threads=1) as bx:
            mine = T.alloc_shared((L,), "float32")
            recv = T.alloc_shared((W - 1, L), "float32")
            s = T.dist.signal()
            T.copy(A[bx, 0:L], mine)
            nxt = (rank_id + 1) % T.dist.world_size()
            for step in T.serial(W - 1):
                if step == 0:
                    T.dist.put(mine, recv[0, 0:L], nxt, signal=s, submit=True)
                else:
                    T.dist.put(recv[step - 1, 0:L], recv[step, 0:L], nxt, signal=s,
                               submit=True)
                T.dist.wait_signal(s)
            T.dist.wait()
            T.copy(recv[W - 2, 0:L], B[bx, 0:L])
'''


@pytest.mark.slow
def test_profile_of_a_tdist_kernel_times_its_chip_links(tmp_path, capsys):
    """A newcomer's report: one rank's estimate listed the puts as on-chip permutes of
    0 ns and a barrier the kernel does not hold (94% of it: LowerDist's ordering pins),
    and named the rank runtime's calls as 'not counted'. Now the rank's own work, the
    chip links (3 puts of 32 B per link: 3 x (32 B / 25 GB/s + 1 us)) and their sum."""
    src = tmp_path / "tdist_ring.py"
    src.write_text(TDIST_RING)
    assert main(["profile", f"{src}:ring"]) == 0
    out = capsys.readouterr().out
    assert "one rank of 4 (2x2 mesh each)" in out
    assert "barrier" not in out and "permute" not in out and "not counted" not in out
    assert "rank 3 -> 0 core (1, 1)              96         3" in out
    chip = 3 * (32 / 25e9 + 1e-6)
    assert f"busiest chip link {chip * 1e6:.3f} us" in out
    assert "estimated time 3.0" in out.split("busiest chip link")[1]
    assert max(len(line) for line in out.splitlines()) <= 80
