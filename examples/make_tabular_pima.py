"""Make a tabular benchmark from Tune grid searches: Pima logistic regression, one CSV per stage.

``rmbo-tune bench tabular --data DIR`` reads a directory with one CSV per task, each a grid of
configs and their metric (format: :mod:`rmbo_tune.bench.tabular`). This script produces such
a directory from real Tune runs: for each of the five Pima stages (:mod:`trainables.logreg`)
it runs one ``tune.grid_search`` experiment over batch size, L2 penalty and learning rate and
writes ``<out>/stage<k>.csv`` with the columns ``batch_size, l2, lr, value`` (``value``: the
validation log loss after ``--epochs`` epochs); Ray's own log lines go to ``<out>/ray.log``.
Offline, CPU only; with the default 5 x 5 x 5 grid (625 trials) about two minutes on two
cores::

    python examples/make_tabular_pima.py --out /tmp/pima-tabular
    rmbo-tune bench tabular --data /tmp/pima-tabular --mode min --targets stage5 \\
        --out /tmp/pima-tabular-results

The same recipe turns any sweep you already ran into a tabular benchmark: one CSV per task
with the hyperparameter columns and one metric column.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import ray
from ray import tune

from rmbo_tune.bench.console import ray_logs_to_file
from trainables import logreg

PARAMS = ("batch_size", "l2", "lr")


def grid(n: int) -> dict[str, dict]:
    """``n`` values per hyperparameter over the paper's ranges (L2 log-spaced)."""
    return {
        "batch_size": tune.grid_search([int(v) for v in np.linspace(20, 60, n).round()]),
        "l2": tune.grid_search([float(v) for v in np.geomspace(1e-6, 1e-2, n)]),
        "lr": tune.grid_search([float(v) for v in np.linspace(0.01, 0.1, n)]),
    }


def stage_table(stage: int, n: int, epochs: int, storage: str) -> list[dict]:
    """Run the grid on one stage through Tune; one row per config."""
    results = tune.Tuner(
        logreg.logreg_trainable,
        param_space={
            **grid(n),
            "stage": stage,
            "epochs": epochs,
            "seed": 0,
            "checkpoint_every": epochs,
        },
        tune_config=tune.TuneConfig(reuse_actors=True),
        run_config=tune.RunConfig(name=f"grid-stage{stage}", storage_path=storage, verbose=0),
    ).fit()
    rows = []
    for r in results:
        if r.error is not None or "val_loss" not in (r.metrics or {}):
            continue
        rows.append({**{k: r.config[k] for k in PARAMS}, "value": r.metrics["val_loss"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="directory for stage1.csv ... stage5.csv")
    p.add_argument("--grid", type=int, default=5, help="values per hyperparameter (5)")
    p.add_argument("--epochs", type=int, default=3, help="epochs per trial (3)")
    p.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    a = p.parse_args(argv)
    if a.grid < 2:
        p.error(f"--grid must be >= 2, got {a.grid}")
    out = Path(a.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    with ray_logs_to_file(out / "ray.log", announce=True):
        ray.init(
            address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False
        )
        with tempfile.TemporaryDirectory() as storage:
            for stage in a.stages:
                rows = stage_table(stage, a.grid, a.epochs, storage)
                path = out / f"stage{stage}.csv"
                with open(path, "w", newline="") as fh:
                    writer = csv.DictWriter(fh, fieldnames=[*PARAMS, "value"])
                    writer.writeheader()
                    writer.writerows(rows)
                best = min(r["value"] for r in rows)
                print(f"{path}: {len(rows)} configs, best val_loss {best:.4f}", flush=True)
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
