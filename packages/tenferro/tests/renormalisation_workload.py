"""A truncated-SVD renormalisation workload, written once for every tensor kind: Levin and
Nave's tensor renormalisation group for the 2D Ising model (split each site tensor by a
truncated SVD, reshape the halves into three-leg tensors, contract four of them into the
next site tensor, repeat), the free energy per site as a function of the inverse
temperature.

Eagerly the truncation rank is an ordinary extent; traced it is a data-dependent extent
bounded by ``max_rank``: the same code runs both ways. The new site tensor is padded to
``max_rank`` on each axis (zeros: the next SVD's extra singular values are 0 and are cut)
so that every step has the same static shape in a trace.
"""

from __future__ import annotations

from typing import Any

import tenferro as tf


def ising_tensor(beta: Any) -> Any:
    """The site tensor ``T[u, l, d, r] = sum_s W[s,u] W[s,l] W[s,d] W[s,r]`` of the 2D
    Ising model at inverse temperature ``beta`` (``W W^T`` the bond Boltzmann matrix)."""
    c = tf.sqrt(tf.cosh(beta))
    s = tf.sqrt(tf.sinh(beta))
    w = tf.stack([tf.stack([c, s]), tf.stack([c, -s])])  # [spin, bond]
    return tf.einsum("su,sl,sd,sr->uldr", w, w, w, w)


def _split(m: Any, chi: int, rtol: float) -> tuple[Any, Any]:
    """``m ~ left @ right`` through the SVD truncated to at most ``chi`` values."""
    u, s, vh = tf.linalg.truncated_svd(m, max_rank=chi, rtol=rtol)
    root = tf.sqrt(s)
    return u * root, root[:, None] * vh


def trg_step(t: Any, chi: int, rtol: float = 1e-12) -> tuple[Any, Any]:
    """One TRG step: ``(next tensor padded to chi, its norm)``."""
    d = t.shape[0]
    # T[u,l,d,r]: split as (u,l)|(d,r) and as (l,d)|(r,u).
    a, b = _split(tf.reshape(t, (d * d, d * d)), chi, rtol)
    c, e = _split(tf.reshape(tf.transpose(t, (1, 2, 3, 0)), (d * d, d * d)), chi, rtol)
    s1 = tf.reshape(a, (d, d, a.shape[-1]))  # [u, l, k]
    s3 = tf.reshape(b, (b.shape[0], d, d))  # [k, d, r]
    s2 = tf.reshape(c, (d, d, c.shape[-1]))  # [l, d, k]
    s4 = tf.reshape(e, (e.shape[0], d, d))  # [k, r, u]
    # The new site on a plaquette: the (d, r) half of the site at its top left, the
    # (l, d) half of the one at its top right, the (u, l) half at the bottom right and
    # the (r, u) half at the bottom left, joined by the plaquette's four old bonds.
    new = tf.einsum("iwx,xyj,yzk,lzw->ijkl", s3, s2, s1, s4)
    norm = tf.sqrt(tf.sum(new * new))
    new = new / norm
    reference = tf.zeros((chi,), dtype=new.dtype)
    for axis in range(4):
        new = tf.pad_to_match(
            new, tf.reshape(reference, (1,) * axis + (chi,) + (1,) * (3 - axis)), axis
        )
    return new, norm


def free_energy(beta: Any, chi: int = 4, steps: int = 4) -> Any:
    """``-ln(Z) / (N beta)`` per site after ``steps`` TRG steps (each halves the sites)."""
    t = ising_tensor(beta)
    norm0 = tf.sqrt(tf.sum(t * t))
    t = t / norm0
    log_z = tf.log(norm0)
    sites = 1.0
    for _ in range(steps):
        sites *= 2.0
        t, norm = trg_step(t, chi)
        log_z = log_z + tf.log(norm) / sites
    trace = tf.einsum("ijij->", t)
    log_z = log_z + tf.log(tf.abs(trace)) / sites
    return -log_z / beta
