"""Language corpus: realistic numerical programs.

Programs written the way scientists and ML engineers write plain Python + NumPy: ODE
integrators with state arrays updated in loops, particle simulations with `v += a * dt`,
dynamic programming over tables, hand-written Cholesky and Gaussian elimination, RNN cells
unrolled over time, MLPs from lists of `(W, b)` tuples, closures, dicts of parameters,
Newton and bisection solvers, quadrature rules, recursion, early stopping. Each returns a
scalar loss of float inputs and is checked with `check_grad`.

`CASES` are programs adjoint differentiates. The `test_*` functions after it are programs
adjoint refuses although Python's semantics would be reproduced by its non-mutating rewriting
(over-refusals), or that it cannot differentiate for lack of a rule for a common function;
each names the problem in its docstring. `NECESSARY_REFUSALS` are programs whose refusal is
genuinely needed (plain Python would update an array adjoint's copy would not).
"""

import copy
import functools
import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(42)


def normal(*shape):
    return rng.normal(size=shape)


DT = 0.02
GRAVITY = np.array([0.0, -9.81])


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# --- ODEs and simulations -------------------------------------------------------------------


def rk4_pendulum(theta0, damping):
    def f(y):
        return np.array([y[1], -np.sin(y[0]) - damping * y[1]])

    y = np.array([theta0, 0.0])
    h = 0.05
    for _ in range(40):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[0] ** 2 + 0.5 * y[1] ** 2


def velocity_verlet(x0, v0, k):
    x = x0.copy()
    v = v0.copy()
    dt = 0.05
    a = -k * x
    for step in range(30):
        x += v * dt + 0.5 * a * dt ** 2
        a_new = -k * x
        v += 0.5 * (a + a_new) * dt
        a = a_new
    energy = 0.5 * np.sum(v ** 2) + 0.5 * k * np.sum(x ** 2)
    return energy + np.sum(x)


def leapfrog_particles(pos, vel, masses):
    n = pos.shape[0]
    dt = 0.01
    pos = pos.copy()
    vel = vel.copy()
    for step in range(5):
        acc = np.zeros_like(pos)
        for i in range(n):
            for j in range(n):
                if i != j:
                    r = pos[j] - pos[i]
                    dist = np.sqrt(np.sum(r ** 2) + 0.1)
                    acc[i] += masses[j] * r / dist ** 3
        vel += acc * dt
        for i in range(n):
            pos[i] += vel[i] * dt
    return np.sum(pos ** 2)


def spring_semi_implicit(k, c, x0):
    x, v = x0, 0.0
    dt = 0.01
    for _ in range(200):
        a = -k * x - c * v
        v, x = v + dt * a, x + dt * (v + dt * a)
    return x ** 2 + v ** 2


def projectile(v0, drag):
    pos = np.zeros(2)
    vel = v0.copy()
    traj = [pos]
    while pos[1] >= 0.0 and len(traj) < 200:
        acc = GRAVITY - drag * vel * np.sqrt(np.sum(vel ** 2))
        vel = vel + DT * acc
        pos = pos + DT * vel
        traj.append(pos)
    traj = np.array(traj)
    return traj[-1, 0] + 0.1 * np.mean(traj[:, 1])


def neural_ode(W, b, y0):
    ts = np.linspace(0.0, 1.0, 6)
    y = y0
    for t0, t1 in zip(ts[:-1], ts[1:]):
        h = t1 - t0
        f = lambda y_: np.tanh(W @ y_ + b)
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(y ** 2)


def adaptive_heun(k, y0):
    t, y, h = 0.0, y0, 0.1
    T, tol = 2.0, 1e-4
    while t < T:
        h = min(h, T - t)
        f0 = -k * y
        y_euler = y + h * f0
        y_heun = y + 0.5 * h * (f0 - k * y_euler)
        err = abs(y_heun - y_euler) + 1e-14
        if err < tol:
            t += h
            y = y_heun
        h = h * min(2.0, max(0.5, 0.9 * (tol / err) ** 0.5))
    return y


def logistic_map(r, x0):
    x = x0
    xs = []
    for _ in range(30):
        x = r * x * (1 - x)
        xs.append(x)
    xs = np.array(xs)
    return np.mean(np.log(np.abs(r * (1 - 2 * xs))))


def lennard_jones(pos, sigma):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = np.sum((pos[i] - pos[j]) ** 2)
            s6 = (sigma ** 2 / r2) ** 3
            energy += 4.0 * (s6 ** 2 - s6)
    return energy


# --- PDEs and linear algebra by hand --------------------------------------------------------


def heat_equation(u0, kappa):
    u = u0.copy()
    dx = 1.0 / (len(u) - 1)
    dt = 0.2 * dx ** 2
    for _ in range(20):
        u[1:-1] = u[1:-1] + kappa * dt / dx ** 2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = 0.0
        u[-1] = 0.0
    return np.sum(u ** 2)


def heat_double_buffer(u0, kappa):
    u = u0.copy()
    r = kappa * 0.2
    for _ in range(15):
        u_new = u.copy()
        for i in range(1, len(u) - 1):
            u_new[i] = u[i] + r * (u[i + 1] - 2 * u[i] + u[i - 1])
        u = u_new
    return np.sum(u ** 2)


def thomas(a, b, c, d):
    n = len(d)
    cp = np.zeros(n)
    dp = np.zeros(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def implicit_heat(u0, r):
    n = len(u0)
    u = u0
    for _ in range(5):
        u = thomas(-r * np.ones(n), (1 + 2 * r) * np.ones(n), -r * np.ones(n), u)
    return np.sum(u ** 2)


def gauss_solve(A, b):
    n = len(b)
    M = np.zeros((n, n + 1))
    M[:, :n] = A
    M[:, n] = b
    for k in range(n):
        for i in range(k + 1, n):
            factor = M[i, k] / M[k, k]
            M[i, k:] -= factor * M[k, k:]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (M[i, n] - np.dot(M[i, i + 1:n], x[i + 1:])) / M[i, i]
    return np.sum(x ** 2)


def matmul_by_hand(A, B):
    n, m = A.shape
    p = B.shape[1]
    C = np.zeros((n, p))
    for i in range(n):
        for j in range(p):
            for k in range(m):
                C[i, j] += A[i, k] * B[k, j]
    return np.sum(np.sin(C))


def chained_indexing_matvec(A, x):
    n = len(x)
    y = np.zeros(n)
    for i in range(n):
        for j in range(n):
            y[i] += A[i][j] * x[j]
    return np.sum(y ** 2)


def gram_schmidt_sqrt(A):
    n = A.shape[1]
    Q = np.zeros_like(A)
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            v -= np.dot(Q[:, i], A[:, j]) * Q[:, i]
        Q[:, j] = v / np.sqrt(np.sum(v ** 2))
    return np.sum(Q[0] * np.arange(1, n + 1))


def power_iteration(A, n_iter=30):
    v = np.ones(A.shape[0])
    for _ in range(n_iter):
        v = A @ v
        v /= np.sqrt(np.sum(v ** 2))
    return v @ A @ v


def fem_energy(k_elem, u):
    n = len(k_elem)
    K = np.zeros((n + 1, n + 1))
    for e in range(n):
        ke = k_elem[e] * np.array([[1.0, -1.0], [-1.0, 1.0]])
        K[e:e + 2, e:e + 2] += ke
    return 0.5 * u @ K @ u


def sinkhorn(C, a, b, eps=0.5):
    K = np.exp(-C / eps)
    u = np.ones_like(a)
    v = np.ones_like(b)
    for _ in range(20):
        u = a / (K @ v)
        v = b / (K.T @ u)
    P = u[:, None] * K * v[None, :]
    return np.sum(P * C)


# --- polynomials, quadrature, solvers -------------------------------------------------------


def horner(coeffs, x):
    result = 0.0
    for c in coeffs[::-1]:
        result = result * x + c
    return result


def horner_loss(coeffs, xs):
    total = 0.0
    for x in xs:
        total += (horner(coeffs, x) - np.sin(x)) ** 2
    return total / len(xs)


def chebyshev_T(n, x):
    if n == 0:
        return np.ones_like(x)
    if n == 1:
        return x
    return 2 * x * chebyshev_T(n - 1, x) - chebyshev_T(n - 2, x)


def chebyshev_series(coeffs, x):
    total = 0.0
    for n, c in enumerate(coeffs):
        total = total + c * chebyshev_T(n, x)
    return np.sum(total ** 2)


def legendre_series(coeffs, x):
    p0, p1 = np.ones_like(x), x
    total = coeffs[0] * p0 + coeffs[1] * p1
    for n in range(1, len(coeffs) - 1):
        p0, p1 = p1, ((2 * n + 1) * x * p1 - n * p0) / (n + 1)
        total = total + coeffs[n + 1] * p1
    return np.sum(total ** 2)


def trapezoid_integral(a, b, k):
    n = 100
    h = (b - a) / n
    total = 0.5 * (math.exp(-k * a * a) + math.exp(-k * b * b))
    for i in range(1, n):
        x = a + i * h
        total += math.exp(-k * x * x)
    return total * h


def simpson(a, b, w):
    n = 20
    h = (b - a) / n
    s = math.sin(w * a) + math.sin(w * b)
    for i in range(1, n):
        x = a + i * h
        if i % 2 == 1:
            s += 4 * math.sin(w * x)
        else:
            s += 2 * math.sin(w * x)
    return s * h / 3


def integrate(f, a, b, *args, n=50):
    h = (b - a) / n
    s = 0.5 * (f(a, *args) + f(b, *args))
    for i in range(1, n):
        s += f(a + i * h, *args)
    return s * h


def gaussian_density(x, mu, sigma):
    return math.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def integral_loss(mu, sigma):
    return integrate(gaussian_density, -1.0, 1.0, mu, sigma, n=40)


def bisection_root(c):
    lo, hi = 0.0, 3.0
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        if mid ** 3 - c > 0:
            hi = mid
        else:
            lo = mid
    root = 0.5 * (lo + hi)
    return root * c


def cube_root_solver(c):
    lo, hi = 0.0, max(1.0, c)
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        if mid ** 3 > c:
            hi = mid
        else:
            lo = mid
    x = 0.5 * (lo + hi)
    for _ in range(3):
        x = x - (x ** 3 - c) / (3 * x ** 2)
    return x * c


def fixed_point(a):
    x = 1.0
    converged = False
    it = 0
    while not converged:
        x_new = math.cos(a * x)
        if abs(x_new - x) < 1e-12 or it > 200:
            converged = True
        x = x_new
        it += 1
    return x


def unrolled_gd(x0, A, lr):
    x = x0.copy()
    prev = np.inf
    for it in range(100):
        grad = A @ x - 1.0
        x = x - lr * grad
        loss = 0.5 * x @ A @ x - np.sum(x)
        if prev - loss < 1e-4:
            break
        prev = loss
    return loss


def best_of_iterations(x0, lr):
    x = x0
    best = np.inf
    best_x = x
    patience = 0
    for it in range(12):
        loss = np.sum((x - 1.0) ** 2) + 0.1 * np.sum(np.sin(5 * x))
        if loss < best:
            best = loss
            best_x = x
            patience = 0
        else:
            patience += 1
            if patience > 3:
                break
        x = x - lr * (2 * (x - 1.0) + 0.5 * np.cos(5 * x))
    return np.sum(best_x ** 2)


def interp_loss(ys, xq):
    xs = np.linspace(0.0, 1.0, len(ys))
    total = 0.0
    for q in xq:
        i = 0
        while i < len(xs) - 2 and xs[i + 1] < q:
            i += 1
        t = (q - xs[i]) / (xs[i + 1] - xs[i])
        total += (1 - t) * ys[i] + t * ys[i + 1]
    return total


# --- sequences, filters, dynamic programming ------------------------------------------------


def hmm_forward(log_A, log_B, log_pi, obs):
    T = len(obs)
    S = log_pi.shape[0]
    alpha = np.zeros((T, S))
    alpha[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        for j in range(S):
            scores = alpha[t - 1] + log_A[:, j]
            m = scores.max()
            alpha[t, j] = m + np.log(np.sum(np.exp(scores - m))) + log_B[j, obs[t]]
    last = alpha[-1]
    m = np.max(last)
    return -(m + np.log(np.sum(np.exp(last - m))))


def viterbi_score(log_A, emissions):
    T, S = emissions.shape
    delta = emissions[0].copy()
    for t in range(1, T):
        new = np.empty(S)
        for j in range(S):
            new[j] = np.max(delta + log_A[:, j]) + emissions[t, j]
        delta = new
    return np.max(delta)


def cumulative_returns(r):
    n = len(r)
    wealth = np.empty(n)
    acc = 1.0
    for i in range(n):
        acc *= 1.0 + r[i]
        wealth[i] = acc
    running = np.zeros(n)
    running[0] = wealth[0]
    for i in range(1, n):
        running[i] = running[i - 1] + wealth[i]
    return np.log(running[-1]) - np.mean(wealth)


def ema_smoothing(x, alpha):
    s = np.empty_like(x)
    s[0] = x[0]
    for t in range(1, len(x)):
        s[t] = alpha * x[t] + (1 - alpha) * s[t - 1]
    return np.sum((s - x) ** 2)


def ema_error_after_update(x, a):
    s = np.zeros_like(x)
    s[0] = x[0]
    loss = 0.0
    for t in range(1, len(x)):
        s[t] = a * s[t - 1] + x[t]
        err = s[t] - x[t]
        loss += err ** 2
    return loss


def discounted_returns(rewards, gamma):
    G = np.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        G[t] = running
    return np.sum(G ** 2)


def rolling_mean_loss(x, k=3):
    n = len(x)
    out = np.zeros(n - k + 1)
    window_sum = np.sum(x[:k])
    out[0] = window_sum / k
    for i in range(1, n - k + 1):
        window_sum += x[i + k - 1] - x[i - 1]
        out[i] = window_sum / k
    return np.sum(out ** 2)


def conv1d(x, kernel):
    n, k = len(x), len(kernel)
    out = np.zeros(n - k + 1)
    for i in range(n - k + 1):
        out[i] = np.sum(x[i:i + k] * kernel)
    return np.sum(np.tanh(out))


def iir_filter(b0, b1, a1, signal):
    y_prev = 0.0
    x_prev = 0.0
    out = []
    for x in signal:
        y = b0 * x + b1 * x_prev - a1 * y_prev
        out.append(y)
        x_prev, y_prev = x, y
    out = np.array(out)
    return np.sum((out - signal) ** 2)


def kalman_nll(log_q, log_r, zs):
    q, r = math.exp(log_q), math.exp(log_r)
    x, P = 0.0, 1.0
    nll = 0.0
    for z in zs:
        P = P + q
        S = P + r
        K = P / S
        innov = z - x
        nll += 0.5 * (math.log(2 * math.pi * S) + innov ** 2 / S)
        x = x + K * innov
        P = (1 - K) * P
    return nll


def running_stats_loss(mu, sigma, noise):
    mean = 0.0
    m2 = 0.0
    for n, z in enumerate(noise, start=1):
        sample = mu + sigma * z
        delta = sample - mean
        mean += delta / n
        m2 += delta * (sample - mean)
    var = m2 / (len(noise) - 1)
    return (mean - 1.0) ** 2 + (var - 2.0) ** 2


# --- machine learning -----------------------------------------------------------------------


def softmax_cross_entropy(logits, labels):
    n, k = logits.shape
    loss = 0.0
    probs = np.empty_like(logits)
    for i in range(n):
        row = logits[i]
        m = np.max(row)
        e = np.exp(row - m)
        probs[i] = e / np.sum(e)
        lse = m + np.log(np.sum(e))
        loss -= row[labels[i]] - lse
    return loss / n + 0.01 * np.sum(probs ** 2)


def logsumexp(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out


def multiclass_nll(W, X, labels):
    logits = X @ W
    lse = logsumexp(logits, axis=1)
    picked = logits[np.arange(len(labels)), labels]
    return np.mean(lse - picked)


def attention(X, Wq, Wk, Wv):
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    d = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = weights @ V
    return np.mean(out ** 2)


def soft_kmeans(centers, X, beta=2.0):
    n = X.shape[0]
    k = centers.shape[0]
    dists = np.zeros((n, k))
    for j in range(k):
        diff = X - centers[j]
        dists[:, j] = np.sum(diff ** 2, axis=1)
    logits = -beta * dists
    logits -= logits.max(axis=1, keepdims=True)
    resp = np.exp(logits)
    resp /= resp.sum(axis=1, keepdims=True)
    return np.sum(resp * dists) / n


def nearest_centroid_loss(C, X):
    total = 0.0
    for x in X:
        d = np.sum((C - x) ** 2, axis=1)
        k = np.argmin(d)
        total += d[k]
    return total


def gmm_nll(means, log_stds, logits, x, config={"eps": 1e-9}):
    w = np.exp(logits - np.max(logits))
    w = w / w.sum()
    total = 0.0
    for xi in x:
        comps = w * np.exp(-0.5 * ((xi - means) / np.exp(log_stds)) ** 2) / np.exp(log_stds)
        total += -np.log(np.sum(comps) + config["eps"])
    return total


def lstm(W, U, b, xs):
    n = U.shape[1]
    h = np.zeros(n)
    c = np.zeros(n)
    outputs = []
    for t in range(xs.shape[0]):
        gates = W @ xs[t] + U @ h + b
        i_g = sigmoid(gates[:n])
        f_g = sigmoid(gates[n:2 * n])
        o_g = sigmoid(gates[2 * n:3 * n])
        g = np.tanh(gates[3 * n:])
        c = f_g * c + i_g * g
        h = o_g * np.tanh(c)
        outputs.append(h)
    return np.mean(np.stack(outputs, axis=0))


def gru_split(Wz, Uz, Wh, Uh, xs):
    h = np.zeros(Wz.shape[0])
    hs = []
    for x in xs:
        z = sigmoid(Wz @ h + Uz @ x)
        h_tilde = np.tanh(Wh @ h + Uh @ x)
        h = (1 - z) * h + z * h_tilde
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def rnn_with_initial_state(W, U, xs, h0=None):
    if h0 is None:
        h0 = np.zeros(W.shape[0])
    h = h0
    for x in xs:
        h = np.tanh(W @ h + U @ x)
    return np.sum(h)


def mlp(layers, x):
    h = x
    for W, b in layers[:-1]:
        h = np.maximum(h @ W + b, 0.0)
    W, b = layers[-1]
    return h @ W + b


def mlp_loss(W1, b1, W2, b2, x, y):
    layers = [(W1, b1), (W2, b2)]
    pred = mlp(layers, x)
    return np.mean((pred - y) ** 2)


def huber(r, delta=1.0):
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))


def l2_penalty(w, lam=1e-2):
    return lam * np.sum(w ** 2)


def regression_loss(w, X, y):
    pred = X @ w
    data = np.mean(huber(pred - y, delta=0.5))
    return data + l2_penalty(w, lam=0.1) + l2_penalty(w)


def mse(pred, target, weight=1.0):
    return weight * np.mean((pred - target) ** 2)


def dense(x, W, b=None, activation=np.tanh):
    z = x @ W
    if b is not None:
        z = z + b
    return activation(z)


def keyword_arguments_loss(W, b, x, y, lam):
    h = dense(x, W=W, b=b)
    return mse(pred=h, target=y) + mse(h, y, weight=lam)


def with_l2(loss_fn, params, *args, lam=0.0, **kwargs):
    return loss_fn(*args, **kwargs) + lam * sum(np.sum(p ** 2) for p in params)


def wrapped_loss(W, x, y):
    pred = x @ W
    return with_l2(mse, [W], pred, y, lam=0.01, weight=2.0)


class Layer:
    def __init__(self, activation):
        self.activation = activation

    def __call__(self, x, W, b):
        return self.activation(x @ W + b)


def class_layers_weights_in_call(W1, b1, W2, b2, x):
    layers = [Layer(np.tanh), Layer(lambda z: z)]
    h = x
    for layer, (W, b) in zip(layers, [(W1, b1), (W2, b2)]):
        h = layer(h, W, b)
    return np.sum(h ** 2)


def make_leaky_relu(alpha):
    def act(z):
        return np.where(z > 0, z, alpha * z)
    return act


def make_scaled_tanh(scale):
    return lambda z: scale * np.tanh(z / scale)


def closure_activation_loss(W, x, scale):
    act1 = make_leaky_relu(0.1)
    act2 = make_scaled_tanh(scale)
    h = act2(act1(x @ W))
    return np.sum(h ** 2)


ACTIVATIONS = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "softplus": lambda z: np.log1p(np.exp(z))}


def configurable_mlp(W1, W2, x, act="softplus"):
    f = ACTIVATIONS[act]
    return np.sum(f(f(x @ W1) @ W2))


def dict_params_loss(W1, b1, W2, b2, x, y):
    params = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
    h = np.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    reg = 0.0
    for name, p in params.items():
        if name.startswith("W"):
            reg += np.sum(p ** 2)
    return np.mean((out - y) ** 2) + 1e-3 * reg


def weighted_layers(weights, biases, x):
    h = x
    penalty = 0.0
    for depth, (W, b) in enumerate(zip(weights, biases)):
        h = np.tanh(h @ W + b)
        penalty += (depth + 1) * np.sum(W ** 2)
    return np.sum(h) + 0.01 * penalty


def weighted_layers_loss(W1, W2, b1, b2, x):
    return weighted_layers([W1, W2], [b1, b2], x)


def poly_features_loss(w, x, y):
    feats = [x ** k for k in range(len(w))]
    Phi = np.stack(feats, axis=1)
    pred = Phi @ w
    return np.mean((pred - y) ** 2)


def batched_logistic(w, b, X, y, batch_size=4):
    total = 0.0
    n = X.shape[0]
    for start in range(0, n, batch_size):
        xb = X[start:start + batch_size]
        yb = y[start:start + batch_size]
        z = xb @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        total += -np.sum(yb * np.log(p) + (1 - yb) * np.log(1 - p))
    return total / n


def batchnorm_loss(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=0)
    xc = x - mu
    var = (xc ** 2).mean(axis=0)
    xhat = xc / np.sqrt(var + eps)
    out = gamma * xhat + beta
    return np.sum(out ** 3)


def clipped_update(w, g, max_norm=1.0):
    norm = np.sqrt(np.sum(g ** 2))
    if norm > max_norm:
        g = g * (max_norm / norm)
    w_new = w - 0.1 * g
    return np.sum(w_new ** 2)


def adam_like_unroll(w0, grads_scale):
    state = {"m": np.zeros_like(w0), "v": np.zeros_like(w0)}
    w = w0.copy()
    for t in range(1, 6):
        g = grads_scale * (w - 0.5)
        state["m"] = 0.9 * state["m"] + 0.1 * g
        state["v"] = 0.99 * state["v"] + 0.01 * g ** 2
        mhat = state["m"] / (1 - 0.9 ** t)
        vhat = state["v"] / (1 - 0.99 ** t)
        w = w - 0.1 * mhat / (np.sqrt(vhat) + 1e-8)
    return np.sum(w ** 2)


def fit_with_history(w0, X, y):
    w = w0
    history = []
    for step in range(10):
        r = X @ w - y
        loss = np.mean(r ** 2)
        history.append(float(loss))
        w = w - 0.05 * (2 * X.T @ r / len(y))
    if len(history) > 1 and history[-1] > history[0]:
        print("diverged")
    return np.mean((X @ w - y) ** 2)


def dropout_loss(W, x):
    gen = np.random.default_rng(0)
    h = np.tanh(x @ W)
    mask = gen.random(h.shape) > 0.3
    h = h * mask / 0.7
    return np.sum(h ** 2)


def encoder(x, W_mu, W_lv):
    return x @ W_mu, x @ W_lv


def vae_loss(W_mu, W_lv, W_dec, x, eps):
    mu, logvar = encoder(x, W_mu, W_lv)
    z = mu + np.exp(0.5 * logvar) * eps
    recon = z @ W_dec
    rec = np.sum((recon - x) ** 2)
    kl = -0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar))
    return rec + kl


def mixture_loss(w1, w2, w3, x):
    experts = [w1, w2, w3]
    preds = [np.tanh(x * w) for w in experts]
    scores = [float(np.mean(p)) for p in preds]
    best = max(range(len(scores)), key=lambda i: scores[i])
    total = sum(np.sum(p ** 2) for p in preds)
    return total + np.sum(preds[best])


def poisson_nll(w, X, counts):
    if X.shape[0] == 0:
        return 0.0
    eta = X @ w
    rate = np.log1p(np.exp(eta))
    return np.sum(rate - counts * np.log(rate))


def train_step_loss(W1, W2, X, y):
    stats = {}
    h = np.maximum(X @ W1, 0.0)
    out = h @ W2
    stats["frac_active"] = float(np.mean(h > 0))
    loss = np.mean((out.ravel() - y) ** 2)
    stats["loss"] = loss
    return stats["loss"]


# --- assorted numerics ----------------------------------------------------------------------


def piecewise(x, threshold):
    if threshold > 0:
        y = np.where(x > threshold, x - threshold, 0.1 * (x - threshold))
    else:
        y = np.where(x > 0, x, 0.0)
    if np.sum(y) > 1.0:
        y = y / np.sum(y)
    return np.sum(y ** 2)


def normalize_in_place(x, w):
    x = x.copy()
    x /= np.sqrt(np.sum(x ** 2))
    x -= np.mean(x)
    return np.dot(x, w)


def masked_relu_loss(x, w):
    h = x * w
    h[h < 0] = 0.0
    h = np.minimum(h, 3.0)
    return np.sum(h ** 2)


def masked_scale(x, w):
    y = x.copy()
    mask = y > 0
    y *= np.where(mask, w, 1.0)
    y[~mask] *= 0.5
    return np.sum(y ** 2)


def checked_loss(W, x):
    assert W.shape[1] == x.shape[0], "shape mismatch"
    n, d = W.shape
    out = W @ x
    if out.ndim != 1:
        raise ValueError("expected a vector")
    return float(np.sum(out ** 2)) / n


def linear_fit_asarray(w, x, y):
    x = np.asarray(x, dtype=float)
    w = w.reshape(-1, 1)
    pred = x.reshape(-1, 1) * w.T
    return np.sum((pred.sum(axis=1) - y) ** 2)


def eval_tree(node, x):
    if isinstance(node, tuple):
        op, left, right = node
        a = eval_tree(left, x)
        b = eval_tree(right, x)
        return a + b if op == "+" else a * b
    if node == "x":
        return x
    return node


def tree_loss(x, c):
    tree = ("+", ("*", "x", "x"), ("*", c, ("+", "x", 1.0)))
    return np.sum(eval_tree(tree, x))


def list_rows_built_by_append(a, b):
    rows = []
    for i in range(3):
        row = []
        for j in range(3):
            row.append(a * i + b * j + a * b)
        rows.append(row)
    return sum(rows[i][i] ** 2 for i in range(3))


class Physics:
    G = 9.81

    @staticmethod
    def potential(h, m):
        return m * Physics.G * h


def energy_loss(h, m):
    return Physics.potential(h, m) ** 2 + np.sum(h)


CASES = [
    case(rk4_pendulum, 0.7, 0.1),
    case(velocity_verlet, normal(3), normal(3), 1.3),
    case(leapfrog_particles, normal(3, 2), normal(3, 2), np.array([1.0, 0.5, 2.0])),
    case(spring_semi_implicit, 2.0, 0.3, 1.0),
    case(projectile, np.array([3.0, 4.0]), 0.05),
    case(neural_ode, 0.5 * normal(3, 3), normal(3), normal(3)),
    case(adaptive_heun, 1.3, 1.0),
    case(logistic_map, 3.3, 0.4),
    case(lennard_jones, np.array([[0.0, 0.0], [1.1, 0.1], [0.3, 1.2]]), 0.9),
    case(heat_equation, np.sin(np.linspace(0, np.pi, 8)), 1.2),
    case(heat_double_buffer, np.sin(np.linspace(0, np.pi, 7)), 1.1),
    case(implicit_heat, normal(5), 0.4),
    case(gauss_solve, normal(3, 3) + 4 * np.eye(3), normal(3)),
    case(matmul_by_hand, normal(2, 3), normal(3, 2)),
    case(chained_indexing_matvec, normal(3, 3), normal(3)),
    case(gram_schmidt_sqrt, normal(4, 3)),
    case(power_iteration, normal(3, 3) + 3 * np.eye(3)),
    case(fem_energy, np.array([1.0, 2.0, 1.5]), normal(4)),
    case(sinkhorn, np.abs(normal(3, 4)), np.full(3, 1 / 3), np.full(4, 0.25)),
    case(horner_loss, normal(4), np.linspace(-1, 1, 5)),
    case(chebyshev_series, normal(5), np.linspace(-1, 1, 4)),
    case(legendre_series, normal(5), np.linspace(-1, 1, 4)),
    case(trapezoid_integral, -0.5, 1.5, 0.8),
    case(simpson, 0.1, 1.3, 2.0),
    case(integral_loss, 0.2, 0.9),
    case(cube_root_solver, 2.0),
    case(fixed_point, 0.8),
    case(unrolled_gd, normal(3), np.eye(3) * 2 + 0.1, 0.1),
    case(best_of_iterations, normal(3), 0.1),
    case(best_of_iterations, np.array([-0.6, -0.9, -0.4]), 0.8, label="patience-break"),
    case(interp_loss, normal(5), np.array([0.1, 0.33, 0.8])),
    case(hmm_forward, normal(3, 3), normal(3, 4), normal(3), np.array([0, 3, 1, 2])),
    case(viterbi_score, normal(3, 3), normal(5, 3)),
    case(cumulative_returns, 0.1 * normal(6)),
    case(ema_smoothing, normal(8), 0.3),
    case(ema_error_after_update, normal(5), 0.7),
    case(discounted_returns, normal(5), 0.9),
    case(rolling_mean_loss, normal(7)),
    case(conv1d, normal(8), normal(3)),
    case(iir_filter, 0.5, 0.3, -0.2, normal(8)),
    case(kalman_nll, -1.0, -0.5, normal(6)),
    case(running_stats_loss, 0.3, 1.4, normal(6)),
    case(softmax_cross_entropy, normal(4, 3), np.array([0, 2, 1, 1])),
    case(multiclass_nll, normal(3, 4), normal(5, 3), np.array([0, 1, 3, 2, 1])),
    case(attention, normal(4, 3), normal(3, 2), normal(3, 2), normal(3, 2)),
    case(soft_kmeans, normal(3, 2), normal(6, 2)),
    case(nearest_centroid_loss, normal(3, 2), normal(5, 2)),
    case(gmm_nll, normal(3), 0.1 * normal(3), normal(3), normal(5)),
    case(lstm, 0.5 * normal(12, 2), 0.5 * normal(12, 3), normal(12), normal(4, 2)),
    case(gru_split, 0.5 * normal(3, 3), 0.5 * normal(3, 2), 0.5 * normal(3, 3), 0.5 * normal(3, 2), normal(4, 2)),
    case(rnn_with_initial_state, 0.5 * normal(3, 3), normal(3, 2), normal(4, 2)),
    case(mlp_loss, normal(3, 4), normal(4), normal(4, 2), normal(2), normal(5, 3), normal(5, 2)),
    case(regression_loss, normal(3), normal(6, 3), normal(6)),
    case(keyword_arguments_loss, normal(3, 2), normal(2), normal(4, 3), normal(4, 2), 0.3),
    case(wrapped_loss, normal(3, 2), normal(4, 3), normal(4, 2)),
    case(class_layers_weights_in_call, normal(3, 4), normal(4), normal(4, 2), normal(2), normal(5, 3)),
    case(closure_activation_loss, normal(3, 4), normal(5, 3), 1.5),
    case(configurable_mlp, normal(3, 4), normal(4, 2), normal(5, 3)),
    case(dict_params_loss, normal(3, 4), normal(4), normal(4, 2), normal(2), normal(5, 3), normal(5, 2)),
    case(weighted_layers_loss, normal(3, 3), normal(3, 2), normal(3), normal(2), normal(4, 3)),
    case(poly_features_loss, normal(4), np.linspace(-1, 1, 6), normal(6)),
    case(batched_logistic, normal(3), 0.1, normal(10, 3), (normal(10) > 0).astype(float)),
    case(batchnorm_loss, normal(6, 3), normal(3), normal(3)),
    case(clipped_update, normal(4), 2 * normal(4)),
    case(adam_like_unroll, normal(3), 1.5),
    case(fit_with_history, normal(3), normal(8, 3), normal(8)),
    case(dropout_loss, normal(3, 4), normal(5, 3)),
    case(vae_loss, normal(3, 2), normal(3, 2), normal(2, 3), normal(4, 3), normal(4, 2)),
    case(mixture_loss, 0.5, -1.0, 2.0, normal(5)),
    case(poisson_nll, 0.3 * normal(3), normal(6, 3), np.array([0.0, 1, 2, 0, 3, 1])),
    case(train_step_loss, normal(3, 4), normal(4, 1), normal(5, 3), normal(5)),
    case(piecewise, normal(5), 0.3),
    case(normalize_in_place, normal(5), normal(5)),
    case(masked_relu_loss, normal(6), normal(6)),
    case(masked_scale, normal(6), 1.3),
    case(checked_loss, normal(3, 4), normal(4)),
    case(linear_fit_asarray, normal(3), normal(4), normal(4)),
    case(tree_loss, normal(3), 0.7),
    case(list_rows_built_by_append, 0.5, -0.7),
    case(energy_loss, normal(3), 2.0),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_bisection_gradient_treats_the_bracket_as_constant():
    """Bisection's midpoints do not depend on `c`: the gradient of `root * c` is `root`."""
    c = 2.0
    g = adjoint.grad(bisection_root)(c)
    np.testing.assert_allclose(g, c ** (1 / 3), rtol=1e-8)


# --- refusals that are genuinely necessary --------------------------------------------------


def particles_row_view(pos, vel):
    pos = pos.copy()
    vel = vel.copy()
    for step in range(10):
        for i in range(pos.shape[0]):
            p = pos[i]
            v = vel[i]
            v -= 0.1 * p
            p += 0.1 * v
    return np.sum(pos ** 2)


def normalize_rows_through_loop_items(X):
    X = X.copy()
    for row in X:
        row /= np.sum(row)
    return np.sum(X ** 2)


def shared_moment_buffers(g):
    m = v = np.zeros(3)
    m += g
    v += g ** 2
    return np.sum(m * v)


NECESSARY_REFUSALS = [
    case(particles_row_view, normal(3, 2), normal(3, 2)),
    case(normalize_rows_through_loop_items, np.abs(normal(3, 2)) + 0.5),
    case(shared_moment_buffers, normal(3)),
]


@pytest.mark.parametrize("f, args", NECESSARY_REFUSALS)
def test_update_through_a_shared_array_is_refused(f, args):
    with pytest.raises(adjoint.TransformError):
        adjoint.pullback(f, *copy.deepcopy(args))


# --- over-refusals, and common functions without a rule --------------------------------------


def euler_lotka_volterra(params, y0):
    a, b, c, d = params[0], params[1], params[2], params[3]
    h = 0.01
    state = np.zeros(2)
    state[:] = y0
    for _ in range(50):
        x, y = state[0], state[1]
        dx = a * x - b * x * y
        dy = d * x * y - c * y
        state[0] = x + h * dx
        state[1] = y + h * dy
    return state[0] ** 2 + state[1]


def test_euler_reading_scalar_items_before_updating_the_state():
    """`y = state[1]` of a 1-D array is a scalar, not a view: `state[0] = ...` cannot change it."""
    check_grad(euler_lotka_volterra, np.array([1.0, 0.4, 0.8, 0.2]), np.array([1.5, 1.0]))


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(j):
                s += L[i, k] * L[j, k]
            if i == j:
                L[i, j] = np.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return L


def forward_substitution(L, b):
    n = L.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def gp_nll(log_ell, X, y):
    ell = np.exp(log_ell)
    n = len(X)
    K = np.exp(-0.5 * (X[:, None] - X[None, :]) ** 2 / ell ** 2) + 0.1 * np.eye(n)
    L = cholesky(K)
    alpha = forward_substitution(L, y)
    logdet = 0.0
    for i in range(n):
        logdet += np.log(L[i, i])
    return 0.5 * np.dot(alpha, alpha) + logdet


def test_gp_nll_with_a_hand_written_cholesky():
    """An update in the `if` branch is taken as followed by the `else` branch's read of `L[j, j]`."""
    check_grad(gp_nll, 0.1, np.linspace(0, 2, 4), normal(4))


def fill_with_branches(x):
    y = np.zeros(3)
    for i in range(3):
        if i == 0:
            y[i] = x[i] ** 2
        else:
            y[i] = x[i] * y[i - 1]
    return np.sum(y)


def test_item_update_in_if_branch_then_item_read_in_else_branch():
    """The `if` and `else` branches never both run, yet the else-branch read counts as 'afterwards'."""
    check_grad(fill_with_branches, np.array([1.0, 2.0, 3.0]))


def kernel_matrix_loss(x, gamma):
    n = len(x)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            K[i, j] = np.exp(-gamma * (x[i] - x[j]) ** 2)
            K[j, i] = K[i, j]
    return np.sum(K @ x)


def test_symmetric_fill_copying_one_item_into_another():
    """`K[j, i] = K[i, j]` copies a value into an array; it does not make `K` hold a view of itself."""
    check_grad(kernel_matrix_loss, normal(4), 0.7)


def neumann_heat(u0, kappa):
    u = u0.copy()
    for _ in range(10):
        u[1:-1] = u[1:-1] + 0.2 * kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = u[1]
        u[-1] = u[-2]
    return np.sum(u ** 2)


def test_neumann_boundary_condition_copying_a_neighbour():
    """`u[0] = u[1]` (zero-flux boundary) is refused, and the hint `u = u.copy()` does not help."""
    check_grad(neumann_heat, np.sin(np.linspace(0, 3, 6)), 1.0)


def pivot_rows(A):
    B = A.copy()
    if abs(B[1, 0]) > abs(B[0, 0]):
        B[[0, 1]] = B[[1, 0]]
    return np.sum(B[0] * np.arange(1.0, B.shape[1] + 1))


def test_row_swap_with_integer_array_indices():
    """`B[[0, 1]] = B[[1, 0]]`: an integer-array read is always a copy, yet it is taken as a view."""
    check_grad(pivot_rows, np.array([[0.1, 2.0], [3.0, 1.0]]))


def chained_index_store(x):
    n = len(x)
    A = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            A[i][j] = x[i] * x[j] + 1.0
    return np.sum(A @ x)


def test_chained_index_store_on_an_array():
    """`A[i][j] = v` on an ndarray writes through the row view; the hint `A[i] = A[i].copy()` is no fix."""
    check_grad(chained_index_store, np.array([1.0, 2.0, 3.0]))


def heat_swap(u0, kappa):
    u = u0.copy()
    u_next = np.zeros_like(u)
    r = kappa * 0.2
    for _ in range(10):
        u_next[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_next[0] = u[0]
        u_next[-1] = u[-1]
        u, u_next = u_next, u
    return np.sum(u ** 2)


def test_double_buffer_swap():
    """`u, u_next = u_next, u` then writing `u_next`: refused via the internal name `u_u_next_tuple`."""
    check_grad(heat_swap, np.sin(np.linspace(0, np.pi, 7)), 1.1)


def newton_kepler(M, e):
    E = M
    step = 1.0
    it = 0
    while abs(step) > 1e-12 and it < 50:
        f = E - e * math.sin(E) - M
        fp = 1.0 - e * math.cos(E)
        step = f / fp
        E -= step
        it += 1
    return math.sin(E) + E ** 2


@pytest.mark.xfail(strict=True, reason='`E = M` then `E -= d`: adjoint cannot tell that M is a float, not an array another name sees (issue 8: types)')
def test_newton_iterate_started_from_a_float_argument():
    """`E = M; E -= step` on Python floats is a rebinding: no memory is shared with `M`."""
    check_grad(newton_kepler, 1.2, 0.3)


def running_sums(x, y):
    sx = sy = 0.0
    for a, b in zip(x, y):
        sx += a
        sy += b * a
    return sx * sy


def test_accumulators_initialised_by_chained_assignment_of_a_float_literal():
    """`sx = sy = 0.0`: two names for the immutable 0.0 cannot see each other's `+=`."""
    check_grad(running_sums, np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, 2.0]))


def euler_step(state, t, k):
    state[0] += t * state[1]
    state[1] -= t * k * state[0]
    return state


def oscillator_with_step_helper(x0, k):
    state = np.array([x0, 0.0])
    for _ in range(20):
        state = euler_step(state, 0.1, k)
    return state[0] ** 2


@pytest.mark.xfail(strict=True, reason='a helper that updates its argument is refused even when the caller passes a fresh array nothing else reads')
def test_step_helper_updating_and_returning_its_state():
    """`state = step(state, ...)` with a fresh `state`; the error blames `k`, a float never updated."""
    check_grad(oscillator_with_step_helper, 1.0, 2.0)


def stable_softmax(z):
    z -= np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_helper_loss(W, X, Y):
    P = stable_softmax(X @ W)
    return -np.sum(Y * np.log(P)) / len(X)


@pytest.mark.xfail(strict=True, reason='a helper that updates its argument is refused even when the caller passes a temporary')
def test_helper_shifting_a_temporary_argument_in_place():
    """`stable_softmax(X @ W)` updates only a temporary no other name sees."""
    check_grad(softmax_helper_loss, normal(3, 4), normal(5, 3), np.eye(4)[[0, 1, 2, 3, 0]])


def square_items_while_enumerating(x):
    y = x.copy()
    for i, v in enumerate(y):
        y[i] = v * v + 1.0
    return np.sum(y)


def test_updating_the_item_just_walked_by_enumerate():
    """`for i, v in enumerate(y): y[i] = f(v)` only writes where the loop has already been."""
    check_grad(square_items_while_enumerating, np.array([1.0, 2.0, 3.0]))


def mean_of_batch_losses(w, X, y):
    losses = []
    for i in range(0, len(y), 2):
        r = X[i:i + 2] @ w - y[i:i + 2]
        losses.append(np.sum(r ** 2))
    return np.mean(losses)


def test_np_mean_of_a_list_of_losses():
    """`np.mean(losses)` of a list of scalars is refused ('tuple or list operand')."""
    check_grad(mean_of_batch_losses, normal(3), normal(6, 3), normal(6))


def histogram_add_at(vals, w):
    idx = np.array([0, 2, 0, 1, 2, 2])
    out = np.zeros(3)
    np.add.at(out, idx, vals * w)
    return np.sum(out ** 2)


def test_scatter_add_with_np_add_at():
    """`np.add.at(out, idx, v)` scatters with repeated indices adding up; the gradient gathers."""
    check_grad(histogram_add_at, normal(6), 1.5)


class Dense:
    def __init__(self, W, b, activation=np.tanh):
        self.W = W
        self.b = b
        self.activation = activation

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


def class_model_loss(W1, b1, W2, b2, x):
    net = [Dense(W1, b1), Dense(W2, b2, activation=lambda z: z)]
    h = x
    for layer in net:
        h = layer(h)
    return np.sum(h ** 2)


def test_layer_objects_built_from_the_weights():
    """Layers built inside from the weights: each layer's cotangent goes back to its weights."""
    check_grad(class_model_loss, normal(3, 4), normal(4), normal(4, 2), normal(2), normal(5, 3))


def mlp_from_param_list(params, x, y):
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = np.tanh(h)
    return np.mean((h - y) ** 2)


def test_parameters_passed_as_a_list_of_tuples():
    """A list of `(W, b)` tuples as the argument: its gradient is the same list of tuples."""
    check_grad(mlp_from_param_list, [(normal(3, 4), normal(4)), (normal(4, 2), normal(2))], normal(5, 3), normal(5, 2))


def dict_arg_loss(params, x):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.sum(h ** 2) + params["scale"] * np.sum(params["W"] ** 2)


def test_parameters_passed_as_a_dict():
    """A dict of named parameters as the argument: its gradient is a dict with the same keys."""
    check_grad(dict_arg_loss, {"W": normal(3, 2), "b": normal(2), "scale": 0.1}, normal(4, 3))


def gru(Wz, Wr, Wh, xs):
    h = np.zeros(Wz.shape[0])
    hs = []
    for x in xs:
        hx = np.concatenate([h, x])
        z = sigmoid(Wz @ hx)
        r = sigmoid(Wr @ hx)
        h_tilde = np.tanh(Wh @ np.concatenate([r * h, x]))
        h = (1 - z) * h + z * h_tilde
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def test_gru_with_np_concatenate():
    """No rule for `np.concatenate`."""
    check_grad(gru, 0.5 * normal(3, 5), 0.5 * normal(3, 5), 0.5 * normal(3, 5), normal(4, 2))


def log_variances(X):
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / (len(X) - 1)
    return np.sum(np.log(np.diag(S)))


def test_log_of_the_diagonal_with_np_diag():
    """No rule for `np.diag`."""
    check_grad(log_variances, normal(6, 3))


def gram_schmidt(A):
    n = A.shape[1]
    Q = np.zeros_like(A)
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            v -= np.dot(Q[:, i], A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return np.sum(Q[0] * np.arange(1, n + 1))


def test_gram_schmidt_with_np_linalg_norm():
    """No rule for `np.linalg.norm`."""
    check_grad(gram_schmidt, normal(4, 3))


def returns_with_cumsum(rewards, gamma):
    cum = np.cumsum(rewards)
    discounts = gamma ** np.arange(len(rewards))
    return np.sum(discounts * cum)


def test_returns_with_np_cumsum():
    """No rule for `np.cumsum`."""
    check_grad(returns_with_cumsum, normal(5), 0.9)


def matrix_chain(A, B, C, v):
    M = functools.reduce(lambda P, Q: P @ Q, [A, B, C])
    return np.sum(np.tanh(M @ v))


@pytest.mark.xfail(strict=True, reason='functools.reduce is not differentiated yet')
def test_matrix_chain_with_functools_reduce():
    """No rule for `functools.reduce`, though the lambda it is given is differentiable."""
    check_grad(matrix_chain, normal(2, 3), normal(3, 3), normal(3, 2), normal(2))
