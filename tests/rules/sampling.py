"""Inputs for the systematic rule tests: shapes, broadcasting pairs, axes and dtypes.

Every rule test draws its arguments here, so each rule is checked over the same grid: a Python
float, a 0-d array, `(3,)`, `(2, 3)` and `(1, 3)`, broadcasting pairs, every `axis`/`keepdims`
variant, in float32 and float64.
"""

import itertools

import numpy as np
import pytest

from adjoint.testing import check_rrule

SHAPES = [None, (), (3,), (2, 3), (1, 3)]  # None: a Python float
ARRAY_SHAPES = [(), (3,), (2, 3), (1, 3)]
BROADCAST_PAIRS = [
    ((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 3), (1, 3)), ((1, 3), (2, 1)),
    ((2, 3), ()), (None, (2, 3)), ((3,), None), (None, None),
]
DTYPES = [np.float32, np.float64]


def sample(rng, domain, shape, dtype=np.float64):
    """A Python float (`shape` None) or an array of `dtype`, drawn from `domain`:

    - "real": normal; "positive": in (0.5, 2); "nonzero": +-(0.5, 2);
    - "unit": in (-0.9, 0.9) (arcsin, arctanh, tan); "above_one": in (1.1, 3) (arccosh);
    - "distinct": a permutation of well-separated values (sort, max without ties);
    - "complex": complex normal (complex64 for float32, complex128 for float64).
    """
    size = 1 if shape is None else shape
    count = int(np.prod(size))
    if domain == "real":
        values = rng.normal(size=size)
    elif domain == "positive":
        values = rng.uniform(0.5, 2.0, size=size)
    elif domain == "nonzero":
        values = rng.choice([-1.0, 1.0], size=size) * rng.uniform(0.5, 2.0, size=size)
    elif domain == "unit":
        values = rng.uniform(-0.9, 0.9, size=size)
    elif domain == "above_one":
        values = rng.uniform(1.1, 3.0, size=size)
    elif domain == "distinct":
        values = np.reshape(rng.permutation(count) * 0.5 - count / 4 + rng.uniform(0, 0.1, size=count), size)
    elif domain == "complex":
        values = rng.normal(size=size) + 1j * rng.normal(size=size)
        dtype = np.complex64 if dtype == np.float32 else np.complex128
    else:
        raise ValueError(domain)
    if shape is None:
        return complex(values.flat[0]) if domain == "complex" else float(values.flat[0])
    return np.asarray(values, dtype=dtype)


def axis_variants(ndim):
    """`(axis, keepdims)` pairs for a reduction of an array with `ndim` dimensions: no axis,
    each axis (and its negative), every pair of axes, with and without `keepdims`."""
    axes = [None] + list(range(ndim)) + [-1] * (ndim > 0)
    axes += [tuple(pair) for pair in itertools.combinations(range(ndim), 2)]
    return [(axis, keepdims) for axis in axes for keepdims in (False, True)]


def check_each(primitive, x, variants):
    """check_rrule of `primitive(x, ...)` at each variant of its other arguments: a dict of
    keywords, or a tuple of positional arguments (one test for many calls, for speed); a
    failure says which variant."""
    for variant in variants:
        args, keywords = (variant, {}) if isinstance(variant, tuple) else ((), variant)
        try:
            check_rrule(primitive, x, *args, **keywords)
        except AssertionError as failure:
            failure.add_note(f"with {variant}")
            raise


def grid(*parts):
    """The product of parameter lists, flattened into tuples (for `pytest.mark.parametrize`)."""
    return [tuple(itertools.chain.from_iterable(p if isinstance(p, tuple) else (p,) for p in combo))
            for combo in itertools.product(*parts)]


# ---- grids of the elementwise rule tests (test_elementwise, test_extrema, test_trigonometric) ------

def case_ids(cases):
    """The ids of `(id, primitive, ...)` cases, for `pytest.mark.parametrize`."""
    return [case[0] for case in cases]


def value_id(value):
    """A parameter's id: a function's qualified name (`ndarray.clip`), or the value as text."""
    return getattr(value, "__qualname__", None) or str(value)


def shape_id(shape):
    return "float" if shape is None else str(shape).replace(" ", "")


# A Python float, and each array shape in float32 and float64.
UNARY_GRID = [pytest.param(None, np.float64, id="float")] + [
    pytest.param(shape, dtype, id=f"{shape_id(shape)}-{np.dtype(dtype).name}")
    for shape in ARRAY_SHAPES for dtype in DTYPES
]
# Each broadcasting pair in float32 and float64 (two Python floats once).
BINARY_GRID = [
    pytest.param(pair, dtype, id=f"{shape_id(pair[0])}-{shape_id(pair[1])}-{np.dtype(dtype).name}")
    for pair in BROADCAST_PAIRS for dtype in DTYPES
    if pair != (None, None) or dtype is np.float64
]
# Through the compiler, a smaller grid: the rule's math is the same, what differs is how the
# generated code reaches it (inlined, with or without unbroadcasting, casts of float32).
UNARY_GRAD_GRID = [
    pytest.param(None, np.float64, id="float"),
    pytest.param((), np.float64, id="()-float64"),
    pytest.param((2, 3), np.float64, id="(2,3)-float64"),
    pytest.param((1, 3), np.float32, id="(1,3)-float32"),
]
BINARY_GRAD_GRID = [
    pytest.param(((2, 3), (2, 3)), np.float64, id="(2,3)-(2,3)-float64"),
    pytest.param(((1, 3), (2, 1)), np.float64, id="(1,3)-(2,1)-float64"),
    pytest.param((None, (2, 3)), np.float64, id="float-(2,3)-float64"),
    pytest.param((None, None), np.float64, id="float-float"),
    pytest.param(((2, 3), (3,)), np.float32, id="(2,3)-(3,)-float32"),
    pytest.param(((3,), None), np.float32, id="(3,)-float-float32"),
]


# A Python complex, complex128 and complex64 (`sample(rng, "complex", shape, dtype)`).
COMPLEX_GRID = [
    pytest.param(None, np.float64, id="complex"),
    pytest.param((2, 3), np.float64, id="(2,3)-complex128"),
    pytest.param((3,), np.float32, id="(3,)-complex64"),
]


def binary_args(rng, domains, shapes, dtype):
    """One argument per `(domain, shape)`, all of `dtype`."""
    return tuple(sample(rng, domain, shape, dtype) for domain, shape in zip(domains, shapes))


# ---- random arrays for the tests of the pullback helpers' rules (test_pullback_frules, _rrules) ----

def complex_of(dtype):
    return np.complex64 if dtype == np.float32 else np.complex128


def normal(rng, dtype, *shape):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return np.asarray(x, dtype=dtype)


def positive(rng, dtype, *shape):
    return np.asarray(0.5 + rng.random(shape), dtype=dtype)


def distinct(rng, dtype, *shape):
    """Entries at least 0.5 apart: no ties for max, min or ranks to blur finite differences."""
    return np.asarray(rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.5 + 0.1 * rng.random(shape), dtype=dtype)


def with_nan(rng, dtype, *shape):
    x = normal(rng, dtype, *shape)
    x.flat[1] = np.nan
    return x


def scalar(rng, dtype):
    return dtype(rng.normal())
