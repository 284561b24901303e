"""The paper's CNN image-classification workload (MNIST, SVHN, CIFAR-10/100, digits).

Architecture (paper, appendix E): two convolutional layers of 32 3x3 filters, each followed by
3x3 max pooling, then two dense layers of 64 units, ReLU everywhere, softmax output. Trained
with RMSprop whose learning rate decays as ``lr / (1 + lr_decay * step)`` (the classic Keras
``decay`` argument), with L2 regularisation of ``l2`` on every layer's kernel. Convolutions and
pooling use ``"same"`` padding so that the same network also fits 8x8 digits.

Usage::

    from ray import tune
    from trainables import cnn

    trainable = tune.with_resources(cnn.cnn_trainable, {"cpu": 4, "gpu": 1})
    tuner = tune.Tuner(
        trainable,
        param_space={**cnn.search_space(), "dataset": "cifar10"},
        tune_config=tune.TuneConfig(metric="val_error", mode="min", num_samples=50),
    )

Each epoch reports ``epoch``, ``val_error`` (1 - validation accuracy, the paper's target),
``val_accuracy``, ``val_loss`` and ``train_loss`` with a checkpoint, and a restarted trial resumes
from its last checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from ray import tune

from trainables import runtime
from trainables.datasets import IMAGE_DATASETS, load_dataset

PAPER_EPOCHS = 20
PAPER_BATCH_SIZE = 128
HYPER_RANGE = (1e-7, 1e-2)

CONFIG_KEYS = {
    "dataset",
    "data_dir",
    "download",
    "lr",
    "lr_decay",
    "l2",
    "epochs",
    "batch_size",
    "seed",
    "deterministic",
    "val_fraction",
    "split_seed",
    "max_train_samples",
    "checkpoint_every",
}


def search_space(low: float = HYPER_RANGE[0], high: float = HYPER_RANGE[1]) -> dict[str, Any]:
    """The paper's search space: ``lr``, ``lr_decay`` and ``l2`` log-uniform in [1e-7, 1e-2].

    Parameters
    ----------
    low, high : float
        Bounds shared by the three hyperparameters.

    Returns
    -------
    dict
        Tune search-space entries to merge into ``param_space``.
    """
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got low={low!r}, high={high!r}")
    return {k: tune.loguniform(low, high) for k in ("lr", "lr_decay", "l2")}


def make_optimizer(lr: float, lr_decay: float) -> Any:
    """RMSprop with inverse-time decay ``lr / (1 + lr_decay * step)``.

    Parameters
    ----------
    lr : float
        Initial learning rate.
    lr_decay : float
        Decay per optimizer step.

    Returns
    -------
    keras.optimizers.RMSprop
        The optimizer.
    """
    import keras

    schedule = keras.optimizers.schedules.InverseTimeDecay(
        initial_learning_rate=lr, decay_steps=1, decay_rate=lr_decay
    )
    return keras.optimizers.RMSprop(learning_rate=schedule)


def build_cnn(input_shape: tuple[int, int, int], num_classes: int, l2: float) -> Any:
    """Build the paper's CNN.

    Parameters
    ----------
    input_shape : tuple of int
        ``(height, width, channels)``.
    num_classes : int
        Softmax outputs.
    l2 : float
        L2 penalty on every layer's kernel.

    Returns
    -------
    keras.Model
        The uncompiled model.
    """
    import keras
    from keras import layers

    def reg() -> Any:
        return keras.regularizers.L2(l2)

    inputs = keras.Input(shape=tuple(input_shape))
    x = inputs
    for _ in range(2):
        x = layers.Conv2D(32, 3, padding="same", activation="relu", kernel_regularizer=reg())(x)
        x = layers.MaxPooling2D(pool_size=3, padding="same")(x)
    x = layers.Flatten()(x)
    for _ in range(2):
        x = layers.Dense(64, activation="relu", kernel_regularizer=reg())(x)
    outputs = layers.Dense(num_classes, activation="softmax", kernel_regularizer=reg())(x)
    return keras.Model(inputs, outputs, name="paper_cnn")


def _batches(
    x: np.ndarray, y: np.ndarray, order: np.ndarray, batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for start in range(0, len(order), batch_size):
        idx = np.sort(order[start : start + batch_size])
        yield x[idx], y[idx]


def evaluate(model: Any, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Classification error and mean cross-entropy of ``model`` on ``(x, y)``.

    Parameters
    ----------
    model : keras.Model
        Softmax classifier.
    x, y : numpy.ndarray
        Images and integer labels.

    Returns
    -------
    tuple of float
        ``(error, loss)``, error in [0, 1].
    """
    probs = np.asarray(model.predict(x, batch_size=1024, verbose=0), dtype=np.float64)
    error = float(np.mean(np.argmax(probs, axis=1) != y))
    loss = float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, 1.0))))
    return error, loss


def cnn_trainable(config: dict[str, Any]) -> None:
    """Tune function trainable: train the paper's CNN, reporting once per epoch.

    Parameters
    ----------
    config : dict
        ``dataset`` ("mnist", "cifar10", "cifar100", "svhn", "digits"; default "mnist"),
        ``lr`` (default 1e-3), ``lr_decay`` (0), ``l2`` (0), ``epochs`` (20), ``batch_size``
        (128), ``seed`` (0: weights init and batch order), ``deterministic`` (False: TF op
        determinism), ``data_dir``, ``download`` (True), ``val_fraction`` (0.1),
        ``split_seed`` (0), ``max_train_samples`` (all), ``checkpoint_every`` (1 epoch).
    """
    runtime.check_keys(config, CONFIG_KEYS, "cnn_trainable")
    name = config.get("dataset", "mnist")
    if name not in IMAGE_DATASETS:
        raise ValueError(f"config['dataset'] = {name!r}; expected one of {sorted(IMAGE_DATASETS)}")
    lr = runtime.get_float(config, "lr", 1e-3, low=1e-12, high=10.0)
    lr_decay = runtime.get_float(config, "lr_decay", 0.0, low=0.0)
    l2 = runtime.get_float(config, "l2", 0.0, low=0.0)
    epochs = runtime.get_int(config, "epochs", PAPER_EPOCHS, low=1)
    batch_size = runtime.get_int(config, "batch_size", PAPER_BATCH_SIZE, low=1)
    seed = runtime.get_int(config, "seed", 0)
    every = runtime.get_int(config, "checkpoint_every", 1, low=1)
    max_train = config.get("max_train_samples")

    data = load_dataset(
        name,
        config.get("data_dir"),
        val_fraction=runtime.get_float(config, "val_fraction", 0.1, low=0.0, high=1.0),
        split_seed=runtime.get_int(config, "split_seed", 0),
        max_train_samples=None if max_train is None else int(max_train),
        download=bool(config.get("download", True)),
    )
    device = runtime.setup_tensorflow(seed, deterministic=bool(config.get("deterministic")))
    model = build_cnn(data.input_shape, data.num_classes, l2)
    optimizer = make_optimizer(lr, lr_decay)
    state = runtime.compile_and_restore(
        model, optimizer, "sparse_categorical_crossentropy", device
    )
    n = len(data.x_train)
    steps = math.ceil(n / batch_size)
    for epoch in range(int(state["epoch"]) + 1, epochs + 1):
        order = runtime.epoch_rng(seed, epoch).permutation(n)
        history = model.fit(
            _batches(data.x_train, data.y_train, order, batch_size),
            steps_per_epoch=steps,
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        val_error, val_loss = evaluate(model, data.x_val, data.y_val)
        metrics = {
            "epoch": epoch,
            "val_error": val_error,
            "val_accuracy": 1.0 - val_error,
            "val_loss": val_loss,
            "train_loss": float(history.history["loss"][-1]),
            "device": device,
        }

        def write(directory: Any, epoch: int = epoch) -> None:
            runtime.save_keras(directory, model, optimizer)
            runtime.write_state(directory, {"epoch": epoch})

        runtime.report(metrics, write if epoch % every == 0 or epoch == epochs else None)
