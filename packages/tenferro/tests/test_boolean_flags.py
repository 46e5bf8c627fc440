"""Boolean keywords of the public API accept only ``bool`` (and ``numpy.bool_``).

``cholesky(a, upper="yes")`` used to be taken as truthy. Every public function and
tensor method is enumerated here (no hand-written list of the flags): a parameter
whose default is a bool, or which is annotated ``bool``, is a flag, and a string, an
int, a float, ``None`` (unless the annotation allows it) or an array must raise
:class:`tenferro.errors.ParameterError` naming the function, the keyword and the value;
``True``, ``False`` and ``numpy`` bools must not. A new public function with a flag is
checked without touching this file; one that needs particular arguments to be called
at all gets an entry in ``ARGUMENTS``.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.errors import ArgumentTypeError, FlagError, ParameterError

M = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
MODULES = {
    "tf": tf,
    "tf.linalg": tf.linalg,
    "tf.lax": tf.lax,
    "tf.array_api": tf.array_api,
    "tf.random": tf.random,
    "tf.extension": tf.extension,
    "tf.testing": tf.testing,
    "tf.tree_util": tf.tree_util,
}
FLAG_ANNOTATIONS = {"bool", "_builtins.bool", "builtins.bool"}
OPTIONAL_FLAG_ANNOTATIONS = {"bool | None", "_builtins.bool | None"}


def _loss(x: Any) -> Any:
    return tf.sum(x * x)


def _define(**flags: Any) -> Any:
    return tf.extension.define("test.flag_probe", infer=lambda m: m, impl=lambda a: a, **flags)


# How to call the functions whose first argument is not a matrix: (args, kwargs).
ARGUMENTS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "tf.einsum_path": (("ij,jk->ik", M, M), {}),
    "tf.linspace": ((0.0, 1.0, 5), {}),
    "tf.array_api.linspace": ((0.0, 1.0, 5), {}),
    "tf.array_api.astype": ((M, "float32"), {}),
    "tf.array_api.reshape": ((M, (9,)), {}),
    "tf.array_api.cumulative_sum": ((M,), {"axis": 0}),
    "tf.array_api.cumulative_prod": ((M,), {"axis": 0}),
    "tf.lax.cumsum": ((M, 0), {}),
    "tf.lax.cumprod": ((M, 0), {}),
    "tf.lax.sort": ((M, 0), {}),
    "tf.lax.argsort": ((M, 0), {}),
    "tf.lax.convert_element_type": ((M, np.float32), {}),
    "tf.linalg.solve_triangular": ((M, M), {"upper": True}),
    "tf.jvp": ((_loss, (M,), (M,)), {}),
    "tf.vjp": ((_loss, M), {}),
    "tf.linearize": ((_loss, M), {}),
}
for _name in ("grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian"):
    ARGUMENTS[f"tf.{_name}"] = ((_loss,), {})
CALLERS: dict[str, Callable[..., Any]] = {"tf.extension.define": _define}


def _flag_kind(parameter: inspect.Parameter) -> str | None:
    """``"flag"``, ``"optional"`` (None allowed) or ``None`` (not a flag)."""
    annotation = parameter.annotation
    if annotation in OPTIONAL_FLAG_ANNOTATIONS:
        return "optional"
    if type(parameter.default) is bool or annotation in FLAG_ANNOTATIONS or annotation is bool:
        return "flag"
    return None


def _flags(function: Any) -> list[tuple[str, str]]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return []
    found = []
    for parameter in signature.parameters.values():
        kind = _flag_kind(parameter)
        if kind is not None:
            found.append((parameter.name, kind))
    return found


def _public_functions() -> Iterator[tuple[str, Any, str, str]]:
    seen: set[tuple[int, str]] = set()
    for prefix, module in MODULES.items():
        names = getattr(module, "__all__", None) or [n for n in dir(module) if n[0] != "_"]
        for name in sorted(names):
            function = getattr(module, name, None)
            if isinstance(function, (type, types.ModuleType)) or not callable(function):
                continue
            for flag, kind in _flags(function):
                if (id(function), flag) not in seen:
                    seen.add((id(function), flag))
                    yield f"{prefix}.{name}", function, flag, kind


def _methods() -> Iterator[tuple[str, Any, str, str]]:
    for cls in (tf.Tensor, tf.EagerTensor, tf.TracedTensor, tf.Tape):
        for name in sorted(dir(cls)):
            if name.startswith("_"):
                continue
            for flag, kind in _flags(getattr(cls, name)):
                yield f"{cls.__name__}.{name}", getattr(cls, name), flag, kind


FUNCTIONS = sorted(_public_functions(), key=lambda entry: (entry[0], entry[2]))
METHODS = sorted(_methods(), key=lambda entry: (entry[0], entry[2]))
BAD = ["yes", "", 1, 0, 1.0, np.array(True), [True]]


def _expect_refused(call: Callable[[Any], Any], name: str, flag: str, value: Any) -> None:
    with pytest.raises(ParameterError) as caught:
        call(value)
    message = str(caught.value)
    assert flag in message, message
    assert repr(value) in message, message
    assert name in message, message


def _expect_accepted(call: Callable[[Any], Any], value: Any) -> None:
    try:
        call(value)
    except FlagError as error:  # pragma: no cover - the failure being tested
        raise AssertionError(f"{value!r} refused: {error}") from None
    except Exception:
        pass


def _function_call(qualified: str, function: Any, flag: str) -> Callable[[Any], Any]:
    if qualified in CALLERS:
        caller = CALLERS[qualified]
        return lambda value: caller(**{flag: value})
    args, kwargs = ARGUMENTS.get(qualified, ((M,), {}))
    return lambda value: function(*args, **{**kwargs, flag: value})


def test_the_enumeration_finds_the_flags_of_the_api() -> None:
    found = {(name, flag) for name, _, flag, _ in FUNCTIONS + METHODS}
    for expected in [
        ("tf.linalg.cholesky", "upper"),
        ("tf.linalg.svd", "full_matrices"),
        ("tf.linalg.pinv", "hermitian"),
        ("tf.linalg.solve_triangular", "upper"),
        ("tf.linalg.norm", "keepdims"),
        ("tf.sum", "keepdims"),
        ("tf.sort", "descending"),
        ("tf.asarray", "copy"),
        ("Tensor.sum", "keepdims"),
        ("Tape.grad", "create_graph"),
    ]:
        assert expected in found
    assert len(FUNCTIONS) > 40


@pytest.mark.parametrize(
    ("qualified", "function", "flag", "kind"),
    FUNCTIONS,
    ids=[f"{name}-{flag}" for name, _, flag, _ in FUNCTIONS],
)
def test_public_functions_refuse_non_bool_flags(
    qualified: str, function: Any, flag: str, kind: str
) -> None:
    call = _function_call(qualified, function, flag)
    name = getattr(function, "__name__", qualified.rsplit(".", 1)[-1])
    for value in BAD:
        _expect_refused(call, name, flag, value)
    if kind == "flag":
        _expect_refused(call, name, flag, None)
    for value in (True, False, np.True_, np.False_):
        _expect_accepted(call, value)


def _instances(cls: type) -> Any:
    if cls is tf.Tape:
        tape = tf.Tape()
        x = tape.track(M)
        return tape, (tf.sum(x * x), x)
    if cls is tf.EagerTensor:
        x = tf.EagerTensor(M, requires_grad=True)
        return x, ()
    if cls is tf.TracedTensor:
        return tf.traced(M), ()
    return tf.Tensor(M), ()


@pytest.mark.parametrize(
    ("qualified", "method", "flag", "kind"),
    METHODS,
    ids=[f"{name}-{flag}" for name, _, flag, _ in METHODS],
)
def test_tensor_and_tape_methods_refuse_non_bool_flags(
    qualified: str, method: Any, flag: str, kind: str
) -> None:
    cls_name, name = qualified.split(".")
    cls = {c.__name__: c for c in (tf.Tensor, tf.EagerTensor, tf.TracedTensor, tf.Tape)}[cls_name]

    def call(value: Any) -> Any:
        instance, args = _instances(cls)
        if name in ("grad", "vjp", "jvp") and cls is tf.TracedTensor:
            leaf = tf.traced(M)
            target = tf.sum(leaf * leaf)
            extra = (leaf,) if name == "grad" else (leaf, 1.0 if name == "vjp" else M)
            return getattr(target, name)(*extra, **{flag: value})
        if name == "backward" and cls is tf.EagerTensor:
            return tf.sum(instance * instance).backward(**{flag: value})
        if cls is tf.Tape and name == "vjp":
            loss, x = args
            return instance.vjp(loss, x, 1.0, **{flag: value})
        return getattr(instance, name)(*args, **{flag: value})

    for value in BAD:
        _expect_refused(call, name, flag, value)
    if kind == "flag":
        _expect_refused(call, name, flag, None)
    for value in (True, False, np.True_):
        _expect_accepted(call, value)


def test_the_constructor_flag_of_eager_tensors() -> None:
    for value in BAD:
        with pytest.raises(ParameterError, match="requires_grad"):
            tf.EagerTensor(M, requires_grad=value)
    assert tf.EagerTensor(M, requires_grad=np.True_).requires_grad is True


def test_flag_errors_are_also_type_errors() -> None:
    """A flag of the wrong type is a ``ParameterError`` and, as Python does for a wrong
    type, a ``TypeError`` (transforms raised ``ArgumentTypeError`` for ``has_aux``)."""
    with pytest.raises(ArgumentTypeError):
        tf.grad(_loss, has_aux="no")
    with pytest.raises(TypeError, match=r"linalg\.cholesky.*upper.*'yes'"):
        tf.linalg.cholesky(M, upper="yes")
    with pytest.raises(ParameterError, match=r"svd.*full_matrices.*'no'"):
        tf.linalg.svd(M, full_matrices="no")


def test_cached_calls_do_not_take_an_int_for_a_bool() -> None:
    """The dispatch caches key calls by their static arguments: ``keepdims=1`` after a
    cached ``keepdims=True`` call (equal and of equal hash) must still be refused."""
    x = tf.asarray(M)
    calls: list[Callable[[Any], Any]] = [
        lambda v: tf.sum(x, None, v),
        lambda v: tf.sum(x, axis=0, keepdims=v),
        lambda v: x.sum(0, v),
        lambda v: tf.mean(x, 0, v),
        lambda v: tf.linalg.norm(x, None, None, v),
        lambda v: tf.linalg.cholesky(x, v),
    ]
    for call in calls:
        call(True)
        call(False)
        for bad in (1, 0, 1.0, np.int64(1)):
            with pytest.raises(ParameterError):
                call(bad)


def test_numpy_functions_on_tensors_check_their_flags() -> None:
    """numpy's functions dispatched to tenferro (``__array_function__``) check the flags
    that tenferro's function does not take itself."""
    x = tf.asarray(M)
    for flag in ("compute_uv", "hermitian"):
        with pytest.raises(ParameterError, match=rf"numpy\.linalg\.svd.*{flag}.*'no'"):
            np.linalg.svd(x, **{flag: "no"})
    np.testing.assert_allclose(
        np.asarray(np.linalg.svd(x, compute_uv=np.False_)), np.linalg.svd(M, compute_uv=False)
    )
    with pytest.raises(ParameterError, match=r"sum.*keepdims.*'yes'"):
        np.sum(x, keepdims="yes")
