"""The BLAS-thread benchmark times the same tells with and without the engine's limit."""

from __future__ import annotations

import math

from rmbo_tune.bench import blas_threads
from rmbo_tune.engine import threads as engine_threads
from tests.engine.test_threads import blas_threads as _blas


def test_both_settings_run_and_the_limit_is_restored(capsys) -> None:
    before = _blas()
    for limited in (True, False):
        r = blas_threads.time_tells(5, 2, limited=limited)
        assert all(math.isfinite(v) and v >= 0 for v in r.values())
        assert r["max_s"] <= r["total_s"]
    assert engine_threads._ENABLED and _blas() == before
    blas_threads.main(["--tells", "3", "--dim", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all("3 tells" in line for line in lines)
