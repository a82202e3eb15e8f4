"""Differentiate through an iterative solver with the implicit function theorem.

`fixed_point(f, x0, theta)` iterates `x = f(x, theta)` until it stops moving. Differentiating
the loop itself works but stores every iterate; at the solution `x* = f(x*, theta)`, so the
implicit function theorem gives the gradient from `x*` alone: for a cotangent `g` of `x*`,
solve `u = g + (df/dx)^T u` (another fixed point) and push `u` back through `df/dtheta`.
The custom reverse rule below says exactly that, calling `adjoint.pullback` on `f` (a
differentiable function called inside a rule) for the transposed Jacobians; the forward rule
solves `t = (df/dx) t + (df/dtheta) dtheta` for the tangent `t` of `x*` with `adjoint.jvp`.

Run with `python examples/implicit_solver.py`.
"""

import numpy as np

import adjoint
from adjoint.testing import check_grad

TOLERANCE = 1e-12


def iterate(f, x0, theta, tol=TOLERANCE):
    """Iterate `x = f(x, theta)` from `x0` until successive iterates differ by less than `tol`."""
    x = x0
    x_next = f(x, theta)
    while np.max(np.abs(x_next - x)) > tol:
        x = x_next
        x_next = f(x, theta)
    return x_next


def fixed_point(f, x0, theta, tol=TOLERANCE):
    """The `x` with `x = f(x, theta)`, found from `x0`; differentiated by the rule below."""
    return iterate(f, x0, theta, tol)


@adjoint.rrule(fixed_point)
def fixed_point_rrule(f, x0, theta, tol=TOLERANCE):
    x_star = fixed_point(f, x0, theta, tol)
    _, f_pullback = adjoint.pullback(f, x_star, theta)  # (df/dx)^T and (df/dtheta)^T at x*

    def adjoint_step(u, g):
        return g + f_pullback(u)[0]

    def fixed_point_pullback(g):
        u = fixed_point(adjoint_step, g, g, tol)  # u = g + (df/dx)^T u
        return None, None, f_pullback(u)[1]  # f and x0 carry no gradient: x* does not depend on x0

    return x_star, fixed_point_pullback


@adjoint.frule(fixed_point)
def fixed_point_frule(primals, tangents, **keywords):
    f, x0, theta, *tol = primals  # `tol` if passed by position (a constant: no tangent)
    dtheta = tangents[2]  # x0's tangent does not move x*
    x_star = fixed_point(*primals, **keywords)

    def tangent_step(t, dtheta):
        return adjoint.jvp(f, (x_star, theta), (t, dtheta))[1]  # (df/dx) t + (df/dtheta) dtheta

    return x_star, fixed_point(tangent_step, np.zeros_like(x_star), dtheta, *tol, **keywords)


# ---- a small equilibrium model: x = tanh(W x + theta), a contraction since |W| < 1 --------------

rng = np.random.default_rng(0)
W = rng.normal(size=(5, 5))
W *= 0.5 / np.linalg.norm(W, 2)
TARGET = rng.normal(size=5)


def layer(x, theta):
    return np.tanh(W @ x + theta)


def loss(theta):
    x_star = fixed_point(layer, np.zeros(5), theta)
    return np.sum((x_star - TARGET) ** 2)


def unrolled_loss(theta):
    """The same loss, differentiated through every iteration of the solver's loop."""
    x_star = iterate(layer, np.zeros(5), theta)
    return np.sum((x_star - TARGET) ** 2)


def main():
    theta = rng.normal(size=5)
    implicit = adjoint.grad(loss)(theta)
    unrolled = adjoint.grad(unrolled_loss)(theta)
    print(f"loss                        {loss(theta):.6f}")
    print(f"implicit gradient           {np.array2string(implicit, precision=6)}")
    print(f"through the unrolled loop   {np.array2string(unrolled, precision=6)}")
    print(f"largest difference          {np.max(np.abs(implicit - unrolled)):.1e}")
    check_grad(loss, theta, rtol=1e-5, atol=1e-7)
    print("the implicit gradient and JVP match central finite differences")


if __name__ == "__main__":
    main()
