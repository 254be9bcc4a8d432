"""Convolutional network benchmark: pygrad vs TensorFlow 1 (compat.v1), PyTorch and JAX on the CPU.

The network is TensorFlow's "Deep MNIST for experts" convnet, batch 50:
  x [50, 784] -> reshape [-1, 28, 28, 1]
  conv 5x5x1x32 SAME + bias, relu, max_pool 2x2 stride 2 SAME     -> [50, 14, 14, 32]
  conv 5x5x32x64 SAME + bias, relu, max_pool 2x2 stride 2 SAME    -> [50, 7, 7, 64]
  flatten, fc 3136 -> 1024 + bias, relu, dropout (keep_prob fed)
  fc 1024 -> 10 + bias = logits
  loss = reduce_mean(softmax_cross_entropy_with_logits(labels=y_, logits)), Adam(1e-4)
One TF1-style builder (``build_tf1``) receives the module `tf` and runs unchanged under pygrad
(``import pygrad as tf``) and ``tensorflow.compat.v1`` (v2 behaviour off). The peers:
  torch  an nn.Module with nn.Conv2d / F.max_pool2d / nn.Linear on NCHW inputs (PyTorch's default
         layout; a [50, 784] batch is viewed as [50, 1, 28, 28]), F.dropout,
         F.cross_entropy with the one-hot labels as target probabilities, torch.optim.Adam
         (lr 1e-4, eps 1e-8; it adds eps to the bias-corrected sqrt(v), TensorFlow to the raw
         one, which makes no difference to the time). fc1's input rows are permuted once so that
         the same weights apply to PyTorch's channel-major flattening.
  jax    jax.lax.conv_general_dilated (NHWC inputs, HWIO filters), lax.reduce_window max pooling,
         dropout with jax.random.bernoulli, and a hand-written Adam step with TensorFlow's
         formula (lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t); m, v updated; var -= lr_t m /
         (sqrt(v) + eps)), all in one jax.jit-compiled function (float32, state donated).

Cases (wall-clock per step, time.perf_counter):
  convnet_train_step  one training step with keep_prob 0.5, returning the loss as a Python float
                      (pygrad/tensorflow: ``sess.run([train_step, loss], feed_dict)``; torch:
                      zero_grad, forward, backward, opt.step(), loss.item(); jax: the jitted
                      step, float(loss)); --warmup steps, then --steps timed steps.
  convnet_inference   the logits of a batch of 50 as a NumPy array, keep_prob 1.0
                      (``sess.run(logits, feed_dict)``; torch under torch.inference_mode();
                      jax: a jitted forward function); --warmup calls, then --inference-steps.
Each repeat builds every library's network afresh and times both cases; --repeats repeats
interleave the libraries (pygrad, tensorflow, torch, jax, pygrad, ...). A row shows the median
over repeats of the per-repeat median, p10 and p90 (microseconds) and the ratio of the peer's
median to pygrad's. Every library sees the same batches in the same order (a fixed permutation,
numpy seed 0, of the 55000 training examples that follow the 5000 validation examples).

Cross-check: all libraries start from the same NumPy arrays (weights truncated normal, stddev
0.1, redrawn beyond two standard deviations; biases 0.1; NumPy RNG seeded with --seed). Before
timing, each trains --check-steps steps with keep_prob 1.0 (so that no random draw is involved)
from those values; the maximum relative difference between each peer's losses and pygrad's is
printed (float32 rounding gives about 1e-6 to 1e-4).

Threads: every library gets --threads threads, set as benches/common.py describes. A peer that
cannot be imported is skipped with a message.

Header: the CPU, the BLAS libraries loaded (and the OpenBLAS core each dispatched to), and the
oneDNN implementations pygrad's and TensorFlow's convolutions ran (brgconv:avx512_core,
jit:avx512_core, ...): before timing, the script runs itself again per library with
``--onednn-probe LIBRARY`` and ONEDNN_VERBOSE=1, which trains one step and infers one batch, and
summarizes oneDNN's verbose lines (common.onednn_description).

FLOPs (``train_flops``, ``inference_flops``; used by bench_sweep.py): 2*M*N*K per matrix product,
a convolution counted as the product of its im2col form, 2 * N*OH*OW*O * KH*KW*C (the taps over
the padding included). A training step runs each layer's forward, its weight gradient and the
gradient of its input, except conv1's input gradient (the fed images need none):
  per example  conv1 2*28*28*32*25 = 1,254,400 (x2), conv2 2*14*14*64*800 = 20,070,400 (x3),
               fc1 2*3136*1024 = 6,422,528 (x3), fc2 2*1024*10 = 20,480 (x3)
               = 82,049,024 per training example, 27,767,808 per inferred one.
Bias additions, relu, pooling, dropout, softmax and Adam are not counted.

Memory: after the timing tables, each library's resident memory around convnet_train_step, measured
in a child process of its own that imports only that library (common.memory_table): the resident
MiB before the first step, the peak over --warmup and --memory-steps steps, their difference, and
for pygrad the temporaries of the step's plan before and after buffer sharing. --memory-only prints
that table alone; --memory-steps 0 leaves it out.

Run:
  python benches/bench_convnet.py --data-dir DIR [--steps 100] [--inference-steps 200]
                                  [--warmup 5] [--repeats 3] [--threads 1]
                                  [--peers tensorflow,torch,jax] [--check-steps 5]
                                  [--memory-steps 10] [--memory-only]
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone.
"""
import contextlib

import common

BATCH = 50
LEARNING_RATE = 1e-4
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8
KEEP_PROB_TRAIN = 0.5


def initial_values(seed):
    """The network's initial parameters as float32 NumPy arrays (TF layouts: HWIO filters, [in, out]
    matrices): truncated normal with stddev 0.1 for weights, 0.1 for biases."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def truncated_normal(shape):
        z = rng.standard_normal(shape)
        while True:
            out = np.abs(z) > 2
            if not out.any():
                return (0.1 * z).astype(np.float32)
            z[out] = rng.standard_normal(int(out.sum()))

    shapes = {"W_conv1": [5, 5, 1, 32], "W_conv2": [5, 5, 32, 64], "W_fc1": [7 * 7 * 64, 1024],
              "W_fc2": [1024, 10]}
    init = {name: truncated_normal(shape) for name, shape in shapes.items()}
    for name, n in (("b_conv1", 32), ("b_conv2", 64), ("b_fc1", 1024), ("b_fc2", 10)):
        init[name] = np.full([n], 0.1, dtype=np.float32)
    return init


# The layers as matrix products: (name, rows per example, columns, inner dimension, whether the
# layer's input needs a gradient). A convolution's rows are its output positions, its inner
# dimension the filter taps (KH*KW*C).
LAYERS = (("conv1", 28 * 28, 32, 5 * 5 * 1, False),
          ("conv2", 14 * 14, 64, 5 * 5 * 32, True),
          ("fc1", 1, 1024, 7 * 7 * 64, True),
          ("fc2", 1, 10, 1024, True))


def inference_flops(batch):
    """FLOPs of the forward products for `batch` examples: sum of 2 * batch*rows * cols * inner."""
    return sum(2 * batch * rows * cols * inner for _, rows, cols, inner, _ in LAYERS)


def train_flops(batch):
    """FLOPs of a training step's products: each layer's forward and weight gradient, and its input
    gradient where the layer below needs one (not conv1's: its input is the fed batch)."""
    return sum(2 * batch * rows * cols * inner * (3 if input_grad else 2)
               for _, rows, cols, inner, input_grad in LAYERS)


# --------------------------------------------------------------------------- TF1 (pygrad, tensorflow)

def build_tf1(tf, init, wrap_optimizer=None):
    """The tutorial's graph, variables initialized from `init`; returns the tensors used.
    wrap_optimizer: applied to the Adam optimizer before minimize (e.g. TF1's
    enable_mixed_precision_graph_rewrite)."""
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)

    def conv2d(x, W):
        return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")

    def max_pool_2x2(x):
        return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    x_image = tf.reshape(x, [-1, 28, 28, 1])
    W_conv1, b_conv1 = tf.Variable(init["W_conv1"]), tf.Variable(init["b_conv1"])
    h_pool1 = max_pool_2x2(tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1))
    W_conv2, b_conv2 = tf.Variable(init["W_conv2"]), tf.Variable(init["b_conv2"])
    h_pool2 = max_pool_2x2(tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2))
    W_fc1, b_fc1 = tf.Variable(init["W_fc1"]), tf.Variable(init["b_fc1"])
    h_fc1 = tf.nn.relu(tf.matmul(tf.reshape(h_pool2, [-1, 7 * 7 * 64]), W_fc1) + b_fc1)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    W_fc2, b_fc2 = tf.Variable(init["W_fc2"]), tf.Variable(init["b_fc2"])
    y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv))
    optimizer = tf.train.AdamOptimizer(LEARNING_RATE)
    train_step = (wrap_optimizer(optimizer) if wrap_optimizer else optimizer).minimize(loss)
    return x, y_, keep_prob, y_conv, loss, train_step


@contextlib.contextmanager
def tf1_network(tf, init, session_kwargs, wrap_optimizer=None):
    """Yields (train(x, y, keep_prob) -> loss, infer(x) -> logits) on a fresh graph and session."""
    with common.fresh_graph(tf):
        x, y_, keep_prob, y_conv, loss, train_step = build_tf1(tf, init, wrap_optimizer)
        with tf.Session(**session_kwargs) as sess:
            sess.run(tf.global_variables_initializer())

            def train(bx, by, kp):
                return float(sess.run([train_step, loss], feed_dict={x: bx, y_: by, keep_prob: kp})[1])

            def infer(bx):
                return sess.run(y_conv, feed_dict={x: bx, keep_prob: 1.0})

            yield train, infer


# --------------------------------------------------------------------------- PyTorch

@contextlib.contextmanager
def torch_network(torch, init):
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
            self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
            self.fc1 = nn.Linear(7 * 7 * 64, 1024)
            self.fc2 = nn.Linear(1024, 10)

        def forward(self, x, keep_prob):
            h = x.view(-1, 1, 28, 28)
            h = F.max_pool2d(F.relu(self.conv1(h)), 2, 2)
            h = F.max_pool2d(F.relu(self.conv2(h)), 2, 2)
            h = F.relu(self.fc1(h.flatten(1)))
            h = F.dropout(h, p=1.0 - keep_prob, training=keep_prob < 1.0)
            return self.fc2(h)

    net = Net()
    with torch.no_grad():
        t = torch.from_numpy
        net.conv1.weight.copy_(t(init["W_conv1"].transpose(3, 2, 0, 1)))  # HWIO -> OIHW
        net.conv2.weight.copy_(t(init["W_conv2"].transpose(3, 2, 0, 1)))
        # TF flattens [7, 7, 64] as (h, w, c), PyTorch [64, 7, 7] as (c, h, w).
        w_fc1 = init["W_fc1"].reshape(7, 7, 64, 1024).transpose(2, 0, 1, 3).reshape(7 * 7 * 64, 1024)
        net.fc1.weight.copy_(t(w_fc1.T))
        net.fc2.weight.copy_(t(init["W_fc2"].T))
        for layer, name in ((net.conv1, "b_conv1"), (net.conv2, "b_conv2"), (net.fc1, "b_fc1"),
                            (net.fc2, "b_fc2")):
            layer.bias.copy_(t(init[name]))
    opt = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE, betas=(BETA1, BETA2), eps=EPSILON)

    def train(bx, by, kp):
        opt.zero_grad()
        loss = F.cross_entropy(net(torch.from_numpy(bx), kp), torch.from_numpy(by))
        loss.backward()
        opt.step()
        return loss.item()

    def infer(bx):
        with torch.inference_mode():
            return net(torch.from_numpy(bx), 1.0).numpy()

    yield train, infer


# --------------------------------------------------------------------------- JAX

@contextlib.contextmanager
def jax_network(jax, init):
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    def conv2d(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def max_pool_2x2(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")

    def forward(p, x, keep_prob=None, key=None):
        h = x.reshape(-1, 28, 28, 1)
        h = max_pool_2x2(jax.nn.relu(conv2d(h, p["W_conv1"]) + p["b_conv1"]))
        h = max_pool_2x2(jax.nn.relu(conv2d(h, p["W_conv2"]) + p["b_conv2"]))
        h = jax.nn.relu(h.reshape(-1, 7 * 7 * 64) @ p["W_fc1"] + p["b_fc1"])
        if key is not None:
            keep = jax.random.bernoulli(key, keep_prob, h.shape)
            h = jnp.where(keep, h / keep_prob, 0.0)
        return h @ p["W_fc2"] + p["b_fc2"]

    def loss_fn(p, x, y, keep_prob, key):
        logits = forward(p, x, keep_prob, key)
        return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(logits), axis=1))

    def train_step(state, x, y, keep_prob):
        p, m, v, beta1_power, beta2_power, key = state
        key, dropout_key = jax.random.split(key)
        loss, g = jax.value_and_grad(loss_fn)(p, x, y, keep_prob, dropout_key)
        adam = common.jax_adam(jax, p, g, m, v, beta1_power, beta2_power, LEARNING_RATE, BETA1, BETA2, EPSILON)
        return (*adam, key), loss

    train_step = jax.jit(train_step, donate_argnums=0)
    infer_fn = jax.jit(forward)
    params = {name: jnp.asarray(value) for name, value in init.items()}
    zeros = jax.tree.map(jnp.zeros_like, params)
    state = (params, zeros, jax.tree.map(jnp.zeros_like, params),
             jnp.float32(BETA1), jnp.float32(BETA2), jax.random.key(0))

    def train(bx, by, kp):
        nonlocal state
        state, loss = train_step(state, bx, by, np.float32(kp))
        return float(loss)

    def infer(bx):
        return jax.device_get(infer_fn(state[0], bx))

    yield train, infer


def network(lib, init):
    if lib.name == "torch":
        return torch_network(lib.module, init)
    if lib.name == "jax":
        return jax_network(lib.module, init)
    return tf1_network(lib.module, init, lib.session_kwargs)


@contextlib.contextmanager
def training_step(lib, batches, args):
    """What the memory table measures: library lib's network built from --seed's values, yielding
    step(i), one training step (keep_prob 0.5) on batch i."""
    with network(lib, initial_values(args.seed)) as (train, _):
        yield lambda i: train(*batches[i % len(batches)], KEEP_PROB_TRAIN)


def onednn_probe(libs, name, data_dir, batch_sizes, seed=0):
    """What --onednn-probe runs: library `name`'s network, for each batch size, trains one step and
    infers one batch (its oneDNN primitives print their verbose lines on stdout)."""
    import numpy as np
    lib = next(lib for lib in libs if lib.name == name)
    init = initial_values(seed)
    images, labels = common.load_mnist_train(data_dir)
    for batch in batch_sizes:
        (bx, by), = common.make_batches(images, labels, batch, count=1)
        with network(lib, init) as (train, infer):
            train(bx, by, KEEP_PROB_TRAIN)
            np.asarray(infer(bx))


def print_header(libs):
    """The CPU, the BLAS libraries loaded and the oneDNN implementations the convolutions run."""
    print(f"cpu: {common.cpu_model()}")
    for line in common.blas_description() + common.onednn_description(libs):
        print(line)


def main():
    p = common.argument_parser(__doc__)
    p.add_argument("--steps", type=int, default=100, help="timed training steps per repeat")
    p.add_argument("--inference-steps", type=int, default=200, help="timed inference calls per repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps (and calls) before timing")
    p.add_argument("--check-steps", type=int, default=5,
                   help="training steps with keep_prob 1.0 compared across libraries (0: none)")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the initial weights")
    common.add_onednn_probe_option(p)
    common.add_memory_options(p)
    p.add_argument("--per-step", action="store_true",
                   help="only time each op of pygrad's training step from traced runs (--steps of them)")
    started = common.start_with_memory(p, BATCH, "convnet_train_step", training_step)
    if started is None:
        return
    args, libs, batches = started
    import numpy as np

    if args.per_step:
        import pygrad as tf
        with common.fresh_graph(tf):
            x, y_, keep_prob, _, loss, train_step = build_tf1(tf, initial_values(args.seed))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                common.per_step_report(tf, sess, [train_step, loss], lambda i: {
                    x: batches[i % len(batches)][0], y_: batches[i % len(batches)][1], keep_prob: KEEP_PROB_TRAIN},
                    args.steps, "pygrad, the convnet's training step")
        return

    if args.onednn_probe:
        onednn_probe(libs, args.onednn_probe, args.data_dir, [BATCH], args.seed)
        return
    print_header(libs)
    init = initial_values(args.seed)

    check = {}
    if args.check_steps > 0:
        for lib in libs:
            with network(lib, init) as (train, _):
                check[lib.name] = np.array([train(*batches[i % len(batches)], 1.0)
                                            for i in range(args.check_steps)])

    results = common.Results()
    for _ in range(args.repeats):
        for lib in libs:
            with network(lib, init) as (train, infer):
                times, _ = common.time_steps(
                    lambda i: train(*batches[i % len(batches)], KEEP_PROB_TRAIN), args.warmup, args.steps)
                results.add("convnet_train_step", lib.name, times)
                times, _ = common.time_steps(
                    lambda i: infer(batches[i % len(batches)][0]), args.warmup, args.inference_steps)
                results.add("convnet_inference", lib.name, times)

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} "
          f"inference_steps={args.inference_steps} warmup={args.warmup} batch={BATCH} "
          f"(median over repeats of per-repeat statistics, microseconds)")
    results.print_table()
    if check:
        common.print_loss_check(check, "keep_prob 1.0, ")
    if args.memory_steps > 0:
        common.memory_table([lib.name for lib in libs], args, "convnet_train_step")


if __name__ == "__main__":
    main()
