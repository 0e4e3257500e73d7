"""meshtensor.dist on gloo, one process per device, against the NumPy simulator, and
the engine's promises: a sub-group collective gives up after its timeout; ``run`` has no
whole-job limit unless given a ``deadline``; ``dist_reshard`` skips shape exchanges; no
deprecated torch API (the jobs run with warnings as errors); no accumulation dtype that
wraps."""
import collections
import multiprocessing
import os
import re
import time
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meshtensor import Mesh, MeshArray, Sharding, distribute, plan_reshard, reshard  # noqa: E402
from meshtensor import collectives as C  # noqa: E402
from meshtensor.dist import DistRunError, launch, run, runs_point_to_point  # noqa: E402

import workers as W  # noqa: E402


def sim_collectives(m):
    """The same inputs and ops as workers.collectives, on the simulator."""
    out = {}
    x = W.global_tensor((m.shape[0] * 3 + 1, 5), seed=1)
    a = distribute(x, Sharding(m, [[0]]))
    out["all_gather"] = C.all_gather(a, [0], 0)
    out["all_gather_yx"] = C.all_gather(distribute(x, Sharding(m, [[1, 0]])), [1, 0], 0)
    out["all_slice"] = C.all_slice(a, [1], 1)
    out["all_to_all"] = C.all_to_all(a, [0], 1, 0)
    out["all_to_all_yx"] = C.all_to_all(a, [1, 0], 1, 0)
    terms = MeshArray.from_locals(m, [W.global_tensor((4, 3), seed=10 + r) for r in range(m.size)])
    for kind in ("sum", "max", "min", "prod"):
        out[f"all_reduce_{kind}"] = C.all_reduce(terms, [0], kind)
        out[f"reduce_{kind}"] = C.reduce(terms, [1], [m.shape[1] - 1], kind)
        out[f"reduce_scatter_{kind}"] = C.reduce_scatter(terms, [1, 0], 0, kind)
    t8 = MeshArray.from_locals(m, [v.astype(np.int8) for v in terms.locals])
    out["all_reduce_wide"] = C.all_reduce(t8, [0, 1], "sum", dtype=np.int32)
    out["broadcast"] = C.broadcast(terms, [0], [1])
    out["gather"] = C.gather(a, [0], 0, [1])
    out["scatter"] = C.scatter(MeshArray.from_locals(m, [W.global_tensor((7, 2), seed=r)
                                                         for r in range(m.size)]), [1], 0, [0])
    out["permute"] = C.permute(terms, [(0, m.size - 1), (m.size - 1, 0), (1, 2)])
    out["shift"] = C.shift(terms, [1], 1, 1, rotate=True)
    out["shift_plain"] = C.shift(terms, [0, 1], 0, -1)
    for dt in W.ODD_DTYPES:
        v = MeshArray.from_locals(m, [W.odd_values(dt, r) for r in range(m.size)])
        for name, got in W.odd_dtype_ops(C, v).items():
            out[f"{dt}_{name}"] = got
    h = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 2, 0])
    good = distribute(W.global_tensor((7, 9), seed=3), h)
    stale = [np.array(v) for v in good.locals]
    for v in stale:
        v[0] = -99
    out["update_halo"] = C.update_halo(MeshArray.from_locals(m, stale, sharding=h), h)
    return out


# One job per mesh runs every check (W.everything); `run` watches the 2x2 job through a
# clock SPEEDUP times fast, so that job looks far longer to it than the old whole-job
# limit of 60 s + 5 x timeout.
TIMEOUT, SHORT_TIMEOUT, LATE, SPEEDUP = 60.0, 1.0, 4.5, 100
# The one torch.distributed call each collective step makes (its data; the batched
# point-to-point calls of all_to_all and transfer steps are counted apart).
TORCH_CALL = {"all_gather": "all_gather_single", "all_reduce": "all_reduce",
              "reduce_scatter": "reduce_scatter", "reduce": "reduce", "gather": "gather",
              "scatter": "scatter", "broadcast": "broadcast"}
P2P = {"batch_isend_irecv"}


def _job_2x2():
    real = time.monotonic
    fast = types.SimpleNamespace(monotonic=lambda: real() * SPEEDUP, sleep=time.sleep)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(launch, "time", fast)
        t0 = real()
        got = run(W.everything, (2, 2), LATE, SHORT_TIMEOUT, timeout=TIMEOUT)
        return got, real() - t0


@pytest.fixture(scope="module")
def job_2x2(once_per_run):
    """Every check on 2x2, with a late peer at the end; (results, real seconds)."""
    return once_per_run("dist_job_2x2", _job_2x2)


@pytest.fixture(scope="module")
def job_2x3(once_per_run):
    """Every check on 2x3 except the late peer."""
    return once_per_run("dist_job_2x3", lambda: (run(W.everything, (2, 3), timeout=TIMEOUT), None))


JOBS = pytest.mark.parametrize("job", ["job_2x2", "job_2x3"], ids=["2x2", "2x3"])


@pytest.mark.slow
@JOBS
@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_every_collective_and_reshard_matches_simulator(job, kind, request):
    """Torch inputs give torch results, NumPy inputs (some read-only) NumPy results."""
    got, _ = request.getfixturevalue(job)
    m = Mesh((2, 2) if job == "job_2x2" else (2, 3))
    want = sim_collectives(m)
    suffix, result = ("", "Tensor") if kind == "torch" else ("_numpy", "ndarray")
    for r in range(m.size):
        assert got[r]["kinds"][f"collectives{suffix}"] == [result]
        assert got[r]["kinds"][f"reshards{suffix}"] == [result]
        for name, sim in want.items():
            g = got[r][f"collectives{suffix}"][name]
            assert g.dtype == sim.local(r).dtype, name
            np.testing.assert_array_equal(g, sim.local(r), err_msg=f"{name} rank {r}")
        for i, (shape, a, b, ka, kb) in enumerate(W.RESHARD_CASES):
            x = W.global_tensor(shape, seed=i)
            sim = reshard(distribute(x, Sharding(m, a, **ka)), Sharding(m, b, **kb))
            np.testing.assert_array_equal(got[r][f"reshards{suffix}"][i], sim.local(r),
                                          err_msg=f"reshard case {i} rank {r}")


@pytest.mark.slow
def test_exchange_returns_numpy_for_a_numpy_dtype(job_2x2):
    got, _ = job_2x2
    for r in range(4):
        assert got[r]["exchange_numpy"] == (["ndarray"], {p: [p, p] for p in range(4) if p != r})


@pytest.mark.slow
@JOBS
def test_dist_reshard_issues_one_op_per_collective_step(job, request):
    """No shape exchange: the plan knows every local shape (the calls counted as
    DTensor's test_redistribute counts comm ops)."""
    got, _ = request.getfixturevalue(job)
    m = Mesh((2, 2) if job == "job_2x2" else (2, 3))
    for i, (shape, a, b, ka, kb) in enumerate(W.RESHARD_CASES):
        plan = plan_reshard(Sharding(m, a, **ka), Sharding(m, b, **kb), shape)
        want = collections.Counter(  # steps the engine runs point-to-point count under P2P
            TORCH_CALL[s.op] for s in plan.steps if s.op in TORCH_CALL
            and not runs_point_to_point(s.op, int(np.prod([m.shape[ax] for ax in s.mesh_axes])),
                                        s.kwargs.get("reduction"), torch.float32))
        for r in range(m.size):
            counts = got[r]["reshard_comm_counts"][i]
            assert {k: v for k, v in counts.items() if k not in P2P} == dict(want), \
                f"case {i} rank {r}: {counts}"


@pytest.mark.slow
def test_unsafe_accumulation_dtypes_are_refused_on_the_engine(job_2x2):
    got, _ = job_2x2
    want = ["all_reduce: dtype int8 cannot hold every int32 input value",
            "reduce: dtype int16 cannot hold every int32 input value",
            "reduce_scatter: dtype float16 cannot hold every int32 input value",
            "all_reduce: dtype bfloat16 cannot hold every float32 input value"]
    for r in range(4):
        assert len(got[r]["dtype_errors"]) == len(want)
        for msg, start in zip(got[r]["dtype_errors"], want):
            assert msg.startswith(start) and "NumPy 'safe' casting" in msg, msg
        wide = got[r]["widened"]
        assert wide.dtype == np.int64 and wide.tolist() == [600, -14]


# W.bad_calls: each of the engine's argument errors, by name, raised on every rank.
ENGINE_ERRORS = {
    "reshard-mesh": r"ValueError: dist_reshard: src is on mesh Mesh\(.*\) but the DistMesh is "
                    r"Mesh\(.*\)",
    "reshard-type": r"TypeError: dist_reshard: tgt must be a Sharding, got list",
    "shapes-rank": r"ValueError: all_gather: shapes must hold one local shape of rank 2 per "
                   r"device, an integer array of shape \(4, 2\); got shape \(4, 1\) of int64",
    "shapes-mine": r"ValueError: all_reduce: shapes\[(\d)\] is \(9, 3\) but rank \1 "
                   r"\(\d, \d\) holds \(2, 3\)",
    "timeout": r"ValueError: DistMesh: timeout must be positive, got 0 s",
    "dtype": r"TypeError: all_reduce: dtype 'nope' is not a NumPy or torch dtype",
    "x-list": r"TypeError: all_gather: x must be a torch.Tensor or a NumPy array, got list",
    "x-strings": r"TypeError: broadcast: x is a NumPy array of dtype <U1, which torch cannot "
                 r"hold; pass bool, int8-int64, uint8-uint64, float16-float64 or "
                 r"complex64/complex128 data",
    "numpy-bfloat16": r"TypeError: all_reduce: dtype torch.bfloat16 has no NumPy equivalent to "
                      r"return for a NumPy input; pass a torch tensor \(torch.from_numpy\(x\)\) "
                      r"to get a bfloat16 result",
    "reshard-local": r"TypeError: dist_reshard: local must be a torch.Tensor or a NumPy array, "
                     r"got list",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINE_ERRORS)
def test_engine_errors(job_2x2, name):
    got, _ = job_2x2
    for r in range(4):
        assert re.fullmatch(ENGINE_ERRORS[name], got[r]["errors"][name]), got[r]["errors"][name]


@pytest.mark.slow
def test_a_late_peer_on_a_sub_group_fails_within_the_timeout(job_2x2):
    got, _ = job_2x2
    status, waited, msg = got[0]["late"]
    assert status == "failed", (status, waited)
    assert SHORT_TIMEOUT - 0.5 < waited < SHORT_TIMEOUT + 2.5 < LATE
    assert msg.startswith("all_reduce failed on rank 0 (0, 0): ")
    assert f"collective timeout {SHORT_TIMEOUT:g} s" in msg
    assert [got[r]["late"][0] for r in (2, 3)] == ["ok", "ok"]  # the other group is fine
    assert {got[r]["default_timeout"] for r in range(4)} == {TIMEOUT}
    # the exchange honours the DistMesh's timeout too (it ran on the default group's 60 s)
    status, waited, msg = got[0]["late_exchange"]
    assert status == "failed" and waited < SHORT_TIMEOUT + 2.5, (status, waited)
    assert f"collective timeout {SHORT_TIMEOUT:g} s" in msg


@pytest.mark.slow
def test_a_job_longer_than_the_old_whole_job_limit_completes(job_2x2):
    got, elapsed = job_2x2
    assert elapsed * SPEEDUP > 60 + 5 * TIMEOUT
    assert [g["late"] == "slept" for g in got] == [False, True, False, False]


@pytest.mark.slow
def test_an_explicit_deadline_stops_a_hung_job():
    t0 = time.monotonic()
    with pytest.raises(DistRunError) as e:
        run(W.hangs_on_rank_0, (2,), deadline=2)
    elapsed = time.monotonic() - t0
    stopped = "stopped: no result within the deadline of 2 s"
    assert e.value.outcomes[0] == stopped
    assert e.value.outcomes[1] in ("finished", stopped)  # finished unless start-up was slow
    assert f"rank 0 (0,) {stopped}" in str(e.value)
    assert 2 <= elapsed < 2 + 12  # the deadline, then terminate and join
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.parametrize("kwargs, err, match", [
    ({"deadline": 0}, ValueError, "deadline must be positive, got 0"),
    ({"deadline": "1h"}, TypeError, "deadline must be a number of seconds or None, got str"),
    ({"timeout": -1}, ValueError, "timeout must be positive, got -1"),
    ({"timeout": None}, TypeError, "timeout must be a number of seconds, got NoneType"),
], ids=["deadline-zero", "deadline-str", "timeout-negative", "timeout-none"])
def test_run_checks_its_limits_before_spawning(kwargs, err, match):
    with pytest.raises(err, match=f"meshtensor.dist.run: {match}"):
        run(W.hangs_on_rank_0, (2,), **kwargs)


@pytest.mark.slow
def test_a_rank_dying_mid_plan_fails_cleanly():
    t0 = time.monotonic()
    with pytest.raises(DistRunError) as e:
        run(W.dies_mid_plan, (2, 2), timeout=10)
    elapsed = time.monotonic() - t0
    msg = str(e.value)
    assert "rank 1 (0, 1) died: exited with code 3 without a result" in msg
    others = [e.value.outcomes[r] for r in (0, 2, 3)]
    # A rank whose part of the plan needs nothing from rank 1 may finish; the others
    # fail with the clear collective error.
    assert all(o == "finished" or o.startswith("error: DistCollectiveError") for o in others), others
    assert any("DistCollectiveError" in o and "a peer process may have died" in o for o in others)
    assert elapsed < 60 + 10 + 30  # start-up, the timeout, and the grace period
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.slow
def test_a_rank_raising_is_reported_without_cpp_backtraces(capfd, monkeypatch):
    monkeypatch.delenv(launch.DEBUG_ENV, raising=False)
    monkeypatch.delenv("TORCH_CPP_LOG_LEVEL", raising=False)
    with pytest.raises(DistRunError, match=r"rank 0 \(0, 0\) error: ValueError: boom on purpose"):
        run(W.raises_on_rank_0, (2, 2), timeout=10)
    err = capfd.readouterr().err  # the ranks write to this process's stderr (fd 2)
    assert "frame #" not in err and "Exception raised from" not in err, err


@pytest.mark.slow
def test_the_failing_ranks_own_error_comes_first():
    """Issue 30: when rank 2 raised, the DistRunError was one line of about 900
    characters listing ranks 0 and 1 first, each with gloo's 'Connection closed by
    peer', and the real error after them. Now the rank that failed on its own leads,
    the echoes follow one per line, and its traceback ends the message."""
    with pytest.raises(DistRunError) as e:
        run(W.raises_on_rank_2, (2, 2), timeout=10)
    lines = str(e.value).splitlines()
    assert lines[0] == "meshtensor.dist.run: rank 2 (1, 0) error: ValueError: boom on rank 2"
    assert lines[1] == "the other ranks:"
    others = lines[2:5]
    assert [ln.split()[1] for ln in others] == ["0", "1", "3"]
    assert all("DistCollectiveError" in ln or "finished" in ln for ln in others), others
    assert e.value.cause == 2 and 'raise ValueError("boom on rank 2")' in e.value.traceback
    assert lines[5] == "rank 2's traceback:" and lines[-1] == "  ValueError: boom on rank 2"
    assert e.value.outcomes[2] == "error: ValueError: boom on rank 2"


def _like_the_server(monkeypatch):
    """Set the import-time variables as the fork server was started with them (it may
    have been started under another environment by an earlier test), so that the next
    job forks from it."""
    run(W.environment, (1,), "HOME")  # the server runs
    server = launch._server_env
    for k in set(server) | set(launch._import_time(dict(os.environ))):
        if k in server:
            monkeypatch.setenv(k, server[k])
        else:
            monkeypatch.delenv(k)
    if "TORCH_CPP_LOG_LEVEL" not in server:
        monkeypatch.setenv(launch.DEBUG_ENV, "1")
    environ = {**os.environ, **launch._child_env()}
    assert launch._context(environ)[0].get_start_method() == "forkserver"
    return environ


@pytest.mark.slow
def test_ranks_fork_from_the_server_and_see_the_callers_environment(monkeypatch):
    """Every job after the first forks its ranks from the fork server (torch imported
    there once), yet each rank sees the caller's environment as it is at that run."""
    _like_the_server(monkeypatch)
    for value in ("one", "two"):
        monkeypatch.setenv("MESHTENSOR_TEST_VALUE", value)
        got = run(W.environment, (2,), "MESHTENSOR_TEST_VALUE")
        assert [v for v, _ in got] == [value, value]
        parents = {p for _, p in got}
        assert len(parents) == 1 and os.getpid() not in parents  # the server's children


@pytest.mark.slow
def test_ranks_write_to_the_callers_stdout_of_each_run(capfd, monkeypatch):
    """A forked rank writes where the caller's fd 1 points at this run, not where it
    pointed when the server started (earlier, outside this test's capture)."""
    with capfd.disabled():
        _like_the_server(monkeypatch)
    capfd.readouterr()
    assert run(W.prints, (2,), "hello from a rank") == [0, 1]
    assert capfd.readouterr().out.count("hello from a rank") == 2


@pytest.mark.slow
def test_many_tensors_reach_the_ranks(monkeypatch):
    """Arguments travel pickled, a copy per rank: no file descriptor per tensor (the
    fork server passes at most 256)."""
    _like_the_server(monkeypatch)
    tensors = [torch.full((3,), float(i)) for i in range(300)]
    assert run(W.count_and_sum, (2,), tensors) == [(300, 3.0 * sum(range(300)))] * 2


def test_an_unpicklable_function_is_refused_before_anything_starts():
    with pytest.raises(TypeError, match="fn and args must be picklable"):
        run(lambda dm: dm.rank, (2,))


@pytest.mark.slow
def test_a_process_forked_after_a_job_still_runs_jobs():
    """A forked child inherits Python's record of its parent's fork server, which it
    cannot use (the server is not its child): its jobs spawn their ranks."""
    run(W.environment, (1,), "HOME")
    pid = os.fork()
    if pid == 0:  # the child: only run(), then leave without pytest's clean-up
        code = 1
        try:
            got = run(W.environment, (1,), "HOME")
            code = 0 if [p for _, p in got] == [os.getpid()] else 2
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.mark.slow
def test_a_job_wanting_other_import_time_settings_spawns(monkeypatch):
    """torch reads TORCH_CPP_LOG_LEVEL (and others) when it is imported: a job that
    wants another value than the fork server started with gets freshly spawned
    ranks."""
    environ = _like_the_server(monkeypatch)
    level = "WARNING" if environ.get("TORCH_CPP_LOG_LEVEL") != "WARNING" else "INFO"
    assert launch._context({**environ, "TORCH_CPP_LOG_LEVEL": level}
                           )[0].get_start_method() == "spawn"
    assert launch._context({**environ, "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
                           )[0].get_start_method() == "spawn"
    monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", level)
    assert run(W.environment, (1,), "TORCH_CPP_LOG_LEVEL") == [(level, os.getpid())]


@pytest.mark.parametrize("env, want", [
    ({}, {"TORCH_CPP_LOG_LEVEL": "ERROR"}),
    ({"MESHTENSOR_DIST_DEBUG": "1"}, {}),
    ({"MESHTENSOR_DIST_DEBUG": "0"}, {"TORCH_CPP_LOG_LEVEL": "ERROR"}),
    ({"TORCH_CPP_LOG_LEVEL": "INFO"}, {}),
], ids=["default", "debug", "debug-off", "user-level"])
def test_spawned_ranks_log_cpp_errors_only_unless_debugging(env, want, monkeypatch):
    for k in ("MESHTENSOR_DIST_DEBUG", "TORCH_CPP_LOG_LEVEL"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert launch._child_env() == want
