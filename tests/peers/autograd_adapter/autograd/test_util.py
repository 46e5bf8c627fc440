"""autograd's ``check_grads`` and ``combo_check`` over :func:`tenferro.testing.check_grads`
(forward and reverse mode against finite differences, to second order by default)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product
from typing import Any

import tenferro as tf


def check_grads(
    fun: Callable[..., Any], argnum: Any = 0, modes: Any = None, order: int = 2
) -> Callable[..., None]:
    positions = (argnum,) if isinstance(argnum, int) else tuple(argnum)

    def check(*args: Any, **kwargs: Any) -> None:
        def of_selected(*chosen: Any) -> Any:
            full = list(args)
            for position, value in zip(positions, chosen, strict=True):
                full[position] = value
            return fun(*full, **kwargs)

        tf.testing.check_grads(
            of_selected,
            [args[p] for p in positions],
            order=order,
            modes=tuple(modes or ("fwd", "rev")),
        )

    return check


def combo_check(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., None]:
    def _combo_check(*arg_lists: Any, **kwarg_lists: Any) -> None:
        pairs = [[(k, x) for x in xs] for k, xs in kwarg_lists.items()]
        for chosen in product(*arg_lists):
            for chosen_kwargs in product(*pairs):
                check_grads(fun, *args, **kwargs)(*chosen, **dict(chosen_kwargs))

    return _combo_check
