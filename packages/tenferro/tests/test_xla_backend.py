"""The XLA backend (``tf.jit(f, backend="xla")``): the lowering gate, integer and bool
programs, broadcasting, negative strides and empty arrays, composition with every
transform, where arrays live, caching, StableHLO export and the errors it raises.

The rule-case tables and random programs run through both backends in
``test_xla_rule_cases.py`` and ``test_xla_programs.py``; several devices in
``test_xla_devices.py``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from test_primitive_rules import _exported_primitives  # noqa: E402
from xla_support import assert_same, both  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.core.pytree import flatten  # noqa: E402
from tenferro.ops.lowering import has_lowering, lowering_gaps  # noqa: E402
from tenferro.transforms import xla  # noqa: E402
from tenferro.transforms.arguments import _arg_leaves  # noqa: E402

RNG = np.random.default_rng(26)

NO_LOWERING = {
    "dynamic_truncate",
    "solvers.linear_solve",
    "solvers.eigsh",
    "solvers.eigs",
    "solvers.fixed_point",
    "solvers.custom_root",
    "solvers.eigsh_boundary_check",
    "solvers.eigs_gap_check",
}
"""Primitives without a lowering, each with its stated reason (``no_lowering``): a
data-dependent extent, and the iterative solvers (their iteration runs on the host)."""


def _x64(values: Any) -> Any:
    with jax.enable_x64(True):
        return jnp.asarray(values)


# ---------------------------------------------------------------------- the gate


def test_every_exported_primitive_and_family_lowers_or_says_why():
    classes = _exported_primitives()
    gaps = lowering_gaps(list(classes.values()))
    assert set(gaps) == NO_LOWERING
    for name, reason in gaps.items():
        assert classes[name].no_lowering == reason, name
        assert len(reason) > 20, name
    lowered = [name for name, cls in classes.items() if has_lowering(cls)]
    assert len(lowered) == len(classes) - len(NO_LOWERING)


def test_a_family_without_a_lowering_is_named_before_anything_runs():
    calls = []

    def impl(x: Any) -> Any:
        calls.append(x)
        return x * 2

    double = tf.extension.define("tests.xla_unlowered_double", infer=lambda x: x, impl=impl)
    f = tf.jit(lambda x: tf.sin(double(tf.exp(x))), backend="xla")
    with pytest.raises(tf.LoweringError, match=r"tests\.xla_unlowered_double.*no lowering"):
        f(np.ones(3))
    assert calls == []  # nothing ran, not even the primitives before it
    assert_same(tf.jit(lambda x: double(x))(np.ones(3)), np.full(3, 2.0))


def test_extension_families_supply_their_lowering():
    scaled = tf.extension.define(
        "tests.xla_scaled",
        infer=lambda x, factor: x,
        impl=lambda x, factor: x * factor,
        lower=lambda lo, x, factor: lo.lax.mul(x, lo.full((), factor, x.dtype)),
        linear=True,
        transpose=lambda cts, xs, active, factor: [
            tf.lax.mul(cts[0], tf.lax.full_like(cts[0], factor))
        ],
    )

    @tf.extension.register("tests.xla_cube")
    class Cube(tf.extension.ExtensionOp):
        def infer(self) -> Any:
            return self.inputs

        def impl(self, x: Any) -> Any:
            return x**3

        def lower(self, lo: Any, x: Any) -> Any:
            return x * x * x

        def jvp(self, xs: Any, ys: Any, ts: Any) -> Any:
            square = tf.lax.mul(xs[0], xs[0])
            return [tf.lax.mul(ts[0], tf.lax.mul(tf.lax.full_like(xs[0], 3), square))]

    def f(x: Any) -> Any:
        return tf.sum(Cube.apply(scaled(x, factor=1.5)))

    x = RNG.standard_normal(4)
    both(lambda x: (f(x), tf.grad(f)(x)), x)


# ---------------------------------------------------------------------- every dtype


INTEGER_PROGRAMS = {
    "arithmetic": lambda a, b: (a + b, a - b, a * b, -a, tf.abs(a), tf.sign(a)),
    "division": lambda a, b: (tf.lax.div(a, b + 100), tf.lax.rem(a, b + 100)),
    "extrema": lambda a, b: (tf.maximum(a, b), tf.minimum(a, b), tf.clip(a, -3, 4)),
    "compare": lambda a, b: (a < b, a == b, a >= b, tf.where(a > b, a, b)),
    "power": lambda a, b: tf.lax.pow(a, tf.abs(b) % 4),
    "reductions": lambda a, b: (tf.sum(a, 0), tf.prod(a % 3 + 1, 1), tf.max(a), tf.min(b, 0)),
    "scans": lambda a, b: (tf.cumsum(a, 1), tf.lax.cumprod(a % 3, 0, reverse=True)),
    "ordering": lambda a, b: (tf.sort(a, 1), tf.argsort(a, 0), tf.argmax(a, 1), tf.argmin(b, 0)),
    "matmul": lambda a, b: a @ tf.transpose(b),
    "structural": lambda a, b: (a[::-1, 1:], tf.reshape(a, (-1,)), tf.tril(a), a.T[..., None]),
    "indexing": lambda a, b: (a[b[0] % 3], a[:, [2, 0, 0]], tf.concatenate([a, b], 0)),
    "conversions": lambda a, b: (tf.astype(a, np.float64), tf.astype(a, np.bool_), a / 2),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("name", sorted(INTEGER_PROGRAMS))
def test_integer_programs(name, dtype):
    a = RNG.integers(-5, 6, (3, 4)).astype(dtype)
    b = RNG.integers(-5, 6, (3, 4)).astype(dtype)
    both(INTEGER_PROGRAMS[name], a, b, what=name)


def test_bool_programs():
    p = RNG.random((3, 4)) < 0.5
    q = RNG.random((3, 4)) < 0.5

    def f(p: Any, q: Any) -> Any:
        return (
            p & q,
            p | q,
            ~p,
            p ^ q,
            tf.where(p, 1.0, -1.0),
            tf.sum(p, 1),
            tf.any(p, 0),
            tf.all(q),
            tf.sort(p, 1),
            p[::-1].T,
            tf.astype(p, np.int32) * 3,
        )

    both(f, p, q)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_broadcasting_negative_strides_and_empty_arrays(dtype):
    dt = np.dtype(dtype)

    def sample(*shape: int) -> Any:
        x = RNG.standard_normal(shape)
        if dt.kind == "c":
            x = x + 1j * RNG.standard_normal(shape)
        return x.astype(dt)

    strided = sample(4, 6)[::-1, ::-2]  # a negative-stride view passed as it is
    assert strided.strides[0] < 0

    def f(x: Any, row: Any, empty: Any, column: Any) -> Any:
        return (
            x * row + 2.5,  # (4, 3) with (3,) and a weak scalar
            tf.exp(x[::-1]) - column,  # (4, 3) with (4, 1)
            empty * 2,
            tf.sum(empty, 1),
            empty @ tf.ones((3, 2), dtype=dt),
            tf.concatenate([empty, x[:0]], 0),
            tf.sum(x, 0) / 3,
        )

    args = (strided, sample(3), sample(0, 3), sample(4, 1))
    both(f, *args)
    both(lambda *xs: tf.grad(lambda x: tf.sum(tf.abs(f(x, *xs[1:])[0]) ** 2))(xs[0]), *args)


# ---------------------------------------------------------------------- transforms inside


def _loss(x: Any, w: Any) -> Any:
    h = tf.tanh(x @ w)
    return tf.sum(h * h) + tf.real(tf.sum(tf.exp(1j * x)))


TRANSFORMS = {
    "grad": lambda x, w: tf.grad(_loss, argnums=(0, 1))(x, w),
    "value_and_grad": lambda x, w: tf.value_and_grad(_loss)(x, w),
    "vjp": lambda x, w: tf.vjp(lambda x: tf.sin(x @ w), x)[1](tf.ones((3, 2))),
    "jvp": lambda x, w: tf.jvp(lambda x: tf.sin(x @ w), (x,), (tf.ones_like(x),)),
    "linearize": lambda x, w: tf.linearize(lambda x: tf.exp(x) @ w, x)[1](x),
    "hvp": lambda x, w: tf.hvp(lambda x: _loss(x, w), (x,), (tf.ones_like(x),)),
    "vmap": lambda x, w: tf.vmap(lambda r: tf.grad(_loss)(r[None], w))(x),
    "jacrev": lambda x, w: tf.jacrev(lambda x: tf.sin(x @ w))(x),
    "jacfwd": lambda x, w: tf.jacfwd(lambda x: tf.sin(x @ w))(x),
    "hessian": lambda x, w: tf.hessian(lambda x: _loss(x, w))(x),
    "checkpoint": lambda x, w: tf.grad(lambda x: tf.sum(tf.checkpoint(lambda y: tf.sin(y @ w))(x)))(
        x
    ),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_inside_jit(name):
    x = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((4, 2))
    both(TRANSFORMS[name], x, w, what=name)


def test_custom_rules_inside_jit():
    @tf.custom_jvp
    def softplus(x: Any) -> Any:
        return tf.log1p(tf.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (dx,) = primals, tangents
        return softplus(x), dx * tf.sigmoid(x)

    @tf.custom_vjp
    def clipped(x: Any) -> Any:
        return x * x

    clipped.defvjp(lambda x: (x * x, x), lambda x, ct: (tf.clip(2 * x * ct, -1.0, 1.0),))

    def f(x: Any) -> Any:
        return tf.sum(softplus(x) * clipped(x))

    x = RNG.standard_normal(5)
    both(lambda x: (f(x), tf.grad(f)(x), tf.hvp(lambda y: tf.sum(softplus(y)), (x,), (x,))), x)


def test_static_arguments_and_keywords():
    def f(x: Any, power: int, *, scale: Any) -> Any:
        return tf.sum(x**power) * scale

    x = RNG.standard_normal(4)
    jitted = tf.jit(f, static_argnums=1, backend="xla")
    for power in (2, 3):
        assert_same(jitted(x, power, scale=2.0), tf.jit(f, static_argnums=1)(x, power, scale=2.0))


def test_default_backend_scope():
    x = _x64(RNG.standard_normal(3))
    f = tf.jit(lambda x: tf.sin(x) * 2)
    assert isinstance(f(x), tf.Tensor)  # numpy: the JAX array is read into a Tensor
    with tf.default_backend("xla"):
        inside = f(x)
        with tf.default_backend("numpy"):
            assert isinstance(f(x), tf.Tensor)
    assert isinstance(inside, jax.Array)
    np.testing.assert_allclose(np.asarray(inside), np.sin(np.asarray(x)) * 2, rtol=1e-15)
    assert isinstance(tf.jit(lambda x: x + 1, backend="numpy")(x), tf.Tensor)
    with pytest.raises(tf.ParameterError, match="backend"), tf.default_backend("tpu"):
        pass
    with pytest.raises(tf.ParameterError, match="backend"):
        tf.jit(lambda x: x, backend="cuda")


# ---------------------------------------------------------------------- the complex convention


def test_complex_gradients_are_torchs_and_the_conjugate_of_jaxs():
    torch = pytest.importorskip("torch")
    z = (RNG.standard_normal(4) + 1j * RNG.standard_normal(4)).astype(np.complex128)
    a = (RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))).astype(np.complex128)

    def f(z: Any) -> Any:
        return tf.real(tf.sum(tf.exp(z) * tf.conj(a @ z))) + tf.sum(tf.abs(z) ** 2)

    ours = np.asarray(tf.jit(tf.grad(f), backend="xla")(z))

    t = torch.tensor(z, requires_grad=True)
    ta = torch.tensor(a)
    value = torch.real(torch.sum(torch.exp(t) * torch.conj(ta @ t))) + torch.sum(torch.abs(t) ** 2)
    value.backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-12)

    def g(z: Any) -> Any:
        return jnp.real(jnp.sum(jnp.exp(z) * jnp.conj(a @ z))) + jnp.sum(jnp.abs(z) ** 2)

    with jax.enable_x64(True):
        theirs = np.asarray(jax.grad(g)(jnp.asarray(z)))
    np.testing.assert_allclose(ours, np.conj(theirs), rtol=1e-12)
    assert np.max(np.abs(np.imag(ours))) > 0.1  # a complex gradient: the conjugate matters


# ---------------------------------------------------------------------- where arrays live


def test_device_arrays_in_give_device_arrays_out():
    x = _x64(RNG.standard_normal((3, 3)))
    out = tf.jit(tf.grad(lambda x: tf.sum(tf.sin(x) @ x)), backend="xla")(x)
    assert isinstance(out, jax.Array)
    assert out.devices() == x.devices()
    assert out.dtype == jnp.float64
    assert out.sharding == x.sharding
    numpy_out = tf.jit(tf.grad(lambda x: tf.sum(tf.sin(x) @ x)), backend="xla")(np.asarray(x))
    assert isinstance(numpy_out, tf.Tensor)  # numpy in, Tensor out: as on the numpy backend
    np.testing.assert_allclose(np.asarray(out), np.asarray(numpy_out), rtol=1e-15)
    tensor_out = tf.jit(lambda x: x * 2, backend="xla")(tf.asarray(np.asarray(x)))
    assert isinstance(tensor_out, tf.Tensor)


def test_64_bit_types_leave_jax_configuration_alone():
    before = jax.config.jax_enable_x64
    x = np.arange(6.0).reshape(2, 3)
    out = tf.jit(lambda x: tf.sum(x * 0.1, 1), backend="xla")(x)
    assert out.dtype == np.float64
    assert jax.config.jax_enable_x64 == before
    y = jnp.asarray(np.arange(3), dtype=jnp.float32)  # a float32 device array stays float32
    assert tf.jit(lambda y: y * 2, backend="xla")(y).dtype == jnp.float32
    assert jax.config.jax_enable_x64 == before


def test_inside_a_jax_transformation_the_program_is_inlined():
    f = tf.jit(lambda x: tf.sin(x) * 3, backend="xla")
    with jax.enable_x64(True):
        x = jnp.asarray(RNG.standard_normal(4))
        out = jax.jit(lambda x: f(x) + 1)(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(x)) * 3 + 1, rtol=1e-15)


def test_the_steady_state_lane_serves_device_arrays_and_steps_aside_for_the_rest():
    """Repeated calls of JAX arrays take one lookup by their shapes and dtypes; numpy
    arrays, tensors, other shapes, dtypes and weak types, a JAX tracer of the same
    shape and a call inside a tenferro trace still get their own results."""
    calls = []

    def f(x: Any, y: Any) -> Any:
        calls.append(x.shape)
        return tf.sin(x) * y, tf.sum(x)

    g = tf.jit(f, backend="xla")
    with jax.enable_x64(True):
        x, y = jnp.asarray(RNG.standard_normal(3)), jnp.asarray(RNG.standard_normal(3))
        wide = jnp.asarray(RNG.standard_normal(5))
        single = jnp.asarray(RNG.standard_normal(3), dtype=jnp.float32)
    xn, yn = np.asarray(x), np.asarray(y)
    for _ in range(3):
        first, total = g(x, y)
        assert isinstance(first, jax.Array)
        assert isinstance(total, jax.Array)
        np.testing.assert_allclose(np.asarray(first), np.sin(xn) * yn, rtol=1e-15)
    assert len(calls) == 1  # traced once; later calls never reach the trace
    assert isinstance(g(xn, yn)[0], tf.Tensor)
    assert g(wide, wide)[0].shape == (5,)
    assert g(single, single)[0].dtype == jnp.float32
    with jax.enable_x64(True):
        inside = jax.jit(lambda a, b: g(a, b)[0] * 2)(x, y)
    np.testing.assert_allclose(np.asarray(inside), 2 * np.sin(xn) * yn, rtol=1e-15)
    grads = tf.grad(lambda a: tf.sum(g(a, yn)[0]))(xn)
    np.testing.assert_allclose(np.asarray(grads), np.cos(xn) * yn, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(g(x, y)[1]), np.sum(xn), rtol=1e-15)
    tf.clear_caches()
    g(x, y)
    assert calls.count((3,)) >= 2  # traced anew after the caches were emptied


def test_a_lane_of_one_signature_still_refuses_every_other_call():
    """While a function has been called with one signature, its lane hands calls to
    that executable without a lookup: JAX's own argument checks must send every other
    shape, dtype and arity to the full path, and a function whose program leaves an
    argument unread (its extent only shaped the trace) is looked up by every extent."""
    traces = []

    def f(x: Any, y: Any) -> Any:
        traces.append((x.shape, x.dtype, y.shape))
        return tf.sum(x * x) * y.shape[0], x * 1j

    g = tf.jit(f, backend="xla")
    with jax.enable_x64(True):
        x = jnp.asarray(RNG.standard_normal(3))
        wide = jnp.asarray(RNG.standard_normal(5))
        single = x.astype(jnp.float32)
        y2, y4 = jnp.ones(2), jnp.ones(4)
    xn = np.asarray(x)
    for _ in range(3):  # outside any 64-bit context: the lane's outputs stay 64-bit
        total, rotated = g(x, y2)
        assert total.dtype == jnp.float64
        assert rotated.dtype == jnp.complex128
        np.testing.assert_allclose(np.asarray(total), 2 * np.sum(xn * xn), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(rotated), xn * 1j, rtol=1e-15)
    assert len(traces) == 1
    np.testing.assert_allclose(np.asarray(g(x, y4)[0]), 4 * np.sum(xn * xn), rtol=1e-15)
    wn = np.asarray(wide)
    np.testing.assert_allclose(np.asarray(g(wide, y2)[0]), 2 * np.sum(wn * wn), rtol=1e-15)
    assert g(single, y2)[0].dtype == jnp.float32
    with pytest.raises(TypeError):
        g(x)
    with pytest.raises(TypeError):
        g(x, y2, y2)
    for _ in range(2):  # every signature again, now through the lookup
        np.testing.assert_allclose(np.asarray(g(x, y2)[0]), 2 * np.sum(xn * xn), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(g(x, y4)[0]), 4 * np.sum(xn * xn), rtol=1e-15)
    assert len(traces) == 4  # (3, 2), (3, 4), (5, 2), float32 (3, 2)

    def h(x: Any, y: Any) -> Any:  # reads both arguments: the lane of one signature
        return tf.sum(x * y)

    k = tf.jit(h, backend="xla")
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(k(x, x)), np.sum(xn * xn), rtol=1e-15)
    with pytest.raises(TypeError):
        k(x, x, x)
    np.testing.assert_allclose(np.asarray(k(wide, wide)), np.sum(wn * wn), rtol=1e-15)
    assert k(single, single).dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(k(x, x)), np.sum(xn * xn), rtol=1e-15)
    tf.clear_caches()  # empties the lane too: the next call compiles again
    before = tf.cache_stats()["xla executables"].size
    k(x, x)
    assert tf.cache_stats()["xla executables"].size == before + 1


# ---------------------------------------------------------------------- caching and export


def test_one_executable_per_structure_shapes_and_dtypes_cleared_by_clear_caches():
    traces = []

    def f(x: Any) -> Any:
        traces.append(x.shape)
        return tf.sum(tf.exp(x))

    jitted = tf.jit(f, backend="xla")
    tf.clear_caches()
    for _ in range(3):
        jitted(np.ones(3))
    jitted(np.ones(4))
    jitted(np.ones(3, np.float32))
    assert traces == [(3,), (4,), (3,)]
    assert tf.cache_stats()["xla executables"].size == 3
    jitted(_x64(np.ones(3)))  # a committed device array: its own executable
    assert tf.cache_stats()["xla executables"].size == 4
    tf.clear_caches()
    assert tf.cache_stats()["xla executables"].size == 0
    jitted(np.ones(3))
    assert traces[-1] == (3,)  # traced again after clear_caches


def test_small_captured_arrays_are_constants_and_large_ones_are_passed():
    small = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
    large = RNG.standard_normal(xla.EMBED_BYTES // 8 + 1)

    def f(x: Any) -> Any:
        return tf.real(tf.sum(tf.conj(small) @ x)) + tf.sum(large * tf.sum(x))

    tf.clear_caches()
    x = _x64(RNG.standard_normal((3, 2)))
    got = tf.jit(f, backend="xla")(x)
    xs = np.asarray(x)
    expected = np.real(np.sum(np.conj(small) @ xs)) + np.sum(large) * np.sum(xs)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-13)
    (executable,) = list(xla._EXECUTABLES._entries.values())
    assert [d.shape for d in executable.data] == [large.shape]  # the small one is embedded
    # the exported program embeds both
    text = tf.jit(f, backend="xla").lower(x).as_stablehlo()
    assert "tensor<3x3xcomplex<f64>>" in text


def test_stablehlo_text_and_export():
    captured = RNG.standard_normal(3)

    def f(x: Any) -> Any:
        return tf.grad(lambda x: tf.sum(tf.sin(x) * captured))(x)

    x = RNG.standard_normal(3)
    lowered = tf.jit(f, backend="xla").lower(x)
    text = lowered.as_stablehlo()
    assert "stablehlo" in text
    assert "@main" in text
    assert "tensor<3xf64>" in text
    exported = lowered.export()  # .serialize() ships it (JAX needs flatbuffers for that)
    assert "stablehlo" in exported.mlir_module()
    with jax.enable_x64(True):
        (value,) = exported.call(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(value), np.cos(x) * captured, rtol=1e-15)
    assert "cosine" in lowered.compile().as_text() or "cos" in lowered.compile().as_text()


# ---------------------------------------------------------------------- errors


def test_a_data_dependent_extent_is_refused_naming_the_operation():
    a = RNG.standard_normal((5, 4))
    f = tf.jit(lambda a: tf.linalg.truncated_svd(a, rtol=1e-3).S, backend="xla")
    with pytest.raises(tf.LoweringError, match=r"dynamic_truncate.*data"):
        f(a)
    # a rank fixed in the program (a slice of the thin SVD) lowers
    both(lambda a: tf.linalg.svd(a, full_matrices=False).S[:2], a)


def test_operations_a_platform_lacks_are_refused_naming_them():
    z = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex128)
    with pytest.raises(tf.LoweringError, match=r"erf.*complex"):
        tf.jit(tf.erf, backend="xla")(z)
    a = RNG.standard_normal((3, 3))
    with pytest.raises(TypeError, match="bfloat16"):
        tf.jit(lambda x: x + 1, backend="xla")(jnp.ones(3, jnp.bfloat16))
    # eig lowers on CPU only: lowering its program for a GPU target names it
    plan_function = tf.jit(tf.linalg.eigvals, backend="xla").lower(a)  # CPU: fine
    assert "geev" in plan_function.as_stablehlo()  # LAPACK's non-Hermitian eigensolver
    (traced,) = _arg_leaves([tf.Meta((3, 3), np.dtype(np.float64))])
    plan = xla.XlaPlan([tf.linalg.eigvals(traced)], flatten(0)[1])  # a plan's (internal) treedef
    with pytest.raises(tf.LoweringError, match=r"linalg\.eig.*CPU only, not on gpu"):
        jax.jit(plan.function("gpu", None)).lower(a)


def test_missing_jax_says_what_to_install():
    code = (
        "import sys; sys.modules['jax'] = None\n"
        "import numpy as np, tenferro as tf\n"
        "print(tf.jit(lambda x: x * 2)(np.ones(2)))\n"
        "try:\n"
        "    tf.jit(lambda x: x * 2, backend='xla')(np.ones(2))\n"
        "except tf.BackendUnavailableError as error:\n"
        "    print('ERROR', error)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "Tensor([2., 2.]" in out
    assert "ERROR" in out
    assert "pip install 'tenferro[xla]'" in out
    assert "JAX" in out


def test_degenerate_derivatives_warn_on_the_xla_backend_too():
    h = np.diag([1.0, 1.0, 2.0])  # a tied level, weighted unevenly by the loss
    f = tf.jit(tf.grad(lambda h: tf.linalg.eigvalsh(h)[0]), backend="xla")
    with pytest.warns(tf.DegenerateDerivativeWarning, match="tied"):
        f(h)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(np.diag([1.0, 1.5, 2.0]))  # no tie: no warning
