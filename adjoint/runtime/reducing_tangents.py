"""Helpers of the forward rules of reductions' cotangents (`adjoint.rules.pullback_reductions`):
the tangents of the pieces `reducing`'s helpers build their cotangents from, so that forward
mode runs over a gradient (Hessian-vector products).

Each takes a primal and its tangent (`x`, `x_dot`) and returns the tangent of one piece: the
running products of a product's cotangent, a norm's partial, the phase of its entries, and the
singular vectors a matrix norm's partial is made of. As in `reducing`, no entry is divided by
where it may be 0: where a quotient's divisor is 0, its tangent is 0 too.
"""

from __future__ import annotations

import numpy as np

from .pointwise import divide_or_zero
from .reducing import phase, shared, suffix_scan

__all__ = ["prefix_products", "norm_partial_tangent", "phase_tangent", "singular_tangent"]


# ---- products ---------------------------------------------------------------------------------

def prefix_products(v, v_dot):
    """The products of the entries before each, along the last axis (1 first), and their tangents:
    `p_k = p_(k-1) v_(k-1)` has `p_dot_k = v_(k-1) p_dot_(k-1) + p_(k-1) v_dot_(k-1)`, a linear
    recurrence, run backwards by `suffix_scan` on the flipped axis. Divides by no entry.

    >>> prefix_products(np.array([2.0, 3.0, 4.0]), np.array([1.0, 0.0, 0.0]))
    (array([1., 2., 6.]), array([0., 1., 3.]))
    """
    ones = np.ones_like(v[..., :1])
    w, w_dot = np.concatenate([ones, v[..., :-1]], axis=-1), np.concatenate([0 * ones, v_dot[..., :-1]], axis=-1)
    p = np.cumprod(w, axis=-1)
    b = np.concatenate([0 * ones, p[..., :-1] * w_dot[..., 1:]], axis=-1)
    return p, np.flip(suffix_scan(np.flip(b, -1), np.flip(w, -1)), -1)


# ---- norms ------------------------------------------------------------------------------------

def norm_partial_tangent(x, x_dot, ans, ans_dot, ord, axis, axes):
    """The tangent of the partial `norm_bar` multiplies `g` by (0 where the partial is), for
    `ans = np.linalg.norm(x, ord, axis)` spread over the reduced `axes`, and its tangent `ans_dot`.

    >>> norm_partial_tangent(np.array([3.0, 4.0]), np.array([1.0, 0.0]), 5.0, 0.6, None, None, (0,))
    array([ 0.128, -0.096])
    """
    matrix = len(axes) == 2 and not (axis is None and ord is None)
    if ord is None or (ord == "fro" and matrix) or (ord == 2 and not matrix):  # conj(x) / ans
        return divide_or_zero(np.conj(x_dot), ans) - divide_or_zero(np.conj(x) * ans_dot, ans ** 2)
    if matrix and ord in ("nuc", 2, -2):
        return np.moveaxis(np.conj(singular_tangent(*(np.moveaxis(a, axes, (-2, -1)) for a in (x, x_dot)), ord)), (-2, -1), axes)
    if matrix:  # ord 1, -1, inf, -inf: the phase, at the largest or smallest sums of |x|
        summed, across = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
        return phase_tangent(x, x_dot) * shared(np.sum(np.abs(x), axis=summed, keepdims=True), ord, across)
    if ord == 0:
        return np.zeros_like(x_dot)
    if ord == 1:
        return phase_tangent(x, x_dot)
    if ord in (np.inf, -np.inf):
        return phase_tangent(x, x_dot) * shared(np.abs(x), ord, axes[0])
    # phase(x) r^(p - 1), r = |x| / ans, both 0 where |x| is
    r = divide_or_zero(np.abs(x), ans)
    r_dot = divide_or_zero(np.real(phase(x) * x_dot) - r * ans_dot, ans)
    positive, safe = r > 0, np.where(r > 0, r, 1)
    factor, factor_dot = np.where(positive, safe ** (ord - 1), 0), np.where(positive, (ord - 1) * safe ** (ord - 2) * r_dot, 0)
    return phase_tangent(x, x_dot) * factor + phase(x) * factor_dot


def phase_tangent(x, x_dot):
    """The tangent of `phase(x)`, conj(x) / |x|: 0 for real `x` (its sign), and 0 where x is.

    >>> phase_tangent(np.array([-2.0]), np.array([1.0])), phase_tangent(np.array([1j]), np.array([1.0]))
    (array([0.]), array([1.+0.j]))
    """
    if not np.iscomplexobj(x):
        return np.zeros_like(x_dot)
    magnitude = np.abs(x)
    magnitude_dot = np.real(phase(x) * x_dot)
    return divide_or_zero(np.conj(x_dot) - phase(x) * magnitude_dot, magnitude)


def singular_tangent(x, x_dot, ord):
    """The tangent of `u v^H` for matrices x = U S V^H (thin, full rank): of all singular pairs
    (`ord="nuc"`, the polar factor), or of the largest (2) or smallest (-2), a simple one.

    With dP = U^H dX V: the polar factor moves by U ((dP - dP^H) / (s_i + s_j)) V^H plus the
    parts of dX outside the ranges of U and V, over S. One pair i moves by sum over j != i of
    c_j u_j v_i^H + b_j u_i v_j^H, with c_j = (s_j conj(dP_ij) + s_i dP_ji) / (s_i^2 - s_j^2) and
    b_j = (s_i dP_ij + s_j conj(dP_ji)) / (s_i^2 - s_j^2), plus i Im(dP_ii) / s_i u_i v_i^H and the
    same outside parts (the first-order change of the eigenprojector v_i v_i^H of X^H X, times X / s_i).

    >>> singular_tangent(np.diag([2.0, 1.0]), np.array([[0.0, 3.0], [0.0, 0.0]]), "nuc")
    array([[ 0.,  1.],
           [-1.,  0.]])
    """
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    uh, v = np.conj(np.swapaxes(u, -1, -2)), np.conj(np.swapaxes(vh, -1, -2))
    dp = uh @ x_dot @ v
    outside_v = x_dot @ v - u @ dp  # (I - U U^H) dX V
    outside_u = uh @ x_dot - dp @ vh  # U^H dX (I - V V^H)
    if ord == "nuc":
        skew = (dp - np.conj(np.swapaxes(dp, -1, -2))) / (s[..., :, None] + s[..., None, :])
        return u @ skew @ vh + (outside_v / s[..., None, :]) @ vh + u @ (outside_u / s[..., :, None])
    i = 0 if ord == 2 else -1
    si = s[..., i, None]
    gap = si ** 2 - s ** 2
    gap = np.where(gap == 0, np.inf, gap)  # j = i: no term
    row, column = dp[..., i, :], dp[..., :, i]
    c = (s * np.conj(row) + si * column) / gap  # of u_j v_i^H
    b = (si * row + s * np.conj(column)) / gap  # of u_i v_j^H
    ui, vhi = u[..., :, i, None], vh[..., i, None, :]
    turn = 1j * np.imag(dp[..., i, i, None, None]) if np.iscomplexobj(dp) else 0
    left = u @ c[..., :, None] + (outside_v[..., :, i, None] + turn * ui) / si[..., None]
    right = b[..., None, :] @ vh + outside_u[..., i, None, :] / si[..., None]
    return left @ vhi + ui @ right
