"""The experiments the meta-task tests read, written once per session."""

from __future__ import annotations

import pytest
import ray

from tests.meta_tasks_fixtures import messy_space, other_space, run_experiment


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """runs/messy (10 trials, one per case) and runs/other (6 trials, older space)."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        root = tmp_path_factory.mktemp("runs")
        grids = {
            "messy": run_experiment(root, "messy", messy_space()),
            "other": run_experiment(root, "other", other_space()),
        }
    finally:
        ray.shutdown()
    return {"root": root, "messy": root / "messy", "other": root / "other", "grids": grids}
