import numpy as np
import pytest

from rmbo_tune.bench import synthetic


def test_adversarial_meta_tasks_observe_the_negated_target():
    prob = synthetic.make_problem(
        np.random.default_rng(0), gaps=(0.0,), dim=2, n_meta=30, adversarial=True
    )
    X, y = prob.meta_tasks[0]
    assert X.shape == (30, 2)
    # Only the observation noise (sd 0.1) separates the meta-task from -f.
    assert np.abs(y + prob.f(X)).max() < 0.5
    assert np.corrcoef(y, prob.f(X))[0, 1] < -0.9


def test_maximum_in_several_dimensions_bounds_random_points():
    prob = synthetic.make_problem(np.random.default_rng(1), gaps=(), dim=3)
    values = prob.f(np.random.default_rng(2).random((5000, 3)))
    assert prob.f_max >= values.max()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dim", "0"], "argument --dim: must be >= 1"),
        (["--functions", "0"], "argument --functions: must be >= 1"),
        (["--adversarial", "--dissimilar"], "choose one of"),
        (["--option", "probe=2"], "probe"),
        (["--option", "no_such_option=1"], "no_such_option"),
        (["--methods", "rm-gp-ucb,gp-bogus"], "unknown method(s) ['gp-bogus'] in --methods"),
    ],
)
def test_cli_refuses_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit):
        synthetic.main(argv)
    assert message in capsys.readouterr().err


def test_cli_options_reach_the_engine(tmp_path, capsys):
    from rmbo_tune.bench import report

    def second_points(*extra):
        out = tmp_path / "-".join(extra or ("default",))
        argv = ["--adversarial", "--functions", "1", "--iterations", "3"]
        synthetic.main([*argv, "--methods", "rm-gp-ucb,", "--out", str(out), *extra])
        doc = report.load_results(out / "results.json")
        return doc["settings"], doc["runs"]["rm-gp-ucb"][0]["values"]

    settings, probed = second_points("--option", "probe_point=lowest")
    settings_off, unprobed = second_points("--option", "probe=false")
    assert settings_off["probe"] is False and "probe" not in settings
    assert settings["probe_point"] == "lowest"
    # This probe goes where the meta-tasks (observing -f) predict the lowest value: near the
    # target's maximum. Without it the second point follows the meta-tasks' optimum.
    assert probed[0] == unprobed[0] and probed[1] > unprobed[1]
