"""Training-step and Session.run overhead benchmark: pygrad vs TensorFlow 1 (compat.v1), PyTorch and JAX.

The same TF1-style code runs against pygrad and TensorFlow; it only receives the module object
`tf` (``import pygrad as tf`` or ``tensorflow.compat.v1`` with v2 behaviour off). PyTorch and JAX
run the same model written the way each is normally used. Everything runs on the CPU.

Cases (times are wall-clock per step, measured with time.perf_counter):
  mnist_softmax_step   one step of the classic MNIST softmax regression tutorial: W [784,10] and
                       b [10] zeros, cost = mean(-sum(y * log(softmax(x W + b)), 1)), plain
                       gradient descent with learning rate 0.01, batch 100; 50 warm-up steps,
                       then --steps timed steps. Each step returns the cost as a Python float:
                         pygrad, tensorflow  ``sess.run([opt, cost], feed_dict=...)``
                         torch   tensors with requires_grad, cost.backward(), in-place update
                                 under torch.no_grad(), cost.item()
                         jax     a jax.jit-compiled step (params, x, y) -> (new params, cost)
                                 (float32, params donated), float(cost) waits for the result
  mlp_adam_step        one step of a multilayer perceptron 784-256-256-10 (relu, relu, logits),
                       loss = reduce_mean(softmax_cross_entropy_with_logits(labels=y, logits)),
                       Adam (lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8), batch 128; 20 warm-up
                       steps, then --mlp-steps timed steps, each returning the loss as a float:
                         pygrad, tensorflow  ``sess.run([train_op, loss], feed_dict=...)``, the
                                 weights tf.Variables loaded from the initial values
                         torch   nn.Sequential of nn.Linear and nn.ReLU, F.cross_entropy with the
                                 one-hot labels as target probabilities, torch.optim.Adam (it adds
                                 eps to the bias-corrected sqrt(v), TensorFlow to the raw one; no
                                 difference to the time, about 1e-6 to the losses)
                         jax     a jax.jit-compiled step with a hand-written Adam in TensorFlow's
                                 formula (lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t); var -= lr_t
                                 m / (sqrt(v) + eps)), state donated: optax, which would be the
                                 usual choice, is not a dependency here
                       (``mlp_network``, ``mlp_initial_values`` and ``mlp_train_flops`` are shared
                       with bench_sweep.py, which runs the same model at other widths and batches.)
  session_run_trivial  ``sess.run(a + b)`` on two scalar placeholders; 200 warm-up calls, then
                       --calls timed calls. pygrad and TensorFlow only: it measures the cost of a
                       Session.run call, which PyTorch (eager) and JAX have no equivalent of.
Each case is run --repeats times, interleaving libraries (pygrad, tensorflow, torch, jax, pygrad,
...); a row shows the median over repeats of the per-repeat median, p10 and p90 (microseconds),
and the ratio of the peer's median to pygrad's. Every library sees the same batches in the same
order (a fixed permutation, numpy seed 0, of the 55000 training examples that follow the 5000
validation examples), so each peer's per-step costs are compared with pygrad's as a correctness
cross-check (softmax: max absolute difference over all steps of the last repeat; MLP: max
relative difference over the first 5 steps and over all steps of the last repeat, every library
starting from the same NumPy weights: Glorot uniform, TensorFlow's default, NumPy seed --seed;
zero biases). On the MLP (one thread, 30 steps), TensorFlow agreed with pygrad to 2e-7 over all
steps; JAX to 2e-6 and PyTorch to 3e-5 over the first 5 (PyTorch's eps enters Adam's update
differently), both drifting to about 1e-3 by step 30: rounding differences of other summation
orders grow over the steps of a non-convex model (Adam's update is normalized per weight, so it
does not shrink them), which is why the cross-check reads the first steps.

Threads: every library gets --threads threads, set as benches/common.py describes; the header
names the CPU and the BLAS each library loaded. A peer that cannot be imported is skipped with a
message.

Run:
  python benches/bench_train.py --data-dir DIR [--steps 2000] [--mlp-steps 500] [--calls 20000]
                                [--repeats 3] [--threads 1] [--peers tensorflow,torch,jax]
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone.
"""
import contextlib
import time

import common

WARMUP_STEPS = 50
WARMUP_CALLS = 200
BATCH = 100
LEARNING_RATE = 0.01

MLP_BATCH = 128
MLP_WIDTH = 256
MLP_WARMUP_STEPS = 20
MLP_CHECK_STEPS = 5  # the cross-check's steps; later, Adam's normalized steps amplify rounding
INPUTS, CLASSES = 784, 10
ADAM_LEARNING_RATE = 1e-3
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8


def train_tf1(tf, batches, steps, session_kwargs):
    """Classic TF1 softmax regression; returns (per-step seconds after warm-up, all costs)."""
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
    opt = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cost)
    with tf.Session(**session_kwargs) as sess:
        sess.run(tf.global_variables_initializer())

        def step(i):
            bx, by = batches[i % len(batches)]
            return float(sess.run([opt, cost], feed_dict={x: bx, y: by})[1])

        return common.time_steps(step, WARMUP_STEPS, steps)


def train_torch(torch, batches, steps):
    """The same model in PyTorch (eager autograd, manual SGD update)."""
    W = torch.zeros(784, 10, requires_grad=True)
    b = torch.zeros(10, requires_grad=True)

    def step(i):
        bx, by = batches[i % len(batches)]
        x, y = torch.from_numpy(bx), torch.from_numpy(by)
        pred = torch.softmax(x @ W + b, dim=1)
        cost = torch.mean(-torch.sum(y * torch.log(pred), dim=1))
        cost.backward()
        with torch.no_grad():
            W.sub_(LEARNING_RATE * W.grad)
            b.sub_(LEARNING_RATE * b.grad)
        W.grad = None
        b.grad = None
        return cost.item()

    return common.time_steps(step, WARMUP_STEPS, steps)


def train_jax(jax, batches, steps):
    """The same model in JAX: one jit-compiled function per step, parameters donated."""
    import jax.numpy as jnp

    def cost_fn(params, x, y):
        pred = jax.nn.softmax(x @ params["W"] + params["b"])
        return jnp.mean(-jnp.sum(y * jnp.log(pred), axis=1))

    def sgd_step(params, x, y):
        cost, grads = jax.value_and_grad(cost_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), cost

    sgd_step = jax.jit(sgd_step, donate_argnums=0)
    params = {"W": jnp.zeros((784, 10), jnp.float32), "b": jnp.zeros((10,), jnp.float32)}

    def step(i):
        nonlocal params
        bx, by = batches[i % len(batches)]
        params, cost = sgd_step(params, bx, by)
        return float(cost)

    return common.time_steps(step, WARMUP_STEPS, steps)


# --------------------------------------------------------------------------- the MLP 784-w-w-10

def mlp_layer_sizes(width):
    """[(inputs, outputs)] of the three layers."""
    return [(INPUTS, width), (width, width), (width, CLASSES)]


def mlp_train_flops(batch, width):
    """FLOPs of one MLP training step's matrix products, 2*M*N*K each: per layer the forward
    x W (M = batch, K = inputs, N = outputs) and the weight gradient x^T dy (the same count), and
    the input gradient dy W^T of layers 2 and 3 (layer 1's input is the fed batch, which needs
    none):  4*B*(784 w + w^2 + 10 w) + 2*B*(w^2 + 10 w). Bias additions, relu, the softmax cross
    entropy and Adam's updates are not counted."""
    sizes = mlp_layer_sizes(width)
    return sum(2 * batch * k * n * 2 for k, n in sizes) + sum(2 * batch * k * n for k, n in sizes[1:])


def mlp_initial_values(width, seed):
    """The MLP's parameters as float32 NumPy arrays, [inputs, outputs] matrices W1, W2, W3 drawn
    Glorot uniform (TensorFlow's default initializer: limit sqrt(6 / (inputs + outputs))) and zero
    biases b1, b2, b3."""
    import numpy as np
    rng = np.random.default_rng(seed)
    init = {}
    for i, (k, n) in enumerate(mlp_layer_sizes(width), 1):
        limit = np.sqrt(6.0 / (k + n))
        init[f"W{i}"] = rng.uniform(-limit, limit, (k, n)).astype(np.float32)
        init[f"b{i}"] = np.zeros(n, np.float32)
    return init


@contextlib.contextmanager
def mlp_tf1_network(tf, init, session_kwargs):
    """TF1 code: yields train(x, y) -> loss on a fresh graph and session, the variables loaded
    from `init`."""
    width = init["W1"].shape[1]
    with common.fresh_graph(tf):
        x = tf.placeholder(tf.float32, [None, INPUTS])
        y = tf.placeholder(tf.float32, [None, CLASSES])
        variables = {}
        h = x
        for i, (k, n) in enumerate(mlp_layer_sizes(width), 1):
            W = variables[f"W{i}"] = tf.Variable(tf.zeros([k, n]), name=f"W{i}")
            b = variables[f"b{i}"] = tf.Variable(tf.zeros([n]), name=f"b{i}")
            h = tf.matmul(h, W) + b
            if i < 3:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=h))
        train_op = tf.train.AdamOptimizer(ADAM_LEARNING_RATE, BETA1, BETA2, EPSILON).minimize(loss)
        with tf.Session(**session_kwargs) as sess:
            sess.run(tf.global_variables_initializer())
            for name, v in variables.items():
                v.load(init[name], sess)

            def train(bx, by):
                return float(sess.run([train_op, loss], feed_dict={x: bx, y: by})[1])

            yield train


@contextlib.contextmanager
def mlp_torch_network(torch, init):
    """PyTorch: nn.Sequential, F.cross_entropy on probabilities, torch.optim.Adam."""
    import torch.nn.functional as F
    from torch import nn

    width = init["W1"].shape[1]
    net = nn.Sequential(nn.Linear(INPUTS, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                        nn.Linear(width, CLASSES))
    with torch.no_grad():
        for i, layer in enumerate((net[0], net[2], net[4]), 1):
            layer.weight.copy_(torch.from_numpy(init[f"W{i}"].T))  # PyTorch keeps [out, in]
            layer.bias.copy_(torch.from_numpy(init[f"b{i}"]))
    opt = torch.optim.Adam(net.parameters(), lr=ADAM_LEARNING_RATE, betas=(BETA1, BETA2), eps=EPSILON)

    def train(bx, by):
        opt.zero_grad()
        loss = F.cross_entropy(net(torch.from_numpy(bx)), torch.from_numpy(by))
        loss.backward()
        opt.step()
        return loss.item()

    yield train


@contextlib.contextmanager
def mlp_jax_network(jax, init):
    """JAX: one jax.jit-compiled step, the loss's gradient and a hand-written Adam (TF's formula)."""
    import jax.numpy as jnp

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["W1"] + p["b1"])
        h = jax.nn.relu(h @ p["W2"] + p["b2"])
        logits = h @ p["W3"] + p["b3"]
        return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(logits), axis=1))

    def train_step(state, x, y):
        p, m, v, beta1_power, beta2_power = state
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        adam = common.jax_adam(jax, p, g, m, v, beta1_power, beta2_power, ADAM_LEARNING_RATE, BETA1, BETA2, EPSILON)
        return adam, loss

    train_step = jax.jit(train_step, donate_argnums=0)
    params = {name: jnp.asarray(value) for name, value in init.items()}
    state = (params, jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params),
             jnp.float32(BETA1), jnp.float32(BETA2))

    def train(bx, by):
        nonlocal state
        state, loss = train_step(state, bx, by)
        return float(loss)

    yield train


def mlp_network(lib, init):
    """A context manager yielding train(x, y) -> loss: `lib`'s MLP, starting from `init`."""
    if lib.name == "torch":
        return mlp_torch_network(lib.module, init)
    if lib.name == "jax":
        return mlp_jax_network(lib.module, init)
    return mlp_tf1_network(lib.module, init, lib.session_kwargs)


def max_relative_difference(losses, reference, steps=None):
    """max |losses - reference| / |reference| over their common prefix of steps (at most `steps`)."""
    import numpy as np
    n = min(len(losses), len(reference), len(losses) if steps is None else steps)
    a, b = np.asarray(losses[:n], np.float64), np.asarray(reference[:n], np.float64)
    return float(np.max(np.abs(a - b) / np.abs(b))) if n else float("nan")


# --------------------------------------------------------------------------- Session.run overhead

def session_run_trivial(tf, calls, session_kwargs):
    a = tf.placeholder(tf.float32, [])
    b = tf.placeholder(tf.float32, [])
    c = a + b
    times = []
    with tf.Session(**session_kwargs) as sess:
        for i in range(WARMUP_CALLS + calls):
            t0 = time.perf_counter()
            sess.run(c, feed_dict={a: 1.0, b: 2.0})
            t1 = time.perf_counter()
            if i >= WARMUP_CALLS:
                times.append(t1 - t0)
    return times


def per_step_softmax(batches, steps):
    import pygrad as tf
    x, y = tf.placeholder(tf.float32, [None, 784]), tf.placeholder(tf.float32, [None, 10])
    W, b = tf.Variable(tf.zeros([784, 10])), tf.Variable(tf.zeros([10]))
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(tf.nn.softmax(tf.matmul(x, W) + b)), reduction_indices=1))
    opt = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cost)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        common.per_step_report(tf, sess, [opt, cost], lambda i: dict(zip((x, y), batches[i % len(batches)])), steps,
                               "pygrad, the softmax step")


def main():
    p = common.argument_parser(__doc__)
    p.add_argument("--steps", type=int, default=2000, help="timed training steps per repeat")
    p.add_argument("--mlp-steps", type=int, default=500, help="timed MLP training steps per repeat")
    p.add_argument("--calls", type=int, default=20000, help="timed trivial session.run calls")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the MLP's initial weights")
    p.add_argument("--per-step", action="store_true",
                   help="only time each op of pygrad's softmax step from traced runs (--steps of them)")
    args, libs, batches = common.start(p, BATCH)
    import numpy as np

    if args.per_step:
        per_step_softmax(batches, min(args.steps, 500))
        return

    print(f"cpu: {common.cpu_model()}")
    for line in common.blas_description():
        print(line)
    mlp_batches = common.make_batches(*common.load_mnist_train(args.data_dir), MLP_BATCH)
    mlp_init = mlp_initial_values(MLP_WIDTH, args.seed)
    results = common.Results()
    costs = {}
    mlp_losses = {}
    for _ in range(args.repeats):
        for lib in libs:
            if lib.name == "torch":
                times, costs[lib.name] = train_torch(lib.module, batches, args.steps)
            elif lib.name == "jax":
                times, costs[lib.name] = train_jax(lib.module, batches, args.steps)
            else:
                with common.fresh_graph(lib.module):
                    times, costs[lib.name] = train_tf1(lib.module, batches, args.steps, lib.session_kwargs)
            results.add("mnist_softmax_step", lib.name, times)
        for lib in libs:
            with mlp_network(lib, mlp_init) as train:
                times, mlp_losses[lib.name] = common.time_steps(
                    lambda i: train(*mlp_batches[i % len(mlp_batches)]), MLP_WARMUP_STEPS, args.mlp_steps)
            results.add("mlp_adam_step", lib.name, times)
        for lib in libs:
            if lib.name in ("pygrad", "tensorflow"):
                with common.fresh_graph(lib.module):
                    times = session_run_trivial(lib.module, args.calls, lib.session_kwargs)
                results.add("session_run_trivial", lib.name, times)

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} mlp_steps={args.mlp_steps} "
          f"calls={args.calls} (median over repeats of per-repeat statistics, microseconds)")
    results.print_table()
    for name in costs:
        print(f"final cost ({name}, step {len(costs[name])}): {costs[name][-1]:.6f}")
    if "pygrad" in costs:
        for name in costs:
            if name != "pygrad":
                diff = np.max(np.abs(np.array(costs["pygrad"]) - np.array(costs[name])))
                print(f"max |cost_pygrad - cost_{name}| over {len(costs['pygrad'])} steps: {diff:.2e}")
    for name, losses in mlp_losses.items():
        print(f"mlp losses ({name}, first 5 of {len(losses)} steps): " + " ".join(f"{v:.6f}" for v in losses[:5]))
    if "pygrad" in mlp_losses:
        for name, losses in mlp_losses.items():
            if name != "pygrad":
                first = max_relative_difference(losses, mlp_losses["pygrad"], MLP_CHECK_STEPS)
                every = max_relative_difference(losses, mlp_losses["pygrad"])
                print(f"max |loss_{name} - loss_pygrad| / |loss_pygrad| (mlp): {first:.2e} over the first "
                      f"{MLP_CHECK_STEPS} steps, {every:.2e} over all {len(losses)}")


if __name__ == "__main__":
    main()
