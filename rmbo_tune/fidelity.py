"""Fidelity-aware observations, for searches run beside an early-stopping scheduler.

With ``ASHAScheduler``, ``HyperBandScheduler`` or ``MedianStoppingRule`` most trials are
stopped after a few epochs. Their last value is not a full-fidelity result: fed to the target
GP beside trials trained to the end, it would teach the model that a configuration is bad
because it was trained for 1 epoch instead of 20. :class:`FidelityTracker` keeps each
trial's learning curve (its value at each fidelity it reached) so that

* only a trial that reached ``max_fidelity`` is a target observation; a trial stopped
  before it is dropped from the pending points and not suggested again (its value never
  enters the target GP; see the last point for when the trial itself does);
* the values at each lower fidelity level (by default ``max_fidelity / 3^k``, or the
  scheduler's rungs) form a meta-task of the current search that grows while it runs
  (:meth:`rmbo_tune.engine.MetaBO.update_meta_task`): the engine weighs it by how well it
  ranks the full-fidelity results, and stops trusting it if the ranking is reversed;
* a stopped trial counts as worse than every finished one (:meth:`MetaBO.fail`) once the
  level it was stopped at is shown to rank like the next level up (the full budget above
  the highest): at least ``MIN_AGREE_TRIALS`` trials reached both, and fewer than
  ``AGREE_BELOW`` of their pairs are ordered differently. The scheduler's decision is
  then evidence that the configuration is poor, and the target GP learns to avoid its
  region; where the level misleads, the trial stays out of the target GP.

A trial's value at level ``L`` is the first one it reported at a fidelity ``>= L`` (what
ASHA compares at a rung milestone).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rmbo_tune.engine.meta_weights import ranking_gaps

LADDER_FACTOR = 3.0
# A level becomes a meta-task once this many trials reached it (a ranking needs pairs).
MIN_LEVEL_TRIALS = 3
# A level "ranks like the next one up" once this many trials reached both and fewer than
# this fraction of their pairs disagree (chance is 1/2).
MIN_AGREE_TRIALS = 4
AGREE_BELOW = 0.3


def default_levels(max_fidelity: float) -> list[float]:
    """``max_fidelity / 3^k`` for ``k >= 1`` down to 1, ascending."""
    levels, level = [], max_fidelity / LADDER_FACTOR
    while level >= 1.0:
        levels.append(level)
        level /= LADDER_FACTOR
    return sorted(levels)


def from_scheduler(scheduler: Any) -> dict[str, Any]:
    """``fidelity_attr``, ``max_fidelity`` and ``fidelity_levels`` read from a Tune scheduler.

    ASHA gives its rung milestones, HyperBand the milestones of its brackets (with
    ``stop_last_trials``, the default, its full fidelity is where its shortest bracket stops
    the trials that win it: ``int(max_t / eta^s) eta^s`` can fall short of ``max_t``, 9 for
    ``max_t=10, eta=3``), ``MedianStoppingRule`` only its time attribute (its stopping
    points are not a ladder, and it has no maximum: pass ``max_fidelity``). A
    ``ResourceChangingScheduler`` is read through the scheduler it wraps. FIFO gives
    nothing.

    Raises
    ------
    ValueError
        For ``PopulationBasedTraining`` (it changes a trial's configuration while it runs,
        so a trial's value belongs to no single configuration).
    TypeError
        For an object that is not a Tune scheduler.
    """
    from ray.tune.schedulers import (
        AsyncHyperBandScheduler,
        HyperBandScheduler,
        PopulationBasedTraining,
        ResourceChangingScheduler,
        TrialScheduler,
    )

    if isinstance(scheduler, PopulationBasedTraining):
        raise ValueError(
            "RMBOSearcher cannot be used with PopulationBasedTraining: PBT changes a trial's "
            "configuration while it runs, so its results belong to no single configuration "
            "(Tune refuses every search algorithm with PBT)"
        )
    if not isinstance(scheduler, TrialScheduler):
        raise TypeError(f"scheduler must be a Tune TrialScheduler, got {type(scheduler).__name__}")
    if isinstance(scheduler, ResourceChangingScheduler):
        return from_scheduler(scheduler._base_scheduler)
    out: dict[str, Any] = {}
    if isinstance(scheduler, AsyncHyperBandScheduler):
        max_t = float(scheduler._max_t)
        rungs = {float(m) for b in scheduler._brackets for m, _ in b._rungs}
        out = {"max_fidelity": max_t, "fidelity_levels": sorted(r for r in rungs if r < max_t)}
    elif isinstance(scheduler, HyperBandScheduler):
        max_t = float(scheduler._max_t_attr)
        milestones = hyperband_milestones(max_t, float(scheduler._eta), scheduler._s_max_1)
        full = min(m[-1] for m in milestones) if scheduler._stop_last_trials else max_t
        levels = {r for m in milestones for r in m if r < full}
        out = {"max_fidelity": full, "fidelity_levels": sorted(levels)}
    time_attr = getattr(scheduler, "_time_attr", None)  # FIFO has none
    if isinstance(time_attr, str):
        out["fidelity_attr"] = time_attr
    return out


def hyperband_milestones(max_t: float, eta: float, n_brackets: int) -> list[list[float]]:
    """The milestones of each of HyperBand's brackets, as Tune's ``HyperBandScheduler``
    sets them: bracket ``s`` starts at ``int(max_t / eta^s)`` (skipped when that is 0) and
    multiplies by ``eta`` at each of its ``s`` halvings, capped at ``max_t``."""
    out = []
    for s in range(n_brackets):
        r = int(max_t * eta ** (-s))
        if r == 0:
            continue
        steps = [float(r)]
        for _ in range(s):
            r = int(min(r * eta, max_t))
            steps.append(float(r))
        out.append(steps)
    return out


def finite_number(value: Any) -> float | None:
    """``value`` as a float if it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value) if math.isfinite(value) else None


class FidelityTracker:
    """Learning curves of the current search's trials, and its lower-fidelity meta-tasks.

    Parameters
    ----------
    attr : str
        The result key that measures fidelity (``"training_iteration"``, ``"epoch"``).
    max_fidelity : float or None
        The full fidelity. None: every completed trial is a target observation and there
        are no levels (the tracker is inactive).
    levels : sequence of float, optional
        Lower fidelity levels that become meta-tasks; default :func:`default_levels`.
    rung_meta_tasks : bool
        False: the levels are tracked (to judge stopped trials) but are not meta-tasks.
    """

    def __init__(
        self,
        attr: str = "training_iteration",
        max_fidelity: float | None = None,
        levels: Sequence[float] | None = None,
        rung_meta_tasks: bool = True,
    ) -> None:
        if not isinstance(attr, str) or not attr:
            raise ValueError(f"fidelity_attr must be a result key (a string), got {attr!r}")
        if max_fidelity is not None and (finite_number(max_fidelity) is None or max_fidelity <= 0):
            raise ValueError(f"max_fidelity must be a finite number > 0, got {max_fidelity!r}")
        if levels is not None:
            if isinstance(levels, str | bytes) or not isinstance(levels, Sequence):
                raise ValueError(f"fidelity_levels must be a list of numbers, got {levels!r}")
            if max_fidelity is None:
                raise ValueError("fidelity_levels needs max_fidelity (the full fidelity)")
            for v in levels:
                if finite_number(v) is None or not 0 < v < max_fidelity:
                    raise ValueError(
                        f"fidelity_levels must lie in (0, max_fidelity={max_fidelity!r}), "
                        f"got {v!r}"
                    )
        self.attr = attr
        self.max_fidelity = None if max_fidelity is None else float(max_fidelity)
        if self.max_fidelity is None:
            self.levels: list[float] = []
        elif levels is None:
            self.levels = default_levels(self.max_fidelity)
        else:
            self.levels = sorted({float(v) for v in levels})
        self.x: dict[str, list[float]] = {}
        self.reached: dict[str, float] = {}  # trial -> its latest fidelity
        self.values: dict[str, dict[float, float]] = {}  # trial -> level -> value
        self.full: dict[str, float] = {}  # trial -> full-fidelity value
        self.stopped: dict[str, float] = {}  # stopped trials not yet judged -> reached
        self.rung_meta_tasks = bool(rung_meta_tasks)
        self._changed: set[float] = set()

    @property
    def active(self) -> bool:
        """Whether early-stopped trials are told apart (``max_fidelity`` is known)."""
        return self.max_fidelity is not None

    def engine_options(self, method: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` with the default the level meta-tasks change: RM-GP-UCB (robust
        variant) weighs the tasks' means alone (``tau=0``) unless ``tau`` is given.

        The target observes only full-length trials, so nu decays slowly, and the
        committee's spread kept drawing suggestions to where nothing was observed (the CNN
        beside ASHA: 0.48 at 8 full trainings' worth, 0.32 with the means alone;
        ``docs/usage.md``).
        """
        out = dict(options)
        if (
            self.active
            and self.rung_meta_tasks
            and method == "rm-gp-ucb"
            and out.get("variant", "robust") == "robust"
        ):
            out.setdefault("tau", 0.0)
        return out

    def level_name(self, level: float) -> str:
        """The meta-task name of a level, e.g. ``"training_iteration=3"``."""
        return f"{self.attr}={level:g}"

    def observe(self, trial_id: str, x: Sequence[float], result: Mapping[str, Any], value: Any):
        """Record one result of a trial (``value``: its metric, to be maximized, or None)."""
        if not self.active:
            return
        fidelity = finite_number(result.get(self.attr))
        if fidelity is None:
            return
        self.x[trial_id] = list(x)
        # The latest, not the highest: a paused trial without checkpoints resumes from
        # scratch (MedianStoppingRule pauses trials), and its last life is what it ended at.
        self.reached[trial_id] = fidelity
        value = finite_number(value)
        if value is None:
            return
        curve = self.values.setdefault(trial_id, {})
        for level in self.levels:
            if fidelity >= level and level not in curve:
                curve[level] = value
                self._changed.add(level)

    def is_full(self, trial_id: str, result: Mapping[str, Any] | None) -> bool:
        """Whether the trial reached the full fidelity (always True when inactive)."""
        if not self.active:
            return True
        assert self.max_fidelity is not None
        final = finite_number((result or {}).get(self.attr))
        reached = self.reached.get(trial_id, -math.inf) if final is None else final
        return reached >= self.max_fidelity

    def finish(self, trial_id: str, value: float | None, full: bool) -> None:
        """A trial ended: at the full fidelity with ``value`` (maximized), or stopped."""
        if full:
            if value is not None and math.isfinite(value):
                self.full[trial_id] = float(value)
        else:
            self.stopped[trial_id] = self.reached.get(trial_id, 0.0)

    def agrees(self, level: float) -> bool:
        """Whether ``level`` has been shown to rank trials as the next level up does (the
        full fidelity above the highest level): the scheduler's decision there then
        predicts how a stopped trial would have gone on."""
        above = [lv for lv in self.levels if lv > level]
        if above:
            nxt = min(above)
            pairs = [(c[level], c[nxt]) for c in self.values.values() if level in c and nxt in c]
        else:
            pairs = [
                (self.values[t][level], v)
                for t, v in self.full.items()
                if level in self.values.get(t, {})
            ]
        if len(pairs) < MIN_AGREE_TRIALS:
            return False
        a, b = np.array(pairs).T
        return bool(ranking_gaps(a[None, :], b, scale=1.0)[0] < AGREE_BELOW)

    def judged_worse(self) -> list[str]:
        """Stopped trials whose level now ranks like the next one up (each returned once):
        they count as worse than every finished trial."""
        out = []
        for trial_id, reached in list(self.stopped.items()):
            curve = self.values.get(trial_id, {})
            levels = [lv for lv in self.levels if lv <= reached and lv in curve]
            if levels and self.agrees(max(levels)):
                out.append(trial_id)
                del self.stopped[trial_id]
        return out

    def changed_tasks(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """``(name, X, y)`` of every level whose data changed since the last call and that
        at least ``MIN_LEVEL_TRIALS`` trials reached (none without ``rung_meta_tasks``)."""
        if not self.rung_meta_tasks:
            return []
        out = []
        for level in sorted(self._changed):
            ids = [t for t, curve in self.values.items() if level in curve]
            if len(ids) < MIN_LEVEL_TRIALS:
                continue
            X = np.array([self.x[t] for t in ids], dtype=np.float64)
            y = np.array([self.values[t][level] for t in ids], dtype=np.float64)
            out.append((self.level_name(level), X, y))
            self._changed.discard(level)
        return out

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-able state."""
        return {
            "x": self.x,
            "reached": self.reached,
            "values": {t: [[lv, v] for lv, v in c.items()] for t, c in self.values.items()},
            "changed": sorted(self._changed),
            "full": self.full,
            "stopped": self.stopped,
        }

    def relevel(self) -> None:
        """Mark every level with values as changed, so that each becomes a meta-task again
        (for an engine rebuilt without them)."""
        self._changed = {lv for c in self.values.values() for lv in c}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Inverse of :meth:`state_dict`."""
        self.x = {t: list(v) for t, v in state["x"].items()}
        self.reached = {t: float(v) for t, v in state["reached"].items()}
        self.values = {
            t: {float(lv): float(v) for lv, v in pairs} for t, pairs in state["values"].items()
        }
        self._changed = {float(v) for v in state["changed"]}
        self.full = {t: float(v) for t, v in state.get("full", {}).items()}
        self.stopped = {t: float(v) for t, v in state.get("stopped", {}).items()}
