"""Searcher overhead inside a real Tune run.

200 trials of a trivial trainable, ``max_concurrent_trials=2``, ``reuse_actors=True``, with and
without 20 meta-tasks (3-D space, 40 observations each): the time spent inside the searcher's
methods (set_search_properties, suggest, on_trial_complete, on_trial_result, save) as a share
of the run's wall time. Each repeat also times the same run with Tune's own random search, so
that Tune's wall time for the trials alone is printed beside it.
Run ``python -m rmbo_tune.bench.overhead``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import ray
from ray import tune
from threadpoolctl import threadpool_limits

from rmbo_tune.bench.console import ray_logs_to_file
from rmbo_tune.bench.options import (
    add_option_argument,
    nonnegative_int,
    out_dir,
    parse_options,
    positive_int,
)
from rmbo_tune.engine import MetaBO
from rmbo_tune.searcher import RMBOSearcher
from rmbo_tune.space import SearchSpace

SPACE = {"a": tune.uniform(0, 1), "b": tune.loguniform(1e-4, 1), "c": tune.randint(0, 10)}


def objective(config: dict) -> float:
    """A cheap smooth function of the three parameters."""
    return (config["a"] - 0.3) ** 2 + (np.log10(config["b"]) + 2) ** 2 / 16 + config["c"] / 50


def trivial(config: dict) -> None:
    """The trainable: one report, no work."""
    tune.report({"loss": objective(config)})


class TimedSearcher(RMBOSearcher):
    """RMBOSearcher that accumulates the seconds spent in each Tune-facing method, and the
    CPU seconds of the driver thread in them (the rest of the wall time in a call is spent
    waiting for a core while the trials' processes run)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: dict[str, float] = {}
        self.cpu_seconds = 0.0
        self.first_suggest = 0.0  # the first call builds the engine (fits the meta-task GPs)

    def _timed(self, name: str, fn, *args, **kwargs):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - t0
            if name == "suggest" and "suggest" not in self.seconds:
                self.first_suggest = elapsed
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
            self.cpu_seconds += time.thread_time() - c0

    def set_search_properties(self, metric, mode, config, **spec):
        return self._timed(
            "set_search_properties", super().set_search_properties, metric, mode, config, **spec
        )

    def suggest(self, trial_id):
        return self._timed("suggest", super().suggest, trial_id)

    def on_trial_complete(self, trial_id, result=None, error=False):
        return self._timed("on_trial_complete", super().on_trial_complete, trial_id, result, error)

    def on_trial_result(self, trial_id, result):
        return self._timed("on_trial_result", super().on_trial_result, trial_id, result)

    def save(self, checkpoint_path):
        return self._timed("save", super().save, checkpoint_path)


def meta_tasks(n_tasks: int, n_obs: int, seed: int) -> list:
    """Meta-tasks in the same space: the objective plus a random offset per task."""
    rng = np.random.default_rng(seed)
    tasks = []
    for _ in range(n_tasks):
        cfgs = [
            {"a": float(a), "b": float(b), "c": int(c)}
            for a, b, c in zip(
                rng.random(n_obs),
                10 ** rng.uniform(-4, 0, n_obs),
                rng.integers(0, 10, n_obs),
                strict=True,
            )
        ]
        shift = rng.uniform(-0.2, 0.2)
        tasks.append((cfgs, [objective(c) + shift * c["a"] for c in cfgs]))
    return tasks


def _fit(n_trials: int, name: str, search_alg: RMBOSearcher | None = None) -> float:
    """Wall seconds of one Tune run of the trivial trainable (Tune's random search without
    ``search_alg``)."""
    properties = {} if search_alg is not None else {"metric": "loss", "mode": "min"}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tune.Tuner(
            trivial,
            param_space=SPACE,
            tune_config=tune.TuneConfig(
                search_alg=search_alg,
                num_samples=n_trials,
                max_concurrent_trials=2,
                reuse_actors=True,
                **properties,
            ),
            run_config=tune.RunConfig(storage_path=tmp, name=name, verbose=0),
        ).fit()
        return time.perf_counter() - t0


def run(n_trials: int, n_meta: int, seed: int, **options: Any) -> dict:
    """One Tune run; wall time and seconds inside the searcher (``options``: engine options)."""
    searcher = TimedSearcher(
        metric="loss",
        mode="min",
        seed=seed,
        meta_tasks=meta_tasks(n_meta, 40, seed) if n_meta else None,
        **options,
    )
    wall = _fit(n_trials, "overhead", searcher)
    return {
        "wall": wall,
        "searcher": sum(searcher.seconds.values()),
        "searcher_cpu": searcher.cpu_seconds,
        "first_suggest": searcher.first_suggest,
        **searcher.seconds,
    }


def tune_alone(n_trials: int) -> float:
    """Wall seconds of the same Tune run with Tune's own random search (no RMBOSearcher)."""
    return _fit(n_trials, "tune-random")


def warm_up(n_trials: int = 20) -> None:
    """An untimed Tune run of the trivial trainable with Tune's random search."""
    _fit(n_trials, "warm-up")


def engine_only(n_trials: int, n_meta: int, seed: int, **options: Any) -> dict:
    """The same search on the engine alone (no Tune): CPU cost of the searcher's work."""
    space = SearchSpace.from_tune(SPACE)
    meta = [
        (np.array([space.encode(c) for c in cfgs]), -np.asarray(vals))
        for cfgs, vals in (meta_tasks(n_meta, 40, seed) if n_meta else [])
    ]
    with threadpool_limits(1, user_api="blas"):
        t0 = time.perf_counter()
        opt = MetaBO(
            space.dim,
            meta,
            "rm-gp-ucb" if meta else "gp-ucb",
            seed=seed,
            project=space.project,
            **options,
        )
        setup = time.perf_counter() - t0
        for _ in range(n_trials):
            x = opt.ask()
            opt.tell(x, -objective(space.decode(x)))
        total = time.perf_counter() - t0
    return {"setup": setup, "per_trial_ms": 1000 * (total - setup) / n_trials}


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    p = argparse.ArgumentParser(
        prog="rmbo-tune bench overhead", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--trials", type=positive_int, default=200, help="trials per run (200)")
    p.add_argument(
        "--meta-tasks", type=nonnegative_int, default=20, help="meta-tasks of the second run (20)"
    )
    p.add_argument("--seed", type=int, default=0, help="(0)")
    p.add_argument(
        "--repeats", type=positive_int, default=1, help="measured runs of each setting (1)"
    )
    p.add_argument(
        "--out",
        type=out_dir,
        default="bench-results/overhead",
        help="folder of Ray's log (ray.log)",
    )
    add_option_argument(p)
    p.add_argument(
        "--engine-only",
        action="store_true",
        help="run the same search on the engine without Tune (its CPU cost per trial)",
    )
    a = p.parse_args(argv)
    if a.trials < 1 or a.repeats < 1 or a.meta_tasks < 0:
        p.error(
            f"--trials and --repeats must be >= 1 and --meta-tasks >= 0, got {a.trials}, "
            f"{a.repeats} and {a.meta_tasks}"
        )
    options = parse_options(a.option, p)  # before anything runs
    if a.engine_only:
        print(f"engine only: {a.trials} sequential trials, one BLAS thread, options {options}")
        print("| meta-tasks | setup (s) | ms per trial (ask + tell) |")
        print("|---|---|---|")
        for m in (0, a.meta_tasks):
            r = engine_only(a.trials, m, a.seed, **options)
            print(f"| {m} | {r['setup']:.2f} | {r['per_trial_ms']:.1f} |", flush=True)
        return
    # Tune's configuration boxes would bury the table; Ray's own lines go to a file.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    with ray_logs_to_file(Path(a.out) / "ray.log", announce=True):
        _measure(a, options)


def _measure(a: argparse.Namespace, options: dict[str, Any]) -> None:
    """The Tune runs of :func:`main`, with the table printed as they finish."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The first Tune run of a Ray session also starts Ray's worker processes; one untimed
    # run first, so that every measured run sees the same warm Ray.
    warm_up()
    print(
        f"searcher overhead: {a.trials} trials, max_concurrent_trials=2, reuse_actors=True, "
        f"options {options}"
    )
    print(
        "| meta-tasks | wall (s) | in searcher (s) | share | ms/trial | first suggest (s) "
        "| suggest | on_trial_complete | save | searcher CPU (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    shares: dict[int, list[float]] = {0: [], a.meta_tasks: []}
    alone: list[float] = []
    for _ in range(a.repeats):
        alone.append(tune_alone(a.trials))
        print(f"| Tune's random search | {alone[-1]:.1f} | | | | | | | | |", flush=True)
        for m in (0, a.meta_tasks):
            r = run(a.trials, m, a.seed, **options)
            shares[m].append(100 * r["searcher"] / r["wall"])
            print(
                f"| {m} | {r['wall']:.1f} | {r['searcher']:.2f} | {shares[m][-1]:.1f}% "
                f"| {1000 * r['searcher'] / a.trials:.1f} | {r['first_suggest']:.2f} "
                f"| {r.get('suggest', 0):.2f} | {r.get('on_trial_complete', 0):.2f} "
                f"| {r.get('save', 0):.2f} | {r['searcher_cpu']:.2f} |",
                flush=True,
            )
    print(
        "median share: "
        + ", ".join(f"{m} meta-tasks {np.median(v):.1f}%" for m, v in shares.items())
        + f"; Tune's random search alone took {min(alone):.1f}-{max(alone):.1f} s"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
