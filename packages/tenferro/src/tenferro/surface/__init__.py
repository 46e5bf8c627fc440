"""The numpy-style surface, written once for every tensor kind."""

import inspect as _inspect

from tenferro.surface.arrangement import *  # noqa: F403
from tenferro.surface.arrangement import __all__ as _arrangement_names
from tenferro.surface.bits import *  # noqa: F403
from tenferro.surface.bits import __all__ as _bits_names
from tenferro.surface.contraction import dot, inner, matmul, outer, tensordot, vdot, vecdot
from tenferro.surface.convert import astype, broadcast_to
from tenferro.surface.creation import (
    arange,
    array,
    asarray,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from tenferro.surface.index_tricks import c_, r_
from tenferro.surface.indexing import getitem, take
from tenferro.surface.math import *  # noqa: F403
from tenferro.surface.math import __all__ as _math_names
from tenferro.surface.numerics import *  # noqa: F403
from tenferro.surface.numerics import __all__ as _numerics_names
from tenferro.surface.padding import pad
from tenferro.surface.predicates import (
    iscomplex,
    iscomplexobj,
    isfinite,
    isinf,
    isnan,
    isreal,
    isrealobj,
)
from tenferro.surface.reductions import (
    all,
    amax,
    amin,
    any,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from tenferro.surface.sets import *  # noqa: F403
from tenferro.surface.sets import __all__ as _sets_names
from tenferro.surface.shapes import (
    cat,
    concatenate,
    diagonal,
    dynamic_truncate,
    expand_dims,
    flip,
    moveaxis,
    pad_to_match,
    permute_dims,
    ravel,
    reshape,
    rollaxis,
    squeeze,
    stack,
    swapaxes,
    trace,
    transpose,
    tril,
    triu,
)

__all__ = [
    *_arrangement_names,
    *_bits_names,
    *_math_names,
    *_numerics_names,
    *_sets_names,
    "all",
    "amax",
    "amin",
    "any",
    "arange",
    "array",
    "asarray",
    "astype",
    "broadcast_to",
    "cat",
    "concatenate",
    "count_nonzero",
    "diagonal",
    "dot",
    "dynamic_truncate",
    "expand_dims",
    "eye",
    "flip",
    "from_dlpack",
    "full",
    "full_like",
    "getitem",
    "inner",
    "c_",
    "iscomplex",
    "iscomplexobj",
    "isfinite",
    "isinf",
    "isnan",
    "isreal",
    "isrealobj",
    "r_",
    "linspace",
    "matmul",
    "max",
    "mean",
    "min",
    "moveaxis",
    "rollaxis",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "pad_to_match",
    "permute_dims",
    "prod",
    "ravel",
    "reshape",
    "squeeze",
    "stack",
    "std",
    "sum",
    "swapaxes",
    "take",
    "tensor",
    "tensordot",
    "trace",
    "transpose",
    "tril",
    "triu",
    "var",
    "vdot",
    "vecdot",
    "zeros",
    "zeros_like",
]


def _name_factory_functions() -> None:
    """Functions made by factories (``exp = _analytic("exp", ...)``) take their public
    name as ``__qualname__`` too, so Python's own argument errors name them:
    ``tf.add(x)`` raises ``TypeError: add() missing 1 required positional argument``."""
    for name in __all__:
        function = globals()[name]
        if _inspect.isfunction(function) and "<locals>" in function.__qualname__:
            function.__qualname__ = function.__name__


_name_factory_functions()
