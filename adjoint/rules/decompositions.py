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

Forward rules follow the same conventions (`adjoint.runtime.perturbations`); each is written
with its reverse rule's parameters after the tangents of the matrix operands (`_forward`).
"""

import inspect

import numpy as np

from .. import runtime as adj
from ..frules import frule
from ..registry import rrule
from ..runtime import perturbations


def _forward(primitive, operands=1):
    """Register a forward rule written as `rule(*dots, *args, **kwargs)`: the tangents of the
    first `operands` positional arguments (zeros for a constant one), then the primitive's own
    arguments. Where nothing varies the primitive alone runs, with a zero tangent."""

    def register(rule):
        keywords = set(inspect.signature(rule).parameters)

        def forward_rule(primals, tangents, **kwargs):
            for keyword in kwargs.keys() - keywords:  # as the reverse rule refuses it
                raise adj.RuleError(f"adjoint's rule for np.linalg.{primitive.__name__} does not support "
                                    f"the keyword argument `{keyword}=`")
            tangents = tuple(tangents) + (None,) * (len(primals) - len(tangents))
            if all(t is None for t in tangents[:operands]):
                value = primitive(*primals, **kwargs)
                return value, adj.zero_tangent(value)
            dots = [adj.tangent_or_zeros(t, p) for p, t in zip(primals[:operands], tangents)]
            return rule(*dots, *primals, **kwargs)

        forward_rule.__name__ = forward_rule.__qualname__ = rule.__name__  # as generated code calls it
        frule(primitive)(forward_rule)
        return rule

    return register

# ---- inverses and solves -------------------------------------------------------------------

@rrule(np.linalg.inv)
def inv_rrule(a):
    ans = np.linalg.inv(a)

    def inv_pullback(g):
        return (adj.inv_bar(g, a, ans),)

    return ans, inv_pullback


@_forward(np.linalg.inv)
def inv_frule(a_dot, a):
    ans = np.linalg.inv(a)
    return ans, adj.tangent_like(-ans @ a_dot @ ans, ans)


@rrule(np.linalg.solve)
def solve_rrule(a, b):
    ans = np.linalg.solve(a, b)

    def solve_pullback(g):
        rhs_bar = adj.solve_rhs_bar(g, a, b)
        return adj.solve_lhs_bar(rhs_bar, a, b, ans), adj.unbroadcast_float(rhs_bar, b)

    return ans, solve_pullback


@_forward(np.linalg.solve, operands=2)
def solve_frule(a_dot, b_dot, a, b):
    x = np.linalg.solve(a, b)
    return x, adj.tangent_like(perturbations.solve_dot(a_dot, b_dot, a, b, x), x)


@rrule(np.linalg.pinv)
def pinv_rrule(a, rcond=None):
    ans = np.linalg.pinv(a, rcond=rcond)

    def pinv_pullback(g):
        return (adj.pinv_bar(g, a, ans),)

    return ans, pinv_pullback


@_forward(np.linalg.pinv)
def pinv_frule(a_dot, a, rcond=None):
    ans = np.linalg.pinv(a, rcond=rcond)
    return ans, adj.tangent_like(perturbations.pinv_dot(a_dot, a, ans), ans)


# The residuals and singular values have cotangents too; the rank, an integer, has none.
@rrule(np.linalg.lstsq)
def lstsq_rrule(a, b, rcond=None):
    ans = np.linalg.lstsq(a, b, rcond=rcond)

    def lstsq_pullback(g):
        a_pinv = np.linalg.pinv(a)
        return adj.lstsq_lhs_bar(g, a, b, ans, a_pinv), adj.lstsq_rhs_bar(g, a, b, ans, a_pinv)

    return ans, lstsq_pullback


# The singular values move with the factors of `a`, which also give `pinv(a)`.
@_forward(np.linalg.lstsq, operands=2)
def lstsq_frule(a_dot, b_dot, a, b, rcond=None):
    ans = np.linalg.lstsq(a, b, rcond=rcond)
    return ans, perturbations.lstsq_dot(a_dot, b_dot, a, b, ans, np.linalg.svd(a, full_matrices=False))


@rrule(np.linalg.matrix_power)
def matrix_power_rrule(a, n):
    def matrix_power_pullback(g):
        return adj.matrix_power_bar(g, a, n), None

    return np.linalg.matrix_power(a, n), matrix_power_pullback


@_forward(np.linalg.matrix_power)
def matrix_power_frule(a_dot, a, n):
    ans = np.linalg.matrix_power(a, n)
    return ans, adj.tangent_like(perturbations.matrix_power_dot(a_dot, a, n), ans)


# ---- determinants ----------------------------------------------------------------------------

@rrule(np.linalg.det)
def det_rrule(a):
    def det_pullback(g):
        return (adj.det_bar(g, a),)

    return np.linalg.det(a), det_pullback


# d det = sum(cofactors * a_dot): the rrule's cofactors, exact where `a` is singular.
@_forward(np.linalg.det)
def det_frule(a_dot, a):
    ans = np.linalg.det(a)
    return ans, adj.tangent_like(np.sum(adj.det_bar(1.0, a) * a_dot, axis=(-2, -1)), ans)


# The sign of a real determinant is piecewise constant: only `logabsdet` carries a gradient.
@rrule(np.linalg.slogdet)
def slogdet_rrule(a):
    ans = np.linalg.slogdet(a)

    def slogdet_pullback(g):
        return (adj.slogdet_bar(g, a, ans),)

    return ans, slogdet_pullback


# d log det a = trace(inv(a) a_dot): its real part moves `logabsdet`, its imaginary part turns
# a complex `sign` (a real one does not move).
@_forward(np.linalg.slogdet)
def slogdet_frule(a_dot, a):
    ans = np.linalg.slogdet(a)
    d_log = np.trace(np.linalg.solve(a, a_dot), axis1=-2, axis2=-1)
    sign_dot = ans.sign * 1j * np.imag(d_log)
    return ans, type(ans)(adj.tangent_like(sign_dot, ans.sign), adj.tangent_like(np.real(d_log), ans.logabsdet))


# ---- factorizations --------------------------------------------------------------------------

@rrule(np.linalg.cholesky)
def cholesky_rrule(a, *, upper=False):
    ans = np.linalg.cholesky(a, upper=upper)

    def cholesky_pullback(g):
        return (adj.cholesky_bar(g, a, ans, upper=upper),)

    return ans, cholesky_pullback


@_forward(np.linalg.cholesky)
def cholesky_frule(a_dot, a, *, upper=False):
    ans = np.linalg.cholesky(a, upper=upper)
    return ans, adj.tangent_like(perturbations.cholesky_dot(a_dot, ans, upper), ans)


@rrule(np.linalg.eigh)
def eigh_rrule(a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO=UPLO)

    def eigh_pullback(g):
        return (adj.eigh_bar(g, a, ans, UPLO),)

    return ans, eigh_pullback


@_forward(np.linalg.eigh)
def eigh_frule(a_dot, a, UPLO="L"):
    ans = np.linalg.eigh(a, UPLO=UPLO)
    return ans, perturbations.eigh_dot(a_dot, ans, UPLO)


# The eigenvalues' cotangent needs the eigenvectors, which `eigvalsh` does not compute: the
# pullback does, so the forward costs no more than NumPy's.
@rrule(np.linalg.eigvalsh)
def eigvalsh_rrule(a, UPLO="L"):
    def eigvalsh_pullback(g):
        eig = np.linalg.eigh(a, UPLO=UPLO)
        return (adj.eigh_bar((g, None), a, eig, UPLO),)

    return np.linalg.eigvalsh(a, UPLO=UPLO), eigvalsh_pullback


# As the pullback, the tangent needs the eigenvectors, so it computes them.
@_forward(np.linalg.eigvalsh)
def eigvalsh_frule(a_dot, a, UPLO="L"):
    ans = np.linalg.eigvalsh(a, UPLO=UPLO)
    vectors = np.linalg.eigh(a, UPLO=UPLO).eigenvectors
    return ans, adj.tangent_like(perturbations.eigvalsh_dot(a_dot, vectors, UPLO), ans)


@rrule(np.linalg.eig)
def eig_rrule(a):
    ans = np.linalg.eig(a)

    def eig_pullback(g):
        return (adj.eig_bar(g, a, ans),)

    return ans, eig_pullback


@_forward(np.linalg.eig)
def eig_frule(a_dot, a):
    ans = np.linalg.eig(a)
    return ans, perturbations.eig_dot(a_dot, ans)


# As for `eigvalsh`, the pullback computes the eigenvectors; `eig` lists the eigenvalues in
# `eigvals`' order (both run LAPACK's geev).
@rrule(np.linalg.eigvals)
def eigvals_rrule(a):
    def eigvals_pullback(g):
        eig = np.linalg.eig(a)
        return (adj.eig_bar((g, None), a, eig),)

    return np.linalg.eigvals(a), eigvals_pullback


@_forward(np.linalg.eigvals)
def eigvals_frule(a_dot, a):
    ans = np.linalg.eigvals(a)
    return ans, adj.tangent_like(perturbations.eigvals_dot(a_dot, np.linalg.eig(a)), ans)


@rrule(np.linalg.svd)
def svd_rrule(a, full_matrices=True, compute_uv=True):
    ans = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)

    def svd_pullback(g):
        return (adj.svd_bar(g, a, ans, compute_uv),)

    return ans, svd_pullback


# The singular values alone move with the reduced factors, which `compute_uv=False` does not give.
@_forward(np.linalg.svd)
def svd_frule(a_dot, a, full_matrices=True, compute_uv=True):
    ans = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    if compute_uv:
        return ans, perturbations.svd_dot(a_dot, ans)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return ans, adj.tangent_like(perturbations.singular_values_dot(a_dot, u, vh), ans)


@rrule(np.linalg.qr)
def qr_rrule(a, mode="reduced"):
    ans = np.linalg.qr(a, mode=mode)

    def qr_pullback(g):
        return (adj.qr_bar(g, a, ans, mode),)

    return ans, qr_pullback


@_forward(np.linalg.qr)
def qr_frule(a_dot, a, mode="reduced"):
    ans = np.linalg.qr(a, mode=mode)
    return ans, perturbations.qr_dot(a_dot, a, ans, mode)
