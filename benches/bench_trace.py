"""What tracing costs, and that an untraced run pays nothing for it: median wall-clock times of

  session_run_trivial   ``sess.run(a + b)`` on two scalar placeholders (the compiled Session.run path)
  softmax_step          one step of the MNIST softmax-regression tutorial (W [784,10], b [10], cost =
                        mean(-sum(y * log(softmax(x W + b)), 1)), gradient descent 0.01, batch 100;
                        random data of MNIST's shapes), ``sess.run([opt, cost], feed_dict)``
  softmax_step_traced   the same step with RunOptions(trace_level=FULL_TRACE) and a RunMetadata (the
                        Python path; the StepStats built each run)

    python benches/bench_trace.py [--calls 20000] [--steps 3000] [--repeats 5]

Each row is the median over --repeats rounds of the median time of a call in that round. To compare
two builds, run the script alternately under each (interleaved, several times) and compare rows.
"""
import argparse
import statistics
import time

import numpy as np


def _median_call(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    import pygrad as tf
    rng = np.random.RandomState(0)
    xs = rng.rand(100, 784).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 100)]
    a, b = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    total = a + b
    x, y = tf.placeholder(tf.float32, [None, 784]), tf.placeholder(tf.float32, [None, 10])
    w, bias = tf.Variable(tf.zeros([784, 10])), tf.Variable(tf.zeros([10]))
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(tf.nn.softmax(tf.matmul(x, w) + bias)), reduction_indices=1))
    opt = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    rows = {"session_run_trivial": [], "softmax_step": [], "softmax_step_traced": []}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feeds = {x: xs, y: ys}
        cases = {"session_run_trivial": (lambda: sess.run(total, {a: 1.0, b: 2.0}), args.calls),
                 "softmax_step": (lambda: sess.run([opt, cost], feeds), args.steps),
                 "softmax_step_traced": (lambda: sess.run([opt, cost], feeds, options=options,
                                                          run_metadata=tf.RunMetadata()), args.steps // 3)}
        for fn, n in cases.values():
            _median_call(fn, 200)  # warm-up (plans built, caches warm)
        for _ in range(args.repeats):
            for name, (fn, n) in cases.items():
                rows[name].append(_median_call(fn, n))
    for name, times in rows.items():
        print(f"{name:22s} {statistics.median(times) * 1e6:9.2f} us")


if __name__ == "__main__":
    main()
