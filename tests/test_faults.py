"""Faults injected into real Ray runs of RMBOSearcher: the driver killed at random points and
restored, a worker process killed mid-trial, a trial hanging past ``time_budget_s``, damaged
trial and searcher checkpoints. After each, the run finishes and every completed trial is an
observation exactly once."""

import glob
import json
import os
import pickletools
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import ray
from ray import tune
from ray.tune.stopper import TimeoutStopper

from rmbo_tune import RMBOSearcher, searcher_state

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
    # A session of its own: the driver and the Ray instance it starts can be killed together
    # without touching any other Ray instance on the machine.
    return subprocess.Popen(
        [sys.executable, DRIVER, *map(str, args)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _env(**extra):
    return {**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "0.5", "PYTHONPATH": ROOT, **extra}


# Ray Tune 2.60 writes its own experiment_state-*.json in place (open "w", json.dump), not
# through a temporary file and a rename as it does the searcher's state, and its background
# sync copies its search generator's search_gen_state-*.json and the Tuner's tuner.pkl (both
# pickles) into the experiment directory non-atomically: a SIGKILL during any of these
# writes leaves the file empty or cut, and Tuner.restore then starts the experiment over
# (experiment state) or fails with EOFError (search generator, tuner). The tests keep the
# last complete version of each such file and put it back after a kill that tore one, which
# is what an atomic write would have left; the searcher's own files are never touched, so
# what is tested is RMBOSearcher's restore.


def _complete_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _complete_pickle(data: bytes) -> bool:
    """Whether ``data`` is a whole pickle, read opcode by opcode (nothing is unpickled)."""
    try:
        ops = list(pickletools.genops(data))
    except ValueError:  # cut before its STOP opcode
        return False
    return bool(ops) and ops[-1][0].name == "STOP"


_TUNE_FILES = {
    "experiment_state-*.json": _complete_json,
    "search_gen_state-*.json": _complete_pickle,
    "tuner.pkl": _complete_pickle,
}
_TUNE_STATES: dict[str, bytes] = {}


def _keep_tune_states(exp_dir):
    # Only the latest session's file of each kind is ever put back (_repair_torn_tune_state):
    # reading every earlier session's too (ten of them, up to 1 MB each, in the test that
    # kills ten times) cost up to a fifth of a CPU at ten polls a second.
    for pattern, complete in _TUNE_FILES.items():
        paths = sorted(glob.glob(os.path.join(exp_dir, pattern)))
        if not paths:
            continue
        try:
            with open(paths[-1], "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if complete(data):  # else being written
            _TUNE_STATES[paths[-1]] = data


def _repair_torn_tune_state(exp_dir):
    """Put back the last complete version of each Tune state file the kill tore; True if one
    was torn."""
    torn = False
    for pattern, complete in _TUNE_FILES.items():
        paths = sorted(glob.glob(os.path.join(exp_dir, pattern)))
        if not paths:
            continue
        with open(paths[-1], "rb") as fh:
            if complete(fh.read()):
                continue
        torn = True
        if paths[-1] in _TUNE_STATES:
            with open(paths[-1], "wb") as fh:
                fh.write(_TUNE_STATES[paths[-1]])
        else:  # torn at its first write: the previous session's file is the latest complete one
            os.remove(paths[-1])
    return torn


def _wait_for_state(exp_dir, proc, ready, timeout=180):
    """The first searcher checkpoint for which ``ready(state)`` holds; None if the driver
    finished first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        _keep_tune_states(exp_dir)
        state = _latest_state(exp_dir)
        if state and ready(state):
            return state
        if proc.poll() is not None:
            return None
        time.sleep(0.1)
    pytest.fail("no searcher checkpoint made progress within the timeout")


def _session(sid):
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.getsid(int(entry)) == sid:
                with open(f"/proc/{entry}/stat") as fh:
                    zombie = fh.read().rsplit(")", 1)[1].split()[0] == "Z"
                if not zombie:
                    pids.append(int(entry))
        except OSError:
            pass  # gone meanwhile
    return pids


def _kill_driver(proc, exp_dir=None):
    """SIGKILL the driver and every process of its session: its Ray instance dies with it,
    as when a machine's job is killed, and restore starts a fresh one."""
    if exp_dir is not None:
        _keep_tune_states(exp_dir)
    for _ in range(50):
        pids = _session(proc.pid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    proc.wait(timeout=120)
    if exp_dir is not None and _repair_torn_tune_state(exp_dir):
        print("the kill tore a Tune state file; its last complete version restored")


def _output(proc, timeout):
    """The driver's output once it exits; past ``timeout`` seconds its session is killed (a
    hung driver must not outlive the test) and the test fails with what it printed."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        _kill_driver(proc)
        pytest.fail(f"the driver did not finish in {timeout} s:\n{proc.communicate()[0]}")


def _n_observed(state):
    return len(state["observed"]) if state and state["engine"] else 0


def _assert_every_trial_once(final, n, snapshots=()):
    X = np.array(final["engine"]["X"])
    assert len(X) == n  # every trial observed once: none lost, none twice
    assert len(np.unique(X, axis=0)) == n
    assert len(final["observed"]) == n == len(set(final["observed"]))
    for state in snapshots:  # everything checkpointed survived every restore
        assert set(state["observed"]) <= set(final["observed"])
        for row in np.array(state["engine"]["X"]):
            assert np.any(np.all(X == row, axis=1))


@pytest.fixture
def no_ray():
    if ray.is_initialized():
        ray.shutdown()


def _as_killed(root):
    """The experiment directory of a run made by a module fixture below, put back as the kill
    left it (a test before may have restored it): each test restores the run at the path it
    ran at, as if it had made the run itself."""
    exp_dir = os.path.join(root, "exp")
    if os.path.exists(exp_dir):
        shutil.rmtree(exp_dir)
    shutil.copytree(os.path.join(root, "as-killed"), exp_dir, symlinks=True)
    return exp_dir


def _keep_as_killed(root):
    shutil.copytree(os.path.join(root, "exp"), os.path.join(root, "as-killed"), symlinks=True)
    return root


@pytest.fixture(scope="module")
def interrupted(request, tmp_path_factory):
    """A run of 12 trials stopped by the signal ``request.param`` once 4 were observed:
    SIGINT (Tune stops the driver) or SIGKILL (the driver killed with its Ray at once). Made
    once per signal for the tests that restore it (:func:`_as_killed`)."""
    if ray.is_initialized():  # a Ray of this process would compete for the two CPUs
        ray.shutdown()
    root = tmp_path_factory.mktemp("interrupted")
    exp_dir = os.path.join(root, "exp")
    proc = _run_driver([root, "exp", "start", 12], _env())
    if _wait_for_state(exp_dir, proc, lambda s: _n_observed(s) >= 4) is None:
        pytest.fail("driver finished before it could be interrupted:\n" + proc.stdout.read())
    if request.param == signal.SIGKILL:
        _kill_driver(proc, exp_dir)
    else:
        proc.send_signal(request.param)
        proc.wait(timeout=120)
        _kill_driver(proc, exp_dir)  # anything it left behind
    return _keep_as_killed(root)


@pytest.fixture(scope="module")
def killed_between_checkpoints(tmp_path_factory):
    """A run of 8 trials, 2 at a time, whose steps take 1 s (trials spend most of the run
    between checkpoints), SIGKILLed 1.5 s after the searcher had an observation and both
    slots live (the live trials have checkpointed by then and Tune has recorded it). Made
    once for the tests that restore it (:func:`_as_killed`); with the searcher's state that
    the wait saw."""
    if ray.is_initialized():
        ray.shutdown()
    root = tmp_path_factory.mktemp("killed")
    exp_dir = os.path.join(root, "exp")
    proc = _run_driver([root, "exp", "start", 8, 2], _env(RESUME_STEP_S="1.0"))
    ready = _wait_for_state(exp_dir, proc, lambda s: _n_observed(s) >= 1 and len(s["live"]) == 2)
    assert ready is not None, proc.stdout.read()
    time.sleep(1.5)
    _kill_driver(proc, exp_dir)
    return _keep_as_killed(root), ready


@pytest.mark.parametrize(
    "interrupted", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"], indirect=True
)
def test_interrupted_run_resumes_with_every_checkpointed_observation_once(interrupted, no_ray):
    n = 12
    exp_dir = _as_killed(interrupted)
    before = _latest_state(exp_dir)  # what the restore will load
    restore = _run_driver([interrupted, "exp", "restore", n], _env())
    out = _output(restore, 400)
    assert restore.returncode == 0, out
    assert f"DONE {n} 0" in out, out
    _assert_every_trial_once(_latest_state(exp_dir), n, [before])


def test_driver_killed_at_ten_random_points_resumes_with_every_observation_once(tmp_path, no_ray):
    rng = np.random.default_rng(20261126)
    # Each kill comes a few observations after the one before (1-5; 17-24 in all after the
    # tenth in runs on a loaded machine): n leaves the run far from done at the last kill.
    n, concurrency, kills = 60, 4, 10
    exp_dir = os.path.join(tmp_path, "exp")
    env = _env(RESUME_STEP_S="0.3")
    snapshots, action = [], "start"
    for _ in range(kills):
        proc = _run_driver([tmp_path, "exp", action, n, concurrency], env)
        seen = _n_observed(snapshots[-1]) if snapshots else 0
        waited = _wait_for_state(exp_dir, proc, lambda s, k=seen: _n_observed(s) > k)
        if waited is None:
            pytest.fail(f"the run finished after {len(snapshots)} kills:\n{proc.stdout.read()}")
        time.sleep(rng.uniform(0.0, 1.0))  # a random point of the trials' lives
        _kill_driver(proc, exp_dir)
        # Tune copies the searcher's state into the experiment directory non-atomically: a
        # kill in that copy leaves it cut (the restore then rebuilds it from the history).
        # What was on disk before the kill must survive all the same.
        snapshots.append(_latest_state(exp_dir) or waited)
        action = "restore"
    # No kill follows: the last restore runs the rest of the trials at the driver's default pace.
    restore = _run_driver([tmp_path, "exp", "restore", n, concurrency], _env())
    out = _output(restore, 600)
    assert restore.returncode == 0, out
    done = re.search(r"^DONE (\d+) 0$", out, re.MULTILINE)
    assert done, out
    # Tune copies its state files into the experiment directory one by one, in a background
    # sync: a kill between two copies can leave its trial list newer than its search
    # generator's trial counter (the restored Tune then creates as many trials beyond
    # num_samples as the counter lags) or older (it creates as many fewer, and never runs
    # the trials it lost). Each trial Tune ran must be observed once all the same.
    ran = int(done.group(1))
    assert n - kills * concurrency <= ran <= n + kills * concurrency, out
    assert len({_n_observed(s) for s in snapshots}) == kills  # each kill at a new point
    tune_ids = searcher_state.tune_trials(exp_dir)
    assert tune_ids is not None and len(tune_ids) == ran
    final = _latest_state(exp_dir)
    observed = final["observed"]
    assert set(tune_ids) <= set(observed) and len(observed) == len(set(observed))
    # The searcher closed the trials Tune lost: with the last value each reported, if any.
    X = np.array(final["engine"]["X"])
    assert len(X) == len(observed) - final["counts"]["not_run"]
    assert len(np.unique(X, axis=0)) == len(X)  # no point suggested twice
    for state in snapshots:  # everything checkpointed survived every restore
        assert set(state["observed"]) <= set(observed)
        for row in np.array(state["engine"]["X"]):
            assert np.any(np.all(X == row, axis=1))


def test_a_tune_state_older_than_the_searchers_resumes_without_waiting_on_lost_trials(
    tmp_path, no_ray
):
    # Restored with a Tune state that predates the searcher's (as when Tune's own file was
    # lost and an older copy put back): the trials the searcher suggested after that state
    # was written exist only in the searcher. Tune will never run them; the restored search
    # must not hold its concurrency slots for them (here both), or it waits forever.
    n, exp_dir = 10, str(tmp_path / "exp")
    env = _env(RESUME_STEP_S="0.3")
    proc = _run_driver([tmp_path, "exp", "start", n, 2], env)
    early = _wait_for_state(exp_dir, proc, lambda s: _n_observed(s) >= 1)
    assert early is not None, proc.stdout.read()
    old = {}
    while not old:  # a complete Tune state from this point of the run
        _keep_tune_states(exp_dir)
        old = {
            p: data.decode()
            for p, data in _TUNE_STATES.items()
            if p.startswith(os.path.join(exp_dir, "experiment_state-"))
        }
    known = {t for text in old.values() for t in re.findall(r'trial_id\\": \\"(\w+)', text)}
    later = _wait_for_state(exp_dir, proc, lambda s: len(set(s["live"]) - known) == 2)
    assert later is not None, proc.stdout.read()
    _kill_driver(proc, exp_dir)  # a search-generator file the kill cut is put back too
    # The kill can cut the copy of the searcher's state (restored from its history then).
    lost = set((_latest_state(exp_dir) or later)["live"]) - known
    for path, text in old.items():
        with open(path, "w") as fh:
            fh.write(text)
    restore = _run_driver([tmp_path, "exp", "restore", n, 2], _env())  # no kill: default pace
    out = _output(restore, 400)
    assert restore.returncode == 0 and "DONE" in out, out
    final = _latest_state(exp_dir)
    records = {r["trial_id"]: r for r in final["history"]}
    assert lost <= set(final["observed"]) and not final["live"]
    # Ended as trials without a final result end: their last reported value, else dropped.
    outcomes = [records[t].get("outcome") for t in lost]
    assert set(outcomes) <= {"observed", "dropped"}, outcomes
    assert final["counts"]["not_run"] == outcomes.count("dropped")
    told = [r for r in records.values() if r.get("outcome") in ("observed", "failed")]
    assert (
        len(final["engine"]["X"])
        == len(told)
        == len(final["observed"]) - final["counts"]["not_run"]
    )


def test_restored_with_resume_unfinished_false_the_skipped_trials_hold_no_slots(
    killed_between_checkpoints, no_ray
):
    # Tune skips the trials that were running without telling the searcher; with both
    # concurrency slots theirs, a searcher that waited on them would wait forever.
    n, (root, ready) = 8, killed_between_checkpoints
    exp_dir = _as_killed(root)
    running = set((_latest_state(exp_dir) or ready)["live"])
    # No kill follows: the restore runs at the driver's default pace.
    restore = _run_driver([root, "exp", "restore", n, 2], _env(RESUME_UNFINISHED="0"))
    out = _output(restore, 400)
    assert restore.returncode == 0 and f"DONE {n} 0" in out, out
    final = _latest_state(exp_dir)
    assert set(final["live"]) == running and not running & set(final["observed"])
    assert len(final["engine"]["X"]) == len(final["observed"]) == n - len(running)


def test_a_damaged_trial_checkpoint_fails_that_trial_and_the_run_finishes(
    killed_between_checkpoints, no_ray
):
    n, (root, _) = 8, killed_between_checkpoints
    exp_dir = _as_killed(root)
    before = _latest_state(exp_dir)
    damaged = []
    for trial_id in before["live"]:
        for path in glob.glob(os.path.join(exp_dir, f"*{trial_id}*", "checkpoint_*", "*.json")):
            with open(path, "w") as fh:
                fh.write('{"step": ')
            damaged.append(trial_id)
    assert damaged, "no live trial had a checkpoint to damage"
    restore = _run_driver([root, "exp", "restore", n, 2], _env())  # no kill: default pace
    out = _output(restore, 400)
    assert restore.returncode == 0, out
    errors = int(out.split(f"DONE {n} ")[1].split()[0])
    assert 1 <= errors <= len(set(damaged)), out
    final = _latest_state(exp_dir)
    y = final["engine"]["y"]
    assert len(y) == n == len(set(final["observed"]))  # each trial once, failed or not
    assert sum(v is None for v in y) == errors  # a failed trial is a failure, not a value
    _assert_every_trial_once(final, n, [before])


@pytest.mark.parametrize("interrupted", [signal.SIGKILL], ids=["SIGKILL"], indirect=True)
def test_a_damaged_searcher_state_is_rebuilt_and_the_run_finishes(interrupted, no_ray):
    n = 12
    exp_dir = _as_killed(interrupted)
    before = _latest_state(exp_dir)
    path = sorted(glob.glob(os.path.join(exp_dir, "searcher-state-*.pkl")))[-1]
    with open(path, "r+") as fh:
        fh.truncate(os.path.getsize(path) // 2)
    restore = _run_driver([interrupted, "exp", "restore", n], _env())
    out = _output(restore, 400)
    assert restore.returncode == 0, out
    assert f"DONE {n} 0" in out, out
    assert "is damaged" in out and "the search was rebuilt from" in out, out
    _assert_every_trial_once(_latest_state(exp_dir), n, [before])


def _victim(folder):
    """True in the first trial to ask; it writes its pid and trial id to ``folder``/victim."""
    try:
        fd = os.open(os.path.join(folder, "victim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()} {tune.get_context().get_trial_id()}\n".encode())
    os.close(fd)
    return True


def _quadratic(config, folder, hang_s):
    if _victim(folder):
        time.sleep(hang_s)
    time.sleep(0.2)
    tune.report({"loss": (config["x"] - 0.3) ** 2})


def _kill_victim_when_it_starts(folder):
    path = os.path.join(folder, "victim")
    for _ in range(1200):
        if os.path.exists(path):
            with open(path) as fh:
                text = fh.read()
            if text.endswith("\n"):
                os.kill(int(text.split()[0]), signal.SIGKILL)
                return
        time.sleep(0.1)


@pytest.mark.parametrize("max_failures", [0, 1])
def test_a_worker_killed_mid_trial_is_retried_or_a_failure(tmp_path, ray_local, max_failures):
    n = 6
    killer = threading.Thread(target=_kill_victim_when_it_starts, args=(str(tmp_path),))
    killer.start()
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    results = tune.Tuner(
        tune.with_parameters(_quadratic, folder=str(tmp_path), hang_s=600),
        param_space={"x": tune.uniform(0, 1)},
        tune_config=tune.TuneConfig(
            search_alg=searcher, num_samples=n, max_concurrent_trials=2, reuse_actors=True
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            name="killed",
            verbose=0,
            failure_config=tune.FailureConfig(max_failures=max_failures),
        ),
    ).fit()
    killer.join()
    assert len(results) == n
    assert len(results.errors) == (1 if max_failures == 0 else 0)
    engine = searcher.engine
    assert len(engine.target.X_list) == n  # every trial once
    assert len(engine.target.failed) == len(results.errors)
    assert searcher.counts["observed"] == n - len(results.errors)


class _BudgetFromTheHang(TimeoutStopper):
    """The stopper ``time_budget_s`` creates, its clock started once the victim hangs: on a
    loaded machine a budget counted from ``fit()`` can run out before any trial started."""

    def __init__(self, folder: str, timeout: float) -> None:
        super().__init__(timeout)
        self.victim = os.path.join(folder, "victim")

    def stop_all(self) -> bool:
        return os.path.exists(self.victim) and super().stop_all()


def test_a_trial_hanging_past_the_time_budget_is_not_observed(tmp_path, ray_local):
    n = 6
    searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
    results = tune.Tuner(
        tune.with_parameters(_quadratic, folder=str(tmp_path), hang_s=3600),
        param_space={"x": tune.uniform(0, 1)},
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=n,
            max_concurrent_trials=2,
            reuse_actors=True,
            time_budget_s=900,  # only if no trial ever starts
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            name="hang",
            verbose=0,
            stop=_BudgetFromTheHang(str(tmp_path), 10),
        ),
    ).fit()  # returns at the budget although a trial is still hanging
    hung = (tmp_path / "victim").read_text().split()[1]
    # How many others finish within the budget depends on the machine's load, and Tune ends
    # the run without telling the searcher about trials still running (or whose last result
    # came in as the budget ran out): what is guaranteed is that the searcher observed only
    # trials that reported, never the hung one, and blamed no configuration.
    finished = {r.metrics["trial_id"] for r in results if r.metrics and "loss" in r.metrics}
    assert hung not in finished
    outcome = {h["trial_id"]: h.get("outcome") for h in searcher.history}
    observed = {t for t, o in outcome.items() if o == "observed"}
    assert observed <= finished and outcome[hung] in (None, "dropped"), outcome
    assert searcher.engine is not None and len(searcher.engine.y) == len(observed)
    assert len(searcher.engine.target.failed) == 0
