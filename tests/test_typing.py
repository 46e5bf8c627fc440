"""A type checker sees tenferro's public surface with real types.

``mypy --strict`` runs on user code that uses many public names: each function gives
back the tensor kind it was given (``tf.exp(x: T) -> T`` for every tensor kind, plain
data gives a ``Tensor``), and code that confuses kinds is rejected (so the types are
not ``Any``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

pytestmark = pytest.mark.slow  # each test runs mypy --strict on a file of user code

ROOT = Path(__file__).resolve().parents[1]

USER_CODE = """
import numpy as np
import tenferro as tf
from tenferro import lax
from tenferro.typing import TensorT


def step(x: TensorT, h: float) -> TensorT:
    return x - h * tf.sin(x)


a = np.ones((3, 3))
t = tf.Tensor(a)
e = tf.tensor(a, requires_grad=True)
g = tf.traced(a)
p = tf.placeholder((3, 3))
REVEAL
"""

EXPECTED = {
    "tf.exp(t)": "tenferro.concrete.Tensor",
    "tf.softmax(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.logsumexp(g, axis=0)": "tenferro.traced.tensor.TracedTensor",
    "tf.argmax(t, 0)": "tenferro.concrete.Tensor",
    "tf.erf(a)": "tenferro.concrete.Tensor",
    "tf.cumsum(e, axis=1)": "tenferro.eager.tensor.EagerTensor",
    "tf.kron(g, a)": "tenferro.traced.tensor.TracedTensor",
    "tf.cross(e, e)": "tenferro.eager.tensor.EagerTensor",
    "tf.nanmean(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.exp(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.tanh(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.sin(a)": "tenferro.concrete.Tensor",
    "tf.sqrt([1.0, 2.0])": "tenferro.concrete.Tensor",
    "tf.add(e, 1.0)": "tenferro.eager.tensor.EagerTensor",
    "tf.multiply(2.0, g)": "tenferro.traced.tensor.TracedTensor",
    "tf.subtract(p, g)": "tenferro.traced.tensor.TracedTensor",
    "tf.maximum(e, 0.0)": "tenferro.eager.tensor.EagerTensor",
    "tf.less(g, 0.5)": "tenferro.traced.tensor.TracedTensor",
    "tf.sum(g, axis=0)": "tenferro.traced.tensor.TracedTensor",
    "tf.mean(e, axis=(0, 1), keepdims=True)": "tenferro.eager.tensor.EagerTensor",
    "tf.max(t)": "tenferro.concrete.Tensor",
    "tf.reshape(e, (9,))": "tenferro.eager.tensor.EagerTensor",
    "tf.transpose(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.matmul(e, e)": "tenferro.eager.tensor.EagerTensor",
    "tf.matmul(a, a)": "tenferro.concrete.Tensor",
    "tf.isnan(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.astype(g, tf.float32)": "tenferro.traced.tensor.TracedTensor",
    "tf.zeros_like(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.zeros((2,))": "tenferro.concrete.Tensor",
    "tf.eye(3)": "tenferro.concrete.Tensor",
    "tf.asarray(a)": "tenferro.concrete.Tensor",
    "tf.asarray(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.asarray(a, requires_grad=True)": "tenferro.eager.tensor.EagerTensor",
    "tf.where(g > 0, g, 0.0)": "tenferro.traced.tensor.TracedTensor",
    "tf.where(a > 0, 1.0, e)": "tenferro.eager.tensor.EagerTensor",
    "tf.where(e > 0, 1.0, 0.0)": "tenferro.eager.tensor.EagerTensor",
    "tf.where(a > 0, a, 0.0)": "tenferro.concrete.Tensor",
    "tf.concatenate([e, e], axis=1)": "tenferro.eager.tensor.EagerTensor",
    "tf.stack([g, p])": "tenferro.traced.tensor.TracedTensor",
    "tf.stack([a, a], 1)": "tenferro.concrete.Tensor",
    "tf.tensordot(e, a, axes=1)": "tenferro.eager.tensor.EagerTensor",
    "tf.vecdot(a, g, axis=0)": "tenferro.traced.tensor.TracedTensor",
    "tf.take(g, [0, 2], axis=1)": "tenferro.traced.tensor.TracedTensor",
    "tf.getitem(e, (0, slice(1, None)))": "tenferro.eager.tensor.EagerTensor",
    "tf.complex(e, e)": "tenferro.eager.tensor.EagerTensor",
    "e[0, ::2]": "tenferro.eager.tensor.EagerTensor",
    "e + 1": "tenferro.eager.tensor.EagerTensor",
    "g @ g": "tenferro.traced.tensor.TracedTensor",
    "e.T": "tenferro.eager.tensor.EagerTensor",
    "g.mH": "tenferro.traced.tensor.TracedTensor",
    "e.sum(axis=0)": "tenferro.eager.tensor.EagerTensor",
    "round(t, 2)": "tenferro.concrete.Tensor",
    "f'{e.sum():.3f}'": "str",
    # lax: tensors in, the same kind out (Python numbers beside them are rank-0 operands)
    "lax.exp(t)": "tenferro.concrete.Tensor",
    "lax.tanh(g)": "tenferro.traced.tensor.TracedTensor",
    "lax.add(e, 1.0)": "tenferro.eager.tensor.EagerTensor",
    "lax.mul(2.0, g)": "tenferro.traced.tensor.TracedTensor",
    "lax.select(g > 0, g, 0.0)": "tenferro.traced.tensor.TracedTensor",
    "lax.dot_general(e, e, (1,), (0,))": "tenferro.eager.tensor.EagerTensor",
    "lax.reduce_sum(g, (0,))": "tenferro.traced.tensor.TracedTensor",
    "lax.concatenate([e, e], 0)": "tenferro.eager.tensor.EagerTensor",
    "lax.full_like(t, 2.0)": "tenferro.concrete.Tensor",
    "lax.convert_element_type(e, np.float32)": "tenferro.eager.tensor.EagerTensor",
    "tf.algebra.matmul(g, g)": "tenferro.traced.tensor.TracedTensor",
    # linalg: one tensor, or named tuples of the operand's kind (data gives Tensors)
    "tf.linalg.svd(g).U": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.svd(a).S": "tenferro.concrete.Tensor",
    "tf.linalg.truncated_svd(e, max_rank=2).Vh": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.eigh(e).eigenvectors": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.eig(g)[0]": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.qr(e).R": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.qr(g, mode='r')": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.lu(g).P": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.lu_solve(tf.linalg.lu_factor(e), a)": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.slogdet(t).logabsdet": "tenferro.concrete.Tensor",
    "tf.linalg.lstsq(g, a).solution": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.solve(e, a)": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.inv(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.det(a)": "tenferro.concrete.Tensor",
    "tf.linalg.norm(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.svdvals(g)": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.pinv(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.multi_dot([g, g, g])": "tenferro.traced.tensor.TracedTensor",
    "tf.linalg.matrix_exp(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.linalg.solve_triangular(g, a, upper=True)": "tenferro.traced.tensor.TracedTensor",
    # einsum and the rest of the surface
    "tf.einsum('ij,jk->ik', e, a)": "tenferro.eager.tensor.EagerTensor",
    "tf.einsum('ij,jk->ik', a, g)": "tenferro.traced.tensor.TracedTensor",
    "tf.einsum('ij,jk->ik', a, a)": "tenferro.concrete.Tensor",
    "tf.split(g, 3)": "list[tenferro.traced.tensor.TracedTensor]",
    "tf.angle(e)": "tenferro.eager.tensor.EagerTensor",
    "tf.stop_gradient(g)": "tenferro.traced.tensor.TracedTensor",
    # a user's function generic in the kind, with tenferro.typing.TensorT
    "step(g, 0.1)": "tenferro.traced.tensor.TracedTensor",
    "step(e, 0.1)": "tenferro.eager.tensor.EagerTensor",
}


def _mypy(code: str, tmp_path: Path) -> tuple[str, int]:
    source = tmp_path / "user_code.py"
    source.write_text(textwrap.dedent(code))
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(source),
        ]
    )
    return stdout + stderr, status


def test_mypy_strict_sees_the_kind_each_function_returns(tmp_path):
    reveals = "\n".join(f"reveal_type({expression})" for expression in EXPECTED)
    output, status = _mypy(USER_CODE.replace("REVEAL", reveals), tmp_path)
    assert status == 0, output
    revealed = [
        line.split('Revealed type is "')[1].rstrip('"')
        for line in output.splitlines()
        if "Revealed type is" in line
    ]
    assert dict(zip(EXPECTED, revealed, strict=True)) == EXPECTED


def test_mypy_strict_rejects_confused_kinds(tmp_path):
    wrong = (
        "x: tf.Tensor = tf.exp(g)\ny: tf.TracedTensor = tf.sum(e)\nz: tf.EagerTensor = tf.ones(3)\n"
        "u: tf.Tensor = lax.exp(g)\nv: tf.EagerTensor = tf.linalg.svd(g).U\n"
        "w: tf.Tensor = tf.einsum('ij->ji', g)\n"
    )
    output, status = _mypy(USER_CODE.replace("REVEAL", wrong), tmp_path)
    assert status == 1
    assert output.count("Incompatible types in assignment") == 6, output


TRANSFORMED = """
import tenferro as tf

def h(x: tf.Tensor, scale: float = 1.0) -> tf.Tensor:
    return tf.sum(x * scale)

REVEAL
"""

SIGNATURE = "x: tenferro.concrete.Tensor, scale: float ="
TRANSFORMS = {
    "tf.jit(h)": f"def ({SIGNATURE}) -> tenferro.concrete.Tensor",
    "tf.vmap(h)": f"def ({SIGNATURE}) -> tenferro.concrete.Tensor",
    "tf.checkpoint(h)": f"def ({SIGNATURE}) -> tenferro.concrete.Tensor",
    "tf.composite(h)": f"def ({SIGNATURE}) -> tenferro.concrete.Tensor",
    "tf.value_and_grad(h)": f"def ({SIGNATURE}) -> tuple[tenferro.concrete.Tensor, Any]",
    "tf.grad(h)": f"def ({SIGNATURE}) -> Any",
    "tf.jacfwd(h)": f"def ({SIGNATURE}) -> Any",
    "tf.jacrev(h)": f"def ({SIGNATURE}) -> Any",
    "tf.hessian(h)": f"def ({SIGNATURE}) -> Any",
}


def test_transforms_keep_the_signature_of_the_function_they_transform(tmp_path):
    """``jit``/``vmap``/``checkpoint`` keep the whole type; the derivative transforms keep
    the parameters (their results are pytrees shaped by ``argnums``: ``Any``)."""
    reveals = "\n".join(f"reveal_type({expression})" for expression in TRANSFORMS)
    output, status = _mypy(TRANSFORMED.replace("REVEAL", reveals), tmp_path)
    assert status == 0, output
    revealed = [
        line.split('Revealed type is "')[1].rstrip('"')
        for line in output.splitlines()
        if "Revealed type is" in line
    ]
    assert dict(zip(TRANSFORMS, revealed, strict=True)) == TRANSFORMS


def test_mypy_strict_rejects_wrong_calls_of_transformed_functions(tmp_path):
    wrong = 'tf.grad(h)(tf.ones(2), 1.0, 2.0)\ntf.jit(h)(tf.ones(2), scale="big")\n'
    output, status = _mypy(TRANSFORMED.replace("REVEAL", wrong), tmp_path)
    assert status == 1
    assert "Too many arguments" in output, output
    assert 'Argument "scale"' in output, output
