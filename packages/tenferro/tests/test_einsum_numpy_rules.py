"""tf.einsum accepts exactly the subscripts numpy.einsum accepts, with numpy's values:
labels of extent 1 broadcast against other operands (never within one), and an explicit
output needs ``...`` whenever the inputs' ellipsis covers an axis, even of extent 1.
(tf.einsum's one extension, a label repeated in the output, is not drawn here.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf


@st.composite
def calls(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """1-4 operands over a few labels, repeated labels allowed, some axes of extent 1
    (broadcasting or not), optional ellipses and explicit outputs with or without
    ``...``."""
    pool = "abcd"
    sizes = {c: draw(st.integers(1, 3)) for c in pool}
    count = draw(st.integers(1, 4))
    terms, shapes = [], []
    ellipsis_shape = draw(st.lists(st.integers(1, 3), max_size=2))
    for _ in range(count):
        term = "".join(draw(st.lists(st.sampled_from(pool), max_size=3)))
        shape = []
        for c in term:
            # an extent of 1 where the label is larger elsewhere: numpy broadcasts it
            # between operands, and rejects it between two axes of one operand
            shape.append(1 if draw(st.integers(0, 4)) == 0 else sizes[c])
        if draw(st.booleans()):
            cut = draw(st.integers(0, len(term)))
            own = ellipsis_shape[len(ellipsis_shape) - draw(st.integers(0, len(ellipsis_shape))) :]
            own = [n if draw(st.booleans()) else 1 for n in own]
            term = term[:cut] + "..." + term[cut:]
            shape = shape[:cut] + own + shape[cut:]
        terms.append(term)
        shapes.append(tuple(shape))
    used = sorted(set("".join(terms).replace(".", "")))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
        if draw(st.booleans()):
            cut = draw(st.integers(0, len(output)))
            output = output[:cut] + "..." + output[cut:]
        subscripts += "->" + output
    return subscripts, shapes


@fuzz_settings(400)
@given(calls())
def test_accepts_what_numpy_accepts_with_numpys_values(call: Any) -> None:
    subscripts, shapes = call
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in shapes]
    try:
        expected = np.einsum(subscripts, *xs)
    except ValueError:
        with pytest.raises(tf.TenferroError, match="einsum"):
            tf.einsum(subscripts, *xs)
        return
    got = tf.einsum(subscripts, *xs)  # numpy accepts it: so must tf.einsum
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12)
    assert np.asarray(got).shape == expected.shape


def test_size_one_labels_broadcast_in_every_mode() -> None:
    """``'ijk,kl,jl,i->i'`` with ``j`` of extent 1 in one operand (numpy and opt_einsum
    accept it): values, gradients and the plan's report."""
    subscripts = "ijk,kl,jl,i->i"
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s) for s in [(2, 1, 4), (4, 5), (3, 5), (2,)]]
    expected = np.einsum(subscripts, *xs)
    np.testing.assert_allclose(np.asarray(tf.einsum(subscripts, *xs)), expected, rtol=1e-12)
    grads = tf.grad(lambda *a: tf.sum(tf.einsum(subscripts, *a)), argnums=(0, 1, 2, 3))(*xs)
    for k, grad in enumerate(grads):
        assert np.asarray(grad).shape == xs[k].shape
    step = 1e-6
    bumped = [x.copy() for x in xs]
    bumped[0][1, 0, 2] += step
    numeric = (np.einsum(subscripts, *bumped).sum() - expected.sum()) / step
    np.testing.assert_allclose(np.asarray(grads[0])[1, 0, 2], numeric, rtol=1e-5)
    _, info = tf.einsum_path(subscripts, *[x.shape for x in xs], shapes=True)
    assert info.size_dict["j"] == 3  # opt_einsum's size: the larger extent
