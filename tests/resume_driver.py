"""Driver process for the kill-and-resume tests.

``python resume_driver.py STORAGE NAME start|restore N``
"""

import os
import sys
import time

import ray
from ray import tune

from rmbo_tune import RMBOSearcher


def slow_quadratic(config):
    time.sleep(0.4)
    tune.report({"loss": (config["x"] - 0.3) ** 2 + (config["y"] - 0.6) ** 2})


def main() -> None:
    storage, name, action, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    if action == "start":
        tuner = tune.Tuner(
            slow_quadratic,
            param_space={"x": tune.uniform(0, 1), "y": tune.uniform(0, 1)},
            tune_config=tune.TuneConfig(
                search_alg=RMBOSearcher(metric="loss", mode="min", seed=0),
                num_samples=n,
                max_concurrent_trials=2,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(storage_path=storage, name=name, verbose=0),
        )
    else:
        tuner = tune.Tuner.restore(os.path.join(storage, name), trainable=slow_quadratic)
    results = tuner.fit()
    print("DONE", len(results), len(results.errors), flush=True)


if __name__ == "__main__":
    main()
