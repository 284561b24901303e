"""RMBOSearcher in situations that need Ray instances of their own: a driver killed mid-run
and restored with ``Tuner.restore``, and a multi-node cluster."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import ray
from ray import tune

from rmbo_tune import RMBOSearcher

pytestmark = [pytest.mark.ray, pytest.mark.slow]

DRIVER = os.path.join(os.path.dirname(__file__), "resume_driver.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _latest_state(exp_dir):
    # Session names sort by start time (Ray restores the same way); mtimes do not, as
    # Tune rewrites older sessions' files when it syncs the experiment directory.
    paths = sorted(glob.glob(os.path.join(exp_dir, "searcher-state-*.pkl")))
    if not paths:
        return None
    try:
        with open(paths[-1]) as fh:
            return json.load(fh)
    except (json.JSONDecodeError, OSError):
        return None  # caught mid-write


def _run_driver(args, env):
    return subprocess.Popen(
        [sys.executable, DRIVER, *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_run_resumes_with_every_checkpointed_observation_once(tmp_path, sig):
    if ray.is_initialized():
        ray.shutdown()
    n = 12
    env = {**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "0.5", "PYTHONPATH": ROOT}
    exp_dir = os.path.join(tmp_path, "exp")
    proc = _run_driver([str(tmp_path), "exp", "start", str(n)], env)
    checkpointed = None
    deadline = time.time() + 180
    while time.time() < deadline:
        state = _latest_state(exp_dir)
        if state and state["engine"] and len(state["engine"]["y"]) >= 4:
            checkpointed = state
            break
        if proc.poll() is not None:
            pytest.fail("driver finished before it could be interrupted:\n" + proc.stdout.read())
        time.sleep(0.2)
    assert checkpointed is not None, "no searcher checkpoint with observations appeared"
    proc.send_signal(sig)
    proc.wait(timeout=120)
    if sig == signal.SIGKILL:
        # The killed driver leaves its Ray instance behind; stop it so restore starts fresh.
        subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "ray"), "stop", "--force"],
            capture_output=True,
            timeout=120,
        )
    before = _latest_state(exp_dir)  # what the restore will load
    restore = _run_driver([str(tmp_path), "exp", "restore", str(n)], env)
    out, _ = restore.communicate(timeout=400)
    assert restore.returncode == 0, out
    assert f"DONE {n} 0" in out, out
    final = _latest_state(exp_dir)
    X_before = np.array(before["engine"]["X"])
    X_after = np.array(final["engine"]["X"])
    assert len(X_after) == n  # every trial observed once: none lost, none twice
    assert len(np.unique(X_after, axis=0)) == n
    for row in X_before:  # everything checkpointed survived the restore
        assert np.any(np.all(X_after == row, axis=1))
    assert len(final["observed"]) == n == len(set(final["observed"]))


def node_reporting(config):
    time.sleep(0.3)
    tune.report({"loss": config["x"], "node": ray.get_runtime_context().get_node_id()})


def test_trials_spread_over_a_multi_node_cluster(tmp_path):
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address)
        searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
        results = tune.Tuner(
            node_reporting,
            param_space={"x": tune.uniform(0, 1)},
            tune_config=tune.TuneConfig(
                search_alg=searcher, num_samples=9, max_concurrent_trials=3
            ),
            run_config=tune.RunConfig(storage_path=str(tmp_path), name="multi", verbose=0),
        ).fit()
        assert len(results) == 9 and not results.errors
        nodes = {r.metrics["node"] for r in results}
        assert len(nodes) > 1, nodes
        assert searcher.engine.X.shape == (9, 1)
    finally:
        ray.shutdown()
        cluster.shutdown()
