"""Ray Tune trainables for the paper's workloads, independent of the ``rmbo_tune`` engine.

Function trainables (report every epoch with a checkpoint, resume from ``tune.get_checkpoint()``,
use a GPU when Tune assigns one via ``tune.with_resources(fn, {"gpu": 1})``):

* :func:`trainables.cnn.cnn_trainable`: the paper's CNN on MNIST, SVHN, CIFAR-10/100 or digits;
* :func:`trainables.siamese.siamese_trainable`: Omniglot one-shot Siamese net, one alphabet;
* :func:`trainables.logreg.logreg_trainable`: logistic regression on the Pima diabetes stages;
* :func:`trainables.cartpole.cartpole_trainable`: linear softmax policy on CartPole-v1.

TensorFlow is imported only when a TensorFlow trainable runs; gymnasium only for CartPole.
"""

from __future__ import annotations

from trainables.cartpole import cartpole_trainable
from trainables.cnn import cnn_trainable
from trainables.logreg import logreg_trainable
from trainables.siamese import siamese_trainable
from trainables.storage import ENV_VAR, DatasetNotFoundError

__all__ = [
    "ENV_VAR",
    "DatasetNotFoundError",
    "cartpole_trainable",
    "cnn_trainable",
    "logreg_trainable",
    "siamese_trainable",
]
