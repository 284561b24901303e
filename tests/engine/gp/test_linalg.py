import numpy as np
import pytest

from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.kernels import kernel
from rmbo_tune.engine.types import CholeskyError


def test_safe_cholesky_adds_jitter_for_duplicates_and_raises_when_hopeless():
    X = np.zeros((5, 1))
    K = kernel(X, X, np.array([0.3]), 1.0, "se")  # rank one
    L = safe_cholesky(K)
    np.testing.assert_allclose(L @ L.T, K, atol=1e-3)
    with pytest.raises(CholeskyError, match="not positive definite"):
        safe_cholesky(-np.eye(3))
