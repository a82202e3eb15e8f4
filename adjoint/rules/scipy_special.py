"""Rules for `scipy.special`, registered the first time a scipy function is looked up (see
`registry._OPTIONAL_RULES`): `import adjoint` never imports scipy.

`logsumexp(a, axis, b)` = `log(sum(b exp(a)))`: `a`'s cotangent is `g` spread by the softmax
weights `b exp(a - ans)`, and `b`'s is `g exp(a - ans)` (when `b` is passed by position, like
every differentiated argument). `return_sign=True` is refused: its sign output is piecewise
constant, and its magnitude is the log of `|sum(...)|`, a different function. The tangent is
`sum(exp(a - ans) (b t_a + t_b))` over each reduced slice.
"""

import scipy.special

from .. import runtime as adj
from ..frules import frule
from ..registry import rrule


@rrule(scipy.special.logsumexp)
def logsumexp_rrule(a, axis=None, b=None, keepdims=False):
    ans = scipy.special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)

    def logsumexp_pullback(g):
        return (
            adj.logsumexp_bar(g, a, ans, axis, b, keepdims=keepdims),  # `b` by position: it may vary
            None,
            adj.logsumexp_b_bar(g, a, ans, axis, b, keepdims=keepdims),
        )

    return ans, logsumexp_pullback


@frule(scipy.special.logsumexp)
def logsumexp_frule(primals, tangents, **kwargs):
    def logsumexp_jvp(a, axis=None, b=None, keepdims=False):
        ans = scipy.special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)
        t_a, _, t_b = (tuple(tangents) + (None,) * 3)[:3]
        return ans, adj.tangent_like(adj.logsumexp_tangent(t_a, t_b, a, ans, axis=axis, b=b, keepdims=keepdims), ans)

    return logsumexp_jvp(*primals, **kwargs)
