"""User-defined operation families: evaluation, shape rules, AD rules, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax
from tidu import ADRuleError


def _softplus_jvp(xs: Any, ys: Any, ts: Any) -> Any:
    (x,), (dx,) = xs, ts
    return [lax.div(dx, lax.add(lax.full_like(x, 1), lax.exp(lax.neg(x))))]


softplus = tf.extension.define(
    "test.softplus",
    infer=lambda x: x,
    impl=lambda x: np.logaddexp(0.0, x),
    jvp=_softplus_jvp,
)


def _sincos_jvp(xs: Any, ys: Any, ts: Any) -> Any:
    (dx,) = ts
    s, c = ys
    return [lax.mul(dx, c), lax.neg(lax.mul(dx, s))]


sincos = tf.extension.define(
    "test.sincos",
    infer=lambda x: [x, x],
    impl=lambda x: (np.sin(x), np.cos(x)),
    jvp=_sincos_jvp,
)


@tf.extension.register("test.scale")
class Scale(tf.extension.ExtensionOp):
    factor: float
    linear = True

    def infer(self) -> Any:
        return self.inputs

    def impl(self, x: Any) -> Any:
        return x * np.asarray(self.factor, dtype=x.dtype)

    def transpose(self, cts: Any, xs: Any, active: Any) -> Any:
        (ct,) = cts
        return [lax.mul(ct, lax.full_like(ct, np.conj(self.factor)))]


@tf.extension.register("test.rowsum")
class RowSum(tf.extension.ExtensionOp):
    """Sums the rows of a matrix; rejects other ranks in its shape rule."""

    def infer(self) -> Any:
        (x,) = self.inputs
        if x.ndim != 2:
            raise tf.ShapeError(self.name, f"expects a matrix, got shape {x.shape}")
        return [((x.shape[0],), x.dtype)]

    def impl(self, x: Any) -> Any:
        return x.sum(axis=1)

    def jvp(self, xs: Any, ys: Any, ts: Any) -> Any:
        return [lax.reduce_sum(ts[0], (1,))]


def test_functional_family_values_and_derivatives():
    x = np.array([-1.0, 0.0, 2.5])
    np.testing.assert_allclose(softplus(x), np.logaddexp(0, x))
    tf.testing.check_grads(lambda v: softplus(v), [x], order=2)
    tf.testing.check_grads(lambda v: softplus(v), [x.astype(np.float32)], order=1)


def test_multi_output_family():
    x = np.array([0.3, 1.1])
    s, c = sincos(x)
    np.testing.assert_allclose(s, np.sin(x))
    np.testing.assert_allclose(c, np.cos(x))
    tf.testing.check_grads(lambda v: sincos(v), [x], order=2)


def test_class_family_with_parameters():
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(Scale.apply(x, factor=3.0), 3 * x)
    tf.testing.check_grads(lambda v: Scale.apply(v, factor=3.0), [x], order=2)
    z = np.array([1.0 + 1.0j])
    tf.testing.check_grads(lambda v: Scale.apply(v, factor=2.0 - 1.0j), [z], order=2)
    op = Scale.make((tf.Meta((2,), np.dtype("float64")),), factor=3.0)
    assert str(op) == "test.scale[factor=3.0](float64[2])"
    assert op == Scale.make((tf.Meta((2,), np.dtype("float64")),), factor=3.0)
    assert op != Scale.make((tf.Meta((2,), np.dtype("float64")),), factor=4.0)


def test_families_work_on_every_tensor_kind_and_in_transforms():
    x = np.arange(6.0).reshape(2, 3)
    traced = RowSum.apply(tf.traced(x))
    assert isinstance(traced, tf.TracedTensor)
    np.testing.assert_allclose(traced.eval(), x.sum(axis=1))
    np.testing.assert_allclose(tf.jit(lambda v: RowSum.apply(v) * 2)(x), 2 * x.sum(axis=1))
    np.testing.assert_allclose(
        tf.grad(lambda v: tf.sum(RowSum.apply(v) ** 2))(x), [[6] * 3, [24] * 3]
    )
    assert "test.rowsum" in tf.format_graph(traced)


def test_registry():
    assert tf.extension.lookup("test.scale") is Scale
    assert "test.softplus" in tf.extension.families()
    with pytest.raises(tf.TenferroError, match="no family named"):
        tf.extension.lookup("test.missing")


def test_shape_rule_errors_are_raised_at_build_time():
    with pytest.raises(tf.ShapeError, match=r"test\.rowsum: expects a matrix"):
        RowSum.apply(tf.traced(np.ones(3)))


def test_impl_must_match_its_shape_rule():
    liar = tf.extension.define("test.liar", infer=lambda x: x, impl=lambda x: x[:1])
    with pytest.raises(tf.ExecutionError, match=r"test.liar: impl output 0 is float64\[1\]"):
        liar(np.ones(3))
    widening = tf.extension.define("test.widening", infer=lambda x: x, impl=lambda x: x * 1.0)
    with pytest.raises(tf.ExecutionError, match=r"float64\[3\], infer\(\) declared int64"):
        widening(np.arange(3))


def test_definition_errors():
    with pytest.raises(tf.TenferroError, match="define"):
        tf.extension.define("test.bad", infer=None, impl=np.sin)  # type: ignore[arg-type]
    with pytest.raises(tf.TenferroError, match="must define impl"):

        @tf.extension.register("test.no_impl")
        class NoImpl(tf.extension.ExtensionOp):
            def infer(self) -> Any:
                return self.inputs

    with pytest.raises(tf.TenferroError, match="hashable"):
        Scale.apply(np.ones(2), factor=np.ones(2))


def test_rules_added_later():
    late = tf.extension.define("test.late", infer=lambda x: x, impl=np.exp)
    with pytest.raises(ADRuleError):
        tf.grad(lambda v: tf.sum(late(v)))(np.ones(2))

    @late.defjvp
    def _(xs: Any, ys: Any, ts: Any) -> Any:
        return [lax.mul(ts[0], ys[0])]

    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(late(v)))(np.ones(2)), np.exp([1, 1]))
