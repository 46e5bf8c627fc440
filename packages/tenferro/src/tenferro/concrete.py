"""``Tensor``: an immutable n-dimensional array evaluated eagerly, without AD."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.methods import TensorMethods
from tenferro.core.primitive import TensorPrimitive
from tenferro.core.pytree import flatten, unflatten
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import promote_types
from tenferro.errors import AllocationError, DTypeError, ScalarOverflowError, ShapeError
from tenferro.ieee import IGNORE, error_state, quiet, restore
from tenferro.meta import Meta

__all__ = [
    "Borrowed",
    "Tensor",
    "borrowed_roots",
    "filled",
    "memory_root",
    "owned_array",
    "released",
    "to_array",
]

_PYTHON_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def to_array(data: Any, dtype: Any = None, op: str = "tensor") -> tuple[np.ndarray[Any, Any], bool]:
    """A fresh read-only array of a supported dtype, and whether it is weakly typed.

    Python scalars are weak (they promote like numpy's Python scalars, NEP 50)
    unless ``dtype`` is given; any other dtype outside the seven is rejected.
    """
    weak = False
    target = None
    if dtype is not None:
        target = as_dtype(dtype, op)
    elif type(data) in _PYTHON_DTYPES:
        target = np.dtype(_PYTHON_DTYPES[type(data)])
        weak = True
    try:
        array = np.array(data, dtype=target, copy=True)
    except OverflowError as error:
        raise ScalarOverflowError(op, f"{data!r} does not fit {target}: {error}") from None
    except (TypeError, ValueError) as error:
        raise DTypeError(op, f"cannot make a tensor of {type(data).__name__}: {error}") from None
    except MemoryError as error:
        raise AllocationError(op, str(error)) from None
    as_dtype(array.dtype, op)
    array.flags.writeable = False
    return array, weak


class Tensor(TensorMethods):
    """An immutable array, evaluated eagerly, without automatic differentiation.

    ``Tensor(data, dtype=None)`` copies ``data`` (an array, nested sequence or
    scalar). Supports numpy interop (``np.asarray(t)``, ``t.numpy()``) and every
    function of the tenferro surface, operators and methods included.
    """

    __slots__ = ("_value", "meta")
    _priority: ClassVar[float] = 0

    _value: Any
    meta: Meta

    def __init__(self, data: Any, dtype: Any = None) -> None:
        if isinstance(data, Tensor) and type(data) is not Borrowed and dtype is None:
            self._value, self.meta = data._value, data.meta
            return
        array, weak = to_array(data, dtype)
        self._value = array
        self.meta = Meta(array.shape, array.dtype, weak)

    @classmethod
    def _convert(cls, data: Any, dtype: Any, op: str) -> Any:
        """``Tensor(data, dtype)``, with conversion errors naming ``op``. A (nested) list
        or tuple holding traced or tracked tensors is stacked into a tensor of their kind
        (``tf.array([x[0], x[1]])`` inside a transform; a numpy array of them would drop
        them from the graph or tape)."""
        try:
            array, weak = to_array(data, dtype, op)
        except DTypeError:
            if type(data) in (list, tuple) and _holds_tensor(data):
                return _stacked(data, dtype, op)
            raise
        return cls._wrap(array, weak)

    @classmethod
    def _wrap(cls, value: Any, weak: bool = False) -> Tensor:
        tensor = object.__new__(cls)
        tensor._value = value
        tensor.meta = Meta(np.shape(value), value.dtype, weak)
        return tensor

    @classmethod
    def _scalar_operand(cls, meta: Meta, value: Any) -> Tensor:
        """The operand of ``meta`` that stands for a Python number in ``tensor op number``:
        ``value`` is the number as a numpy scalar of ``meta``'s dtype (rank 0), which the
        ufunc primitive it is given to broadcasts. Made per call; never returned to users
        (see :mod:`tenferro.surface.math`)."""
        tensor = object.__new__(cls)
        tensor._value = value
        tensor.meta = meta
        return tensor

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Tensor], like: Any = None
    ) -> tuple[Tensor, ...]:
        # As EagerTensor._bind evaluates (the common arities without a list or extra
        # frames), and the results take the primitive's output metas where the arrays
        # match them (no Meta rebuilt per result): this is the plain kind's hot path.
        count = len(operands)
        token = _set_errors(IGNORE)  # IEEE special values are data: no warnings
        try:
            ufunc = op.ufunc
            if ufunc is not None and count == 2:
                values: Sequence[Any] = (ufunc(operands[0]._value, operands[1]._value),)
            elif ufunc is not None and count == 1:
                values = (ufunc(operands[0]._value),)
            elif op.direct_impl and count == 1:
                values = (op.impl(operands[0]._value),)
            elif op.direct_impl and count == 2:
                values = (op.impl(operands[0]._value, operands[1]._value),)
            else:
                values = op.eval([o._value for o in operands], None)
        except MemoryError as error:
            raise AllocationError(op.name, str(error)) from None
        finally:
            _reset_errors(token)
        outputs = op.outputs
        if len(values) == 1:
            return (_result(values[0], outputs[0]),)
        return tuple([_result(v, m) for v, m in zip(values, outputs, strict=True)])

    @classmethod
    def _full(cls, meta: Meta, value: Any) -> Tensor:
        """A constant of ``meta`` filled with the Python scalar ``value`` (a broadcast view)."""
        return cls._wrap(filled(meta, value), meta.weak)

    def _rewrap(self, meta: Meta) -> Tensor:
        tensor = object.__new__(Tensor)
        tensor._value, tensor.meta = self._value, meta
        return tensor

    @classmethod
    def _lift(cls, value: Any) -> Tensor:
        raise TypeError(f"cannot use {type(value).__name__} as a concrete Tensor")

    def numpy(self) -> np.ndarray[Any, Any]:
        """The data as a (read-only) numpy array."""
        return self._export("numpy")

    def _export(self, op: str) -> np.ndarray[Any, Any]:
        """The data as a read-only array, for a conversion ``op`` to other libraries."""
        return _read_only(self._value)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        return np.asarray(self._value).item()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        array = self._export("np.asarray")
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        if copy:
            return array.copy()
        return array

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """The data as a DLPack capsule (``np.from_dlpack(t)``, ``torch.from_dlpack(t)``):
        shared and marked read-only for consumers of DLPack 1.0; a copy for older ones,
        which cannot mark memory read-only (``copy=False`` then raises ``BufferError``)."""
        array = self._export("__dlpack__")
        if copy:
            array = array.copy()
        try:
            return array.__dlpack__(
                stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
            )
        except BufferError:
            if copy is False or array.flags.writeable:
                raise
            return array.copy().__dlpack__(
                stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
            )

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``: the CPU (DLPack's device type 1)."""
        return (1, 0)

    def __bool__(self) -> bool:
        return bool(np.asarray(self._value))

    def __float__(self) -> float:
        return float(np.asarray(self._value))

    def __int__(self) -> int:
        return int(np.asarray(self._value))

    def __complex__(self) -> complex:
        return complex(np.asarray(self._value))

    def __index__(self) -> int:
        if self.meta.dtype.kind != "i" or self.meta.shape != ():
            raise TypeError("only integer scalar tensors can be used as an index")
        return int(np.asarray(self._value))

    def __len__(self) -> int:
        if not self.meta.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.meta.shape[0]

    def __iter__(self) -> Any:
        for index in range(len(self)):
            yield self[index]

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.meta.dtype})"

    def __reduce__(self) -> Any:
        return (Tensor, (np.asarray(self._value), self.meta.dtype))


def _holds_tensor(data: Any) -> bool:
    """Whether the nested lists and tuples ``data`` hold a tensor of some kind."""
    pending = [data]
    while pending:
        item = pending.pop()
        if type(item) in (list, tuple):
            pending.extend(item)
        elif getattr(type(item), "_priority", None) is not None:
            return True
    return False


def _stacked(data: Any, dtype: Any, op: str) -> Any:
    """The nested lists and tuples ``data`` (tensors, numbers, arrays) as one tensor of
    the highest kind among its tensors: each level stacked along a new leading axis, the
    elements promoted together (Python numbers weakly) and converted to ``dtype`` when
    given."""

    def build(item: Any) -> Any:
        if getattr(type(item), "_priority", None) is not None:
            return item
        if type(item) not in (list, tuple) or not _holds_tensor(item):
            return Tensor._convert(item, None, op)
        parts = lift([build(element) for element in item])
        shapes = sorted({part.meta.shape for part in parts})
        if len(shapes) > 1:
            raise ShapeError(
                op,
                f"the elements of one level have different shapes {shapes}: no tensor holds them",
            )
        target = promote_types(*((p.meta.dtype, p.meta.weak) for p in parts), op=op)
        weak = all(p.meta.weak for p in parts)
        rows = [
            lax.reshape(
                p if p.meta.dtype == target else lax.convert_element_type(p, target, weak),
                (1, *shapes[0]),
            )
            for p in parts
        ]
        return lax.concatenate(rows, 0)

    result = build(data)
    if dtype is not None:
        result = lax.convert_element_type(result, as_dtype(dtype, op))
    return result


_set_errors = error_state.set
_reset_errors = error_state.reset
_new = object.__new__


def _result(value: Any, meta: Meta) -> Tensor:
    """A plain tensor of a primitive's result ``value``, declared by ``meta``."""
    tensor = _new(Tensor)
    tensor._value = value
    if (
        isinstance(value, (np.ndarray, np.generic))
        and value.dtype == meta.dtype
        and value.shape == meta.shape
        and not meta.dynamic
    ):
        tensor.meta = meta
    else:  # extents known only now, or a value unlike its declaration
        tensor.meta = Meta(np.shape(value), value.dtype, meta.weak)
    return tensor


class Borrowed(Tensor):
    """A concrete operand whose array is a read-only view of the caller's numpy array,
    not a copy: what an operation on plain numpy data consumes.

    Tensors are immutable, and a caller may write into their array after the call, so a
    borrowed buffer must never outlive the operation that consumed it. Nothing keeps
    it: results are plain ``Tensor``s, copied where they may share memory with a
    borrowed operand (a reshape, a transpose, a slice, ...); lifting it into a tape or a
    trace (where it would be kept for a later backward, or frozen) copies it; and
    ``tf.asarray`` returns an owned copy. An operation whose result does not alias its
    operands therefore reads the caller's data without copying it.
    """

    __slots__ = ()
    _priority: ClassVar[float] = 0.5  # above Tensor: mixed operands bind here, guarded

    @classmethod
    def _borrow(cls, array: np.ndarray[Any, Any]) -> Borrowed:
        """``array`` (of a supported dtype, not copied) as a borrowed operand."""
        view = array.view()
        view.flags.writeable = False  # tenferro never writes into the caller's buffer
        tensor = object.__new__(cls)
        tensor._value = view
        tensor.meta = Meta(view.shape, view.dtype, False)
        return tensor

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Tensor], like: Any = None
    ) -> tuple[Tensor, ...]:
        results = Tensor._bind(op, operands)
        for result in results:
            value = result._value
            if isinstance(value, np.ndarray) and value.base is not None:  # a view: of what?
                roots = borrowed_roots(operands)
                return tuple(
                    [Tensor._wrap(owned_array(r._value, roots), r.meta.weak) for r in results]
                )
        return results  # fresh arrays: they share memory with nothing

    @classmethod
    def _lift(cls, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            return value  # a plain Tensor's array is its own: Borrowed._bind reads it
        raise TypeError(f"cannot use {type(value).__name__} as a concrete Tensor")

    def _rewrap(self, meta: Meta) -> Tensor:
        tensor = object.__new__(Borrowed)
        tensor._value, tensor.meta = self._value, meta
        return tensor

    def _owned(self) -> Tensor:
        """A plain ``Tensor`` holding a copy of the borrowed data."""
        return Tensor._wrap(self._value.copy(), self.meta.weak)


def memory_root(array: Any) -> Any:
    """The object that owns ``array``'s memory: the end of its chain of bases."""
    while True:
        base = getattr(array, "base", None)
        if base is None:
            return array
        array = base


def borrowed_roots(operands: Sequence[Any]) -> frozenset[int]:
    """The owners (by ``id``) of the memory of the borrowed ones among ``operands``."""
    return frozenset([id(memory_root(o._value)) for o in operands if type(o) is Borrowed])


def owned_array(value: Any, roots: frozenset[int]) -> Any:
    """``value``, or a copy of it where it is a view into memory one of ``roots`` owns
    (a caller's buffer, see :func:`borrowed_roots`): what a result that outlives the
    call may hold. An array with no base owns its memory: one of the roots itself,
    or a fresh array, which shares memory with nothing."""
    if roots and isinstance(value, np.ndarray):
        root = value if value.base is None else memory_root(value)
        if id(root) in roots:
            return value.copy()
    return value


def released(result: Any, roots: frozenset[int]) -> Any:
    """``result`` (a pytree) with every concrete tensor that is a view into memory one
    of ``roots`` owns replaced by a copy (see :func:`owned_array`)."""
    if not roots:
        return result
    leaves, treedef = flatten(result)
    for i, leaf in enumerate(leaves):
        if type(leaf) is Tensor:
            array = owned_array(leaf._value, roots)
            if array is not leaf._value:
                leaves[i] = Tensor._wrap(array, leaf.meta.weak)
    return unflatten(treedef, leaves)


def filled(meta: Meta, value: Any) -> np.ndarray[Any, Any]:
    """A read-only array of ``meta``'s shape and dtype holding ``value`` everywhere: a
    zero-strided view of one element, made at each call (no cache holds the value)."""
    token = quiet()  # a Python float beyond float32 becomes inf: data
    try:
        element = np.asarray(value, dtype=meta.dtype)[()]  # a numpy scalar: read-only
    finally:
        restore(token)
    return np.ndarray(meta.shape, meta.dtype, element, 0, (0,) * len(meta.shape))


def _read_only(value: Any) -> np.ndarray[Any, Any]:
    """``value`` as an array the caller cannot write into (tensor data is shared, never
    copied, so it is made read-only where it escapes to user code)."""
    array = np.asarray(value)
    if array.flags.writeable:
        array.flags.writeable = False
    return array
