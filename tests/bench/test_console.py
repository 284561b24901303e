"""Terminal output of long runs: progress bars, Ray's logs kept off the terminal."""

from __future__ import annotations

import io
import logging
import os
import warnings

from rmbo_tune.bench.console import Progress, ray_logs_to_file


def test_progress_prints_one_line_per_step_off_a_terminal() -> None:
    buf = io.StringIO()
    bar = Progress("runs", 4, stream=buf)
    bar.step("a")
    bar.step("b")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("runs [") and "0/4" in lines[0]
    assert "2/4" in lines[2] and "left" in lines[2] and lines[2].endswith("b")
    assert lines[2].count("#") == 14  # half of the 28-character bar


def test_progress_redraws_in_place_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    buf = Tty()
    bar = Progress("x", 2, stream=buf)
    bar.step()
    bar.step()
    text = buf.getvalue()
    assert text.count("\r") == 3 and text.endswith("2/2  0:00 elapsed\n")


def test_ray_logs_warnings_and_stderr_go_to_the_file_and_come_back(tmp_path, capfd) -> None:
    ray_logger = logging.getLogger("ray.tune.some_module")
    before = logging.getLogger("ray").handlers[:]
    with ray_logs_to_file(tmp_path / "ray.log") as path:
        ray_logger.warning("process_trial_result took 0.55 s")
        warnings.warn("a deprecation", DeprecationWarning, stacklevel=1)
        os.write(2, b"raylet says hello\n")
    ray_logger.propagate = True
    out, err = capfd.readouterr()
    assert "process_trial_result" not in out + err and "raylet" not in out + err
    text = path.read_text()
    assert "process_trial_result took 0.55 s" in text
    assert "a deprecation" in text and "raylet says hello" in text
    assert logging.getLogger("ray").handlers == before
    os.write(2, b"back on stderr\n")
    assert "back on stderr" in capfd.readouterr().err


def test_the_log_is_named_on_exit_also_when_the_run_fails(tmp_path, capfd) -> None:
    log = tmp_path / "ray.log"
    try:
        with ray_logs_to_file(log, announce=True):
            print("inside")
            raise RuntimeError("trial failed")
    except RuntimeError:
        pass
    out, _ = capfd.readouterr()
    assert out.splitlines() == ["inside", f"Ray's log: {log}"]
    with ray_logs_to_file(log):
        pass
    assert "Ray's log" not in capfd.readouterr().out
