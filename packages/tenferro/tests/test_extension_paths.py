"""Extension families are checked the same way on every evaluation path, every time.

Regression: generated straight-line code called the inherited ``kernel()`` and so
skipped the result checks of ``ExtensionOp.eval`` from the second run of a program on
(a tuple result became an extra axis, a wrong dtype passed silently). Each path below
runs three times: the first run compiles, later ones take the generated-code tier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax


def _double_jvp(xs: Any, ys: Any, ts: Any) -> list[Any]:
    return [lax.mul(ts[0], lax.full_like(xs[0], 2.0))]


doubled = tf.extension.define(
    "test.paths.doubled",
    infer=lambda m: m,
    impl=lambda x: (np.asarray(x) * 2.0,),  # a one-tuple: must not become an extra axis
    jvp=_double_jvp,
)
wrong_dtype = tf.extension.define(
    "test.paths.wrong_dtype",
    infer=lambda m: m,
    impl=lambda x: np.asarray(x, np.float32),
    jvp=_double_jvp,
)
wrong_shape = tf.extension.define(
    "test.paths.wrong_shape",
    infer=lambda m: m,
    impl=lambda x: np.asarray(x)[None],
    jvp=_double_jvp,
)
wrong_count = tf.extension.define(
    "test.paths.wrong_count",
    infer=lambda m: m,
    impl=lambda x: (np.asarray(x), np.asarray(x)),
    jvp=_double_jvp,
)

X = np.array([1.0, -2.0, 0.5])


def _loss(family: Any) -> Callable[[Any], Any]:
    return lambda x: tf.sum(tf.sin(family(x)))


def _eager_backward(family: Any) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        t = tf.EagerTensor(x, requires_grad=True)
        _loss(family)(t).backward()
        return t.grad

    return run


def _eager_replay(family: Any) -> Callable[[Any], Any]:
    """Backward through a checkpointed segment replays the family from saved inputs."""

    def run(x: Any) -> Any:
        t = tf.EagerTensor(x, requires_grad=True)
        tf.checkpoint(_loss(family))(t).backward()
        return t.grad

    return run


PATHS: dict[str, Callable[[Any], Callable[[Any], Any]]] = {
    "tensor": lambda family: lambda x: family(tf.Tensor(x)),
    "traced_eval": lambda family: lambda x: family(tf.traced(x)).eval(),
    "jit": lambda family: tf.jit(lambda x: family(x)),
    "grad": lambda family: tf.grad(_loss(family)),
    "hvp": lambda family: lambda x: tf.hvp(_loss(family), (x,), (np.ones_like(x),)),
    "eager_backward": _eager_backward,
    "eager_replay": _eager_replay,
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_correct_family_gives_the_same_result_every_run(path):
    run = PATHS[path](doubled)
    results = [np.asarray(run(X)) for _ in range(3)]
    for result in results:
        assert result.shape == X.shape
        np.testing.assert_array_equal(result, results[0])


@pytest.mark.parametrize("family", [wrong_dtype, wrong_shape, wrong_count], ids=lambda f: f.name)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_wrong_result_is_rejected_on_every_run(path, family):
    run = PATHS[path](family)
    for _ in range(3):
        with pytest.raises(tf.ExecutionError, match=family.name):
            run(X)
