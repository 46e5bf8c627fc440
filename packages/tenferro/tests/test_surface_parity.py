"""The one-surface promise, enforced: every public member of the shared op surface
(``TensorMethods``) is called on a ``Tensor``, a tracked ``EagerTensor`` and a
``TracedTensor`` holding the same data, and the three results must be equal.

``CALLS`` gives each member its arguments; a member of the surface with no entry (or
a stale entry) fails the coverage test, so a method added later is covered by
construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.surface.methods import TensorMethods

A = np.array([[1.5, -2.0, 0.5], [3.0, 0.25, -1.0], [2.0, 1.0, 4.0]])
B = np.array([[0.5, 1.0, -1.5], [2.0, -0.75, 1.0], [1.0, 3.0, 0.5]])
MASK = np.array([[True, False, True], [False, True, True], [True, True, False]])

Call = Callable[[Any, Any, Any], Any]
"""``call(x, other, mask)``: the member applied to ``x`` (tensors of one kind)."""

CALLS: dict[str, Call] = {
    "T": lambda x, y, m: x.T,
    "to_device": lambda x, y, m: x.to_device("cpu") * 1,
    "mT": lambda x, y, m: x.mT,
    "H": lambda x, y, m: (x * (1 + 2j)).H,
    "mH": lambda x, y, m: (x * (1 - 1j)).mH,
    "__round__": lambda x, y, m: round(x * 1.37, 1),
    "__iadd__": lambda x, y, m: _in_place(x, "+=", y),
    "__isub__": lambda x, y, m: _in_place(x, "-=", y),
    "__imul__": lambda x, y, m: _in_place(x, "*=", y),
    "__itruediv__": lambda x, y, m: _in_place(x, "/=", y),
    "__ifloordiv__": lambda x, y, m: _in_place(x, "//=", y),
    "__imod__": lambda x, y, m: _in_place(x, "%=", y),
    "__ipow__": lambda x, y, m: _in_place(abs(x), "**=", y),
    "__imatmul__": lambda x, y, m: _in_place(x, "@=", y),
    "__iand__": lambda x, y, m: _in_place(m, "&=", x > 0),
    "__ior__": lambda x, y, m: _in_place(m, "|=", x > 0),
    "__ixor__": lambda x, y, m: _in_place(m, "^=", x > 0),
    "real": lambda x, y, m: (x * (1 + 2j)).real,
    "imag": lambda x, y, m: (x * (1 + 2j)).imag,
    "__abs__": lambda x, y, m: abs(x),
    "__neg__": lambda x, y, m: -x,
    "__pos__": lambda x, y, m: +x,
    "__invert__": lambda x, y, m: ~m,
    "__add__": lambda x, y, m: x + y,
    "__radd__": lambda x, y, m: 2.0 + x,
    "__sub__": lambda x, y, m: x - y,
    "__rsub__": lambda x, y, m: 2.0 - x,
    "__mul__": lambda x, y, m: x * y,
    "__rmul__": lambda x, y, m: 3.0 * x,
    "__truediv__": lambda x, y, m: x / y,
    "__rtruediv__": lambda x, y, m: 3.0 / x,
    "__floordiv__": lambda x, y, m: x // y,
    "__rfloordiv__": lambda x, y, m: 7.0 // x,
    "__mod__": lambda x, y, m: x % y,
    "__rmod__": lambda x, y, m: 7.0 % x,
    "__pow__": lambda x, y, m: abs(x) ** y,
    "__rpow__": lambda x, y, m: 2.0**x,
    "__matmul__": lambda x, y, m: x @ y,
    "__rmatmul__": lambda x, y, m: B @ x,
    "__eq__": lambda x, y, m: x == y,
    "__ne__": lambda x, y, m: x != y,
    "__lt__": lambda x, y, m: x < y,
    "__le__": lambda x, y, m: x <= y,
    "__gt__": lambda x, y, m: x > y,
    "__ge__": lambda x, y, m: x >= y,
    "__and__": lambda x, y, m: m & (x > 0),
    "__rand__": lambda x, y, m: True & m,
    "__or__": lambda x, y, m: m | (x > 0),
    "__ror__": lambda x, y, m: False | m,
    "__xor__": lambda x, y, m: m ^ (x > 0),
    "__rxor__": lambda x, y, m: True ^ m,
    "__getitem__": lambda x, y, m: x[1:, ::-1],
    "all": lambda x, y, m: m.all(axis=0),
    "any": lambda x, y, m: m.any(axis=1, keepdims=True),
    "astype": lambda x, y, m: x.astype(np.complex64),
    "clip": lambda x, y, m: x.clip(-1.0, 2.0),
    "conj": lambda x, y, m: (x * 1j).conj(),
    "conjugate": lambda x, y, m: (x * 1j).conjugate(),
    "diagonal": lambda x, y, m: x.diagonal(1),
    "dot": lambda x, y, m: x.dot(y),
    "flatten": lambda x, y, m: x.flatten(),
    "max": lambda x, y, m: x.max(axis=1),
    "min": lambda x, y, m: x.min(),
    "mean": lambda x, y, m: x.mean(axis=0, keepdims=True),
    "prod": lambda x, y, m: x.prod(axis=1),
    "ravel": lambda x, y, m: x.ravel(),
    "reshape": lambda x, y, m: x.reshape(9, 1),
    "squeeze": lambda x, y, m: x.reshape(1, 3, 3).squeeze(0),
    "std": lambda x, y, m: x.std(axis=0, ddof=1),
    "sum": lambda x, y, m: x.sum(axis=(0, 1)),
    "swapaxes": lambda x, y, m: x.swapaxes(0, 1),
    "take": lambda x, y, m: x.take(np.array([2, 0]), axis=1),
    "trace": lambda x, y, m: x.trace(),
    "transpose": lambda x, y, m: x.transpose(1, 0),
    "var": lambda x, y, m: x.var(),
    "argmax": lambda x, y, m: x.argmax(axis=1),
    "argmin": lambda x, y, m: x.argmin(),
    "argsort": lambda x, y, m: x.argsort(axis=0, descending=True),
    "sort": lambda x, y, m: x.sort(),
    "cumsum": lambda x, y, m: x.cumsum(axis=1),
    "cumprod": lambda x, y, m: x.cumprod(),
}


def _in_place(x: Any, operator: str, y: Any) -> Any:
    """``z = x * 1; z <operator> y`` (on a non-leaf: a tracked leaf refuses in-place
    operators, tests/test_torch_habits.py)."""
    z = x | False if x.dtype == np.bool_ else x * 1
    before = z
    namespace = {"z": z, "y": y}
    exec(f"z {operator} y", namespace)
    assert before is not namespace["z"]  # out of place: the name is rebound
    return namespace["z"]


METADATA = ("shape", "dtype", "ndim", "size")
"""Members that describe a tensor rather than compute one (compared directly)."""

NOT_OPERATIONS = {
    "__array_ufunc__": "numpy's protocol (tests/test_surface.py checks the ufunc dispatch)",
    "__array_function__": "numpy's protocol (tested with the numpy functions it dispatches)",
    "__setitem__": "tensors are immutable: raises (tests/test_errors.py)",
    "__hash__": "identity hash, as PyTorch's tensors",
    "backward": "tape AD: only a tracked EagerTensor has it, other kinds raise a TenferroError "
    "saying so (tests/test_bad_input_properties.py)",
    "__array_namespace__": "the Array API namespace (tests/test_array_api.py)",
    "device": "always 'cpu' (tests/test_array_api.py)",
    "tolist": "a Python value, not a tensor (test_python_values_agree_across_concrete_kinds)",
    "__format__": "a string (test_python_values_agree_across_concrete_kinds)",
    "data": "kind-specific: detach / itself / refused (tests/test_torch_habits.py)",
    "requires_grad_": "tape AD: EagerTensor only (tests/test_torch_habits.py)",
    "retain_grad": "tape AD: EagerTensor leaves only (tests/test_torch_habits.py)",
}


def _surface_members() -> set[str]:
    members = set()
    for klass in TensorMethods.__mro__:
        if klass is object:
            continue
        for name in vars(klass):
            dunder = name.startswith("__") and name.endswith("__")
            if (not name.startswith("_") or dunder) and name not in (
                "__doc__",
                "__module__",
                "__slots__",
                "__annotations__",
                "__dict__",
                "__weakref__",
                "__firstlineno__",  # class metadata Python 3.13 adds
                "__static_attributes__",
            ):
                members.add(name)
    return members


def test_every_surface_member_is_called():
    members = _surface_members()
    missing = sorted(members - set(CALLS) - set(NOT_OPERATIONS) - set(METADATA))
    assert not missing, f"surface members without a parity call: {missing}"
    stale = sorted(set(CALLS) - members)
    assert not stale, f"parity calls for members that do not exist: {stale}"


def _kinds() -> dict[str, Callable[[np.ndarray[Any, Any]], Any]]:
    tape = tf.Tape()
    return {
        "Tensor": tf.Tensor,
        "EagerTensor": lambda v: tape.track(v) if v.dtype.kind in "fc" else tf.EagerTensor(v),
        "TracedTensor": tf.traced,
    }


def _value(result: Any) -> np.ndarray[Any, Any]:
    if isinstance(result, tf.TracedTensor):
        return np.asarray(result.eval())
    return np.asarray(result)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_member_agrees_across_tensor_kinds(name):
    call = CALLS[name]
    expected_kind = {"Tensor": tf.Tensor, "EagerTensor": tf.EagerTensor}
    results = {}
    for kind, make in _kinds().items():
        result = call(make(A), make(B), make(MASK))
        assert isinstance(result, expected_kind.get(kind, tf.TracedTensor)), (kind, result)
        if kind != "TracedTensor":
            assert type(result) is expected_kind[kind], (kind, type(result))
        results[kind] = _value(result)
    reference = results["Tensor"]
    for kind, value in results.items():
        assert value.dtype == reference.dtype, (kind, value.dtype, reference.dtype)
        np.testing.assert_array_equal(value, reference, err_msg=f"{name} on {kind}")


def test_metadata_agrees_across_tensor_kinds():
    for kind, make in _kinds().items():
        x = make(A)
        described = tuple(getattr(x, name) for name in METADATA)
        assert described == (A.shape, A.dtype, A.ndim, A.size), kind


def test_python_values_agree_across_concrete_kinds():
    kinds = _kinds()
    tensor, eager, traced = (kinds[k](A) for k in ("Tensor", "EagerTensor", "TracedTensor"))
    for x in (tensor, eager):
        assert x.tolist() == A.tolist()
        assert f"{x[0, 1]:.3f}" == f"{A[0, 1]:.3f}"
        assert f"{x.sum():+.2e}" == f"{A.sum():+.2e}"
    with pytest.raises(tf.ArgumentTypeError, match="tolist"):
        traced.tolist()
    with pytest.raises(tf.ArgumentTypeError, match="__format__"):
        f"{traced.sum():.2f}"
