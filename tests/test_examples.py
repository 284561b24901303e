"""The example scripts, run as a user would (``python examples/X.py ...``) with tiny budgets.

Each script that starts Ray costs a Ray start-up (5-10 s); budgets are the smallest that still
exercise every step (meta-task experiments, the warm-started search, the printed summary).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.s3_server import CREDENTIALS, moto_s3

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The scripts; modules named _*.py are the helpers they share (examples/_common.py).
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def run_example(script: str, *args: str, timeout: float = 300, **env: str) -> tuple[int, str]:
    """Run ``examples/<script>`` in a fresh interpreter; returns (exit code, stdout + stderr)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environ.pop("RAY_ADDRESS", None)  # start a local Ray, never join a cluster by accident
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout + proc.stderr


def assert_ok(code: int, out: str) -> None:
    assert code == 0, out[-6000:]


def test_every_script_documents_itself_and_answers_help():
    # One interpreter for all scripts: importing Ray costs seconds per process.
    check = (
        "import os, runpy, sys\n"
        "for path in sys.argv[1:]:\n"
        "    sys.argv = [path, '--help']\n"
        # as `python examples/X.py` does: the script's folder first on sys.path (for _common)
        "    sys.path.insert(0, os.path.dirname(path))\n"
        "    try:\n"
        "        runpy.run_path(path, run_name='__main__')\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), (path, exc.code)\n"
        "    print('HELP-OK', path)\n"
    )
    scripts = [str(EXAMPLES / s) for s in SCRIPTS]
    proc = subprocess.run(
        [sys.executable, "-c", check, *scripts],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for script in scripts:
        assert f"HELP-OK {script}" in proc.stdout
    cnn_help = proc.stdout.split(f"HELP-OK {EXAMPLES / 'cluster.py'}")[1]
    cnn_help = cnn_help.split(f"HELP-OK {EXAMPLES / 'cnn_mnist.py'}")[0]
    for option in ("--data-dir", "--gpus-per-trial", "--epochs", "--meta-tasks", "--no-download"):
        assert option in cnn_help
    for script in SCRIPTS:
        source = (EXAMPLES / script).read_text()
        docstring = source.split('"""')[1]
        assert f"python examples/{script}" in docstring, f"{script}: no command in its docstring"


def test_cnn_mnist_without_data_stops_with_the_missing_file_named(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    code, out = run_example(
        "cnn_mnist.py",
        "--data-dir",
        str(empty),
        "--no-download",
        "--storage-path",
        str(tmp_path / "runs"),
        timeout=120,
    )
    assert code != 0
    assert "mnist.npz" in out and str(empty) in out
    assert "Traceback" not in out
    assert not (tmp_path / "runs").exists()  # stopped before any experiment


@pytest.mark.ray
def test_quickstart(tmp_path):
    code, out = run_example(
        "quickstart.py",
        "--storage-path",
        str(tmp_path),
        "--name",
        "qs",
        "--source-samples",
        "4",
        "--num-samples",
        "4",
    )
    assert_ok(code, out)
    assert re.search(r"best loss: -?\d+\.\d+ after 4 trials", out), out[-3000:]
    weight_lines = re.findall(r"trial \w+: nu=[\d.]+ +source-near=[\d.]+, source-far=[\d.]+", out)
    assert len(weight_lines) == 4, out[-3000:]
    for exp in ("source-near", "source-far", "target"):
        assert (tmp_path / "qs" / exp).is_dir()
    history = json.loads((tmp_path / "qs" / "target" / "rmbo_history.json").read_text())
    assert history["meta_tasks"] == ["source-near", "source-far"]
    # The script prints searcher.history from the object it passed to Tuner: the same records
    # as the file the searcher wrote in the experiment directory.
    printed = re.findall(r"trial (\w+): nu=", out)
    assert printed == [record["trial_id"] for record in history["suggestions"]]


def test_quickstart_refuses_to_reuse_a_run_folder(tmp_path):
    (tmp_path / "qs").mkdir()
    code, out = run_example("quickstart.py", "--storage-path", str(tmp_path), "--name", "qs")
    assert code != 0 and "exists" in out


@pytest.mark.ray
def test_synthetic(tmp_path):
    code, out = run_example(
        "synthetic.py",
        "--storage-path",
        str(tmp_path),
        "--name",
        "syn",
        "--functions",
        "1",
        "--iterations",
        "5",
    )
    assert_ok(code, out)
    for method in ("rm-gp-ucb", "gp-ucb"):
        row = re.search(rf"^{method} +(\d+\.\d+) ± (\d+\.\d+)$", out, re.MULTILINE)
        assert row, out[-3000:]
        assert float(row.group(1)) >= 0.0
        assert (tmp_path / "syn" / f"f0-{method}").is_dir()
    assert re.search(r"rm-gp-ucb: regret [\d.]+ after 5 trials; meta-weights nu=", out)


@pytest.mark.ray
def test_pima(tmp_path):
    code, out = run_example(
        "pima.py",
        "--storage-path",
        str(tmp_path),
        "--name",
        "pima",
        "--meta-stages",
        "1",
        "4",
        "--meta-samples",
        "2",
        "--num-samples",
        "3",
        "--epochs",
        "2",
    )
    assert_ok(code, out)
    assert re.search(r"best val_error: 0\.\d+ with \{'batch_size'", out), out[-3000:]
    trace = re.findall(r"^ +\d+ +val_error=.* logreg-stage1=[\d.]+, logreg-stage4=", out, re.M)
    assert len(trace) == 3, out[-3000:]
    assert sorted(p.name for p in (tmp_path / "pima").iterdir()) == [
        "logreg-stage1",
        "logreg-stage4",
        "ray.log",
        "target-stage5",
    ]
    # Ray's own log lines go to a file named in the last line, not to the terminal.
    assert out.rstrip().endswith(f"Ray's log: {tmp_path / 'pima' / 'ray.log'}"), out[-3000:]
    assert "INFO" not in out, out[-3000:]
    assert "INFO" in (tmp_path / "pima" / "ray.log").read_text()


@pytest.mark.ray
def test_cartpole(tmp_path):
    code, out = run_example(
        "cartpole.py",
        "--storage-path",
        str(tmp_path),
        "--name",
        "cp",
        "--n-similar",
        "1",
        "--n-random",
        "1",
        "--meta-samples",
        "2",
        "--num-samples",
        "3",
        "--episodes",
        "2",
    )
    assert_ok(code, out)
    assert re.search(r"best normalized_return: [01]\.\d+ with weights \[", out), out[-3000:]
    trace = re.findall(r"normalized_return=[\d.]+ .* similar=[\d.]+, random=[\d.]+", out)
    assert len(trace) == 3, out[-3000:]
    for exp in ("cartpole-similar0", "cartpole-random0", "target"):
        assert (tmp_path / "cp" / exp).is_dir()


@pytest.mark.ray
def test_cluster_with_a_local_ray_and_a_local_storage_path(tmp_path):
    code, out = run_example(
        "cluster.py",
        "--address",
        "local",
        "--workload",
        "logreg",
        "--storage-path",
        str(tmp_path),
        "--name",
        "run",
        "--n-meta",
        "1",
        "--meta-samples",
        "2",
        "--num-samples",
        "2",
        "--epochs",
        "2",
    )
    assert_ok(code, out)
    assert "Ray cluster resources: {" in out
    assert f"meta-tasks loaded from {tmp_path}/run/meta-*" in out
    assert re.search(r"final meta-weights: nu=[\d.]+ +meta-stage1=1\.00$", out, re.MULTILINE)
    assert re.search(r"best val_error: 0\.\d+ after 2 trials", out), out[-3000:]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "meta-stage1",
        "target",
    ]


@pytest.mark.ray
@pytest.mark.slow
def test_cluster_keeps_experiments_in_s3():
    from pyarrow import fs as pafs

    creds = CREDENTIALS
    with moto_s3() as (fs, query):
        uri = f"s3://bucket/rmbo?{query}"
        common = ["--address", "local", "--workload", "cartpole", "--storage-path", uri]
        common += ["--name", "run", "--epochs", "2"]
        code, out = run_example(
            "cluster.py",
            *common,
            "--n-meta",
            "1",
            "--meta-samples",
            "2",
            "--num-samples",
            "2",
            **creds,
        )
        assert_ok(code, out)
        assert "meta-tasks loaded from s3://bucket/rmbo/run/meta-*?endpoint_override" in out
        assert re.search(r"best normalized_return: [01]\.\d+ after 2 trials", out), out[-3000:]

        # A later search, in a new process, reads the same experiments back from S3.
        code, out = run_example(
            "cluster.py",
            *common,
            "--step",
            "target",
            "--target-name",
            "later",
            "--num-samples",
            "1",
            **creds,
        )
        assert_ok(code, out)
        assert re.search(r"final meta-weights: nu=1\.000 +meta-similar0=1\.00$", out, re.MULTILINE)
        listed = fs.get_file_info(pafs.FileSelector("bucket/rmbo/run"))
        assert sorted(i.base_name for i in listed) == [
            "later",
            "meta-similar0",
            "target",
        ]


@pytest.mark.ray
@pytest.mark.slow
def test_omniglot_on_the_shipped_subsets(tmp_path):
    code, out = run_example(
        "omniglot.py",
        "--storage-path",
        str(tmp_path),
        "--name",
        "om",
        "--n-meta",
        "1",
        "--meta-samples",
        "1",
        "--num-samples",
        "2",
        "--epochs",
        "1",
        "--image-size",
        "16",
        "--pairs-per-epoch",
        "32",
    )
    assert_ok(code, out)
    assert re.search(r"best val_error: [01]\.\d+ with \{'lr'", out), out[-3000:]
    assert len(re.findall(r"val_error=[\d.]+ .* siamese-Balinese=1\.00", out)) == 2
    for exp in ("siamese-Balinese", "target-Sanskrit"):
        assert (tmp_path / "om" / exp).is_dir()


@pytest.mark.ray
def test_make_tabular_pima_feeds_the_tabular_bench(tmp_path):
    data = tmp_path / "tabular"
    code, out = run_example(
        "make_tabular_pima.py",
        "--out",
        str(data),
        "--grid",
        "2",
        "--stages",
        "1",
        "2",
        "--epochs",
        "1",
    )
    assert_ok(code, out)
    # Ray's own log lines go to a file named in the last line, not to the terminal.
    assert f"Ray's log: {data / 'ray.log'}" in out
    assert "INFO" not in out and "tune.py" not in out, out[-3000:]
    assert "tune.py" in (data / "ray.log").read_text()
    lines = (data / "stage1.csv").read_text().splitlines()
    assert lines[0] == "batch_size,l2,lr,value"
    assert len(lines) == 1 + 8  # a 2 x 2 x 2 grid
    from rmbo_tune.bench import tabular_data, tabular_runs

    doc = tabular_runs.run(
        tabular_data.load_tabular(data, metric="value", mode="min"),
        methods=["rm-gp-ucb", "random"],
        budget=3,
        n_seeds=1,
    )
    assert {r["target"] for r in doc["runs"]["rm-gp-ucb"]} == {"stage1", "stage2"}
