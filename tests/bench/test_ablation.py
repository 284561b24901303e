"""The ablation pairs one method's runs with other options against the base's, by target."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmbo_tune.bench import ablation


def _run(target: str, seed: int, values: list[float]) -> dict:
    # optimum 1 and worst 0: normalized regret = 1 - best so far.
    return {"target": target, "seed": seed, "values": values, "optimum": 1.0, "worst": 0.0}


def _doc(runs: list[dict], options: dict | None = None, **settings) -> dict:
    base_settings = {"targets": ["a", "b"], "n_seeds": 2, "seed": 0, "methods": ["m"]}
    return {
        "task": "tabular",
        "metric": "value",
        "mode": "max",
        "settings": {**base_settings, "options": options or {}, **settings},
        "runs": {"m": runs},
    }


BASE = _doc(
    [_run("a", 0, [0.5, 0.9]), _run("a", 1, [0.7, 0.7]), _run("b", 0, [0.2, 1.0])],
)
VARIANT = _doc(
    [_run("a", 0, [0.6, 0.7]), _run("a", 1, [0.8, 0.8]), _run("b", 0, [0.6, 0.6])],
    options={"tau": 0.0},
    methods=["m", "other"],
)


def test_pair_gives_the_variant_minus_the_base_paired_by_target() -> None:
    board = ablation.pair(BASE, VARIANT, "m", [1, 2, 3])
    assert sorted(board) == [1, 2]  # runs are two evaluations long
    # @1: base regret per target 0.4 (a, seeds averaged) and 0.8 (b); variant 0.3 and 0.4.
    one = board[1]
    assert one["reference"] == pytest.approx(0.35) and one["best_regret"] == pytest.approx(0.6)
    assert one["diff"] == pytest.approx(-0.25) and one["targets"] == 2
    assert one["se"] == pytest.approx(np.std([-0.1, -0.4], ddof=1) / np.sqrt(2))
    # @2: base 0.2 and 0.0, variant 0.25 and 0.4: the variant is behind.
    assert board[2]["diff"] == pytest.approx(0.225)


def test_pair_refuses_runs_that_would_not_pair() -> None:
    elsewhere = _doc(VARIANT["runs"]["m"], data="/another/checkout/svm-wistuba")
    assert ablation.pair(BASE, elsewhere, "m", [1])[1]["diff"] == pytest.approx(-0.25)
    other_tasks = _doc(VARIANT["runs"]["m"], tasks={"a": {"rows": 288}})
    with pytest.raises(ValueError, match="setting 'tasks' differs"):
        ablation.pair(BASE, other_tasks, "m", [1])
    other_seeds = _doc(VARIANT["runs"]["m"], n_seeds=3)
    with pytest.raises(ValueError, match=r"setting 'n_seeds' differs \(base 2, variant 3\)"):
        ablation.pair(BASE, other_seeds, "m", [1])
    with pytest.raises(ValueError, match=r"the base has no runs of 'x'; it has \['m'\]"):
        ablation.pair(BASE, VARIANT, "x", [1])
    synthetic = {**VARIANT, "task": "synthetic"}
    with pytest.raises(ValueError, match="the variant holds a 'synthetic' benchmark"):
        ablation.pair(BASE, synthetic, "m", [1])
    with pytest.raises(ValueError, match="mode differs"):
        ablation.pair(BASE, {**VARIANT, "mode": "min"}, "m", [1])
    with pytest.raises(ValueError, match=r"no horizon of \[3, 5\] within the runs' 2 eval"):
        ablation.pair(BASE, VARIANT, "m", [3, 5])


def _write(folder, name: str, doc: dict) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "results.json").write_text(json.dumps(doc))


def test_folders_pair_their_benchmarks_by_name(tmp_path) -> None:
    base, variant = tmp_path / "base", tmp_path / "variant"
    for name in ("svm", "knn", "only-base"):
        _write(base, name, BASE)
    for name in ("svm", "knn", "only-variant"):
        _write(variant, name, VARIANT)
    boards = ablation.pair_folders(base, variant, "m", [1, 2])
    assert list(boards) == ["knn", "svm"]
    assert boards["svm"][1]["diff"] == pytest.approx(-0.25)
    # Two results directories pair directly, named after the variant's.
    assert list(ablation.pair_folders(base / "svm", variant / "knn", "m", [1])) == ["knn"]
    _write(tmp_path / "odd", "svm", _doc(BASE["runs"]["m"], seed=7))
    with pytest.raises(ValueError, match="svm: setting 'seed' differs"):
        ablation.pair_folders(base, tmp_path / "odd", "m", [1])
    _write(tmp_path / "none", "hgb", VARIANT)
    with pytest.raises(FileNotFoundError, match="share no benchmark directory"):
        ablation.pair_folders(base, tmp_path / "none", "m", [1])
    with pytest.raises(FileNotFoundError, match="no benchmark results at"):
        ablation.pair_folders(base, tmp_path / "missing", "m", [1])


def test_comma_separated_folders_pool_their_seeds(tmp_path) -> None:
    # Two seed sets of each side (base seeds 0 and 1), each numbering its seeds from 0.
    for side, doc in (("base", BASE), ("variant", VARIANT)):
        for k in (0, 1):
            _write(
                tmp_path / f"{side}-{k}",
                "svm",
                {**doc, "settings": {**doc["settings"], "seed": k}},
            )
        _write(tmp_path / f"{side}-0", "only-first", doc)
    boards = ablation.pair_folders(
        f"{tmp_path}/base-0,{tmp_path}/base-1",
        f"{tmp_path}/variant-0,{tmp_path}/variant-1",
        "m",
        [1, 2],
    )
    assert list(boards) == ["svm"]  # a benchmark every folder holds
    # The same runs twice over: the same means, and each target averaged over four seeds.
    single = ablation.pair_folders(tmp_path / "base-0", tmp_path / "variant-0", "m", [1, 2])
    assert boards["svm"][1]["diff"] == pytest.approx(single["svm"][1]["diff"])
    assert boards["svm"][1]["targets"] == 2


def test_pooled_folders_must_share_the_protocol_and_not_repeat_a_seed(tmp_path) -> None:
    noisy = {**BASE, "settings": {**BASE["settings"], "seed": 1, "noise": 0.5}}
    for name, doc in (("a", BASE), ("b", noisy), ("c", BASE)):
        _write(tmp_path / name, "svm", doc)
    _write(tmp_path / "v", "svm", VARIANT)
    with pytest.raises(ValueError, match="setting 'noise' differs"):
        ablation.pair_folders(f"{tmp_path}/a,{tmp_path}/b", tmp_path / "v", "m", [1])
    with pytest.raises(ValueError, match="base seed 0 twice"):
        ablation.pair_folders(f"{tmp_path}/a,{tmp_path}/c", tmp_path / "v", "m", [1])


def test_markdown_marks_where_the_variant_is_behind() -> None:
    text = ablation.markdown({"grid": ablation.pair(BASE, VARIANT, "m", [1, 2])}, "m")
    assert "| grid | 2 | 0.3500 / 0.6000: -0.2500 ± 0.1500 |" in text
    assert "0.3250 / 0.1000: **+0.2250 ± 0.1750** |" in text


def test_command_writes_the_table_and_the_picture(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    base, variant, out = tmp_path / "base", tmp_path / "variant", tmp_path / "out"
    _write(base, "svm", BASE)
    _write(variant, "svm", VARIANT)
    args = ["--method", "m", "--horizons", "1,2", "--out", str(out)]
    ablation.main([str(base), str(variant), *args])
    assert "| svm | 2 |" in (out / "ablation.md").read_text()
    assert (out / "ablation.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        ablation.main([str(base), str(variant), "--method", "nope", "--out", str(out)])
    assert "has no runs of 'nope'" in capsys.readouterr().err
