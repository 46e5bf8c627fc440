"""tf.einsum notation and values against numpy.einsum (every dtype, every form)."""

from __future__ import annotations

import numpy as np
import pytest
from einsum_support import laid_out, networks
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}


def data(shape, dtype, rng):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dtype)


def close(actual, expected, dtype=np.float64):
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected)
    assert actual.dtype == np.asarray(expected).dtype
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=TOL[dtype], atol=TOL[dtype] * scale)


@st.composite
def problems(draw, ellipsis=False):
    """numpy-valid einsums: 1-4 operands over a pool of labels, repeated labels in an
    operand allowed, explicit or implicit output."""
    pool = "abcdefg"
    sizes = {c: draw(st.integers(1, 4)) for c in pool}
    count = draw(st.integers(1, 4))
    terms = [
        "".join(draw(st.lists(st.sampled_from(pool), min_size=0, max_size=4))) for _ in range(count)
    ]
    used = sorted(set("".join(terms)))
    explicit = draw(st.booleans())
    output = ""
    if explicit and used:
        output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    shapes = [[sizes[c] for c in t] for t in terms]
    batch: list[int] = []
    if ellipsis:
        batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
        new_terms, new_shapes = [], []
        for t, s in zip(terms, shapes, strict=True):
            cut = draw(st.integers(0, len(t)))
            own = batch[len(batch) - draw(st.integers(0, len(batch))) :]
            own = [n if draw(st.booleans()) else 1 for n in own]
            new_terms.append(t[:cut] + "..." + t[cut:])
            new_shapes.append(s[:cut] + own + s[cut:])
        terms, shapes = new_terms, new_shapes
        output = "..." + output
    subscripts = ",".join(terms) + ("->" + output if explicit or ellipsis else "")
    dtype = draw(st.sampled_from(DTYPES))
    return subscripts, shapes, dtype


@fuzz_settings(150)
@given(problems(), st.sampled_from(["auto", "greedy", "optimal", "dp", False]))
def test_matches_numpy(problem, optimize):
    subscripts, shapes, dtype = problem
    rng = np.random.default_rng(0)
    xs = [data(s, dtype, rng) for s in shapes]
    expected = np.einsum(subscripts, *xs)
    close(tf.einsum(subscripts, *xs, optimize=optimize), expected, dtype)


@fuzz_settings(80)
@given(problems(ellipsis=True))
def test_ellipsis_matches_numpy(problem):
    subscripts, shapes, dtype = problem
    rng = np.random.default_rng(1)
    xs = [data(s, dtype, rng) for s in shapes]
    close(tf.einsum(subscripts, *xs), np.einsum(subscripts, *xs), dtype)


@fuzz_settings(40)
@given(problems())
def test_interleaved_matches_subscripts(problem):
    subscripts, shapes, dtype = problem
    rng = np.random.default_rng(2)
    xs = [data(s, dtype, rng) for s in shapes]
    left = subscripts.split("->")[0].split(",")
    code = {c: i for i, c in enumerate("abcdefg")}
    args: list = []
    for term, x in zip(left, xs, strict=True):
        args += [x, [code[c] for c in term]]
    if "->" in subscripts:
        args.append([code[c] for c in subscripts.split("->")[1]])
    close(tf.einsum(*args), np.einsum(*args), dtype)


@fuzz_settings(120)
@given(
    networks(),
    st.sampled_from(DTYPES),
    st.sampled_from(["c", "f", "reversed"]),
    st.sampled_from(["auto", False]),
)
def test_networks_match_numpy_in_every_kind_and_layout(problem, dtype, layout, optimize):
    """Chains, transfer steps, batched (outer) products at extents where products are
    flipped or broadcast, operands in any memory order, concrete, eager and traced (one
    lowering serves all; a cached program serves a second call)."""
    subscripts, shapes = problem
    rng = np.random.default_rng(7)
    xs = [laid_out(data(s, dtype, rng), layout) for s in shapes]
    expected = np.einsum(subscripts, *xs)
    for _ in range(2):
        close(
            tf.einsum(subscripts, *[tf.asarray(x) for x in xs], optimize=optimize), expected, dtype
        )
    close(
        tf.einsum(subscripts, *[tf.EagerTensor(x) for x in xs], optimize=optimize), expected, dtype
    )
    traced = tf.jit(lambda *a: tf.einsum(subscripts, *a, optimize=optimize))
    close(traced(*xs), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_golden_values_of_the_spec(dtype):
    """§6.6's column-major goldens, converted to row-major."""
    a = np.arange(1, 7, dtype=dtype).reshape(3, 2).T  # col-major 2x3 [1..6]
    b = np.arange(1, 7, dtype=dtype).reshape(2, 3).T  # col-major 3x2 [1..6]
    out = np.asarray(tf.einsum("ij,jk->ik", a, b))
    np.testing.assert_array_equal(out.T.ravel(), [22, 28, 49, 64])
    c = np.arange(1, 13, dtype=dtype).reshape(4, 3).T  # col-major 3x4 [1..12]
    out = np.asarray(tf.tensordot(a, c, 1))
    np.testing.assert_array_equal(out.T.ravel(), [22, 28, 49, 64, 76, 100, 103, 136])
    out = np.asarray(tf.einsum("i,j->ij", np.array([1, 2], dtype), np.array([3, 4, 5], dtype)))
    np.testing.assert_array_equal(out.T.ravel(), [3, 6, 4, 8, 5, 10])
    out = np.asarray(tf.einsum("i->ii", np.array([3, 4, 5], dtype)))
    np.testing.assert_array_equal(out.T.ravel(), [3, 0, 0, 0, 4, 0, 0, 0, 5])


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ii->i", [(3, 3)]),
        ("ii->", [(3, 3)]),
        ("ii", [(3, 3)]),
        ("iij->ij", [(2, 2, 3)]),
        ("iijj->", [(2, 2, 3, 3)]),
        ("ijji->ij", [(2, 3, 3, 2)]),
        ("ij,jj->i", [(2, 3), (3, 3)]),
        (",k->k", [(), (3,)]),
        ("i,->i", [(3,), ()]),
        (",->", [(), ()]),
        ("->", [()]),
        ("", [()]),
        ("ij->", [(2, 3)]),
        ("ij->ji", [(2, 3)]),
        ("ij->ij", [(2, 3)]),
        ("i,i,i->i", [(3,), (3,), (3,)]),
        ("ij,ij->ij", [(2, 3), (2, 3)]),
        ("ij,ji->ij", [(2, 3), (3, 2)]),
        ("i,j,k->ijk", [(2,), (3,), (4,)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ab,cd,ef->", [(2, 2), (2, 2), (2, 2)]),
        ("ab,bc,cd,de,ea->", [(2, 3), (3, 4), (4, 2), (2, 3), (3, 2)]),
        ("i,i->", [(0,), (0,)]),
        ("ij,jk->ik", [(2, 0), (0, 3)]),
        ("...,...->...", [(2, 3), (3,)]),
        ("i...,i...->...", [(2, 1, 4), (2, 3, 1)]),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_notation_cases(subscripts, shapes, dtype):
    rng = np.random.default_rng(3)
    xs = [data(s, dtype, rng) for s in shapes]
    close(tf.einsum(subscripts, *xs), np.einsum(subscripts, *xs), dtype)


def test_diagonal_embedding_beyond_numpy():
    x = np.array([3.0, 4.0, 5.0])
    np.testing.assert_array_equal(tf.einsum("i->ii", x), np.diag(x))
    cube = np.asarray(tf.einsum("i->iii", x))
    expected = np.zeros((3, 3, 3))
    expected[range(3), range(3), range(3)] = x
    np.testing.assert_array_equal(cube, expected)
    m = np.arange(6.0).reshape(2, 3)
    out = np.asarray(tf.einsum("ij->iji", m))
    expected = np.zeros((2, 3, 2))
    for i in range(2):
        expected[i, :, i] = m[i]
    np.testing.assert_array_equal(out, expected)
    out = np.asarray(tf.einsum("ij,jk->iki", m, np.ones((3, 2))))
    assert out.shape == (2, 2, 2)
    np.testing.assert_allclose(np.einsum("iki->ik", out), m @ np.ones((3, 2)))


def test_unicode_labels():
    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    out = tf.einsum("αβ,βγ,γ->α", a, b, c)  # noqa: RUF001
    np.testing.assert_allclose(out, a @ b @ c)
    out = tf.einsum("é中,中𝔘->é𝔘", a, b)  # Latin-1, CJK, astral plane
    np.testing.assert_allclose(out, a @ b)
    out = tf.einsum("ωé", a)  # implicit: sorted by code point
    np.testing.assert_allclose(out, a.T)


def test_whitespace_is_ignored():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    np.testing.assert_allclose(tf.einsum(" ij , jk -> ik ", a, b), a @ b)


def test_mixed_dtypes_promote_like_numpy():
    a = np.ones((2, 3), np.float32)
    b = np.ones((3,), np.complex128)
    out = tf.einsum("ij,j->i", a, b)
    assert out.dtype == np.result_type(a, b)
    ints = tf.einsum("ij,j->i", np.ones((2, 3), np.int64), np.arange(3))
    assert ints.dtype == np.int64
    np.testing.assert_array_equal(ints, [3, 3])


def test_every_tensor_kind_keeps_its_kind():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert isinstance(tf.einsum("ij,jk->ik", tf.asarray(a), b), tf.Tensor)
    assert isinstance(tf.einsum("ij,jk->ik", tf.EagerTensor(a), b), tf.EagerTensor)
    x = tf.placeholder((2, 3), tf.float64)
    y = tf.einsum("ij,jk->ik", x, b)
    assert isinstance(y, tf.TracedTensor)
    np.testing.assert_allclose(y.eval({x: a}), a @ b)


def test_explicit_paths_trees_and_optimizer_objects():
    rng = np.random.default_rng(5)
    shapes = [(2, 3), (3, 4), (4, 5), (5, 2)]
    xs = [rng.standard_normal(s) for s in shapes]
    expected = np.einsum("ab,bc,cd,da->", *xs)
    for optimize in (
        [(0, 1), (0, 1), (0, 1)],
        [(2, 3), (0, 1), (0, 1)],
        ["einsum_path", (0, 3), (0, 1), (0, 1)],
        [(0, 1, 2, 3)],
        ((0, 1), (2, 3)),
        (((3, 0), 1), 2),
        ((0, 1, 2), 3),
    ):
        np.testing.assert_allclose(tf.einsum("ab,bc,cd,da->", *xs, optimize=optimize), expected)

    class Reversed:
        """An opt_einsum-style PathOptimizer: contracts the last two, repeatedly."""

        calls = 0

        def __call__(self, inputs, output, size_dict, memory_limit=None):
            assert all(isinstance(t, set) for t in inputs)
            assert isinstance(output, set)
            assert size_dict["a"] == 2
            Reversed.calls += 1
            return [(len(inputs) - 2 - k, len(inputs) - 1 - k) for k in range(len(inputs) - 1)]

    optimizer = Reversed()
    np.testing.assert_allclose(tf.einsum("ab,bc,cd,da->", *xs, optimize=optimizer), expected)
    path, info = tf.einsum_path("ab,bc,cd,da->", *xs, optimize=optimizer)
    assert path == info.path == [(2, 3), (1, 2), (0, 1)]


def test_memory_limit_caps_intermediates():
    shapes = [(8, 2), (2, 8), (8, 2), (2, 8)]
    for optimize in ("auto", "greedy", "dp", "optimal"):
        for limit in (16, "max_input"):
            _, info = tf.einsum_path(
                "ab,bc,cd,de->ae", *shapes, shapes=True, optimize=optimize, memory_limit=limit
            )
            assert max(info.size_list[:-1]) <= 16  # the output itself may exceed the cap
        _, free = tf.einsum_path("ab,bc,cd,de->ae", *shapes, shapes=True, optimize=optimize)
        assert free.opt_cost <= info.opt_cost
    with pytest.raises(tf.ParameterError, match="memory_limit"):
        tf.einsum_path("ab,bc,cd->ad", (2, 8), (8, 8), (8, 2), shapes=True, memory_limit=4)


def test_einsum_path_info():
    path, info = tf.einsum_path("ij,jk,kl->il", (2, 30), (30, 40), (40, 5), shapes=True)
    assert path == [(0, 1), (0, 1)]  # (ij,jk) first: 2*30*40 then 2*40*5
    assert info.opt_cost == 2 * (2 * 30 * 40) + 2 * (2 * 40 * 5)
    assert info.naive_cost == 3 * 2 * 30 * 40 * 5
    assert info.largest_intermediate == 2 * 40
    assert info.scale_list == [3, 3]
    assert info.size_list == [80, 10]
    text = str(info)
    assert "ij,jk,kl->il" in text
    assert "Optimized FLOP count" in text
    assert text.count("\n") >= 10
    same, _ = tf.einsum_path("ij,jk,kl->il", np.ones((2, 30)), np.ones((30, 40)), np.ones((40, 5)))
    assert same == path


def test_plans_are_cached_and_cleared():
    from tenferro.einsum import api

    tf.clear_caches()
    a, b = np.ones((2, 3)), np.ones((3, 4))
    tf.einsum("ij,jk->ik", a, b)
    programs, plans = len(api._programs), len(api._plans)
    assert programs >= 1
    assert plans >= 1
    tf.einsum("ij,jk->ik", a + 1, b)  # new data, same structure: no new entry
    assert (len(api._programs), len(api._plans)) == (programs, plans)
    tf.einsum("ij,jk->ik", np.ones((2, 5)), np.ones((5, 4)))
    assert len(api._programs) == programs + 1
    tf.clear_caches()
    assert not api._programs
    assert not api._plans


def test_program_cache_is_bounded():
    from tenferro.einsum import api

    tf.clear_caches()
    for n in range(1, api.CACHE_LIMIT + 20):
        tf.einsum("i->", np.ones(n))
    assert len(api._programs) <= api.CACHE_LIMIT
    assert len(api._plans) <= api.CACHE_LIMIT
    tf.clear_caches()


def test_matrix_steps_use_dot_general():
    x = tf.placeholder((3, 4), tf.float64)
    y = tf.placeholder((4, 5), tf.float64)
    z = tf.placeholder((5, 2), tf.float64)
    text = tf.format_graph(tf.einsum("ij,jk,kl->il", x, y, z))
    assert text.count("dot_general") == 2
    assert "einsum" not in text
    # Outer products (batched or not) are dot_generals without contracted axes, their
    # operands in the order that writes the output's layout (no transpose after).
    outer = tf.format_graph(tf.einsum("i,j->ij", tf.placeholder((3,)), tf.placeholder((2,))))
    assert "dot_general[lhs_contracting=(), rhs_contracting=()" in outer
    assert "mul" not in outer
    swapped = tf.format_graph(
        tf.einsum("ti,to->toi", tf.placeholder((2, 3)), tf.placeholder((2, 5)))
    )
    assert "dot_general[lhs_contracting=(), rhs_contracting=(), lhs_batch=(0,)" in swapped
    assert "transpose" not in swapped
    assert "mul" not in swapped
    # Scaling rows (one side has no label of its own) stays a broadcast multiply.
    scaled = tf.format_graph(tf.einsum("ij,i->ij", x, tf.placeholder((3,))))
    assert "mul" in scaled
    assert "dot_general" not in scaled
    hadamard = tf.format_graph(tf.einsum("ij,ji->ij", x, tf.placeholder((4, 3))))
    assert "mul" in hadamard
    assert "dot_general" not in hadamard


def test_the_last_contraction_writes_the_output_order():
    """The last contraction takes its operands in the order that writes the output's axes
    (no transpose after it), whatever order the path lists them in."""
    for subscripts, shapes in [
        ("bc,bsd,cse->de", [(3, 3), (3, 2, 4), (3, 2, 5)]),
        ("bc,bsd,cse->ed", [(3, 3), (3, 2, 4), (3, 2, 5)]),
        ("ij,jk->ki", [(2, 3), (3, 4)]),
    ]:
        operands = [tf.placeholder(s) for s in shapes]
        assert "transpose" not in tf.format_graph(tf.einsum(subscripts, *operands))
        rng = np.random.default_rng(8)
        xs = [data(s, np.float64, rng) for s in shapes]
        close(tf.einsum(subscripts, *xs), np.einsum(subscripts, *xs))


@fuzz_settings(60)
@given(st.data())
def test_products_without_contraction_are_written_in_output_order(data):
    """Outer and batched outer products multiply straight into the output's axis order
    (a dot_general without contracted axes, or a broadcast multiply when the order does
    not allow one): no transpose follows the product (it would leave a strided view of
    the result)."""
    labels = data.draw(st.permutations("abcde"))
    left = "".join(
        data.draw(st.lists(st.sampled_from(labels), min_size=1, max_size=3, unique=True))
    )
    rest = [c for c in labels if c not in left]
    own = data.draw(st.lists(st.sampled_from(rest), min_size=1, max_size=2, unique=True))
    shared = data.draw(st.lists(st.sampled_from(left), max_size=len(left), unique=True))
    right = "".join(data.draw(st.permutations(own + shared)))
    output = "".join(data.draw(st.permutations(sorted(set(left + right)))))
    subscripts = f"{left},{right}->{output}"
    sizes = {c: 2 + i for i, c in enumerate("abcde")}
    rng = np.random.default_rng(0)
    x = rng.standard_normal([sizes[c] for c in left])
    y = rng.standard_normal([sizes[c] for c in right])
    result = np.asarray(tf.einsum(subscripts, x, y))
    np.testing.assert_allclose(result, np.einsum(subscripts, x, y), rtol=1e-12)
    graph = tf.format_graph(tf.einsum(subscripts, tf.placeholder(x.shape), tf.placeholder(y.shape)))
    product = "dot_general" if "dot_general" in graph else "mul"  # outer: dot_general
    assert "transpose" not in graph.split(product, 1)[1], (subscripts, graph)


def test_eager_and_traced_agree():
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s) for s in [(2, 3, 3), (3, 4), (4, 2)]]
    eager = tf.einsum("ijj,jk,ki->k", *[tf.EagerTensor(x) for x in xs])
    ps = [tf.placeholder(x.shape) for x in xs]
    traced = tf.einsum("ijj,jk,ki->k", *ps).eval(dict(zip(ps, xs, strict=True)))
    np.testing.assert_allclose(np.asarray(eager), np.asarray(traced), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(eager), np.einsum("ijj,jk,ki->k", *xs), rtol=1e-13)


BAD = [
    ("ij,jk->ik", [(2, 3)], "2 input terms for 1 operands"),
    ("ij->ik", [(2, 3)], "output label 'k' occurs in no input"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "label 'j' has extent 3 in operand 0 and 4 in operand 1"),
    ("ijk->i", [(2, 3)], "operand 0 has 2 axes but term 'ijk' names 3"),
    ("......->", [(2,)], "more than one ellipsis"),
    ("i.j->", [(2, 3)], "invalid character '.'"),
    ("ij->i->j", [(2, 3)], "more than one '->'"),
    ("i-j", [(2, 3)], "'-' or '>'"),
    ("...i->i", [(2, 3)], "no ellipsis"),
    ("...,...->...", [(2,), (3,)], "ellipsis axes do not broadcast"),
    ("ii->i", [(2, 3)], "label 'i' has extent"),
]


@pytest.mark.parametrize(("subscripts", "shapes", "part"), BAD)
def test_errors_name_einsum_subscripts_and_part(subscripts, shapes, part):
    xs = [np.ones(s) for s in shapes]
    with pytest.raises(tf.TenferroError) as caught:
        tf.einsum(subscripts, *xs)
    message = str(caught.value)
    assert message.startswith("einsum:")
    assert repr(subscripts) in message
    assert part in message


def test_bad_paths_and_options_are_errors():
    xs = [np.ones((2, 2))] * 3
    for optimize, part in (
        ([(0, 3)], "does not fit"),
        ([(0, 1)], "leaves 2 operands"),
        ([(0, 0), (0, 1)], "does not fit"),
        ("fastest", "unknown optimize"),
        ([("a", 1)], "not a tuple of operand positions"),
    ):
        with pytest.raises(tf.ParameterError) as caught:
            tf.einsum("ab,bc,cd->ad", *xs, optimize=optimize)
        assert "einsum" in str(caught.value)
        assert part in str(caught.value)
        assert "'ab,bc,cd->ad'" in str(caught.value)
    with pytest.raises(tf.DTypeError, match="einsum"):
        tf.einsum("i->", np.array([True, False]))
    with pytest.raises(tf.ParameterError, match="einsum"):
        tf.einsum(np.ones(2), [0.5])
    with pytest.raises(tf.ParameterError, match="memory_limit"):
        tf.einsum("i->", np.ones(2), memory_limit=-1)
