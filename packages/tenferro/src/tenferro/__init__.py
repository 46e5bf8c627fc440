"""tenferro: dense tensors on numpy/scipy with JAX-grade AD and PyTorch-grade ergonomics.

``import tenferro as tf``:

* the seven dtypes (``tf.float32`` ... ``tf.bool_``);
* tensor kinds sharing one surface: :class:`Tensor` (eager, no AD),
  :class:`EagerTensor` (eager with a :class:`Tape`: ``backward()``, ``.grad``,
  ``tape.grad``/``vjp``/``jvp``/``hvp``, ``no_grad``) and :class:`TracedTensor`
  (lazy graph values with AD: ``tf.placeholder``, ``tf.traced``, ``.eval()``,
  ``.grad()``, ``.vjp()``, ``.jvp()``, ``.checkpoint()``);
* numpy-style functions (``tf.add``, ``tf.exp``, ``tf.sum``, ``tf.matmul``, indexing,
  ...), with numpy broadcasting and promotion made explicit as primitives;
* JAX-style transforms: ``tf.grad``, ``tf.value_and_grad``, ``tf.vjp``, ``tf.jvp``,
  ``tf.linearize``, ``tf.hvp``, ``tf.jit``, ``tf.vmap`` (batching), ``tf.jacfwd``,
  ``tf.jacrev``, ``tf.jacobian``, ``tf.hessian``; ``tf.stop_gradient``,
  ``tf.custom_jvp``, ``tf.custom_vjp`` and ``tf.tree_util`` (pytrees);
* ``tf.lax`` (one strict function per primitive), ``tf.ops`` (the primitives) and
  ``tf.extension`` (user-defined primitive families with their own AD rules).

Complex derivatives follow the conjugate convention: ``grad(sum(|z|^2)) = 2z``,
equal to PyTorch's and the conjugate of JAX's.
"""

import computegraph
from tenferro import extension, lax, ops, random, testing, tree_util
from tenferro.batching import vmap
from tenferro.custom_rules import custom_jvp, custom_vjp, stop_gradient
from tenferro.dtypes import (
    DTYPES,
    bool_,
    complex64,
    complex128,
    dtype,
    float32,
    float64,
    int32,
    int64,
)
from tenferro.eager import (
    EagerTensor,
    Tape,
    checkpoint,
    composite,
    default_tape,
    is_grad_enabled,
    no_grad,
)
from tenferro.einsum import einsum, einsum_path  # the function shadows the subpackage name
from tenferro.errors import (
    AllocationError,
    ArgumentTypeError,
    AxisError,
    BindingError,
    DTypeError,
    ExecutionError,
    InactiveError,
    IndexingError,
    LinAlgError,
    NonScalarError,
    ParameterError,
    ScalarOverflowError,
    ShapeError,
    TenferroError,
    UnsupportedError,
)
from tenferro.jacobians import hessian, jacfwd, jacobian, jacrev
from tenferro.meta import Meta
from tenferro.surface import *  # noqa: F403
from tenferro.surface import __all__ as _surface_names
from tenferro.surface.convert import register_concrete as _register_concrete
from tenferro.surface.dispatch import register_replayable as _register_replayable
from tenferro.tensor import Tensor
from tenferro.traced.program import evaluate, format_graph, graph_to_dot
from tenferro.traced.tensor import TracedTensor, placeholder, traced
from tenferro.transforms import grad, hvp, jit, jvp, linearize, value_and_grad, vjp

_register_concrete(Tensor)
_register_replayable(Tensor)  # concrete kinds replay cached dispatch (surface.dispatch)
_register_replayable(EagerTensor)

from tenferro import linalg  # noqa: E402  (uses the surface registered above)

__version__ = "0.1.0"

bool = bool_


def clear_caches() -> None:
    """Empty every cache of the stack: compiled, traced and derivative programs, function
    transforms, plans, primitive instances, constants (see :func:`cache_stats`)."""
    computegraph.clear_caches()


def cache_stats() -> dict[str, computegraph.CacheStats]:
    """Hits, misses, evictions, size and bound of every cache of the stack, by name."""
    return computegraph.cache_stats()


__all__ = [
    *_surface_names,
    "DTYPES",
    "EagerTensor",
    "AllocationError",
    "ArgumentTypeError",
    "AxisError",
    "BindingError",
    "DTypeError",
    "ExecutionError",
    "InactiveError",
    "IndexingError",
    "LinAlgError",
    "Meta",
    "NonScalarError",
    "ParameterError",
    "ScalarOverflowError",
    "ShapeError",
    "Tape",
    "TenferroError",
    "Tensor",
    "TracedTensor",
    "UnsupportedError",
    "bool_",
    "cache_stats",
    "checkpoint",
    "clear_caches",
    "composite",
    "complex64",
    "custom_jvp",
    "custom_vjp",
    "complex128",
    "default_tape",
    "dtype",
    "einsum",
    "einsum_path",
    "evaluate",
    "extension",
    "linalg",
    "float32",
    "float64",
    "format_graph",
    "grad",
    "graph_to_dot",
    "hessian",
    "hvp",
    "is_grad_enabled",
    "int32",
    "int64",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "no_grad",
    "linearize",
    "ops",
    "placeholder",
    "random",
    "stop_gradient",
    "testing",
    "traced",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
