"""Scale: meshes and shardings, device-count invariance (1 vs 4 devices), a 2-process gloo run,
SIGTERM mid-round then resume. Each run is a child process (``tests/scale_worker.py``, about 40 s
of CPU each, mostly compiling), so those tests are marked slow: ``pytest -m slow
tests/test_scale.py``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcollab
from jaxcollab.core.rollout import episode_keys, rollout, stateless
from jaxcollab.scale import distributed, preempt
from jaxcollab.scale.mesh import (
    DATA,
    MODEL,
    check_divisible,
    data_mesh,
    host_local_rows,
    replicate,
    shard_batch,
    to_host,
)
from tests.test_preempt import STOP_S

ROOT = Path(__file__).resolve().parent.parent
WORKER = [sys.executable, str(ROOT / "tests" / "scale_worker.py")]
# metrics that must agree between runs (train_seconds is wall time)
COMPARED = ("test_mse_vs_pstar", "test_accuracy", "test_ce", "best_val_loss", "best_step",
            "final_train_loss")


def _random_messages(key, obs):
    return jax.random.randint(key, (2,), 0, 100)


def _env(devices: int = 1, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT),
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", **extra)
    return env


def _worker(out: Path, **env) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([*WORKER, str(out)], env=_env(**env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen, code: int = 0) -> str:
    log, _ = proc.communicate(timeout=600)
    assert proc.returncode == code, log[-3000:]
    return log


def _result(out: Path) -> dict:
    return json.loads((out / "worker.json").read_text())


def _assert_same(a: dict, b: dict, rtol: float) -> None:
    np.testing.assert_allclose(a["returns"], b["returns"], rtol=1e-6)
    for ra, rb in zip(a["rounds"], b["rounds"], strict=True):
        for k in COMPARED:
            np.testing.assert_allclose(ra[k], rb[k], rtol=rtol, atol=rtol, err_msg=k)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The single-process, single-device run."""
    out = tmp_path_factory.mktemp("one")
    _finish(_worker(out))
    return _result(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, reference) -> dict:
    """Four devices, and two gloo processes of one device each (run concurrently)."""
    base = tmp_path_factory.mktemp("scale")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch = {"JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2"}
    procs = {
        "four": _worker(base / "four", devices=4),
        "two_processes": [_worker(base / "multi", **launch, JAX_PROCESS_ID=str(i))
                          for i in range(2)],
    }
    logs = {name: [_finish(p) for p in (ps if isinstance(ps, list) else [ps])]
            for name, ps in procs.items()}
    return {"one": reference, "four": _result(base / "four"),
            "two_processes": _result(base / "multi"), "dirs": base, "logs": logs}


@pytest.mark.slow
def test_training_and_rollout_device_count_invariant(runs):
    assert runs["one"]["run"]["devices"] == 1 and runs["four"]["run"]["devices"] == 4
    _assert_same(runs["one"], runs["four"], rtol=2e-4)


@pytest.mark.slow
def test_two_processes_agree_with_one(runs):
    info = runs["two_processes"]["run"]
    assert (info["processes"], info["devices"], info["local_devices"]) == (2, 2, 1)
    _assert_same(runs["one"], runs["two_processes"], rtol=2e-4)
    run = runs["dirs"] / "multi" / "run"
    # process 0 wrote the round files once; orbax wrote one checkpoint with both processes
    assert sorted(p.name for p in (run / "round_2").iterdir()) == [
        "checkpoint", "metrics.json", "round.npz"]
    assert (run / "round_2" / "checkpoint" / "commit_success.txt").exists()


@pytest.mark.slow
def test_sigterm_mid_round_then_rerun_equals_uninterrupted(reference, tmp_path):
    proc = _worker(tmp_path)
    for line in proc.stdout:  # the first chunk of round 1 has run: the fit loop is in progress
        if line.startswith("step 2"):
            proc.send_signal(signal.SIGTERM)
            break
    log = _finish(proc, code=128 + signal.SIGTERM)
    assert "stopped by SIGTERM" in log and "Traceback" not in log
    assert (tmp_path / "run" / "round_1" / "train_state").is_dir()
    assert not (tmp_path / "run" / "round_1" / "round.npz").exists()
    log = _finish(_worker(tmp_path))
    assert not log.startswith("step 1\n")  # resumed after the saved steps
    assert not (tmp_path / "run" / "round_1" / "train_state").exists()
    _assert_same(reference, _result(tmp_path), rtol=0)


def test_mesh_axes_and_divisibility():
    mesh = data_mesh()
    assert mesh.axis_names == (DATA, MODEL) and mesh.shape[MODEL] == 1
    assert mesh.shape[DATA] == jax.device_count()
    with pytest.raises(ValueError, match="model axis size 0"):
        data_mesh(model=0)
    check_divisible(jax.device_count() * 3, "batch_size")
    assert host_local_rows(8) == slice(0, 8)


def test_global_arrays_from_host_data():
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    rep, sharded = replicate(x), shard_batch(x)
    assert rep.sharding.is_fully_replicated
    np.testing.assert_array_equal(to_host(sharded), x)
    np.testing.assert_array_equal(to_host({"a": rep})["a"], x)


def test_initialize_single_process_and_bad_launch(monkeypatch):
    for var in (*distributed.ENV, "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                "TPU_WORKER_HOSTNAMES", "TPU_PROCESS_ADDRESSES"):
        monkeypatch.delenv(var, raising=False)
    assert distributed.initialize() is False and distributed.is_main()
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    with pytest.raises(ValueError, match="needs all of"):
        distributed.initialize()
    monkeypatch.setenv("SLURM_NTASKS", "4")
    monkeypatch.setenv("SLURM_PROCID", "0")
    assert distributed._cluster_detected()
    info = distributed.run_info()
    assert (info["processes"], info["devices"]) == (1, jax.device_count())


def test_guard_turns_sigterm_into_a_flag_and_train_state_round_trips(tmp_path):
    with preempt.guard():
        os.kill(os.getpid(), signal.SIGTERM)
        assert preempt.requested() == signal.SIGTERM
        state = {"w": jnp.arange(3.0), "step": np.int32(7)}
        saved = preempt.TrainState(tmp_path / "state")
        saved.save(state)
        like = {"w": jnp.zeros(3), "step": np.int32(0)}
        back = saved.restore(like)
        np.testing.assert_array_equal(back["w"], state["w"])
        assert int(back["step"]) == 7
        with pytest.raises(preempt.Preempted) as stop:
            preempt.stop(signal.SIGTERM, "x")
    assert stop.value.code == 128 + signal.SIGTERM and preempt.requested() == 0
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_rollout_stopped_by_sigterm_keeps_finished_episodes_and_resumes(tmp_path):
    """The stop is timed from the signal (the first chunk compiled the rollout before it), with
    room for a loaded machine (the poll is 0.05 s), and it does not wait for the chunk in play:
    that chunk is still blocked when the stop arrives."""
    env, policy = jaxcollab.make("parity/probability"), stateless(_random_messages)
    keys = episode_keys(0, 12)
    played, release, signalled, finished = [], threading.Event(), [], []

    def play(k):
        played.append(k.shape[0])
        if len(played) == 2:  # the signal arrives while the second chunk is being played
            signalled.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGTERM)
            release.wait(60)  # a long compile: the stop does not wait for it
            finished.append(True)
            return {}  # (abandoned: never read)
        out = rollout(env, policy, k, max_steps=5)
        return {"episode_return": out.episode_return, "length": out.length}

    with pytest.raises(preempt.Preempted, match=r"1 chunks of 4 episodes .*\(the work in "
                                                r"progress was dropped\)"):
        preempt.resumable_episodes(play, keys, 4, tmp_path)
    assert time.perf_counter() - signalled[0] < STOP_S and not finished
    release.set()  # the abandoned worker ends (a live one would end the process at exit)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes_0.npz"]
    resumed = preempt.resumable_episodes(play, keys, 4, tmp_path)
    assert played == [4, 4, 4, 4]  # the unfinished chunk and the last one were played
    whole = rollout(env, policy, keys, max_steps=5)
    np.testing.assert_array_equal(resumed["episode_return"], whole.episode_return)
    np.testing.assert_array_equal(resumed["length"], whole.length)


def test_resumable_episodes_pads_the_last_chunk_and_times_played_chunks(tmp_path):
    calls = []

    def play(rows):
        calls.append(rows.copy())
        return {"double": rows * 2}

    timer = preempt.ChunkTimer(play)
    out = preempt.resumable_episodes(timer, np.arange(10), 4, tmp_path)
    np.testing.assert_array_equal(out["double"], np.arange(10) * 2)
    # one shape for every call (padded with its first row); the first chunk ran twice (warm-up)
    assert [c.tolist() for c in calls] == [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7],
                                           [8, 9, 8, 8]]
    assert timer.episodes == 12 and timer.episodes_per_second > 0
    with np.load(tmp_path / "episodes_2.npz") as z:
        assert z["double"].tolist() == [16, 18]  # the padding is not kept
    again = preempt.ChunkTimer(play)
    np.testing.assert_array_equal(
        preempt.resumable_episodes(again, np.arange(10), 4, tmp_path)["double"], out["double"])
    assert again.episodes_per_second is None and len(calls) == 4  # all loaded
    unsaved = preempt.resumable_episodes(play, np.arange(10), 3, None)
    np.testing.assert_array_equal(unsaved["double"], out["double"])
    with pytest.raises(ValueError, match="chunk must be a positive number of episodes, got 0"):
        preempt.resumable_episodes(play, np.arange(10), 0, None)


@pytest.mark.slow
def test_rollout_cli_stopped_by_sigterm_resumes_to_the_uninterrupted_results(cli, tmp_path):
    """``eval/rollout.py`` in a child process, SIGTERM after its first saved chunk, rerun."""
    args = ["env=ktane/wires", "agent=random", "episodes=2048", "chunk=128", "seed=4"]
    cmd = [sys.executable, str(ROOT / "eval" / "rollout.py"), *args,
           f"out_dir={tmp_path / 'run'}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        if line.startswith("episodes: chunk 1/16 saved"):
            proc.send_signal(signal.SIGTERM)
            break
    log = _finish(proc, code=128 + signal.SIGTERM)
    assert "stopped by SIGTERM" in log and "Traceback" not in log
    saved = len(list((tmp_path / "run" / "episodes" / "ktane-wires").glob("episodes_*.npz")))
    assert 1 <= saved < 16
    assert "success_rate" not in json.loads((tmp_path / "run" / "results.json").read_text())
    log = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, check=True)
    assert f"chunk {saved}/16 saved" not in log.stdout  # the finished chunks were loaded
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    whole = cli("eval/rollout.py", *args, f"out_dir={tmp_path / 'whole'}")
    for results in (resumed, whole):
        for key in ("episodes_per_second", "config", "run"):
            results.pop(key)
    assert resumed == whole and resumed["episodes"] == 2048
