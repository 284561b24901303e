import numpy as np
import pytest

from rmbo_tune.engine.options import MetaBOOptions


def test_defaults_keep_the_papers_schedule_and_authors_beta():
    o = MetaBOOptions()
    # r None: the paper's 0.7 up to six dimensions, slower beyond (meta_weights.decay_rate).
    assert (o.kernel, o.r, o.epsilon, o.eta_n, o.tau, o.gap_aggregation) == (
        "matern52",
        None,
        0.7,
        1.0,
        None,
        "mean",
    )
    assert o.beta_scale == 0.2
    assert (o.variant, o.gap_estimate, o.output_scaling) == ("robust", "ranking", "rank")


def test_the_tasks_mean_is_the_prior_mean_of_rm_gp_ts_by_default_only():
    assert MetaBOOptions().prior_mean("rm-gp-ts") and not MetaBOOptions().prior_mean("rm-gp-ucb")
    for value in (True, False):
        o = MetaBOOptions(meta_prior_mean=value)
        assert o.prior_mean("rm-gp-ts") is value and o.prior_mean("rm-gp-ucb") is value
    paper = MetaBOOptions.from_kwargs({"variant": "paper"})
    assert not paper.prior_mean("rm-gp-ts")


def test_paper_variant_is_the_papers_practice():
    o = MetaBOOptions.from_kwargs({"variant": "paper"})
    assert (o.gap_estimate, o.output_scaling, o.hyper_prior, o.probe, o.target_warp) == (
        "bound",
        "shared",
        False,
        False,
        "none",
    )
    assert o.repeat_escalations == 0 and MetaBOOptions().repeat_escalations == 4
    assert o.tau == 1.0 and MetaBOOptions.from_kwargs({"variant": "paper", "tau": 0.5}).tau == 0.5
    assert o.r == 0.7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kernel": "rbf"}, "kernel must be one of"),
        ({"output_scaling": "global"}, "output_scaling must be one of"),
        ({"gap_aggregation": "median"}, "gap_aggregation must be one of"),
        ({"r": 1.0}, r"r must be in \(0, 1\) or None, got 1.0"),
        ({"meta_basis_nu": 1.5}, r"meta_basis_nu must be in \[0, 1\], got 1.5"),
        ({"meta_basis_nu": -0.1}, r"meta_basis_nu must be in \[0, 1\]"),
        ({"meta_basis_tasks": -1.0}, r"meta_basis_tasks must be finite and >= 0 .*got -1.0"),
        ({"meta_basis_tasks": "auto"}, r"meta_basis_tasks .* got 'auto'"),
        ({"meta_basis_tasks": float("inf")}, r"meta_basis_tasks must be finite"),
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ({"tau": -1.0}, "tau must be a finite number >= 0 or None, got -1.0"),
        ({"beta": -0.1}, "beta must be a finite number >= 0"),
        ({"n_candidates": 0}, "n_candidates must be an integer >= 1"),
        ({"max_meta_observations": 4}, "max_meta_observations must be an integer >= 8 or None"),
        ({"max_meta_observations": 100.0}, "max_meta_observations must be an integer"),
        ({"n_restarts": 1.5}, "n_restarts must be an integer"),
        ({"n_initial": -1}, "n_initial must be a non-negative integer"),
        ({"polish_target": "yes"}, "polish_target must be True or False"),
        ({"learn_weights": 1}, "learn_weights must be True or False"),
        ({"variant": "fast"}, "variant must be one of"),
        ({"gap_estimate": "lemma"}, "gap_estimate must be one of"),
        ({"probe": "meta-worst"}, "probe must be True or False"),
        ({"ts_early_basis": "yes"}, "ts_early_basis must be True or False"),
        ({"meta_prior_mean": 1}, "meta_prior_mean must be True, False or None"),
        ({"probe_after": 0}, "probe_after must be an integer >= 1, got 0"),
        ({"portfolio_start": -1}, "portfolio_start must be an integer >= 0, got -1"),
        ({"probe_point": "worst"}, "probe_point must be one of"),
        ({"meta_term": "ei"}, "meta_term must be one of"),
        ({"taf_disagreement": 1.5}, r"taf_disagreement must be in \[0, 1\] or None, got 1.5"),
        ({"taf_disagreement": "high"}, "taf_disagreement must be in .* got 'high'"),
        ({"repeat_escalations": -1}, "repeat_escalations must be an integer >= 0, got -1"),
        ({"repeat_escalations": 2.0}, "repeat_escalations must be an integer >= 0, got 2.0"),
        ({"escalation": "double"}, "escalation must be one of .* got 'double'"),
        ({"target_warp": "log"}, "target_warp must be one of"),
        ({"input_warp": 1}, 'input_warp must be an integer >= 2, "tasks" or None, got 1'),
        ({"input_warp": True}, "input_warp must be .* got True"),
        ({"input_warp": "task"}, "input_warp must be .* got 'task'"),
        ({"ts_scale": 2.0}, "ts_scale must be one of"),
        ({"tau": float("inf")}, "tau must be a finite number >= 0 or None, got inf"),
        ({"beta_scale": float("inf")}, "beta_scale must be a finite number > 0"),
        ({"epsilon": float("nan")}, "epsilon must be a finite number > 0, got nan"),
        ({"beta": float("inf")}, "beta must be a finite number >= 0 or None"),
        ({"tau": "1"}, "tau must be a finite number >= 0 or None, got '1'"),
        ({"r": True}, r"r must be in \(0, 1\) or None, got True"),
        ({"n_initial": True}, "n_initial must be a non-negative integer or None, got True"),
    ],
)
def test_bad_options_raise_naming_the_option(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MetaBOOptions(**kwargs)


def test_unknown_options_are_named():
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['learning_rate'\]"):
        MetaBOOptions.from_kwargs({"learning_rate": 0.1})


def test_numpy_scalars_are_taken_as_pythons():
    opts = MetaBOOptions.from_kwargs({"n_candidates": np.int64(512), "probe": np.False_})
    assert opts.n_candidates == 512 and type(opts.n_candidates) is int and opts.probe is False
