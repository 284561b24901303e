"""Load-time benchmark of :func:`rmbo_tune.meta_tasks.load_meta_tasks`.

Synthesizes experiment directories in Ray Tune 2.x's on-disk JSON layout (an
``experiment_state-*.json`` whose ``trial_data`` pairs hold the trial and its run metadata,
with the hex cloudpickle blobs Tune writes there, plus ``params.json``, ``result.json`` and
``progress.csv`` per trial) in a temporary directory, then times loading all of them.

    python -m rmbo_tune.bench.load_time                 # 100 experiments x 200 trials x 10 its
    python -m rmbo_tune.bench.load_time --experiments 10 --trials 50

Target: under 2 s for the default size with the state files present. ``--no-state`` also times
the fallback that reads every trial's ``params.json`` and ``result.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence

from rmbo_tune.bench.options import positive_int

# Sizes of the hex-encoded cloudpickle blobs in a Ray 2.60 state file (measured).
_BLOBS = {"storage": 1200, "placement_group_factory": 340, "checkpoint_manager": 780}
_TUNE_KEYS = ("time_this_iter_s", "time_total_s", "time_since_restore")


def _blob(rng: random.Random, n: int) -> dict:
    return {"_type": "CLOUDPICKLE_FALLBACK", "value": "80" + rng.randbytes(n // 2).hex()}


def _results(rng: random.Random, trial_id: str, config: dict, iterations: int) -> list[dict]:
    out, total, base = [], 0.0, rng.random()
    for i in range(iterations):
        dt = rng.uniform(0.5, 2.0)
        total += dt
        loss = base * math.exp(-0.3 * i) + 0.05 * rng.random()
        if rng.random() < 0.005:  # a few NaN (they force reading result.json for scope="best")
            loss = math.nan
        out.append(
            {
                "loss": loss,
                "accuracy": 1.0 - loss,
                "timestamp": 1795650991 + i,
                "checkpoint_dir_name": None,
                "done": i == iterations - 1,
                "training_iteration": i + 1,
                "trial_id": trial_id,
                "date": "2026-11-25_23-56-31",
                "time_this_iter_s": dt,
                "time_total_s": total,
                "pid": 17359,
                "hostname": "node-1",
                "node_ip": "10.0.0.1",
                "config": config,
                "time_since_restore": total,
                "iterations_since_restore": i + 1,
            }
        )
    return out


def _analysis(rng: random.Random, results: list[dict]) -> tuple[dict, dict]:
    analysis, steps = {}, {}
    metrics = ["loss", "accuracy", "done", "training_iteration", *_TUNE_KEYS]
    metrics.append("iterations_since_restore")
    for m in metrics:
        vals = [r[m] for r in results]
        last5, last10 = vals[-5:], vals[-10:]
        analysis[m] = {
            "max": max(vals),
            "min": min(vals),
            "avg": sum(vals) / len(vals),
            "last": vals[-1],
            "last-5-avg": sum(last5) / len(last5),
            "last-10-avg": sum(last10) / len(last10),
        }
        steps[m] = {"5": _blob(rng, 60 + 18 * len(last5)), "10": _blob(rng, 60 + 18 * len(last10))}
    return analysis, steps


def synthesize(root: str, experiments: int, trials: int, iterations: int, seed: int = 0) -> None:
    """Write ``experiments`` Tune-like experiment directories under ``root``."""
    rng = random.Random(seed)
    stamp = "2026-11-25_23-56-28"
    for e in range(experiments):
        exp = os.path.join(root, f"exp_{e:03d}")
        os.makedirs(exp)
        trial_data = []
        for t in range(trials):
            trial_id = f"{e:05x}_{t:05d}"
            config = {
                "lr": 10 ** rng.uniform(-5, -1),
                "model": {"width": rng.choice([32, 64, 128]), "act": "relu"},
                "dropout": rng.uniform(0.0, 0.5),
            }
            tag = f"{t}_lr={config['lr']:.4g},width={config['model']['width']}"
            logdir = f"train_{trial_id}_{tag}_{stamp}"
            results = _results(rng, trial_id, config, iterations)
            analysis, steps = _analysis(rng, results)
            meta = {
                "stub": False,
                "trainable_name": "train",
                "trial_id": trial_id,
                "storage": _blob(rng, _BLOBS["storage"]),
                "config": config,
                "_Trial__unresolved_config": config,
                "evaluated_params": {"lr": config["lr"], "model/width": config["model"]["width"]},
                "experiment_tag": tag,
                "stopping_criterion": {},
                "_setup_default_resource": True,
                "_default_placement_group_factory": "80054e2e",
                "placement_group_factory": _blob(rng, _BLOBS["placement_group_factory"])["value"],
                "log_to_file": [None, None],
                "max_failures": 0,
                "_default_result_or_future": None,
                "export_formats": [],
                "status": "ERROR" if rng.random() < 0.02 else "TERMINATED",
                "relative_logdir": logdir,
                "trial_name_creator": None,
                "trial_dirname_creator": None,
                "custom_trial_name": None,
                "custom_dirname": None,
                "restore_path": None,
                "_restore_checkpoint_result": None,
                "_state_json": None,
                "results": "80054e2e",
                "extra_arg": "80054e2e",
                "_resources": "80054e2e",
            }
            run = {
                "start_time": 1795650991.6,
                "num_failures": 0,
                "num_failures_after_restore": 0,
                "error_filename": "error.txt" if meta["status"] == "ERROR" else None,
                "pickled_error_filename": "error.pkl" if meta["status"] == "ERROR" else None,
                "last_result": {**results[-1], "experiment_tag": tag},
                "last_result_time": 1795650991.7,
                "metric_analysis": analysis,
                "_n_steps": [5, 10],
                "metric_n_steps": steps,
                "checkpoint_manager": _blob(rng, _BLOBS["checkpoint_manager"]),
            }
            trial_data.append([json.dumps(meta, indent=2), json.dumps(run, indent=2)])
            tdir = os.path.join(exp, logdir)
            os.makedirs(tdir)
            with open(os.path.join(tdir, "params.json"), "w") as f:
                json.dump(config, f, indent=2)
            with open(os.path.join(tdir, "result.json"), "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in results))
            if meta["status"] == "ERROR":
                with open(os.path.join(tdir, "error.txt"), "w") as f:
                    f.write("RuntimeError: synthetic\n")
        state = {"trial_data": trial_data, "runner_data": {}, "stats": {"start_time": 0.0}}
        with open(os.path.join(exp, f"experiment_state-{stamp}.json"), "w") as f:
            json.dump(state, f, indent=2)


def _du(root: str) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(root):
        files += len(names)
        size += sum(os.path.getsize(os.path.join(dirpath, n)) for n in names)
    return files, size


def _time(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Synthesize experiments, time ``load_meta_tasks`` on them and print the figures."""
    parser = argparse.ArgumentParser(prog="rmbo-tune bench load-time")
    parser.add_argument(
        "--experiments", type=positive_int, default=100, help="experiments written (100)"
    )
    parser.add_argument("--trials", type=positive_int, default=200, help="trials each (200)")
    parser.add_argument(
        "--iterations", type=positive_int, default=10, help="results per trial (10)"
    )
    parser.add_argument("--repeat", type=positive_int, default=3, help="timed loads (3)")
    parser.add_argument("--no-state", action="store_true", help="also time the fallback")
    parser.add_argument("--dir", help="write here (kept) instead of a temporary directory")
    args = parser.parse_args(argv)

    from rmbo_tune.meta_tasks import load_meta_tasks

    root = args.dir or tempfile.mkdtemp(prefix="rmbo_load_time_")
    try:
        t0 = time.perf_counter()
        synthesize(root, args.experiments, args.trials, args.iterations)
        files, size = _du(root)
        print(
            f"synthesized {args.experiments} experiments x {args.trials} trials x "
            f"{args.iterations} iterations: {files} files, {size / 2**20:.0f} MiB "
            f"in {time.perf_counter() - t0:.1f} s ({root})"
        )
        for scope in ("best", "last"):
            loads: list = []
            times = _time(
                lambda s=scope, o=loads: o.append(load_meta_tasks(root, "loss", "min", scope=s)),
                args.repeat,
            )
            loaded = loads[-1]
            used = sum(t.report.used for t in loaded)
            print(
                f"load_meta_tasks(scope={scope!r}): {len(loaded)} tasks, {used} trials used; "
                f"min {min(times):.3f} s, median {statistics.median(times):.3f} s "
                f"over {args.repeat} runs"
            )
        if args.no_state:
            for dirpath in os.listdir(root):
                for name in os.listdir(os.path.join(root, dirpath)):
                    if name.startswith("experiment_state-"):
                        os.remove(os.path.join(root, dirpath, name))
            times = _time(lambda: load_meta_tasks(root, "loss", "min"), args.repeat)
            print(
                f"without state files (params.json + result.json per trial): "
                f"min {min(times):.3f} s, median {statistics.median(times):.3f} s"
            )
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
