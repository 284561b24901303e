"""The definition of a Tune benchmark task: a target and its meta-tasks on one workload.

A :class:`TuneTask` names a workload of :mod:`trainables` (its trainable, metric, mode and
search space), the fixed config of the target task and of each meta-task;
:mod:`rmbo_tune.bench.tasks` defines the suite's tasks and :mod:`rmbo_tune.bench.tune_runner`
runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TuneTask:
    """A target task and its meta-tasks on one :mod:`trainables` workload.

    Attributes
    ----------
    name : str
        Task name (used for directories and reports).
    workload : str
        A key of :data:`trainables.experiments.WORKLOADS` (``cnn``, ``siamese``, ``logreg``,
        ``cartpole``).
    target : dict
        Fixed config entries of the target task (e.g. ``{"stage": 5}``).
    meta_tasks : dict
        Meta-task name to its fixed config entries.
    fixed : dict
        Fixed config shared by target and meta-tasks (epochs, seed, ...).
    optimum : float, optional
        Best achievable metric, when known (CartPole: 1.0); regret otherwise uses the best
        value any method found.
    space : dict, optional
        Search space replacing the workload's default.
    metric : str, optional
        Metric replacing the workload's default (same direction unless ``mode`` is given).
    mode : {"min", "max"}, optional
        Direction of ``metric``.
    """

    name: str
    workload: str
    target: dict[str, Any]
    meta_tasks: dict[str, dict[str, Any]]
    fixed: dict[str, Any] = field(default_factory=dict)
    optimum: float | None = None
    space: dict[str, Any] | None = None
    metric: str | None = None
    mode: str | None = None

    def spec(self) -> tuple[Callable[[dict[str, Any]], None], str, str, dict[str, Any]]:
        """Trainable, metric, mode and search space of the workload.

        Returns
        -------
        tuple
            ``(trainable, metric, mode, space)``: the workload's, with this task's ``metric``,
            ``mode`` and ``space`` in place of the defaults where given.

        Raises
        ------
        ValueError
            If ``workload`` is not a key of :data:`trainables.experiments.WORKLOADS`.
        """
        from trainables.experiments import WORKLOADS

        if self.workload not in WORKLOADS:
            raise ValueError(
                f"unknown workload {self.workload!r}; expected one of {sorted(WORKLOADS)}"
            )
        fn, metric, mode, space = WORKLOADS[self.workload]
        return (
            fn,
            self.metric or metric,
            self.mode or mode,
            dict(self.space) if self.space is not None else space(),
        )
