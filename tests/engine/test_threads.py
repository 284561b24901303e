"""The engine's public calls run with one BLAS thread, and the limit is lifted after."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from rmbo_tune.engine import MetaBO
from rmbo_tune.engine.threads import blas_limit, one_blas_thread


def blas_threads() -> list[int]:
    np.ones((2, 2)) @ np.ones((2, 2))  # make sure BLAS is loaded
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_blas_is_limited_inside_and_restored_after() -> None:
    before = blas_threads()
    inside = one_blas_thread(blas_threads)()
    assert inside and all(n == 1 for n in inside)
    assert blas_threads() == before


def test_engine_ask_and_tell_run_on_one_blas_thread(monkeypatch) -> None:
    seen: list[list[int]] = []
    update = MetaBO._update

    def recording_update(self: MetaBO) -> None:
        seen.append(blas_threads())
        update(self)

    monkeypatch.setattr(MetaBO, "_update", recording_update)
    engine = MetaBO(dim=2, seed=0)
    before = blas_threads()
    for _ in range(3):
        x = engine.ask()
        engine.tell(x, -float(np.sum((x - 0.3) ** 2)))
    engine.fail(engine.ask())
    assert len(seen) == 4 and all(n and set(n) == {1} for n in seen)
    assert blas_threads() == before


def test_the_limit_can_be_switched_off_in_a_block() -> None:
    before = blas_threads()
    with blas_limit(False):
        assert one_blas_thread(blas_threads)() == before
        with blas_limit(True):
            assert set(one_blas_thread(blas_threads)()) == {1}
    assert set(one_blas_thread(blas_threads)()) == {1}
