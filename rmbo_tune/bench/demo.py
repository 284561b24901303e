"""``rmbo-tune demo``: meta-BO on CartPole through real Ray Tune, offline, a few minutes.

1. Ten earlier Tune experiments, one per CartPole initial state (3 near the target's, 7
   random), each a 50-trial GP-UCB search of the 8 weights of a linear policy: the meta-tasks,
   written under ``<out>/meta`` exactly as a user's past experiments would be.
2. The target task (CartPole from rest) searched with ``RMBOSearcher`` (RM-GP-UCB, given the
   ten experiment directories), with our GP-UCB (no meta-tasks) and with Tune's random search
   (``BasicVariantGenerator``), a few seeds each, one trial at a time.
3. A table of the best normalized return (episode return / 200, averaged over 10 episodes)
   after k trials, mean ± standard error over seeds, and PNG plots of the best-so-far curves and
   of the meta-weight RM-GP-UCB gave each earlier experiment over time.

The terminal shows one progress bar per phase and the results; Ray's own log lines go to
``<out>/ray.log``. Needs gymnasium and matplotlib (``pip install -e ".[demo]"``).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmbo_tune.bench import report
from rmbo_tune.bench.console import Progress
from rmbo_tune.bench.options import out_dir, positive_int
from rmbo_tune.bench.tasks import cartpole_task
from rmbo_tune.bench.tune_runner import run_benchmark_quietly

METHODS = ("rm-gp-ucb", "gp-ucb", "tune-random")
LABELS = {
    "rm-gp-ucb": "RMBOSearcher (RM-GP-UCB, 10 meta-tasks)",
    "gp-ucb": "GP-UCB (no meta-tasks)",
    "tune-random": "Tune random search",
}


def _check_dependencies() -> None:
    missing = []
    for module, package in (("gymnasium", "gymnasium"), ("matplotlib", "matplotlib")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise SystemExit(
            f"rmbo-tune demo needs {' and '.join(missing)}: pip install -e '.[demo]' "
            f"(or pip install {' '.join(missing)})"
        )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the demo; returns the results document (also written under ``--out``).

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (see ``rmbo-tune demo --help``).

    Returns
    -------
    dict
        The results document of :mod:`rmbo_tune.bench.report`.
    """
    p = argparse.ArgumentParser(prog="rmbo-tune demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=positive_int, default=5, help="runs per method (default 5)")
    p.add_argument("--budget", type=positive_int, default=30, help="trials per run (default 30)")
    p.add_argument(
        "--meta-samples", type=positive_int, default=50, help="trials per meta-task (50)"
    )
    p.add_argument("--out", type=out_dir, default="rmbo-tune-demo", help="output directory")
    p.add_argument("--num-cpus", type=positive_int, default=2, help="CPUs for the local Ray (2)")
    a = p.parse_args(argv)
    _check_dependencies()
    # Tune's new console output prints a configuration box per experiment; the demo runs 25
    # experiments and prints its own one-line progress instead.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

    out = Path(a.out).resolve()
    print(
        f"rmbo-tune demo: CartPole policy search through Ray Tune -> {out}\n"
        f"  {a.seeds} seeds x {a.budget} trials for each of: "
        + ", ".join(LABELS[m] for m in METHODS),
        flush=True,
    )
    task = cartpole_task()
    bars: dict[str, Progress] = {}

    def progress(line: str) -> None:
        # run_benchmark announces the meta-task experiments, then reports each finished one
        # and each finished search; a bar starts when its phase does.
        if re.search(r"\] \d+ meta-task experiments", line):
            bars["meta"] = Progress("earlier experiments", len(task.meta_tasks))
        elif m := re.match(r"\s*meta-task (\S+):", line):
            bars["meta"].step(m.group(1))
            if bars["meta"].done == bars["meta"].total:
                bars["runs"] = Progress("target searches     ", len(METHODS) * a.seeds)
        elif m := re.search(r"\]\s+(\S+) seed (\d+): best \S+ (\S+)", line):
            if "runs" not in bars:
                bars["runs"] = Progress("target searches     ", len(METHODS) * a.seeds)
            bars["runs"].step(f"{m.group(1)} seed {m.group(2)}: best {m.group(3)}")

    t0 = time.perf_counter()
    log_path = out / "ray.log"
    doc = run_benchmark_quietly(
        task,
        num_cpus=a.num_cpus,
        log_path=log_path,
        methods=METHODS,
        seeds=range(a.seeds),
        budget=a.budget,
        out_dir=out,
        meta_samples=a.meta_samples,
        progress=progress,
    )
    horizons = sorted({h for h in (1, 3, 5, 10, 20, 30) if h <= a.budget} | {a.budget})
    files = report.write_outputs(doc, out, horizons)
    rows = {r["method"]: r for r in report.summarize(doc, horizons)}
    print()
    print(report.markdown_table(list(rows.values()), metric="best"))
    print()
    for h in (5, 10):
        key = f"best@{h}"
        if all(key in rows[m] for m in METHODS):
            print(
                f"after {h:>2} trials: "
                + "; ".join(f"{m} {rows[m][key][0]:.3f} ± {rows[m][key][1]:.3f}" for m in METHODS)
            )
    weights = [r["weights"][-1] for r in doc["runs"]["rm-gp-ucb"] if r.get("weights")]
    if weights:
        names = list(weights[0])
        mean = {n: sum(w.get(n, 0.0) for w in weights) / len(weights) for n in names}
        top = sorted(mean.items(), key=lambda kv: -kv[1])[:4]
        print(
            "RM-GP-UCB's final meta-weights (mean over seeds), largest: "
            + ", ".join(f"{n} {w:.2f}" for n, w in top)
        )
    print(f"\ndone in {time.perf_counter() - t0:.0f} s; wrote:")
    for path in [*files.values(), log_path]:
        print(f"  {path}")
    return doc
