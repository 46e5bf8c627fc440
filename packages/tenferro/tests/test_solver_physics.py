"""The iterative solvers on tensor-network problems: a DMRG step's ground-state energy
differentiated through Lanczos obeys Hellmann-Feynman and finite differences; a
transfer matrix's dominant eigenvalue and its fixed-point environment, differentiated
through Arnoldi and through a fixed-point iteration, agree with each other, with the
dense eigendecomposition and with finite differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf

# ---------------------------------------------------------------------- a DMRG step

PAULI_X = np.array([[0.0, 1.0], [1.0, 0.0]])
PAULI_Z = np.diag([1.0, -1.0])


def ising_mpo(h: Any) -> Any:
    """The transverse-field Ising chain ``H = -sum Z Z - h sum X`` as an MPO tensor
    ``W[w_left, w_right, s_out, s_in]`` (lower triangular, bond 3)."""
    h = tf.asarray(h)
    zero, eye = np.zeros((2, 2)), np.eye(2)
    fixed = np.array(
        [[eye, zero, zero], [PAULI_Z, zero, zero], [zero, -PAULI_Z, eye]], dtype=np.float64
    )
    field = np.zeros((3, 3, 2, 2))
    field[2, 0] = -PAULI_X
    return tf.asarray(fixed) + h * tf.asarray(field)


def canonical_mps(sites: int, bond: int, rng: np.random.Generator) -> tuple[list[Any], list[Any]]:
    """Left-canonical tensors for the first half and right-canonical ones for the
    second (``[left, s, right]``), random."""
    left, right = [], []
    dim = 1
    for _ in range(sites // 2 - 1):
        out = min(bond, 2 * dim)
        q, _ = np.linalg.qr(rng.standard_normal((2 * dim, 2 * dim)))
        left.append(q[:, :out].reshape(dim, 2, out))
        dim = out
    dim = 1
    for _ in range(sites // 2 - 1):
        out = min(bond, 2 * dim)
        q, _ = np.linalg.qr(rng.standard_normal((2 * dim, 2 * dim)))
        right.insert(0, q[:, :out].T.reshape(out, 2, dim))
        dim = out
    return left, right


def environments(w: Any, left: list[Any], right: list[Any]) -> tuple[Any, Any]:
    boundary_left = np.zeros((1, 3, 1))
    boundary_left[0, 2, 0] = 1.0
    boundary_right = np.zeros((1, 3, 1))
    boundary_right[0, 0, 0] = 1.0
    env_l: Any = tf.asarray(boundary_left)
    for a in left:
        env_l = tf.einsum("awc,asb,wvst,ctd->bvd", env_l, a, w, a)
    env_r: Any = tf.asarray(boundary_right)
    for b in reversed(right):
        env_r = tf.einsum("asb,wvst,ctd,bvd->awc", b, w, b, env_r)
    return env_l, env_r


def effective_hamiltonian(w: Any, env_l: Any, env_r: Any) -> Any:
    """The two-site effective Hamiltonian, matrix-free: ``theta -> L W W R theta``."""

    def apply(theta: Any) -> Any:
        return tf.einsum("awc,wxsu,xyrv,byd,cuvd->asrb", env_l, w, w, env_r, theta)

    return apply


def dmrg_step_energy(h: Any, left: list[Any], right: list[Any]) -> Any:
    w = ising_mpo(h)
    env_l, env_r = environments(w, left, right)
    shape = (env_l.shape[0], 2, 2, env_r.shape[0])
    start = tf.ones(shape)
    energy, theta = tf.linalg.eigsh(effective_hamiltonian(w, env_l, env_r), k=1, v0=start)
    return energy[0], theta[..., 0]


def test_dmrg_ground_energy_gradient_is_hellmann_feynman_and_finite_differences():
    rng = np.random.default_rng(0)
    left, right = canonical_mps(8, 4, rng)
    h = 0.8
    energy, theta = dmrg_step_energy(h, left, right)

    # the same energy from the dense effective Hamiltonian
    w = ising_mpo(h)
    env_l, env_r = environments(w, left, right)
    dense = tf.einsum("awc,wxsu,xyrv,byd->asrbcuvd", env_l, w, w, env_r)
    size = int(np.prod(theta.shape))
    lowest = np.linalg.eigvalsh(np.asarray(tf.reshape(dense, (size, size))))[0]
    np.testing.assert_allclose(np.asarray(energy), lowest, atol=1e-12)

    gradient = tf.grad(lambda h: dmrg_step_energy(h, left, right)[0])(h)

    # Hellmann-Feynman: <theta| dH_eff/dh |theta>, dH_eff/dh by forward mode on the
    # operator alone (environments included), no eigensolver involved
    def applied(h: Any) -> Any:
        w = ising_mpo(h)
        return effective_hamiltonian(w, *environments(w, left, right))(tf.asarray(theta))

    _, derivative = tf.jvp(applied, (np.asarray(h),), (np.asarray(1.0),))
    hellmann_feynman = tf.sum(tf.asarray(theta) * derivative)
    np.testing.assert_allclose(np.asarray(gradient), np.asarray(hellmann_feynman), atol=1e-11)

    step = 1e-5
    finite = (
        float(np.asarray(dmrg_step_energy(h + step, left, right)[0]))
        - float(np.asarray(dmrg_step_energy(h - step, left, right)[0]))
    ) / (2 * step)
    np.testing.assert_allclose(np.asarray(gradient), finite, atol=1e-8)

    # on the tape too, and the second derivative against finite differences
    leaf = tf.EagerTensor(np.asarray(h), requires_grad=True)
    dmrg_step_energy(leaf, left, right)[0].backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), np.asarray(gradient), atol=1e-12)
    curvature = tf.grad(tf.grad(lambda h: dmrg_step_energy(h, left, right)[0]))(h)
    slope = lambda h: float(np.asarray(tf.grad(lambda h: dmrg_step_energy(h, left, right)[0])(h)))  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(curvature), (slope(h + step) - slope(h - step)) / (2 * step), atol=1e-6
    )


def test_dmrg_magnetisation_gradient_through_the_ground_state_vector():
    """An expectation value of the eigenvector (the transverse magnetisation on the two
    sites): its gradient needs the eigenvector's derivative; finite differences."""
    rng = np.random.default_rng(1)
    left, right = canonical_mps(8, 4, rng)

    def magnetisation(h: Any) -> Any:
        _, theta = dmrg_step_energy(h, left, right)
        flipped = tf.einsum("st,atrb->asrb", tf.asarray(PAULI_X), theta)
        return tf.sum(theta * flipped)

    h, step = 0.8, 1e-5
    gradient = float(np.asarray(tf.grad(magnetisation)(h)))
    finite = (
        float(np.asarray(magnetisation(h + step))) - float(np.asarray(magnetisation(h - step)))
    ) / (2 * step)
    np.testing.assert_allclose(gradient, finite, atol=1e-7)


# ---------------------------------------------------------------------- transfer matrices


def transfer(a: Any) -> Any:
    """The MPS transfer map ``X -> sum_s A_s X A_s^H`` (``A[left, s, right]``)."""

    def apply(x: Any) -> Any:
        return tf.einsum("asc,cd,bsd->ab", a, x, tf.conj(a))

    return apply


def dominant(a: Any) -> Any:
    chi = a.shape[0]
    start = tf.eye(chi, dtype=np.result_type(a.dtype, np.complex64))
    value, vector = tf.linalg.eigs(transfer(a), k=1, v0=start)
    return value[0], vector[..., 0]


def _site(dtype: Any, rng: np.random.Generator, chi: int = 4, d: int = 2) -> np.ndarray[Any, Any]:
    a = rng.standard_normal((chi, d, chi))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((chi, d, chi))
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_transfer_matrix_dominant_eigenvalue_gradient(dtype):
    rng = np.random.default_rng(2)
    a = _site(dtype, rng)
    chi = a.shape[0]
    value, _ = dominant(tf.asarray(a))
    dense = np.einsum("asc,bsd->abcd", a, a.conj()).reshape(chi * chi, chi * chi)
    exact = np.linalg.eigvals(dense)
    top = exact[np.argmax(np.abs(exact))]
    np.testing.assert_allclose(np.asarray(value), top, atol=1e-10)
    assert abs(top.imag) < 1e-10  # a completely positive map: Perron-Frobenius
    assert top.real > 0

    def spectral_radius(a: Any) -> Any:
        return tf.real(dominant(a)[0])

    def reference(a: Any) -> Any:
        values = tf.linalg.eigvals(
            tf.reshape(tf.einsum("asc,bsd->abcd", a, tf.conj(a)), (chi * chi, chi * chi))
        )
        return tf.real(values[int(np.argmax(np.abs(exact)))])

    np.testing.assert_allclose(
        np.asarray(tf.grad(spectral_radius)(a)), np.asarray(tf.grad(reference)(a)), atol=1e-10
    )
    tf.testing.check_grads(spectral_radius, [a], order=2)


def test_environment_fixed_point_and_dominant_eigenvector_give_one_gradient():
    """The left environment of a uniform MPS two ways -- the fixed point of the
    normalised transfer map, and the dominant eigenvector -- and an observable of it:
    equal values, equal gradients (through a fixed-point iteration and through
    Arnoldi), equal to finite differences."""
    rng = np.random.default_rng(3)
    a = _site(np.float64, rng)
    chi = a.shape[0]
    observable = tf.asarray(rng.standard_normal((chi, chi)))

    def by_iteration(a: Any) -> Any:
        def normalised(x: Any) -> Any:
            y = transfer(a)(x)
            return y / tf.trace(y)

        environment = tf.fixed_point(normalised, tf.eye(chi) / chi, solver="anderson", tol=1e-14)
        return tf.sum(environment * observable)

    def by_eigenvector(a: Any) -> Any:
        _, vector = dominant(a)
        environment = vector / tf.trace(vector)
        return tf.real(tf.sum(environment * observable))

    np.testing.assert_allclose(
        np.asarray(by_iteration(a)), np.asarray(by_eigenvector(a)), atol=1e-11
    )
    first = np.asarray(tf.grad(by_iteration)(a))
    second = np.asarray(tf.grad(by_eigenvector)(a))
    np.testing.assert_allclose(first, second, atol=1e-9)
    tf.testing.check_grads(by_iteration, [a], order=2)
