"""Driver process for the kill-and-resume tests.

``python resume_driver.py STORAGE NAME start|restore N [CONCURRENCY]``; each trial step
takes ``RESUME_STEP_S`` seconds (0.15). With ``RESUME_ASHA=1`` the run has an ASHA scheduler
(rungs at steps 1 and 3) and the searcher reads its budget from it. With
``RESUME_UNFINISHED=0`` a restore skips the trials that were running
(``Tuner.restore(..., resume_unfinished=False)``).

Each trial reports three steps and checkpoints after each, so a restored run resumes
interrupted trials from their checkpoints (and a damaged checkpoint fails its trial).
"""

import json
import os
import sys
import tempfile
import time

import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler

from rmbo_tune import RMBOSearcher

STEPS = 3
STEP_S = float(os.environ.get("RESUME_STEP_S", "0.15"))


def slow_quadratic(config):
    step = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "step.json")) as fh:
                step = json.load(fh)["step"]
    loss = (config["x"] - 0.3) ** 2 + (config["y"] - 0.6) ** 2
    while step < STEPS:
        time.sleep(STEP_S)
        step += 1
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "step.json"), "w") as fh:
                json.dump({"step": step}, fh)
            tune.report({"loss": loss, "step": step}, checkpoint=tune.Checkpoint(folder))


def main() -> None:
    storage, name, action, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    concurrency = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    ray.init(address="local", num_cpus=concurrency, include_dashboard=False, log_to_driver=False)
    if action == "start":
        asha = None
        if os.environ.get("RESUME_ASHA") == "1":
            asha = ASHAScheduler(
                time_attr="step", metric="loss", mode="min", max_t=STEPS, reduction_factor=3
            )
        tuner = tune.Tuner(
            slow_quadratic,
            param_space={"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)},
            tune_config=tune.TuneConfig(
                search_alg=RMBOSearcher(metric="loss", mode="min", seed=0, scheduler=asha),
                scheduler=asha,
                num_samples=n,
                max_concurrent_trials=concurrency,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(storage_path=storage, name=name, verbose=0),
        )
    else:
        tuner = tune.Tuner.restore(
            os.path.join(storage, name),
            trainable=slow_quadratic,
            resume_unfinished=os.environ.get("RESUME_UNFINISHED", "1") == "1",
        )
    results = tuner.fit()
    print("DONE", len(results), len(results.errors), flush=True)


if __name__ == "__main__":
    main()
