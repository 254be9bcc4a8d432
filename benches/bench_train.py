"""Training-step and Session.run overhead benchmark: pygrad vs TensorFlow 1 (compat.v1).

The same TF1-style code runs against both libraries; it only receives the module
object `tf` (``import pygrad as tf`` or ``tensorflow.compat.v1`` with v2 behaviour off).

Cases (times are wall-clock per ``sess.run`` call, measured with time.perf_counter):
  mnist_softmax_step   one step of the classic MNIST softmax regression tutorial
                       (GradientDescentOptimizer(0.01), batch 100), ``sess.run([opt, cost])``;
                       50 warm-up steps, then --steps timed steps.
  session_run_trivial  ``sess.run(a + b)`` on two scalar placeholders; 200 warm-up calls,
                       then --calls timed calls.
Each case is run --repeats times, interleaving libraries (pygrad, tensorflow, pygrad, ...);
a row shows the median over repeats of the per-repeat median, p10 and p90 (microseconds).
Every library sees the same batches in the same order (a fixed permutation, numpy seed 0,
of the 55000 training examples that follow the 5000 validation examples), so the per-step
costs of pygrad and TensorFlow are compared as a correctness cross-check.

Threads: OMP/OPENBLAS/MKL_NUM_THREADS are set to --threads before any library is imported;
TensorFlow gets a ConfigProto with intra/inter-op parallelism = --threads, pygrad gets
pygrad.set_num_threads(--threads) if it has it. A library that cannot be imported is skipped.

Run:
  python benches/bench_train.py --data-dir DIR [--steps 2000] [--calls 20000] [--repeats 3]
                                [--threads 1] [--peers tensorflow]
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone.
"""
import argparse
import contextlib
import gzip
import os
import sys
import time

WARMUP_STEPS = 50
WARMUP_CALLS = 200
BATCH = 100


def load_mnist_train(data_dir):
    """The 55000 training examples (validation = first 5000 dropped), float32 in [0, 1], one-hot."""
    import numpy as np

    def read(name, offset):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)

    images = read("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255.0
    labels = read("train-labels-idx1-ubyte.gz", 8)
    one_hot = np.zeros((labels.size, 10), dtype=np.float32)
    one_hot[np.arange(labels.size), labels] = 1.0
    return images[5000:], one_hot[5000:]


def make_batches(images, labels):
    import numpy as np
    perm = np.random.RandomState(0).permutation(len(images))
    return [(np.ascontiguousarray(images[perm[i:i + BATCH]]),
             np.ascontiguousarray(labels[perm[i:i + BATCH]]))
            for i in range(0, len(images) - BATCH + 1, BATCH)]


def build_and_train(tf, batches, steps, session_kwargs=None):
    """Classic TF1 softmax regression; returns (per-step seconds after warm-up, all costs)."""
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
    opt = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    times, costs = [], []
    with tf.Session(**(session_kwargs or {})) as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(WARMUP_STEPS + steps):
            bx, by = batches[i % len(batches)]
            t0 = time.perf_counter()
            _, c = sess.run([opt, cost], feed_dict={x: bx, y: by})
            t1 = time.perf_counter()
            costs.append(float(c))
            if i >= WARMUP_STEPS:
                times.append(t1 - t0)
    return times, costs


def session_run_trivial(tf, calls, session_kwargs=None):
    a = tf.placeholder(tf.float32, [])
    b = tf.placeholder(tf.float32, [])
    c = a + b
    times = []
    with tf.Session(**(session_kwargs or {})) as sess:
        for i in range(WARMUP_CALLS + calls):
            t0 = time.perf_counter()
            sess.run(c, feed_dict={a: 1.0, b: 2.0})
            t1 = time.perf_counter()
            if i >= WARMUP_CALLS:
                times.append(t1 - t0)
    return times


def load_libraries(peers, threads):
    """[(name, module, session_kwargs)]; prints a line for each library that is skipped."""
    libs = []
    try:
        import pygrad
        if not hasattr(pygrad, "Session"):
            raise ImportError("pygrad has no Session (not built?)")
        if hasattr(pygrad, "set_num_threads"):
            pygrad.set_num_threads(threads)
        libs.append(("pygrad", pygrad, {}))
    except ImportError as e:
        print(f"skipped pygrad: {e}")
    if "tensorflow" in peers:
        try:
            import tensorflow.compat.v1 as tf1
            tf1.logging.set_verbosity(tf1.logging.ERROR)
            tf1.disable_eager_execution()
            tf1.disable_v2_behavior()
            config = tf1.ConfigProto(intra_op_parallelism_threads=threads,
                                     inter_op_parallelism_threads=threads)
            libs.append(("tensorflow", tf1, {"config": config}))
        except ImportError as e:
            print(f"skipped tensorflow: {e}")
    return libs


def fresh_graph(tf):
    return tf.Graph().as_default() if hasattr(tf, "Graph") else contextlib.nullcontext()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=os.environ.get("PYGRAD_MNIST_DIR"),
                   help="directory with the MNIST IDX .gz files (default: $PYGRAD_MNIST_DIR)")
    p.add_argument("--steps", type=int, default=2000, help="timed training steps per repeat")
    p.add_argument("--calls", type=int, default=20000, help="timed trivial session.run calls")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--peers", default="tensorflow", help="comma-separated peers, or 'none'")
    args = p.parse_args()
    if not args.data_dir:
        p.error("--data-dir is required (or set PYGRAD_MNIST_DIR)")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np

    libs = load_libraries([s.strip() for s in args.peers.split(",")], args.threads)
    if not libs:
        sys.exit("no library to benchmark")
    batches = make_batches(*load_mnist_train(args.data_dir))

    cases = ["mnist_softmax_step", "session_run_trivial"]
    stats = {(c, name): [] for c in cases for name, _, _ in libs}  # per repeat (med, p10, p90)
    costs = {}
    for _ in range(args.repeats):
        for name, tf, kw in libs:
            with fresh_graph(tf):
                times, costs[name] = build_and_train(tf, batches, args.steps, kw)
            stats["mnist_softmax_step", name].append(np.percentile(times, [50, 10, 90]) * 1e6)
            with fresh_graph(tf):
                times = session_run_trivial(tf, args.calls, kw)
            stats["session_run_trivial", name].append(np.percentile(times, [50, 10, 90]) * 1e6)

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} "
          f"calls={args.calls} (median over repeats of per-repeat statistics, microseconds)")
    print(f"{'case':<22}{'library':<12}{'median_us':>12}{'p10':>12}{'p90':>12}")
    for case in cases:
        rows = {}
        for name, _, _ in libs:
            med, p10, p90 = np.median(np.array(stats[case, name]), axis=0)
            rows[name] = med
            print(f"{case:<22}{name:<12}{med:>12.1f}{p10:>12.1f}{p90:>12.1f}")
        if "pygrad" in rows and "tensorflow" in rows:
            print(f"{case:<22}tf/pygrad = {rows['tensorflow'] / rows['pygrad']:.2f}x")
    for name in costs:
        print(f"final cost ({name}, step {len(costs[name])}): {costs[name][-1]:.6f}")
    if "pygrad" in costs and "tensorflow" in costs:
        diff = np.max(np.abs(np.array(costs["pygrad"]) - np.array(costs["tensorflow"])))
        print(f"max |cost_pygrad - cost_tf| over {len(costs['pygrad'])} steps: {diff:.2e}")


if __name__ == "__main__":
    main()
