"""Validated algorithm options of :class:`~rmbo_tune.engine.MetaBO`."""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from rmbo_tune.engine.kernels import KERNELS


def _is_number(value: Any) -> bool:
    """A real number, not a bool or a string that happens to parse as one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_count(value: Any, low: int) -> bool:
    """An integer (not a bool) of at least ``low``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


@dataclass(frozen=True)
class MetaBOOptions:
    """Algorithm options with their defaults.

    The defaults are the *robust* variant: the paper's algorithm (FTRL meta-weights, nu
    non-increasing with ``nu_t <= r^t``, RM-GP-UCB equal to GP-UCB once nu = 0, on a kernel
    that keeps the meta-tasks' mean as one basis function) with the changes listed under
    Notes. ``variant="paper"`` restores the paper's practice for every option not given
    explicitly (:data:`PAPER_OPTIONS`).

    Parameters
    ----------
    variant : {"robust", "paper"}
        Preset of the options below; explicit options override it.
    kernel : {"matern52", "se"}
        Matern-5/2 with ARD length scales (what the paper's authors ran) or squared exponential
        (what the theory assumes).
    output_scaling : {"rank", "shared", "per-task"}
        How meta-task outputs are put on one scale. "rank" (default): each meta-task's
        outputs replaced by their normal scores ``Phi^{-1}((rank - 1/2) / n)`` and the
        target standardized on its own, so that tasks differing in level, spread, skew or
        outliers (another dataset, another training budget) compare by shape. "shared": one
        affine map for all tasks (median of the meta-tasks' means and spreads), keeping
        level differences as the paper's bound assumes. "per-task": each task standardized
        on its own; the target borrows the meta-tasks' scale until
        ``min_fit_observations``.
    gap_estimate : {"ranking", "bound"}
        The function-gap estimate behind the meta-weights and nu. "ranking" (default):
        ``3 x`` the fraction of pairs of target observations a meta-task orders wrongly
        (:func:`~rmbo_tune.engine.meta_weights.ranking_gaps`). "bound": the paper's Lemma 2,
        ``mean_j |y_ij - mu_t(x_ij)| + beta sigma_t(x_ij)`` at the meta-tasks' inputs.
    hyper_prior : bool
        Fit GP hyperparameters by type-II MAP under the log-normal priors of
        :mod:`rmbo_tune.engine.priors` (True) or by maximum likelihood (False).
    probe : bool
        RM-GP-UCB / RM-GP-TS spend suggestion ``probe_after + 1`` on a test of the
        meta-tasks (where: ``probe_point``): misleading tasks then lose weight and nu at
        once, and the search leaves the region they sent it to. While no target value is
        known (trials in flight from the start), the suggestions after the probe continue it
        as a greedy portfolio: where the weighted tasks expect the most gain over the best
        pending point (batch-4 regret at 5 on SVM, 50 targets: 0.074 without, 0.057 with;
        ``docs/benchmarks.md``, "Concurrent trials"). False never probes.
    probe_point : {"auto", "gain", "smoothed", "informative", "lowest"}
        Where the probe goes. "auto" (default): "smoothed" with fewer than 10 meta-tasks,
        "gain" with more. With few tasks each is a large share of the weight at the first
        point, and the clipped gain lets one task's own best draw the probe; with five tasks
        (RM-GP-UCB, 3 seeds, paired) the smoothed gain lowered the regret at 3 on seven of
        ten grids (SVM 0.161 -> 0.091, random forest 0.093 -> 0.074) and raised it on
        networks and logistic regression (0.061 -> 0.065 there) (``docs/benchmarks.md``, "A
        few earlier experiments"). With 20-49 tasks the two are level over fourteen grids
        (the smoothed gain +0.0012 at 5, -0.0002 at 10): the clipped gain is ahead at 5 on
        nearest neighbours, RBF SVMs and networks and at 10 on six grids, the smoothed gain
        on SVM's ten targets (0.025 / 0.012 against 0.030 / 0.020 at 5 / 10)
        (``docs/benchmarks.md``, "The probe, over every target"). "gain", "smoothed" and
        "informative" choose among the points whose comparison with the best observation so
        far tells the most about the tasks (at least 0.7 of the most, by
        :func:`~rmbo_tune.engine.meta_weights.comparison_information`: where the tasks
        split, or agree with confidence). "gain": the one where the weighted tasks expect
        the most improvement over their own predictions at that observation (``sum_i w_i
        max(0, mu_i(x) - mu_i(x_best))``), the best point of the tasks that rank the best
        observation low: a greedy portfolio's second point. "smoothed": the same with each
        task's difference ``d_i`` replaced by its expected improvement under the tasks'
        discrepancy ``s``, the spread of the ``d_i`` around their mean over tasks
        (:func:`~rmbo_tune.engine.acquisition.smoothed_improvement`), so a few tasks'
        confident gain counts less where the tasks disagree widely and the majority's losses
        count too: between "gain" (``s -> 0``) and the tasks' weighted rating.
        "informative": the one the weighted tasks rate best, most often beside the best
        observation when most tasks agree on it. Where no task expects a gain, the rating's
        best. With any of the three, if the observations told by then are ordered wrongly by
        at least 3/4 of the tasks on average, as mirror images of the target order them, a
        second probe goes where the tasks predict the lowest value.
        "lowest": one probe, there, which costs about one evaluation when the tasks are
        right (boosting regret at 5 evaluations 0.073 against 0.059,
        ``docs/benchmarks.md``).
    probe_after : int
        The probe is suggestion ``probe_after + 1``. With 1 (default) it is always spent;
        with ``k > 1`` only if the meta-tasks order the pairs of the ``k`` target
        observations told by then no better than chance (mean discordance over the
        meta-tasks at least 1/2, unweighted), so it is saved where the first evaluations
        confirm the tasks, at the price of the targets the contest misses.
    portfolio_start : int
        RM-GP-UCB / RM-GP-TS evaluate the first ``portfolio_start`` points of the greedy
        portfolio (method ``portfolio``,
        :func:`~rmbo_tune.engine.candidates.portfolio_points`) before their acquisition;
        with more of them than ``probe_after``, the probe's turn falls inside them and it is
        not spent, but its mirror test is: once the observations told (at least two, during
        the start or at its end) are ordered wrongly by at least 3/4 of the tasks on
        average, the tasks' lowest point is evaluated instead of the next portfolio point
        and the rest of the portfolio is dropped. 0 (default) starts with the acquisition.
        With 3 (3 seeds, paired, ``docs/benchmarks.md``, "A greedy portfolio"): SVM at 10
        0.0096 against 0.016, choice of learner at 5 0.0145 against 0.024, logistic
        regression at 10 0.021 against 0.035; RBF SVMs and decision trees behind at every
        horizon to 25 (trees at 5 0.054 against 0.046), SGD at 3, 5 and 25, boosting at
        10 and 50; RM-GP-TS likewise. With adversarial tasks the 1-D regret area is 14.7
        against 9.7 without the start (GP-UCB 10.2): the portfolio's first points are
        chosen to serve different tasks, and their comparison shows a mirror image less
        often than the probe's.
    repeat_escalations : int
        When the confidence bound's best point repeats an observation (closer than 0.03 of
        the target's length scales between the unwarped inputs: a kernel correlation above
        0.999 where the inputs are not warped), the model is widened (``escalation``) and the
        acquisition maximized again, at most this many times. A repeat is the symptom of
        a model sure it has seen the best value; with length scales fitted to a few
        clustered points it can be sure and wrong, and GP-UCB stays on one local optimum
        (the failure Berkenkamp et al., JMLR 2019, answer by shrinking the length scales).
        Branches of the target's bound (GP-UCB, RM-GP-UCB, RM-GP-TS's target samples) and,
        with ``escalation="shrink"``, RM-GP-TS's sample of the tasks; 0 never escalates.
        Measured between the warped inputs the kernel sees instead, the escalations were
        slightly more costly on every family tried (warm start at 25:
        boosting 0.0141 -> 0.0170, networks 0.0014 -> 0.0027; ``docs/algorithm.md``). On a
        finite candidate set the distance is taken between each column's ranks among its
        distinct values, the set's own spacing: a log-spaced parameter scaled linearly puts
        its low levels a hundredth of the range apart, and counted as repeats there the
        escalations sent the search to far corners (boosting grid scaled linearly,
        RM-GP-UCB at 50: 0.022 against 0.0032).
    escalation : {"shrink", "beta"}
        What a repeat escalation (``repeat_escalations``) does. "shrink" (default): the
        target GP's length scales are divided by sqrt(2) and beta multiplied by sqrt(2) at
        each (by 4 at the 4th): the model is less sure between and around its observations,
        so the bound's best point moves to unexplored places near the good ones (Berkenkamp
        et al.'s remedy for length scales fitted too long, with a wider bound beside it).
        nu is divided by the same factor, so that the tasks, whom the escalation does not
        widen, give way where they hold the search on an observation: RM-GP-UCB's tasks'
        term, and RM-GP-TS's tasks' branch, whose repeats then escalate too (dissimilar
        1-D tasks with ``r = 0.99``, regret at 50: RM-GP-UCB 0.001 against 0.017 with nu
        kept, RM-GP-TS 0.000 against 0.087).
        "beta": beta doubles at each (x 16 at the 4th), so the best point moves to where the
        model is least sure: in a continuous space, with the tasks' warp stretching the
        cube's ends, most often a corner. On seven continuous benchmarks (``bench tabular
        --continuous``, RM-GP-UCB, every target x 3 seeds) "shrink" has lower regret at 50
        on six (boosting 0.021 against 0.024, nearest neighbours 0.0058 against 0.0078)
        and is level on the seventh, and its evaluations are better on average on all seven
        (boosting: mean regret 0.139 against 0.162, corners 3.5 % of the evaluations against
        7.2 %); on the paper's 1-D functions GP-UCB has 0.001 at 25 against 0.032. On the
        tabular grids a repeat is rare: 3 of 597 RM-GP-UCB runs changed, no mean at 5, 10,
        25 or 50 (``docs/benchmarks.md``, "Repeats in a continuous space").
    grid_levels : {"tasks", "all", "none"}
        How a finite candidate set's columns are spaced in the model. A column can be
        placed by its rank among its distinct values in the set, spread evenly over their
        range (:class:`~rmbo_tune.engine.candidates.GridLevels`): a log-spaced parameter
        scaled linearly, or an integer column with levels 16, 32, 64, 128, then has evenly
        spaced levels. "tasks" (default): the columns whose levels are unevenly spaced and
        where the meta-tasks' GPs (up to 8) gain at least 1 log evidence per task in that
        spacing (:func:`~rmbo_tune.engine.candidates.choose_spacing`); the others keep
        their coordinates, a spacing the user may have chosen for a reason. "all": every
        column in ranks. "none": the coordinates as given (the paper). Suggestions and
        :attr:`MetaBO.X` stay in the caller's coordinates; methods without meta-tasks and
        searches without candidates take the coordinates.
    onehot_lengthscales : {"column", "group"}
        The length scales of a categorical parameter's one-hot columns (found in the
        candidates, :func:`~rmbo_tune.engine.candidates.onehot_groups`). "column"
        (default): one per column, so two categories are as far apart as their columns'
        length scales make them. "group": one per parameter, every two categories equally
        far apart (:class:`~rmbo_tune.engine.gp.likelihood.Tying`), in the meta-task GPs
        and the target's.
    target_warp : {"rank", "none"}
        Fit the target GP to the normal scores of its observations (from the third on)
        instead of the values: plateaus (failed configurations at a floor) and outliers no
        longer dominate the GP's variance.
    input_warp : "tasks", int or None
        The target GP's kernel is taken between inputs warped by a Kumaraswamy CDF per
        dimension, ``1 - (1 - x^a)^b`` (Snoek et al., ICML 2014; the warp of BoTorch and
        HEBO), so that a parameter whose effect saturates beside a cliff (a penalty beyond
        which the fit no longer changes) needs no length scale of one grid step. Binary
        columns are left as they are. "tasks" (default): the warp is learned from the
        earlier tasks, whose observations are what earlier experiments sampled, not where
        this search looked. A warp is fitted to each of up to 8 meta-tasks; the median of
        their ``log a``, ``log b``, shrunk towards the identity where the tasks disagree
        (:func:`~rmbo_tune.engine.meta_models.agreed_warp`), centres a narrow log-normal
        prior (spread 0.05) on the target's warp from its first fit, for every method that
        reads meta-tasks. Without meta-tasks, with fewer than 3, or without ``hyper_prior``
        (no prior to centre) there is no warp. Paired against no warp at 25 (RM-GP-UCB):
        logistic regression -0.0055 ± 0.0028, boosting -0.0064 ± 0.0036 (3 seeds; over 10,
        -0.0007 ± 0.0017); nearest neighbours +0.0011 ± 0.0005, random forest +0.0008 ±
        0.0007, SVM level (``docs/benchmarks.md``, "The earlier tasks' warp"). An integer
        ``K``: from the ``K``-th target observation on, the warp is fitted to the target's
        own observations under priors centred on the identity. Those cluster where the
        search has looked; the fit reads their density as a faster-varying function,
        stretches the explored region and compresses the unexplored one, and GP-UCB stops
        visiting it: on the paper's 1-D functions fitted warps (``a`` 3.4-3.7) squeezed
        ``[0, 0.5]``, where the optimum was, into a tenth of the warped axis, and with
        noise-only meta-tasks RM-GP-UCB's regret at 50 went from 0.007 to 0.015
        (``docs/benchmarks.md``, "Input warping"). None never warps (the paper).
    meta_basis_nu : float
        Once nu is at most this (default 0.05: from the 10th evaluation at the latest in up
        to six dimensions, the 17th in eleven), the target GP of RM-GP-UCB and RM-GP-TS
        takes the meta-weights' mean of the meta-tasks and an intercept as basis functions
        with N(0, 1) coefficients (:mod:`~rmbo_tune.engine.meta_basis`): the target's own
        data decide how much of the tasks' shape to keep (negative for mirror-image tasks),
        after nu has faded the tasks out of the acquisition (RM-GP-TS samples this model).
        When at least ``min_fit_observations`` of the target's observations were given
        rather than chosen by the search (``evaluated_rewards``, a random initial design),
        the basis applies from the first suggestion: spread over the space, they tell the
        coefficient at once, where the search's own first points, clustered where the tasks'
        mean is high, do not. 0 never (the paper).
    meta_basis_tasks : float or "evidence"
        With the late basis (``meta_basis_nu``), also each task's deviation from the
        weighted mean as a basis column, the coefficients N(0, ``meta_basis_tasks`` / M):
        the target's prior covariance gains this multiple of the tasks' own covariance
        about their mean (an empirical prior estimated from the earlier tasks, Wang et al.,
        NeurIPS 2018), so a target that follows a task the weights rate low is within reach
        and the bound is wide where the tasks disagree. 0 (default) leaves the deviations
        out. With 1 (paired, 5 seeds, at 20 / 25): logistic regression -0.0019 ± 0.0009 /
        -0.0016 ± 0.0010; boosting +0.0033 ± 0.0019 / +0.0014 ± 0.0014 (+0.0031 ± 0.0016
        at 10), random forest +0.0017 ± 0.0012 / +0.0010 ± 0.0008, SVM and nearest
        neighbours level; hence not the default (``docs/benchmarks.md``, "The tasks'
        deviations in the late basis"). "evidence":
        at each suggestion the value of 0, 1/4, 1 and 4 under which the target's
        observations are the most likely (type-II maximum likelihood); it mostly picks 0
        and moves no family by more than 0.0011 at 25.
    meta_prior_mean : bool or None
        From the first observation the target model takes the meta-weights' mean of the
        meta-tasks as its prior mean, ``c + b m(x)`` with ``b``'s prior centred on 1 and the
        coefficients at their posterior mean, without waiting for ``meta_basis_nu``
        (:mod:`~rmbo_tune.engine.meta_basis`): RM-GP-UCB's bound is then the GP's own about
        that mean, RM-GP-TS's target samples are drawn about it with the GP's own spread. A
        few observations, noisy ones above all, then move the search along the tasks' shape
        instead of on their own. None (the default): on for RM-GP-TS, off for RM-GP-UCB.
        RM-GP-TS, paired against off (every target x 3 seeds, at 10 evaluations): lower
        regret on eight of the ten grids without noise (decision trees -0.009 ± 0.004,
        boosting -0.009 ± 0.005, random forest -0.007 ± 0.004), higher on SGD (+0.005 ±
        0.005) and level on logistic regression; with noise of 0.05 of each task's range
        on the earlier tasks and the target, lower on eight (random forest -0.010 ± 0.004,
        nearest neighbours -0.009 ± 0.004), higher on logistic regression (+0.015 ±
        0.010). RM-GP-UCB with noise: decision trees -0.013 ± 0.006, boosting -0.008 ±
        0.006, SGD -0.007 ± 0.003, networks -0.007 ± 0.003, random forest -0.004 ± 0.009,
        nearest neighbours -0.004 ± 0.005, logistic regression -0.004 ± 0.002, SVM -0.002 ±
        0.002, AdaBoost and RBF SVMs level, logistic regression +0.012 ± 0.006 at 25; without
        noise it costs on SVM at 3 (+0.015 ± 0.007), boosting at 5 (+0.007 ± 0.007), nearest
        neighbours and SGD at 10 (+0.005), RBF SVMs and SGD at 25 (+0.006), hence off
        (``docs/benchmarks.md``, "Noisy evaluations" and "Thompson sampling").
    beta : float or None
        Fixed target confidence multiplier; None uses ``sqrt(beta_scale * dim * log(2 t))``.
    beta_scale : float
        Default 0.2, the value the authors ran.
    tau : float or None
        Meta-task confidence multiplier: of each task's standard deviation in RM-GP-UCB's
        meta term (below) and of RM-GP-TS's meta-task samples, ``GP(mu_i, tau^2
        sigma_i^2)``. None (default): RM-GP-UCB's meta term is the tasks' weighted mean
        plus the standard deviation of the committee of the meta-task GPs and the target
        GP (:func:`~rmbo_tune.engine.acquisition.committee_std`), large only where neither
        the earlier tasks nor the target have observed; RM-GP-TS uses 1. The paper's
        practice, 1 for both, is ``variant="paper"``. A task's own standard deviation is
        its uncertainty away from its own observations, even where other tasks observed:
        with 10 observations per task that bonus sent RM-GP-UCB to the SVM targets'
        plateaus (regret at 5 0.084; docs/benchmarks.md, "Few observations per earlier
        task"). 0 weighs the tasks' means alone.
    meta_term : {"auto", "mean", "improvement", "taf"}
        RM-GP-UCB's meta-task term. "mean" (eq. 2 of the paper): the meta-weights'
        mean of the tasks' means with the bonus ``tau`` sets, ``sum_i w_i (mu_i(x) + tau
        sigma_i(x))`` or, with ``tau=None``, ``sum_i w_i mu_i(x)`` plus the committee's
        standard deviation.
        "improvement": each task's predicted improvement over its best prediction at the
        target's observed inputs, ``sum_i w_i max(0, mu_i(x) - max_j mu_i(x_j))`` (the meta
        term of TAF, Wistuba et al. 2018; the mean until the first observation). Where the
        earlier tasks fall into groups with different optima, it goes to another group's
        optimum once the majority's has been evaluated; best with ``probe=False``
        (docs/benchmarks.md, "The improvement meta-term").
        "taf": that meta term, and beside it the target's expected improvement over its
        best observation instead of its upper bound: TAF's acquisition, weighted by nu and
        the FTRL weights, while nu is above ``meta_basis_nu`` (about the first 9
        evaluations up to six dimensions); below it the target's term is its upper bound
        with the tasks' basis, as with "mean", and nu soon 0. Both terms then measure a
        gain over what has been observed, on comparable scales. With tasks whose rows a
        search chose, their GPs know little beyond where each task is good and their
        weighted mean is flat; beside it the target's upper bound, wide wherever a few
        observations have not looked, takes over from about the 4th evaluation and sends
        the search where a cold GP-UCB would.
        "auto" (default): "taf" when the earlier tasks' rows look like the trials of a
        model-based search, whose values rise with how crowded their neighbourhood is
        (median over the tasks of at least 20 rows of that Spearman correlation at least
        0.4, :func:`~rmbo_tune.engine.meta_models.searched_score`), else "mean". With searched
        tasks (paired against "mean", at 3 / 5): SVM -0.015 ± 0.008 / -0.010 ± 0.007,
        nearest neighbours -0.040 ± 0.029 / -0.034 ± 0.026, logistic regression -0.009 ±
        0.005 / -0.006 ± 0.003, RBF SVMs -0.011 ± 0.008 / -0.003 ± 0.004; decision trees
        +0.006 ± 0.004 / +0.008 ± 0.005. With random rows "taf" costs SVM +0.019 ± 0.017 /
        +0.014 ± 0.007 at 5 / 10 and boosting +0.010 ± 0.009 at 10, hence "mean" there
        (docs/benchmarks.md, "Earlier tasks that were searched"). It is "taf" too when the
        tasks disagree on where the good configurations are, by at least
        ``taf_disagreement``. RM-GP-TS is unaffected.
    taf_disagreement : float or None
        ``meta_term="auto"`` takes TAF's form when the earlier tasks' disagreement
        (:func:`~rmbo_tune.engine.meta_models.disagreement`: what a greedy portfolio's second
        point adds to the tasks' mean percentile of the first; 0.04-0.08 on the shipped grids
        whose tasks agree, 0.09-0.11 where they fall into groups) is at least this. Where
        the tasks disagree, their weighted mean leads the search to the consensus and its
        neighbours, good for no group in particular, while each task's gain over its
        prediction at the target's observations goes to the best region of the tasks the
        observations so far serve worst. Chosen between the two groups of grids (paired
        against "mean" over every target x 3 seeds at 5 / 10: nearest neighbours -0.0089 ±
        0.0057 / +0.0023 ± 0.0044, logistic regression -0.0094 ± 0.0052 / -0.0199 ± 0.0107,
        networks -0.0036 ± 0.0034 / -0.0018 ± 0.0019; SGD +0.0031 ± 0.0027 / +0.0054 ±
        0.0022; docs/benchmarks.md, "Earlier tasks that disagree"). None: TAF's form for
        searched tasks only.
    eta_n : float
        ``eta * N``, the FTRL learning rate (paper: 1).
    r : float or None
        nu schedule: ``nu_{t+1} = nu_t min(r, gap^(-epsilon))``, so ``nu_t <= r^t``
        (paper: 0.7). None (default): 0.7 up to six dimensions and ``0.7^(6 / dim)`` beyond
        (0.77 at 8, 0.82 at 11; :func:`~rmbo_tune.engine.meta_weights.decay_rate`): nu falls
        by 0.7 per ``dim / 6`` observations, because a target GP fitted to fewer
        observations than the space has dimensions is wide wherever it has not looked and
        its bound fills the space as a cold GP-UCB would. Tasks that order the target's
        observations no better than chance still make nu fall by 0.75 per observation.
        Paired against 0.7 (RM-GP-UCB, at 3 / 10): decision trees in eleven columns
        -0.016 / -0.008, SGD (eleven) level / -0.003, nearest neighbours (nine) level;
        logistic regression (eight) level / +0.007, from two targets where no linear model
        beats chance (``docs/benchmarks.md``, "nu's decay in wide spaces").
    epsilon : float
        See ``r`` (paper: 0.7).
    gap_aggregation : {"mean", "max"}
        Aggregation over a meta-task's observations in the "bound" gap (paper practice:
        mean).
    learn_weights : bool
        False keeps the meta-weights uniform (the paper's ablation).
    nu_floor : float
        nu below this becomes 0: the meta-tasks no longer count and gaps are not computed.
    n_initial : int or None
        Space-filling points before the model is used. None: 0 when meta-tasks guide the
        search, the meta-tasks' best points (at most 10) for ``warm-start``, a greedy
        portfolio of the candidates or the tasks' inputs (at most 10) for ``portfolio``,
        otherwise ``clip(dim + 1, 2, 5)``.
    min_fit_observations : int
        Target observations needed before the target GP's hyperparameters are fitted; until
        then it uses the median of the meta-task GPs' hyperparameters (or neutral defaults).
    n_restarts : int
        Random restarts of each meta-task's hyperparameter fit and of the target's at sizes
        ``min_fit_observations`` and 10, 20, 40, ... (warm-started refits in between have
        none). Each restart begins at the most likely of 32 random hyperparameter settings
        (by value on at most 64 observations); for a meta-task of more than 64
        observations it runs only if that setting is more likely there than the default
        start.
    noise_floor : float
        Lower bound on the noise variance of standardized outputs.
    max_meta_observations : int or None
        Observations of one meta-task its GP is fitted to, at most (None: all). A larger
        task keeps its best quarter of that many and fills the rest by farthest-point
        selection from the others (:func:`~rmbo_tune.engine.meta_models.thin`), so that
        its GP still covers the space. A GP fit costs O(n^3) per likelihood evaluation and
        a prediction O(n^2) per point: ten earlier experiments of 1000 trials (D = 8) took
        28 s to fit in full and 550 ms per suggestion, 1.5 s and 57 ms thinned to 256
        (``docs/benchmarks.md``, "Large meta-tasks"). The default is twice the meta-task
        size of the paper's scalability test (130) and leaves every shipped benchmark's
        meta-tasks whole.
    n_candidates : int
        Quasi-random candidates of the acquisition maximizer.
    n_local : int
        Candidates drawn per call: half uniformly at random, half around the four best
        target observations.
    n_polish : int
        Best candidates refined with L-BFGS-B when the acquisition includes the meta-tasks
        (RM-GP-UCB while nu > 0, RGPE, TAF and RM-GP-TS's meta branch), where the
        meta-tasks' optimum is known sharply and worth finding exactly.
    polish_target : bool
        Also polish acquisitions of the target GP alone; off because an exact UCB maximum is
        often on the cube's boundary and the refinement costs a third of a suggestion.
    polish_maxiter : int
        L-BFGS-B iterations per refinement.
    n_rff_features : int
        Random Fourier features for Thompson sampling (paper: 120).
    ts_scale : {"none", "beta"}
        RM-GP-TS's and GP-TS's target samples are drawn from the posterior itself,
        ``GP(mu_t, sigma_t^2)`` ("none", what the authors' appendix describes running), or
        from ``GP(mu_t, beta_t^2 sigma_t^2)`` ("beta", eq. 3 of the paper), which explores
        more and refines less (``docs/benchmarks.md``, "Thompson sampling"). A repeat
        escalation doubles the samples' spread either way.
    ts_early_basis : bool
        RM-GP-TS's target samples take the meta-tasks' basis (``meta_basis_nu``'s model,
        ``f = g + c + b m``) from the first target observation instead of once nu is at most
        ``meta_basis_nu``. The target branch, drawn with probability ``1 - nu``, is then a
        sample of the target GP whose coefficient ``b`` on the tasks' weighted mean is drawn
        from its posterior given the few observations so far, not a cold sample. It applies
        where ``meta_prior_mean`` is off (for RM-GP-TS: ``meta_prior_mean=False``). Paired
        with that (random earlier tasks, 3 seeds; SVM 10 targets), regret at 10 lower on
        boosting (-0.0055 ± 0.0033), RBF SVMs (-0.0063 ± 0.0042) and random forest
        (-0.0068 ± 0.0048), higher on SVM (+0.0106 ± 0.0122 at 5) and AdaBoost (at 25);
        against RM-GP-TS's default prior mean it is behind on seven of ten grids (decision
        trees +0.0086 ± 0.0038 at 10) (``docs/benchmarks.md``, "Thompson sampling"). With
        ``meta_basis_nu=0`` there is no basis to take.
    ts_pool_size : int
        Posterior samples drawn ahead of time per meta-task for RM-GP-TS.
    duplicate_tol : float
        Two points closer than this (Euclidean, in the unit cube) are the same point.
    pending_penalty : bool
        Penalize the whole acquisition around pending points (in addition to GP-BUCB).
    rgpe_n_samples : int
        Posterior samples for the RGPE weights (paper: 500).
    taf_bandwidth : float
        TAF-R Epanechnikov bandwidth rho (paper: 0.5).

    Notes
    -----
    The defaults were chosen on the tabular meta-datasets shipped with the package (SVM and
    gradient boosting first, each later option on the grids its entry above names; kernel
    ridge and boosted regression held out from every choice), the paper's synthetic
    benchmark and its adversarial version; ``docs/benchmarks.md`` has the tables and the
    commands. On the standardized scale the paper's gap bound is dominated by ``beta
    sigma_t`` at meta-task inputs the target has not seen, so nu fell about twice as fast
    as ``r^t`` whatever the tasks, and the weights followed the meta-tasks' spread rather
    than their similarity; the ranking gap separates similar (nu = ``r^t``) from misleading
    tasks (faster). Maximum likelihood on a few clustered observations drove noise to its
    floor and length scales to their bounds. ``beta_scale`` 1.0 explored too much in 4-6
    dimensions (SVM and gradient-boosting regret at 10-25 evaluations about 1.5-2x that of
    0.2); it was better on 1-D GP draws with length scale 0.05. Without ``meta_basis_nu``
    the search after nu is spent is GP-UCB on points clustered where the tasks pointed, and
    stalls there on some targets (boosting, 3 seeds: regret at 25 0.0126 without, 0.0081
    with; at 50 0.0020 and 0.0005); from the first evaluation it costs 0.008 at 5
    evaluations on SVM, where nu already carries the tasks. Without ``repeat_escalations``
    GP-UCB evaluates one local optimum of the paper's 1-D functions over and over (regret at
    50: 0.199 without, 0.001 with; RM-GP-UCB with dissimilar tasks 0.394 and 0.000).
    """

    variant: str = "robust"
    kernel: str = "matern52"
    output_scaling: str = "rank"
    gap_estimate: str = "ranking"
    hyper_prior: bool = True
    probe: bool = True
    probe_point: str = "auto"
    probe_after: int = 1
    portfolio_start: int = 0
    repeat_escalations: int = 4
    escalation: str = "shrink"
    grid_levels: str = "tasks"
    onehot_lengthscales: str = "column"
    target_warp: str = "rank"
    input_warp: int | str | None = "tasks"
    meta_basis_nu: float = 0.05
    meta_basis_tasks: float | str = 0.0
    meta_prior_mean: bool | None = None
    beta: float | None = None
    beta_scale: float = 0.2
    tau: float | None = None
    meta_term: str = "auto"
    taf_disagreement: float | None = 0.085
    eta_n: float = 1.0
    r: float | None = None
    epsilon: float = 0.7
    gap_aggregation: str = "mean"
    learn_weights: bool = True
    nu_floor: float = 1e-6
    n_initial: int | None = None
    min_fit_observations: int = 5
    n_restarts: int = 1
    noise_floor: float = 1e-6
    max_meta_observations: int | None = 256
    n_candidates: int = 1024
    n_local: int = 64
    n_polish: int = 1
    polish_target: bool = False
    polish_maxiter: int = 15
    n_rff_features: int = 128
    ts_scale: str = "none"
    ts_early_basis: bool = False
    ts_pool_size: int = 16
    duplicate_tol: float = 1e-6
    pending_penalty: bool = True
    rgpe_n_samples: int = 256
    taf_bandwidth: float = 0.5

    def __post_init__(self) -> None:
        choices = {
            "kernel": KERNELS,
            "variant": ("robust", "paper"),
            "output_scaling": ("rank", "shared", "per-task"),
            "gap_estimate": ("ranking", "bound"),
            "ts_scale": ("beta", "none"),
            "target_warp": ("none", "rank"),
            "gap_aggregation": ("mean", "max"),
            "probe_point": ("auto", "gain", "smoothed", "informative", "lowest"),
            "meta_term": ("auto", "mean", "improvement", "taf"),
            "grid_levels": ("tasks", "all", "none"),
            "onehot_lengthscales": ("column", "group"),
            "escalation": ("shrink", "beta"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        positive = [
            "beta_scale",
            "eta_n",
            "epsilon",
            "noise_floor",
            "duplicate_tol",
            "taf_bandwidth",
        ]
        for name in positive:
            value = getattr(self, name)
            if not _is_number(value) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        flags = (
            "learn_weights",
            "polish_target",
            "pending_penalty",
            "hyper_prior",
            "probe",
            "ts_early_basis",
        )
        for name in flags:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not (self.meta_prior_mean is None or isinstance(self.meta_prior_mean, bool)):
            raise ValueError(
                f"meta_prior_mean must be True, False or None, got {self.meta_prior_mean!r}"
            )
        if self.beta is not None and not (_is_number(self.beta) and 0 <= self.beta < math.inf):
            raise ValueError(f"beta must be a finite number >= 0 or None, got {self.beta!r}")
        if self.tau is not None and not (_is_number(self.tau) and 0 <= self.tau < math.inf):
            raise ValueError(f"tau must be a finite number >= 0 or None, got {self.tau!r}")
        if self.r is not None and not (_is_number(self.r) and 0 < self.r < 1):
            raise ValueError(f"r must be in (0, 1) or None, got {self.r!r}")
        if not (_is_number(self.meta_basis_nu) and 0 <= self.meta_basis_nu <= 1):
            raise ValueError(f"meta_basis_nu must be in [0, 1], got {self.meta_basis_nu!r}")
        q = self.meta_basis_tasks
        if q != "evidence" and not (_is_number(q) and 0 <= float(q) < math.inf):
            raise ValueError(f'meta_basis_tasks must be finite and >= 0 or "evidence", got {q!r}')
        limit_d = self.taf_disagreement
        if limit_d is not None and not (_is_number(limit_d) and 0 <= limit_d <= 1):
            raise ValueError(f"taf_disagreement must be in [0, 1] or None, got {limit_d!r}")
        if not (_is_number(self.nu_floor) and 0 <= self.nu_floor < 1):
            raise ValueError(f"nu_floor must be in [0, 1), got {self.nu_floor!r}")
        counts = {
            "probe_after": 1,
            "portfolio_start": 0,
            "repeat_escalations": 0,
            "min_fit_observations": 2,
            "n_restarts": 0,
            "n_candidates": 1,
            "n_local": 0,
            "n_polish": 0,
            "polish_maxiter": 1,
            "n_rff_features": 1,
            "ts_pool_size": 1,
            "rgpe_n_samples": 1,
        }
        for name, low in counts.items():
            value = getattr(self, name)
            if not _is_count(value, low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        limit = self.max_meta_observations
        if limit is not None and not _is_count(limit, 8):
            raise ValueError(
                f"max_meta_observations must be an integer >= 8 or None, got {limit!r}"
            )
        warp = self.input_warp
        if warp is not None and warp != "tasks" and not _is_count(warp, 2):
            raise ValueError(f'input_warp must be an integer >= 2, "tasks" or None, got {warp!r}')
        if self.n_initial is not None and not _is_count(self.n_initial, 0):
            raise ValueError(
                f"n_initial must be a non-negative integer or None, got {self.n_initial!r}"
            )

    def prior_mean(self, method: str) -> bool:
        """Whether ``method`` takes the tasks' mean as the target's prior mean (option
        ``meta_prior_mean``; None: RM-GP-TS only)."""
        if self.meta_prior_mean is None:
            return method == "rm-gp-ts"
        return self.meta_prior_mean

    @classmethod
    def from_kwargs(cls, options: dict[str, Any]) -> MetaBOOptions:
        """Build from keyword options, naming any unknown one."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown option(s) {unknown}; valid options are {sorted(known)}")
        # numpy scalars as Python's (np.int64(512), np.False_): options are saved as JSON.
        options = {k: v.item() if isinstance(v, np.generic) else v for k, v in options.items()}
        if options.get("variant") == "paper":
            options = {**PAPER_OPTIONS, **options}
        return cls(**options)


# The paper's practice (section 6 and appendix E): its gap bound on one shared output
# scale, maximum-likelihood hyperparameters, no probe, no output warping, the authors' beta.
PAPER_OPTIONS: dict[str, Any] = {
    "r": 0.7,
    "output_scaling": "shared",
    "gap_estimate": "bound",
    "hyper_prior": False,
    "probe": False,
    "target_warp": "none",
    "meta_basis_nu": 0.0,
    "meta_basis_tasks": 0.0,
    "meta_prior_mean": False,
    "beta_scale": 0.2,
    "repeat_escalations": 0,
    "grid_levels": "none",
    "tau": 1.0,
    "input_warp": None,
    "meta_term": "mean",
}

# States written before these options existed reproduce that engine's behaviour.
VERSION_1_OPTIONS: dict[str, Any] = {
    **PAPER_OPTIONS,
    "variant": "paper",
    "beta_scale": 1.0,
    "ts_scale": "beta",
    "probe_point": "lowest",
}
