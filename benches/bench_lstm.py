"""LSTM training-step benchmark: pygrad vs TensorFlow 1 (compat.v1), PyTorch and JAX on the CPU.

The model is the classic recurrent MNIST classifier (examples/lstm_mnist.py), batch 128:
  x [128, 784] -> [128, 28, 28]: 28 steps of 28 pixels
  LSTM of 128 units (TF's BasicLSTMCell: gates i, j, f, o from [x_t, h] @ kernel + bias,
  forget_bias 1.0), its output at the last step -> fc 128 -> 10 = logits
  loss = reduce_mean(softmax_cross_entropy_with_logits_v2(labels=y, logits)), Adam(1e-3)
One TF1-style builder (``build_tf1``, tf.nn.dynamic_rnn over the cell) receives the module `tf`
and runs unchanged under pygrad (``import pygrad as tf``) and ``tensorflow.compat.v1`` (v2
behaviour off). The peers:
  torch  torch.nn.LSTM(28, 128, batch_first=True) and nn.Linear, F.cross_entropy with the one-hot
         labels as target probabilities, torch.optim.Adam (lr 1e-3, eps 1e-8). PyTorch's gate
         order is i, f, g, o with two biases: the kernel's columns are reordered, forget_bias is
         folded into bias_ih, and bias_hh is a zero constant (not trained), so the model is TF's.
  jax    the same cell as a jax.lax.scan over the time-major steps, and a hand-written Adam step
         with TensorFlow's formula (lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t)), all in one
         jax.jit-compiled function (float32, state donated).

Case (wall-clock per step, time.perf_counter):
  lstm_train_step  one training step returning the loss as a Python float (pygrad/tensorflow:
                   ``sess.run([train_op, loss], feed_dict)``; torch: zero_grad, forward,
                   backward, opt.step(), loss.item(); jax: the jitted step, float(loss));
                   --warmup steps, then --steps timed steps.
Each repeat builds every library's network afresh; --repeats repeats interleave the libraries
(pygrad, tensorflow, torch, jax, pygrad, ...). A row shows the median over repeats of the
per-repeat median, p10 and p90 (microseconds) and the ratio of the peer's median to pygrad's.
Every library sees the same batches in the same order (a fixed permutation, numpy seed 0, of the
55000 training examples that follow the 5000 validation examples).

Cross-check: all libraries start from the same NumPy arrays (--seed); before timing each trains
--check-steps steps from them and the maximum relative difference between each peer's losses and
pygrad's is printed.

Threads: every library gets --threads threads, set as benches/common.py describes; the header
names the CPU and the BLAS each library loaded. A peer that cannot be imported is skipped with a
message.

Memory: after the timing tables, each library's resident memory around lstm_train_step, measured in
a child process of its own that imports only that library (common.memory_table): the resident MiB
before the first step, the peak over --warmup and --memory-steps steps, their difference, and for
pygrad the temporaries of the step's plan before and after buffer sharing. --memory-only prints
that table alone; --memory-steps 0 leaves it out.

Run:
  python benches/bench_lstm.py --data-dir DIR [--steps 50] [--warmup 5] [--repeats 3]
                               [--threads 1] [--peers tensorflow,torch,jax] [--check-steps 5]
                               [--memory-steps 10] [--memory-only] [--per-step]
--per-step: instead of the benchmark, pygrad's training step traced (RunOptions FULL_TRACE, the
plan's per-step timers) over --steps runs: the time per op type (a fused step under its
"Type+Type2+..." label) and the most expensive steps, beside an untraced run.
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone.
"""
import contextlib
import os

import common

BATCH = 128
STEPS, INPUTS, UNITS, CLASSES = 28, 28, 128, 10
LEARNING_RATE = 1e-3
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8
FORGET_BIAS = 1.0


def initial_values(seed):
    """The parameters as float32 NumPy arrays in TF's layouts: the cell's kernel [inputs + units,
    4 units] (Glorot uniform, TF's default) and zero bias; the output layer normal (stddev 0.1)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    limit = np.sqrt(6.0 / (INPUTS + UNITS + 4 * UNITS))
    return {"kernel": rng.uniform(-limit, limit, (INPUTS + UNITS, 4 * UNITS)).astype(np.float32),
            "bias": np.zeros(4 * UNITS, np.float32),
            "W_out": (0.1 * rng.standard_normal((UNITS, CLASSES))).astype(np.float32),
            "b_out": np.zeros(CLASSES, np.float32)}


# --------------------------------------------------------------------------- TF1 (pygrad, tensorflow)

def build_tf1(tf):
    """The classifier's graph; returns (x, y, loss, train_op, {init name: variable})."""
    x = tf.placeholder(tf.float32, [None, STEPS * INPUTS])
    y = tf.placeholder(tf.float32, [None, CLASSES])
    cell = tf.nn.rnn_cell.BasicLSTMCell(UNITS, forget_bias=FORGET_BIAS)
    outputs, _ = tf.nn.dynamic_rnn(cell, tf.reshape(x, [-1, STEPS, INPUTS]), dtype=tf.float32)
    W_out = tf.Variable(tf.zeros([UNITS, CLASSES]))
    b_out = tf.Variable(tf.zeros([CLASSES]))
    logits = tf.matmul(outputs[:, -1, :], W_out) + b_out
    tf.add_to_collection("logits", logits)  # (bench_bfloat16.py's accuracy)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(LEARNING_RATE).minimize(loss)
    names = {v.name: v for v in tf.global_variables()}
    variables = {"kernel": names["rnn/basic_lstm_cell/kernel:0"], "bias": names["rnn/basic_lstm_cell/bias:0"],
                 "W_out": W_out, "b_out": b_out}
    return x, y, loss, train_op, variables


@contextlib.contextmanager
def tf1_network(tf, init, session_kwargs):
    """Yields train(x, y) -> loss on a fresh graph and session, the variables set to `init`."""
    with common.fresh_graph(tf):
        x, y, loss, train_op, variables = build_tf1(tf)
        with tf.Session(**session_kwargs) as sess:
            sess.run(tf.global_variables_initializer())
            for name, v in variables.items():
                v.load(init[name], sess)

            def train(bx, by):
                return float(sess.run([train_op, loss], feed_dict={x: bx, y: by})[1])

            yield train


# --------------------------------------------------------------------------- PyTorch

@contextlib.contextmanager
def torch_network(torch, init):
    import numpy as np
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(INPUTS, UNITS, batch_first=True)
            self.fc = nn.Linear(UNITS, CLASSES)

        def forward(self, x):
            outputs, _ = self.lstm(x.view(-1, STEPS, INPUTS))
            return self.fc(outputs[:, -1])

    net = Net()
    i, j, f, o = np.split(init["kernel"], 4, axis=1)  # TF's gate order; PyTorch's is i, f, g (= j), o
    bi, bj, bf, bo = np.split(init["bias"], 4)
    kernel = np.concatenate([i, f, j, o], axis=1)
    with torch.no_grad():
        t = torch.from_numpy
        net.lstm.weight_ih_l0.copy_(t(np.ascontiguousarray(kernel[:INPUTS].T)))
        net.lstm.weight_hh_l0.copy_(t(np.ascontiguousarray(kernel[INPUTS:].T)))
        net.lstm.bias_ih_l0.copy_(t(np.concatenate([bi, bf + FORGET_BIAS, bj, bo])))
        net.lstm.bias_hh_l0.zero_()
        net.fc.weight.copy_(t(np.ascontiguousarray(init["W_out"].T)))
        net.fc.bias.copy_(t(init["b_out"]))
    net.lstm.bias_hh_l0.requires_grad_(False)
    opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=LEARNING_RATE,
                           betas=(BETA1, BETA2), eps=EPSILON)

    def train(bx, by):
        opt.zero_grad()
        loss = F.cross_entropy(net(torch.from_numpy(bx)), torch.from_numpy(by))
        loss.backward()
        opt.step()
        return loss.item()

    yield train


# --------------------------------------------------------------------------- JAX

@contextlib.contextmanager
def jax_network(jax, init):
    import jax.numpy as jnp
    from jax import lax

    def forward(p, x):
        xs = jnp.swapaxes(x.reshape(-1, STEPS, INPUTS), 0, 1)  # time-major for the scan

        def cell(carry, x_t):
            c, h = carry
            i, j, f, o = jnp.split(jnp.concatenate([x_t, h], axis=1) @ p["kernel"] + p["bias"], 4, axis=1)
            c = c * jax.nn.sigmoid(f + FORGET_BIAS) + jax.nn.sigmoid(i) * jnp.tanh(j)
            return (c, jnp.tanh(c) * jax.nn.sigmoid(o)), None

        zeros = jnp.zeros((x.shape[0], UNITS), x.dtype)
        (_, h), _ = lax.scan(cell, (zeros, zeros), xs)
        return h @ p["W_out"] + p["b_out"]

    def loss_fn(p, x, y):
        return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(forward(p, x)), axis=1))

    def train_step(state, x, y):
        p, m, v, beta1_power, beta2_power = state
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        adam = common.jax_adam(jax, p, g, m, v, beta1_power, beta2_power, LEARNING_RATE, BETA1, BETA2, EPSILON)
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


def network(lib, init):
    if lib.name == "torch":
        return torch_network(lib.module, init)
    if lib.name == "jax":
        return jax_network(lib.module, init)
    return tf1_network(lib.module, init, lib.session_kwargs)


@contextlib.contextmanager
def training_step(lib, batches, args):
    """What the memory table measures: library lib's network built from --seed's values, yielding
    step(i), one training step on batch i."""
    with network(lib, initial_values(args.seed)) as train:
        yield lambda i: train(*batches[i % len(batches)])


def main():
    # TensorFlow 2.16 on keeps its TF1 RNN cells in the tf_keras package, which this selects.
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    p = common.argument_parser(__doc__)
    p.add_argument("--steps", type=int, default=50, help="timed training steps per repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before timing")
    p.add_argument("--check-steps", type=int, default=5,
                   help="training steps whose losses are compared across libraries (0: none)")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the initial weights")
    common.add_memory_options(p)
    p.add_argument("--per-step", action="store_true",
                   help="only time each op type of pygrad's training step from traced runs (--steps of them)")
    started = common.start_with_memory(p, BATCH, "lstm_train_step", training_step)
    if started is None:
        return
    args, libs, batches = started
    import numpy as np

    if args.per_step:
        import pygrad as tf
        with common.fresh_graph(tf):
            x, y, loss, train_op, variables = build_tf1(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                init = initial_values(args.seed)
                for name, v in variables.items():
                    v.load(init[name], sess)
                common.per_op_report(tf, sess, [train_op, loss], lambda i: dict(zip((x, y), batches[i % len(batches)])),
                                     args.steps, f"pygrad, the LSTM's training step, {args.threads} thread(s)", top=8)
        return

    print(f"cpu: {common.cpu_model()}")
    for line in common.blas_description():
        print(line)
    init = initial_values(args.seed)

    check = {}
    if args.check_steps > 0:
        for lib in libs:
            with network(lib, init) as train:
                check[lib.name] = np.array([train(*batches[i % len(batches)]) for i in range(args.check_steps)])

    results = common.Results()
    for _ in range(args.repeats):
        for lib in libs:
            with network(lib, init) as train:
                times, _ = common.time_steps(lambda i: train(*batches[i % len(batches)]), args.warmup, args.steps)
                results.add("lstm_train_step", lib.name, times)

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} warmup={args.warmup} "
          f"batch={BATCH} (median over repeats of per-repeat statistics, microseconds)")
    results.print_table()
    if check:
        common.print_loss_check(check)
    if args.memory_steps > 0:
        common.memory_table([lib.name for lib in libs], args, "lstm_train_step")


if __name__ == "__main__":
    main()
