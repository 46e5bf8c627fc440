"""What users' custom rules may do, and the errors when they break the contract.

A rule may make constants of one repeated value (``tf.ones``, ``tf.zeros``, ``tf.full``)
in every role (``custom_jvp``'s rule, ``custom_vjp``'s ``fwd`` residuals and ``bwd``);
an array captured from outside, or built from data, is refused (it would be frozen in the
traced rule). Derivatives of a rule must have their value's shape and a compatible dtype:
a complex derivative of a real value raises (nothing is dropped silently). A rule that
cannot take the arguments it is called with names the function, the rule and the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.errors import ArgumentTypeError, DTypeError, ShapeError, TenferroError

X = np.array([0.5, -1.5])

MAKERS: dict[str, Callable[[], Any]] = {
    "ones": lambda: tf.ones(2),
    "zeros+1": lambda: tf.zeros(2) + 1.0,
    "full": lambda: tf.full((2,), 1.0),
    "ones_like": lambda: tf.ones_like(tf.zeros(2)),
    "asarray of a repeated list": lambda: tf.asarray([1.0, 1.0]),
}
"""Constants of one value made inside a rule (each equal to ones(2))."""


def _jvp_function(make: Callable[[], Any]) -> Any:
    @tf.custom_jvp
    def f(v: Any) -> Any:
        return tf.sin(v)

    f.defjvp(lambda p, t: (f(p[0]), tf.cos(p[0]) * t[0] * make()))
    return f


def _vjp_function(make: Callable[[], Any], where: str) -> Any:
    @tf.custom_vjp
    def f(v: Any) -> Any:
        return tf.sin(v)

    if where == "bwd":
        f.defvjp(lambda v: (tf.sin(v), tf.cos(v)), lambda c, g: (c * g * make(),))
    else:  # a residual made from a constant
        f.defvjp(lambda v: (tf.sin(v), tf.cos(v) * make()), lambda c, g: (c * g,))
    return f


ROLES: dict[str, Callable[[Callable[[], Any]], Any]] = {
    "custom_jvp rule": _jvp_function,
    "custom_vjp bwd": lambda make: _vjp_function(make, "bwd"),
    "custom_vjp fwd": lambda make: _vjp_function(make, "fwd"),
}


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_a_rule_may_make_constants_of_one_value(role, maker):
    f = ROLES[role](MAKERS[maker])
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(f(v)))(X).numpy(), np.cos(X))
    leaf = tf.tensor(X, requires_grad=True)  # and on the tape, twice (cached rule)
    for _ in range(2):
        tf.sum(f(leaf)).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2 * np.cos(X))


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_rule_reading_an_array_of_several_values_is_refused(role):
    f = ROLES[role](lambda: tf.asarray([1.0, 2.0]))
    with pytest.raises(TenferroError, match=r"not one repeated value.*Pass it as an argument"):
        tf.grad(lambda v: tf.sum(f(v)))(X)


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("kind", ["numpy", "tensor", "in a list", "attribute"])
def test_a_rule_reading_a_captured_array_is_refused_even_of_one_value(role, kind):
    captured = np.ones(2)
    holder = type("Holder", (), {})()
    holder.w = captured
    read = {
        "numpy": lambda: captured,
        "tensor": lambda: tf.asarray(captured),
        "in a list": lambda: [captured][0],
        "attribute": lambda: holder.w,
    }[kind]
    f = ROLES[role](read)
    with pytest.raises(TenferroError, match="captured from outside"):
        tf.grad(lambda v: tf.sum(f(v)))(X)


def test_a_wrong_shape_from_a_constant_is_reported_as_a_shape_error():
    @tf.custom_vjp
    def f(v: Any) -> Any:
        return v * 2

    f.defvjp(lambda v: (v * 2, None), lambda r, g: (tf.ones(3) * tf.sum(g),))
    with pytest.raises(ShapeError, match=r"custom_vjp\(.*f\): bwd's cotangent leaf 0 has shape"):
        tf.grad(lambda v: tf.sum(f(v)))(X)

    @tf.custom_jvp
    def h(v: Any) -> Any:
        return v * 2

    h.defjvp(lambda p, t: (h(p[0]), tf.ones(3) * tf.sum(t[0])))
    with pytest.raises(ShapeError, match=r"custom_jvp\(.*h\): the tangent of output 0"):
        tf.jvp(h, (X,), (np.ones(2),))


WRONG_COTANGENTS: dict[str, tuple[Callable[[Any, Any], Any], type[Exception], str]] = {
    # bwd(residual, g) -> the cotangent of X (float64[2]): the error and its message
    "constant of another shape": (lambda r, g: tf.ones(3), ShapeError, r"has shape \(3,\)"),
    "residual of another shape": (
        lambda r, g: tf.concatenate([r, r]),
        ShapeError,
        r"has shape \(4,\)",
    ),
    "complex constant": (lambda r, g: tf.ones(2) * 1j, DTypeError, r"is complex128\[2\].*tf.real"),
    "complex of the residual": (lambda r, g: r * 1j, DTypeError, r"is complex128\[2\].*tf.real"),
    "nonzero constant": (
        lambda r, g: tf.ones(2) * 3.0,
        TenferroError,
        r"does not depend on .*g.*a nonzero constant",
    ),
    "the residual alone": (
        lambda r, g: r * 2.0,
        TenferroError,
        r"does not depend on .*g.*the residuals alone",
    ),
    "g of another shape": (lambda r, g: tf.concatenate([g, g]), ShapeError, r"has shape \(4,\)"),
}
"""Cotangents a bwd may not return; those that do not depend on ``g`` included (a
derivative program drops them, so they are checked before): a VJP is linear in ``g``,
so one that does not read it must be zero."""

GRADIENT_MODES: dict[str, Callable[[Any], Any]] = {
    "grad": lambda f: tf.grad(lambda v: tf.sum(f(v)))(X),
    "vjp": lambda f: tf.vjp(f, X)[1](np.ones(2)),
    "jit(grad)": lambda f: tf.jit(tf.grad(lambda v: tf.sum(f(v))))(X),
    "tape": lambda f: tf.sum(f(tf.tensor(X, requires_grad=True))).backward(),
}


@pytest.mark.parametrize("mode", sorted(GRADIENT_MODES))
@pytest.mark.parametrize("mistake", sorted(WRONG_COTANGENTS))
def test_every_wrong_bwd_cotangent_raises_in_every_mode(mistake: str, mode: str) -> None:
    bwd, error, message = WRONG_COTANGENTS[mistake]

    @tf.custom_vjp
    def f(v: Any) -> Any:
        return v * 2

    f.defvjp(lambda v: (v * 2, v), lambda r, g: (bwd(r, g),))
    with pytest.raises(error, match=rf"custom_vjp\(.*f\): bwd's cotangent leaf 0 {message}"):
        GRADIENT_MODES[mode](f)


ZERO_COTANGENTS: dict[str, Callable[[Any, Any], Any]] = {
    "None": lambda r, g: None,
    "zeros_like of the residual": lambda r, g: tf.zeros_like(r),
    "zeros": lambda r, g: tf.zeros(2),
    "g times zero": lambda r, g: g * 0.0,
}


@pytest.mark.parametrize("mode", sorted(GRADIENT_MODES))
@pytest.mark.parametrize("zero", sorted(ZERO_COTANGENTS))
def test_a_zero_cotangent_may_be_written_without_g(zero: str, mode: str) -> None:
    bwd = ZERO_COTANGENTS[zero]

    @tf.custom_vjp
    def f(v: Any, w: Any) -> Any:
        return v * 2 + w

    f.defvjp(lambda v, w: (v * 2 + w, v), lambda r, g: (bwd(r, g), g))
    got = GRADIENT_MODES[mode](lambda v: f(v, v))
    if got is not None:  # the tape's backward returns nothing
        leaves = got if isinstance(got, tuple) else (got,)
        np.testing.assert_array_equal(leaves[0].numpy(), np.ones(2))


@pytest.mark.parametrize("role", ["bwd", "jvp"])
def test_a_complex_derivative_of_a_real_value_raises_in_both_kinds_of_rule(role):
    if role == "bwd":

        @tf.custom_vjp
        def f(v: Any) -> Any:
            return v * 2

        f.defvjp(lambda v: (v * 2, None), lambda r, g: (g * (1 + 1j),))
        run = lambda: tf.grad(lambda v: tf.sum(f(v)))(X)  # noqa: E731
    else:

        @tf.custom_jvp
        def f(v: Any) -> Any:
            return v * 2

        f.defjvp(lambda p, t: (f(p[0]), t[0] * (1 + 1j)))
        run = lambda: tf.jvp(f, (X,), (np.ones(2),))  # noqa: E731
    with pytest.raises(DTypeError, match=r"complex128\[2\], expected float64\[2\].*tf.real"):
        run()


def test_a_lower_precision_or_real_derivative_is_converted_as_pytorch_does():
    @tf.custom_vjp
    def f(v: Any) -> Any:
        return v * 2

    f.defvjp(lambda v: (v * 2, None), lambda r, g: (tf.astype(g, tf.float32) * 2,))
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(f(v)))(X).numpy(), [2.0, 2.0])
    z = X + 1j
    f.defvjp(lambda v: (v * 2, None), lambda r, g: (tf.real(g) * 2,))
    np.testing.assert_allclose(
        tf.grad(lambda v: tf.sum(tf.real(f(v))))(z).numpy(), [2.0 + 0j, 2.0 + 0j]
    )


def _arity_cases() -> dict[str, Callable[[], Any]]:
    def vjp_case(fwd: Any, bwd: Any) -> Callable[[], Any]:
        @tf.custom_vjp
        def f(v: Any) -> Any:
            return v * 2

        f.defvjp(fwd, bwd)
        return lambda: tf.grad(lambda v: tf.sum(f(v)))(X)

    def jvp_case(rule: Any) -> Callable[[], Any]:
        @tf.custom_jvp
        def f(v: Any) -> Any:
            return v * 2

        f.defjvp(rule)
        return lambda: tf.jvp(f, (X,), (np.ones(2),))

    def function_case() -> Callable[[], Any]:
        @tf.custom_jvp
        def f(v: Any, w: Any) -> Any:
            return v * w

        f.defjvp(lambda p, t: (f(*p), t[0]))
        return lambda: tf.grad(lambda v: tf.sum(f(v)))(X)

    return {
        "bwd": vjp_case(lambda v: (v * 2, None), lambda r: (r,)),
        "fwd": vjp_case(lambda v, w: (v * 2, None), lambda r, g: (g,)),
        "the JVP rule": jvp_case(lambda p: (p, p)),
        "the function": function_case(),
    }


@pytest.mark.parametrize("role", ["bwd", "fwd", "the JVP rule"])
def test_a_rule_of_the_wrong_arity_names_the_function_the_rule_and_the_call(role):
    with pytest.raises(
        ArgumentTypeError, match=rf"custom_\w+\(.*f\): {role} \S*<lambda>\(.*called"
    ):
        _arity_cases()[role]()


def test_a_function_called_with_too_few_arguments_is_pythons_error_naming_it():
    with pytest.raises(TypeError, match="missing"):
        _arity_cases()["the function"]()


# ---------------------------------------------------------------------- transform arguments


@pytest.mark.parametrize("names", [5, 2.0, None, object(), b"mode"])
def test_jit_static_argnames_of_another_type_is_an_argument_error(names):
    with pytest.raises(ArgumentTypeError, match="static_argnames must be"):
        tf.jit(lambda a, mode="x": a, static_argnames=names)
