"""Engine calls in the Tune driver run with one BLAS thread."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from rmbo_tune.threads import one_blas_thread


def test_blas_is_limited_inside_and_restored_after() -> None:
    def blas_threads() -> list[int]:
        np.ones((2, 2)) @ np.ones((2, 2))  # make sure BLAS is loaded
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    inside = one_blas_thread(blas_threads)()
    assert inside and all(n == 1 for n in inside)
    assert blas_threads() == before
