"""RMBOSearcher on a multi-node Ray cluster (faults and restores: ``test_faults.py``)."""

import time

import pytest
import ray
from ray import tune

from rmbo_tune import RMBOSearcher

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def node_reporting(config):
    time.sleep(0.3)
    tune.report({"loss": config["x"], "node": ray.get_runtime_context().get_node_id()})


def test_trials_spread_over_a_multi_node_cluster(tmp_path):
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address)
        searcher = RMBOSearcher(metric="loss", mode="min", seed=0)
        results = tune.Tuner(
            node_reporting,
            param_space={"x": tune.uniform(0, 1)},
            tune_config=tune.TuneConfig(
                search_alg=searcher, num_samples=9, max_concurrent_trials=3
            ),
            run_config=tune.RunConfig(storage_path=str(tmp_path), name="multi", verbose=0),
        ).fit()
        assert len(results) == 9 and not results.errors
        nodes = {r.metrics["node"] for r in results}
        assert len(nodes) > 1, nodes
        assert searcher.engine.X.shape == (9, 1)
    finally:
        ray.shutdown()
        cluster.shutdown()
