"""``tf.random``: seeded random tensors, Generator-style like ``numpy.random.default_rng``.

``rng = tf.random.default_rng(seed)`` gives a :class:`Generator` holding numpy's PCG64
bit generator; its methods (``random``, ``uniform``, ``normal``, ``standard_normal``,
``integers``, ``permutation``, ``choice``) take numpy's arguments plus a tenferro
``dtype`` and return concrete :class:`~tenferro.Tensor` values, or tracked
:class:`~tenferro.EagerTensor` leaves with ``requires_grad=True``. Concrete tensors
enter traced functions like any captured value.

Why Generator-style and not JAX's keys: random draws happen eagerly on the host with
numpy's bit generators (there is no random primitive inside traced graphs), so a
function of a key would not be what ``tf.jit`` compiles; a generator object says
honestly that state advances with each draw. The same seed gives the same values on
every run and platform, and float64 draws equal numpy's
(``default_rng(s).normal(size=n)`` is ``np.random.default_rng(s).normal(size=n)``).
Independent streams come from :meth:`Generator.spawn` (numpy's ``SeedSequence``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro.concrete import Tensor
from tenferro.core.params import as_int, as_ints, as_real, is_listed
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import float64, int64, is_complex, real_dtype
from tenferro.eager import EagerTensor
from tenferro.errors import ArgumentTypeError, DTypeError, ParameterError, ShapeError
from tenferro.surface.convert import as_shape, asarray
from tenferro.surface.indexing import take

__all__ = ["Generator", "default_rng"]

Size = int | Sequence[int] | None


def _shape(size: Size, op: str) -> tuple[int, ...]:
    return () if size is None else as_shape(size, op)


def _inexact(dtype: Any, op: str) -> np.dtype[Any]:
    dt = as_dtype(dtype, op)
    if dt.kind not in "fc":
        raise DTypeError(op, f"draws floating or complex values, not {dt}")
    return dt


def _wrap(values: Any, dt: np.dtype[Any], requires_grad: bool) -> Any:
    array = np.asarray(values, dtype=dt)
    if requires_grad:
        if dt.kind not in "fc":
            raise DTypeError(
                "random", f"only floating or complex tensors track gradients, not {dt}"
            )
        return EagerTensor(array, requires_grad=True)
    return Tensor(array)


class Generator:
    """A seeded stream of random tensors (see the module documentation)."""

    __slots__ = ("_rng",)

    def __init__(self, bit_generator: np.random.BitGenerator) -> None:
        self._rng = np.random.Generator(bit_generator)

    def __repr__(self) -> str:
        return f"tf.random.Generator({type(self._rng.bit_generator).__name__})"

    def spawn(self, count: int) -> list[Generator]:
        """``count`` new generators with statistically independent streams."""
        count = as_int("spawn", "count", count)
        if count < 0:
            raise ParameterError("spawn", f"count must be non-negative, got {count}")
        return [Generator(b) for b in self._rng.bit_generator.spawn(count)]

    # ------------------------------------------------------------------ floating draws

    def random(
        self, size: Size = None, dtype: Any = float64, *, requires_grad: bool = False
    ) -> Any:
        """Uniform values in ``[0, 1)``."""
        shape, dt = _shape(size, "random"), _inexact(dtype, "random")
        return self.uniform(0.0, 1.0, shape, dt, requires_grad=requires_grad)

    def uniform(
        self,
        low: float = 0.0,
        high: float = 1.0,
        size: Size = None,
        dtype: Any = float64,
        *,
        requires_grad: bool = False,
    ) -> Any:
        """Uniform values in ``[low, high)``; complex dtypes draw both parts so."""
        dt = _inexact(dtype, "uniform")
        shape = _shape(size, "uniform")
        real = real_dtype(dt)
        low, high = as_real("uniform", "low", low), as_real("uniform", "high", high)
        if not high >= low:
            raise ParameterError("uniform", f"needs low <= high, got low={low}, high={high}")

        def draw() -> Any:
            if real == float64:
                return self._rng.uniform(low, high, shape)
            unit = self._rng.random(shape, dtype=real)
            return (unit * real.type(high - low) + real.type(low)).astype(real)

        values = draw() + 1j * draw() if is_complex(dt) else draw()
        return _wrap(values, dt, requires_grad)

    def standard_normal(
        self, size: Size = None, dtype: Any = float64, *, requires_grad: bool = False
    ) -> Any:
        """Standard normal values; complex ones have independent parts of variance 1/2
        (so ``E|z|^2 = 1``, as torch.randn and jax.random.normal)."""
        shape, dt = _shape(size, "standard_normal"), _inexact(dtype, "standard_normal")
        return self.normal(0.0, 1.0, shape, dt, requires_grad=requires_grad)

    def normal(
        self,
        loc: Any = 0.0,
        scale: float = 1.0,
        size: Size = None,
        dtype: Any = float64,
        *,
        requires_grad: bool = False,
    ) -> Any:
        """Normal values of mean ``loc`` and standard deviation ``scale`` (real numbers;
        ``loc`` may be complex for a complex dtype: a circular normal, ``E|z - loc|^2 =
        scale^2``)."""
        dt = _inexact(dtype, "normal")
        shape = _shape(size, "normal")
        scale = as_real("normal", "scale", scale)
        loc = _location(loc, is_complex(dt))
        if not scale >= 0:
            raise ParameterError("normal", f"scale must be non-negative, got {scale}")
        real = real_dtype(dt)
        if is_complex(dt):
            parts = self._rng.standard_normal((*shape, 2), dtype=real)
            unit = (parts[..., 0] + 1j * parts[..., 1]) * math.sqrt(0.5)
            return _wrap(unit * scale + loc, dt, requires_grad)
        if real == float64:
            return _wrap(self._rng.normal(loc, scale, shape), dt, requires_grad)
        unit = self._rng.standard_normal(shape, dtype=real)
        return _wrap(unit * real.type(scale) + real.type(loc), dt, requires_grad)

    # ------------------------------------------------------------------ integer draws

    def integers(
        self,
        low: int,
        high: int | None = None,
        size: Size = None,
        dtype: Any = int64,
        *,
        endpoint: bool = False,
    ) -> Any:
        """Integers in ``[low, high)`` (``[0, low)`` when ``high`` is None; ``endpoint``
        includes ``high``), as numpy's ``Generator.integers``."""
        dt = as_dtype(dtype, "integers")
        if dt.kind != "i":
            raise DTypeError("integers", f"draws int32 or int64 values, not {dt}")
        shape = _shape(size, "integers")
        low = as_int("integers", "low", low)
        high = None if high is None else as_int("integers", "high", high)
        lower, upper = (0, low) if high is None else (low, high)
        if upper - lower + int(endpoint) <= 0:
            raise ParameterError("integers", f"empty range: low={lower}, high={upper}")
        try:
            drawn = self._rng.integers(lower, upper, shape, dtype=dt, endpoint=endpoint)
        except ValueError as error:  # a bound beyond the dtype: numpy's message names it
            raise ParameterError("integers", f"{error} (low={lower}, high={upper})") from None
        return _wrap(drawn, dt, False)

    def permutation(self, x: Any) -> Any:
        """A random permutation of ``range(x)`` (int64) for an integer ``x``; for a tensor,
        its rows in random order (a gather: differentiable, on the tensor's kind)."""
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            if x < 0:
                raise ParameterError("permutation", f"needs a non-negative length, got {x}")
            return _wrap(self._rng.permutation(int(x)), np.dtype(int64), False)
        a = asarray(x, op="permutation")
        if a.meta.ndim == 0:
            raise ShapeError("permutation", "a scalar has no rows to permute")
        order = self._rng.permutation(a.meta.shape[0])
        return take(a, _wrap(order, np.dtype(int64), False), axis=0)

    def choice(
        self,
        a: Any,
        size: Size = None,
        replace: bool = True,
        p: Any = None,
    ) -> Any:
        """Entries drawn from ``range(a)`` (an integer ``a``, 0-d integer arrays and
        tensors too, as numpy reads them; int64 result) or from the rows of a sequence
        or tensor ``a`` (a gather, differentiable), with or without replacement and with
        optional probabilities ``p``."""
        shape = _shape(size, "choice")
        probabilities = None if p is None else np.asarray(p, dtype=np.float64)
        if not is_listed(a):
            count = as_int("choice", "a", a)
            return _wrap(self._pick(count, shape, replace, probabilities), np.dtype(int64), False)
        values = asarray(a, op="choice")
        picks = self._pick(values.meta.shape[0], shape, replace, probabilities)
        return take(values, _wrap(picks, np.dtype(int64), False), axis=0)

    def _pick(self, n: int, shape: tuple[int, ...], replace: bool, p: Any) -> Any:
        try:
            return self._rng.choice(n, shape, replace=replace, p=p)
        except ValueError as error:  # numpy's message names the offending values
            raise ParameterError("choice", str(error)) from None


def _location(loc: Any, complex_ok: bool) -> int | float | complex:
    """``normal``'s ``loc``: a real number, or a complex one for a complex dtype."""
    if complex_ok and isinstance(loc, (complex, np.complexfloating)):
        return complex(loc)
    return as_real("normal", "loc", loc)


def default_rng(seed: int | Sequence[int] | None = None) -> Generator:
    """A :class:`Generator` on numpy's PCG64 seeded with ``seed`` (fresh OS entropy when
    None: then the values are not reproducible)."""
    if is_listed(seed):
        seed = as_ints("default_rng", "seed", seed, error=ArgumentTypeError)
    elif seed is not None and not isinstance(seed, np.random.SeedSequence):
        seed = as_int("default_rng", "seed", seed, ArgumentTypeError)
    try:
        return Generator(np.random.PCG64(seed))
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(
            "default_rng",
            f"seed must be None, a non-negative int or a sequence of them, got {seed!r}",
        ) from error
