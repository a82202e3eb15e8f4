"""Rules of the functions that steer differentiation (`adjoint.steering`): what a stopped
gradient, a gradient hook and the question "am I differentiated?" mean to a derivative.
(`checkpoint` makes functions that carry their own rules.)"""

from .. import runtime as adj
from ..frules import frule
from ..registry import non_differentiable, rrule
from ..runtime.cotangents import RuleError
from ..steering import hook, stop_gradient, within_gradient

# No derivative flows through a stopped value, nor through the answer to "am I differentiated?"
non_differentiable(stop_gradient, within_gradient)


@rrule(hook, sequences=True)  # `hook([a, b], fn)`: fn gets the list of their cotangents
def hook_rrule(x, fn):
    def hook_pullback(g):
        return (adj.hooked(fn, g, x), None)

    return x, hook_pullback


@frule(hook)
def hook_frule(primals, tangents, **kwargs):
    return primals[0], tangents[0]  # a hook sees cotangents; tangents pass through (`fn=` too)


@frule(adj.hooked)
def hooked_frule(primals, tangents):
    raise RuleError(
        "a gradient hook (adjoint.hook) is in a function whose gradient is differentiated again (hvp, hessian, "
        "grad of grad): the hook would be handed the derivatives of cotangents. Remove the hook for second "
        "derivatives"
    )
