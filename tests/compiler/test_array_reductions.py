"""compiler.array_reductions: reductions called as methods of arrays NumPy made get NumPy's rules
stitched in, as the functions do; methods of values of unknown type stay run-time calls."""

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(0)


def softmax_loss(z, w):
    h = np.tanh(z @ w)
    m = h.max(axis=1, keepdims=True)
    e = np.exp(h - m)
    p = e / e.sum(axis=1, keepdims=True)
    return -np.log(p).mean() + h.min(1).sum() + (h * h).prod(axis=0).sum()


def test_methods_of_arrays_numpy_made_are_stitched_and_right():
    text = adjoint.source(softmax_loss, wrt=(0, 1))
    assert "method_vjp" not in text
    z, w = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)) * 0.5
    check_grad(softmax_loss, z, w)
    assert "method_jvp" not in adjoint.source(softmax_loss, wrt=(0, 1), mode="jvp")
    v = rng.normal(size=z.shape)
    h = 1e-5
    gradient = adjoint.grad(softmax_loss)
    expected = (gradient(z + h * v, w) - gradient(z - h * v, w)) / (2 * h)
    np.testing.assert_allclose(adjoint.hvp(softmax_loss, z, v, w), expected, rtol=1e-5, atol=1e-7)


def of_a_parameter(x):
    return x.sum() + (x * x).max()  # `x` may be a list, or an object of yours with a `sum`


class Numbers:
    def __init__(self, values):
        self.values = values

    def __mul__(self, other):
        return Numbers([a * b for a, b in zip(self.values, other.values)])

    def max(self):
        return max(self.values)

    def sum(self):
        return sum(self.values)


def test_methods_of_values_of_unknown_type_stay_calls_of_the_method():
    assert adjoint.source(of_a_parameter).count("method_vjp") == 2
    check_grad(of_a_parameter, rng.normal(size=3))
    assert adjoint.pullback(of_a_parameter, Numbers([1.0, 2.0]))[0] == of_a_parameter(Numbers([1.0, 2.0]))


@pytest.mark.parametrize("call", ["h.sum(dtype=np.float64)", "h.max(0, None)", "h.mean(axis=0, dtype=np.float64)"])
def test_methods_with_other_arguments_stay_calls_of_the_method(call, tmp_path):
    source = f"import numpy as np\n\ndef f(z):\n    h = np.tanh(z)\n    return np.sum({call})\n"
    path = tmp_path / "reductions.py"
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    text = adjoint.source(namespace["f"])
    assert "method_vjp" in text
