"""Complex values are ordered as numpy orders them (real parts, then imaginary parts; NaN
propagating in ``max``/``min``, sorting last): ``max``, ``min``, ``argmax``, ``argmin``,
``sort`` and ``argsort`` on random complex inputs full of ties give numpy's answers on
every tensor kind, and the derivatives of ``max``/``min`` reach the selected entries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tenferro_support import plain

import tenferro as tf

PARTS = st.sampled_from([-1.0, 0.0, 0.5, 2.0])


@st.composite
def complex_arrays(draw: Any, nan: bool = False) -> np.ndarray[Any, Any]:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    real = draw(hnp.arrays(np.float64, shape, elements=PARTS))
    imag = draw(hnp.arrays(np.float64, shape, elements=PARTS))
    z = real + 1j * imag
    if nan and draw(st.booleans()):
        z.flat[draw(st.integers(0, z.size - 1))] = complex(np.nan, 0.0)
    return z.astype(draw(st.sampled_from([np.complex64, np.complex128])))


KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda z: tf.tensor(z, requires_grad=True),
    "TracedTensor": tf.traced,
}

FUNCTIONS = {
    "max": (np.max, tf.max),
    "min": (np.min, tf.min),
    "argmax": (np.argmax, tf.argmax),
    "argmin": (np.argmin, tf.argmin),
    "sort": (np.sort, tf.sort),
    "argsort": (lambda z, axis: np.argsort(z, axis=axis, kind="stable"), tf.argsort),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@fuzz_settings(40)
@given(z=complex_arrays(nan=True), data=st.data())
def test_complex_ordering_is_numpys(name: str, z: Any, data: Any) -> None:
    reference, function = FUNCTIONS[name]
    axis = data.draw(
        st.sampled_from([None, 0, -1])
        if name not in ("sort", "argsort")
        else st.sampled_from([0, -1])
    )
    if np.isnan(z).any() and name in ("sort", "argsort"):
        return  # numpy's complex NaN order depends on which part is NaN; not claimed
    expected = reference(z, axis=axis)
    for kind, make in KINDS.items():
        got = plain(function(make(z), axis=axis))
        assert got.dtype == expected.dtype, (kind, got.dtype)
        np.testing.assert_array_equal(got, expected, err_msg=kind)


@fuzz_settings(30)
@given(z=complex_arrays(), which=st.sampled_from(["max", "min"]))
def test_the_derivative_of_a_complex_extremum_reaches_the_selected_entries(
    z: Any, which: str
) -> None:
    """d max(z) = dz at the maximum (ties share it equally, as for real values)."""
    z = z.astype(np.complex128)
    function = getattr(tf, which)
    chosen = getattr(np, which)(z)
    hits = (z == chosen).astype(float)
    weight = 0.75 - 0.5j

    def loss(v: Any) -> Any:
        return tf.real(function(v) * weight)

    expected = np.conj(weight) * hits / hits.sum()
    np.testing.assert_allclose(tf.grad(loss)(z), expected, atol=1e-12)
    leaf = tf.tensor(z, requires_grad=True)
    loss(leaf).backward()
    np.testing.assert_allclose(leaf.grad, expected, atol=1e-12)
