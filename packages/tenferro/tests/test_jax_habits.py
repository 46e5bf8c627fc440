"""JAX users' habits (issue 13): ``stop_gradient``, ``tf.tree_util`` and custom pytree
nodes in every transform, keyword arguments to transformed functions, non-tensor aux
values, ``jvp(..., has_aux=True)`` and ``jit`` with static arguments."""

from __future__ import annotations

import collections
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from tenferro_support import stable_id

import tenferro as tf
from tenferro.core.pytree import flatten, rebuilder, unflatten
from tenferro.errors import ArgumentTypeError, ShapeError, TenferroError

Pair = collections.namedtuple("Pair", "a b")
RNG = np.random.default_rng(0)


def vec(n: int = 3) -> np.ndarray:
    return RNG.standard_normal(n)


# ---------------------------------------------------------------------- stop_gradient


def test_stop_gradient_value_is_the_operand_for_every_dtype():
    for value in (np.array([1.5, -2.0]), np.array([1 + 2j]), np.array([3, 4]), np.array([True])):
        out = tf.stop_gradient(value)
        assert out.dtype == value.dtype
        np.testing.assert_array_equal(out.numpy(), value)


def product_through_stop(x: Any) -> Any:
    """``sum(x * sg(x))``: the true gradient is 2x, with stop_gradient it is sg(x) = x."""
    return tf.sum(x * tf.stop_gradient(x))


def test_stop_gradient_is_zero_in_reverse_forward_and_second_order():
    x = vec()
    np.testing.assert_allclose(tf.grad(product_through_stop)(x).numpy(), x)
    _, tangent = tf.jvp(lambda v: v * tf.stop_gradient(v), (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent.numpy(), x)
    # sum(x^2 sg(x)): d/dx = 2 x sg(x), the Hessian 2 diag(sg(x))
    cubic = lambda v: tf.sum(v**2 * tf.stop_gradient(v))  # noqa: E731
    np.testing.assert_allclose(tf.hvp(cubic, (x,), (np.ones(3),)).numpy(), 2 * x)
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(tf.grad(cubic)(v)))(x).numpy(), 2 * x)
    np.testing.assert_allclose(tf.jit(tf.grad(product_through_stop))(x).numpy(), x)
    for fully_stopped in (tf.grad(lambda v: tf.sum(tf.stop_gradient(v) ** 2))(x),):
        np.testing.assert_array_equal(fully_stopped.numpy(), np.zeros(3))


def test_stop_gradient_on_the_tape_and_traced_values():
    x = vec()
    tape = tf.Tape()
    v = tape.track(x)
    np.testing.assert_allclose(tape.grad(product_through_stop(v), v).numpy(), x)
    leaf = tf.traced(x)
    np.testing.assert_allclose(product_through_stop(leaf).grad(leaf).eval().numpy(), x)
    # detach keeps its PyTorch meaning beside stop_gradient
    w = tape.track(x)
    np.testing.assert_allclose(tape.grad(tf.sum(w * w.detach()), w).numpy(), x)


@fuzz_settings(15)
@given(
    st.sampled_from([-1.5, 0.5, 2.0]),
    st.sampled_from([-1.0, 0.25, 3.0]),
    st.integers(1, 4),
    st.sampled_from([np.float64, np.complex128]),
)
def test_stop_gradient_keeps_exactly_the_unstopped_part_of_the_derivative(a, b, n, dtype):
    # f(x) = sum(a x sg(x) + b x^2): the derivative sees sg(x) as a constant.
    x = RNG.standard_normal(n) + (1j * RNG.standard_normal(n) if dtype is np.complex128 else 0)
    x = x.astype(dtype)
    t = np.ones(n, dtype)

    def f(v: Any) -> Any:
        return a * v * tf.stop_gradient(v) + b * v * v

    jvp_expected = a * x * t + 2 * b * x * t
    np.testing.assert_allclose(tf.jvp(f, (x,), (t,))[1].numpy(), jvp_expected)
    (pulled,) = tf.vjp(f, x)[1](t)
    np.testing.assert_allclose(pulled.numpy(), np.conj(a * x + 2 * b * x) * t)
    tape = tf.Tape()
    _, tape_tangent = tape.jvp(f, (x,), (t,))
    np.testing.assert_allclose(tape_tangent.numpy(), jvp_expected)
    v = tape.track(x)
    np.testing.assert_allclose(tape.vjp(f(v), v, t).numpy(), np.conj(a * x + 2 * b * x) * t)
    # second order: only b's term has one
    second = tf.jvp(lambda u: tf.vjp(f, u)[1](t)[0], (x,), (t,))[1]
    np.testing.assert_allclose(second.numpy(), np.conj(2 * b * np.ones(n)) * t * t)


def test_stop_gradient_maps_over_pytrees():
    x = vec()
    out = tf.stop_gradient({"a": x, "b": (x, [x])})
    assert set(out) == {"a", "b"}
    assert isinstance(out["b"][1], list)
    gradient = tf.grad(lambda t: tf.sum(t["a"] * tf.stop_gradient(t)["b"][1][0]))(
        {"a": x, "b": (x, [x])}
    )
    np.testing.assert_allclose(gradient["a"].numpy(), x)
    np.testing.assert_array_equal(gradient["b"][1][0].numpy(), np.zeros(3))


# ---------------------------------------------------------------------- tree_util


@tf.tree_util.register_pytree_node_class
class Params:
    def __init__(self, w: Any, b: Any, name: str = "p") -> None:
        self.w, self.b, self.name = w, b, name

    def tree_flatten(self) -> tuple[tuple[Any, Any], str]:
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, name: Any, children: Any) -> Params:
        return cls(*children, name=name)


class Box:
    def __init__(self, items: list[Any]) -> None:
        self.items = items


tf.tree_util.register_pytree_node(Box, lambda b: (b.items, len(b.items)), lambda n, c: Box(c))

TREES = [
    1.0,
    None,
    (1, 2.0),
    [1, (2, None), {"b": 3, "a": [4]}],
    Pair(1, [2, 3]),
    OrderedDict([("z", 1), ("a", (2,))]),
    Params(1, (2, 3), name="q"),
    {"box": Box([1, Params(2, 3)])},
]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, Params):
        return isinstance(b, Params) and a.name == b.name and same(a.w, b.w) and same(a.b, b.b)
    if isinstance(a, Box):
        return isinstance(b, Box) and same(a.items, b.items)
    if isinstance(a, (tuple, list)):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        keys_match = list(a) == list(b) if type(a) is OrderedDict else set(a) == set(b)
        return type(a) is type(b) and keys_match and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.parametrize("tree", TREES, ids=stable_id)
def test_flatten_then_unflatten_is_the_identity(tree):
    leaves, treedef = tf.tree_util.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    assert same(tf.tree_util.tree_unflatten(treedef, leaves), tree)
    assert tf.tree_util.tree_leaves(tree) == leaves
    assert tf.tree_util.tree_structure(tree) == treedef
    assert hash(tf.tree_util.tree_structure(tree)) == hash(treedef)
    assert "PyTreeDef(" in repr(treedef)


leaf_values = st.integers(-5, 5)
trees = st.recursive(
    leaf_values | st.none(),
    lambda children: (
        st.lists(children, max_size=3)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
        | st.tuples(children, children).map(lambda p: Pair(*p))
        | st.tuples(children, children).map(lambda p: Params(*p))
    ),
    max_leaves=8,
)


@fuzz_settings(40)
@given(trees)
def test_a_prepared_rebuild_equals_unflatten(tree):
    """``rebuilder`` (the hot paths' prepared ``unflatten``) rebuilds every structure
    from a tuple or a list of leaves."""
    leaves, treedef = flatten(tree)
    rebuild = rebuilder(treedef)
    assert same(rebuild(tuple(leaves)), tree)
    assert same(rebuild(list(leaves)), unflatten(treedef, leaves))


@pytest.mark.parametrize("tree", TREES, ids=stable_id)
def test_a_prepared_rebuild_rebuilds_every_node_kind(tree):
    leaves, treedef = flatten(tree)
    assert same(rebuilder(treedef)(tuple(leaves)), tree)


@fuzz_settings(40)
@given(trees)
def test_tree_map_applies_to_every_leaf_and_keeps_the_structure(tree):
    doubled = tf.tree_util.tree_map(lambda v: 2 * v, tree)
    assert tf.tree_util.tree_structure(doubled) == tf.tree_util.tree_structure(tree)
    assert tf.tree_util.tree_leaves(doubled) == [2 * v for v in tf.tree_util.tree_leaves(tree)]
    summed = tf.tree_util.tree_map(lambda a, b, c: a + b + c, tree, doubled, tree)
    assert tf.tree_util.tree_leaves(summed) == [4 * v for v in tf.tree_util.tree_leaves(tree)]
    leaves, treedef = tf.tree_util.tree_flatten(tree)
    assert same(treedef.unflatten(leaves), tree)


def test_tree_map_is_leaf_and_structure_mismatches():
    tree = {"a": (1, 2), "b": [3]}
    counted = tf.tree_util.tree_map(len, tree, is_leaf=lambda n: isinstance(n, (tuple, list)))
    assert counted == {"a": 2, "b": 1}
    with pytest.raises(ShapeError, match=r"tree_map.*\{'a': \*, 'b': \[\*, \*\]\}.*\{'a': \*"):
        tf.tree_util.tree_map(lambda a, b: a, {"a": 1, "b": [2]}, {"a": 1, "b": [2, 3]})
    with pytest.raises(ShapeError, match="tree_unflatten: 1 leaves"):
        tf.tree_util.tree_unflatten(tf.tree_util.tree_structure((1, 2)), [1])
    with pytest.raises(ArgumentTypeError, match="tree_unflatten"):
        tf.tree_util.tree_unflatten(((1, 2),), [1, 2])  # type: ignore[arg-type]


def test_registration_errors_are_tenferro_errors():
    with pytest.raises(TenferroError, match="already a pytree node type"):
        tf.tree_util.register_pytree_node(tuple, lambda t: (t, None), lambda a, c: tuple(c))
    with pytest.raises(TenferroError, match="already a pytree node type"):
        tf.tree_util.register_pytree_node_class(Params)

    class Unhashable:
        pass

    tf.tree_util.register_pytree_node(Unhashable, lambda u: ((), [1]), lambda a, c: Unhashable())
    with pytest.raises(TenferroError, match="unhashable auxiliary data"):
        tf.tree_util.tree_flatten(Unhashable())


def test_registered_nodes_and_namedtuples_work_in_every_transform():
    w, b, x = vec(), vec(), vec()

    def loss(p: Params, data: Any) -> Any:
        return tf.sum(tf.tanh(p.w * data["x"] + p.b) ** 2)

    params, data = Params(w, b, name="layer"), {"x": x}
    g = tf.grad(loss)(params, data)
    assert isinstance(g, Params)
    assert g.name == "layer"
    flat = lambda w_, b_: loss(Params(w_, b_), data)  # noqa: E731
    expected_w, expected_b = tf.grad(flat, argnums=(0, 1))(w, b)
    np.testing.assert_allclose(g.w.numpy(), expected_w.numpy())
    np.testing.assert_allclose(g.b.numpy(), expected_b.numpy())
    jitted = tf.jit(lambda p: Params(p.w * 2, p.b, name=p.name))(params)
    assert isinstance(jitted, Params)
    assert jitted.name == "layer"
    out, vjp_fn = tf.vjp(lambda p: Pair(p.w * p.b, Box([p.w])), params)
    assert isinstance(out, Pair)
    assert isinstance(out.b, Box)
    (ct,) = vjp_fn(Pair(np.ones(3), Box([np.ones(3)])))
    np.testing.assert_allclose(ct.w.numpy(), b + 1)
    np.testing.assert_allclose(ct.b.numpy(), w)
    _, tangent = tf.jvp(lambda p: p.w * p.b, (params,), (Params(np.ones(3), np.zeros(3), "layer"),))
    np.testing.assert_allclose(tangent.numpy(), b)
    with pytest.raises(ShapeError, match=r"vjp: the cotangent has structure.*Pair"):
        vjp_fn(Pair(np.ones(3), [np.ones(3)]))
    with pytest.raises(ShapeError, match=r"tangents must have the structure.*Params\['other'\]"):
        tf.jvp(lambda p: p.w, (params,), (Params(w, b, name="other"),))


# ---------------------------------------------------------------------- keyword arguments


def weighted(x: Any, y: Any, *, scale: Any = 1.0, power: int = 2) -> Any:
    return tf.sum(scale * x**power * y)


def test_keyword_arguments_pass_through_grad_and_are_not_differentiated():
    x, y, s = vec(), vec(), vec()
    g = tf.grad(weighted)(x, y, scale=s, power=3)
    np.testing.assert_allclose(g.numpy(), 3 * s * x**2 * y)
    value, gx = tf.value_and_grad(weighted)(x, y, power=2)
    np.testing.assert_allclose(value.numpy(), np.sum(x**2 * y))
    np.testing.assert_allclose(gx.numpy(), 2 * x * y)
    # arrays passed as keywords are read at every call (never frozen)
    again = tf.grad(weighted)(x, y, scale=2 * s, power=3)
    np.testing.assert_allclose(again.numpy(), 6 * s * x**2 * y)
    # inside another transform, keywords may be traced values of the outer trace
    outer = tf.grad(lambda s_: tf.sum(tf.grad(weighted)(x, y, scale=s_)))(s)
    np.testing.assert_allclose(outer.numpy(), 2 * x * y)


def _moded(x: Any, mode: Any, w: Any, act: Any = None) -> Any:
    """A loss whose structure a non-tensor positional argument selects."""
    y = tf.sin(x) if mode == "sin" else tf.cos(x) * 2
    return tf.sum((y if act is None else act(y)) * w)


@pytest.mark.parametrize("mode", ["sin", "cos"])
def test_non_tensor_positional_arguments_pass_through_grad_as_in_jax(mode):
    x, w = vec(), vec()
    expected = np.cos(x) * w if mode == "sin" else -2 * np.sin(x) * w
    np.testing.assert_allclose(tf.grad(_moded)(x, mode, w).numpy(), expected)
    value, (gx, gw) = tf.value_and_grad(_moded, argnums=(0, -1))(x, mode, w)
    y = np.sin(x) if mode == "sin" else 2 * np.cos(x)
    np.testing.assert_allclose(value.numpy(), np.sum(y * w))
    np.testing.assert_allclose(gx.numpy(), expected)
    np.testing.assert_allclose(gw.numpy(), y)
    # a callable and a mixed container pass through too; the other modes' programs are
    # never reused for this one
    got = tf.grad(_moded)(x, mode, w, lambda t: t * t)
    np.testing.assert_allclose(got.numpy(), 2 * y * expected)
    # under jit, a static string reaches grad's function as it is
    jitted = tf.jit(tf.grad(_moded), static_argnums=1)
    np.testing.assert_allclose(jitted(x, mode, w).numpy(), expected)
    np.testing.assert_allclose(tf.jacrev(_moded)(x, mode, w).numpy(), expected)


@pytest.mark.parametrize("bad", ["sin", object(), abs, ("sin", 1.0), {"k": "v"}])
def test_differentiating_a_non_tensor_positional_argument_names_it(bad):
    with pytest.raises(ArgumentTypeError, match=r"grad: .*positional argument 1, a "):
        tf.grad(lambda x, m: tf.sum(x), argnums=(0, 1))(vec(), bad)
    with pytest.raises(ArgumentTypeError, match=r"value_and_grad: .*positional argument 0"):
        tf.value_and_grad(lambda m, x: tf.sum(x), argnums=0)(bad, vec())


def test_a_tracked_tensor_outside_argnums_is_refused_not_passed_through():
    tracked = tf.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TenferroError, match="traced transform"):
        tf.grad(lambda x, m, t: tf.sum(x * t))(vec(), "mode", tracked)


def test_keyword_arguments_to_jit_are_traced_unless_static():
    x, s = vec(), vec()
    jitted = tf.jit(lambda x, scale=None: x * 2 if scale is None else x * scale)
    np.testing.assert_allclose(jitted(x).numpy(), 2 * x)
    np.testing.assert_allclose(jitted(x, scale=s).numpy(), x * s)
    np.testing.assert_allclose(jitted(x, scale=2 * s).numpy(), 2 * x * s)
    assert len(jitted.cache) == 2
    # positional containers never share a trace with keywords of the same structure
    both = tf.jit(lambda *args, **kwargs: (len(args), len(kwargs)))
    assert both((x,), {"k": s}) == (2, 0)
    assert both(x, k=s) == (1, 1)
    with pytest.raises(ArgumentTypeError, match=r"jit.*static_argnames"):
        tf.jit(lambda x, mode="a": x)(x, mode="b")


def test_an_unexpected_keyword_is_a_python_error_naming_the_function():
    with pytest.raises(TypeError, match="weighted"):
        tf.grad(weighted)(vec(), vec(), shift=1.0)


# ---------------------------------------------------------------------- aux values


AUX_VALUES = ["a string", 3, None, {"n": 1, "tag": ("x", None)}, [1.5, "b"]]


@pytest.mark.parametrize("aux", AUX_VALUES, ids=repr)
def test_non_tensor_aux_values_are_returned_as_they_are(aux):
    x = vec()
    g, got = tf.grad(lambda v: (tf.sum(v**2), aux), has_aux=True)(x)
    assert got == aux
    np.testing.assert_allclose(g.numpy(), 2 * x)
    (_, got), _ = tf.value_and_grad(lambda v: (tf.sum(v**2), aux), has_aux=True)(x)
    assert got == aux
    _, _, got = tf.vjp(lambda v: (v * 2, aux), x, has_aux=True)
    assert got == aux
    _, _, got = tf.jvp(lambda v: (v * 2, aux), (x,), (x,), has_aux=True)
    assert got == aux
    _, _, got = tf.linearize(lambda v: (v * 2, aux), x, has_aux=True)
    assert got == aux


def test_mixed_aux_keeps_tensors_and_values_and_each_call_its_own_values():
    x = vec()

    def f(v: Any, *, label: str) -> Any:
        return tf.sum(v**2), {"label": label, "y": v * 3, "n": len(label)}

    for label in ("first", "second"):
        g, aux = tf.grad(f, has_aux=True)(x, label=label)
        assert aux["label"] == label
        assert aux["n"] == len(label)
        np.testing.assert_allclose(aux["y"].numpy(), 3 * x)
        np.testing.assert_allclose(g.numpy(), 2 * x)


def test_jvp_with_aux_in_every_nesting():
    x, t = vec(), vec()

    def f(v: Any) -> Any:
        return tf.sin(v), (v * 2, "tag")

    out, tangent, (doubled, tag) = tf.jvp(f, (x,), (t,), has_aux=True)
    np.testing.assert_allclose(out.numpy(), np.sin(x))
    np.testing.assert_allclose(tangent.numpy(), np.cos(x) * t)
    np.testing.assert_allclose(doubled.numpy(), 2 * x)
    assert tag == "tag"
    # inside grad (symbolic): the derivative of the JVP's tangent
    g = tf.grad(lambda v: tf.sum(tf.jvp(f, (v,), (t,), has_aux=True)[1]))(x)
    np.testing.assert_allclose(g.numpy(), -np.sin(x) * t)
    with pytest.raises(ArgumentTypeError, match="jvp: with has_aux=True"):
        tf.jvp(lambda v: v, (x,), (t,), has_aux=True)


def test_linearize_with_aux_evaluates_aux_once_and_never_differentiates_it():
    x, t = vec(), vec()
    out, jvp_fn, aux = tf.linearize(
        lambda v: (tf.sin(v), {"c": tf.cos(v), "label": "l"}), x, has_aux=True
    )
    np.testing.assert_allclose(out.numpy(), np.sin(x))
    np.testing.assert_allclose(jvp_fn(t).numpy(), np.cos(x) * t)
    np.testing.assert_allclose(aux["c"].numpy(), np.cos(x))
    assert aux["label"] == "l"
    # symbolic (inside grad): d/dv sum(jvp_fn(v)) = d/dv sum(cos(v) v)
    g = tf.grad(lambda v: tf.sum(tf.linearize(lambda u: (tf.sin(u), u), v, has_aux=True)[1](v)))(x)
    np.testing.assert_allclose(g.numpy(), np.cos(x) - x * np.sin(x))


# ---------------------------------------------------------------------- jit static arguments


def test_static_arguments_retrace_per_value_and_are_passed_as_they_are():
    traces: list[Any] = []

    def f(x: Any, n: int, mode: str = "sum") -> Any:
        traces.append((n, mode))
        y = x**n
        return tf.sum(y) if mode == "sum" else tf.max(y)

    x = vec()
    jitted = tf.jit(f, static_argnums=1, static_argnames="mode")
    np.testing.assert_allclose(jitted(x, 2).numpy(), np.sum(x**2))
    np.testing.assert_allclose(jitted(2 * x, 2).numpy(), np.sum(4 * x**2))
    np.testing.assert_allclose(jitted(x, 3).numpy(), np.sum(x**3))
    np.testing.assert_allclose(jitted(x, 3, mode="max").numpy(), np.max(x**3))
    np.testing.assert_allclose(jitted(x, 3, mode="max").numpy(), np.max(x**3))
    assert traces == [(2, "sum"), (3, "sum"), (3, "max")]
    # named in one list, static both ways (the signature says where it is)
    by_name = tf.jit(f, static_argnames=("n", "mode"))
    np.testing.assert_allclose(by_name(x, 2, "max").numpy(), np.max(x**2))
    np.testing.assert_allclose(by_name(x, n=3).numpy(), np.sum(x**3))
    # composes: grad of jit with static arguments, and jit inside grad
    np.testing.assert_allclose(tf.grad(lambda v: jitted(v, 3))(x).numpy(), 3 * x**2)
    np.testing.assert_allclose(tf.grad(jitted, argnums=0)(x, 2).numpy(), 2 * x)


def test_unhashable_static_argument_is_a_clear_error():
    jitted = tf.jit(lambda x, shape: tf.reshape(x, shape), static_argnums=1)
    np.testing.assert_array_equal(jitted(np.arange(6.0), (2, 3)).shape, (2, 3))
    with pytest.raises(ArgumentTypeError, match=r"jit: static argument 1 is an unhashable list"):
        jitted(np.arange(6.0), [2, 3])
    with pytest.raises(ArgumentTypeError, match="static_argnums must be an integer"):
        tf.jit(lambda x: x, static_argnums="x")  # type: ignore[arg-type]


def test_jit_static_cache_is_bounded_and_cleared():
    jitted = tf.jit(lambda x, k: x * k, static_argnums=1)
    for k in range(200):
        jitted(np.ones(2), k)
    assert len(jitted.cache) <= 128
    tf.clear_caches()
    assert len(jitted.cache) == 0


@pytest.mark.parametrize(
    ("argnums", "argnames"), [(5, ()), (-3, ()), ((0, 2), ()), ((), "nope"), ((), ("a", "z"))]
)
def test_jit_static_arguments_outside_the_signature_are_refused_at_jit(
    argnums: Any, argnames: Any
) -> None:
    def f(a: Any, b: Any = 1) -> Any:
        return a * b

    with pytest.raises(tf.ParameterError, match=r"jit: static_argnames|jit: static_argnums"):
        tf.jit(f, static_argnums=argnums, static_argnames=argnames)


def test_jit_static_argnums_beyond_a_variadic_signature_are_accepted() -> None:
    def f(a: Any, *rest: Any) -> Any:
        return a * len(rest)

    compiled = tf.jit(f, static_argnums=2)
    np.testing.assert_allclose(np.asarray(compiled(np.ones(2), 0, "x")), 2 * np.ones(2))


# ---------------------------------------------------------------------- make_jaxpr


PROGRAMS = {
    "elementwise": (lambda x: tf.sum(tf.sin(x) ** 2), (np.ones(3),), ["sin", "reduce_sum"]),
    "pytree": (
        lambda p, x: tf.tanh(p["w"] @ x + p["b"]),
        ({"w": np.ones((2, 3)), "b": np.zeros(2)}, np.ones(3)),
        ["dot_general", "tanh", "a0:float64[2]", "a1:float64[2,3]", "a2:float64[3]"],
    ),
    "grad": (tf.grad(lambda x: tf.sum(tf.exp(x))), (np.ones(2),), ["exp", "linear(active"]),
    "complex": (lambda z: tf.real(z * tf.conj(z)), (np.ones(2) + 1j,), ["conj", "real"]),
    "tuple output": (lambda x: (x * 2, tf.sum(x)), (np.ones(2, np.float32),), ["float32[2]"]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_make_jaxpr_prints_the_program_of_a_function(name: str) -> None:
    function, args, fragments = PROGRAMS[name]
    program = tf.make_jaxpr(function)(*args)
    text = str(program)
    assert text == repr(program)
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    assert "digraph" in program.to_dot()
    # the program computes the function: bind its placeholders to the arguments
    leaves = tf.tree_util.tree_leaves(args)
    bindings = dict(zip(program.inputs, leaves, strict=True))
    outputs = tf.tree_util.tree_leaves(program.outputs)
    expected = tf.tree_util.tree_leaves(function(*args))
    for output, value in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(output.eval(bindings), value)


def test_make_jaxpr_static_arguments_and_bad_input() -> None:
    program = tf.make_jaxpr(lambda x, n: x**n, static_argnums=1)(np.ones(2), 3)
    assert "pow" in str(program) or "mul" in str(program)
    assert len(program.inputs) == 1
    with pytest.raises(tf.ArgumentTypeError, match="callable"):
        tf.make_jaxpr(3)
    with pytest.raises(tf.ArgumentTypeError, match=r"not a TracedTensor.*make_jaxpr"):
        tf.format_graph(np.ones(2))


def test_block_until_ready_returns_the_tensor_on_every_kind() -> None:
    for tensor in (tf.Tensor([1.0]), tf.tensor([1.0], requires_grad=True), tf.traced([1.0])):
        assert tensor.block_until_ready() is tensor
