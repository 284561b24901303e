"""A Tune benchmark task's workload spec."""

from __future__ import annotations

import pytest

from rmbo_tune.bench.tune_task import TuneTask


def test_unknown_workload_is_named() -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        TuneTask("x", "xgboost", {}, {}).spec()


def test_spec_overrides_the_workload_defaults() -> None:
    from trainables.experiments import WORKLOADS

    fn, metric, mode, space = TuneTask("t", "logreg", {}, {}).spec()
    assert (fn, metric, mode) == WORKLOADS["logreg"][:3]
    assert set(space) == set(WORKLOADS["logreg"][3]())
    task = TuneTask("t", "logreg", {}, {}, space={"lr": 0.1}, metric="val_loss")
    assert task.spec()[1:] == ("val_loss", "min", {"lr": 0.1})
