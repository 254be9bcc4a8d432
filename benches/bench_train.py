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
  session_run_trivial  ``sess.run(a + b)`` on two scalar placeholders; 200 warm-up calls, then
                       --calls timed calls. pygrad and TensorFlow only: it measures the cost of a
                       Session.run call, which PyTorch (eager) and JAX have no equivalent of.
Each case is run --repeats times, interleaving libraries (pygrad, tensorflow, torch, jax, pygrad,
...); a row shows the median over repeats of the per-repeat median, p10 and p90 (microseconds),
and the ratio of the peer's median to pygrad's. Every library sees the same batches in the same
order (a fixed permutation, numpy seed 0, of the 55000 training examples that follow the 5000
validation examples), so each peer's per-step costs are compared with pygrad's as a correctness
cross-check (max absolute difference over all steps of the last repeat).

Threads: every library gets --threads threads, set as benches/common.py describes. A peer that
cannot be imported is skipped with a message.

Run:
  python benches/bench_train.py --data-dir DIR [--steps 2000] [--calls 20000] [--repeats 3]
                                [--threads 1] [--peers tensorflow,torch,jax]
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone.
"""
import time

import common

WARMUP_STEPS = 50
WARMUP_CALLS = 200
BATCH = 100
LEARNING_RATE = 0.01


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


def main():
    p = common.argument_parser(__doc__)
    p.add_argument("--steps", type=int, default=2000, help="timed training steps per repeat")
    p.add_argument("--calls", type=int, default=20000, help="timed trivial session.run calls")
    args, libs, batches = common.start(p, BATCH)
    import numpy as np

    results = common.Results()
    costs = {}
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
            if lib.name in ("pygrad", "tensorflow"):
                with common.fresh_graph(lib.module):
                    times = session_run_trivial(lib.module, args.calls, lib.session_kwargs)
                results.add("session_run_trivial", lib.name, times)

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} "
          f"calls={args.calls} (median over repeats of per-repeat statistics, microseconds)")
    results.print_table()
    for name in costs:
        print(f"final cost ({name}, step {len(costs[name])}): {costs[name][-1]:.6f}")
    if "pygrad" in costs:
        for name in costs:
            if name != "pygrad":
                diff = np.max(np.abs(np.array(costs["pygrad"]) - np.array(costs[name])))
                print(f"max |cost_pygrad - cost_{name}| over {len(costs['pygrad'])} steps: {diff:.2e}")


if __name__ == "__main__":
    main()
