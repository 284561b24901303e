"""Ray Tune search spaces <-> the engine's unit cube.

Every Tune domain becomes one or more columns of ``[0, 1]^D``:

- ``uniform``/``quniform``/``randint``/``qrandint``: linear map of the valid value range;
- ``loguniform``/``qloguniform``/``lograndint``/``qlograndint``: linear map of the log range;
- ``choice``: one column per category (one-hot); a point decodes to its largest column.

Integer and quantized values snap to the nearest valid value, so ``project(X) =
encode(decode(X))`` maps any point of the cube to a valid one: the engine only ever sees
points that stand for real configurations. Valid ranges follow Tune's sampling exactly:
``randint``/``lograndint`` (and ``q = 1``) exclude ``upper``; quantized domains hold the multiples
of ``q`` between the bounds, both included; continuous floats stay below ``upper``.

``grid_search``, ``sample_from`` and ``randn``/``qrandn`` have no place in a bounded cube and
are refused with a ``ValueError`` naming the key; so are keys that are not strings on the
way to a domain (a constant dict with such keys is passed on as it is).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ray.tune.search.sample import Categorical, Domain, Float, Function, Integer, Quantized

from rmbo_tune.engine.types import Array
from rmbo_tune.exceptions import OutOfSpaceError, UnsupportedSearchSpaceError

Path = tuple[str, ...]


def flatten(
    config: Mapping[str, Any], prefix: Path = (), leaves: Collection[Path] = ()
) -> dict[Path, Any]:
    """Nested dict -> ``{path tuple: leaf}``; dict values are descended into, except at
    the paths in ``leaves`` (a ``tune.choice`` among dicts takes a whole dict there) and
    dicts with a key that is not a string (a constant such as ``{0: 1.0, 1: 5.0}``)."""
    out: dict[Path, Any] = {}
    for key, value in config.items():
        path = (*prefix, str(key))
        if (
            path not in leaves
            and isinstance(value, Mapping)
            and "grid_search" not in value
            and value
            and all(isinstance(k, str) for k in value)
        ):
            out.update(flatten(value, path, leaves))
        else:
            out[path] = value
    return out


def unflatten(flat: Mapping[Path, Any]) -> dict[str, Any]:
    """Inverse of :func:`flatten`."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def has_domains(config: Mapping[str, Any]) -> bool:
    """Whether a (nested) config holds Tune domains or grid searches: a search space, not
    a configuration."""
    return any(
        isinstance(v, Domain) or (isinstance(v, Mapping) and "grid_search" in v)
        for v in flatten(config).values()
    )


def path_name(path: Path) -> str:
    """A path as users write it: ``"model/lr"``."""
    return "/".join(path)


@dataclass(frozen=True)
class Dimension:
    """One search-space parameter and its columns in the unit cube.

    ``low``/``high`` are the smallest and largest valid values (for numbers); ``q`` the
    quantum (1 for integers, None for continuous floats).
    """

    path: Path
    kind: str  # "float" | "int" | "choice"
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    q: float | None = None
    categories: tuple = field(default_factory=tuple)

    @property
    def width(self) -> int:
        """Number of cube columns."""
        return len(self.categories) if self.kind == "choice" else 1

    @property
    def name(self) -> str:
        """The parameter's path as a string."""
        return path_name(self.path)

    # numbers -------------------------------------------------------------------------
    def _to_unit(self, v: Array) -> Array:
        if self.log:
            return (np.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        if not math.isfinite(self.high - self.low):  # e.g. (-1e308, 1e308): halve first
            return (v / 2 - self.low / 2) / (self.high / 2 - self.low / 2)
        return (v - self.low) / (self.high - self.low)

    def _from_unit(self, u: Array) -> Array:
        u = np.clip(u, 0.0, 1.0)
        if self.log:
            v = np.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        elif not math.isfinite(self.high - self.low):
            v = self.low * (1.0 - u) + self.high * u
        else:
            v = self.low + u * (self.high - self.low)
        return self._snap(v)

    def _snap(self, v: Array) -> Array:
        if self.q is not None:
            v = np.round(v / self.q) * self.q
        v = np.clip(v, self.low, self.high)
        if self.q is None:
            # Tune's continuous samplers never return ``upper`` itself.
            v = np.minimum(v, np.nextafter(self.high, -np.inf))
        return v

    def value(self, u: float | Array) -> Any:
        """Decode this dimension's columns into a Python value of the domain's type."""
        u = np.atleast_1d(np.asarray(u, dtype=np.float64))
        if self.kind == "choice":
            return self.categories[int(np.argmax(u))]
        v = float(self._from_unit(u[:1])[0])
        if self.kind == "int":
            # Exact integer bounds: float(2**62 - 1) rounds up to 2**62, Tune's excluded upper.
            return min(max(round(v), int(self.low)), int(self.high))
        return v

    def columns(self, value: Any, *, clip: bool = False) -> Array:
        """Encode one value into this dimension's columns.

        Raises
        ------
        OutOfSpaceError
            For a value of the wrong type, outside the bounds (unless ``clip``), or not one
            of the categories.
        """
        if self.kind == "choice":
            index = _category_index(self.categories, value)
            if index is None:
                raise OutOfSpaceError(
                    f"{self.name}={value!r} is not one of the categories {list(self.categories)}",
                    reason="unknown_category",
                )
            out = np.zeros(len(self.categories))
            out[index] = 1.0
            return out
        if isinstance(value, bool) or not isinstance(
            value, int | float | np.integer | np.floating
        ):
            raise OutOfSpaceError(f"{self.name}={value!r} is not a number", reason="wrong_type")
        v = float(value)
        if not math.isfinite(v):
            raise OutOfSpaceError(f"{self.name}={value!r} is not finite", reason="wrong_type")
        # Rounding's allowance, relative to the bounds' own size (a log range of 1e-10 to
        # 1e-9 has no room for an absolute 1e-9).
        tol = 1e-9 * max(abs(self.high), abs(self.low), self.high - self.low)
        if v < self.low - tol or v > self.high + tol:
            if not clip:
                raise OutOfSpaceError(
                    f"{self.name}={value!r} is outside [{self.low:g}, {self.high:g}]",
                    reason="out_of_bounds",
                )
        v = float(self._snap(np.array([v]))[0])
        return self._to_unit(np.array([v]))


def _category_index(categories: tuple, value: Any) -> int | None:
    # Type-aware first, so that True does not match 1 and 1.0 does not match True.
    for i, c in enumerate(categories):
        if type(c) is type(value) and _equal(c, value):
            return i
    for i, c in enumerate(categories):
        if not isinstance(c, bool) and not isinstance(value, bool) and _equal(c, value):
            return i
    return None


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` for any two values, numpy arrays compared whole; False where the
    comparison fails."""
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        return bool(a == b)
    except Exception:
        return False


def _dimension(path: Path, domain: Domain) -> Dimension | None:
    name = path_name(path)
    sampler = domain.get_sampler()
    q = None
    if isinstance(sampler, Quantized):
        q, sampler = sampler.q, sampler.get_sampler()
    sampler_name = type(sampler).__name__
    if isinstance(domain, Function) or sampler_name == "_CallSampler":
        raise UnsupportedSearchSpaceError(
            f"{name}: tune.sample_from cannot be searched by RMBOSearcher; replace it with a "
            "bounded domain (tune.uniform, tune.choice, ...)"
        )
    if sampler_name == "_Normal":
        raise UnsupportedSearchSpaceError(
            f"{name}: tune.randn/qrandn is unbounded; use tune.uniform or tune.quniform "
            "over the range you want searched"
        )
    if isinstance(domain, Categorical):
        cats = tuple(domain.categories)
        for c in cats:
            if isinstance(c, Domain) or (
                isinstance(c, Mapping) and any(isinstance(v, Domain) for v in flatten(c).values())
            ):
                raise UnsupportedSearchSpaceError(
                    f"{name}: conditional spaces (a choice over domains) are not supported"
                )
        if not cats:
            raise UnsupportedSearchSpaceError(f"{name}: tune.choice needs at least one category")
        if len(cats) == 1:
            return None
        return Dimension(path, "choice", categories=cats)
    log = sampler_name == "_LogUniform"
    if sampler_name not in ("_Uniform", "_LogUniform"):
        raise UnsupportedSearchSpaceError(f"{name}: unsupported sampler {sampler_name}")
    lower, upper = float(domain.lower), float(domain.upper)
    if not (math.isfinite(lower) and math.isfinite(upper)) or not lower < upper:
        raise UnsupportedSearchSpaceError(
            f"{name}: needs finite bounds lower < upper, got ({domain.lower}, {domain.upper})"
        )
    if isinstance(domain, Integer):
        # Integer arithmetic: bounds beyond 2**53 are not exact as floats.
        lo_i, up_i = int(domain.lower), int(domain.upper)
        if q is None or q == 1:
            low, high, q = lo_i, up_i - 1, 1
        else:
            q = int(q)
            low, high = -(-lo_i // q) * q, (up_i // q) * q
        kind = "int"
    elif isinstance(domain, Float):
        kind = "float"
        low, high = (
            (lower, upper)
            if q is None
            else (math.ceil(lower / q - 1e-9) * q, math.floor(upper / q + 1e-9) * q)
        )
    else:
        raise UnsupportedSearchSpaceError(f"{name}: unsupported domain {type(domain).__name__}")
    if high < low:
        raise UnsupportedSearchSpaceError(
            f"{name}: no valid value between {domain.lower} and {domain.upper} with q={q}"
        )
    if high == low:
        return None
    if log and low <= 0:
        raise UnsupportedSearchSpaceError(f"{name}: log domains need a positive lower bound")
    if kind == "int":  # kept exact (JSON holds Python ints exactly)
        return Dimension(path, kind, low=low, high=high, log=log, q=q)
    return Dimension(path, kind, low=float(low), high=float(high), log=log, q=q)


class SearchSpace:
    """A Tune search space encoded into the unit cube.

    Parameters
    ----------
    dimensions : list of Dimension
    constants : dict, optional
        Flattened constant entries of the space (returned by ``decode`` only if asked).

    Examples
    --------
    >>> space = SearchSpace.from_tune(
    ...     {"lr": tune.loguniform(1e-5, 1e-1), "act": tune.choice(["relu", "tanh"])}
    ... )
    >>> x = space.encode({"lr": 1e-3, "act": "tanh"})
    >>> space.decode(x)
    {'lr': 0.001, 'act': 'tanh'}
    """

    def __init__(self, dimensions: list[Dimension], constants: dict[Path, Any] | None = None):
        self.dimensions = dimensions
        self.constants = dict(constants or {})
        self.fixed_choices: dict[Path, Any] = {}
        # Where a config's value is one setting, not more keys: a choice among dicts too.
        self.leaves = frozenset(d.path for d in dimensions) | frozenset(self.constants)
        offsets = np.cumsum([0] + [d.width for d in dimensions])
        self._slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
        self.dim = int(offsets[-1])

    @classmethod
    def from_tune(cls, param_space: Mapping[str, Any]) -> SearchSpace:
        """Build from a Tune ``param_space`` (nested dicts of domains and constants).

        Raises
        ------
        UnsupportedSearchSpaceError
            (a ValueError) for ``grid_search``, ``sample_from``, ``randn``, unbounded or empty
            domains, or domains inside lists; the message names the key.
        """
        if not isinstance(param_space, Mapping):
            raise UnsupportedSearchSpaceError(
                f"the search space must be a dict, got {type(param_space).__name__}"
            )
        _refuse_non_string_keys(param_space)
        dims, constants, fixed = [], {}, {}
        for path, value in flatten(param_space).items():
            if isinstance(value, Mapping) and "grid_search" in value:
                raise UnsupportedSearchSpaceError(
                    f"{path_name(path)}: tune.grid_search is not supported by RMBOSearcher; "
                    "use tune.choice over the same values"
                )
            if isinstance(value, Domain):
                d = _dimension(path, value)
                if d is None:  # a domain with a single valid value
                    fixed[path] = _single_value(value)
                else:
                    dims.append(d)
            elif isinstance(value, list | tuple) and any(isinstance(v, Domain) for v in value):
                raise UnsupportedSearchSpaceError(
                    f"{path_name(path)}: domains inside lists are not supported; use a dict"
                )
            else:
                constants[path] = value
        space = cls(dims, constants)
        space.fixed_choices = fixed
        space.leaves = space.leaves | frozenset(fixed)
        return space

    def flatten(self, config: Mapping[str, Any]) -> dict[Path, Any]:
        """A (nested) config -> ``{path: value}`` with this space's keys as paths: the value
        of a ``tune.choice`` among dicts stays one dict."""
        return flatten(config, leaves=self.leaves)

    @property
    def names(self) -> list[str]:
        """Parameter names (paths joined with '/') in column order."""
        return [d.name for d in self.dimensions]

    def encode(
        self,
        config: Mapping[str, Any],
        *,
        clip: bool = False,
        unrecorded: Collection[Path] = (),
    ) -> Array:
        """A (nested) config -> point of shape (dim,).

        Extra keys are ignored. Raises :class:`OutOfSpaceError` (a ValueError whose
        ``reason`` is "missing_key", "out_of_bounds", "unknown_category" or "wrong_type")
        naming the key; ``clip=True`` clips numbers that are out of bounds instead. The
        columns of a key in ``unrecorded`` (paths, as :attr:`Dimension.path`) that the
        config lacks are NaN: a meta-task's experiment that did not search that key.
        """
        flat = self.flatten(config) if not _is_flat(config) else dict(config)
        x = np.empty(self.dim)
        for d, sl in zip(self.dimensions, self._slices, strict=True):
            if d.path not in flat and d.path in unrecorded:
                x[sl] = np.nan
                continue
            if d.path not in flat:
                raise OutOfSpaceError(f"{d.name} is missing from the config", reason="missing_key")
            x[sl] = d.columns(flat[d.path], clip=clip)
        return x

    def encode_partial(self, config: Mapping[str, Any]) -> Array:
        """A config that may lack searched keys -> a valid point of shape (dim,).

        Missing keys take the value at the middle of their range (the centre of the cube);
        the point is projected (snapped to integers, quanta and one category). Raises
        :class:`OutOfSpaceError` as :meth:`encode` does for the keys given.
        """
        filled = self.flatten(self.decode(np.full(self.dim, 0.5)))
        filled.update(self.flatten(config))
        return self.project(self.encode(filled))[0]

    def decode(self, x: Iterable[float]) -> dict[str, Any]:
        """A point of the cube -> nested config with every searched key (and single-valued
        domains); constants are left to Tune, which merges them."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.shape != (self.dim,):
            raise ValueError(f"expected a point of shape ({self.dim},), got {x.shape}")
        flat = {
            d.path: d.value(x[sl]) for d, sl in zip(self.dimensions, self._slices, strict=True)
        }
        flat.update(self.fixed_choices)
        return unflatten(flat)

    def decode_as_given(self, x: Iterable[float], given: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`decode`, with the float values of ``given`` (a partial config that
        encodes to ``x``, as from :meth:`encode_partial`) where they are the value ``x``
        holds up to rounding: a ``points_to_evaluate`` entry runs as written (``1e-3``, not
        the log scale's round trip ``0.0010000000000000002``); a value that was snapped (to
        a quantum, or an integer) runs as snapped."""
        flat, user = self.flatten(self.decode(x)), self.flatten(given)
        for d in self.dimensions:
            value = user.get(d.path)
            if (
                d.kind == "float"
                and isinstance(value, float | np.floating)
                and math.isclose(float(value), flat[d.path], rel_tol=1e-9, abs_tol=0.0)
            ):
                flat[d.path] = float(value)
        return unflatten(flat)

    def project(self, X: Array) -> Array:
        """Map points (n, dim) to the nearest points that stand for valid configurations."""
        X = np.array(X, dtype=np.float64, copy=True).reshape(-1, self.dim)
        for d, sl in zip(self.dimensions, self._slices, strict=True):
            block = X[:, sl]
            if d.kind == "choice":
                onehot = np.zeros_like(block)
                onehot[np.arange(len(block)), np.argmax(block, axis=1)] = 1.0
                X[:, sl] = onehot
            elif d.q is not None:
                X[:, sl] = d._to_unit(d._from_unit(block))
        return X


def _refuse_non_string_keys(space: Mapping[Any, Any], prefix: Path = ()) -> None:
    """Raise for a key that is not a string on the way to a domain (or at the top): the
    searched parameters are matched by name, and Tune's own records write keys as strings,
    so ``1`` and ``"1"`` could not be told apart. A constant dict with such keys
    (``{"class_weight": {0: 1.0, 1: 5.0}}``) is one constant, passed on as it is."""
    for key, value in space.items():
        if not isinstance(key, str) and (not prefix or _holds_domain(space)):
            where = f"{path_name(prefix)}: " if prefix else ""
            raise UnsupportedSearchSpaceError(
                f"{where}the key {key!r} ({type(key).__name__}) is not a string; "
                f"name it {str(key)!r}"
            )
        if isinstance(value, Mapping) and isinstance(key, str):
            _refuse_non_string_keys(value, (*prefix, key))


def _holds_domain(value: Any) -> bool:
    """Whether a Tune domain lies anywhere in ``value`` (dicts and lists searched)."""
    if isinstance(value, Domain):
        return True
    if isinstance(value, Mapping):
        return any(_holds_domain(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_domain(v) for v in value)
    return False


def _is_flat(config: Mapping) -> bool:
    return bool(config) and all(isinstance(k, tuple) for k in config)


def _single_value(domain: Domain) -> Any:
    if isinstance(domain, Categorical):
        return domain.categories[0]
    sampler = domain.get_sampler()
    q = sampler.q if isinstance(sampler, Quantized) else 1
    if isinstance(domain, Integer):
        return int(domain.lower if q == 1 else math.ceil(domain.lower / q) * q)
    return float(math.ceil(domain.lower / q - 1e-9) * q)
