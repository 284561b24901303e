"""Plumbing shared by the trainables: config checks, device setup, checkpoints and reports.

Every trainable reports once per epoch (or episode) through :func:`report`, which attaches a
``tune.Checkpoint`` written by a callback, and resumes through :func:`restore`, which reads
``tune.get_checkpoint()``. TensorFlow is imported lazily so that the numpy-only trainables do not
need it.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from ray import tune

T = TypeVar("T")
STATE_FILE = "state.json"


def get_float(
    config: Mapping[str, Any],
    key: str,
    default: float | None = None,
    *,
    low: float | None = None,
    high: float | None = None,
) -> float:
    """Read a float from ``config``, raising ``ValueError`` naming the key and value.

    Parameters
    ----------
    config : mapping
        Trial config.
    key : str
        Key to read.
    default : float, optional
        Used when the key is absent; ``None`` makes the key required.
    low, high : float, optional
        Inclusive bounds.

    Returns
    -------
    float
        The value.
    """
    if key not in config and default is None:
        raise ValueError(f"config key {key!r} is required")
    raw = config.get(key, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"config[{key!r}] must be a number, got {raw!r}") from None
    if (
        not np.isfinite(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise ValueError(f"config[{key!r}] = {raw!r} is outside [{low}, {high}]")
    return value


def get_int(
    config: Mapping[str, Any],
    key: str,
    default: int | None = None,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Read an integer from ``config`` (see :func:`get_float`).

    Parameters
    ----------
    config : mapping
        Trial config.
    key : str
        Key to read.
    default : int, optional
        Used when the key is absent; ``None`` makes the key required.
    low, high : int, optional
        Inclusive bounds.

    Returns
    -------
    int
        The value.
    """
    value = get_float(config, key, default, low=low, high=high)
    if value != int(value):
        raise ValueError(f"config[{key!r}] must be an integer, got {config.get(key)!r}")
    return int(value)


def check_keys(config: Mapping[str, Any], allowed: set[str], trainable: str) -> None:
    """Reject unknown config keys (typos would otherwise be silently ignored).

    Parameters
    ----------
    config : mapping
        Trial config.
    allowed : set of str
        Known keys.
    trainable : str
        Name used in the message.
    """
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ValueError(f"{trainable}: unknown config keys {unknown}; known: {sorted(allowed)}")


def _trial_cpus() -> int | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Ray warns when called outside a trial
            resources = tune.get_context().get_trial_resources().required_resources
    except Exception:  # not inside a Tune trial
        return None
    cpus = int(resources.get("CPU", 0))
    return cpus if cpus > 0 else None


def _assigned_gpus() -> list | None:
    import ray

    if not ray.is_initialized():
        return None
    try:
        return list(ray.get_gpu_ids())
    except Exception:  # driver process or no worker context
        return None


def setup_tensorflow(seed: int, *, deterministic: bool = False) -> str:
    """Configure TensorFlow for this trial and seed it.

    Uses the GPU(s) Tune assigned to the trial (``tune.with_resources(fn, {"gpu": 1})`` sets
    ``CUDA_VISIBLE_DEVICES`` for the worker), with memory growth so co-located trials can share
    a card; hides GPUs from TensorFlow when the trial got none, so it runs on CPU. Thread pools
    are sized to the trial's CPU allocation. Device settings only apply in a fresh process;
    in a reused worker they keep their first values.

    Parameters
    ----------
    seed : int
        Seeds Python, numpy's legacy global state and TensorFlow (``keras.utils.set_random_seed``;
        acceptable here because each trial owns its worker process).
    deterministic : bool
        Enable TensorFlow op determinism (bitwise-reproducible, slower on GPU).

    Returns
    -------
    str
        ``"GPU"`` or ``"CPU"``, the device the model will run on.
    """
    import keras
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    assigned = _assigned_gpus()
    try:
        if gpus and assigned is not None and not assigned:
            tf.config.set_visible_devices([], "GPU")
        else:
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
        cpus = _trial_cpus()
        if cpus is not None:
            tf.config.threading.set_intra_op_parallelism_threads(cpus)
            tf.config.threading.set_inter_op_parallelism_threads(min(cpus, 2))
    except RuntimeError:  # runtime already initialised by an earlier trial in this worker
        pass
    keras.utils.set_random_seed(int(seed))
    if deterministic:
        tf.config.experimental.enable_op_determinism()
    return "GPU" if tf.config.get_visible_devices("GPU") else "CPU"


def restore(reader: Callable[[Path], T]) -> T | None:
    """Read the trial's latest checkpoint, if Tune handed it one.

    Parameters
    ----------
    reader : callable
        Called with the checkpoint directory; its result is returned.

    Returns
    -------
    object or None
        ``reader(directory)``, or ``None`` when the trial starts fresh.
    """
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as directory:
        return reader(Path(directory))


def report(metrics: dict[str, Any], writer: Callable[[Path], None] | None) -> None:
    """Report ``metrics`` to Tune, with a checkpoint written by ``writer`` when given.

    Parameters
    ----------
    metrics : dict
        Result row.
    writer : callable or None
        Called with a fresh temporary directory to fill with the checkpoint.
    """
    if writer is None:
        tune.report(metrics)
        return
    with tempfile.TemporaryDirectory(prefix="rmbo-ckpt-") as directory:
        writer(Path(directory))
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))


def write_state(directory: Path, state: dict[str, Any]) -> None:
    """Write a JSON-serialisable trainer state into a checkpoint directory.

    Parameters
    ----------
    directory : pathlib.Path
        Checkpoint directory.
    state : dict
        Epoch counter, metric history, ...
    """
    (directory / STATE_FILE).write_text(json.dumps(state))


def read_state(directory: Path) -> dict[str, Any]:
    """Read the JSON state written by :func:`write_state`.

    Parameters
    ----------
    directory : pathlib.Path
        Checkpoint directory.

    Returns
    -------
    dict
        The state.
    """
    return json.loads((directory / STATE_FILE).read_text())


def save_keras(directory: Path, model: Any, optimizer: Any) -> None:
    """Save model weights and optimizer slots (incl. the step counter driving lr decay).

    Parameters
    ----------
    directory : pathlib.Path
        Checkpoint directory.
    model : keras.Model
        Built model.
    optimizer : keras.optimizers.Optimizer
        Its optimizer.
    """
    model.save_weights(directory / "model.weights.h5")
    np.savez(directory / "optimizer.npz", *[v.numpy() for v in optimizer.variables])


def load_keras(directory: Path, model: Any, optimizer: Any) -> None:
    """Restore what :func:`save_keras` wrote into an identically built model and optimizer.

    Parameters
    ----------
    directory : pathlib.Path
        Checkpoint directory.
    model : keras.Model
        Model built with the same architecture.
    optimizer : keras.optimizers.Optimizer
        Same optimizer class and schedule; built here if needed.
    """
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    model.load_weights(directory / "model.weights.h5")
    with np.load(directory / "optimizer.npz") as saved:
        values = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    if len(values) != len(optimizer.variables):
        raise ValueError(
            f"checkpoint has {len(values)} optimizer variables, optimizer has "
            f"{len(optimizer.variables)}; was it written by a different model?"
        )
    for var, value in zip(optimizer.variables, values, strict=True):
        var.assign(value)


def compile_and_restore(model: Any, optimizer: Any, loss: str, device: str) -> dict[str, Any]:
    """Compile a Keras trainable's model and resume it from Tune's checkpoint, if any.

    Parameters
    ----------
    model : keras.Model
    optimizer : keras.optimizers.Optimizer
    loss : str
        Keras loss name.
    device : str
        What :func:`setup_tensorflow` returned; XLA compilation is used on a GPU only.

    Returns
    -------
    dict
        The saved training state (``{"epoch": 0}`` on a fresh start); the model's weights and
        the optimizer's variables are restored in place.
    """
    model.compile(optimizer=optimizer, loss=loss, jit_compile="auto" if device == "GPU" else False)

    def read(directory: Path) -> dict[str, Any]:
        load_keras(directory, model, optimizer)
        return read_state(directory)

    return restore(read) or {"epoch": 0}


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """Generator for one epoch's shuffling/sampling, independent of resume history.

    Parameters
    ----------
    seed : int
        Trial seed.
    epoch : int
        1-based epoch index.

    Returns
    -------
    numpy.random.Generator
        Seeded from ``(seed, epoch)``.
    """
    return np.random.default_rng([int(seed), int(epoch)])
