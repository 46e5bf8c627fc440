"""Every tangent and cotangent handed to tenferro is checked: shape, dtype and structure.

One rule (:mod:`tenferro.core.tangents`) for every transform and every tape entry: a
(co)tangent has the shape and the dtype of the value it stands for (a complex one for a
real value would lose its imaginary part, a float32 one would round, an integer one is
no derivative), and a Python number adapts to the value's dtype as in arithmetic. The
table below lists every entry point that takes one; a test checks that no public
transform or tape method taking tangents is missing from it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import transforms
from tenferro.eager.tape import Tape
from tenferro.errors import DTypeError, ShapeError, TenferroError


def _square(v: Any) -> Any:
    return v * v


def _loss(v: Any) -> Any:
    return tf.sum(tf.real(v * tf.conj(v)))


def _vjp_concrete(x: Any, ct: Any) -> Any:
    return tf.vjp(_square, x)[1](ct)


def _vjp_symbolic(x: Any, ct: Any) -> Any:
    # inside another transform, the pullback is traced (its own code path)
    return tf.jit(lambda v: tf.vjp(_square, v)[1](ct)[0])(x)


def _jvp(x: Any, t: Any) -> Any:
    return tf.jvp(_square, (x,), (t,))


def _jvp_symbolic(x: Any, t: Any) -> Any:
    return tf.jit(lambda v: tf.jvp(_square, (v,), (t,))[1])(x)


def _linearize(x: Any, t: Any) -> Any:
    return tf.linearize(_square, x)[1](t)


def _hvp(x: Any, t: Any) -> Any:
    return tf.hvp(_loss, (x,), (t,))


def _tracked(x: Any) -> Any:
    return tf.tensor(x, requires_grad=True)


def _backward(x: Any, seed: Any) -> Any:
    return _square(_tracked(x)).backward(seed)


def _tape_backward(x: Any, seed: Any) -> Any:
    leaf = _tracked(x)
    return leaf.tape.backward(_square(leaf), seed)


def _tape_grad(x: Any, seed: Any) -> Any:
    leaf = _tracked(x)
    return leaf.tape.grad(_square(leaf), [leaf], seed)


def _tape_vjp(x: Any, seed: Any) -> Any:
    leaf = _tracked(x)
    return leaf.tape.vjp(_square(leaf), [leaf], seed)


def _tape_jvp(x: Any, t: Any) -> Any:
    return tf.default_tape().jvp(_square, [x], [t])


def _tape_push_forward(x: Any, t: Any) -> Any:
    leaf = _tracked(x)
    return leaf.tape.push_forward(_square(leaf), leaf, t)


def _tape_hvp(x: Any, t: Any) -> Any:
    return tf.default_tape().hvp(_loss, [x], [t])


ENTRIES: dict[str, Callable[[Any, Any], Any]] = {
    "vjp": _vjp_concrete,
    "vjp (traced)": _vjp_symbolic,
    "jvp": _jvp,
    "jvp (traced)": _jvp_symbolic,
    "linearize": _linearize,
    "hvp": _hvp,
    "EagerTensor.backward": _backward,
    "Tape.backward": _tape_backward,
    "Tape.grad": _tape_grad,
    "Tape.vjp": _tape_vjp,
    "Tape.jvp": _tape_jvp,
    "Tape.push_forward": _tape_push_forward,
    "Tape.hvp": _tape_hvp,
}
"""Each entry point taking a (co)tangent, called at ``x`` with the (co)tangent given."""

DTYPES = ["float64", "float32", "complex128"]
WRONG_DTYPES = ["float64", "float32", "complex128", "complex64", "int64", "bool"]


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_tangent_of_the_values_dtype_and_shape_is_taken(name, dtype):
    x = np.array([1.0, 2.0], dtype)
    ENTRIES[name](x, np.array([0.5, -1.0], dtype))


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize(
    ("dtype", "wrong"), [(d, w) for d in DTYPES for w in WRONG_DTYPES if w != d]
)
def test_a_tangent_of_another_dtype_raises(name, dtype, wrong):
    x = np.array([1.0, 2.0], dtype)
    with pytest.raises(DTypeError, match=rf"{wrong}.*{dtype}|has the dtype"):
        ENTRIES[name](x, np.ones(2, wrong))


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize("shape", [(), (3,), (2, 1), (1, 2)])
def test_a_tangent_of_another_shape_raises(name, shape):
    with pytest.raises(ShapeError, match="shape"):
        ENTRIES[name](np.array([1.0, 2.0]), np.ones(shape))


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize(
    ("dtype", "number"), [("float32", 1.0), ("float64", 1), ("complex128", 1.5)]
)
def test_a_python_number_adapts_to_the_values_dtype(name, dtype, number):
    ENTRIES[name](np.array(2.0, dtype), number)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_a_python_complex_is_no_tangent_of_a_real_value(name):
    with pytest.raises(DTypeError):
        ENTRIES[name](np.array(2.0), 1j)


def test_the_table_holds_every_entry_taking_a_tangent():
    """Every public transform and tape method with a tangent, cotangent or seed parameter
    (or returning a function that takes one: vjp, linearize) is in ``ENTRIES``."""
    takes = {"tangents", "tangent", "cotangent", "cotangents", "seed"}
    found = {
        name
        for name in transforms.__all__
        if takes & set(inspect.signature(getattr(transforms, name)).parameters)
    } | {"vjp", "linearize"}
    found |= {
        f"Tape.{name}"
        for name, member in vars(Tape).items()
        if not name.startswith("_")
        and callable(member)
        and takes & set(inspect.signature(member).parameters)
    }
    found.add("EagerTensor.backward")
    assert found <= {name.removesuffix(" (traced)") for name in ENTRIES}


# ---------------------------------------------------------------------- structure


@pytest.mark.parametrize(
    ("given", "match"),
    [
        (np.ones(2), "structure"),
        ([np.ones(2), np.ones(2)], "structure"),
        ((np.ones(2),), "structure"),
        ({"a": np.ones(2)}, "structure"),
    ],
)
def test_a_cotangent_of_another_tree_structure_raises(given, match):
    _, pullback = tf.vjp(lambda v: (v, v * 2), np.ones(2))
    with pytest.raises(ShapeError, match=match):
        pullback(given)


def test_tangents_of_another_tree_structure_raise():
    with pytest.raises(ShapeError, match="structure"):
        tf.jvp(lambda d: d["a"] * 2, ({"a": np.ones(2)},), ({"b": np.ones(2)},))
    with pytest.raises(ShapeError, match="tangent"):
        tf.jvp(_square, (np.ones(2),), (np.ones(2), np.ones(2)))


# ---------------------------------------------------------------------- outputs repeating inputs


def _structures(v: Any) -> list[Any]:
    return [[v, v], (v, v), {"a": v, "b": v}, [v, (v, {"c": v})], (v, v * 1.0)]


@pytest.mark.parametrize("index", range(5))
@pytest.mark.parametrize("x", [1.0, np.array([1.0, 2.0]), np.ones((2, 2), np.float32)])
def test_the_vjp_of_outputs_repeating_an_input_sums_their_cotangents(index, x):
    out, pullback = tf.vjp(lambda v: _structures(v)[index], x)
    leaves, treedef = tf.tree_util.tree_flatten(out)
    cts = [
        np.full(np.shape(leaf), k + 1.0, np.asarray(leaf).dtype) for k, leaf in enumerate(leaves)
    ]
    (got,) = pullback(tf.tree_util.tree_unflatten(treedef, cts))
    np.testing.assert_allclose(np.asarray(got), sum(cts))
    # traced (inside another transform) and second order agree
    inner = tf.grad(
        lambda v: tf.sum(
            tf.vjp(lambda w: _structures(w)[index], v)[1](
                tf.tree_util.tree_unflatten(treedef, cts)
            )[0]
            * v
        )
    )(x)
    np.testing.assert_allclose(np.asarray(inner), sum(cts))


def test_a_repeated_input_output_on_the_tape_and_in_jvp():
    x = np.array([1.0, 2.0])
    _, tangent = tf.jvp(lambda v: [v, v], (x,), (np.ones(2),))
    assert [np.asarray(t).tolist() for t in tangent] == [[1.0, 1.0], [1.0, 1.0]]
    jac = tf.jacrev(lambda v: (v, v))(x)
    for block in jac:
        np.testing.assert_allclose(np.asarray(block), np.eye(2))


# ---------------------------------------------------------------------- argument dtypes


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
@pytest.mark.parametrize("value", [np.array([1, 2]), np.array([True, False]), 3])
def test_differentiating_with_respect_to_integers_names_the_argument(transform, value):
    with pytest.raises(DTypeError, match=r"argument 0"):
        getattr(tf, transform)(lambda a: tf.sum(a * 2.0))(value)


def test_the_message_for_an_integer_argument_says_what_to_do():
    with pytest.raises(DTypeError, match=r"argument 1.*int64.*floats.*argnums"):
        tf.grad(lambda a, b: tf.sum(a * b), argnums=1)(np.ones(2), np.array([1, 2]))
    # an integer argument that is not differentiated is fine
    g = tf.grad(lambda a, b: tf.sum(a * b))(np.ones(2), np.array([1, 2]))
    np.testing.assert_allclose(np.asarray(g), [1.0, 2.0])


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("result", [None, (), [], {}])
def test_jacobians_of_functions_without_tensor_outputs_have_no_blocks(transform, result):
    assert getattr(tf, transform)(lambda a: result)(np.ones(2)) == result


def test_errors_are_tenferro_errors():
    for name in ENTRIES:
        with pytest.raises(TenferroError):
            ENTRIES[name](np.ones(2), np.ones(2, np.int64))
