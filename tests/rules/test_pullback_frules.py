"""Forward rules of the runtime helpers that generated pullback code calls (adjoint/rules/pullbacks.py
and pullback_reductions.py), which forward mode over a gradient (Hessian-vector products) runs through.

Each helper is checked with check_frule at arguments of the shapes its rules pass it, in float64
and float32. Helpers whose arguments the rules compute from one another (`ans = np.max(x)` for
`unreduce_chosen`, `along` from the spacings for `gradient_bars`) are checked through a function
that computes them so; the in-place buffers of loops through a loop's calls. A coverage test
parses adjoint/rules/*.py and the compiler's list below: every helper they call has a forward rule
or is declared without a derivative.
"""

import ast
import dataclasses
import pathlib

import numpy as np
import pytest

import adjoint
from adjoint import frules, registry
from adjoint import runtime as adj
from adjoint.testing import check_frule, check_rrule
from sampling import complex_of, distinct, normal, positive, scalar, with_nan

RULES = pathlib.Path(adjoint.__file__).parent / "rules"

# The primitives the check_rrule tests below exercise (read by test_registry_coverage): helpers
# registered by their partials, which gives them a reverse rule as well.
RRULE_PRIMITIVES = [adj.divide_or_zero, adj.sinc_derivative, adj.digamma]

# Helpers generated code calls that the rules do not (adjoint/compiler emits them).
COMPILER_HELPERS = [
    "add", "append_bar", "buffer_like", "from_buffer", "item_bar", "field_bar", "field_bars", "scatter_add", "setitem_bar",
    "unbroadcast", "unconcat", "unindex", "unpack_bar", "zeros_like", "unstack", "unconcatenate", "unsplit",
    "unreduce", "matmul_lhs_bar", "matmul_rhs_bar",
]

# Not this module's: calls into other functions, containers' own rules (rules/containers.py), and the
# decompositions' helpers.
SKIPPED = {
    "vjp", "closure_vjp", "method_vjp", "star_vjp", "method_function", "unbound", "check_unshared", "construct_vjp",
    "setitem", "append", "add_at",
    "inv_bar", "det_bar", "slogdet_bar", "cholesky_bar", "eigh_bar", "eig_bar", "svd_bar", "pinv_bar", "qr_bar",
    "lstsq_lhs_bar", "lstsq_rhs_bar", "solve_lhs_bar", "solve_rhs_bar", "matrix_power_bar",
}

DTYPES = [np.float64, np.float32]














# (id, build): build(rng, dtype) -> (helper, args, kwargs), as the rules call the helper.
def cases():
    c = complex_of
    return [
        # cotangents
        ("add", lambda r, t: (adj.add, (normal(r, t, 2, 3), normal(r, t, 2, 3)), {})),
        ("add-tuple", lambda r, t: (adj.add, ((normal(r, t, 2), None), (normal(r, t, 2), normal(r, t, 3))), {})),
        ("unbroadcast", lambda r, t: (adj.unbroadcast, (normal(r, t, 4, 2, 3), normal(r, t, 1, 3)), {})),
        ("unbroadcast-complex", lambda r, t: (adj.unbroadcast, (normal(r, c(t), 2, 3), normal(r, t, 3)), {})),
        ("cotangent_like", lambda r, t: (adj.cotangent_like, (normal(r, t, 1, 6), normal(r, t, 6)), {})),
        ("unreduce", lambda r, t: (adj.unreduce, (normal(r, t, 2), normal(r, t, 2, 3)), {"axis": 1})),
        ("unreduce-keepdims", lambda r, t: (adj.unreduce, (normal(r, t, 2, 1), normal(r, t, 2, 3)), {"axis": 1, "keepdims": True})),
        ("unreduce-list", lambda r, t: (adj.unreduce, (scalar(r, t), [normal(r, t, 2), normal(r, t, 2)]), {})),
        ("prod_bar", lambda r, t: (adj.prod_bar, (normal(r, t, 2), normal(r, t, 2, 3)), {"axis": 1})),
        ("prod_bar-zero", lambda r, t: (adj.prod_bar, (scalar(r, t), np.array([2.0, 0.0, 3.0, 0.5], t)), {})),
        ("prod_bar-axes", lambda r, t: (adj.prod_bar, (normal(r, t, 3), normal(r, t, 2, 3, 4)), {"axis": (0, 2)})),
        ("prod_bar-complex", lambda r, t: (adj.prod_bar, (normal(r, c(t), 1, 3), normal(r, c(t), 2, 3)), {"axis": 0, "keepdims": True})),
        ("prod_bar-list", lambda r, t: (adj.prod_bar, (1.5, [0.5, 2.0, -1.0]), {"axis": 0})),
        # products and layouts
        ("matmul_lhs_bar", lambda r, t: (adj.matmul_lhs_bar, (normal(r, t, 2, 4), normal(r, t, 2, 3), normal(r, t, 3, 4)), {})),
        ("matmul_lhs_bar-vector", lambda r, t: (adj.matmul_lhs_bar, (normal(r, t, 4), normal(r, t, 3), normal(r, t, 3, 4)), {})),
        ("matmul_lhs_bar-batch", lambda r, t: (adj.matmul_lhs_bar, (normal(r, t, 5, 2, 4), normal(r, t, 2, 3), normal(r, t, 5, 3, 4)), {})),
        ("matmul_rhs_bar", lambda r, t: (adj.matmul_rhs_bar, (normal(r, t, 2, 4), normal(r, t, 2, 3), normal(r, t, 3, 4)), {})),
        ("matmul_rhs_bar-vector", lambda r, t: (adj.matmul_rhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("dot_lhs_bar", lambda r, t: (adj.dot_lhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("dot_lhs_bar-scalar", lambda r, t: (adj.dot_lhs_bar, (normal(r, t, 2), 3.0, normal(r, t, 2)), {})),
        ("dot_rhs_bar", lambda r, t: (adj.dot_rhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("unravel", lambda r, t: (adj.unravel, (normal(r, t, 6), normal(r, t, 2, 3)), {"order": "F"})),
        ("untranspose", lambda r, t: (adj.untranspose, (normal(r, t, 4, 2, 3), (2, 0, 1)), {})),
        # items and containers
        ("unindex", lambda r, t: (adj.unindex, (normal(r, t, 2), normal(r, t, 3), [0, 0]), {})),
        ("unindex-slice", lambda r, t: (adj.unindex, (normal(r, t, 2, 3), normal(r, t, 4, 3), slice(1, 3)), {})),
        ("unindex-tuple", lambda r, t: (adj.unindex, (normal(r, t, 2), (normal(r, t, 2), 1.5), 0), {})),
        ("unpack_bar", lambda r, t: (adj.unpack_bar, ([normal(r, t, 2), None], normal(r, t, 2, 2)), {})),
        ("unpack_bar-tuple", lambda r, t: (adj.unpack_bar, ([1.0, None], (0.5, 3)), {})),
        ("setitem_bar", lambda r, t: (adj.setitem_bar, (normal(r, t, 3), normal(r, t, 3), slice(0, 2), 0.0), {})),
        ("setitem_bar-array", lambda r, t: (adj.setitem_bar, (normal(r, t, 4, 2), normal(r, t, 4, 2), [0, 3], normal(r, t, 2)), {})),
        ("setitem_bar-list", lambda r, t: (adj.setitem_bar, ([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], 1, 5.0), {})),
        ("append_bar", lambda r, t: (adj.append_bar, ([normal(r, t, 2), normal(r, t, 2), normal(r, t, 2)], normal(r, t, 2)), {})),
        ("item_bar", lambda r, t: (adj.item_bar, ((normal(r, t, 2), normal(r, t, 3)), 1, normal(r, t, 3)), {})),
        ("item_bar-dict", lambda r, t: (adj.item_bar, ({"W": normal(r, t, 2)}, "W", normal(r, t, 2)), {})),
        ("item_bar-absent", lambda r, t: (adj.item_bar, ({"W": normal(r, t, 2)}, "b", normal(r, t, 3)), {})),
        ("unconcat", lambda r, t: (adj.unconcat, ((1.0, 2.0, 3.0), (0.0,), (0.0, 0.0)), {})),
        # products' helpers
        ("tensordot_lhs_bar", lambda r, t: (adj.tensordot_lhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {"axes": ([1], [0])})),
        ("tensordot_rhs_bar", lambda r, t: (adj.tensordot_rhs_bar, (normal(r, t, 3), normal(r, t, 2), normal(r, t, 2, 3)), {"axes": 1})),
        ("inner_lhs_bar", lambda r, t: (adj.inner_lhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("inner_rhs_bar", lambda r, t: (adj.inner_rhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("vecdot_lhs_bar", lambda r, t: (adj.vecdot_lhs_bar, (normal(r, c(t), 2), normal(r, c(t), 3), normal(r, c(t), 2, 3)), {})),
        ("vecdot_rhs_bar", lambda r, t: (adj.vecdot_rhs_bar, (normal(r, c(t), 2), normal(r, c(t), 3), normal(r, c(t), 2, 3)), {})),
        ("matvec_lhs_bar", lambda r, t: (adj.matvec_lhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("matvec_rhs_bar", lambda r, t: (adj.matvec_rhs_bar, (normal(r, t, 2), normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("vecmat_lhs_bar", lambda r, t: (adj.vecmat_lhs_bar, (normal(r, c(t), 2), normal(r, c(t), 2), normal(r, c(t), 2, 2)), {})),
        ("vecmat_rhs_bar", lambda r, t: (adj.vecmat_rhs_bar, (normal(r, c(t), 2), normal(r, c(t), 2), normal(r, c(t), 2, 2)), {})),
        ("kron_lhs_bar", lambda r, t: (adj.kron_lhs_bar, (normal(r, t, 6), normal(r, t, 2), normal(r, t, 3)), {})),
        ("kron_rhs_bar", lambda r, t: (adj.kron_rhs_bar, (normal(r, t, 2, 6), normal(r, t, 1, 2), normal(r, t, 2, 3)), {})),
        ("cross_lhs_bar", lambda r, t: (adj.cross_lhs_bar, (normal(r, t, 3), normal(r, t, 3), normal(r, t, 3)), {})),
        ("cross_rhs_bar", lambda r, t: (adj.cross_rhs_bar, (normal(r, t, 4), normal(r, t, 4, 2), normal(r, t, 2)), {})),
        ("scaled_bar", lambda r, t: (adj.scaled_bar, (normal(r, t, 3), scalar(r, t), normal(r, t, 3)), {})),
        ("multi_dot_bars", lambda r, t: (adj.multi_dot_bars, (normal(r, t, 2, 2), [normal(r, t, 2, 3), normal(r, t, 3, 4), normal(r, t, 4, 2)]), {})),
        ("multi_dot_bars-vectors", lambda r, t: (adj.multi_dot_bars, (1.2, [normal(r, t, 3), normal(r, t, 3, 4), normal(r, t, 4)]), {})),
        ("einsum_bars", lambda r, t: (adj.einsum_bars, (normal(r, t, 2), ("ij,j->i", normal(r, t, 2, 3), normal(r, t, 3))), {})),
        ("einsum_bars-three", lambda r, t: (adj.einsum_bars, (normal(r, t, 2, 4), ("ij,jk,k->ik", normal(r, t, 2, 3), normal(r, t, 3, 4), normal(r, t, 4))), {"optimize": True})),
        ("einsum_bars-trace", lambda r, t: (adj.einsum_bars, (scalar(r, t), ("ii", normal(r, t, 2, 2))), {})),
        # pointwise
        ("divide_or_zero", lambda r, t: (adj.divide_or_zero, (normal(r, t, 3), positive(r, t, 3)), {})),
        ("divide_or_zero-complex", lambda r, t: (adj.divide_or_zero, (normal(r, c(t), 3), positive(r, t, 3)), {})),
        ("sinc_derivative", lambda r, t: (adj.sinc_derivative, (np.array([0.0, 0.05, 0.3, -1.7, 2.5], t),), {})),
        ("digamma", lambda r, t: (adj.digamma, (t(1.7),), {})),
        ("digamma-reflected", lambda r, t: (adj.digamma, (t(-0.4),), {})),
        ("digamma-series", lambda r, t: (adj.digamma, (t(12.5),), {})),
        ("unbroadcast_float", lambda r, t: (adj.unbroadcast_float, (normal(r, t, 2, 3), normal(r, t, 3)), {})),
        ("unbroadcast_float-list", lambda r, t: (adj.unbroadcast_float, (normal(r, t, 2, 2), [0.5, 1]), {})),
        # reductions, scans, averages, norms
        ("zero_at_nan", lambda r, t: (adj.zero_at_nan, (normal(r, t, 2, 3), with_nan(r, t, 2, 3)), {})),
        ("var_bar", lambda r, t: (adj.var_bar, (normal(r, t, 2), normal(r, t, 2, 3)), {"axis": 1, "ddof": 1})),
        ("var_bar-list", lambda r, t: (adj.var_bar, (normal(r, t, 3), [normal(r, t, 3), normal(r, t, 3)]), {"axis": 0})),
        ("var_bar-complex", lambda r, t: (adj.var_bar, (normal(r, t, 2), normal(r, c(t), 2, 3)), {"axis": 1})),
        ("nanvar_bar", lambda r, t: (adj.nanvar_bar, (normal(r, t, 2), with_nan(r, t, 2, 4)), {"axis": 1})),
        ("ptp_bar", lambda r, t: (adj.ptp_bar, (normal(r, t, 2), distinct(r, t, 2, 3)), {"axis": 1})),
        ("cumsum_bar", lambda r, t: (adj.cumsum_bar, (normal(r, t, 2, 3), normal(r, t, 2, 3)), {"axis": 1})),
        ("cumsum_bar-initial", lambda r, t: (adj.cumsum_bar, (normal(r, t, 2, 4), normal(r, t, 2, 3)), {"axis": 1, "include_initial": True})),
        ("cumprod_bar", lambda r, t: (adj.cumprod_bar, (normal(r, t, 2, 3), normal(r, t, 2, 3)), {"axis": 1})),
        ("cumprod_bar-flat", lambda r, t: (adj.cumprod_bar, (normal(r, t, 6), np.array([[1.0, 0.0, 2.0], [3.0, -1.0, 0.5]], t)), {"axis": None})),
        ("cumprod_bar-initial", lambda r, t: (adj.cumprod_bar, (normal(r, t, 5, 2), normal(r, c(t), 4, 2)), {"axis": 0, "include_initial": True})),
        ("average_bar", lambda r, t: (adj.average_bar, (normal(r, t, 2), normal(r, t, 2, 3), positive(r, t, 3)), {"axis": 1})),
        ("average_bar-returned", lambda r, t: (adj.average_bar, ((normal(r, t, 2), None), normal(r, t, 2, 3), positive(r, t, 3)), {"axis": 1, "returned": True})),
        ("average_bar-full", lambda r, t: (adj.average_bar, (normal(r, t, 2, 1), normal(r, t, 2, 3), positive(r, t, 2, 3)), {"axis": 1, "keepdims": True})),
        ("average_bar-unweighted", lambda r, t: (adj.average_bar, (scalar(r, t), normal(r, t, 2, 3)), {})),
        ("average_weights_bar", lambda r, t: (adj.average_weights_bar, (normal(r, t, 2), normal(r, t, 2, 3), positive(r, t, 3)), {"axis": 1})),
        ("average_weights_bar-returned", lambda r, t: (adj.average_weights_bar, ((normal(r, t, 2), normal(r, t, 2)), normal(r, t, 2, 3), positive(r, t, 3)), {"axis": 1, "returned": True})),
        ("average_weights_bar-axes", lambda r, t: (adj.average_weights_bar, (normal(r, t, 3), normal(r, t, 2, 3, 4), positive(r, t, 4, 2)), {"axis": (2, 0)})),
        ("average_weights_bar-full", lambda r, t: (adj.average_weights_bar, (normal(r, t, 2, 1), normal(r, t, 2, 3), positive(r, t, 2, 3)), {"axis": 1, "keepdims": True})),
        *[(f"norm_bar-{ord}-{kind.__name__}", norm_case(ord, kind, 1)) for ord in [None, 1, np.inf, -np.inf, 3, 0.5, 0] for kind in (real, cplx)],
        *[(f"norm_bar-matrix-{ord}-{kind.__name__}-{shape}", norm_case(ord, kind, (-2, -1), shape))
          for ord in ["fro", "nuc", 2, -2, 1, -1, np.inf] for kind in (real, cplx) for shape in [(3, 3), (3, 2), (2, 2, 3)]],
        ("norm_bar-keepdims", norm_case(None, real, 1, keepdims=True)),
        ("norm_bar-all", norm_case(None, real, None)),
        ("logsumexp_bar", lambda r, t: logsumexp_case(adj.logsumexp_bar, r, t)),
        ("logsumexp_b_bar", lambda r, t: logsumexp_case(adj.logsumexp_b_bar, r, t)),
        ("logsumexp_bar-unweighted", lambda r, t: logsumexp_case(adj.logsumexp_bar, r, t, weighted=False)),
        # shapes and spacings
        ("atleast_bar", lambda r, t: (adj.atleast_bar, ((normal(r, t, 1, 2), None), (normal(r, t, 2), 1.5)), {})),
        ("atleast_bar-one", lambda r, t: (adj.atleast_bar, (normal(r, t, 1, 3, 1), (normal(r, t, 3),)), {})),
        ("diff_with_ends", lambda r, t: (adj.diff_with_ends, (normal(r, t, 4), 1, -1, scalar(r, t), normal(r, t, 2)), {})),
        ("diff_with_ends-plain", lambda r, t: (adj.diff_with_ends, (normal(r, t, 2, 4), 2, 1, None, None), {})),
        ("diff_bar", lambda r, t: (adj.diff_bar, (normal(r, t, 2), normal(r, t, 3)), {})),
        ("diff_bar-ends", lambda r, t: (adj.diff_bar, (normal(r, t, 2, 4), normal(r, t, 2, 3), 2, 1, 0.5, np.ones((2, 2), t)), {})),
        # assembly, selections, spectra
        ("as_column", lambda r, t: (adj.as_column, (normal(r, t, 3),), {})),
        ("unconcatenate", lambda r, t: (adj.unconcatenate, (normal(r, t, 5), [normal(r, t, 2), normal(r, t, 3)]), {})),
        ("unconcatenate-flat", lambda r, t: (adj.unconcatenate, (normal(r, t, 3), (1.0, normal(r, t, 1, 2))), {"axis": None})),
        ("unconcatenate-vstack", lambda r, t: (adj.unconcatenate, (normal(r, t, 3, 2), (normal(r, t, 2), normal(r, t, 2, 2))), {"axis": 0, "promote": np.atleast_2d})),
        ("unstack", lambda r, t: (adj.unstack, (normal(r, t, 2, 2), (normal(r, t, 2), normal(r, t, 2))), {"axis": 1})),
        ("unblock", lambda r, t: (adj.unblock, (normal(r, t, 2, 3), [[normal(r, t, 1, 1), normal(r, t, 1, 2)], [normal(r, t, 3)]]), {})),
        ("unsplit", lambda r, t: (adj.unsplit, ([None, normal(r, t, 1)], [normal(r, t, 2), normal(r, t, 1)], normal(r, t, 3)), {})),
        ("untile", lambda r, t: (adj.untile, (normal(r, t, 2, 3), normal(r, t, 3), (2, 1)), {})),
        ("unrepeat", lambda r, t: (adj.unrepeat, (normal(r, t, 5), normal(r, t, 3), [2, 0, 3]), {})),
        ("copies_bar", lambda r, t: (adj.copies_bar, (normal(r, t, 3), normal(r, t, 2), np.array([1, -1, 1])), {})),
        ("undiagonal", lambda r, t: (adj.undiagonal, (normal(r, t, 2), normal(r, t, 2, 3), 1), {})),
        ("diag_bar", lambda r, t: (adj.diag_bar, (normal(r, t, 3, 3), normal(r, t, 2), 1), {})),
        ("diag_bar-matrix", lambda r, t: (adj.diag_bar, (normal(r, t, 2), normal(r, t, 2, 2)), {})),
        ("untake", lambda r, t: (adj.untake, (normal(r, t, 3), normal(r, t, 3), [0, 2, 0]), {})),
        ("untake_along_axis", lambda r, t: (adj.untake_along_axis, (normal(r, t, 1, 2), normal(r, t, 1, 3), np.array([[2, 2]]), 1), {})),
        ("unpartition", lambda r, t: unpartition_case(r, t)),
        ("unselect", lambda r, t: (adj.unselect, (normal(r, t, 3), [np.array([1, 0, 1]) > 0, np.array([1, 1, 0]) > 0], [normal(r, t, 3), 2.0]), {})),
        ("unselect_default", lambda r, t: (adj.unselect_default, (normal(r, t, 3), [np.array([True, False, False])], 0.5), {})),
        ("unresize", lambda r, t: (adj.unresize, (normal(r, c(t), 3), normal(r, t, 2)), {})),
        ("unresize-pad", lambda r, t: (adj.unresize, (normal(r, c(t), 2), normal(r, c(t), 4)), {})),
        ("hermitian_fold", lambda r, t: (adj.hermitian_fold, (normal(r, c(t), 2, 4),), {"axis": -1})),
    ]


def real(dtype):
    return dtype


def cplx(dtype):
    return complex_of(dtype)


def norm_case(ord, kind, axis, shape=(2, 4), keepdims=False):
    def build(r, t):
        x = normal(r, kind(t), *shape)
        ans = np.linalg.norm(x, ord, axis=axis, keepdims=keepdims)
        return adj.norm_bar, (normal(r, t, *np.shape(ans)), x, ans), {"ord": ord, "axis": axis, "keepdims": keepdims}

    return build


def logsumexp_case(helper, r, t, weighted=True):
    special = pytest.importorskip("scipy.special")
    a, b = normal(r, t, 2, 3), positive(r, t, 3) if weighted else None
    ans = special.logsumexp(a, axis=1, b=b)
    return helper, (normal(r, t, 2), a, ans, 1, b), {}  # `b` by position: keywords carry no tangent


def unpartition_case(r, t):
    a = distinct(r, t, 2, 5)
    return adj.unpartition, (normal(r, t, 2, 5), a, np.partition(a, 2, axis=1), 1), {}


CASES = cases()


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("build", [b for _, b in CASES], ids=[name for name, _ in CASES])
def test_forward_rule_of_helper(build, dtype):
    helper, args, kwargs = build(np.random.default_rng(0), dtype)
    check_frule(helper, *args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("helper, args", [
    (adj.divide_or_zero, lambda r, t: (normal(r, t, 3), positive(r, t, 3))),
    (adj.sinc_derivative, lambda r, t: (np.array([0.0, 0.05, 0.3, -1.7], t),)),
    (adj.digamma, lambda r, t: (1.7,)),
], ids=["divide_or_zero", "sinc_derivative", "digamma"])
def test_reverse_rule_of_elementwise_helper(helper, args, dtype):
    check_rrule(helper, *args(np.random.default_rng(0), dtype))


def test_divide_or_zero_takes_zero_slopes_where_the_divisor_is_zero():
    rule = frules.lookup(adj.divide_or_zero)
    value, tangent = rule.frule((np.array([1.0, 2.0]), np.array([0.0, 4.0])), (np.ones(2), np.ones(2)))
    np.testing.assert_allclose(tangent, [0.0, 0.25 - 2.0 / 16])


def test_the_second_derivatives_of_sinc_and_log_gamma():
    x = np.array([0.0, 1e-3, 0.1, 0.5])
    series = -np.pi ** 2 / 3 + np.pi ** 4 / 10 * x ** 2 - np.pi ** 6 / 168 * x ** 4  # sinc'' near 0, to x^4
    np.testing.assert_allclose(frules.lookup(adj.sinc_derivative).frule((x[:2],), (np.ones(2),))[1], series[:2], rtol=1e-12)
    assert frules.lookup(adj.digamma).frule((1.0,), (1.0,))[1] == pytest.approx(np.pi ** 2 / 6, rel=1e-14)
    assert frules.lookup(adj.digamma).frule((0.5,), (1.0,))[1] == pytest.approx(np.pi ** 2 / 2, rel=1e-14)


# ---- helpers whose arguments the rules compute from one another --------------------------------------

def chosen_bar(g, x):
    """`np.max(x, axis=1)`'s cotangent, as its rule computes it from the maximum."""
    return adj.unreduce_chosen(g, x, np.max(x, axis=1), axis=1)


@frules.frule(chosen_bar)
def chosen_bar_frule(primals, tangents):
    (g, x), (g_dot, x_dot) = primals, tangents
    at = np.argmax(x, axis=1)[:, None]
    ans, ans_dot = np.max(x, axis=1), np.take_along_axis(x_dot, at, axis=1)[:, 0]
    return frules.lookup(adj.unreduce_chosen).frule((g, x, ans), (g_dot, x_dot, ans_dot), axis=1)


def gradient_bars_of(g, f, spacings, ans, axis=None, edge_order=1):
    """`np.gradient`'s cotangents, as its rule computes them: `along` from the spacings."""
    return adj.gradient_bars(g, f, spacings, adj.gradient_spacings(f, spacings, axis), ans, edge_order)


@frules.frule(gradient_bars_of)
def gradient_bars_of_frule(primals, tangents, axis=None, edge_order=1):
    (g, f, spacings, ans), (g_dot, f_dot, spacings_dot, ans_dot) = primals, tangents
    along = adj.gradient_spacings(f, spacings, axis)
    assert registry.is_non_differentiable(adj.gradient_spacings)  # `along` carries no tangent
    rule = frules.lookup(adj.gradient_bars)
    return rule.frule((g, f, spacings, along, ans, edge_order), (g_dot, f_dot, spacings_dot, None, ans_dot, None))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_unreduce_chosen_keeps_the_chosen_entries(dtype):
    rng = np.random.default_rng(0)
    check_frule(chosen_bar, normal(rng, dtype, 2), distinct(rng, dtype, 2, 3))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("shape, spacings, axis, edge_order", [
    ((5,), (2.0,), None, 1), ((3, 4), (0.5, 2.0), None, 2), ((3, 4), (0.5,), None, 1), ((3, 4), (), 1, 2),
    ((3, 4), (1.5,), (0, 1), 1),
])
def test_gradient_bars_through_the_spacings(shape, spacings, axis, edge_order, dtype):
    rng = np.random.default_rng(0)
    f = normal(rng, dtype, *shape)
    ans = np.gradient(f, *spacings, axis=axis, edge_order=edge_order)
    several = isinstance(ans, tuple)
    g = tuple(normal(rng, dtype, *shape) for _ in ans) if several else normal(rng, dtype, *shape)
    if several:
        g = (None, *g[1:])  # an axis nothing flowed into
    check_frule(gradient_bars_of, g, f, spacings, ans, axis=axis, edge_order=edge_order)


# ---- cotangents that are dicts or objects (check_frule compares arrays and sequences) ------------------

def test_dict_and_object_cotangents_take_the_tangent_where_the_cotangent_goes():
    g, g_dot = np.ones(2), np.arange(2.0)
    value, tangent = frules.lookup(adj.unindex).frule((g, {"a": 1.0, "b": g}, "b"), (g_dot, None, None))
    assert value.keys() == tangent.keys() == {"b"} and tangent["b"] is g_dot

    @dataclasses.dataclass
    class Dense:
        W: np.ndarray

    value, tangent = frules.lookup(adj.field_bar).frule((g, Dense(g), "W"), (g_dot, None, None))
    assert isinstance(tangent, adj.Tangent) and tangent.W is g_dot
    value, tangent = frules.lookup(adj.add).frule(({"w": g}, {"w": g, "b": 1.0}), ({"w": g_dot}, None))
    np.testing.assert_array_equal(tangent["w"], g_dot)
    assert tangent["b"] == 0.0


# ---- buffers, updated in place ---------------------------------------------------------------------------

@pytest.mark.parametrize("x, reads", [
    (np.zeros((3, 2)), [(0, np.ones(2)), ([2, 2], np.ones((2, 2))), (slice(0, 2), np.ones(2))]),
    (np.zeros(3, np.float32), [(1, 2.0), (1, 3.0)]),
    ((0.5, np.zeros(2), 3), [(0, 1.0), (1, np.ones(2)), (0, 2.0)]),
    ({"w": 1.0, "b": np.zeros(2)}, [("w", 1.0), ("b", np.ones(2))]),
])
def test_a_buffers_tangent_is_a_buffer_filled_in_place(x, reads):
    """A loop reading `x[i]` gathers its cotangent in a buffer: the tangents of the values added
    gather in the buffer's tangent, which `from_buffer` reads out, as the cotangent of `x`."""
    rng = np.random.default_rng(0)
    buffer, buffer_dot = frules.lookup(adj.buffer_like).frule((x,), (None,))
    assert buffer_dot is not buffer
    scatter = frules.lookup(adj.scatter_add).frule
    values_dot = []
    for index, value in reads:
        value_dot = rng.normal(size=np.shape(value)) if np.ndim(value) else float(rng.normal())
        values_dot.append(value_dot)
        returned, returned_dot = scatter((buffer, index, value), (buffer_dot, None, value_dot))
        assert returned is buffer and returned_dot is buffer_dot
    returned, returned_dot = scatter((buffer, 0 if not isinstance(x, dict) else "w", 1.0), (buffer_dot, None, None))
    assert returned is buffer and returned_dot is buffer_dot
    x_bar, x_bar_dot = frules.lookup(adj.from_buffer).frule((buffer, x), (buffer_dot, None))
    expected = adj.buffer_like(x)
    for (index, _), value_dot in zip(reads, values_dot):  # linear: the same reads of the tangents
        adj.scatter_add(expected, index, value_dot)
    expected = adj.from_buffer(expected, x)
    for got, want in zip(_leaves(x_bar_dot), _leaves(expected)):
        np.testing.assert_allclose(got, want)
    assert np.asarray(_leaves(x_bar_dot)[0]).dtype == np.asarray(_leaves(x_bar)[0]).dtype


def _leaves(value):
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if isinstance(value, (tuple, list)):
        return [v for v in value if v is not None]
    return [value]


def test_scatter_add_refuses_a_tangent_with_no_buffer_to_go_into():
    with pytest.raises(adj.RuleError, match="buffer"):
        frules.lookup(adj.scatter_add).frule((np.zeros(2), 0, 1.0), (None, None, 1.0))


# ---- coverage ---------------------------------------------------------------------------------------------

def _helpers_called_by_rules() -> set:
    """The names of the `adj.<name>` (and `adj.<module>.<name>`) the rules' modules read, outside
    forward-mode code, which generated pullback code never runs: forward rules (functions named
    or decorated `*frule*`, `*forward*`, `*jvp*`) and this module's subject, rules/pullbacks.py and
    rules/pullback_reductions.py."""
    names = set()
    for path in sorted(RULES.glob("*.py")):
        if path.name in ("pullbacks.py", "pullback_reductions.py"):
            continue
        tree = ast.parse(path.read_text())
        forward = {
            id(node) for function in ast.walk(tree) if isinstance(function, ast.FunctionDef) and _is_forward(function)
            for node in ast.walk(function)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in forward and _dotted(node)[:1] == ["adj"]:
                names.add(".".join(_dotted(node)[1:]))
    return {n for n in names if not any(other.startswith(n + ".") for other in names)}  # `structs.is_struct`, not `structs`


def _is_forward(function) -> bool:
    decorators = [d.func if isinstance(d, ast.Call) else d for d in function.decorator_list]
    return any(
        word in name for name in [function.name, *(_dotted(d)[-1] for d in decorators)] for word in ("frule", "forward", "jvp")
    )


def _dotted(node) -> list:
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + [node.attr]
    return [node.id] if isinstance(node, ast.Name) else ["?"]


def _helper(name):
    obj = adj
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_helper_generated_code_calls_has_a_forward_rule_or_none_to_have():
    names = (_helpers_called_by_rules() | set(COMPILER_HELPERS)) - SKIPPED - {"RuleError"}
    assert {"unbroadcast", "matmul_lhs_bar", "norm_bar", "structs.is_struct"} <= names
    missing = sorted(
        name for name in names
        if frules.lookup(_helper(name)) is None and not registry.is_non_differentiable(_helper(name))
    )
    assert not missing, f"helpers with neither a forward rule nor a non_differentiable declaration: {missing}"
