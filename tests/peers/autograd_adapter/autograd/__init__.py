"""HIPS autograd's API over tenferro, for running autograd's own tests on tenferro.

Not a port of autograd: each name maps onto the tenferro transform that does the same
job (``grad`` -> ``tf.grad``, ``jacobian`` -> ``tf.jacobian`` ...), and
``autograd.numpy`` resolves each function to tenferro's of the same name (numpy's
otherwise, which dispatches tensors to tenferro through ``__array_function__``). See
``tests/peers/run_autograd_tests.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import tenferro as tf

__all__ = [
    "elementwise_grad",
    "grad",
    "hessian",
    "jacobian",
    "make_jvp",
    "make_vjp",
    "tuple",
    "value_and_grad",
]

tuple = builtins.tuple  # autograd's differentiable tuple: tenferro's pytrees take tuples


def grad(fun: Callable[..., Any], argnum: Any = 0) -> Callable[..., Any]:
    return tf.grad(fun, argnums=argnum)


def value_and_grad(fun: Callable[..., Any], argnum: Any = 0) -> Callable[..., Any]:
    return tf.value_and_grad(fun, argnums=argnum)


def elementwise_grad(fun: Callable[..., Any], argnum: Any = 0) -> Callable[..., Any]:
    return tf.grad(lambda *args, **kwargs: tf.sum(fun(*args, **kwargs)), argnums=argnum)


def jacobian(fun: Callable[..., Any], argnum: Any = 0) -> Callable[..., Any]:
    return tf.jacobian(fun, argnums=argnum)


def hessian(fun: Callable[..., Any], argnum: Any = 0) -> Callable[..., Any]:
    return tf.hessian(fun, argnums=argnum)


def make_vjp(fun: Callable[..., Any], x: Any) -> Any:
    out, pullback = tf.vjp(fun, x)
    return (lambda g: pullback(g)[0]), out


def make_jvp(fun: Callable[..., Any], argnum: int = 0) -> Callable[..., Any]:
    def at(*args: Any) -> Callable[[Any], Any]:
        def push(v: Any) -> Any:
            def of_one(x: Any) -> Any:
                return fun(*args[:argnum], x, *args[argnum + 1 :])

            return tf.jvp(of_one, (args[argnum],), (v,))

        return push

    return at
