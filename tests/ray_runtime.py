"""The 2-CPU local Ray runtime behind the ``ray_local`` and ``ray_cluster`` fixtures.

Starting Ray costs 5-10 s, so consecutive test modules that use one of these fixtures share
one runtime: the first test that asks for it starts it, and it is shut down after the last
test of such a run of modules (``pytest_runtest_teardown`` in tests/conftest.py). A module
that uses neither fixture (some start a Ray of their own) never runs beside it, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = frozenset({"ray_local", "ray_cluster"})

_started: dict[str, str] = {}  # "address": GCS address of the runtime started here


def _ours() -> bool:
    import ray

    address = _started.get("address")
    return (
        address is not None
        and ray.is_initialized()
        and ray.get_runtime_context().gcs_address == address
    )


def start() -> None:
    """Start the shared runtime unless it is running (a test may have shut it down)."""
    import ray

    if _ours():
        return
    # Workers must import `trainables` and the test modules even when the project is not
    # pip-installed.
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    _started["address"] = ray.get_runtime_context().gcs_address


def stop() -> None:
    """Shut the shared runtime down if it is running; never another Ray."""
    if not _started:
        return
    if _ours():
        import ray

        ray.shutdown()
    _started.clear()
