"""Linear algebra beyond products: inverses, solves, determinants and factorizations.

Every rule works on stacks of matrices (the last two axes), as NumPy does; the math lives in
`adjoint.runtime.factorizations`. Factorizations return tuples (`w, v = eigh(a)`), whose
cotangent arrives as a tuple with None for a factor nothing used.

Conventions: the inverse, solve, determinant and power are holomorphic and take complex
matrices too, as do `eig` and `eigvals` of a general (non-symmetric) matrix, whose results are
complex in general: a real matrix takes the real part of its cotangent. `cholesky`, `eigh` and
`eigvalsh` read one triangle of a symmetric matrix and give the cotangent of the triangle
NumPy reads, so finite differences of NumPy's own function agree with it (autograd and JAX
give a symmetric one; the two agree along symmetric directions). The vectors of `eig`, `eigh`,
`svd` and `qr` have gradients only where they are unique: distinct eigenvalues and singular
values, full-rank matrices, reduced (not complete) factors. Sign conventions of eigenvectors do
not matter to a loss that does not depend on them; `eig`'s vectors are differentiated as NumPy
scales them (unit norm, largest entry real), and a loss invariant to their phases gets
autograd's gradient.
"""

import numpy as np

from .. import runtime as adj
from ..registry import rrule

# ---- inverses and solves -------------------------------------------------------------------

@rrule(np.linalg.inv)
def inv_rrule(a):
    ans = np.linalg.inv(a)

    def inv_pullback(g):
        return (adj.inv_bar(g, a, ans),)

    return ans, inv_pullback


@rrule(np.linalg.solve)
def solve_rrule(a, b):
    ans = np.linalg.solve(a, b)

    def solve_pullback(g):
        rhs_bar = adj.solve_rhs_bar(g, a, b)
        return adj.solve_lhs_bar(rhs_bar, a, b, ans), adj.unbroadcast_float(rhs_bar, b)

    return ans, solve_pullback


@rrule(np.linalg.pinv)
def pinv_rrule(a, rcond=None):
    ans = np.linalg.pinv(a, rcond=rcond)

    def pinv_pullback(g):
        return (adj.pinv_bar(g, a, ans),)

    return ans, pinv_pullback


# The residuals and singular values have cotangents too; the rank, an integer, has none.
@rrule(np.linalg.lstsq)
def lstsq_rrule(a, b, rcond=None):
    ans = np.linalg.lstsq(a, b, rcond=rcond)

    def lstsq_pullback(g):
        a_pinv = np.linalg.pinv(a)
        return adj.lstsq_lhs_bar(g, a, b, ans, a_pinv), adj.lstsq_rhs_bar(g, a, b, ans, a_pinv)

    return ans, lstsq_pullback


@rrule(np.linalg.matrix_power)
def matrix_power_rrule(a, n):
    def matrix_power_pullback(g):
        return adj.matrix_power_bar(g, a, n), None

    return np.linalg.matrix_power(a, n), matrix_power_pullback


# ---- determinants ----------------------------------------------------------------------------

@rrule(np.linalg.det)
def det_rrule(a):
    def det_pullback(g):
        return (adj.det_bar(g, a),)

    return np.linalg.det(a), det_pullback


# The sign of a real determinant is piecewise constant: only `logabsdet` carries a gradient.
@rrule(np.linalg.slogdet)
def slogdet_rrule(a):
    ans = np.linalg.slogdet(a)

    def slogdet_pullback(g):
        return (adj.slogdet_bar(g, a, ans),)

    return ans, slogdet_pullback


# ---- factorizations --------------------------------------------------------------------------

@rrule(np.linalg.cholesky)
def cholesky_rrule(a, *, upper=False):
    ans = np.linalg.cholesky(a, upper=upper)

    def cholesky_pullback(g):
        return (adj.cholesky_bar(g, a, ans, upper=upper),)

    return ans, cholesky_pullback


@rrule(np.linalg.eigh)
def eigh_rrule(a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO=UPLO)

    def eigh_pullback(g):
        return (adj.eigh_bar(g, a, ans, UPLO),)

    return ans, eigh_pullback


# The eigenvalues' cotangent needs the eigenvectors, which `eigvalsh` does not compute: the
# pullback does, so the forward costs no more than NumPy's.
@rrule(np.linalg.eigvalsh)
def eigvalsh_rrule(a, UPLO="L"):
    def eigvalsh_pullback(g):
        eig = np.linalg.eigh(a, UPLO=UPLO)
        return (adj.eigh_bar((g, None), a, eig, UPLO),)

    return np.linalg.eigvalsh(a, UPLO=UPLO), eigvalsh_pullback


@rrule(np.linalg.eig)
def eig_rrule(a):
    ans = np.linalg.eig(a)

    def eig_pullback(g):
        return (adj.eig_bar(g, a, ans),)

    return ans, eig_pullback


# As for `eigvalsh`, the pullback computes the eigenvectors; `eig` lists the eigenvalues in
# `eigvals`' order (both run LAPACK's geev).
@rrule(np.linalg.eigvals)
def eigvals_rrule(a):
    def eigvals_pullback(g):
        eig = np.linalg.eig(a)
        return (adj.eig_bar((g, None), a, eig),)

    return np.linalg.eigvals(a), eigvals_pullback


@rrule(np.linalg.svd)
def svd_rrule(a, full_matrices=True, compute_uv=True):
    ans = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)

    def svd_pullback(g):
        return (adj.svd_bar(g, a, ans, compute_uv),)

    return ans, svd_pullback


@rrule(np.linalg.qr)
def qr_rrule(a, mode="reduced"):
    ans = np.linalg.qr(a, mode=mode)

    def qr_pullback(g):
        return (adj.qr_bar(g, a, ans, mode),)

    return ans, qr_pullback
