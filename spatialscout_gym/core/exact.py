"""Small fixed-size linear algebra that gives the same bits on every BLAS kernel (docs/protocol.md
section 7, "Numbers that travel").

``numpy``'s ``@``, ``dot``, ``linalg.norm`` of a vector, ``solve`` and ``cond`` call BLAS/LAPACK,
whose kernel (chosen per CPU, or by ``OPENBLAS_CORETYPE``) and thread count change the last bits
of a result. Camera poses, rays and triangulated points are recorded and re-executed by
``spatialscout verify``, so they are computed here with ``einsum`` (numpy's own loops, no BLAS)
and closed-form 3 x 3 formulas.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["rows_times", "matvec", "matmul", "norm", "solve3", "cond3_symmetric"]


def rows_times(a: ArrayLike, m: ArrayLike) -> np.ndarray:
    """``a @ m`` for row vectors ``a`` of shape (..., n) and a matrix ``m`` of shape (n, k)."""
    return np.einsum("...j,jk->...k", np.asarray(a, dtype=float), np.asarray(m, dtype=float))


def matvec(m: ArrayLike, v: ArrayLike) -> np.ndarray:
    """``m @ v`` for a matrix ``m`` of shape (n, k) and a vector ``v`` of shape (k,)."""
    return np.einsum("ij,j->i", np.asarray(m, dtype=float), np.asarray(v, dtype=float))


def matmul(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a @ b`` for two matrices."""
    return np.einsum("ij,jk->ik", np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def norm(v: ArrayLike) -> float:
    """Euclidean length of one vector."""
    x = np.asarray(v, dtype=float).ravel()
    return math.sqrt(float(np.sum(x * x)))


def solve3(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``x`` with ``a x = b`` for a 3 x 3 matrix by its adjugate (Cramer's rule); ``a`` must be
    well conditioned (the caller checks)."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = (tuple(float(x) for x in r) for r in np.asarray(a))
    c = [[a11 * a22 - a12 * a21, a02 * a21 - a01 * a22, a01 * a12 - a02 * a11],
         [a12 * a20 - a10 * a22, a00 * a22 - a02 * a20, a02 * a10 - a00 * a12],
         [a10 * a21 - a11 * a20, a01 * a20 - a00 * a21, a00 * a11 - a01 * a10]]
    det = a00 * c[0][0] + a01 * c[1][0] + a02 * c[2][0]
    b0, b1, b2 = (float(x) for x in np.asarray(b).ravel())
    return np.array([(r[0] * b0 + r[1] * b1 + r[2] * b2) / det for r in c])


def cond3_symmetric(a: ArrayLike) -> float:
    """2-norm condition number of a symmetric positive semi-definite 3 x 3 matrix: the ratio of its
    largest and smallest eigenvalues (closed form); ``inf`` when the smallest is not positive."""
    (a00, a01, a02), (_, a11, a12), (_, _, a22) = (tuple(float(x) for x in r) for r in np.asarray(a))
    p1 = a01 * a01 + a02 * a02 + a12 * a12
    q = (a00 + a11 + a22) / 3.0
    p2 = (a00 - q) ** 2 + (a11 - q) ** 2 + (a22 - q) ** 2 + 2.0 * p1
    if p2 == 0.0:
        return 1.0 if q > 0 else math.inf
    p = math.sqrt(p2 / 6.0)
    b00, b11, b22 = (a00 - q) / p, (a11 - q) / p, (a22 - q) / p
    b01, b02, b12 = a01 / p, a02 / p, a12 / p
    r = (b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02) + b02 * (b01 * b12 - b11 * b02)) / 2.0
    phi = math.acos(min(1.0, max(-1.0, r))) / 3.0
    hi = q + 2.0 * p * math.cos(phi)
    lo = q + 2.0 * p * math.cos(phi + 2.0 * math.pi / 3.0)
    return hi / lo if lo > 0 else math.inf
