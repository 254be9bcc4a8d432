"""bfloat16 mixed precision against float32, in pygrad and in TensorFlow's own bfloat16 rewrite.

Each library runs each case twice: in float32, and with its mixed-precision switch on, which is
ConfigProto's ``graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 = ON`` for both:
  pygrad      its convolutions and matrix products take bfloat16 copies of their operands and
              write float32 (pygrad/bfloat16.py); every other op, the weights and Adam's state
              stay float32. The same as a Session after enable_mixed_precision_graph_rewrite.
  tensorflow  TensorFlow's oneDNN bfloat16 graph rewrite (grappler's auto_mixed_precision for the
              CPU): its allow-list ops (convolutions, products, and the ops between them it
              infers) run in bfloat16 on bfloat16 tensors, with casts where the graph meets
              float32 ops.

pygrad's convnet training step runs a third way, "bf16-api": as a TF1 program asks for mixed
precision, ``opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(AdamOptimizer(...))``
and a Session created after it; the same bfloat16 products, plus the dynamic loss scaling the
wrapped optimizer adds (the loss scaled, the gradients unscaled and checked for Inf and NaN, the
update in a cond). TensorFlow's v1 function rewrites to float16 on GPUs only, so it has no such row.

Cases (wall-clock per step, medians of --repeats repeats interleaving libraries and precisions):
  convnet_train_step   bench_convnet.py's Deep MNIST training step (batch 50, keep_prob 0.5)
  convnet_inference    its logits for a batch of 50
  lstm_train_step      bench_lstm.py's LSTM step (28 rows of 28 pixels, 128 units, batch 128)
The table prints each bfloat16 row's speed-up over the same library's float32 row, and peer / pygrad
for the same precision.

Accuracy (--accuracy-steps, --lstm-accuracy-steps; 0 skips): each library and precision trains the
convnet (keep_prob 0.5, the graph's random seed fixed, so both precisions draw the same dropout
masks in one library) and the LSTM from the same initial weights on the same batches, then
reports the accuracy on the 10,000 MNIST test images and the last 50 steps' mean loss.

--per-step: pygrad's convnet training step alone, op by op from traced runs, in both precisions,
with the products' total beside the rest.

Header: the CPU model and its bfloat16 flags (avx512_bf16, amx_bf16), and whether pygrad runs
bfloat16 on it (oneDNN's detection: pygrad.bfloat16.cpu_has_bfloat16). On a CPU without them
both libraries run float32 in both columns; the script says so.

Run:
  python benches/bench_bfloat16.py [--threads 1] [--repeats 3] [--steps 50] [--peers tensorflow|none]
                                   [--accuracy-steps 1000] [--lstm-accuracy-steps 500] [--cases ...]
  python benches/bench_bfloat16.py --per-step [--steps 50] [--threads 1]
"""
import contextlib
import os

import common

CASES = ("convnet_train_step", "convnet_inference", "lstm_train_step")
PRECISIONS = ("float32", "bfloat16")
API = "bf16-api"  # pygrad's convnet step through enable_mixed_precision_graph_rewrite


def cpu_bf16_flags():
    """The bfloat16 flags of /proc/cpuinfo (empty where it does not list them)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return []
    return [f for f in ("avx512_bf16", "amx_bf16", "amx_tile") if f in flags]


def session_kwargs(lib, precision):
    """lib's Session keyword arguments with its mixed-precision switch set for precision."""
    kwargs = dict(lib.session_kwargs)
    config = kwargs.get("config") or lib.module.ConfigProto()
    if lib.name == "tensorflow":
        copy = lib.module.ConfigProto()
        copy.CopyFrom(config)
        config = copy
    if precision != API:  # (the API's Session takes the process-wide switch)
        on = precision == "bfloat16"
        config.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 = 1 if on else 2  # ON / OFF
    kwargs["config"] = config
    return kwargs


@contextlib.contextmanager
def case_network(case, lib, precision, seed):
    """Yields step(batch) for one case, built afresh in lib with precision's switch."""
    import bench_convnet
    import bench_lstm
    kwargs = session_kwargs(lib, precision)
    if case == "lstm_train_step":
        with bench_lstm.tf1_network(lib.module, bench_lstm.initial_values(seed), kwargs) as train:
            yield lambda batch: train(*batch)
        return
    tf = lib.module
    wrap = tf.train.experimental.enable_mixed_precision_graph_rewrite if precision == API else None
    try:
        with bench_convnet.tf1_network(tf, bench_convnet.initial_values(seed), kwargs, wrap) as (train, infer):
            if case == "convnet_train_step":
                yield lambda batch: train(*batch, bench_convnet.KEEP_PROB_TRAIN)
            else:
                yield lambda batch: infer(batch[0])
    finally:
        if wrap:
            tf.train.experimental.disable_mixed_precision_graph_rewrite()


def load_mnist_test(data_dir):
    """The 10,000 test images (float32 in [0, 1]) and their labels (int)."""
    import gzip

    import numpy as np

    def read(name, offset):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)

    return (read("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255.0,
            read("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))


def convnet_accuracy(lib, precision, batches, steps, test, seed):
    """(test accuracy, mean loss of the last 50 steps) after `steps` convnet training steps."""
    import numpy as np

    import bench_convnet
    tf = lib.module
    init = bench_convnet.initial_values(seed)
    with common.fresh_graph(tf):
        tf.set_random_seed(seed)
        x, y_, keep_prob, logits, loss, train_step = bench_convnet.build_tf1(tf, init)
        with tf.Session(**session_kwargs(lib, precision)) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train_step, loss], {x: bx, y_: by, keep_prob: bench_convnet.KEEP_PROB_TRAIN})[1]
                      for bx, by in (batches[i % len(batches)] for i in range(steps))]
            predicted = np.concatenate([np.argmax(sess.run(logits, {x: test[0][i:i + 500], keep_prob: 1.0}), 1)
                                        for i in range(0, len(test[0]), 500)])
    return float(np.mean(predicted == test[1])), float(np.mean(losses[-50:]))


def lstm_accuracy(lib, precision, batches, steps, test, seed):
    """(test accuracy, mean loss of the last 50 steps) after `steps` LSTM training steps."""
    import numpy as np

    import bench_lstm
    tf = lib.module
    init = bench_lstm.initial_values(seed)
    with common.fresh_graph(tf):
        x, y, loss, train_op, variables = bench_lstm.build_tf1(tf)
        logits, = tf.get_collection("logits")
        with tf.Session(**session_kwargs(lib, precision)) as sess:
            sess.run(tf.global_variables_initializer())
            for name, v in variables.items():
                v.load(init[name], sess)
            losses = [sess.run([train_op, loss], {x: bx, y: by})[1]
                      for bx, by in (batches[i % len(batches)] for i in range(steps))]
            predicted = np.concatenate([np.argmax(sess.run(logits, {x: test[0][i:i + 500]}), 1)
                                        for i in range(0, len(test[0]), 500)])
    return float(np.mean(predicted == test[1])), float(np.mean(losses[-50:]))


def per_step(lib, batches, steps, seed):
    """What --per-step prints: pygrad's convnet training step in each precision from traced runs,
    op by op (a product counted with its operands' bfloat16 conversions, which run just before it),
    and the products' total beside the other steps'."""
    import numpy as np

    import bench_convnet
    tf = lib.module
    for precision in PRECISIONS:
        with common.fresh_graph(tf):
            x, y_, keep_prob, _, loss, train_step = bench_convnet.build_tf1(tf, bench_convnet.initial_values(seed))
            with tf.Session(**session_kwargs(lib, precision)) as sess:
                sess.run(tf.global_variables_initializer())

                def feed_of(i):
                    bx, by = batches[i % len(batches)]
                    return {x: bx, y_: by, keep_prob: bench_convnet.KEEP_PROB_TRAIN}

                times = common.traced_op_times(tf, sess, [train_step, loss], feed_of, steps)
        common.print_per_step(times, steps, f"pygrad, the convnet's training step in {precision}")
        products = sum(float(np.median(v)) for (types, _), v in times.items() if types.split("+")[0] in
                       ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MatMul"))
        total = sum(float(np.median(v)) for v in times.values())
        print(f"  products {products / 1000:.2f} ms, the other steps {(total - products) / 1000:.2f} ms")


def print_speed(results, libs, cases):
    print(f"{'case':<20}{'library':<12}{'precision':<10}{'median_ms':>11}{'p10':>9}{'p90':>9}"
          f"{'bf16 speed-up':>15}{'peer/pygrad':>13}")
    for case in cases:
        for lib in libs:
            for precision in (*PRECISIONS, API):
                stats = results.median(case, f"{lib.name}/{precision}")
                if stats is None:
                    continue
                med, p10, p90 = (v / 1000 for v in stats)
                f32 = results.median(case, f"{lib.name}/float32")
                speedup = f"{f32[0] / stats[0]:.2f}x" if precision != "float32" else ""
                mine = results.median(case, f"pygrad/{precision}")
                ratio = f"{stats[0] / mine[0]:.2f}x" if lib.name != "pygrad" and mine else ""
                print(f"{case:<20}{lib.name:<12}{precision:<10}{med:>11.2f}{p10:>9.2f}{p90:>9.2f}"
                      f"{speedup:>15}{ratio:>13}")


def main():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF's TF1 RNN cells (bench_lstm)
    p = common.argument_parser(__doc__)
    p.add_argument("--steps", type=int, default=50, help="timed steps per case and repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before timing")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (default: all)")
    p.add_argument("--accuracy-steps", type=int, default=1000, help="convnet training steps per accuracy run")
    p.add_argument("--lstm-accuracy-steps", type=int, default=500, help="LSTM training steps per accuracy run")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the initial weights (and graph seed)")
    p.add_argument("--per-step", action="store_true",
                   help="only time each op of pygrad's convnet step in both precisions (--steps traced runs)")
    p.set_defaults(peers="tensorflow")
    args, libs, _ = common.start(p, None)
    libs = [lib for lib in libs if lib.name in ("pygrad", "tensorflow")]
    cases = [c for c in args.cases.split(",") if c]
    images, labels = common.load_mnist_train(args.data_dir)
    batches = {50: common.make_batches(images, labels, 50), 128: common.make_batches(images, labels, 128)}

    if args.per_step:
        per_step(libs[0], batches[50], args.steps, args.seed)
        return
    import pygrad.bfloat16
    flags = cpu_bf16_flags()
    print(f"cpu: {common.cpu_model()}; bfloat16 flags: {', '.join(flags) or 'none'}; pygrad runs bfloat16 "
          f"products: {'yes' if pygrad.bfloat16.cpu_has_bfloat16() else 'no (both precisions run float32)'}")

    results = common.Results()
    for _ in range(args.repeats):
        for case in cases:
            data = batches[128 if case == "lstm_train_step" else 50]
            for lib in libs:
                api = lib.name == "pygrad" and case == "convnet_train_step"
                for precision in (*PRECISIONS, API) if api else PRECISIONS:
                    with case_network(case, lib, precision, args.seed) as step:
                        times, _ = common.time_steps(lambda i: step(data[i % len(data)]), args.warmup, args.steps)
                    results.add(case, f"{lib.name}/{precision}", times)
    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} warmup={args.warmup} "
          f"(milliseconds; median over repeats of per-repeat statistics)")
    print_speed(results, libs, cases)

    runs = [("convnet", convnet_accuracy, args.accuracy_steps, 50),
            ("lstm", lstm_accuracy, args.lstm_accuracy_steps, 128)]
    if any(steps > 0 for _, _, steps, _ in runs):
        test = load_mnist_test(args.data_dir)
        print(f"\n{'model':<10}{'steps':>7}  {'library':<12}{'precision':<10}{'test accuracy':>15}"
              f"{'last-50 loss':>14}{'bf16 - fp32 (points)':>22}")
        for model, accuracy, steps, batch in runs:
            if steps <= 0:
                continue
            for lib in libs:
                got = {precision: accuracy(lib, precision, batches[batch], steps, test, args.seed)
                       for precision in PRECISIONS}
                for precision, (acc, loss) in got.items():
                    delta = f"{100 * (acc - got['float32'][0]):+.2f}" if precision == "bfloat16" else ""
                    print(f"{model:<10}{steps:>7}  {lib.name:<12}{precision:<10}{acc:>15.4f}{loss:>14.4f}{delta:>22}")


if __name__ == "__main__":
    main()
