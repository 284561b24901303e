"""What the engine's one-BLAS-thread limit buys on a busy machine.

Times ``MetaBO.tell`` (each refits or updates the target GP) with the limit the engine applies
to its public calls (:mod:`rmbo_tune.engine.threads`) and with BLAS left at its default
thread count, on the same sequence of observations. Run it beside other work (trials, a build,
a CPU hog): that is when BLAS threads oversubscribe the cores and one ``tell`` can take
seconds.

    python -m rmbo_tune.bench.blas_threads                # 400 tells, D = 8
    python -m rmbo_tune.bench.blas_threads --tells 1000 --dim 4
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np

from rmbo_tune.bench.options import positive_int
from rmbo_tune.engine import MetaBO
from rmbo_tune.engine import threads as engine_threads


def time_tells(n_tells: int, dim: int, *, limited: bool, seed: int = 0) -> dict[str, float]:
    """Tell ``n_tells`` observations of a quadratic to a fresh engine; seconds in total,
    median and slowest tell."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_tells, dim))
    y = -np.sum((X - 0.3) ** 2, axis=1)
    times = []
    with engine_threads.blas_limit(limited):
        engine = MetaBO(dim=dim, seed=seed)
        start = time.perf_counter()
        for x, v in zip(X, y, strict=True):
            t0 = time.perf_counter()
            engine.tell(x, float(v))
            times.append(time.perf_counter() - t0)
        total = time.perf_counter() - start
    return {"total_s": total, "median_ms": 1e3 * float(np.median(times)), "max_s": max(times)}


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print one line per setting."""
    parser = argparse.ArgumentParser(prog="python -m rmbo_tune.bench.blas_threads")
    parser.add_argument("--tells", type=positive_int, default=400)
    parser.add_argument("--dim", type=positive_int, default=8)
    args = parser.parse_args(argv)
    for limited, label in ((True, "one BLAS thread (engine default)"), (False, "BLAS default")):
        r = time_tells(args.tells, args.dim, limited=limited)
        print(
            f"{label:34s} {args.tells} tells: total {r['total_s']:.1f} s, "
            f"median {r['median_ms']:.2f} ms, slowest {r['max_s']:.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
