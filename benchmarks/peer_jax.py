"""JAX's versions of the workloads, in float64 on one thread: `jax.grad` called as it is
(eager: op by op) and under `jax.jit` (steady state; its first call, tracing and compiling,
is what `first_call` in `peers.py` reports). The Hessian-vector product is forward over
reverse, `jax.jvp(jax.grad(loss), ...)`. JAX runs asynchronously: every timed call waits for
its result."""

import importlib.metadata
import os

# before jax is imported: XLA reads these once
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import workloads  # noqa: E402

jax.config.update("jax_enable_x64", True)


def version():
    return f"{importlib.metadata.version('jax')} (jaxlib {importlib.metadata.version('jaxlib')})"


def mlp_loss(W1, b1, W2, b2, x, y):
    h = jnp.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    m = jnp.max(z, axis=1, keepdims=True)
    lse = jnp.log(jnp.sum(jnp.exp(z - m), axis=1, keepdims=True)) + m
    return -jnp.sum(y * (z - lse)) / x.shape[0]


def lse_loss(X, b):
    Z = X + b
    m = jnp.max(Z, axis=1, keepdims=True)
    return jnp.sum(jnp.log(jnp.sum(jnp.exp(Z - m), axis=1, keepdims=True)) + m)


def rnn_loss(W, U, xs, h):
    for x in xs:
        h = jnp.tanh(W @ h + U @ x)
    return jnp.sum(h * h)


def scalar_loss(a, b):
    s = 0.0
    for i in range(1000):
        s = s + jnp.sin(a * i) * b + jnp.exp(-b * s * 1e-3)
    return s


LOSSES = {
    workloads.mlp_loss: mlp_loss, workloads.lse_loss: lse_loss,
    workloads.rnn_loss: rnn_loss, workloads.scalar_loss: scalar_loss,
}


def waiting(fn):
    """`fn`, returning only once its result is computed."""
    return lambda *args: jax.block_until_ready(fn(*args))


def to_numpy(result):
    return tuple(jax.device_get(result))


# jit unrolls a Python loop, and compiling the 1000 steps of `scalar_loop` takes over a minute
SLOW_TO_COMPILE = {
    workloads.scalar_loss: "JAX jit left out: compiling the unrolled 1000-step loop takes over a minute "
    "(93 s on a 2-core Xeon); `--slow` includes it",
}


def systems(workload, slow=False):
    """{column: (function timed, its arguments, result -> NumPy arrays), or the reason it is
    left out} for `workload`; `slow` includes what takes minutes to compile."""
    loss = LOSSES[workload.loss]
    args = tuple(jnp.asarray(a, dtype=jnp.float64) for a in workload.args)
    if workload.directions is None:
        gradient = jax.grad(loss, argnums=workload.wrt)
    else:
        directions = tuple(jnp.asarray(d) for d in workload.directions)

        def gradient(*a):
            weights_gradient = jax.grad(lambda ps: loss(*ps, *a[4:]))
            return jax.jvp(weights_gradient, (a[:4],), (directions,))[1]

    left_out = None if slow else SLOW_TO_COMPILE.get(workload.loss)
    return {
        "JAX eager": (waiting(gradient), args, to_numpy),
        "JAX jit": left_out or (waiting(jax.jit(gradient)), args, to_numpy),
    }
