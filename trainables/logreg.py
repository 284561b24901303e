"""Logistic regression on the Pima diabetes data: the paper's non-stationary BO workload.

The 768 rows are permuted once (``split_seed``); 77 are held out for validation and the other
691 form a fixed pool. Stage ``k`` (config key ``stage``, 1..5) trains on the first
``STAGE_SIZES[k - 1]`` = 138, 276, 414, 552 or 691 pool rows, so later stages extend earlier
ones, like a clinic whose patient records grow over time; stage 5 is the target task and 1-4
are its meta-tasks. Features are standardised with the statistics of the stage's training rows.

The model is trained with plain minibatch SGD (numpy; fast enough that no GPU is useful) on the
mean log-loss plus ``l2 * ||w||^2`` (bias unpenalised). Tuned hyperparameters (paper): batch
size 20-60, L2 1e-6..1e-2, learning rate 0.01..0.1 (:func:`search_space`). Each epoch
reports ``epoch``, ``val_error`` (misclassification rate on the 77 rows), ``val_accuracy``,
``val_loss`` and ``train_loss``, with a checkpoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray import tune

from trainables import runtime
from trainables.pima import load_pima

STAGE_SIZES = (138, 276, 414, 552, 691)
DEFAULT_EPOCHS = 30
CONFIG_KEYS = {
    "stage",
    "batch_size",
    "l2",
    "lr",
    "epochs",
    "seed",
    "split_seed",
    "data_path",
    "checkpoint_every",
}


def search_space() -> dict[str, Any]:
    """The paper's ranges: batch size 20-60, L2 1e-6..1e-2 (log), learning rate 0.01..0.1.

    Returns
    -------
    dict
        Tune search-space entries to merge into ``param_space``.
    """
    return {
        "batch_size": tune.randint(20, 61),
        "l2": tune.loguniform(1e-6, 1e-2),
        "lr": tune.uniform(0.01, 0.1),
    }


def stage_data(
    stage: int, *, split_seed: int = 0, data_path: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised training and validation arrays of one stage.

    Parameters
    ----------
    stage : int
        1..5, selecting 138/276/414/552/691 training rows.
    split_seed : int
        Row permutation seed (see :func:`trainables.datasets.load_pima`).
    data_path : str, optional
        Alternative Pima CSV.

    Returns
    -------
    tuple of numpy.ndarray
        ``(x_train, y_train, x_val, y_val)``; float64 features, 0/1 labels.
    """
    if stage not in range(1, len(STAGE_SIZES) + 1):
        raise ValueError(f"stage must be one of 1..{len(STAGE_SIZES)}, got {stage!r}")
    data = load_pima(data_path, split_seed=split_seed)
    n = STAGE_SIZES[stage - 1]
    if n > len(data.x_pool):
        raise ValueError(f"stage {stage} needs {n} training rows, the pool has {len(data.x_pool)}")
    x_tr, y_tr = data.x_pool[:n], data.y_pool[:n]
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (x_tr - mean) / std, y_tr, (data.x_val - mean) / std, data.y_val


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def log_loss(w: np.ndarray, b: float, x: np.ndarray, y: np.ndarray) -> float:
    """Mean binary cross-entropy of the model ``sigmoid(x @ w + b)``.

    Parameters
    ----------
    w : numpy.ndarray
        Weights, shape (n_features,).
    b : float
        Bias.
    x, y : numpy.ndarray
        Features and 0/1 labels.

    Returns
    -------
    float
        The loss (without the L2 term).
    """
    z = x @ w + b
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def sgd_epoch(
    w: np.ndarray,
    b: float,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    batch_size: int,
    lr: float,
    l2: float,
) -> tuple[np.ndarray, float]:
    """One pass of minibatch SGD over ``x[order]``.

    Parameters
    ----------
    w, b
        Current weights and bias (``w`` is not modified).
    x, y : numpy.ndarray
        Training data.
    order : numpy.ndarray
        Permutation of the rows.
    batch_size : int
        Rows per step (the last batch may be smaller).
    lr, l2 : float
        Step size and L2 coefficient.

    Returns
    -------
    tuple
        Updated ``(w, b)``.
    """
    w = w.copy()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        residual = _sigmoid(x[idx] @ w + b) - y[idx]
        w -= lr * (x[idx].T @ residual / len(idx) + 2.0 * l2 * w)
        b -= lr * float(np.mean(residual))
    return w, b


def logreg_trainable(config: dict[str, Any]) -> None:
    """Tune function trainable: SGD logistic regression on one Pima stage.

    Parameters
    ----------
    config : dict
        ``stage`` (1..5, default 5), ``batch_size`` (default 32), ``l2`` (1e-4), ``lr``
        (0.05), ``epochs`` (30), ``seed`` (0: batch order), ``split_seed`` (0),
        ``data_path`` (packaged CSV), ``checkpoint_every`` (1).
    """
    runtime.check_keys(config, CONFIG_KEYS, "logreg_trainable")
    stage = runtime.get_int(config, "stage", len(STAGE_SIZES), low=1, high=len(STAGE_SIZES))
    batch_size = runtime.get_int(config, "batch_size", 32, low=1)
    l2 = runtime.get_float(config, "l2", 1e-4, low=0.0)
    lr = runtime.get_float(config, "lr", 0.05, low=1e-12)
    epochs = runtime.get_int(config, "epochs", DEFAULT_EPOCHS, low=1)
    seed = runtime.get_int(config, "seed", 0)
    every = runtime.get_int(config, "checkpoint_every", 1, low=1)
    x_tr, y_tr, x_val, y_val = stage_data(
        stage,
        split_seed=runtime.get_int(config, "split_seed", 0),
        data_path=config.get("data_path"),
    )

    def read(directory: Any) -> dict[str, Any]:
        return runtime.read_state(directory)

    state = runtime.restore(read) or {"epoch": 0, "w": [0.0] * x_tr.shape[1], "b": 0.0}
    w, b = np.asarray(state["w"], dtype=np.float64), float(state["b"])
    for epoch in range(int(state["epoch"]) + 1, epochs + 1):
        order = runtime.epoch_rng(seed, epoch).permutation(len(x_tr))
        w, b = sgd_epoch(w, b, x_tr, y_tr, order, batch_size, lr, l2)
        val_error = float(np.mean(((x_val @ w + b) > 0).astype(np.int64) != y_val))
        metrics = {
            "epoch": epoch,
            "stage": stage,
            "n_train": len(x_tr),
            "val_error": val_error,
            "val_accuracy": 1.0 - val_error,
            "val_loss": log_loss(w, b, x_val, y_val),
            "train_loss": log_loss(w, b, x_tr, y_tr) + l2 * float(w @ w),
        }
        snapshot = {"epoch": epoch, "w": w.tolist(), "b": b}

        def write(directory: Any, snapshot: dict[str, Any] = snapshot) -> None:
            runtime.write_state(directory, snapshot)

        runtime.report(metrics, write if epoch % every == 0 or epoch == epochs else None)
