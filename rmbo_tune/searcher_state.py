"""RMBOSearcher's saved state: what ``save`` writes, what ``restore`` reads back, and the
rebuild from ``rmbo_history.json`` when the state file is damaged.

The state is plain JSON (never a pickle): the engine's state dict, the live and observed
trials, the per-trial history, the fidelity tracker and the counters.

Tune writes its own experiment state and then the searcher's, at intervals, so the two can
disagree after a crash: :func:`reconcile` brings the restored searcher in line with the
trials Tune restores.
"""

from __future__ import annotations

import glob
import json
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbo_tune.diagnostics import HISTORY_FILE, read_history
from rmbo_tune.engine import MetaBO
from rmbo_tune.fidelity import finite_number
from rmbo_tune.meta_tasks._storage import STATE_PREFIX
from rmbo_tune.space_codec import point_from_json, point_to_json, space_from_json, space_to_json

if TYPE_CHECKING:
    from rmbo_tune.searcher import RMBOSearcher

logger = logging.getLogger("rmbo_tune.searcher")

STATE_VERSION = 1
TUNE_STATE_GLOB = f"{STATE_PREFIX}*.json"
_FINISHED = ("TERMINATED", "ERROR")
REPEAT_INDEX = "__trial_index__"  # ray.tune.search.repeater.TRIAL_INDEX


def dump(s: RMBOSearcher) -> dict[str, Any]:
    """The searcher's state as a JSON-able dict."""
    engine = None
    if s._engine is not None:
        engine = s._engine.state_dict()
        # The engine's per-ask log repeats the searcher's history (per trial, with
        # names); leaving it out halves the checkpoint that Tune writes periodically.
        engine["history"] = []
    return {
        "version": STATE_VERSION,
        "metric": s._metric,
        "mode": s._mode,
        "space": None if s._space is None else space_to_json(s._space),
        "engine": engine,
        "live": s._live,
        "reported": s._reported,
        "observed": sorted(s._observed),
        "points": [point_to_json(p) for p in s._points],
        "rewards": s._rewards,
        "history": s._history,
        "added": s._added,
        "counts": s.counts,
        "max_concurrent": s._max_concurrent,
        "task_names": s._task_names,
        "fidelity": s._fidelity.state_dict(),
    }


def load(s: RMBOSearcher, state: dict[str, Any], checkpoint_path: str) -> None:
    """Restore ``s`` from a state written by :func:`dump` (read from ``checkpoint_path``)."""
    if state.get("version") != STATE_VERSION:
        raise ValueError(
            f"{checkpoint_path}: unsupported RMBOSearcher state version {state.get('version')!r}"
        )
    s._metric, s._mode = state["metric"], state["mode"]
    if state["space"] is not None:
        restored = space_from_json(state["space"])
        s._space = restored if s._space is None else s._space
    s._live = {k: list(v) for k, v in state["live"].items()}
    s._reported = dict(state.get("reported", {}))
    s._observed = set(state["observed"])
    s._points = [point_from_json(p) for p in state["points"]]
    s._rewards = state["rewards"]
    s._history = state["history"]
    s._added = list(state.get("added", []))
    s.counts.update(state["counts"])
    s._max_concurrent = s._max_concurrent or state["max_concurrent"]
    s._task_names = list(state["task_names"])
    if "fidelity" in state:
        s._fidelity.load_state_dict(state["fidelity"])
    if state["engine"] is not None:
        assert s._space is not None
        s._engine = MetaBO.from_state_dict(state["engine"], project=s._space.project)


def recover(s: RMBOSearcher, checkpoint_path: str, damaged: str) -> None:
    """Rebuild the search from the history file written beside a damaged state file:
    every observation, failure, stopped and running trial it records, the results given
    without a suggestion, the trials' learning curves (with a scheduler) and the
    meta-tasks."""
    path = os.path.join(os.path.dirname(checkpoint_path) or ".", HISTORY_FILE)
    try:
        saved = read_history(path)
        if s._space is None and saved.get("space") is not None:
            s._space = space_from_json(saved["space"])
        if saved.get("fidelity") is not None:
            s._fidelity.load_state_dict(saved["fidelity"])
            s._fidelity.relevel()  # the rebuilt engine has no level meta-tasks yet
    except (OSError, ValueError, KeyError, TypeError) as exc:
        s._damaged = (  # the trials' results on disk are intact: reuse them so
            f"{damaged}, and {path} cannot replace it ({exc}); start a new search "
            "with meta_tasks=<this experiment's directory>"
        )
        raise ValueError(f"RMBOSearcher cannot resume: {s._damaged}") from exc
    s._metric, s._mode = s._metric or saved["metric"], s._mode or saved["mode"]
    engine, records = s._ensure_engine(), saved["suggestions"]
    s._points = s._points[sum(r.get("branch") == "points_to_evaluate" for r in records) :]
    added = saved.get("added", [])
    for i, rec in enumerate(records):
        _replay_added(engine, [a for a in added if a["after"] == i], s._sign)
        outcome = rec.get("outcome")
        if outcome is None:  # running when the state was saved: Tune reruns it
            engine.add_pending(rec["x"])
            s._live[rec["trial_id"]] = rec["x"]
            continue
        if outcome == "failed":
            if "restarted_as" not in rec:  # else the restarted trial's outcome stands for it
                engine.fail(rec["x"])
        elif outcome == "stopped":
            engine.add_pending(rec["x"])
            engine.drop(rec["x"])
            if rec.get("stopped_as") == "worse":
                engine.fail(rec["x"])
        elif outcome == "observed":
            # Pending first, as it was when told: one of the search's own iterations.
            engine.add_pending(rec["x"])
            engine.tell(rec["x"], s._sign * rec["value"])
        s._observed.add(rec["trial_id"])
    _replay_added(engine, [a for a in added if a["after"] >= len(records)], s._sign)
    s._history, s._added = records, list(added)
    s.counts.update(saved["counts"])
    logger.warning(
        "RMBOSearcher: %s; the search was rebuilt from %s (%d trials finished, %d running)",
        damaged,
        path,
        len(s._observed),
        len(s._live),
    )


def _replay_added(engine: MetaBO, added: list[dict[str, Any]], sign: float) -> None:
    """Tell the engine results given with ``add_evaluated_point``, as they were told: not
    as one of the search's own iterations (no pending point first)."""
    for rec in added:
        if rec["outcome"] == "failed":
            engine.fail(rec["x"])
        else:
            engine.tell(rec["x"], sign * rec["value"])


def _repeat_groups(trials: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The trials a ``Repeater`` created (their config carries its ``__trial_index__``),
    grouped by the configuration they share."""
    groups: dict[str, list[str]] = {}
    for trial_id, trial in trials.items():
        config = trial["config"]
        if isinstance(config, dict) and REPEAT_INDEX in config:
            shared = {k: v for k, v in config.items() if k != REPEAT_INDEX}
            groups.setdefault(json.dumps(shared, sort_keys=True, default=str), []).append(trial_id)
    return groups


def tune_trials(directory: str) -> dict[str, dict[str, Any]] | None:
    """Each trial of the Tune experiment state that a restore in ``directory`` loads (the
    newest ``experiment_state-*.json``, as Tune picks it): trial id -> ``status``,
    ``config`` and ``last_result``. None if there is none, or it is not in Ray 2.x's layout.
    Plain JSON: the pickled values Tune embeds in it are left encoded."""
    paths = glob.glob(os.path.join(glob.escape(directory), TUNE_STATE_GLOB))
    if not paths:
        return None
    newest = max(paths)
    try:
        with open(newest) as fh:
            state = json.load(fh)
        trials = {}
        for trial_json, run_json in state["trial_data"]:
            trial, run = json.loads(trial_json), json.loads(run_json)
            trials[str(trial["trial_id"])] = {
                "status": trial.get("status"),
                "config": trial.get("config"),
                "last_result": run.get("last_result") or None,
            }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("RMBOSearcher: cannot read Tune's state %s (%s)", newest, exc)
        return None
    return trials


def reconcile(s: RMBOSearcher, directory: str) -> None:
    """Bring a restored searcher in line with the Tune state restored beside it.

    Tune reruns its unfinished trials under their ids and reports on them as usual; it never
    reports again on a trial it recorded as finished, nor on one it never recorded. So a
    trial the searcher still waits on is completed from Tune's record when Tune finished it
    (its last result, or its error); when Tune does not know it (the searcher suggested it
    after Tune last wrote its state) it will never run again, and it ends as a trial
    without a final result does: the last value it reported counts, and without one it is
    dropped (``counts["not_run"]``). A trial Tune finished that the searcher never heard of
    is observed from its config and last result. Without this, such trials would hold
    concurrency slots forever. A trial Tune will rerun that the searcher never heard of is
    adopted as running, so its point is pending: the restored engine, back at the state in
    which it first suggested that point, would otherwise suggest it again.
    """
    trials = tune_trials(directory)
    if trials is None or s._engine is None:
        return
    lost = [t for t in s._live if t not in trials]
    for trial_id in lost:
        s.on_trial_complete(trial_id, None)
    finished = 0
    from rmbo_tune.searcher import _metric_value  # the searcher's reading of a result

    groups = _repeat_groups(trials)
    for group in groups.values():
        # A Repeater tells this searcher the mean of each group, under the first trial's
        # id; it does not save its groups, so a group that finished meanwhile is told here.
        mine = [t for t in group if t in s._live]
        if mine and all(trials[t]["status"] in _FINISHED for t in group):
            values = [
                _metric_value(trials[t]["last_result"] or {}, s._metric or "") for t in group
            ]
            scores = [v for v in map(finite_number, values) if v is not None]
            s.on_trial_complete(mine[0], {s._metric: float(np.mean(scores))} if scores else None)
            finished += 1
    repeated = {t for group in groups.values() for t in group}
    for trial_id, trial in trials.items():
        if trial_id in s._observed or trial_id in repeated:
            continue
        config = trial["config"] if isinstance(trial["config"], dict) else None
        if trial["status"] in _FINISHED:
            result = trial["last_result"]
            if config is not None:
                result = {"config": config, **(result or {})}
            s.on_trial_complete(trial_id, result, error=trial["status"] == "ERROR")
            finished += trial_id in s._observed
        elif trial_id not in s._live:  # Tune reruns it
            x = s._adopt(trial_id, {"config": config})
            if x is not None:
                s._live[trial_id] = x
    if lost or finished:
        logger.warning(
            "RMBOSearcher: the searcher's state and Tune's disagree (a crash between their "
            "writes): %d trials finished in Tune's record were taken from it, and %d "
            "suggested trials Tune never recorded were closed (with the last value each "
            "reported, if any)",
            finished,
            len(lost),
        )
