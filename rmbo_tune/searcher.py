"""RMBOSearcher: a Ray Tune ``Searcher`` running the meta-BO engine.

A thin adapter: Tune configs are encoded into the unit cube (:mod:`rmbo_tune.space`),
``mode="min"`` is negated (the engine maximizes), and everything else is the engine's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.tune.search import Searcher

from rmbo_tune import searcher_state
from rmbo_tune.diagnostics import HISTORY_FILE, name_by_task, write_history
from rmbo_tune.engine import MetaBO, MetaBOOptions, SearchSpaceExhausted
from rmbo_tune.engine.methods import METHODS
from rmbo_tune.engine.threads import one_blas_thread
from rmbo_tune.exceptions import OutOfSpaceError
from rmbo_tune.fidelity import FidelityTracker, from_scheduler
from rmbo_tune.meta_tasks._compact import PendingMetaTasks
from rmbo_tune.space import SearchSpace, flatten, has_domains, unflatten
from rmbo_tune.space_codec import config_to_json

logger = logging.getLogger(__name__)

# Trials ended without one at the full budget before that is named as a likely mistake.
NEVER_FULL_AFTER = 10
_COUNTS = (
    "observed",
    "errored",
    "non_finite",
    "non_numeric",
    "missing_metric",
    "not_run",
    "stopped_early",
    "stopped_judged_worse",
    "added",
    "added_pruned",
    "dropped_meta_configs",
)


def _metric_value(result: Mapping[str, Any], metric: str) -> Any:
    """``result[metric]``, ``"a/b"`` also read from nested results; None if absent. A 0-d
    array or tensor (numpy, torch, jax) is read as its Python number."""
    value = flatten(result).get(tuple(metric.split("/")), result.get(metric))
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return value.item()
    return value


def _rewards(values: Sequence[Any]) -> list[float]:
    """``evaluated_rewards`` as floats; a value that is not a finite number is named."""
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"evaluated_rewards[{i}] = {v!r} is not a finite number")
        out.append(float(v))
    return out


class RMBOSearcher(Searcher):
    """Robust meta-Bayesian optimization (RM-GP-UCB / RM-GP-TS) as a Ray Tune searcher.

    Parameters
    ----------
    space : dict, optional
        A Tune search space; usually left out and taken from ``Tuner(param_space=...)``.
    metric, mode : str, optional
        Objective and direction ("min" or "max"); may come from ``TuneConfig`` instead.
    meta_tasks : optional
        Results of earlier tasks: one source, a list, or a dict naming them. A source is a
        Tune experiment directory, a glob, a storage URI, a directory of experiments, a
        ``ResultGrid``/``ExperimentAnalysis``, a DataFrame or CSV file, a ``MetaTask`` or a
        ``(configs, values)`` pair (see :func:`rmbo_tune.load_meta_tasks`). Paths are read
        (JSON only, never pickles) when the search starts.
    meta_scope : {"best", "last"}
        A meta-task trial's value: its best reported value, or its last.
    meta_metric_map : dict, optional
        Metrics recorded under another name or sign, e.g. ``{"neg_loss": -1}``.
    method : str
        One of :data:`rmbo_tune.engine.METHODS` (default "rm-gp-ucb").
    points_to_evaluate : list of dict, optional
        Configs to run first (missing keys take the middle of their range).
    evaluated_rewards : list of float, optional
        Results of ``points_to_evaluate``: those points are then observed, not run.
    seed : int, optional
        Makes suggestions reproducible (with sequential trials).
    max_fidelity : float, optional
        The full training budget in units of ``fidelity_attr`` (the scheduler's ``max_t``).
        Given (or read from ``scheduler``), a trial an early-stopping scheduler stopped
        before it is not a target observation, and the search's results at lower fidelity
        levels become meta-tasks that grow while it runs (see :mod:`rmbo_tune.fidelity`).
        With those level meta-tasks, RM-GP-UCB's ``tau`` defaults to 0 (the tasks' means
        alone; ``docs/usage.md``).
    fidelity_attr : str
        The result key that measures training progress (default "training_iteration").
    fidelity_levels : list of float, optional
        The lower levels that become meta-tasks (default ``max_fidelity / 3^k``, or the
        scheduler's rungs).
    rung_meta_tasks : bool
        False leaves the lower levels out (early-stopped trials are still not observed).
    scheduler : TrialScheduler, optional
        The scheduler given to Tune, read for the three options above (ASHA, HyperBand);
        ``PopulationBasedTraining`` is refused.
    **options
        Engine options (see :class:`rmbo_tune.engine.MetaBOOptions`), e.g. ``kernel="se"``.

    Examples
    --------
    >>> searcher = RMBOSearcher(meta_tasks=[(old_configs, old_scores)], metric="acc", mode="max")
    >>> tuner = tune.Tuner(train, param_space=space,
    ...                    tune_config=tune.TuneConfig(search_alg=searcher, num_samples=30))
    """

    def __init__(
        self,
        space: Mapping[str, Any] | None = None,
        metric: str | None = None,
        mode: str | None = None,
        meta_tasks: Any = None,
        method: str = "rm-gp-ucb",
        points_to_evaluate: Sequence[Mapping[str, Any]] | None = None,
        evaluated_rewards: Sequence[float] | None = None,
        seed: int | None = None,
        meta_scope: str = "best",
        meta_metric_map: Mapping[str, Any] | None = None,
        max_fidelity: float | None = None,
        fidelity_attr: str | None = None,
        fidelity_levels: Sequence[float] | None = None,
        rung_meta_tasks: bool = True,
        scheduler: Any = None,
        **options: Any,
    ) -> None:
        if mode not in (None, "min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if metric is not None and (not isinstance(metric, str) or not metric):
            raise ValueError(f"metric must be a metric name (a string), got {metric!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if seed is not None and (
            not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0
        ):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        given = {"max_fidelity": max_fidelity, "fidelity_attr": fidelity_attr}
        given["fidelity_levels"] = fidelity_levels
        read = from_scheduler(scheduler) if scheduler is not None else {}
        if (
            isinstance(max_fidelity, numbers.Real)
            and fidelity_levels is None
            and "fidelity_levels" in read
        ):
            # The full budget given here, not the scheduler's: its rungs above it are not levels.
            read["fidelity_levels"] = [v for v in read["fidelity_levels"] if v < max_fidelity]
        fid = {k: v if v is not None else read.get(k) for k, v in given.items()}
        self._fidelity = FidelityTracker(
            fid["fidelity_attr"] or "training_iteration",
            fid["max_fidelity"],
            fid["fidelity_levels"],
            rung_meta_tasks,
        )
        # Names unknown options; with level meta-tasks RM-GP-UCB's tau defaults to 0.
        engine_options = MetaBOOptions.from_kwargs(self._fidelity.engine_options(method, options))
        super().__init__(metric=metric, mode=mode)
        self._method, self._seed, self._options = method, seed, engine_options
        self._space = SearchSpace.from_tune(space) if space else None
        self._meta = PendingMetaTasks(meta_tasks, meta_scope, meta_metric_map)
        self._task_names: list[str] = []
        self._points = [dict(p) for p in points_to_evaluate or []]
        if evaluated_rewards is not None and len(evaluated_rewards) != len(self._points):
            raise ValueError(
                f"evaluated_rewards has {len(evaluated_rewards)} values for "
                f"{len(self._points)} points_to_evaluate"
            )
        self._rewards = None if evaluated_rewards is None else _rewards(evaluated_rewards)
        self._max_concurrent: int | None = None
        self._engine: MetaBO | None = None
        self._live: dict[str, list[float]] = {}
        # Restored live trials Tune has not reported on since: they hold no concurrency
        # slot until it does (Tune skips them under resume_unfinished=False, silently).
        self._unconfirmed: set[str] = set()
        self._reported: dict[str, Any] = {}  # latest value of the metric per live trial
        self._observed: set[str] = set()
        self._history: list[dict] = []
        # Results given with add_evaluated_point: not suggestions, so not in the history,
        # but kept (with the number of suggestions made before each) to rebuild the search.
        self._added: list[dict] = []
        self.counts = dict.fromkeys(_COUNTS, 0)
        self._warned_never_full = False
        self._ended_short = 0  # trials stopped short of max_fidelity away from its levels

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        """Called by Tune with ``TuneConfig``'s metric/mode and the ``param_space``."""
        if self._space is not None and config and has_domains(config):
            return False  # a space given twice: Tune raises a clear error for this
        if self._engine is not None:
            return False
        for name, mine, given in (("metric", self._metric, metric), ("mode", self._mode, mode)):
            if mine and given and mine != given:
                raise ValueError(
                    f"RMBOSearcher was given {name}={mine!r} but TuneConfig has {name}="
                    f"{given!r}; give the {name} in one place"
                )
        if config and self._space is None:
            self._space = SearchSpace.from_tune(config)
        self._metric = metric or self._metric
        if mode and mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        self._mode = mode or self._mode
        if self._space is not None:
            for i, point in enumerate(self._points):  # refuse now, not at the 1st suggestion
                try:
                    self._space.encode_partial(point)
                except OutOfSpaceError as exc:
                    raise ValueError(f"points_to_evaluate[{i}]: {exc}") from None
        return True

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        """Honour ``TuneConfig(max_concurrent_trials=...)`` here (no ConcurrencyLimiter)."""
        self._max_concurrent = int(max_concurrent) if max_concurrent else None
        return True

    @one_blas_thread
    def suggest(self, trial_id: str) -> dict | str | None:
        """The next config, None to wait (concurrency limit), or FINISHED (space exhausted)."""
        engine = self._ensure_engine()
        busy = len(self._live) - len(self._unconfirmed)
        if self._max_concurrent and busy >= self._max_concurrent:
            return None
        given = None
        if self._points:
            given = self._points.pop(0)
            x = self._encode_point(given)
            engine.add_pending(x)
            record: dict[str, Any] = {**engine.trust(), "branch": "points_to_evaluate"}
            record["x"] = x.tolist()
        else:
            self._update_levels(engine)
            try:
                x = engine.ask()
            except SearchSpaceExhausted:
                logger.warning(
                    "RMBOSearcher: every configuration of the search space has been tried "
                    "or is running; the search ends here (before num_samples)"
                )
                return Searcher.FINISHED
            record = dict(engine.history[-1])
        assert self._space is not None
        config = self._space.decode(x) if given is None else self._space.decode_as_given(x, given)
        self._live[trial_id] = x.tolist()
        record.update(trial_id=trial_id, config=config_to_json(config))
        self._history.append(name_by_task(record, self._task_names))
        return config

    @one_blas_thread
    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Remember the trial's latest value of the metric, for a final result without it,
        and (with ``max_fidelity``) its value at each fidelity level it reached."""
        self._unconfirmed.discard(trial_id)
        self._reopen(trial_id)
        if trial_id not in self._live and trial_id not in self._observed:
            # Tune runs a trial this searcher never suggested (restart_errored's new ids):
            # its point is pending from now, and it holds a concurrency slot.
            x = self._adopt(trial_id, result)
            if x is not None:
                self._live[trial_id] = x
        value = _metric_value(result, self._metric) if self._metric else None
        numeric = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if trial_id in self._live and numeric:
            self._reported[trial_id] = float(value)
            self._fidelity.observe(trial_id, self._live[trial_id], result, self._sign * value)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        """Tell the engine the trial's final metric (or its failure); never twice. Without
        the metric in the final result, the last value the trial reported for it counts."""
        if not error and result is not None:
            self._reopen(trial_id)
        x = self._live.pop(trial_id, None)
        self._unconfirmed.discard(trial_id)
        last = self._reported.pop(trial_id, None)
        if x is None and trial_id not in self._observed:
            x = self._adopt(trial_id, result)
        if x is None or trial_id in self._observed or self._engine is None:
            return
        self._observed.add(trial_id)
        if (
            last is not None
            and not error
            and _metric_value(result or {}, self._metric or "") is None
        ):
            # No final result (a trial paused when the run ended, as HyperBand leaves them),
            # or one without the metric: the last value the trial reported counts.
            result = {**(result or {}), self._metric: last}
        if result and not error:  # a scheduler's stopping result reaches only this method
            value = _metric_value(result, self._metric or "")
            numeric = isinstance(value, numbers.Real) and not isinstance(value, bool)
            self._fidelity.observe(trial_id, x, result, self._sign * value if numeric else None)
        if not error and result is not None and not self._fidelity.is_full(trial_id, result):
            y, outcome = None, "stopped"  # stopped early: not a full-fidelity value
            self.counts["stopped_early"] += 1
            self._warn_if_never_full(trial_id)
            self._engine.drop(x)
        else:
            y, outcome = self._objective(result, error)
        if outcome == "failed":  # worse than every success: its region is not proposed again
            self._engine.fail(x)
        elif outcome == "dropped" and result is not None:
            # It ran and told nothing usable: run again, it would tell the same, and
            # the unchanged model would suggest it at once.
            self._engine.drop(x)
        elif outcome != "stopped":
            self._engine.tell(x, y)
        if self._fidelity.active and outcome in ("observed", "stopped"):
            self._fidelity.finish(trial_id, y, full=outcome == "observed")
        record = self._record(trial_id)
        if record is not None:
            record["outcome"] = outcome
            if y is not None:
                record["value"] = self._sign * y  # as reported; restores use it

    def _warn_if_never_full(self, trial_id: str) -> None:
        """Warn once when many trials ended short of ``max_fidelity`` between its levels
        (a scheduler stops trials at its rungs) and none reached it: a trainable that ends
        before the scheduler's ``max_t`` (ASHA's default is 100) is never observed, and
        the search would run on its level meta-tasks alone."""
        fid = self._fidelity
        reached = fid.reached.get(trial_id, 0.0)
        # A scheduler stops a trial at its first report at or past a level.
        if not any(level <= reached < level + 1 for level in fid.levels):
            self._ended_short = getattr(self, "_ended_short", 0) + 1
        if (
            getattr(self, "_warned_never_full", False)
            or fid.full
            or getattr(self, "_ended_short", 0) < NEVER_FULL_AFTER
        ):
            return
        self._warned_never_full = True
        furthest = max(fid.reached.values(), default=float("nan"))
        logger.warning(
            "RMBOSearcher: %d trials ended between the fidelity levels and none reached "
            "%s=%g, the full budget (the furthest reached %g), so none is observed. If your "
            "trainable ends before the scheduler's max_t, give the scheduler max_t=<its last "
            "%s> (or pass max_fidelity=)",
            self._ended_short,
            fid.attr,
            fid.max_fidelity,
            furthest,
            fid.attr,
        )

    def _reopen(self, trial_id: str) -> None:
        """A trial observed as failed reports again: Tune reruns it under its id
        (``Tuner.restore(..., resume_errored=True)``). Its failure is taken back and it runs
        again, so that its new outcome counts instead."""
        if trial_id not in self._observed or self._engine is None:
            return
        record = self._record(trial_id)
        if record is None or record.get("outcome") != "failed":
            return
        try:
            self._engine.retry(record["x"])
        except ValueError:  # its failure is not in the engine (told elsewhere): run it anyway
            self._engine.add_pending(record["x"])
        self._observed.discard(trial_id)
        self._live[trial_id] = record["x"]
        record["outcome"] = None
        record["rerun"] = record.get("rerun", 0) + 1

    def _record(self, trial_id: str) -> dict | None:
        """The history record of ``trial_id`` (its latest suggestion)."""
        for record in reversed(self._history):
            if record.get("trial_id") == trial_id:
                return record
        return None

    @one_blas_thread
    def add_evaluated_point(
        self,
        parameters: dict,
        value: float,
        error: bool = False,
        pruned: bool = False,
        intermediate_values: list[float] | None = None,
    ) -> None:
        """Observe a config evaluated elsewhere (``add_evaluated_trials`` calls this).

        A ``pruned`` trial (stopped by a scheduler) is not observed: its value is one at a
        lower fidelity, which the searcher never takes for a full one, as with the trials
        a scheduler stops in its own search (``counts["added_pruned"]``).
        """
        if pruned:
            self.counts["added_pruned"] += 1
            return
        engine = self._ensure_engine()
        assert self._space is not None
        try:
            x = self._space.encode(parameters)
        except OutOfSpaceError as exc:
            logger.warning("RMBOSearcher: ignoring an evaluated point outside the space: %s", exc)
            return
        y, outcome = self._objective(None if error else {self._metric: value}, error)
        if outcome == "failed":
            engine.fail(x)
        elif y is not None:
            engine.tell(x, y)
            self.counts["added"] += 1
        if outcome in ("failed", "observed"):
            record = {"x": x.tolist(), "outcome": outcome, "after": len(self._history)}
            if outcome == "observed":
                record["value"] = self._sign * y
            self._added.append(record)

    def save(self, checkpoint_path: str) -> None:
        """Write the state as JSON (never a pickle), and ``rmbo_history.json`` beside it."""
        state = searcher_state.dump(self)
        # json.dumps, not json.dump: only the one-shot encoder runs in C (several times
        # faster on a long history, and Tune saves the searcher periodically).
        with open(checkpoint_path, "w") as fh:
            fh.write(json.dumps(state))
        write_history(
            os.path.join(os.path.dirname(checkpoint_path) or ".", HISTORY_FILE),
            self._history,
            metric=self._metric,
            mode=self._mode,
            meta_tasks=self._task_names,
            counts=self.counts,
            space=state["space"],
            added=self._added,
            fidelity=self._fidelity.state_dict() if self._fidelity.active else None,
        )

    @one_blas_thread
    def restore(self, checkpoint_path: str) -> None:
        """Load state written by :meth:`save`; a damaged file is rebuilt from the history
        beside it, or named in the error. Trials on which the saved state and Tune's
        experiment state beside it disagree are settled from Tune's record (see
        :func:`rmbo_tune.searcher_state.reconcile`); trials still running hold no
        concurrency slot until Tune reports on them again."""
        try:
            with open(checkpoint_path) as fh:
                state = json.load(fh)
        except (OSError, ValueError) as exc:
            damaged = f"its saved state {checkpoint_path} is damaged ({exc})"
            searcher_state.recover(self, checkpoint_path, damaged)
        else:
            searcher_state.load(self, state, checkpoint_path)
        searcher_state.reconcile(self, os.path.dirname(checkpoint_path) or ".")
        # Tune reruns these under their ids (the default) or skips them without a word
        # (resume_unfinished=False); like Ray's ConcurrencyLimiter, which forgets them,
        # they do not block new trials, but they count again once Tune reports on them.
        self._unconfirmed = set(self._live)

    def __getstate__(self) -> dict:
        # tuner.pkl holds the constructed searcher: keep it small (no engine, no GP caches);
        # the engine's state travels in the JSON checkpoint written by save().
        return {**self.__dict__, "_engine": None}

    @property
    def history(self) -> list[dict]:
        """One record per suggestion: trial id, config, nu, meta-weights by task name,
        gaps by task name, branch (which part of the acquisition chose the point)."""
        return self._history

    @property
    def engine(self) -> MetaBO | None:
        """The underlying engine (None before the first suggestion)."""
        return self._engine

    def _ensure_engine(self) -> MetaBO:
        if self._engine is not None:
            return self._engine
        if self._metric is None:
            raise ValueError(
                "RMBOSearcher needs a metric: pass metric= to RMBOSearcher or to "
                "tune.TuneConfig(metric=...)"
            )
        if self._mode is None:
            raise ValueError(
                "RMBOSearcher needs a mode: pass mode='min' or 'max' to RMBOSearcher or to "
                "tune.TuneConfig(mode=...)"
            )
        if self._space is None or self._space.dim == 0:
            raise ValueError(
                "RMBOSearcher has no search space: pass param_space to tune.Tuner (or config "
                "to tune.run), or space= to RMBOSearcher, with at least one tune domain"
                + (f"; {self._damaged}" if getattr(self, "_damaged", None) else "")
            )
        space, options = self._space, dataclasses.asdict(self._options)
        fid = self._fidelity
        full = (fid.attr, fid.max_fidelity) if fid.max_fidelity is not None else None
        meta, self._task_names, dropped = self._meta.for_engine(
            space, self._metric, self._mode, full
        )
        self.counts["dropped_meta_configs"] += dropped
        self._engine = MetaBO(
            space.dim, meta, self._method, seed=self._seed, project=space.project, **options
        )
        # Only RM-GP-UCB reads the meta term (resolving "auto" predicts every task).
        if self._method == "rm-gp-ucb" and (source := self._engine.meta_term_source) in (
            "searched",
            "disagreement",
        ):
            logger.info(
                "RMBOSearcher: %s, so the first suggestions take TAF's form "
                "(meta_term='taf'; pass meta_term='mean' for eq. 2 of the paper)",
                f"the earlier experiments' trials look like a search's (crowding correlation "
                f"{self._engine.searched_score:.2f})"
                if source == "searched"
                else f"the earlier experiments fall into groups with different best "
                f"configurations (disagreement {self._engine.disagreement:.3f})",
            )
        if self._rewards is not None:
            for point, reward in zip(self._points, self._rewards, strict=True):
                self._engine.tell(self._encode_point(point), self._sign * reward)
            self._points, self._rewards = [], None
        return self._engine

    def _adopt(self, trial_id: str, result: dict | None) -> list[float] | None:
        """The point of a trial this searcher never suggested, from its config, made pending.

        After a driver kill between Tune's write of its experiment state and the searcher's,
        a restored Tune knows trials the restored searcher does not; their results still
        count (trials Tune created from ``points_to_evaluate`` of another searcher too).
        ``Tuner.restore(..., restart_errored=True)`` runs each errored trial again under a
        new id: a failure observed at the same point is then taken back (the errored trial
        is gone from Tune's results), and the new trial's outcome counts instead."""
        result = result or {}
        config = result.get("config")
        if config is None:  # Tune hands searchers flattened results: "config/lr", ...
            flat = {
                tuple(k.split("/")[1:]): v for k, v in result.items() if k.startswith("config/")
            }
            config = unflatten(flat) if flat else None
        if self._engine is None or self._space is None or not isinstance(config, Mapping):
            return None
        try:
            x = self._space.encode(config)
        except OutOfSpaceError:
            return None
        tol = self._engine.options.duplicate_tol
        failed = [
            r
            for r in self._history
            if r.get("outcome") == "failed"
            and "restarted_as" not in r
            and np.linalg.norm(np.subtract(r["x"], x)) <= tol
        ]
        if failed:
            self._engine.retry(x)
            failed[-1]["restarted_as"] = trial_id
        else:
            self._engine.add_pending(x)
        record = {"trial_id": trial_id, **self._engine.trust(), "branch": "adopted"}
        record.update(x=x.tolist(), config=config_to_json(self._space.decode(x)))
        self._history.append(name_by_task(record, self._task_names))
        return x.tolist()

    def _update_levels(self, engine: MetaBO) -> None:
        """Hand the lower-fidelity levels that gained trials to the engine, and count the
        stopped trials whose level now ranks like the full budget as worse than every
        finished one (see :mod:`rmbo_tune.fidelity`)."""
        for trial_id in self._fidelity.judged_worse():
            engine.fail(self._fidelity.x[trial_id])
            self.counts["stopped_judged_worse"] += 1
            record = self._record(trial_id)
            if record is not None:
                record["stopped_as"] = "worse"
        changed = self._fidelity.changed_tasks()
        for name, X, y in changed:
            engine.update_meta_task(name, X, y)
        if changed:
            self._task_names = self._task_names[: engine.n_given_tasks] + engine.online_tasks

    @property
    def _sign(self) -> float:
        return 1.0 if self._mode == "max" else -1.0  # the engine maximizes

    def _encode_point(self, config: Mapping[str, Any]) -> np.ndarray:
        assert self._space is not None
        try:
            return self._space.encode_partial(config)
        except OutOfSpaceError as exc:
            raise ValueError(f"points_to_evaluate: {exc}") from None

    def _objective(self, result: dict | None, error: bool) -> tuple[float | None, str]:
        """The value to maximize and the outcome: "observed"; "failed" (an error or a
        non-finite value: the configuration is to blame); "dropped" (no usable value, as for
        a trial Tune stopped before it ran: no result and no error)."""
        if error:
            self.counts["errored"] += 1
            return None, "failed"
        if result is None:
            self.counts["not_run"] += 1
            return None, "dropped"
        value = _metric_value(result, self._metric)
        if value is None:
            self.counts["missing_metric"] += 1
            return None, "dropped"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            # "0.5" or True is a bug in the trainable, not a measurement: never coerced.
            self.counts["non_numeric"] += 1
            logger.warning(
                "RMBOSearcher: trial reported %s=%r, not a number; it is not observed",
                self._metric,
                value,
            )
            return None, "dropped"
        v = float(value)
        if not math.isfinite(v):
            self.counts["non_finite"] += 1
            return None, "failed"
        self.counts["observed"] += 1
        return self._sign * v, "observed"
