import csv
import json
from pathlib import Path

import numpy as np
import pytest

from rmbo_tune.bench import make_lcdb_grid, tabular
from tests.bench.test_make_hgb_grid import shipped_suite

DATA = Path(make_lcdb_grid.__file__).resolve().parent / "data" / "lcdb-learners"
HEADER = [
    "openmlid",
    "learner",
    "size_train",
    "size_test",
    "outer_seed",
    "inner_seed",
    "traintime",
    "score_train",
    "score_valid",
    "score_test",
]
RF, SVC = "sklearn.ensemble.RandomForestClassifier", "SVC_rbf"


def write_source(folder: Path, rows: list[tuple]) -> Path:
    """LCDB's two source files in their real format: ``rows`` of ``(openmlid, learner,
    size_train, outer_seed, score_test)``, and names for datasets 3 and 6."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "database-accuracy.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for openml_id, learner, size, seed, score in rows:
            writer.writerow([openml_id, learner, size, 100, seed, 0, 0.01, 1.0, 0.5, score])
    with open(folder / "datasets.csv", "w", newline="") as f:
        f.write("openmlid,Name,AutoCorrelation\n3,kr-vs-kp,0.99\n6,Letter (v2),0.04\n")
    return folder


SOURCE_ROWS = [
    # Dataset 3: both learners reach 200; the 100-row scores are not the largest size.
    (3, RF, 100, 0, 0.5),
    (3, RF, 200, 0, 0.8),
    (3, RF, 200, 1, 0.9),
    (3, SVC, 200, 0, 0.7),
    (3, SVC, 100, 0, 0.99),
    # MultinomialNB has no score on dataset 3; it is left out, so 3 stays.
    (6, "sklearn.naive_bayes.MultinomialNB", 50, 0, 0.3),
    # Dataset 6: SVC stops at 50 of 100, so 6 is dropped.
    (6, RF, 100, 0, 0.6),
    (6, SVC, 50, 0, 0.6),
    # Dataset 11: no name in datasets.csv.
    (11, RF, 64, 0, 0.25),
    (11, SVC, 64, 0, 0.75),
]


def test_each_learner_scores_its_mean_test_accuracy_at_the_largest_size(tmp_path):
    source = write_source(tmp_path / "lcdb", SOURCE_ROWS)
    tables = make_lcdb_grid.learner_tables(source / "database-accuracy.csv")
    assert tables == {
        "3": {"RandomForest": pytest.approx(0.85), "SVC_rbf": 0.7},
        "11": {"RandomForest": 0.25, "SVC_rbf": 0.75},
    }


def test_main_writes_one_learner_table_per_kept_dataset(tmp_path):
    source = write_source(tmp_path / "lcdb", SOURCE_ROWS)
    make_lcdb_grid.main(["--source", str(source), "--out", str(tmp_path / "out")])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["11.csv", "3-kr-vs-kp.csv"]
    with open(tmp_path / "out" / "3-kr-vs-kp.csv") as f:
        assert list(csv.reader(f)) == [
            ["learner", "value"],
            ["SVC_rbf", "0.7"],
            ["RandomForest", "0.85"],
        ]


def test_names_drop_modules_suffixes_and_odd_characters():
    assert make_lcdb_grid.short_name("sklearn.ensemble.ExtraTreesClassifier") == "ExtraTrees"
    assert make_lcdb_grid.short_name(
        "sklearn.discriminant_analysis.LinearDiscriminantAnalysis"
    ) == ("LinearDiscriminant")
    assert make_lcdb_grid.short_name("SVC_rbf") == "SVC_rbf"
    assert make_lcdb_grid.file_name("6", "Letter (v2)") == "6-letter-v2"
    assert make_lcdb_grid.file_name("11", None) == "11"


def test_a_source_folder_without_the_database_is_named_in_the_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"database-accuracy\.csv"):
        make_lcdb_grid.find_source(str(tmp_path))
    with pytest.raises(SystemExit):
        make_lcdb_grid.main(["--source", str(tmp_path), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_shipped_tables_hold_the_same_19_learners_for_146_datasets():
    files = sorted(DATA.glob("*.csv"))
    assert len(files) == 146
    learners = None
    for f in files:
        with open(f) as fh:
            rows = list(csv.DictReader(fh))
        names = sorted(r["learner"] for r in rows)
        learners = learners or names
        assert names == learners and len(names) == 19, f
        assert all(0.0 <= float(r["value"]) <= 1.0 for r in rows), f
    assert "MultinomialNB" not in learners and "GradientBoosting" in learners


def test_the_suite_is_one_categorical_column_searched_to_the_last_learner(tmp_path):
    bench = shipped_suite("lcdb")
    assert len(bench.tasks) == 146
    assert all(task.X.shape == (19, 19) for task in bench.tasks)
    assert all(np.array_equal(task.X.sum(axis=1), np.ones(19)) for task in bench.tasks)
    out = tmp_path / "run"
    args = ["--suite", "lcdb", "--targets", "1067-kc1", "--methods", "random", "--seeds", "1"]
    tabular.main([*args, "--out", str(out)])
    result = json.loads((out / "results.json").read_text())
    assert result["budget"] == 19
    assert sorted(result["runs"]["random"][0]["configs"]) == list(range(19))
