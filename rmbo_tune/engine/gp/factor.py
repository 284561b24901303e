"""The Cholesky factor of a GP with fixed hyperparameters, grown one observation at a time,
together with ``L^{-1} k(X, Z)`` at fixed points ``Z``."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from rmbo_tune.engine.gp.likelihood import GPHyperparameters
from rmbo_tune.engine.gp.linalg import safe_cholesky
from rmbo_tune.engine.gp.posterior import GaussianProcess
from rmbo_tune.engine.kernels import check_kernel, kernel
from rmbo_tune.engine.types import Array


class FixedPointFactor:
    """A GP's Cholesky factor and ``L^{-1} k(X, Z)`` at fixed points ``Z``, grown one
    observation at a time while the hyperparameters stay fixed.

    Rebuilding the posterior at ``m`` fixed points after every observation costs
    ``O(t^2 m)``; extending costs ``O(t (t + m))``: the new row of ``L`` is
    ``l = L^{-1} k(X, x)``, ``d = sqrt(k(x, x) + noise - l.l)``, and the new row of
    ``V = L^{-1} k(X, Z)`` is ``(k(x, Z) - l V) / d``.

    Parameters
    ----------
    X : ndarray of shape (t, n_dims)
        Training inputs factorized at once (LAPACK, with jitter if needed).
    Z : ndarray of shape (m, n_dims)
        The fixed points.
    hyper : GPHyperparameters
    kind : {"matern52", "se"}
    """

    def __init__(self, X: Array, Z: Array, hyper: GPHyperparameters, *, kind: str) -> None:
        self.Z, self.hyper, self.kind = Z, hyper, check_kernel(kind)
        self._Z_in = hyper.inputs(Z)  # Z as the kernel sees it (warped once, not per append)
        self._rebuild(np.asarray(X, dtype=np.float64).reshape(-1, Z.shape[1]))

    def _k(self, A: Array, B: Array | None = None) -> Array:
        """``k(A, B)``; ``B`` None means the fixed points ``Z``."""
        hp = self.hyper
        B_in = self._Z_in if B is None else hp.inputs(B)
        return kernel(hp.inputs(A), B_in, hp.lengthscales, hp.signal_var, self.kind)

    def _rebuild(self, X: Array) -> None:
        self.X = X
        if len(X) == 0:
            self.L, V = np.zeros((0, 0)), np.zeros((0, len(self.Z)))
        else:
            self.L = safe_cholesky(self._k(X, X) + self.hyper.noise_var * np.eye(len(X)))
            V = linalg.solve_triangular(self.L, self._k(X), lower=True, check_finite=False)
        # Rows of V live in a buffer with spare capacity, so that appending does not copy it.
        self._buf = np.empty((max(2 * len(X), 16), len(self.Z)))
        self._buf[: len(X)] = V
        self.vsq = np.einsum("ij,ij->j", V, V)

    @property
    def V(self) -> Array:
        """``L^{-1} k(X, Z)``, shape (t, m)."""
        return self._buf[: len(self.X)]

    def _rows(
        self, L: Array, X: Array, x: Array, blocks: list[Array]
    ) -> tuple[Array, float, Array] | None:
        """The new rows of ``L`` and ``V`` for input ``x``; ``blocks`` stack to ``V``."""
        k = self._k(X, x[None, :])[:, 0]
        row = linalg.solve_triangular(L, k, lower=True, check_finite=False) if len(X) else k
        d2 = self.hyper.signal_var + self.hyper.noise_var - float(row @ row)
        if not d2 > 1e-10 * (self.hyper.signal_var + self.hyper.noise_var):
            return None  # numerically a duplicate: refactorize with jitter instead
        d = np.sqrt(d2)
        v = self._k(x[None, :])[0]
        start = 0
        for block in blocks:
            v -= row[start : start + len(block)] @ block
            start += len(block)
        return row, d, v / d

    @staticmethod
    def _grow(L: Array, row: Array, d: float) -> Array:
        t = len(L)
        out = np.zeros((t + 1, t + 1))
        out[:t, :t], out[t, :t], out[t, t] = L, row, d
        return out

    @property
    def n_obs(self) -> int:
        """Number of factorized training points."""
        return len(self.X)

    def append(self, x: Array) -> None:
        """Add the training input ``x`` (d,)."""
        rows = self._rows(self.L, self.X, x, [self.V])
        X = np.vstack([self.X, x[None, :]])
        if rows is None:
            self._rebuild(X)
            return
        row, d, v = rows
        t = len(self.X)
        if t == len(self._buf):
            grown = np.empty((2 * t, len(self.Z)))
            grown[:t] = self._buf
            self._buf = grown
        self._buf[t] = v
        self.L, self.X = self._grow(self.L, row, d), X
        self.vsq = self.vsq + v * v

    def keep_points(self, m: int) -> None:
        """Keep only the first ``m`` fixed points (the others are no longer needed)."""
        if m < len(self.Z):
            self.Z, self._Z_in, self.vsq = self.Z[:m], self._Z_in[:m], self.vsq[:m]
            self._buf = np.ascontiguousarray(self._buf[:, :m])

    def gp(self, y: Array, *, mean: float = 0.0) -> GaussianProcess:
        """The posterior given outputs ``y`` at the factorized inputs, without refactorizing."""
        return GaussianProcess(self.X, y, self.hyper, kind=self.kind, mean=mean, cholesky=self.L)

    def predict(
        self, gp: GaussianProcess, pending: Array | None = None
    ) -> tuple[Array, Array, GaussianProcess]:
        """Posterior mean and latent std at ``Z``, optionally with ``pending`` points
        hallucinated at their posterior mean (GP-BUCB: the mean is unchanged, the variance
        shrinks around them).

        Parameters
        ----------
        gp : GaussianProcess
            The posterior built by :meth:`gp` from this factor.
        pending : ndarray of shape (p, n_dims), optional

        Returns
        -------
        (mu, sigma, gp) : ndarray (m,), ndarray (m,), GaussianProcess
            ``gp`` is the posterior with the pending points included.
        """
        if gp.L is not self.L:
            raise ValueError("gp was not built from this factor")
        z = linalg.solve_triangular(self.L, gp.y - gp.mean, lower=True, check_finite=False)
        mu = gp.mean + self.V.T @ z
        vsq = self.vsq
        if pending is not None and len(pending):
            L, X, blocks = self.L, self.X, [self.V]
            mu_p, _ = gp.predict(pending)
            for p in pending:
                rows = self._rows(L, X, p, blocks)
                X = np.vstack([X, p[None, :]])
                if rows is None:  # a pending point duplicates an observation: refactorize
                    grown = FixedPointFactor(X, self.Z, self.hyper, kind=self.kind)
                    L, blocks, vsq = grown.L, [grown.V], grown.vsq
                    continue
                row, d, v = rows
                L, vsq = self._grow(L, row, d), vsq + v * v
                blocks.append(v[None, :])
            gp = GaussianProcess(
                X,
                np.concatenate([gp.y, mu_p]),
                self.hyper,
                kind=self.kind,
                mean=gp.mean,
                cholesky=L,
            )
        sigma = np.sqrt(np.maximum(self.hyper.signal_var - vsq, 0.0))
        return mu, sigma, gp
