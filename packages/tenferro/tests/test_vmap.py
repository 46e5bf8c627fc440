"""``tf.vmap``: semantics (in_axes/out_axes/axis_size, pytrees), errors, composition with
every transform and tensor kind, extension families' batching rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro import lax

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3))
XS = RNG.standard_normal((5, 3))


def f(v: Any) -> Any:
    return tf.sum(tf.tanh(W @ v))


def f_np(v: np.ndarray) -> float:
    return float(np.sum(np.tanh(W @ v)))


def grad_np(v: np.ndarray) -> np.ndarray:
    return W.T @ (1 - np.tanh(W @ v) ** 2)


def test_vmap_equals_the_loop_and_keeps_the_kind():
    out = tf.vmap(f)(XS)
    assert isinstance(out, tf.Tensor)
    np.testing.assert_allclose(out, [f_np(v) for v in XS], rtol=1e-12)


@fuzz_settings(25)
@given(
    in_axis=st.integers(-3, 2),
    out_axis=st.integers(-3, 2),
    unbatched_second=st.booleans(),
)
def test_axes_anywhere(in_axis, out_axis, unbatched_second):
    """Batch axis at any input and output position, negative ones included, with a
    second argument batched or not."""
    x = RNG.standard_normal((2, 3, 4))
    y = RNG.standard_normal((2, 3, 4))
    per_x = np.moveaxis(x, in_axis, 0)
    y_axis = None if unbatched_second else in_axis
    example_y = np.take(y, 0, axis=in_axis) if unbatched_second else None
    if unbatched_second:
        y = example_y
    got = tf.vmap(
        lambda a, b: tf.exp(a) * b + tf.sum(a), in_axes=(in_axis, y_axis), out_axes=out_axis
    )(x, y)
    per_y = [example_y] * per_x.shape[0] if unbatched_second else np.moveaxis(y, in_axis, 0)
    expected = np.stack(
        [np.exp(a) * b + np.sum(a) for a, b in zip(per_x, per_y, strict=True)], axis=out_axis
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_pytrees_in_and_out_with_prefix_axes():
    params = {"w": W, "b": RNG.standard_normal(4)}
    batch = (XS, RNG.standard_normal((3, 5)))

    def model(p: Any, data: Any) -> Any:
        x, z = data
        return {"y": tf.tanh(p["w"] @ x + p["b"]), "s": (tf.sum(z), z * 2)}

    out = tf.vmap(model, in_axes=(None, (0, 1)), out_axes={"y": 1, "s": 0})(params, batch)
    assert out["y"].shape == (4, 5)
    assert out["s"][0].shape == (5,)
    assert out["s"][1].shape == (5, 3)
    for k in range(5):
        np.testing.assert_allclose(out["y"][:, k], np.tanh(W @ XS[k] + params["b"]), rtol=1e-12)
        np.testing.assert_allclose(out["s"][1][k], batch[1][:, k] * 2)


def test_axis_size_and_unbatched_outputs_are_broadcast():
    out = tf.vmap(lambda: tf.ones(2), axis_size=3)()
    np.testing.assert_array_equal(out, np.ones((3, 2)))
    both = tf.vmap(lambda x, c: (x * 2, c), in_axes=(0, None))(XS, np.arange(2.0))
    np.testing.assert_array_equal(both[1], np.tile(np.arange(2.0), (5, 1)))
    kept = tf.vmap(lambda x, c: c + 1, in_axes=(0, None), out_axes=None)(XS, np.arange(2.0))
    np.testing.assert_array_equal(kept, np.arange(2.0) + 1)


def test_keyword_arguments_are_batched_along_axis_0():
    out = tf.vmap(lambda x, *, scale: x * scale, in_axes=1)(XS.T, scale=np.arange(5.0))
    np.testing.assert_allclose(out, XS * np.arange(5.0)[:, None])


def test_bad_in_axes_raise_naming_vmap_and_the_values():
    with pytest.raises(tf.AxisError, match=r"vmap.*in_axes 2 is out of range.*\(5, 3\)"):
        tf.vmap(f, in_axes=2)(XS)
    with pytest.raises(tf.ShapeError, match=r"vmap: inconsistent batch sizes.*5.*4"):
        tf.vmap(lambda a, b: a + b)(XS, RNG.standard_normal((4, 3)))
    with pytest.raises(tf.ParameterError, match=r"vmap.*2 entries for 1 positional"):
        tf.vmap(f, in_axes=(0, 0))(XS)
    with pytest.raises(tf.ParameterError, match=r"vmap.*does not match the structure"):
        tf.vmap(lambda t: t[0], in_axes=((0, 0, 0),))((XS, XS))
    with pytest.raises(tf.ParameterError, match=r"vmap.*give axis_size"):
        tf.vmap(f, in_axes=None)(XS[0])
    with pytest.raises(tf.ShapeError, match=r"vmap.*axis_size=4.*5 examples"):
        tf.vmap(f, axis_size=4)(XS)
    with pytest.raises(tf.ArgumentTypeError, match=r"vmap.*ints or None.*'a'"):
        tf.vmap(f, in_axes="a")
    with pytest.raises(tf.ShapeError, match=r"vmap: out_axes is None for output 0"):
        tf.vmap(f, out_axes=None)(XS)


# ---------------------------------------------------------------------- composition


def test_vmap_of_grad_and_grad_of_vmap():
    np.testing.assert_allclose(tf.vmap(tf.grad(f))(XS), [grad_np(v) for v in XS], rtol=1e-12)
    total = tf.grad(lambda xs: tf.sum(tf.vmap(f)(xs)))(XS)
    np.testing.assert_allclose(total, [grad_np(v) for v in XS], rtol=1e-12)


def test_jit_of_vmap_and_vmap_of_vmap():
    np.testing.assert_allclose(tf.jit(tf.vmap(f))(XS), [f_np(v) for v in XS], rtol=1e-12)
    outer = tf.vmap(tf.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(XS, XS)
    np.testing.assert_allclose(outer, XS[None, :, :] * XS[:, None, :])


def test_vmap_over_jvp_vjp_and_hvp():
    tangents = RNG.standard_normal((5, 3))
    x0 = XS[0]
    jv = tf.vmap(lambda t: tf.jvp(f, (x0,), (t,))[1])(tangents)
    np.testing.assert_allclose(jv, tangents @ grad_np(x0), rtol=1e-12)
    _, pullback = tf.vjp(lambda v: tf.tanh(W @ v), x0)
    cts = RNG.standard_normal((5, 4))
    rows = tf.vmap(lambda c: pullback(c)[0])(cts)
    np.testing.assert_allclose(rows, cts @ ((1 - np.tanh(W @ x0) ** 2)[:, None] * W), rtol=1e-12)
    hv = tf.vmap(lambda t: tf.hvp(f, (x0,), (t,)))(tangents)
    hessian = np.asarray(tf.hessian(f)(x0))
    np.testing.assert_allclose(hv, tangents @ hessian.T, rtol=1e-10)


def test_gradients_flow_through_a_vmapped_eager_computation():
    xs = tf.EagerTensor(XS, requires_grad=True)
    w = tf.EagerTensor(W, requires_grad=True)
    loss = tf.sum(tf.vmap(lambda v: tf.sum(tf.tanh(w @ v)))(xs))
    loss.backward()
    np.testing.assert_allclose(xs.grad, [grad_np(v) for v in XS], rtol=1e-12)
    expected_w = sum(np.outer(1 - np.tanh(W @ v) ** 2, v) for v in XS)
    np.testing.assert_allclose(w.grad, expected_w, rtol=1e-12)


def test_traced_arguments_give_traced_results():
    x = tf.traced(XS)
    y = tf.sum(tf.vmap(f)(x))
    assert isinstance(y, tf.TracedTensor)
    np.testing.assert_allclose(y.grad(x).eval(), [grad_np(v) for v in XS], rtol=1e-12)


def test_second_derivatives_through_vmap_match_finite_differences():
    tf.testing.check_grads(lambda xs: tf.vmap(f)(xs), [XS], order=2, modes=("fwd", "rev"))


def test_vmap_reads_captured_values_at_call_time():
    scale = [2.0]
    g = tf.vmap(lambda v: v * scale[0])
    np.testing.assert_allclose(g(XS), XS * 2)
    scale[0] = 3.0
    np.testing.assert_allclose(g(XS), XS * 3)


def test_linalg_batches_over_numpy_leading_axes():
    a = RNG.standard_normal((4, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((3, 4))  # batch axis last
    got = tf.vmap(tf.linalg.solve, in_axes=(0, 1))(a, b)
    np.testing.assert_allclose(got, [np.linalg.solve(a[k], b[:, k]) for k in range(4)], rtol=1e-10)
    dets = tf.vmap(tf.linalg.det)(a)
    np.testing.assert_allclose(dets, np.linalg.det(a), rtol=1e-10)


def test_einsum_under_vmap():
    a = RNG.standard_normal((5, 2, 3))
    b = RNG.standard_normal((3, 4))
    got = tf.vmap(lambda x: tf.einsum("ij,jk->ik", x, b))(a)
    np.testing.assert_allclose(got, np.einsum("bij,jk->bik", a, b), rtol=1e-12)


# ---------------------------------------------------------------------- extension families


def test_extension_family_loops_without_a_rule_and_uses_its_rule_when_given():
    calls: list[tuple[int, ...]] = []

    def impl(x: Any) -> Any:
        calls.append(np.shape(x))
        return np.cumsum(x, axis=-1)

    looped = tf.extension.define("test_vmap.cumsum_loop", infer=lambda m: m, impl=impl)
    out = tf.vmap(looped)(XS)
    np.testing.assert_allclose(out, np.cumsum(XS, axis=-1))
    assert calls == [(3,)] * 5  # one evaluation per example

    def batch(xs: Any, dims: Any) -> Any:  # cumsum over the last axis: any leading batch
        from tenferro.ops.batching import move_axis

        return [ruled(move_axis(xs[0], dims[0], 0))], [0]

    calls.clear()
    ruled = tf.extension.define("test_vmap.cumsum_rule", infer=lambda m: m, impl=impl, batch=batch)
    out = tf.vmap(ruled, in_axes=1)(XS.T)
    np.testing.assert_allclose(out, np.cumsum(XS, axis=-1))
    assert calls == [(5, 3)]  # one batched evaluation


def test_a_rule_giving_wrong_shapes_is_reported():
    def bad(xs: Any, dims: Any) -> Any:
        return [xs[0]], [None]

    fam = tf.extension.define("test_vmap.bad_rule", infer=lambda m: m, impl=lambda x: x, batch=bad)
    with pytest.raises(tf.ShapeError, match="batching rule gave output 0"):
        tf.vmap(fam)(XS)


def test_lax_functions_batch_too():
    got = tf.vmap(lambda x: lax.reduce_sum(lax.transpose(x, (1, 0)), (0,)), in_axes=2)(
        RNG.standard_normal((2, 3, 4))
    )
    assert got.shape == (4, 2)


def test_the_batched_program_cache_holds_structure_not_data():
    import gc
    import weakref

    tf.clear_caches()
    holder = [RNG.standard_normal((4, 3))]
    g = tf.vmap(lambda v: holder[0] @ v)
    first = np.asarray(g(XS))
    np.testing.assert_allclose(first, XS @ holder[0].T)
    old = weakref.ref(holder[0])
    holder[0] = RNG.standard_normal((4, 3))  # new data, same structure
    np.testing.assert_allclose(g(XS), XS @ holder[0].T)
    stats = tf.cache_stats()["vmap programs"]
    assert (stats.misses, stats.hits) == (1, 1)
    gc.collect()
    assert old() is None  # the replaced array is not kept alive by any cache
    tf.clear_caches()
    assert tf.cache_stats()["vmap programs"].size == 0


SURFACE = {
    "svd": lambda a: tf.linalg.svd(a),
    "eigh": lambda a: tf.linalg.eigh(a + a.T),
    "qr": lambda a: tf.linalg.qr(a),
    "solve_vector": lambda a: tf.linalg.solve(a + 4 * tf.eye(4), tf.ones(4)),
    "slogdet": lambda a: tf.linalg.slogdet(a),
    "cholesky": lambda a: tf.linalg.cholesky(a @ a.T + tf.eye(4)),
    "lu": lambda a: tf.linalg.lu(a)[1:],  # P has no derivative
    "pinv": lambda a: tf.linalg.pinv(a),
    "matrix_exp": lambda a: tf.linalg.matrix_exp(a * 0.1),
    "norms": lambda a: (tf.linalg.norm(a), tf.linalg.cond(a)),
    "reductions": lambda a: (tf.mean(a, axis=0), tf.max(a, axis=1), tf.prod(a, axis=1)),
    "where": lambda a: tf.where(a > 0, a, 0.0),
    "slicing": lambda a: a[1:3, ::2],
    "fancy_index": lambda a: a[tf.asarray([0, 2, 2])],
    "concatenate": lambda a: tf.concatenate([a, a * 2], axis=1),
    "einsum": lambda a: tf.einsum("ij,jk->ik", a, a),
    "trace": lambda a: tf.trace(a),
    "complex_abs": lambda a: tf.abs(a + 1j * a),
}


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_surface_functions_under_vmap_and_their_gradients(name):
    """Values equal the loop; the gradient of the batched sum equals the loop of gradients
    (traced and eager)."""
    from tenferro.core.pytree import flatten

    fn = SURFACE[name]
    batch = np.random.default_rng(3).standard_normal((3, 4, 4))
    got = flatten(tf.vmap(fn)(batch))[0]
    per_example = [flatten(fn(tf.asarray(x)))[0] for x in batch]
    for slot, value in enumerate(got):
        expected = np.stack([np.asarray(e[slot]) for e in per_example])
        np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)

    def loss(a: Any) -> Any:
        total = tf.zeros(())
        for out in flatten(fn(a))[0]:
            if out.dtype.kind in "fc":
                total = total + tf.sum(tf.real(out) if out.dtype.kind == "c" else out)
        return total

    expected_grad = np.stack([np.asarray(tf.grad(loss)(x)) for x in batch])
    traced = tf.grad(lambda a: tf.sum(tf.vmap(loss)(a)))(batch)
    np.testing.assert_allclose(traced, expected_grad, rtol=1e-8, atol=1e-10)
    eager = tf.EagerTensor(batch, requires_grad=True)
    tf.sum(tf.vmap(loss)(eager)).backward()
    np.testing.assert_allclose(eager.grad, expected_grad, rtol=1e-8, atol=1e-10)


def test_custom_rules_under_vmap_loop_per_example_and_keep_their_rules():
    batch = np.random.default_rng(5).standard_normal((4, 5))

    @tf.custom_jvp
    def twice_sin(x: Any) -> Any:
        return tf.sin(x) * 2

    @twice_sin.defjvp
    def _(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return twice_sin(x), 2 * tf.cos(x) * t

    @tf.custom_vjp
    def cube(x: Any) -> Any:
        return x**3

    cube.defvjp(lambda x: (cube(x), x), lambda x, ct: (3 * x**2 * ct,))

    np.testing.assert_allclose(tf.vmap(twice_sin)(batch), 2 * np.sin(batch), rtol=1e-12)
    per_example = tf.vmap(tf.grad(lambda x: tf.sum(twice_sin(x))))(batch)
    np.testing.assert_allclose(per_example, 2 * np.cos(batch), rtol=1e-12)
    through = tf.grad(lambda x: tf.sum(tf.vmap(cube)(x)))(batch)
    np.testing.assert_allclose(through, 3 * batch**2, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, np.int64(0), -2], ids=["int", "np", "neg"])
def test_in_and_out_axes_take_numpy_and_negative_integers(axis: Any) -> None:
    x = np.arange(6.0).reshape(2, 3)
    got = tf.vmap(lambda v, s: v * s, in_axes=(axis, None))(x, 2.0)
    np.testing.assert_array_equal(np.asarray(got), x * 2.0)
    got = tf.vmap(lambda v: v * 2.0, out_axes=axis)(x)
    np.testing.assert_array_equal(np.asarray(got), x * 2.0)


@pytest.mark.parametrize("size", [3, np.int64(3)], ids=["int", "np"])
def test_axis_size_takes_numpy_integers(size: Any) -> None:
    assert np.asarray(tf.vmap(lambda: tf.ones(2), in_axes=(), axis_size=size)()).shape == (3, 2)
