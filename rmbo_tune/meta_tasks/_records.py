"""Trial records from in-memory sources: DataFrames (and CSV files), ExperimentAnalysis and
ResultGrid objects."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rmbo_tune.meta_tasks import _storage as st


def _unflatten_slash(flat: Mapping[str, Any]) -> dict:
    out: dict = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split("/")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") and not isinstance(v, list | dict | str) else v


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def records_from_frame(df: Any, source: str) -> list[st.TrialRecord]:
    """Rows of a Tune-style DataFrame (``config/<key>`` columns) -> trial records. With a
    ``trial_id`` column holding repeats, the rows of a trial are its iterations (ordered by
    ``training_iteration`` if present). A ``status`` column marks "ERROR" rows as errored."""
    config_cols = [c for c in df.columns if isinstance(c, str) and c.startswith("config/")]
    if not config_cols:
        raise ValueError(
            f"{source} has no config/<key> columns (as Tune's dataframes have); columns: "
            f"{', '.join(map(str, df.columns))}"
        )
    rows = [{k: _py(v) for k, v in row.items()} for row in df.to_dict("records")]
    groups: dict[Any, list[dict]] = {}
    if "trial_id" in df.columns and df["trial_id"].duplicated().any():
        for row in rows:
            groups.setdefault(row["trial_id"], []).append(row)
        if "training_iteration" in df.columns:
            for g in groups.values():
                g.sort(
                    key=lambda r: (
                        r.get("training_iteration") is None,
                        r.get("training_iteration"),
                    )
                )
    else:
        groups = {i: [row] for i, row in enumerate(rows)}
    out = []
    for key, group in groups.items():
        last = group[-1]
        config = _unflatten_slash(
            {c[len("config/") :]: last[c] for c in config_cols if not _is_missing(last[c])}
        )
        errored = any(str(r.get("status", "")).upper() == "ERROR" for r in group)
        out.append(st.TrialRecord(str(key), config, errored, _rows=group))
    return out


def _frame_loader(df: Any) -> Any:
    def load() -> tuple[list[dict], bool, int]:
        if df is None or df.empty:
            return [], False, 0
        return [{k: _py(v) for k, v in r.items()} for r in df.to_dict("records")], False, 0

    return load


def records_from_analysis(ea: Any) -> list[st.TrialRecord]:
    frames = ea.trial_dataframes
    return [
        st.TrialRecord(
            trial.trial_id,
            dict(trial.config),
            trial.status == "ERROR",
            summary=dict(trial.metric_analysis or {}) or None,
            last_result=trial.last_result or None,
            loader=_frame_loader(frames.get(trial.trial_id)),
        )
        for trial in ea.trials
    ]


def records_from_result_grid(rg: Any) -> list[st.TrialRecord]:
    out = []
    for i in range(len(rg)):
        res = rg[i]
        df = res.metrics_dataframe
        rows = (
            []
            if df is None
            else [{k: _py(v) for k, v in r.items()} for r in df.to_dict("records")]
        )
        config = res.config
        out.append(
            st.TrialRecord(
                str((res.metrics or {}).get("trial_id", i)),
                dict(config) if config else None,
                res.error is not None,
                last_result=res.metrics or None,
                _rows=rows,
            )
        )
    return out


def read_csv(loc: st.Location) -> Any:
    import io

    import pandas as pd

    # pandas >= 3 parses floats exactly by default and deprecates the option.
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    try:
        return pd.read_csv(io.BytesIO(st.read_bytes(loc)), **exact)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{loc.display} is empty: no header row, no trials") from None
