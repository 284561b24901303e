"""Build the ``mlp-grid`` tabular meta-dataset: one neural-network grid, many regression tasks.

``python -m rmbo_tune.bench.make_mlp_grid --out rmbo_tune/bench/data/mlp-grid --processes 2``
(needs scikit-learn; about 7 minutes on two cores) writes one CSV per dataset with the
columns ``hidden_units, activation, alpha, learning_rate_init, value``: the same
96-configuration grid of scikit-learn's ``MLPRegressor`` (one hidden layer, Adam, at most
100 epochs; inputs and target standardized) evaluated on 21 regression datasets by 3-fold
cross-validation, ``value`` = root mean squared error over the target's standard deviation
(lower is better: 1.0 is what predicting the mean scores). A run that diverged (a
non-finite or larger error) would be recorded as ``DIVERGED`` = 10, as a failed trial's
sentinel is in a user's records; none does on these datasets.

A fifth family of HPO meta-data, built after every default of the engine was fixed and used
for no choice: another model class (a neural network trained by stochastic gradient), a
metric that is minimized, other datasets (regression, not classification) and a grid where
a poor learning rate leaves the network worse than predicting the mean.

The datasets are offline and reproducible: regression targets taken from scikit-learn's
bundled data (diabetes progression; wine's alcohol content, the breast-cancer data's mean
texture and mean smoothness, iris's petal width and Pima's glucose and body-mass index, each
predicted from the other columns of its table that are not the same measurement in another
form) and generated problems of varied size, dimension, noise and shape
(``make_friedman1/2/3``, ``make_regression``, ``make_sparse_uncorrelated``, the S-curve and
the Swiss roll with their position along the manifold as target, and a product of a sine and
a line), each from a fixed seed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rmbo_tune.bench.make_hgb_grid import _pima, build

GRID: dict[str, list] = {
    "hidden_units": [8, 32, 128],
    "activation": ["relu", "tanh"],
    "alpha": [1e-5, 1e-3, 1e-1, 10.0],
    "learning_rate_init": [1e-4, 1e-3, 1e-2, 1e-1],
}
DIVERGED = 10.0


def _columns_out(X: np.ndarray, target: int, drop: tuple[int, ...] = ()) -> tuple:
    """Column ``target`` of ``X`` as the regression target, the others but ``drop`` as inputs."""
    keep = [j for j in range(X.shape[1]) if j != target and j not in drop]
    return X[:, keep], X[:, target]


def datasets() -> dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]]:
    """Name -> loader of (X, y) for every regression dataset of the family."""
    from sklearn import datasets as ds

    def wine_alcohol() -> tuple[np.ndarray, np.ndarray]:
        return _columns_out(ds.load_wine().data, 0)

    def breast_cancer(target: int) -> tuple[np.ndarray, np.ndarray]:
        # Columns j, j + 10 and j + 20 are the mean, error and worst of one measurement.
        return _columns_out(ds.load_breast_cancer().data, target, (target + 10, target + 20))

    def iris_petal_width() -> tuple[np.ndarray, np.ndarray]:
        return _columns_out(ds.load_iris().data, 3)

    def pima(target: int) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        def load() -> tuple[np.ndarray, np.ndarray]:
            X, label = _pima()
            X = np.column_stack([X, label])
            X = X[X[:, target] > 0]  # zero marks a missing glucose or BMI
            return _columns_out(X, target)

        return load

    def sine_times_line() -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(20)
        X = rng.uniform(-1, 1, size=(400, 4))
        return X, np.sin(3 * X[:, 0]) * X[:, 1] + 0.1 * rng.standard_normal(400)

    def manifold(make: Callable, seed: int) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        return lambda: make(600, noise=0.3, random_state=seed)

    return {
        "diabetes": lambda: ds.load_diabetes(return_X_y=True),
        "wine-alcohol": wine_alcohol,
        "breast-cancer-texture": lambda: breast_cancer(1),
        "breast-cancer-smoothness": lambda: breast_cancer(4),
        "iris-petal-width": iris_petal_width,
        "pima-glucose": pima(1),
        "pima-bmi": pima(5),
        "friedman1-n200-clean": lambda: ds.make_friedman1(200, noise=0.0, random_state=1),
        "friedman1-n300": lambda: ds.make_friedman1(300, noise=0.5, random_state=2),
        "friedman1-n800-d20": lambda: ds.make_friedman1(
            800, n_features=20, noise=2.0, random_state=3
        ),
        "friedman2": lambda: ds.make_friedman2(400, noise=0.0, random_state=4),
        "friedman3": lambda: ds.make_friedman3(400, noise=0.1, random_state=5),
        "linear-n300-d5": lambda: ds.make_regression(300, n_features=5, noise=1.0, random_state=6),
        "linear-n500-d50": lambda: ds.make_regression(
            500, n_features=50, n_informative=10, noise=10.0, random_state=7
        ),
        "linear-n600-d20-low-rank": lambda: ds.make_regression(
            600, n_features=20, n_informative=5, effective_rank=4, noise=5.0, random_state=8
        ),
        "linear-n400-d10-noisy": lambda: ds.make_regression(
            400, n_features=10, noise=100.0, random_state=9
        ),
        "sparse-uncorrelated": lambda: ds.make_sparse_uncorrelated(500, 10, random_state=10),
        "s-curve": manifold(ds.make_s_curve, 11),
        "swiss-roll": manifold(ds.make_swiss_roll, 12),
        "sine-times-line": sine_times_line,
        "friedman1-n1000-noisy": lambda: ds.make_friedman1(1000, noise=3.0, random_state=13),
    }


def relative_rmse(model: object, X: np.ndarray, y: np.ndarray) -> float:
    """Root mean squared error over ``std(y)`` of a scikit-learn regressor by 3-fold CV (mean
    of the folds' errors), ``DIVERGED`` where it is not finite or larger. Fitting warnings
    (an unconverged network, an ill-conditioned kernel) are silenced: the value records the
    outcome."""
    import warnings

    from sklearn.model_selection import KFold, cross_val_score

    folds = KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        scores = cross_val_score(
            model, X, y, cv=folds, scoring="neg_root_mean_squared_error", error_score=np.nan
        )
    value = float(-scores.mean() / y.std())
    return value if np.isfinite(value) and value < DIVERGED else DIVERGED


def standardized(regressor: object) -> object:
    """``regressor`` fitted to standardized inputs and a standardized target (its
    predictions mapped back to the target's units)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return TransformedTargetRegressor(
        make_pipeline(StandardScaler(), regressor), transformer=StandardScaler()
    )


def evaluate(X: np.ndarray, y: np.ndarray, config: dict) -> float:
    """Root mean squared error over ``std(y)`` of one configuration by 3-fold CV (mean of
    the folds' errors), ``DIVERGED`` where training diverges."""
    from sklearn.neural_network import MLPRegressor

    net = MLPRegressor(
        hidden_layer_sizes=(config["hidden_units"],),
        activation=config["activation"],
        alpha=config["alpha"],
        learning_rate_init=config["learning_rate_init"],
        max_iter=100,
        random_state=0,
    )
    return relative_rmse(standardized(net), X, y)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    build(argv, GRID, evaluate, __doc__.split("\n\n")[0], datasets)


if __name__ == "__main__":
    main()
