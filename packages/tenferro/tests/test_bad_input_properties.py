"""Bad input, as a property (issue 8): every bad input raises a tenferro error naming the
operation and the offending value, and changes nothing.

The bad inputs come in the issue's groups (shape, axis, dtype, arity, pytree, target,
index, tape, traced, ieee, empty, rank). Each group is a hypothesis strategy drawing a
random instance of its kind of mistake (random shapes, axes, dtypes, extents, values)
for a random tensor kind. For each instance:

* the call raises a ``TenferroError`` subclass, except for arity mistakes, which raise
  Python's own ``TypeError`` naming the public function (``add() missing 1 required
  positional argument``) as numpy's functions do;
* the message names the operation (``error.op``, which the message starts with) and
  contains the offending value (shape, axis, dtype name, index, integer ...);
* nothing changed: a tracked leaf keeps its accumulated gradient, its tape still
  differentiates correctly, and a jitted function's cached program still answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

KINDS = ["Tensor", "EagerTensor", "TracedTensor"]


@dataclass(frozen=True)
class Case:
    """One bad call: ``call(make)`` where ``make(array)`` builds a tensor of the drawn kind."""

    group: str
    ops: tuple[str, ...]  # the operation names the error may carry (public or primitive)
    call: Callable[[Callable[[Any], Any]], Any]
    fragments: tuple[str, ...]  # the offending values the message must show
    error: type[BaseException] = tf.TenferroError


def maker(kind: str, tape: tf.Tape) -> Callable[[Any], Any]:
    def make(data: Any) -> Any:
        array = np.asarray(data)
        if kind == "Tensor":
            return tf.asarray(array)
        if kind == "TracedTensor":
            return tf.traced(array)
        if array.dtype.kind in "fc":
            return tape.track(array)
        return tf.EagerTensor(array)

    return make


shapes = st.lists(st.integers(2, 4), min_size=1, max_size=3).map(tuple)


def ones(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return np.ones(shape)


# ---------------------------------------------------------------------- groups


@st.composite
def shape_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 3))
    if choice == 0:  # operands that do not broadcast
        position = draw(st.integers(0, len(shape) - 1))
        other = list(shape)
        other[position] = shape[position] + draw(st.integers(1, 3))
        name = draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "hypot"]))
        return Case(
            "shape",
            (name,),
            lambda make: getattr(tf, name)(make(ones(shape)), make(ones(tuple(other)))),
            (str(shape), str(tuple(other))),
        )
    if choice == 1:  # a reshape that changes the size
        size = int(np.prod(shape))
        target = (size + draw(st.integers(1, 5)),)
        return Case(
            "shape",
            ("reshape",),
            lambda make: tf.reshape(make(ones(shape)), target),
            (str(target),),
        )
    if choice == 2:  # a non-integer extent
        extent = draw(st.sampled_from([2.5, 0.5, 3.0, "2", True, np.bool_(False)]))
        name = draw(st.sampled_from(["ones", "zeros", "reshape"]))
        if name == "reshape":
            return Case(
                "shape",
                ("reshape",),
                lambda make: tf.reshape(make(ones((6,))), (extent, -1)),
                (repr(extent),),
            )
        return Case("shape", (name,), lambda make: getattr(tf, name)((2, extent)), (repr(extent),))
    extent = -draw(st.integers(1, 5))  # a negative extent
    name = draw(st.sampled_from(["ones", "zeros", "full"]))
    args = ((3, extent), 1.0) if name == "full" else ((3, extent),)
    return Case("shape", (name,), lambda make: getattr(tf, name)(*args), (str(extent),))


@st.composite
def axis_cases(draw: Any) -> Case:
    shape = draw(shapes)
    ndim = len(shape)
    choice = draw(st.integers(0, 3))
    if choice == 0:  # out of range
        axis = draw(st.integers(ndim, ndim + 3) | st.integers(-ndim - 3, -ndim - 1))
        name = draw(st.sampled_from(["sum", "mean", "prod", "max", "min", "var", "flip"]))
        return Case(
            "axis",
            (name,),
            lambda make: getattr(tf, name)(make(ones(shape)), axis=axis),
            (str(axis),),
        )
    if choice == 1:  # a repeated axis
        axis = draw(st.integers(0, ndim - 1))
        axes = (axis, axis, *[a for a in range(ndim) if a != axis][: max(ndim - 2, 0)])
        return Case(
            "axis",
            ("transpose",),
            lambda make: tf.transpose(make(ones(shape)), axes),
            (str(axes),),
        )
    if choice == 2:  # a non-integer axis
        axis = draw(st.sampled_from([1.5, 0.0, "0"]))
        name = draw(st.sampled_from(["sum", "swapaxes", "expand_dims"]))
        if name == "swapaxes":
            return Case(
                "axis",
                (name,),
                lambda make: tf.swapaxes(make(ones(shape)), axis, 0),
                (repr(axis),),
            )
        return Case(
            "axis",
            (name,),
            lambda make: getattr(tf, name)(make(ones(shape)), axis),
            (repr(axis),),
        )
    axis = draw(st.integers(ndim, ndim + 2))
    return Case(
        "axis",
        ("swapaxes",),
        lambda make: tf.swapaxes(make(ones(shape)), 0, axis),
        (str(axis),),
    )


UNSUPPORTED_DTYPES = ["float16", "uint8", "int8", "int16", "uint16", "uint32", "uint64"]


@st.composite
def dtype_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 4))
    if choice == 0:
        name = draw(st.sampled_from(UNSUPPORTED_DTYPES))
        return Case("dtype", ("astype",), lambda make: make(ones(shape)).astype(name), (name,))
    if choice == 1:
        name = draw(st.sampled_from(UNSUPPORTED_DTYPES))
        creator = draw(st.sampled_from(["ones", "zeros", "eye"]))
        extent = shape if creator != "eye" else 3
        return Case(
            "dtype",
            (creator,),
            lambda make: getattr(tf, creator)(extent, dtype=name),
            (name,),
        )
    if choice == 2:  # data that is not numeric
        junk = draw(st.sampled_from(["text", None, object()]))
        name = draw(st.sampled_from(["add", "multiply", "maximum", "exp", "concatenate"]))
        shown = "<U" if isinstance(junk, str) else "object"

        def call(make: Any) -> Any:
            x = make(ones(shape))
            if name == "exp":
                return tf.exp(junk)
            if name == "concatenate":
                return tf.concatenate([x, junk])
            return getattr(tf, name)(x, junk)

        return Case("dtype", (name,), call, (shown,))
    if choice == 3:  # an order on complex values
        name = draw(st.sampled_from(["maximum", "minimum", "floor", "max"]))

        def ordered(make: Any) -> Any:
            z = make(ones(shape) * (1 + 1j))
            return (
                getattr(tf, name)(z, z) if name in ("maximum", "minimum") else getattr(tf, name)(z)
            )

        return Case("dtype", (name,), ordered, ("complex",))
    operator = draw(st.sampled_from(["&", "|", "^"]))
    functions = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}
    return Case(
        "dtype",
        (operator,),
        lambda make: functions[operator](make(ones(shape)), make(ones(shape))),
        ("float64",),
    )


ARITY = {
    "add": 2,
    "subtract": 2,
    "multiply": 2,
    "maximum": 2,
    "equal": 2,
    "exp": 1,
    "sin": 1,
    "floor": 1,
    "negative": 1,
    "where": 3,
    "matmul": 2,
    "logaddexp": 2,
    "reshape": 2,
}


@st.composite
def arity_cases(draw: Any) -> Case:
    name = draw(st.sampled_from(sorted(ARITY)))
    count = draw(st.sampled_from([n for n in range(6) if n != ARITY[name]]))
    return Case(
        "arity",
        (name,),
        lambda make: getattr(tf, name)(*[make(ones((2,)))] * count),
        (f"{name}(",),
        TypeError,
    )


@st.composite
def pytree_cases(draw: Any) -> Case:
    """Sequence arguments of the surface holding something that is not an array."""
    shape = draw(shapes)
    junk = draw(st.sampled_from(["leaf", None]))
    name = draw(st.sampled_from(["concatenate", "stack"]))
    shown = "<U" if isinstance(junk, str) else "object"
    return Case(
        "pytree",
        (name,),
        lambda make: getattr(tf, name)([make(ones(shape)), junk]),
        (shown,),
    )


@st.composite
def target_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 3))
    if choice == 0:  # the gradient of a non-scalar
        return Case(
            "target",
            ("grad",),
            lambda make: tf.grad(lambda v: v * 2)(ones(shape)),
            (str(shape),),
            tf.NonScalarError,
        )
    if choice == 1:  # with respect to an integer argument
        dtype = draw(st.sampled_from(["int32", "int64"]))
        return Case(
            "target",
            ("grad",),
            lambda make: tf.grad(lambda n: tf.sum(n * 1.0))(np.ones(shape, dtype)),
            (dtype,),
            tf.DTypeError,
        )
    if choice == 2:  # a traced derivative with respect to a non-leaf

        def non_leaf(make: Any) -> Any:
            x = tf.traced(ones(shape))
            y = x * 2
            return tf.sum(y * y).grad(y)

        return Case("target", ("grad",), non_leaf, ("leaf",))

    def unrelated(make: Any) -> Any:  # an output that does not depend on the target
        x, y = tf.traced(ones(shape)), tf.traced(ones(shape))
        return tf.sum(y * y).grad(x)

    return Case("target", ("grad",), unrelated, ("does not depend",), tf.InactiveError)


@st.composite
def index_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 3))
    if choice == 0:  # out of bounds
        index = draw(
            st.integers(shape[0], shape[0] + 5) | st.integers(-shape[0] - 5, -shape[0] - 1)
        )
        return Case("index", ("getitem",), lambda make: make(ones(shape))[index], (str(index),))
    if choice == 1:  # too many indices
        index = (0,) * (len(shape) + draw(st.integers(1, 3)))
        return Case(
            "index", ("getitem",), lambda make: make(ones(shape))[index], ("too many indices",)
        )
    if choice == 2:  # not an index
        index = draw(st.sampled_from([1.5, "a", 2.0]))
        return Case("index", ("getitem",), lambda make: make(ones(shape))[index], (repr(index),))
    size = int(np.prod(shape))
    index = draw(st.integers(size, size + 5))
    return Case(
        "index",
        ("take", "getitem"),
        lambda make: tf.take(make(ones(shape)), [0, index]),
        (str(index),),
    )


@st.composite
def tape_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 4))
    if choice == 0:  # operands of two tapes
        name = draw(st.sampled_from(["add", "multiply", "subtract"]))
        primitive = {"add": "add", "multiply": "mul", "subtract": "sub"}[name]
        return Case(
            "tape",
            (name, primitive),
            lambda make: getattr(tf, name)(
                tf.Tape().track(ones(shape)), tf.Tape().track(ones(shape))
            ),
            ("different tapes",),
        )
    if choice == 1:  # backward of a non-scalar without a seed
        return Case(
            "tape",
            ("backward",),
            lambda make: (tf.Tape().track(ones(shape)) * 2).backward(),
            (str(shape),),
            tf.NonScalarError,
        )
    if choice == 2:  # a seed of the wrong shape
        wrong = (*shape, 2)
        return Case(
            "tape",
            ("backward",),
            lambda make: (tf.Tape().track(ones(shape)) * 2).backward(np.ones(wrong)),
            (str(wrong),),
        )
    if choice == 3:  # tracking a tracked tensor

        def again(make: Any) -> Any:
            tape = tf.Tape()
            return tape.track(tape.track(ones(shape)))

        return Case("tape", ("track",), again, ("already tracked",))
    dtype = draw(st.sampled_from(["int32", "int64", "bool"]))
    return Case(
        "tape",
        ("requires_grad",),
        lambda make: tf.EagerTensor(np.ones(shape, dtype), requires_grad=True),
        (dtype,),
    )


@st.composite
def traced_cases(draw: Any) -> Case:
    shape = draw(shapes)
    choice = draw(st.integers(0, 2))
    if choice == 0:  # a tracked eager tensor entering a graph
        return Case(
            "traced",
            ("traced",),
            lambda make: tf.traced(ones(shape)) + tf.Tape().track(ones(shape)),
            ("tracked EagerTensor",),
        )
    if choice == 1:  # a binding of the wrong shape
        wrong = (*shape, 2)

        def bind(make: Any) -> Any:
            p = tf.placeholder(shape, name="p")
            return (p * 2).eval({p: np.ones(wrong)})

        return Case("traced", ("evaluate",), bind, (str(wrong),), tf.BindingError)
    dtype = draw(st.sampled_from(["float32", "complex128"]))

    def bind_dtype(make: Any) -> Any:
        p = tf.placeholder(shape, name="p")
        return (p * 2).eval({p: np.ones(shape, dtype)})

    return Case("traced", ("evaluate",), bind_dtype, (dtype,), tf.BindingError)


@st.composite
def ieee_cases(draw: Any) -> Case:
    """Integers have no IEEE special values: what floats turn into data is an error."""
    shape = draw(shapes)
    choice = draw(st.integers(0, 4))
    if choice == 3:  # a fill value an integer tensor cannot hold
        fill = draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), 2**40, -(2**40)]))
        name = draw(st.sampled_from(["full", "full_like"]))

        def fill_call(make: Any) -> Any:
            if name == "full":
                return tf.full(shape, fill, dtype="int32")
            return tf.full_like(make(np.ones(shape, "int32")), fill)

        expected = tf.ScalarOverflowError if isinstance(fill, int) else tf.ParameterError
        return Case("ieee", (name,), fill_call, (str(fill), "int32"), expected)
    if choice == 4:  # a complex fill value for a real tensor
        return Case(
            "ieee",
            ("full_like",),
            lambda make: tf.full_like(make(ones(shape)), 1 + 2j),
            ("(1+2j)", "float64"),
            tf.DTypeError,
        )
    if choice == 0:  # a Python integer out of an integer dtype's range
        dtype = draw(st.sampled_from(["int32", "int64"]))
        bits = 31 if dtype == "int32" else 63
        value = draw(
            st.integers(2**bits, 2**bits * 8) | st.integers(-(2**bits) * 8, -(2**bits) - 1)
        )
        name = draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
        operands = draw(st.booleans())

        def overflow(make: Any) -> Any:
            x = make(np.ones(shape, dtype))
            return getattr(tf, name)(x, value) if operands else getattr(tf, name)(value, x)

        return Case("ieee", (name,), overflow, (str(value), dtype), tf.ScalarOverflowError)
    if choice == 1:  # beyond every float
        value = 10 ** draw(st.integers(309, 400))
        return Case(
            "ieee",
            ("add",),
            lambda make: make(ones(shape)) + value,
            (str(value)[:20],),
            tf.ScalarOverflowError,
        )
    name = draw(st.sampled_from(["floor_divide", "remainder"]))
    divisor = np.ones(shape, "int64")
    divisor.flat[draw(st.integers(0, divisor.size - 1))] = 0
    return Case(
        "ieee",
        (name, "rem", "div"),
        lambda make: _evaluated(getattr(tf, name)(make(np.ones(shape, "int64")), make(divisor))),
        ("zero",),
        tf.ExecutionError,
    )


def _evaluated(result: Any) -> Any:
    return result.eval() if isinstance(result, tf.TracedTensor) else result


@st.composite
def empty_cases(draw: Any) -> Case:
    shape = draw(shapes)
    position = draw(st.integers(0, len(shape) - 1))
    empty = tuple(0 if i == position else n for i, n in enumerate(shape))
    choice = draw(st.integers(0, 1))
    if choice == 0:  # an extremum over nothing
        name = draw(st.sampled_from(["max", "min", "amax", "amin"]))
        return Case(
            "empty",
            (name.removeprefix("a"),),  # amax/amin are max/min: never a primitive's name
            lambda make: getattr(tf, name)(make(np.ones(empty)), axis=position),
            (str(empty),),
        )
    name = draw(st.sampled_from(["concatenate", "stack"]))
    return Case("empty", (name,), lambda make: getattr(tf, name)([]), ("at least one",))


@st.composite
def rank_cases(draw: Any) -> Case:
    rank = draw(st.integers(65, 80))
    name = draw(st.sampled_from(["ones", "zeros", "reshape", "broadcast_to", "expand_dims"]))
    if name in ("ones", "zeros"):
        return Case("rank", (name,), lambda make: getattr(tf, name)((1,) * rank), (str(rank),))
    if name == "reshape":
        return Case(
            "rank",
            (name,),
            lambda make: tf.reshape(make(np.ones(1)), (1,) * rank),
            (str(rank),),
        )
    if name == "broadcast_to":
        return Case(
            "rank",
            (name,),
            lambda make: tf.broadcast_to(make(np.ones(1)), (1,) * rank),
            (str(rank),),
        )
    return Case(
        "rank",
        (name,),
        lambda make: tf.expand_dims(make(np.ones((1,) * 64)), tuple(range(rank - 64))),
        (str(rank),),
    )


GROUPS = {
    "shape": shape_cases(),
    "axis": axis_cases(),
    "dtype": dtype_cases(),
    "arity": arity_cases(),
    "pytree": pytree_cases(),
    "target": target_cases(),
    "index": index_cases(),
    "tape": tape_cases(),
    "traced": traced_cases(),
    "ieee": ieee_cases(),
    "empty": empty_cases(),
    "rank": rank_cases(),
}


# ---------------------------------------------------------------------- the property


class Witness:
    """State that a rejected call must leave unchanged."""

    def __init__(self) -> None:
        self.tape = tf.Tape()
        self.leaf = self.tape.track(np.array([1.0, -2.0, 3.0]))
        tf.sum(self.leaf * self.leaf).backward()  # .grad = 2 * leaf
        self.grad = np.asarray(self.leaf.grad).copy()
        self.jitted = tf.jit(lambda v: tf.sum(v * v, axis=-1))
        np.testing.assert_allclose(self.jitted(np.ones((2, 3))), [3.0, 3.0])

    def check(self) -> None:
        np.testing.assert_array_equal(np.asarray(self.leaf.grad), self.grad)
        tf.sum(self.leaf * 3.0).backward()  # the tape still works and accumulates
        np.testing.assert_allclose(np.asarray(self.leaf.grad), self.grad + 3.0)
        self.leaf.grad = self.grad
        np.testing.assert_allclose(self.jitted(np.ones((2, 3))), [3.0, 3.0])
        np.testing.assert_allclose(tf.asarray(np.ones(3)) + 1.0, [2.0, 2.0, 2.0])


def check_case(case: Case, kind: str, witness: Witness) -> None:
    make = maker(kind, witness.tape)
    with pytest.raises(case.error) as info:
        case.call(make)
    error = info.value
    message = str(error)
    if isinstance(error, tf.TenferroError):
        assert error.op in case.ops, (case.group, error.op, case.ops, message)
        assert message.startswith(f"{error.op}: "), message
    else:  # arity: Python's own TypeError, naming the public function
        assert case.group == "arity", (case.group, type(error), message)
        assert message.startswith(case.fragments[0]), message
    for fragment in case.fragments:
        assert fragment in message, (case.group, fragment, message)
    witness.check()


@pytest.mark.parametrize("group", sorted(GROUPS))
@fuzz_settings(25)
@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_each_bad_input_group_raises_named_errors_and_changes_nothing(group, data, kind):
    case = data.draw(GROUPS[group])
    check_case(case, kind, Witness())


@fuzz_settings(60)
@given(case=st.one_of(*GROUPS.values()), kind=st.sampled_from(KINDS))
def test_bad_inputs_in_sequence_share_one_unchanged_state(case, kind):
    """Mistakes in any order on one tape and one jit cache: each leaves them intact."""
    check_case(case, kind, WITNESS)


WITNESS = Witness()


# ---------------------------------------------------------------------- instances


def test_the_issue_instances():
    """The exact inputs issue 8 lists (items 8, 10, 11, 15), each named."""
    np.testing.assert_allclose(tf.add(np.array([1.0, 2.0]), 1.0), [2.0, 3.0])
    assert float(tf.add(1.0, 2.0)) == 3.0
    np.testing.assert_allclose(tf.add([1.0, 2.0], np.float32(1.0)), [2.0, 3.0])
    g = tf.grad(lambda w: tf.sum(tf.add(np.array([1.0, 2.0]), 1.0) * w))(np.ones(2))
    np.testing.assert_allclose(g, [2.0, 3.0])
    for call, op, fragment in [
        (lambda: tf.ones((2.5,)), "ones", "2.5"),
        (lambda: tf.reshape(tf.ones(6), (2.5, 3)), "reshape", "2.5"),
        (lambda: tf.reshape(tf.ones(6), (True, 6)), "reshape", "True"),  # numpy refuses too
        (lambda: tf.arange(0, 10, 0), "arange", "step"),
        (lambda: tf.ones((-1, 2)), "ones", "-1"),
        (lambda: tf.ones((1,) * 65), "ones", "65"),
        (lambda: tf.ones((10**6, 10**7)), "ones", "(1000000, 10000000)"),
        (lambda: tf.asarray([1.0]).backward(), "backward", "Tensor"),
        (lambda: tf.traced(np.ones(1)).backward(), "backward", "TracedTensor"),
        (lambda: tf.asarray(np.array([1], np.int32)) + 2**40, "add", str(2**40)),
    ]:
        with pytest.raises(tf.TenferroError) as info:
            call()
        assert info.value.op == op, (op, str(info.value))
        assert fragment in str(info.value), (fragment, str(info.value))
    with pytest.raises(TypeError, match=r"^add\(\) missing 1 required positional argument"):
        tf.add(tf.asarray([1.0]))  # type: ignore[call-arg]


@pytest.mark.parametrize("kind", KINDS)
def test_allocation_failures_are_named_tenferro_errors(kind):
    """numpy's MemoryError inside any operation becomes an AllocationError naming it, in
    every mode (simulated: a real one would depend on the machine's overcommit policy)."""

    def impl(x: Any) -> Any:
        raise MemoryError(f"Unable to allocate {x.nbytes * 10**12} bytes")

    family = tf.extension.define("test.huge_result", infer=lambda x: x, impl=impl)
    witness = Witness()
    with pytest.raises(tf.AllocationError) as info:
        _evaluated(family(maker(kind, witness.tape)(np.ones(3))))
    assert info.value.op in {"test.huge_result", "evaluate"}
    assert "Unable to allocate" in str(info.value)
    assert isinstance(info.value, MemoryError)
    witness.check()
