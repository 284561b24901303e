"""The method registry: the one list of method names and what each one builds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rmbo_tune.engine import MetaBO, acquisition, methods
from rmbo_tune.engine.meta_basis import MetaBasisGP, MetaBasisSample


def test_name_lists_derive_from_the_registry() -> None:
    assert methods.METHODS == tuple(methods.REGISTRY)
    assert set(methods.ROBUST_METHODS) == {"rm-gp-ucb", "rm-gp-ts"}
    assert set(methods.ROBUST_METHODS) <= set(methods.META_METHODS)
    assert not {"gp-ucb", "gp-ts", "random"} & set(methods.META_METHODS)


def test_unknown_method_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"method must be one of .*'rm-gp-ucb'.*got 'ucb'"):
        methods.check_method("ucb")


def test_meta_methods_without_meta_tasks_fall_back_to_their_cold_form() -> None:
    reg = methods.REGISTRY
    assert reg["rm-gp-ucb"].builder(False) is reg["gp-ucb"].builder(False)
    assert reg["rgpe"].builder(False) is reg["gp-ucb"].builder(True)
    assert reg["rm-gp-ts"].builder(False) is not reg["rm-gp-ts"].builder(True)
    assert reg["rm-gp-ts"].builder(False) is reg["gp-ts"].builder(True)
    assert reg["random"].builder(True) is None


@pytest.mark.parametrize(
    ("method", "branches"),
    [
        ("rm-gp-ucb", {"combined"}),
        ("rgpe", {"ensemble"}),
        ("taf", {"ensemble"}),
        ("gp-ucb", {"target"}),
        ("gp-ts", {"target"}),
        ("random", {"random"}),
    ],
)
def test_each_method_builds_its_own_acquisition(method, branches) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((12, 2))
    opt = MetaBO(2, [(X, -((X - 0.3) ** 2).sum(1))], method, seed=0, n_initial=0, probe=False)
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, float(-((x - 0.3) ** 2).sum()))
    assert {r["branch"] for r in opt.history} == branches


def test_rm_gp_ts_draws_from_the_meta_tasks_with_probability_nu() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((12, 2))
    opt = MetaBO(2, [(X, X.sum(1))], "rm-gp-ts", seed=0, probe=False, r=0.95)
    for _ in range(8):
        x = opt.ask()
        opt.tell(x, float(x.sum()))
    branches = [r["branch"] for r in opt.history]
    assert branches[0] == "meta"  # nu = 1
    assert set(branches) <= {"meta", "target"}


def test_meta_sample_pool_skips_negligible_weights() -> None:
    rng = np.random.default_rng(2)
    tasks = [(rng.random((10, 2)), rng.standard_normal(10)) for _ in range(3)]
    opt = MetaBO(2, tasks, "rm-gp-ts", seed=0)
    pool = methods.MetaSamplePool(opt.meta, opt._fixed, opt.options, seed=0)
    sample = pool.draw(np.random.default_rng(0), np.array([0.5, 0.5, 0.0]))
    assert sample.W.shape[0] == 2


def _mirror_context(n=12, method="rm-gp-ucb", **options):
    """A method's context after ``n`` evaluations on a target that is the mirror image of
    its meta-task (after 12, nu is spent)."""
    rng = np.random.default_rng(2)
    X = rng.random((30, 2))

    def f(Z):
        return np.sin(5 * Z[:, 0]) + Z[:, 1]

    opt = MetaBO(2, [(X, -f(X))], method, seed=0, **options)
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, float(f(x[None])[0]))
    record = methods.new_record(n, 0, opt.method, opt.nu, opt.weight_state, True)
    return opt._context(n, record)


def _late_target_model(n=12, **options):
    """The model behind RM-GP-UCB's target term (:func:`_mirror_context`)."""
    context = _mirror_context(n, **options)
    return context, methods._late_target(context).model


def test_the_improvement_meta_term_measures_each_task_from_its_incumbent() -> None:
    context = _mirror_context(n=2, meta_term="improvement", probe=False)
    assert context.nu > 0
    a = methods.REGISTRY["rm-gp-ucb"].build(context)
    assert isinstance(a, acquisition.RMUCB)
    np.testing.assert_allclose(a.incumbents, context.meta.predict(context.X)[0].max(1))
    default = methods.REGISTRY["rm-gp-ucb"].build(_mirror_context(n=2, probe=False))
    assert default.incumbents is None  # eq. 2's mean of the tasks' bounds
    first = methods.REGISTRY["rm-gp-ucb"].build(_mirror_context(n=0, meta_term="improvement"))
    assert first.incumbents is None  # nothing observed yet: the mean


def test_tafs_form_weighs_the_targets_expected_improvement_until_nu_reaches_meta_basis_nu():
    context = _mirror_context(n=2, meta_term="taf", probe=False)
    assert context.nu > context.options.meta_basis_nu
    a = methods.REGISTRY["rm-gp-ucb"].build(context)
    assert isinstance(a, acquisition.RMUCB)
    assert a.best_y == pytest.approx(float(context.y.max()))
    np.testing.assert_allclose(a.incumbents, context.meta.predict(context.X)[0].max(1))
    late = _mirror_context(n=2, meta_term="taf", probe=False, meta_basis_nu=0.6)
    assert 0.0 < late.nu <= 0.6
    b = methods.REGISTRY["rm-gp-ucb"].build(late)
    assert b.best_y is None and b.incumbents is not None  # the target's bound again
    first = methods.REGISTRY["rm-gp-ucb"].build(_mirror_context(n=0, meta_term="taf"))
    assert first.best_y is None and first.incumbents is None  # nothing observed: eq. 2


@pytest.mark.parametrize("form", ["shrink", "beta"])
def test_a_shrink_escalation_divides_the_meta_terms_weight(form) -> None:
    context = _mirror_context(n=2, probe=False, escalation=form)
    assert context.nu > 0
    plain = methods.REGISTRY["rm-gp-ucb"].build(context)
    assert plain.nu == context.nu
    escalated = methods.REGISTRY["rm-gp-ucb"].build(replace(context, escalation=2.0))
    # "shrink" divides nu by the factor that divides the length scales; "beta" keeps it.
    assert escalated.nu == pytest.approx(context.nu / 2.0 if form == "shrink" else context.nu)


class _FirstDraw:
    """A generator whose first ``random()`` returns ``u``; the rest is ``rng``'s."""

    def __init__(self, u: float, rng: np.random.Generator) -> None:
        self.u, self.rng = u, rng

    def random(self, *args, **kwargs):
        if self.u is None:
            return self.rng.random(*args, **kwargs)
        u, self.u = self.u, None
        return u

    def __getattr__(self, name: str):
        return getattr(self.rng, name)


@pytest.mark.parametrize("form", ["shrink", "beta"])
def test_a_shrink_escalation_draws_rm_gp_tss_task_branch_with_nu_divided(form) -> None:
    context = _mirror_context(n=2, method="rm-gp-ts", probe=False, escalation=form)
    assert context.nu > 0
    # A draw between nu / 2 and nu takes the tasks' branch, escalated or not under "beta";
    # under "shrink" the escalated draw takes the target's.
    u = 0.75 * context.nu
    first = replace(context, rng=_FirstDraw(u, np.random.default_rng(0)), record={})
    methods.REGISTRY["rm-gp-ts"].build(first)
    assert first.record["branch"] == "meta"
    rng = _FirstDraw(u, np.random.default_rng(0))
    escalated = replace(context, rng=rng, record={}, escalation=2.0)
    methods.REGISTRY["rm-gp-ts"].build(escalated)
    assert escalated.record["branch"] == ("target" if form == "shrink" else "meta")


def test_rm_gp_ucb_adds_the_committees_spread_by_default_and_the_tasks_bounds_with_tau() -> None:
    context = _mirror_context(n=2, probe=False)
    default = methods.REGISTRY["rm-gp-ucb"].build(context)
    assert isinstance(default, acquisition.RMUCB) and default.tau is None
    # The committee's prior is the target GP's own.
    gp = context.gp
    assert default.target_var == pytest.approx(gp.scale**2 * gp.gp.hyper.signal_var)
    paper = methods.REGISTRY["rm-gp-ucb"].build(_mirror_context(n=2, variant="paper"))
    assert isinstance(paper, acquisition.RMUCB) and paper.tau == 1.0
    means = methods.REGISTRY["rm-gp-ucb"].build(_mirror_context(n=2, probe=False, tau=0.0))
    assert isinstance(means, acquisition.RMUCB) and means.tau == 0.0
    X = np.random.default_rng(3).random((5, 2))
    mu, sigma = default.meta.predict(X)
    _, sigma_t = default.ucb.target.predict(X)
    spread = acquisition.committee_std(
        default.weights, sigma, default.meta.prior_var, sigma_t, default.target_var
    )
    target_ucb = default.ucb.values(X)
    expected = default.nu * (default.weights @ mu + spread) + (1 - default.nu) * target_ucb
    np.testing.assert_allclose(default.values(X), expected)
    mu, _ = means.meta.predict(X)  # its own run: tau=0 chose other points
    expected = means.nu * (means.weights @ mu) + (1 - means.nu) * means.ucb.values(X)
    np.testing.assert_allclose(means.values(X), expected)


def test_rm_gp_ts_samples_the_tasks_at_their_full_spread_by_default() -> None:
    rng = np.random.default_rng(2)
    tasks = [(rng.random((10, 2)), rng.standard_normal(10)) for _ in range(2)]
    spreads = []
    for tau in (None, 1.0, 0.0):
        opt = MetaBO(2, tasks, "rm-gp-ts", seed=0, tau=tau)
        pool = methods.MetaSamplePool(opt.meta, opt._fixed, opt.options, seed=0)
        spreads.append(float(np.std(pool.ws)))
    assert spreads[0] == spreads[1] > spreads[2]


def test_rm_gp_ucb_keeps_the_tasks_mean_as_a_basis_once_nu_is_spent() -> None:
    context, model = _late_target_model()
    assert context.nu <= context.options.meta_basis_nu
    assert isinstance(model, MetaBasisGP)
    assert model.coef < 0  # the target is the tasks' mirror image


def _two_task_context(method, **options):
    """A context after 12 evaluations of a target that follows the second of two tasks."""
    rng = np.random.default_rng(4)
    X = rng.random((30, 2))
    tasks = [(X, np.sin(5 * X[:, 0]) + X[:, 1]), (X, np.cos(4 * X[:, 1]) - X[:, 0])]
    opt = MetaBO(2, tasks, method, seed=0, **options)
    for _ in range(12):
        x = opt.ask()
        opt.tell(x, float(np.cos(4 * x[1]) - x[0]))
    record = methods.new_record(12, 0, opt.method, opt.nu, opt.weight_state, True)
    return opt._context(12, record)


@pytest.mark.parametrize("method", ["rm-gp-ucb", "rm-gp-ts"])
@pytest.mark.parametrize("task_var", [2.0, "evidence"])
def test_both_robust_methods_pass_the_tasks_deviations_option_to_the_basis(method, task_var):
    context = _two_task_context(method, meta_basis_tasks=task_var)
    assert context.nu <= context.options.meta_basis_nu
    if method == "rm-gp-ucb":
        basis = methods._late_target(context).model.basis
    else:
        basis = methods._thompson(context, late=True).basis
    if task_var == "evidence":
        assert basis.task_var in (0.0, 0.25, 1.0, 4.0)
    else:
        assert basis.task_var == 2.0 and len(basis.sd) == 2 + 2


def test_the_target_gp_stays_alone_while_nu_is_large_or_without_meta_basis_nu() -> None:
    context, model = _late_target_model(n=1)
    assert context.nu > context.options.meta_basis_nu and model is context.gp
    context, model = _late_target_model(meta_basis_nu=0.0)
    assert context.nu <= 0.05 and model is context.gp


def _given_context(n_given, pending_first=False):
    """RM-GP-UCB's context after ``n_given`` random points of a target that is a copy of
    its meta-task, told before any suggestion (or each marked pending first, as if the
    search had chosen it)."""
    rng = np.random.default_rng(3)
    X = rng.random((30, 2))

    def f(Z):
        return np.sin(5 * Z[:, 0]) + Z[:, 1]

    opt = MetaBO(2, [(X, f(X))], seed=0)
    for x in rng.random((n_given, 2)):
        if pending_first:
            opt.add_pending(x)
        opt.tell(x, float(f(x[None])[0]))
    record = methods.new_record(n_given, 0, opt.method, opt.nu, opt.weight_state, True)
    return opt, opt._context(n_given, record)


def test_given_observations_give_the_target_the_basis_from_the_first_suggestion() -> None:
    opt, context = _given_context(5)
    assert opt.n_given == context.n_given == 5
    assert context.nu > context.options.meta_basis_nu  # the task orders every pair right
    model = methods._late_target(context).model
    assert isinstance(model, MetaBasisGP) and model.bound
    assert model.coef > 0 and context.record["mean_coefficient"] == model.coef
    # Fewer than min_fit_observations given, or the same points chosen by the search: the
    # basis waits for nu.
    opt, context = _given_context(4)
    assert opt.n_given == 4 and methods._late_target(context) is context.target
    opt, context = _given_context(5, pending_first=True)
    assert opt.n_given == 0 and context.nu > context.options.meta_basis_nu
    assert methods._late_target(context) is context.target
    # meta_basis_nu=0 (the paper): never.
    opt, context = _given_context(5)
    off = replace(context, options=replace(context.options, meta_basis_nu=0.0))
    assert methods._late_target(off) is off.target


def test_meta_prior_mean_gives_the_target_the_tasks_mean_from_the_first_observation() -> None:
    context, model = _late_target_model(n=1, meta_prior_mean=True)
    assert context.nu > context.options.meta_basis_nu
    assert isinstance(model, MetaBasisGP) and not model.bound
    assert context.record["mean_coefficient"] == model.coef
    # The bound is the target GP's own; the mean carries the tasks' shape.
    mu, sigma = model.predict(context.fixed)
    np.testing.assert_allclose(sigma, context.gp.predict(context.fixed)[1], rtol=1e-12)
    assert not np.allclose(mu, context.gp.predict(context.fixed)[0])
    # Also with meta_basis_nu=0, once nu is spent; nothing observed: the target GP alone.
    context, model = _late_target_model(meta_prior_mean=True, meta_basis_nu=0.0)
    assert isinstance(model, MetaBasisGP) and not model.bound
    context, model = _late_target_model(n=0, meta_prior_mean=True)
    assert model is context.gp


def test_meta_prior_mean_gives_rm_gp_ts_samples_of_that_model_from_the_first_observation() -> None:
    # RM-GP-TS's default (meta_prior_mean=None); RM-GP-UCB's target is the cold GP then.
    context = _mirror_context(n=2, method="rm-gp-ts")
    assert context.options.meta_prior_mean is None
    assert methods._late_target(context) is context.target
    assert context.nu > context.options.meta_basis_nu
    sample = methods._thompson(context, late=True)
    assert isinstance(sample, MetaBasisSample) and context.record["branch"] == "target"
    # The coefficients at the posterior mean of RM-GP-UCB's prior-mean model.
    model = methods._late_target(
        replace(context, options=replace(context.options, meta_prior_mean=True))
    ).model
    np.testing.assert_allclose(sample.basis_w, model.beta_bar, rtol=1e-9)
    # Also with meta_basis_nu=0; nothing observed, or GP-TS: the target alone.
    no_basis = _mirror_context(n=2, method="rm-gp-ts", meta_prior_mean=True, meta_basis_nu=0.0)
    assert isinstance(methods._thompson(no_basis, late=True), MetaBasisSample)
    blind = _mirror_context(n=0, method="rm-gp-ts", meta_prior_mean=True)
    assert isinstance(methods._thompson(blind, late=True), acquisition.SampledFunction)
    assert isinstance(methods._thompson(context), acquisition.SampledFunction)


def test_rm_gp_ts_samples_the_model_with_the_basis_once_nu_is_spent() -> None:
    context = _mirror_context(method="rm-gp-ts")
    assert context.nu <= context.options.meta_basis_nu
    sample = methods._thompson(context, late=True)
    assert isinstance(sample, MetaBasisSample) and context.record["branch"] == "target"
    assert sample.coef < 0  # the mirror image, as RM-GP-UCB's coefficient
    assert context.record["mean_coefficient"] == sample.coef
    # Without meta-tasks (the cold builder), or with meta_basis_nu=0 and without the prior
    # mean: the target alone.
    assert isinstance(methods._thompson(context), acquisition.SampledFunction)
    context = _mirror_context(method="rm-gp-ts", meta_basis_nu=0.0, meta_prior_mean=False)
    assert isinstance(methods._thompson(context, late=True), acquisition.SampledFunction)


def test_rm_gp_ts_can_sample_the_model_with_the_basis_from_the_first_observation() -> None:
    # After two evaluations nu is far from spent: without the prior mean the target branch
    # is cold.
    context = _mirror_context(n=2, method="rm-gp-ts", meta_prior_mean=False)
    assert context.nu > context.options.meta_basis_nu
    assert isinstance(methods._thompson(context, late=True), acquisition.SampledFunction)
    early = _mirror_context(n=2, method="rm-gp-ts", ts_early_basis=True, meta_prior_mean=False)
    assert early.nu == context.nu
    sample = methods._thompson(early, late=True)
    assert isinstance(sample, MetaBasisSample) and early.record["branch"] == "target"
    # No basis without meta_basis_nu, none before the first observation, none for GP-TS.
    off = _mirror_context(
        n=2, method="rm-gp-ts", ts_early_basis=True, meta_basis_nu=0.0, meta_prior_mean=False
    )
    assert isinstance(methods._thompson(off, late=True), acquisition.SampledFunction)
    blind = _mirror_context(n=0, method="rm-gp-ts", ts_early_basis=True)
    assert not methods._basis_due(blind, early=True)
    assert isinstance(methods._thompson(early), acquisition.SampledFunction)


@pytest.mark.parametrize("ts_scale", ["beta", "none"])
@pytest.mark.parametrize("form", ["shrink", "beta"])
def test_an_escalation_widens_the_thompson_sample(monkeypatch, ts_scale, form) -> None:
    # On a 1-D bowl the sample's maximum soon lands on an observation: each escalation must
    # widen the next sample, by beta x g^k (ts_scale "beta") or by g^k alone ("none"), with
    # g = 2 when escalations double beta and sqrt(2) when they also shrink the length
    # scales (escalation "shrink").
    scales: list[float] = []
    draw = methods.RFFPosterior.sample_weights

    def spy(self, rng, scale=1.0, size=1):
        scales.append(scale)
        return draw(self, rng, scale=scale, size=size)

    monkeypatch.setattr(methods.RFFPosterior, "sample_weights", spy)
    opt = MetaBO(1, method="rm-gp-ts", seed=0, ts_scale=ts_scale, escalation=form)
    for _ in range(30):
        x = opt.ask()
        opt.tell(x, -float((x[0] - 0.3) ** 2))
    modelled = [r for r in opt.history if r["branch"] == "target"]
    assert sum(r.get("escalations", 0) for r in modelled) >= 5
    assert len(scales) == sum(1 + r.get("escalations", 0) for r in modelled)
    k = 0
    for r in modelled:
        ask = scales[k : k + 1 + r.get("escalations", 0)]
        k += len(ask)
        ratios = np.array(ask) / ask[0]
        growth = 2.0 if form == "beta" else np.sqrt(2.0)
        np.testing.assert_allclose(ratios, growth ** np.arange(len(ask)))
        if ts_scale == "none":
            assert ask[0] == 1.0


def test_gp_ts_ignores_the_meta_tasks_and_searches_as_rm_gp_ts_without_them() -> None:
    rng = np.random.default_rng(3)
    X = rng.random((12, 2))
    warm = MetaBO(2, [(X, X.sum(1))], "gp-ts", seed=4)
    cold = MetaBO(2, [], "rm-gp-ts", seed=4)
    assert warm.n_meta_tasks == 0
    for _ in range(8):
        a, b = warm.ask(), cold.ask()
        np.testing.assert_array_equal(a, b)
        warm.tell(a, float(-((a - 0.3) ** 2).sum()))
        cold.tell(b, float(-((b - 0.3) ** 2).sum()))
    assert {r["branch"] for r in warm.history} == {"initial", "target"}
