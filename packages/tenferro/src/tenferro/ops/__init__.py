"""``tenferro.ops``: the primitive catalogue.

One frozen dataclass per primitive, each a :class:`tidu.Primitive`, defined once
with its shape/dtype rule (``infer``), numpy evaluation (``impl``), JVP and
transpose rules. See :mod:`tenferro.lax` for the functions that apply them.
"""

from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.ops.analytic import Cos, Exp, Expm1, Log, Log1p, Pow, Rsqrt, Sin, Sqrt, Tanh
from tenferro.ops.contraction import DotGeneral
from tenferro.ops.dynamic import Constant, DynamicTruncate, PadToMatch, ShapeOf
from tenferro.ops.elementwise import (
    Abs,
    Add,
    Clamp,
    Compare,
    Complex,
    Conj,
    Div,
    Imag,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Real,
    Rem,
    Round,
    Select,
    Sign,
    Sub,
)
from tenferro.ops.indexing import (
    Concatenate,
    DynamicSlice,
    DynamicUpdateSlice,
    Gather,
    Pad,
    Scatter,
    Slice,
)
from tenferro.ops.reduction import ReduceMax, ReduceMin, ReduceProd, ReduceSum, ReduceSumSquares
from tenferro.ops.structural import (
    BroadcastInDim,
    Convert,
    EmbedDiag,
    ExtractDiag,
    Reshape,
    Reverse,
    Transpose,
    Tril,
    Triu,
)
from tenferro.ops.undefined import NoDerivative

__all__ = [
    "Abs",
    "Add",
    "AddAny",
    "BroadcastInDim",
    "Clamp",
    "Compare",
    "Complex",
    "Concatenate",
    "Conj",
    "Constant",
    "Convert",
    "Cos",
    "Div",
    "DotGeneral",
    "DynamicSlice",
    "DynamicTruncate",
    "DynamicUpdateSlice",
    "EmbedDiag",
    "Exp",
    "Expm1",
    "ExtractDiag",
    "Gather",
    "Imag",
    "Log",
    "Log1p",
    "Maximum",
    "Minimum",
    "Mul",
    "Neg",
    "NoDerivative",
    "Pad",
    "PadToMatch",
    "Pow",
    "Real",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquares",
    "Rem",
    "Reshape",
    "Reverse",
    "Round",
    "Rsqrt",
    "Scatter",
    "Select",
    "ShapeOf",
    "Sign",
    "Sin",
    "Slice",
    "Sqrt",
    "Sub",
    "Tanh",
    "TensorPrimitive",
    "Transpose",
    "Tril",
    "Triu",
]
