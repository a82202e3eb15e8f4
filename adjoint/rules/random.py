"""Random numbers: `np.random`'s functions and the methods of its generators.

What carries no gradient is declared here, for every public name NumPy offers: a draw that
takes no float parameter (`rng.random(shape)`, `np.random.randn(3)`), a draw of integers
(`rng.integers(n)`, `rng.binomial(1, p)`, constant in `p` between the jumps), and what makes,
seeds, spawns or saves a generator. Two kinds of draw do have a derivative, and are left without
a rule, so adjoint refuses them when a parameter carries a gradient (with constant parameters
they run as they are):

- a continuous draw with a float parameter moves with it: `rng.normal(mu, sigma)` is
  `mu + sigma * z` for the same `z`. Write it that way, `mu + sigma * rng.standard_normal(n)`,
  to differentiate through the draw (the reparametrization gradient).
- a draw of an array's items (`rng.choice(x)`, `rng.permutation(x)`, `rng.shuffle(x)`) moves with
  the items it picks. Draw their positions instead and index: `x[rng.permutation(len(x))]`.

A method is declared by its class's function (`np.random.Generator.normal`); `registry.unbound`
maps a bound `rng.normal`, and `np.random.normal` (a method of NumPy's global `RandomState`),
to it. A name NumPy adds later is in neither list, so it is refused until it is sorted into one.
"""

import random as pyrandom

import numpy as np

from ..registry import non_differentiable

# The classes holding random state, whose public methods are declared by name.
STATES = (
    np.random.Generator, np.random.RandomState, np.random.SeedSequence, np.random.BitGenerator,
    np.random.MT19937, np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
)

WITHOUT_GRADIENT = frozenset({
    # draws that take no float parameter
    "rand", "randn", "random", "random_sample", "ranf", "sample", "standard_normal",
    "standard_exponential", "standard_cauchy", "bytes", "tomaxint", "random_raw",
    # draws of integers
    "integers", "randint", "random_integers", "binomial", "negative_binomial", "poisson", "geometric",
    "hypergeometric", "multivariate_hypergeometric", "multinomial", "zipf", "logseries",
    # generators and their state
    "default_rng", "seed", "get_state", "set_state", "spawn", "jumped", "advance", "generate_state",
    "get_bit_generator", "set_bit_generator", *(state.__name__ for state in STATES),
})

WITH_GRADIENT = frozenset({
    # continuous draws, which move with their float parameters
    "normal", "uniform", "exponential", "gamma", "standard_gamma", "beta", "chisquare",
    "noncentral_chisquare", "f", "noncentral_f", "standard_t", "dirichlet", "gumbel", "laplace",
    "logistic", "lognormal", "multivariate_normal", "pareto", "power", "rayleigh", "triangular",
    "vonmises", "wald", "weibull",
    # draws of an array's items
    "choice", "permutation", "permuted", "shuffle",
})


def public_callables() -> list[tuple[str, object]]:
    """Every public function of `np.random` and method of its generators, as `(name, function)`:
    a method as its class's function, under its own name.

    >>> found = public_callables()
    >>> ("normal", np.random.Generator.normal) in found, ("rand", np.random.RandomState.rand) in found
    (True, True)
    """
    found = []
    for name in dir(np.random):
        function = getattr(np.random, name)
        if not name.startswith("_") and name != "test" and callable(function):  # `test` runs NumPy's tests
            found.append((name, getattr(function, "__func__", function)))  # `np.random.normal`: RandomState's
    for state in STATES:
        found += [(name, method) for name, method in vars(state).items() if not name.startswith("_") and callable(method)]
    return found


non_differentiable(*(function for name, function in public_callables() if name in WITHOUT_GRADIENT))


# Python's `random` module: its functions are methods of one hidden `random.Random`. Its draws
# of ints and of uniforms in [0, 1) carry no gradient; those with float parameters (`gauss`,
# `uniform`) and of a sequence's items (`choice`, `shuffle`) are refused when the parameters or
# items carry one (`compiler.resolve` says how to write them).
non_differentiable(*(getattr(pyrandom.Random, name) for name in (
    "random", "getrandbits", "randint", "randrange", "randbytes", "seed", "getstate", "setstate",
) if hasattr(pyrandom.Random, name)))
