"""The early-stopping benchmark: curve files, the ASHA replay, budgets and the methods."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import early_stopping as es

GRID = list(itertools.product([0.01, 0.1, 1.0], [3, 7, 15], [2, 10], [0.1, 10.0]))
COLUMNS = ["learning_rate", "max_leaf_nodes", "min_samples_leaf", "l2_regularization"]


def _value(config, fidelity, shift):
    lr, leaves, leaf, l2 = config
    final = 0.9 - (math.log10(lr) + 1 - shift) ** 2 / 10 - abs(math.log(leaves / 7)) / 20
    speed = min(1.0, lr * fidelity)  # slow learning rates look bad early
    return final * (0.5 + 0.5 * speed) - l2 / 1000 + leaf / 1000


def write_curves(folder: Path, shifts=(0.0, 0.2, -0.1)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k, shift in enumerate(shifts):
        with open(folder / f"task{k}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([*COLUMNS, "iterations", "value"])
            for config in GRID:
                for f in es.FIDELITIES:
                    w.writerow([*config, f, round(_value(config, f, shift), 6)])
    return folder


def test_load_curves(tmp_path):
    curves = es.load_curves(write_curves(tmp_path / "c"))
    assert curves.names == ["task0", "task1", "task2"]
    assert curves.values.shape == (3, len(GRID), len(es.FIDELITIES))
    assert curves.X.shape == (len(GRID), 4) and curves.X.min() == 0 and curves.X.max() == 1
    row = curves.configs.index((0.1, 7.0, 10.0, 0.1))
    assert curves.values[1, row, -1] == pytest.approx(_value((0.1, 7, 10, 0.1), 81, 0.2), abs=1e-6)


def test_load_curves_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no learning-curve"):
        es.load_curves(tmp_path)
    folder = write_curves(tmp_path / "c")
    lines = (folder / "task1.csv").read_text().splitlines()
    (folder / "task1.csv").write_text("\n".join(lines[:-1]) + "\n")  # one fidelity missing
    with pytest.raises(ValueError, match="lacks some of the fidelities"):
        es.load_curves(folder)


def test_the_shipped_curves_load():
    curves = es.load_curves()
    assert len(curves.names) >= 20 and curves.values.shape[1:] == (240, len(es.FIDELITIES))
    assert np.isfinite(curves.values).all()


def test_asha_replays_tunes_rule():
    from ray.tune.experiment import Trial
    from ray.tune.schedulers.async_hyperband import _Bracket

    rng = np.random.default_rng(0)
    values = rng.uniform(size=40)
    ours = es.ASHA()
    bracket = _Bracket(1, 81, 3, 0)
    for k, v in enumerate(values):
        trial = Trial("__fake", trial_id=f"t{k}", stub=True)
        tune_stops = bracket.on_result(trial, 1, v) == "STOP"
        assert ours.stops(1, v) == tune_stops


def test_reverse_rung1():
    values = np.array([[[0.2, 0.5], [0.8, 0.6], [0.5, 0.9]]])
    out = es.reverse_rung1(values)
    np.testing.assert_allclose(out[0, :, 0], [0.8, 0.2, 0.5])
    np.testing.assert_allclose(out[0, :, 1], values[0, :, 1])


@pytest.mark.parametrize("method", es.METHODS)
def test_search_spends_the_budget_and_scores_full_trainings(tmp_path, method):
    curves = es.load_curves(write_curves(tmp_path / "c"))
    record = es.search(method, curves, task=0, seed=1, budget=4)
    assert len(record["values"]) == 4
    full = curves.values[0, :, -1]
    assert record["optimum"] == full.max() and record["worst"] == full.min()
    found = [v for v in record["values"] if math.isfinite(v)]
    assert found == sorted(found) and set(found) <= set(full.tolist())
    if method == "rmbo":
        assert len(record["seconds"]) == 4  # every trial trains to the end
    else:
        assert len(record["seconds"]) > 4  # most trials are stopped early


def test_rung_meta_tasks_grow_and_stopped_values_stay_out(tmp_path):
    curves = es.load_curves(write_curves(tmp_path / "c"))
    sugg = es._Suggester("rmbo+asha", curves, seed=0)
    asha, told = es.ASHA(), 0
    for trial in range(30):
        index, x = sugg.ask()
        for f, v in zip(es.FIDELITIES, curves.values[0, index], strict=True):
            stop = asha.stops(f, v)
            sugg.report(trial, x, f, v)
            if f == es.MAX_FIDELITY or stop:
                sugg.finish(trial, x, f, v)
                told += f == es.MAX_FIDELITY
                break
    engine = sugg.engine
    assert len(engine.y) == told < 30
    assert engine.online_tasks[0] == "iterations=1"
    # Each ask hands over the levels as they stand: the last trial's results came after.
    assert engine.meta.sizes[0] == 29 and len(engine.excluded) == 30 - told


def test_cli_writes_the_table(tmp_path, capsys):
    folder = write_curves(tmp_path / "c")
    es.main(
        [
            "--data",
            str(folder),
            "--seeds",
            "1",
            "--budget",
            "2",
            "--methods",
            "rmbo+asha,random+asha",
            "--processes",
            "1",
            "--reverse-rung1",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    out = capsys.readouterr().out
    assert "| rmbo+asha | 3 |" in out and "| random+asha | 3 |" in out
    assert (tmp_path / "out" / "results.json").exists()
    with pytest.raises(SystemExit):
        es.main(["--data", str(folder), "--methods", "bohb"])
