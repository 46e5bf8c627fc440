"""JAX-style function transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``linearize``, ``hvp``, ``jit``, ``vmap``, ``jacfwd``/``jacrev``/``jacobian``/``hessian``,
``make_jaxpr`` (a function's program, printed), users' own rules (``custom_jvp``,
``custom_vjp``, ``stop_gradient``) and ``checkpoint``.

Called with concrete arguments (arrays, ``Tensor``s, Python scalars, or pytrees of
them), ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``linearize`` and ``hvp``
trace the function at every call, so they compute with the values it reads at
call time (closures, globals), as ``jax.grad`` does. What they cache is
*structure*: the derivative program of a traced computation is compiled once
per graph structure (arrays the function captured are program inputs, supplied
at each call) and reused by every later call, of any function, with the same
structure; the caches hold no user data. Scalars the function captures are
part of the structure (a changed scalar compiles a new program).

``jit`` traces once per argument signature and freezes what the function
captured, as ``jax.jit`` does (see :func:`jit`).

Called with traced arguments (inside another transform), a transform
differentiates symbolically and returns traced values, so transforms compose to
any order: ``grad(grad(f))``, ``jit(grad(f))``, ``jvp(grad(f), ...)`` (the HVP)
and so on. Inside a transform, arguments are fresh leaves standing for the
values passed (aliases), so a transform differentiates with respect to its own
arguments only, as in JAX.

One module per transform; :mod:`~tenferro.transforms.arguments`,
:mod:`~tenferro.transforms.validation` and :mod:`~tenferro.transforms.plans` hold
what they share (call arguments and their traced leaves, argument checks, compiled
programs and their caches).
"""

from tenferro.transforms.checkpoint import checkpoint
from tenferro.transforms.custom_rules import custom_jvp, custom_vjp, stop_gradient
from tenferro.transforms.grad import grad, value_and_grad
from tenferro.transforms.hvp import hvp
from tenferro.transforms.jacobians import hessian, jacfwd, jacobian, jacrev
from tenferro.transforms.jit import jit
from tenferro.transforms.jvp import jvp
from tenferro.transforms.linearize import linearize
from tenferro.transforms.make_jaxpr import make_jaxpr
from tenferro.transforms.plans import clear_caches
from tenferro.transforms.vjp import vjp
from tenferro.transforms.vmap import vmap
from tenferro.transforms.xla import default_backend

__all__ = [
    "checkpoint",
    "clear_caches",
    "custom_jvp",
    "custom_vjp",
    "default_backend",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "make_jaxpr",
    "stop_gradient",
    "value_and_grad",
    "vjp",
    "vmap",
]
