"""One-shot Omniglot workload: a Siamese network on one alphabet (paper, appendix E).

Each alphabet is a task. Its characters are split once (``split_seed``) into 75% training and
25% validation characters. Training draws ``pairs_per_epoch`` fresh image pairs per epoch from
the training characters, half of the same character and half of two different ones, and fits a
binary "same character?" score with binary cross-entropy.

Metric: the *2-way validation error*. Every image of every validation character is an anchor; it
is compared with another drawing of its own character and with a drawing of a different
validation character (both chosen once, with ``split_seed``), and the trial counts an error when
the network does not give the same-character pair the strictly higher score. ``val_error`` is
the fraction of errors (chance level 0.5).

Network: a smaller version of Koch et al. (2015): a shared encoder of four ReLU convolutions
(32 10x10, 64 7x7, 64 4x4, 128 4x4 filters, ``"same"`` padding, 2x2 max pooling after the first
three) and a 256-unit sigmoid embedding; the score is a sigmoid unit on the L1 distance of the two
embeddings. Optimiser and tuned knobs are those of the CNN workload: RMSprop with
``lr / (1 + lr_decay * step)`` and L2 ``l2`` on every kernel (:func:`search_space`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from trainables import runtime
from trainables.cnn import PAPER_BATCH_SIZE, PAPER_EPOCHS, make_optimizer
from trainables.cnn import search_space as _cnn_search_space
from trainables.omniglot import NATIVE_SIZE, OMNIGLOT_SPLITS, load_omniglot

VAL_FRACTION = 0.25
PAIRS_PER_EPOCH = 4096
CONFIG_KEYS = {
    "alphabet",
    "split",
    "data_dir",
    "download",
    "image_size",
    "lr",
    "lr_decay",
    "l2",
    "epochs",
    "batch_size",
    "pairs_per_epoch",
    "val_fraction",
    "split_seed",
    "seed",
    "deterministic",
    "checkpoint_every",
}


def search_space() -> dict[str, Any]:
    """Same space as the CNN workload: ``lr``, ``lr_decay``, ``l2`` log-uniform in [1e-7, 1e-2].

    Returns
    -------
    dict
        Tune search-space entries.
    """
    return _cnn_search_space()


def split_characters(
    n_characters: int, val_fraction: float = VAL_FRACTION, split_seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of character indices into training and validation characters.

    Parameters
    ----------
    n_characters : int
        Characters in the alphabet (>= 4).
    val_fraction : float
        Fraction of validation characters (at least 2, leaving at least 2 for training).
    split_seed : int
        Permutation seed.

    Returns
    -------
    tuple of numpy.ndarray
        Sorted ``(train, val)`` index arrays.
    """
    if n_characters < 4:
        raise ValueError(f"an alphabet needs >= 4 characters for the split, got {n_characters}")
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    n_val = min(max(2, round(val_fraction * n_characters)), n_characters - 2)
    order = np.random.default_rng(split_seed).permutation(n_characters)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def two_way_trials(n_characters: int, n_drawings: int, rng: np.random.Generator) -> np.ndarray:
    """One 2-way trial per image: (anchor, same-character image, other-character image).

    Parameters
    ----------
    n_characters, n_drawings : int
        Shape of the validation image grid (>= 2 each).
    rng : numpy.random.Generator
        Chooses the partner images.

    Returns
    -------
    numpy.ndarray
        int64 array (n_characters * n_drawings, 3, 2) of (character, drawing) indices.
    """
    trials = np.empty((n_characters * n_drawings, 3, 2), dtype=np.int64)
    k = 0
    for c in range(n_characters):
        for d in range(n_drawings):
            same = (d + rng.integers(1, n_drawings)) % n_drawings
            other = (c + rng.integers(1, n_characters)) % n_characters
            trials[k] = ((c, d), (c, same), (other, rng.integers(n_drawings)))
            k += 1
    return trials


def sample_pairs(
    n_characters: int, n_drawings: int, n_pairs: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Balanced same/different training pairs.

    Parameters
    ----------
    n_characters, n_drawings : int
        Shape of the training image grid (>= 2 each).
    n_pairs : int
        Number of pairs; the first half are same-character pairs.
    rng : numpy.random.Generator
        Randomness.

    Returns
    -------
    tuple of numpy.ndarray
        ``(left, right, label)``: (n_pairs, 2) (character, drawing) indices and float32
        labels (1 = same character).
    """
    n_same = n_pairs // 2
    c1 = rng.integers(n_characters, size=n_pairs)
    c2 = np.where(
        np.arange(n_pairs) < n_same,
        c1,
        (c1 + rng.integers(1, n_characters, size=n_pairs)) % n_characters,
    )
    d1 = rng.integers(n_drawings, size=n_pairs)
    d2 = (d1 + rng.integers(1, n_drawings, size=n_pairs)) % n_drawings
    label = (c1 == c2).astype(np.float32)
    return np.stack([c1, d1], axis=1), np.stack([c2, d2], axis=1), label


def build_siamese(image_size: int, l2: float) -> Any:
    """Build the Siamese network (two image inputs, one same-character probability).

    Parameters
    ----------
    image_size : int
        Side of the square grayscale inputs.
    l2 : float
        L2 penalty on every kernel.

    Returns
    -------
    keras.Model
        Uncompiled model mapping ``[left, right]`` to a (batch, 1) probability.
    """
    import keras
    from keras import layers

    def reg() -> Any:
        return keras.regularizers.L2(l2)

    image = keras.Input(shape=(image_size, image_size, 1))
    x = image
    for filters, kernel in ((32, 10), (64, 7), (64, 4)):
        x = layers.Conv2D(
            filters, kernel, padding="same", activation="relu", kernel_regularizer=reg()
        )(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(128, 4, padding="same", activation="relu", kernel_regularizer=reg())(x)
    x = layers.Flatten()(x)
    embedding = layers.Dense(256, activation="sigmoid", kernel_regularizer=reg())(x)
    encoder = keras.Model(image, embedding, name="encoder")

    left = keras.Input(shape=(image_size, image_size, 1), name="left")
    right = keras.Input(shape=(image_size, image_size, 1), name="right")
    diff = layers.Subtract()([encoder(left), encoder(right)])
    distance = layers.Lambda(keras.ops.abs, name="l1_distance")(diff)
    score = layers.Dense(1, activation="sigmoid", kernel_regularizer=reg())(distance)
    return keras.Model([left, right], score, name="siamese")


def two_way_error(model: Any, images: np.ndarray, trials: np.ndarray) -> float:
    """Fraction of 2-way trials where the same-character pair does not score strictly higher.

    Parameters
    ----------
    model : keras.Model
        Siamese network.
    images : numpy.ndarray
        (n_characters, n_drawings, s, s, 1) validation images.
    trials : numpy.ndarray
        Output of :func:`two_way_trials`.

    Returns
    -------
    float
        The 2-way validation error in [0, 1].
    """
    anchor = images[trials[:, 0, 0], trials[:, 0, 1]]
    lefts = np.concatenate([anchor, anchor])
    rights = np.concatenate(
        [images[trials[:, 1, 0], trials[:, 1, 1]], images[trials[:, 2, 0], trials[:, 2, 1]]]
    )
    scores = np.asarray(model.predict([lefts, rights], batch_size=256, verbose=0)).reshape(-1)
    n = len(trials)
    return float(np.mean(scores[:n] <= scores[n:]))


def _pair_batches(
    images: np.ndarray, left: np.ndarray, right: np.ndarray, label: np.ndarray, batch_size: int
) -> Iterator[tuple[tuple[np.ndarray, np.ndarray], np.ndarray]]:
    for s in range(0, len(label), batch_size):
        sl = slice(s, s + batch_size)
        yield (
            (images[left[sl, 0], left[sl, 1]], images[right[sl, 0], right[sl, 1]]),
            label[sl],
        )


def siamese_trainable(config: dict[str, Any]) -> None:
    """Tune function trainable: train the Siamese network on one Omniglot alphabet.

    Parameters
    ----------
    config : dict
        ``alphabet`` (required, e.g. "Greek"), ``split`` ("background"), ``image_size``
        (105), ``lr`` (1e-3), ``lr_decay`` (0), ``l2`` (0), ``epochs`` (20), ``batch_size``
        (128), ``pairs_per_epoch`` (4096), ``val_fraction`` (0.25 of the characters),
        ``split_seed`` (0), ``seed`` (0), ``deterministic`` (False), ``data_dir``,
        ``download`` (True), ``checkpoint_every`` (1).
    """
    runtime.check_keys(config, CONFIG_KEYS, "siamese_trainable")
    if "alphabet" not in config:
        raise ValueError("siamese_trainable: config key 'alphabet' is required")
    split = config.get("split", "background")
    if split not in OMNIGLOT_SPLITS:
        raise ValueError(f"config['split'] = {split!r}; expected one of {OMNIGLOT_SPLITS}")
    size = runtime.get_int(config, "image_size", NATIVE_SIZE, low=8)
    lr = runtime.get_float(config, "lr", 1e-3, low=1e-12, high=10.0)
    lr_decay = runtime.get_float(config, "lr_decay", 0.0, low=0.0)
    l2 = runtime.get_float(config, "l2", 0.0, low=0.0)
    epochs = runtime.get_int(config, "epochs", PAPER_EPOCHS, low=1)
    batch_size = runtime.get_int(config, "batch_size", PAPER_BATCH_SIZE, low=1)
    n_pairs = runtime.get_int(config, "pairs_per_epoch", PAIRS_PER_EPOCH, low=2)
    split_seed = runtime.get_int(config, "split_seed", 0)
    seed = runtime.get_int(config, "seed", 0)
    every = runtime.get_int(config, "checkpoint_every", 1, low=1)

    alphabet = load_omniglot(
        str(config["alphabet"]),
        split,
        config.get("data_dir"),
        image_size=size,
        download=bool(config.get("download", True)),
    )
    train_chars, val_chars = split_characters(
        len(alphabet.characters),
        runtime.get_float(config, "val_fraction", VAL_FRACTION, low=0.0, high=1.0),
        split_seed,
    )
    train_images, val_images = alphabet.images[train_chars], alphabet.images[val_chars]
    trials = two_way_trials(len(val_chars), val_images.shape[1], np.random.default_rng(split_seed))

    device = runtime.setup_tensorflow(seed, deterministic=bool(config.get("deterministic")))
    model = build_siamese(size, l2)
    optimizer = make_optimizer(lr, lr_decay)
    state = runtime.compile_and_restore(model, optimizer, "binary_crossentropy", device)
    for epoch in range(int(state["epoch"]) + 1, epochs + 1):
        rng = runtime.epoch_rng(seed, epoch)
        left, right, label = sample_pairs(len(train_chars), train_images.shape[1], n_pairs, rng)
        perm = rng.permutation(n_pairs)
        history = model.fit(
            _pair_batches(train_images, left[perm], right[perm], label[perm], batch_size),
            steps_per_epoch=math.ceil(n_pairs / batch_size),
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        val_error = two_way_error(model, val_images, trials)
        metrics = {
            "epoch": epoch,
            "val_error": val_error,
            "val_accuracy": 1.0 - val_error,
            "train_loss": float(history.history["loss"][-1]),
            "n_val_trials": len(trials),
            "device": device,
        }

        def write(directory: Any, epoch: int = epoch) -> None:
            runtime.save_keras(directory, model, optimizer)
            runtime.write_state(directory, {"epoch": epoch})

        runtime.report(metrics, write if epoch % every == 0 or epoch == epochs else None)
