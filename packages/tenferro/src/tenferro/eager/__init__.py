"""The eager tape: ``EagerTensor``, ``Tape``, ``no_grad`` (PyTorch-style reverse mode,
forward mode and higher order on :mod:`tidu.eager`, with the primitives' own rules)."""

from tenferro.eager.composite import composite
from tenferro.eager.mode import is_grad_enabled, no_grad
from tenferro.eager.tape import Tape, default_tape
from tenferro.eager.tensor import EagerTensor

__all__ = [
    "EagerTensor",
    "Tape",
    "composite",
    "default_tape",
    "is_grad_enabled",
    "no_grad",
]
