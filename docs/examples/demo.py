"""The stack's showcase (``make demo``).

computegraph: build two graphs that share structure, resolve, materialise with CSE,
compile once, evaluate many times, and cache. tenferro: gradients, the printed
linear graph of a JVP, complex gradients, Hessian-vector products both ways, and
cached transforms. It checks every number it prints and reports timings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tenferro as tf
from computegraph import (
    External,
    GraphBuilder,
    Local,
    ProgramCache,
    compile,
    materialize_merge,
    resolve,
)


@dataclass(frozen=True)
class Op:
    name: str
    arity: int

    def input_count(self) -> int:
        return self.arity

    def output_count(self) -> int:
        return 1

    def eval(self, xs: Sequence[float], ctx: Any) -> list[float]:
        match self.name:
            case "add":
                return [xs[0] + xs[1]]
            case "mul":
                return [xs[0] * xs[1]]
            case "exp":
                return [math.exp(xs[0])]
            case "tanh":
                return [math.tanh(xs[0])]
        raise ValueError(self.name)

    def __str__(self) -> str:
        return self.name


ADD, MUL, EXP, TANH = Op("add", 2), Op("mul", 2), Op("exp", 1), Op("tanh", 1)


def check(label: str, got: float, want: float) -> None:
    ok = math.isclose(got, want, rel_tol=1e-12)
    print(f"  {'ok ' if ok else 'BAD'} {label}: {got:.12g} (expected {want:.12g})")
    if not ok:
        raise SystemExit(f"demo check failed: {label}")


def check_arrays(label: str, got: Any, want: Any, tol: float) -> None:
    error = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    ok = error <= tol
    print(f"  {'ok ' if ok else 'BAD'} {label}: max difference {error:.2e} (tolerance {tol:g})")
    if not ok:
        raise SystemExit(f"demo check failed: {label}")


def main() -> None:
    print("computegraph: build -> resolve -> materialize_merge -> compile -> eval\n")

    # f(x, a) = exp(a * x), built once.
    primal = GraphBuilder()
    x = primal.add_input("x")
    a = primal.add_input("a")
    (ax,) = primal.add_operation(MUL, [Local(a), Local(x)])
    (f,) = primal.add_operation(EXP, [Local(ax)])
    primal.set_outputs([f])
    g0 = primal.build()
    print(g0, "\n")

    # g = tanh(exp(a * x)) + exp(a * x), built in a second graph that rebuilds
    # exp(a * x) from the shared key a*x: CSE merges it with the first graph's.
    second = GraphBuilder()
    second.add_parent(g0)
    (again,) = second.add_operation(EXP, [External(g0.key_of(ax))])
    (t,) = second.add_operation(TANH, [Local(again)])
    (g,) = second.add_operation(ADD, [Local(t), Local(again)])
    second.set_outputs([g])
    g1 = second.build()
    print(g1, "\n")

    materialized = materialize_merge(resolve(g1), [g0.key_of(f), g1.key_of(g)])
    print(materialized, "\n")
    program = compile(materialized)
    print(program, "\n")

    xv, av = 0.7, -1.3
    fv, gv = program.eval_with({"x": xv, "a": av})
    check("f = exp(a x)", fv, math.exp(av * xv))
    check("g = tanh(f) + f", gv, math.tanh(math.exp(av * xv)) + math.exp(av * xv))
    check("shared exp evaluated once", float(len(materialized.operation_keys)), 4.0)

    # Compile once, evaluate many; a program cache keyed by structure.
    cache = ProgramCache()
    start = time.perf_counter()
    for _ in range(100):
        cache.get_or_compile(g1, [g1.key_of(g)]).eval_with({"x": xv, "a": av})
    elapsed = time.perf_counter() - start
    stats = cache.stats()
    print(
        f"\n  100 cached calls: {elapsed / 100 * 1e6:.1f} us per call "
        f"({stats.misses} compile, {stats.hits} cache hits)"
    )

    # A 100,000-operation chain: no recursion anywhere.
    start = time.perf_counter()
    chain = GraphBuilder()
    value = chain.add_input("x")
    for _ in range(100_000):
        (value,) = chain.add_operation(TANH, [Local(value)])
    big = chain.build()
    big_program = compile(materialize_merge(resolve(big), [big.key_of(value)]))
    (result,) = big_program.eval([1.0])
    print(
        f"  100,000-op chain built, compiled and evaluated in "
        f"{time.perf_counter() - start:.2f} s; tanh^100000(1) = {result:.6g}"
    )


def tenferro_showcase() -> None:
    print("\ntenferro: numpy-style tensors with JAX-grade AD\n")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 64)) / 8
    x, v = rng.standard_normal(64), rng.standard_normal(64)

    def loss(x: Any) -> Any:
        return tf.sum(tf.tanh(tf.asarray(w) @ x) ** 2)

    # Reverse mode against a central finite difference along v.
    gradient = np.asarray(tf.grad(loss)(x))
    h = 1e-6
    fd = (float(loss(x + h * v)) - float(loss(x - h * v))) / (2 * h)
    ok = math.isclose(float(gradient @ v), fd, rel_tol=1e-7)
    print(
        f"  {'ok ' if ok else 'BAD'} grad . v = {gradient @ v:.10f} (finite difference {fd:.10f})"
    )
    if not ok:
        raise SystemExit("demo check failed: gradient")

    # The linear graph of a JVP: tangent operands marked active, primal values fixed.
    t = tf.traced(np.array([0.5, 1.0]), name="t")
    print("\n  linear graph of d/dt sum(sin(t) * t):")
    print("  " + tf.format_graph(tf.sum(tf.sin(t) * t).jvp(t, tf.ones(2))).replace("\n", "\n  "))

    # Complex numbers: PyTorch's convention, grad(sum |z|^2) = 2z.
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    print()
    check_arrays("grad sum|z|^2 = 2z", tf.grad(lambda z: tf.sum(tf.abs(z) ** 2))(z), 2 * z, 1e-14)

    # Hessian-vector products: forward over reverse equals reverse over reverse.
    forward_over_reverse = np.asarray(tf.hvp(loss, (x,), (v,)))
    reverse_over_reverse = np.asarray(
        tf.grad(lambda y: tf.vdot(tf.asarray(v), tf.grad(loss)(y)))(x)
    )
    check_arrays(
        "HVP forward-over-reverse vs reverse-over-reverse",
        forward_over_reverse,
        reverse_over_reverse,
        1e-12,
    )

    # Transforms cache their compiled programs by shapes and dtypes.
    hvp = tf.jit(lambda x, v: tf.hvp(loss, (x,), (v,)))
    start = time.perf_counter()
    hvp(x, v)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        hvp(x, v)
    steady = (time.perf_counter() - start) / 100
    print(f"  jit(hvp), n=64: first call {first * 1e3:.1f} ms, then {steady * 1e6:.0f} us per call")


if __name__ == "__main__":
    main()
    tenferro_showcase()
