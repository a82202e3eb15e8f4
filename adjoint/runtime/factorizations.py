"""Helpers of the linear-algebra decomposition rules: inverses, determinants, factorizations.

Every helper works on stacks of matrices (the last two axes), as NumPy's `linalg` does, and
returns a cotangent in its operand's shape and dtype, or None for a non-float operand.
A factorization's cotangent arrives as a tuple with one item per factor, None for a factor
nothing flowed into; helpers skip the work of a missing factor. Complex matrices follow the
JAX convention (`dL = Re(sum(a_bar * da))`): the holomorphic maps (inverse, solve,
determinant) pull back through plain transposes, as do general eigenvalues; the other
factorizations, whose factors are fixed only up to a phase (eigh, svd, qr...), refuse complex
input.
"""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError, prod_bar
from .pointwise import unbroadcast_float

__all__ = [
    "inv_bar", "solve_rhs_bar", "solve_lhs_bar", "det_bar", "slogdet_bar", "cholesky_bar",
    "eigh_bar", "eig_bar", "svd_bar", "pinv_bar", "qr_bar", "lstsq_lhs_bar", "lstsq_rhs_bar", "matrix_power_bar",
]


def _t(x):
    """The transpose of each matrix of a stack."""
    return np.swapaxes(x, -1, -2)


def _part(g, index):
    """Item `index` of a tuple-valued result's cotangent; None when nothing flowed into it,
    as when generated code fills it with zeros (`w, v = eigh(a)` with `v` unused): skipping
    the item saves its work and keeps `inf * 0` out where the item's gradient is undefined."""
    item = None if g is None else g[index]
    return None if item is None or not np.any(item) else item


def _real_only(a, name):
    if np.iscomplexobj(a):
        raise RuleError(
            f"adjoint's rule for np.linalg.{name} takes real matrices only, not complex ones yet: "
            "split the matrix into real and imaginary parts, or register a rule with @adjoint.rrule"
        )


# ---- inverses and solves ---------------------------------------------------------------------

def inv_bar(g, a, ainv):
    """Cotangent of `a` in `ainv = inv(a)`: `-ainv.T @ g @ ainv.T`, since d(inv a) = -inv(a) da inv(a).

    >>> a = np.array([[2.0, 0.0], [0.0, 4.0]])
    >>> inv_bar(np.ones((2, 2)), a, np.linalg.inv(a))
    array([[-0.25  , -0.125 ],
           [-0.125 , -0.0625]])
    """
    return unbroadcast_float(-_t(ainv) @ g @ _t(ainv), a)


def _is_vector_rhs(b):
    return np.ndim(b) == 1  # NumPy 2's `solve` reads `b` as a vector only when it is 1-D


def solve_rhs_bar(g, a, b):
    """Cotangent of `x = solve(a, b)` carried back to the right-hand side, before `b`'s own
    broadcasting is undone: `solve(a.T, g)`.

    >>> solve_rhs_bar(np.array([1.0, 1.0]), np.array([[2.0, 0.0], [1.0, 1.0]]), np.ones(2))
    array([0., 1.])
    """
    if _is_vector_rhs(b):
        return np.linalg.solve(_t(a), np.asarray(g)[..., None])[..., 0]
    return np.linalg.solve(_t(a), g)


def solve_lhs_bar(rhs_bar, a, b, x):
    """Cotangent of `a` in `x = solve(a, b)`, from `rhs_bar = solve_rhs_bar(g, a, b)`:
    `-rhs_bar @ x.T`, since da moves x by `-inv(a) da x`.

    >>> a, b = np.eye(2), np.array([1.0, 2.0])
    >>> solve_lhs_bar(np.array([1.0, 0.0]), a, b, np.linalg.solve(a, b))
    array([[-1., -2.],
           [-0., -0.]])
    """
    if _is_vector_rhs(b):
        return unbroadcast_float(-rhs_bar[..., :, None] * x[..., None, :], a)
    return unbroadcast_float(-rhs_bar @ _t(x), a)


# ---- determinants ----------------------------------------------------------------------------

def det_bar(g, a):
    """Cotangent of `a` in `det(a)`: `g` times the cofactor matrix of `a`.

    The cofactors come from the singular value decomposition `a = u diag(s) vh`: they are
    `det(u) det(vh) conj(u) diag(prod of the other s) conj(vh)`, with no division, so they
    stay exact where `a` is singular (`det(a) * inv(a).T` would fail there).

    >>> det_bar(1.0, np.array([[1.0, 2.0], [2.0, 4.0]])).round(12) + 0.0
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    u, s, vh = np.linalg.svd(a)
    others = prod_bar(np.ones(s.shape[:-1], dtype=s.dtype), s, axis=-1)
    phase = np.linalg.det(u) * np.linalg.det(vh)
    cofactors = (np.conj(u) * others[..., None, :]) @ np.conj(vh) * phase[..., None, None]
    return unbroadcast_float(np.asarray(g)[..., None, None] * cofactors, a)


def slogdet_bar(g, a, ans):
    """Cotangent of `a` in `(sign, logabsdet) = slogdet(a)`: `logabsdet_bar * inv(a).T`.

    The sign of a real determinant is piecewise constant and gets no gradient; the sign of a
    complex one, `exp(i theta)`, moves with `theta = Im(log det a)`, whose derivative is
    `Im(trace(inv(a) da))`.

    >>> slogdet_bar((None, 1.0), np.diag([2.0, 4.0]), np.linalg.slogdet(np.diag([2.0, 4.0])))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    sign_bar, logdet_bar = _part(g, 0), _part(g, 1)
    if logdet_bar is None and (sign_bar is None or not np.iscomplexobj(a)):
        return unbroadcast_float(np.zeros_like(a), a)
    weight = np.zeros(np.shape(ans[1])) if logdet_bar is None else np.asarray(logdet_bar)
    if sign_bar is not None and np.iscomplexobj(a):
        weight = weight - 1j * np.real(1j * sign_bar * ans[0])
    return unbroadcast_float(weight[..., None, None] * _t(np.linalg.inv(a)), a)


# ---- symmetric factorizations ----------------------------------------------------------------

def _reflected(s, uplo):
    """The cotangent of a symmetric matrix of which NumPy reads one triangle (`uplo` "L" or
    "U"), from `s`, one that holds along symmetric directions (`dL = sum(s * da)` for a
    symmetric `da`): the read triangle gets `s + s.T` off the diagonal, the other none."""
    n = s.shape[-1]
    below = np.tri(n, k=-1, dtype=bool)
    read = below if uplo.upper() == "L" else below.T
    return np.where(read, s + _t(s), np.where(np.eye(n, dtype=bool), s, 0))


def cholesky_bar(g, a, factor, upper=False):
    """Cotangent of `a` in `cholesky(a)` (Murray 2016, arXiv:1602.07527): the one of the
    triangle NumPy reads, the lower (the upper for `upper=True`), as for `eigh`, so that it
    agrees with finite differences of NumPy's function even for a non-symmetric `a`. (Autograd
    and JAX give the symmetric one instead; the two agree along symmetric directions.)

    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cholesky_bar(np.eye(2), a, np.linalg.cholesky(a))
    array([[ 0.3125,  0.    ],
           [-0.25  ,  0.25  ]])
    """
    _real_only(a, "cholesky")
    lower, lower_bar = (_t(factor), _t(g)) if upper else (factor, g)
    n = lower.shape[-1]
    middle = np.tril(_t(lower) @ lower_bar) * np.where(np.eye(n, dtype=bool), 0.5, 1.0)
    half = np.linalg.solve(_t(lower), middle)  # inv(L).T @ middle
    s = _t(np.linalg.solve(_t(lower), _t(half)))  # ... @ inv(L)
    return unbroadcast_float(_reflected((s + _t(s)) / 2, "U" if upper else "L"), a)


def _gap_reciprocals(w):
    """`1 / (w_j - w_i)` off the diagonal, 0 on it: infinite for repeated values, where the
    vectors of a repeated eigenvalue (singular value) are not unique and have no gradient."""
    n = w.shape[-1]
    eye = np.eye(n, dtype=w.dtype)
    return 1 / (w[..., None, :] - w[..., :, None] + eye) - eye


def eigh_bar(g, a, ans, uplo="L"):
    """Cotangent of `a` in `(w, v) = eigh(a, uplo)` (`g` its `(w_bar, v_bar)`), the one of the
    triangle NumPy reads (see `_reflected`):

        v @ (diag(w_bar) + F * (v.T @ v_bar)) @ v.T,  F_ij = 1 / (w_j - w_i) off the diagonal.

    The eigenvalues alone have a gradient everywhere; the eigenvectors' is undefined where
    eigenvalues repeat, and their sign convention does not matter to it.

    >>> a = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> eigh_bar((np.array([0.0, 1.0]), None), a, np.linalg.eigh(a))
    array([[0.5, 0. ],
           [1. , 0.5]])
    """
    _real_only(a, "eigh")
    w, v = ans
    w_bar, v_bar = _part(g, 0), _part(g, 1)
    inner = np.zeros(np.shape(v), dtype=v.dtype)
    if w_bar is not None:
        inner = inner + np.asarray(w_bar)[..., None, :] * np.eye(w.shape[-1], dtype=w.dtype)
    if v_bar is not None:
        inner = inner + _gap_reciprocals(w) * (_t(v) @ v_bar)
    return unbroadcast_float(_reflected(v @ inner @ _t(v), uplo), a)


# ---- general eigendecompositions ------------------------------------------------------------

def eig_bar(g, a, ans):
    """Cotangent of `a` in `(w, v) = eig(a)` (`g` its `(w_bar, v_bar)`), for a real or complex
    square `a` with distinct eigenvalues (Giles 2008, "An extended collection of matrix
    derivative results"):

        inv(v).T @ (diag(w_bar) + F * (v.T @ v_bar')) @ v.T,  F_ij = 1 / (w_j - w_i) off the diagonal,

    with `v_bar'` the eigenvectors' cotangent carried back through the multiple of each vector
    that NumPy returns (see `_eigenvector_gauge_bar`). A real `a` gets the real part.

    >>> a = np.array([[2.0, 1.0], [0.0, 1.0]])  # w = 2: left eigenvector (1, 1), right (1, 0)
    >>> eig_bar((np.array([1.0, 0.0]), None), a, np.linalg.eig(a))
    array([[1., 0.],
           [1., 0.]])
    """
    w, v = ans
    w_bar, v_bar = _part(g, 0), _part(g, 1)
    inner = np.zeros(np.shape(v), dtype=np.result_type(v, np.complex64))
    if w_bar is not None:
        inner = inner + np.asarray(w_bar)[..., None, :] * np.eye(w.shape[-1])
    if v_bar is not None:
        inner = inner + _gap_reciprocals(w) * (_t(v) @ _eigenvector_gauge_bar(v, v_bar))
    return unbroadcast_float(np.linalg.solve(_t(v), inner @ _t(v)), a)


def _eigenvector_gauge_bar(v, v_bar):
    """`v_bar` carried back to the tangent of an eigenvector that may move along itself, from
    that of the multiple NumPy (LAPACK's geev) returns: of unit norm, which removes the
    tangent's part `v Re(v^H dv)`, and with its entry of largest modulus real, which adds the
    turn `i v phi` keeping that entry's tangent real. The phase is a convention: a loss
    invariant to each vector's phase (`abs(v)`, `v[0] / v[1]`) has no slope along `i v`, so the
    turn adds nothing to its gradient, which is then autograd's."""
    v_bar = np.asarray(v_bar)
    rows = np.arange(v.shape[-2])[:, None]
    at_pivot = rows == np.argmax(np.abs(v), axis=-2)[..., None, :]  # geev's first largest entry
    pivot = np.sum(np.where(at_pivot, v, 0), axis=-2, keepdims=True)
    turn_slope = -np.imag(np.sum(v * v_bar, axis=-2, keepdims=True))  # the loss's slope along i v
    turned = v_bar + np.where(at_pivot, 1j * turn_slope / pivot, 0)
    return turned - np.conj(v) * np.real(np.sum(v * turned, axis=-2, keepdims=True))


# ---- singular values and pseudo-inverses -----------------------------------------------------

def _reduced(factor, factor_bar, k, axis, advice):
    """A full factor cut to its first `k` columns (rows, along `axis` -2); refused when the
    vectors cut off, which only span a subspace and are not unique, received a cotangent."""
    if factor.shape[axis] == k:
        return factor, factor_bar
    kept = (Ellipsis, slice(None), slice(k)) if axis == -1 else (Ellipsis, slice(k), slice(None))
    cut = (Ellipsis, slice(None), slice(k, None)) if axis == -1 else (Ellipsis, slice(k, None), slice(None))
    if factor_bar is not None and np.any(np.asarray(factor_bar)[cut]):
        raise RuleError(f"the extra vectors of a complete factorization are not unique and have no gradient: {advice}")
    return factor[kept], None if factor_bar is None else np.asarray(factor_bar)[kept]


def svd_bar(g, a, ans, compute_uv=True):
    """Cotangent of `a` in `ans = svd(a, full_matrices, compute_uv)` (Townsend 2016,
    "Differentiating the singular value decomposition"); full factors are told from reduced
    ones by their shapes. The singular values' part, `u @ diag(s_bar) @ vh`, is defined
    everywhere; the singular vectors' needs distinct, nonzero singular values.

    >>> a = np.array([[3.0, 0.0], [0.0, 2.0]])
    >>> svd_bar(np.array([1.0, 0.0]), a, np.linalg.svd(a, compute_uv=False), compute_uv=False)
    array([[1., 0.],
           [0., 0.]])
    """
    _real_only(a, "svd")
    if compute_uv:
        (u, s, vh), (u_bar, s_bar, vh_bar) = ans, (_part(g, 0), _part(g, 1), _part(g, 2))
    else:
        (u, s, vh), (u_bar, s_bar, vh_bar) = np.linalg.svd(a, full_matrices=False), (None, g, None)
    k = s.shape[-1]
    u, u_bar = _reduced(u, u_bar, k, -1, "pass full_matrices=False to np.linalg.svd")
    vh, vh_bar = _reduced(vh, vh_bar, k, -2, "pass full_matrices=False to np.linalg.svd")
    inner = np.zeros(s.shape + (k,), dtype=s.dtype)
    if s_bar is not None:
        inner = inner + np.asarray(s_bar)[..., None, :] * np.eye(k, dtype=s.dtype)
    outside = 0  # from the parts of u_bar and v_bar outside the spans of u and v
    gaps = _gap_reciprocals(s**2) if u_bar is not None or vh_bar is not None else None
    if u_bar is not None:
        j = gaps * (_t(u) @ u_bar)
        inner = inner + (j + _t(j)) * s[..., None, :]
        outside = outside + ((u_bar - u @ (_t(u) @ u_bar)) / s[..., None, :]) @ vh
    if vh_bar is not None:
        v_bar = _t(vh_bar)
        j = gaps * (vh @ v_bar)
        inner = inner + s[..., :, None] * (j + _t(j))
        outside = outside + u @ _t((v_bar - _t(vh) @ (vh @ v_bar)) / s[..., None, :])
    return unbroadcast_float(u @ inner @ vh + outside, a)


def pinv_bar(g, a, ans):
    """Cotangent of `a` in `ans = pinv(a)`, for `a` of full rank (Golub and Pereyra 1973):

        -ans.T g ans.T + (I - a ans) g.T ans ans.T + ans.T ans g.T (I - ans a).

    >>> a = np.array([[2.0], [0.0]])
    >>> pinv_bar(np.array([[1.0, 1.0]]), a, np.linalg.pinv(a))
    array([[-0.25],
           [ 0.25]])
    """
    _real_only(a, "pinv")
    p = ans
    g = np.asarray(g)
    left = -_t(p) @ g @ _t(p)
    rows = (_t(g) - a @ (p @ _t(g))) @ (p @ _t(p))
    columns = (_t(p) @ p) @ (_t(g) - (_t(g) @ p) @ a)
    return unbroadcast_float(left + rows + columns, a)


# ---- QR and least squares --------------------------------------------------------------------

def _copyltu(m):
    """The symmetric matrix with `m`'s lower triangle."""
    return np.tril(m) + _t(np.tril(m, -1))


def _square_qr_bar(q, r, q_bar, r_bar):
    """`a`'s cotangent for `a = q r` with `r` square and invertible (Liao et al. 2019):
    `(q_bar + q copyltu(M)) inv(r).T`, `M = r r_bar.T - q_bar.T q`."""
    m = r @ _t(r_bar) - _t(q_bar) @ q
    return _t(np.linalg.solve(r, _t(q_bar + q @ _copyltu(m))))


def qr_bar(g, a, ans, mode="reduced"):
    """Cotangent of `a` in `qr(a, mode)`, modes "reduced", "complete" and "r", for `a` of full
    rank. A wide `a = q [r1 r2]` is split into its square part `x = q r1`, whose `q` also
    carries `r2`'s cotangent through `y = q r2`, and the rest `y`.

    >>> a = np.array([[2.0, 1.0], [0.0, 1.0]])
    >>> qr_bar((None, np.eye(2)), a, np.linalg.qr(a)).round(12) + 0.0
    array([[ 1. ,  0. ],
           [-0.5,  1. ]])
    """
    _real_only(a, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuleError(f"adjoint differentiates np.linalg.qr with mode 'reduced', 'complete' or 'r', not {mode!r}")
    if mode == "r":
        (q, r), (q_bar, r_bar) = np.linalg.qr(a), (None, g)
    else:
        (q, r), (q_bar, r_bar) = ans, (_part(g, 0), _part(g, 1))
    rows, columns = np.shape(a)[-2:]
    k = min(rows, columns)
    q, q_bar = _reduced(q, q_bar, k, -1, "use np.linalg.qr's mode 'reduced'")
    r = r[..., :k, :]
    q_bar = np.zeros_like(q) if q_bar is None else np.asarray(q_bar)
    r_bar = np.zeros_like(r) if r_bar is None else np.asarray(r_bar)[..., :k, :]
    if rows >= columns:
        return unbroadcast_float(_square_qr_bar(q, r, q_bar, r_bar), a)
    rest = np.asarray(a)[..., k:]
    square = _square_qr_bar(q, r[..., :k], q_bar + rest @ _t(r_bar[..., k:]), r_bar[..., :k])
    return unbroadcast_float(np.concatenate([square, q @ r_bar[..., k:]], axis=-1), a)


def _lstsq_parts(g, a, b, ans):
    """`(x, x_bar, residuals_bar, r)` of `lstsq(a, b)`, `r = b - a x`, with a vector `b` as one
    column; refuses a rank-deficient `a`, whose solution jumps as its rank changes."""
    _real_only(a, "lstsq")
    x, residuals, rank, _ = ans
    if rank < min(np.shape(a)):
        raise RuleError("adjoint differentiates np.linalg.lstsq only for a matrix of full rank")
    x_bar, residuals_bar = _part(g, 0), _part(g, 1)
    x_bar = np.zeros_like(x) if x_bar is None else np.asarray(x_bar)
    if residuals_bar is None or np.size(residuals) == 0:
        residuals_bar = np.zeros(np.shape(x)[1:])
    r = b - a @ x
    if np.ndim(b) == 1:
        return x[:, None], x_bar[:, None], np.asarray(residuals_bar), r[:, None]
    return x, x_bar, np.asarray(residuals_bar), r


def lstsq_lhs_bar(g, a, b, ans, a_pinv):
    """Cotangent of `a` in `(x, residuals, rank, s) = lstsq(a, b)`, given `a_pinv = pinv(a)`:
    `x = pinv(a) b` moves with `pinv(a)`, each residual `|b - a x|**2` with `-2 r x.T` (its
    residual vector `r` is orthogonal to `a`'s columns), and `s` as `svd`'s singular values.

    >>> a, b = np.array([[1.0], [1.0]]), np.array([1.0, 3.0])
    >>> ans = np.linalg.lstsq(a, b)
    >>> lstsq_lhs_bar((np.array([1.0]), None, None, None), a, b, ans, np.linalg.pinv(a))
    array([[-1.5],
           [-0.5]])
    """
    x, x_bar, residuals_bar, r = _lstsq_parts(g, a, b, ans)
    a_bar = pinv_bar(x_bar @ _t(np.asarray(b).reshape(r.shape)), a, a_pinv) - 2 * (r * residuals_bar) @ _t(x)
    if _part(g, 3) is not None:
        a_bar = a_bar + svd_bar(_part(g, 3), a, ans[3], compute_uv=False)
    return unbroadcast_float(a_bar, a)


def lstsq_rhs_bar(g, a, b, ans, a_pinv):
    """Cotangent of `b` in `(x, residuals, rank, s) = lstsq(a, b)`: `pinv(a).T x_bar`, plus
    `2 r` per unit of a residual's cotangent.

    >>> a, b = np.array([[1.0], [1.0]]), np.array([1.0, 3.0])
    >>> lstsq_rhs_bar((None, np.array([1.0]), None, None), a, b, np.linalg.lstsq(a, b), np.linalg.pinv(a))
    array([-2.,  2.])
    """
    _, x_bar, residuals_bar, r = _lstsq_parts(g, a, b, ans)
    b_bar = _t(a_pinv) @ x_bar + 2 * r * residuals_bar
    return unbroadcast_float(b_bar.reshape(np.shape(b)), b)


# ---- powers ----------------------------------------------------------------------------------

def matrix_power_bar(g, a, n):
    """Cotangent of `a` in `matrix_power(a, n)`: `sum over j < |n| of (b.T)**j g (b.T)**(|n|-1-j)`
    for `b = a`, then through `inv` for a negative `n`, `b = inv(a)`.

    >>> matrix_power_bar(np.eye(2), np.diag([2.0, 3.0]), 2)
    array([[4., 0.],
           [0., 6.]])
    """
    base = np.asarray(a) if n >= 0 else np.linalg.inv(a)
    powers = [np.broadcast_to(np.eye(base.shape[-1], dtype=base.dtype), base.shape)]
    for _ in range(abs(n) - 1):
        powers.append(powers[-1] @ _t(base))
    base_bar = sum((powers[j] @ g @ powers[abs(n) - 1 - j] for j in range(abs(n))), np.zeros_like(base))
    if n < 0:
        return inv_bar(base_bar, a, base)
    return unbroadcast_float(base_bar, a)
