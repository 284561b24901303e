"""Aligning meta-task configs with the current search space (the out-of-space policy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmbo_tune.meta_tasks._report import LoadReport


class Aligner:
    """The out-of-space policy against a SearchSpace (imported lazily: it imports Ray)."""

    def __init__(self, space: Any, policy: str) -> None:
        from rmbo_tune.space import SearchSpace

        if isinstance(space, Mapping):
            space = SearchSpace.from_tune(space)
        elif not isinstance(space, SearchSpace):
            raise TypeError(
                "space must be a Tune param_space dict or a SearchSpace, got "
                f"{type(space).__name__}"
            )
        self.space, self.clip = space, policy == "clip"
        self.known = (
            {d.path for d in space.dimensions} | set(space.constants) | set(space.fixed_choices)
        )

    def __call__(self, configs: list, values: list, report: LoadReport) -> tuple[list, list]:
        from rmbo_tune.exceptions import OutOfSpaceError
        from rmbo_tune.meta_tasks._compact import fixed_slice, unrecorded_keys
        from rmbo_tune.space import path_name, unflatten

        out_c, out_v = [], []
        flats = [self.space.flatten(config) for config in configs]
        # A searched key that no config has: the experiment did not search it. Its configs
        # are kept; the searcher's GP of the task is constant along that key.
        unrecorded = unrecorded_keys(self.space, flats)
        report.unrecorded_keys = sorted(path_name(p) for p in unrecorded)
        # A key the space holds constant that the experiment searched: only its configs at
        # the space's value are kept (where at least a few ran there).
        sliced, at_value = fixed_slice(self.space, flats)
        report.fixed_keys = sorted(path_name(p) for p in sliced)
        for config, flat, value, keep in zip(configs, flats, values, at_value, strict=True):
            if not keep:
                report.drop("out_of_space:other_fixed_value")
                continue
            for key in flat:
                if key not in self.known:
                    name = path_name(key)
                    report.extra_keys[name] = report.extra_keys.get(name, 0) + 1
            reason, clipped = None, False
            for d in self.space.dimensions:
                if d.path in unrecorded:
                    continue
                if d.path not in flat:
                    reason = "missing_key"
                    break
                try:
                    d.columns(flat[d.path])
                except OutOfSpaceError as exc:
                    if not (self.clip and exc.reason == "out_of_bounds"):
                        reason = exc.reason
                        break
                    flat[d.path] = d.value(d.columns(flat[d.path], clip=True))
                    clipped = True
            if reason is not None:
                report.drop(f"out_of_space:{reason}")
                continue
            if clipped:
                report.note("clipped")
                config = unflatten(flat)
            out_c.append(config)
            out_v.append(value)
        return out_c, out_v
