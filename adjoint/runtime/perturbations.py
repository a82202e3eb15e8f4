"""Helpers of the decompositions' forward rules: how a factorization moves when its matrix does.

Each `*_dot` helper takes the tangent `a_dot` of the matrix (never None: the rules fill
zeros, or skip the work when nothing varies) and the factorization already computed, and
returns the result's tangent in its shape and dtype: a tuple (NumPy's named result) for a
tuple. Every helper works on stacks of matrices (the last two axes) and costs a few matrix
products and solves, about what the factorization costs. Conventions are the reverse rules'
(`factorizations`): `cholesky`, `eigh` and `eigvalsh` move with the triangle NumPy reads; `eig`'s
vectors with NumPy's scaling (unit norm, largest entry real); the vectors of repeated eigenvalues
or singular values have no tangent (it is infinite); eigh, svd, qr, pinv and lstsq take real
matrices only.
"""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError
from .factorizations import _gap_reciprocals, _real_only, _t
from .tangents import tangent_like

__all__ = [
    "solve_dot", "cholesky_dot", "eigh_dot", "eigvalsh_dot", "eig_dot", "eigvals_dot", "svd_dot",
    "singular_values_dot", "pinv_dot", "qr_dot", "lstsq_dot", "matrix_power_dot",
]


def _like(ans, parts):
    """The tangents `parts` of the items of the tuple `ans`, in its type (`EighResult`...)."""
    parts = [tangent_like(t, v) for t, v in zip(parts, ans)]
    return type(ans)._make(parts) if hasattr(type(ans), "_fields") else type(ans)(parts)


def _diagonal(m):
    return np.diagonal(m, axis1=-2, axis2=-1)


def _read(a_dot, uplo):
    """The symmetric matrix NumPy reads from the triangle `uplo` ("L" or "U") of `a_dot`."""
    kept = np.tril(a_dot) if uplo.upper() == "L" else np.triu(a_dot)
    return kept + _t(kept) - np.eye(a_dot.shape[-1], dtype=bool) * a_dot


def _undefined_vectors():
    """Where eigenvalues (singular values) repeat, the vectors' tangents are infinite or NaN:
    computed whether or not anything reads the vectors, they raise no warning."""
    return np.errstate(divide="ignore", invalid="ignore")


def _completed(factor, first_dot):
    """The tangent of an orthogonal `factor` (a stack) whose first columns move with
    `first_dot`: its other columns, not unique, get the tangent that turns them least while
    `factor` stays orthogonal, `-first (first_dot.T rest)`. A loss that reads them has no
    derivative; this one keeps a loss that does not read them differentiable."""
    k = first_dot.shape[-1]
    if factor.shape[-1] == k:
        return first_dot
    first, rest = factor[..., :k], factor[..., k:]
    return np.concatenate([first_dot, -first @ (_t(first_dot) @ rest)], axis=-1)


# ---- solves ----------------------------------------------------------------------------------

def solve_dot(a_dot, b_dot, a, b, x):
    """Tangent of `x = solve(a, b)`: `solve(a, b_dot - a_dot x)`, a 1-D `b` read as a vector.

    >>> a, b = np.diag([2.0, 4.0]), np.array([2.0, 4.0])
    >>> solve_dot(np.eye(2), np.zeros(2), a, b, np.linalg.solve(a, b))
    array([-0.5 , -0.25])
    """
    if np.ndim(b) == 1:  # NumPy 2's `solve` reads `b` as a vector only when it is 1-D
        rhs = b_dot - (a_dot @ x[..., None])[..., 0]
        return np.linalg.solve(a, rhs[..., None])[..., 0]
    return np.linalg.solve(a, b_dot - a_dot @ x)


# ---- symmetric factorizations ----------------------------------------------------------------

def cholesky_dot(a_dot, factor, upper=False):
    """Tangent of `cholesky(a, upper)` (Murray 2016): `L phi(inv(L) a_dot inv(L).T)`, with `phi`
    the lower triangle and half the diagonal, and `a_dot` read from the triangle NumPy reads.

    >>> cholesky_dot(np.eye(2), np.linalg.cholesky(np.diag([4.0, 9.0])))
    array([[0.25      , 0.        ],
           [0.        , 0.16666667]])
    """
    _real_only(a_dot, "cholesky")
    lower = _t(factor) if upper else factor
    middle = np.linalg.solve(lower, _t(np.linalg.solve(lower, _read(a_dot, "U" if upper else "L"))))
    lower_dot = lower @ (np.tril(middle) * np.where(np.eye(middle.shape[-1], dtype=bool), 0.5, 1.0))
    return _t(lower_dot) if upper else lower_dot


def eigh_dot(a_dot, ans, uplo="L"):
    """Tangent of `(w, v) = eigh(a, uplo)`: with `p = v.T a_dot v` (`a_dot` read from the
    triangle NumPy reads), `w_dot = diag(p)` and `v_dot = v (F * p)`, `F_ij = 1 / (w_j - w_i)`
    off the diagonal.

    >>> w_dot, v_dot = eigh_dot(np.array([[1.0, 0.0], [1.0, 0.0]]), np.linalg.eigh(np.diag([1.0, 2.0])))
    >>> w_dot, v_dot
    (array([1., 0.]), array([[ 0.,  1.],
           [-1.,  0.]]))
    """
    _real_only(a_dot, "eigh")
    w, v = ans
    p = _t(v) @ _read(a_dot, uplo) @ v
    with _undefined_vectors():
        return _like(ans, (_diagonal(p), v @ (_gap_reciprocals(w) * p)))


def eigvalsh_dot(a_dot, v, uplo="L"):
    """Tangent of `eigvalsh(a, uplo)`, from the eigenvectors `v` of `eigh(a, uplo)`: `diag(v.T a_dot v)`.

    >>> eigvalsh_dot(np.array([[1.0, 0.0], [3.0, 2.0]]), np.eye(2))
    array([1., 2.])
    """
    _real_only(a_dot, "eigh")
    return np.sum(v * (_read(a_dot, uplo) @ v), axis=-2)


# ---- general eigendecompositions ------------------------------------------------------------

def eig_dot(a_dot, ans):
    """Tangent of `(w, v) = eig(a)`, for a real or complex `a` with distinct eigenvalues: with
    `p = inv(v) a_dot v`, `w_dot = diag(p)` and `v_dot = v (F * p)`, `F_ij = 1 / (w_j - w_i)`
    off the diagonal, then moved along each vector to keep NumPy's scaling (unit norm, entry of
    largest modulus real; see `factorizations._eigenvector_gauge_bar`).

    >>> w_dot, v_dot = eig_dot(np.array([[0.0, 1.0], [0.0, 0.0]]), np.linalg.eig(np.diag([2.0, 1.0])))
    >>> np.real_if_close(w_dot), np.real_if_close(v_dot)  # complex from NumPy 2.5 on, as eig's results
    (array([0., 0.]), array([[ 0., -1.],
           [ 0.,  0.]]))
    """
    w, v = ans
    p = np.linalg.solve(v, a_dot @ v)
    with _undefined_vectors():
        v_dot = v @ (_gap_reciprocals(w) * p)
    v_dot = v_dot - v * np.real(np.sum(np.conj(v) * v_dot, axis=-2, keepdims=True))  # unit norm
    if np.iscomplexobj(v):  # turn each vector to keep its largest entry real
        at = np.argmax(np.abs(v), axis=-2)[..., None, :]  # LAPACK's first largest entry
        pivot, pivot_dot = np.take_along_axis(v, at, axis=-2), np.take_along_axis(v_dot, at, axis=-2)
        v_dot = v_dot - 1j * v * (np.imag(pivot_dot) / np.real(pivot))
    return _like(ans, (_diagonal(p), v_dot))


def eigvals_dot(a_dot, ans):
    """Tangent of `eigvals(a)`, from `ans = eig(a)`: `diag(inv(v) a_dot v)`.

    >>> np.real_if_close(eigvals_dot(np.array([[1.0, 5.0], [0.0, 2.0]]), np.linalg.eig(np.diag([2.0, 1.0]))))
    array([1., 2.])
    """
    w, v = ans
    return _diagonal(np.linalg.solve(v, a_dot @ v))


# ---- singular values and pseudo-inverses -----------------------------------------------------

def svd_dot(a_dot, ans):
    """Tangent of `(u, s, vh) = svd(a, full_matrices)` (Townsend 2016): with `p = u.T a_dot v`,
    `s_dot = diag(p)`, `u_dot = u (F * (p S + S p.T)) + (I - u u.T) a_dot v / s` and the
    same for `v` with `a.T`, `F_ij = 1 / (s_j**2 - s_i**2)`; for distinct, nonzero singular
    values. The extra vectors of full factors get the tangent of `_completed`.

    >>> a = np.diag([3.0, 2.0])
    >>> u_dot, s_dot, vh_dot = svd_dot(np.array([[1.0, 0.0], [1.0, 0.0]]), np.linalg.svd(a))
    >>> s_dot, u_dot
    (array([1., 0.]), array([[ 0. , -0.6],
           [ 0.6,  0. ]]))
    """
    _real_only(a_dot, "svd")
    u_full, s, vh_full = ans
    k = s.shape[-1]
    u, v = u_full[..., :k], _t(vh_full[..., :k, :])
    p = _t(u) @ a_dot @ v
    ps, sp = p * s[..., None, :], s[..., :, None] * p
    with _undefined_vectors():
        gaps = _gap_reciprocals(s**2)
        u_dot = u @ (gaps * (ps + _t(ps))) + (a_dot @ v - u @ p) / s[..., None, :]
        v_dot = v @ (gaps * (sp + _t(sp))) + (_t(a_dot) @ u - v @ _t(p)) / s[..., None, :]
    return _like(ans, (_completed(u_full, u_dot), _diagonal(p), _t(_completed(_t(vh_full), v_dot))))


def singular_values_dot(a_dot, u, vh):
    """Tangent of `svd(a, compute_uv=False)`, from the reduced factors `u, vh` of `a`:
    `diag(u.T a_dot vh.T)`, defined everywhere.

    >>> singular_values_dot(np.array([[1.0, 2.0], [3.0, 4.0]]), np.eye(2), np.eye(2))
    array([1., 4.])
    """
    _real_only(a_dot, "svd")
    return np.sum(u * (a_dot @ _t(vh)), axis=-2)


def pinv_dot(a_dot, a, p):
    """Tangent of `p = pinv(a)` for `a` of constant (full) rank (Golub and Pereyra 1973):

        -p a_dot p + p p.T a_dot.T (I - a p) + (I - p a) a_dot.T p.T p.

    >>> pinv_dot(np.array([[1.0], [1.0]]), np.array([[2.0], [0.0]]), np.array([[0.5, 0.0]]))
    array([[-0.25,  0.25]])
    """
    _real_only(a_dot, "pinv")
    rows = (p @ _t(p)) @ (_t(a_dot) - (_t(a_dot) @ a) @ p)
    columns = (_t(a_dot) - (p @ a) @ _t(a_dot)) @ (_t(p) @ p)
    return -p @ a_dot @ p + rows + columns


# ---- QR and least squares --------------------------------------------------------------------

def _square_qr_dot(a_dot, q, r):
    """`(q_dot, r_dot)` for `a = q r` with `r` square and invertible: with `x = q.T a_dot inv(r)`
    split into an antisymmetric `omega` (from its strict lower triangle) and an upper
    triangle, `r_dot = (x - omega) r` and `q_dot = a_dot inv(r) - q (x - omega)`."""
    d = _t(np.linalg.solve(_t(r), _t(a_dot)))  # a_dot inv(r)
    x = _t(q) @ d
    upper = x - (np.tril(x, -1) - _t(np.tril(x, -1)))
    return d - q @ upper, upper @ r


def qr_dot(a_dot, a, ans, mode="reduced"):
    """Tangent of `qr(a, mode)`, modes "reduced", "complete" and "r", for `a` of full rank; a
    wide `a = q [r1 r2]` moves `q, r1` as its square part does, and `r2 = q.T a2` with both.
    The extra columns of a complete `q` get the tangent of `_completed`.

    >>> q_dot, r_dot = qr_dot(np.array([[0.0, 0.0], [1.0, 0.0]]), np.eye(2), np.linalg.qr(np.eye(2)))
    >>> q_dot + 0.0, r_dot + 0.0
    (array([[ 0., -1.],
           [ 1.,  0.]]), array([[0., 1.],
           [0., 0.]]))
    """
    _real_only(a_dot, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuleError(f"adjoint differentiates np.linalg.qr with mode 'reduced', 'complete' or 'r', not {mode!r}")
    q, r = np.linalg.qr(a) if mode == "r" else ans
    k = min(np.shape(a)[-2:])
    q_dot, r_dot = _square_qr_dot(a_dot[..., :k], q[..., :k], r[..., :k, :k])
    if a.shape[-1] > k:
        r_dot = np.concatenate([r_dot, _t(q_dot) @ a[..., k:] + _t(q) @ a_dot[..., k:]], axis=-1)
    if r.shape[-2] > k:  # complete: r's rows beyond the rank stay zero
        r_dot = np.concatenate([r_dot, np.zeros_like(r[..., k:, :])], axis=-2)
    if mode == "r":
        return tangent_like(r_dot, ans)
    return _like(ans, (_completed(q, q_dot), r_dot))


def lstsq_dot(a_dot, b_dot, a, b, ans, factors):
    """Tangent of `(x, residuals, rank, s) = lstsq(a, b)` for `a` of full rank, from the reduced
    `factors = svd(a, full_matrices=False)`: `x = pinv(a) b` moves with `pinv(a)` and `b`, each
    residual `|r|**2`, `r = b - a x`, by `2 r.(b_dot - a_dot x)` (`r` is orthogonal to `a`'s
    columns), and `s` as `svd`'s singular values.

    >>> a, b = np.array([[1.0], [1.0]]), np.array([1.0, 3.0])
    >>> ans = np.linalg.lstsq(a, b)
    >>> x_dot, residuals_dot, rank_dot, s_dot = lstsq_dot(np.zeros((2, 1)), np.array([1.0, 0.0]), a, b, ans,
    ...                                                  np.linalg.svd(a, full_matrices=False))
    >>> x_dot, residuals_dot
    (array([0.5]), array([-2.]))
    """
    _real_only(a_dot, "lstsq")
    x, residuals, rank, s = ans
    if rank < min(np.shape(a)):
        raise RuleError("adjoint differentiates np.linalg.lstsq only for a matrix of full rank")
    u, _, vh = factors
    p = _t(vh) @ (_t(u) / s[..., :, None])  # pinv(a)
    if np.ndim(b) == 1:  # one column
        x, b, b_dot = x[:, None], b[:, None], b_dot[:, None]
    r = b - a @ x
    moved = b_dot - a_dot @ x  # what is left of b_dot after a_dot moved a x
    y = _t(p) @ x
    # the pseudo-inverse's tangent (`pinv_dot`) times b, with (I - a p) b = r and p b = x
    x_dot = p @ moved + p @ (_t(p) @ (_t(a_dot) @ r)) + _t(a_dot) @ y - p @ (a @ (_t(a_dot) @ y))
    residuals_dot = 2 * np.sum(r * moved, axis=0) if np.size(residuals) else residuals
    return _like(ans, (x_dot.reshape(np.shape(ans[0])), residuals_dot, 0, singular_values_dot(a_dot, u, vh)))


# ---- powers ----------------------------------------------------------------------------------

def matrix_power_dot(a_dot, a, n):
    """Tangent of `matrix_power(a, n)`, by the product rule along NumPy's square-and-multiply
    (about `3 log2 |n|` products); through `inv(a)`, whose tangent is `-inv(a) a_dot inv(a)`,
    for a negative `n`.

    >>> matrix_power_dot(np.eye(2), np.diag([2.0, 3.0]), 3)
    array([[12.,  0.],
           [ 0., 27.]])
    """
    if n == 0:
        return np.zeros(np.broadcast_shapes(np.shape(a), np.shape(a_dot)), dtype=np.result_type(a, a_dot))
    if n < 0:
        a = np.linalg.inv(a)
        a_dot, n = -a @ a_dot @ a, -n
    z, z_dot = a, a_dot  # a ** (2 ** i) and its tangent
    result = result_dot = None
    while True:
        n, bit = divmod(n, 2)
        if bit:
            if result is None:
                result, result_dot = z, z_dot
            else:
                result, result_dot = result @ z, result_dot @ z + result @ z_dot
        if n == 0:
            return result_dot
        z, z_dot = z @ z, z_dot @ z + z @ z_dot
