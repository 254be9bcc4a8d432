"""Imported-model inference: a frozen GraphDef run by pygrad, TensorFlow 1 (compat.v1) and ONNX Runtime.

The models are TF-Slim's image classifiers as pygrad builds them (pygrad.contrib.slim.nets, with
TF-Slim's scopes and variable names), 1000 classes, at inference (is_training=False):
  mobilenet_v1   224x224 inputs (depth multiplier 1.0)
  resnet_v1_50   224x224 inputs
  inception_v3   299x299 inputs (the auxiliary head is built, and pruned by the freezing)
Each is frozen as a user of a frozen .pb would get it: the variables replaced by constants
(tf.graph_util.convert_variables_to_constants, pruned to the logits) and the GraphDef serialized.
Every library then runs those bytes:
  pygrad       tf.GraphDef.FromString, tf.import_graph_def into a fresh graph, a Session;
  tensorflow   tensorflow.compat.v1: GraphDef.FromString, import_graph_def, a Session (grappler on,
               as by default);
  onnxruntime  the same GraphDef converted by tf2onnx (tf2onnx.convert.from_graph_def, opset
               --opset) and run by an onnxruntime InferenceSession on the CPU execution provider
               (graph optimizations at their default, ORT_ENABLE_ALL).
onnxruntime and tf2onnx are references of this script only (pip install onnxruntime tf2onnx); a peer
that cannot be imported is skipped with a message.

The weights (``variable_values``): each variable drawn from a NumPy generator seeded with --seed and
the variable's name, so the values do not depend on the order the variables are made in:
convolution weights normal with He's scale sqrt(2 / fan_in) (fan_in = KH*KW*C_in, KH*KW for
depthwise filters), biases, beta and the moving means uniform in [-0.1, 0.1], gamma in [0.5, 1.5],
the moving variances in [0.5, 1.5]. The batch norms' moving statistics are then calibrated as a
trained network's are (``calibrate``): the same net is built in training mode with batch-norm decay
0, and one run of its UPDATE_OPS on a calibration batch (uniform noise in [-1, 1], seed --seed + 1)
sets each moving mean and variance to the statistics of its input. Without it, random statistics
leave activations that grow or vanish with depth, and logits that hardly depend on the image.

Inputs: images uniform in [-1, 1] (Inception's preprocessing range), NumPy seed --seed + 2, batch 1
and batch 32; every library sees the same arrays.

Agreement, before any timing: each peer's logits for both batches against pygrad's, as the largest
absolute difference over the largest absolute logit of pygrad's (the logits' own scale: an element's
relative difference is meaningless near zero). Above --tolerance (default 1e-4) the script stops
with the difference. float32 rounding gave 1e-5 (mobilenet_v1), 3e-5 (resnet_v1_50) and 7e-5
(inception_v3): each library sums the convolutions' products in its own order, and the calibrated
batch norms carry those differences through the depth at their relative size.

Cases (wall-clock per run, time.perf_counter around ``sess.run(logits, feed)`` /
``InferenceSession.run``, the logits returned as a NumPy array): model x batch {1, 32}. For each
case and library, --warmup untimed runs, then timed runs until --min-time seconds and --min-steps
runs have passed (at most --max-steps). --repeats repeats interleave the libraries (pygrad,
tensorflow, onnxruntime, pygrad, ...) within each case; a row shows the median over repeats of the
per-repeat median, p10 and p90 (microseconds) and the ratio of the peer's median to pygrad's.

Threads: one count per process run (--threads): OMP/OPENBLAS/MKL_NUM_THREADS set before anything is
imported, pygrad.set_num_threads, TensorFlow's intra- and inter-op parallelism (benches/common.py),
onnxruntime's intra_op_num_threads (inter_op_num_threads 1, sequential execution: its default mode;
its threads spin while they wait, as by default).

--per-step: instead of the benchmark, pygrad's batch-1 run of each model traced (RunOptions
FULL_TRACE, the plan's per-step timers) over --steps-traced runs: the time per op type and the most
expensive ops (common.per_op_report).

The table's header gives the load average (1, 5, 15 minutes) at the start and the end: the machine
may be shared. Header: the CPU, the libraries' versions, the BLAS libraries loaded, and the oneDNN implementations
pygrad's and TensorFlow's convolutions ran (the script run again per library with --onednn-probe and
ONEDNN_VERBOSE=1, which builds the models with its output silenced, then runs each model once at
batch 1; common.onednn_description; --no-probe skips it).

Run:
  python benches/bench_inference.py [--models mobilenet_v1,resnet_v1_50,inception_v3]
                                    [--batches 1,32] [--threads 1] [--repeats 3] [--warmup 3]
                                    [--min-time 2.0] [--min-steps 5] [--max-steps 500]
                                    [--peers tensorflow,onnxruntime] [--per-step [--steps-traced 10]]
                                    [--image-size N] [--depth-multiplier D] [--no-probe] [--csv PATH]
  python benches/bench_inference.py --chart PNG --chart-from CSV[,CSV]   # draws the runs' CSV files

--csv writes the table (model, batch, threads, library, the median, p10 and p90 in microseconds, the
peer's median over pygrad's and the CPU). --chart with --chart-from draws those files, without
running anything: each peer's time over pygrad's per model and batch, one panel per thread count.
"""
import argparse
import contextlib
import ctypes
import os
import sys
import time
import zlib
from collections import namedtuple

import common

PEERS = ("tensorflow", "onnxruntime")
INPUT = "input"

Model = namedtuple("Model", "module net arg_scope image_size")
"""A TF-Slim net of pygrad.contrib.slim.nets: its module's name, the net's and its arg scope's function
names, and the default image size."""

MODELS = {
    "mobilenet_v1": Model("mobilenet_v1", "mobilenet_v1", "mobilenet_v1_arg_scope", 224),
    "resnet_v1_50": Model("resnet_v1", "resnet_v1_50", "resnet_arg_scope", 224),
    "inception_v3": Model("inception_v3", "inception_v3", "inception_v3_arg_scope", 299),
}

Frozen = namedtuple("Frozen", "name data input output image_size")
"""A frozen model: the serialized GraphDef (bytes), the input and output tensor names, the image size."""


# --------------------------------------------------------------------------- the frozen models

def variable_values(name, shape, seed):
    """The value of variable `name` (without ':0') of `shape` as float32 (the module's docstring)."""
    import numpy as np
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    kind = name.rsplit("/", 1)[-1]
    if kind in ("weights", "depthwise_weights", "pointwise_weights"):
        fan_in = shape[0] * shape[1] if kind == "depthwise_weights" else int(np.prod(shape[:-1]))
        value = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
    elif kind in ("biases", "beta", "moving_mean"):
        value = rng.uniform(-0.1, 0.1, shape)
    elif kind in ("gamma", "moving_variance"):
        value = rng.uniform(0.5, 1.5, shape)
    else:
        raise ValueError(f"no rule for the values of variable {name} {shape}")
    return value.astype(np.float32)


def random_images(batch, size, seed):
    import numpy as np
    return np.random.default_rng(seed).uniform(-1.0, 1.0, [batch, size, size, 3]).astype(np.float32)


def _build(tf, model, image_size, is_training, depth_multiplier, batch_norm_decay=None):
    """The net on a placeholder INPUT [None, size, size, 3] in the default graph; returns the logits."""
    import importlib

    from pygrad.contrib.framework import arg_scope
    module = importlib.import_module("pygrad.contrib.slim.nets." + model.module)
    scope_args = {} if batch_norm_decay is None else {"batch_norm_decay": batch_norm_decay}
    net_args = {} if depth_multiplier is None else {"depth_multiplier": depth_multiplier}
    x = tf.placeholder(tf.float32, [None, image_size, image_size, 3], name=INPUT)
    with arg_scope(getattr(module, model.arg_scope)(**scope_args)):
        logits, _ = getattr(module, model.net)(x, num_classes=1000, is_training=is_training, **net_args)
    return logits


def calibrate(tf, model, image_size, depth_multiplier, seed, batch=8):
    """{variable name: value}: the variables' values (``variable_values``) with each batch norm's moving
    mean and variance set to the statistics of its input on a calibration batch: the net in training
    mode with batch-norm decay 0, one run of its UPDATE_OPS."""
    with tf.Graph().as_default():
        _build(tf, model, image_size, True, depth_multiplier, batch_norm_decay=0.0)
        variables = tf.global_variables()
        with tf.Session() as sess:
            for v in variables:
                v.load(variable_values(v.op.name, v.shape.as_list(), seed), sess)
            sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS),
                     {INPUT + ":0": random_images(batch, image_size, seed + 1)})
            return dict(zip((v.op.name for v in variables), sess.run(variables)))


def build_frozen(name, image_size=None, depth_multiplier=None, seed=0):
    """``Frozen`` model `name` of MODELS, built by pygrad at inference with calibrated values (the
    module's docstring) and frozen: the GraphDef pruned to the logits, the variables constants."""
    import pygrad as tf
    model = MODELS[name]
    size = image_size or model.image_size
    values = calibrate(tf, model, size, depth_multiplier, seed)
    with tf.Graph().as_default() as graph:
        logits = _build(tf, model, size, False, depth_multiplier)
        with tf.Session() as sess:
            for v in tf.global_variables():
                v.load(values[v.op.name], sess)
            graph_def = tf.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), [logits.op.name])
    return Frozen(name, graph_def.SerializeToString(), INPUT + ":0", logits.name, size)


# --------------------------------------------------------------------------- the runners

def pygrad_runner(tf, frozen):
    """(run(images) -> logits, session, input, output) of the frozen bytes imported into a fresh pygrad graph."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(tf.GraphDef.FromString(frozen.data), name="")
    sess = tf.Session(graph=graph)
    x, y = graph.get_tensor_by_name(frozen.input), graph.get_tensor_by_name(frozen.output)
    return (lambda images: sess.run(y, {x: images})), sess, x, y


def tensorflow_session(tf1, frozen, session_kwargs):
    """(session, input, output) of the frozen bytes imported into a fresh TensorFlow graph."""
    graph = tf1.Graph()
    with graph.as_default():
        tf1.import_graph_def(tf1.GraphDef.FromString(frozen.data), name="")
    sess = tf1.Session(graph=graph, **session_kwargs)
    return sess, graph.get_tensor_by_name(frozen.input), graph.get_tensor_by_name(frozen.output)


def tensorflow_runner(tf1, frozen, session_kwargs):
    sess, x, y = tensorflow_session(tf1, frozen, session_kwargs)
    return lambda images: sess.run(y, {x: images})


def onnx_model(frozen, opset):
    """The frozen GraphDef converted by tf2onnx: the ONNX ModelProto's bytes."""
    import tensorflow.compat.v1 as tf1
    import tf2onnx
    tf1.logging.set_verbosity(tf1.logging.ERROR)
    model, _ = tf2onnx.convert.from_graph_def(tf1.GraphDef.FromString(frozen.data), input_names=[frozen.input],
                                              output_names=[frozen.output], opset=opset)
    return model.SerializeToString()


def onnxruntime_runner(ort, frozen, threads, opset):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_model(frozen, opset), options, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return lambda images: sess.run(None, {name: images})[0]


def runners(libs, frozen, threads, opset):
    """{library name: run(images) -> logits} for the frozen model."""
    out = {}
    for lib in libs:
        if lib.name == "pygrad":
            out[lib.name] = pygrad_runner(lib.module, frozen)[0]
        elif lib.name == "tensorflow":
            out[lib.name] = tensorflow_runner(lib.module, frozen, lib.session_kwargs)
        else:
            out[lib.name] = onnxruntime_runner(lib.module, frozen, threads, opset)
    return out


def relative_difference(got, want):
    """max |got - want| / max |want|, the shapes' sizes checked equal."""
    import numpy as np
    got, want = np.asarray(got), np.asarray(want)
    if got.size != want.size:
        raise ValueError(f"logits of {got.shape} against {want.shape}")
    return float(np.max(np.abs(got.reshape(-1) - want.reshape(-1))) / np.max(np.abs(want)))


def agreement(run, inputs):
    """{library: largest relative difference from pygrad's logits over the inputs}."""
    want = [run["pygrad"](x) for x in inputs]
    return {name: max(relative_difference(f(x), w) for x, w in zip(inputs, want))
            for name, f in run.items() if name != "pygrad"}


# --------------------------------------------------------------------------- the command line

def load_libraries(peers, threads):
    libs = common.load_libraries([p for p in peers if p == "tensorflow"], threads)
    if "onnxruntime" in peers:
        try:
            import onnxruntime
            import tf2onnx  # noqa: F401
            libs.append(common.Library("onnxruntime", onnxruntime, {}))
        except ImportError as e:
            print(f"skipped onnxruntime: {e} (pip install onnxruntime tf2onnx)")
    return libs


def versions(libs):
    import numpy as np
    parts = [f"numpy {np.__version__}"]
    for lib in libs:
        if lib.name == "tensorflow":
            import tensorflow
            parts.append(f"tensorflow {tensorflow.__version__}")
        elif lib.name == "onnxruntime":
            import onnx
            import tf2onnx
            parts.append(f"onnxruntime {lib.module.__version__} "
                         f"(tf2onnx {tf2onnx.__version__}, onnx {onnx.__version__})")
        else:
            parts.append(f"pygrad {getattr(lib.module, '__version__', '?')}")
    return ", ".join(parts)


@contextlib.contextmanager
def quiet_stdout():
    """File descriptor 1 sent to /dev/null (what native code prints there too, oneDNN's verbose lines)."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)


def time_case(run, images, args):
    """Seconds of each timed run (the module's docstring: --warmup, --min-time, --min-steps, --max-steps)."""
    for _ in range(args.warmup):
        run(images)
    times = []
    while len(times) < args.max_steps and (len(times) < args.min_steps or sum(times) < args.min_time):
        t0 = time.perf_counter()
        run(images)
        times.append(time.perf_counter() - t0)
    return times


def onnxruntime_per_op(ort, frozen, threads, opset, images, steps, title):
    """Prints onnxruntime's time per op type of a run as pygrad's per_op_report does (from its profiler:
    SessionOptions.enable_profiling, the nodes' kernel times, summed over the `steps` runs that follow
    a first run, divided by `steps`)."""
    import json
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.enable_profiling = True
    sess = ort.InferenceSession(onnx_model(frozen, opset), options, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: images}
    for _ in range(1 + steps):
        sess.run(None, feed)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    by_type = {}
    first = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e["name"] == "model_run")[1]
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= first:
            count, us = by_type.get(e["args"]["op_name"], (0, 0.0))
            by_type[e["args"]["op_name"]] = (count + 1, us + e["dur"])
    total = sum(us for _, us in by_type.values()) / steps
    print(f"\n{title}: µs per run, mean over {steps} profiled runs (onnxruntime's profiler)")
    print(f"  {'µs':>9}  {'share':>6}  {'nodes':>5}  op type")
    for op, (count, us) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
        print(f"  {us / steps:9.1f}  {100 * us / steps / total:5.1f}%  {count // steps:5d}  {op}")
    print(f"  {total:9.1f}  all nodes")


def per_step(libs, models, frozen_of, args):
    """--per-step: each library's time per op type of a run of each model at --per-step-batch."""
    for name in models:
        frozen = frozen_of(name)
        images = random_images(args.per_step_batch, frozen.image_size, args.seed + 2)
        for lib in libs:
            title = f"{lib.name}, {name} imported, batch {args.per_step_batch}, {args.threads} thread(s)"
            if lib.name == "onnxruntime":
                onnxruntime_per_op(lib.module, frozen, args.threads, args.opset, images, args.steps_traced, title)
                continue
            if lib.name == "pygrad":
                _, sess, x, y = pygrad_runner(lib.module, frozen)
            else:
                sess, x, y = tensorflow_session(lib.module, frozen, lib.session_kwargs)
            sess.run(y, {x: images})
            common.per_op_report(lib.module, sess, y, lambda i: {x: images}, args.steps_traced, title)


CSV_FIELDS = ("model", "batch", "threads", "library", "median_us", "p10_us", "p90_us", "peer_over_pygrad", "cpu")


def write_csv(path, results, models, batches, libraries, threads):
    """The table as CSV rows (CSV_FIELDS): peer_over_pygrad is the peer's median over pygrad's."""
    import csv
    cpu = common.cpu_model()
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_FIELDS)
        for name in models:
            for batch in batches:
                base = results.median(f"{name} b{batch}", "pygrad")
                for lib in libraries:
                    stats = results.median(f"{name} b{batch}", lib)
                    if stats is None:
                        continue
                    ratio = f"{stats[0] / base[0]:.3f}" if base is not None and lib != "pygrad" else ""
                    out.writerow([name, batch, threads, lib, *(f"{v:.1f}" for v in stats), ratio, cpu])
    print(f"csv: {path}")


def read_csv(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def draw_chart(path, rows):
    """A PNG of each peer's time over pygrad's per model and batch (above 1: pygrad is faster), one
    panel per thread count; returns what was written or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install matplotlib)"
    threads = sorted({int(r["threads"]) for r in rows})
    peers = list(dict.fromkeys(r["library"] for r in rows if r["library"] != "pygrad"))
    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4.2), squeeze=False, sharey=True)
    for ax, t in zip(axes[0], threads):
        cases = list(dict.fromkeys((r["model"], r["batch"]) for r in rows if int(r["threads"]) == t))
        width = 0.8 / max(1, len(peers))
        for k, peer in enumerate(peers):
            ratio = {(r["model"], r["batch"]): float(r["peer_over_pygrad"]) for r in rows
                     if int(r["threads"]) == t and r["library"] == peer}
            xs = [i + (k - (len(peers) - 1) / 2) * width for i in range(len(cases))]
            ax.bar(xs, [ratio.get(c, 0.0) for c in cases], width, label=peer)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{m.split('_')[0]}\nbatch {b}" for m, b in cases], fontsize=8)
        ax.set_title(f"{t} thread{'s' if t > 1 else ''}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("peer time / pygrad time (above 1: pygrad faster)")
    axes[0][0].legend()
    fig.suptitle(f"Frozen-model inference, {rows[0]['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"chart: {path}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, out of %(default)s")
    p.add_argument("--batches", default="1,32", help="batch sizes (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="threads for every library (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="repeats, interleaving the libraries (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs per case, library and repeat")
    p.add_argument("--min-time", type=float, default=2.0, help="timed seconds per case, library and repeat")
    p.add_argument("--min-steps", type=int, default=5, help="timed runs at least")
    p.add_argument("--max-steps", type=int, default=500, help="timed runs at most")
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated peers out of %(default)s, or 'none'")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the weights and images")
    p.add_argument("--image-size", type=int, help="height and width of the images (default: each model's)")
    p.add_argument("--depth-multiplier", type=float,
                   help="mobilenet_v1's and inception_v3's depth multiplier (default: 1.0)")
    p.add_argument("--opset", type=int, default=17, help="the ONNX opset tf2onnx converts to")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="largest relative difference of a peer's logits from pygrad's (default: %(default)s)")
    p.add_argument("--per-step", action="store_true",
                   help="only trace each library's runs at --per-step-batch and print the time per op type")
    p.add_argument("--per-step-batch", type=int, default=1, help="the batch --per-step traces (default: 1)")
    p.add_argument("--steps-traced", type=int, default=10, help="traced runs per model and library with --per-step")
    p.add_argument("--no-probe", action="store_true", help="leave the oneDNN implementations out of the header")
    p.add_argument("--csv", help="also write the table here (one row per case and library, the CPU in each)")
    p.add_argument("--chart", help="with --chart-from: draw this PNG from those CSV files instead of running")
    p.add_argument("--chart-from", help="comma-separated CSV files written by --csv (one per thread count)")
    common.add_onednn_probe_option(p)
    args = p.parse_args()
    if args.chart or args.chart_from:
        if not (args.chart and args.chart_from):
            p.error("--chart and --chart-from go together")
        print(draw_chart(args.chart, [row for path in args.chart_from.split(",") for row in read_csv(path)]))
        return
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    peers = [s.strip() for s in args.peers.split(",") if s.strip() and s.strip() != "none"]
    batches = [int(b) for b in args.batches.split(",")]
    for what, names, known in (("model", models, MODELS), ("peer", peers, PEERS)):
        if any(n not in known for n in names):
            p.error(f"unknown {what}(s) {', '.join(n for n in names if n not in known)}; "
                    f"choose from {', '.join(known)}")
    if args.depth_multiplier is not None and "resnet_v1_50" in models:
        p.error("resnet_v1_50 has no depth multiplier")
    common.set_thread_environment(args.threads)
    libs = load_libraries(peers, args.threads)
    frozen = {}

    def frozen_of(name):
        if name not in frozen:
            frozen[name] = build_frozen(name, args.image_size, args.depth_multiplier, args.seed)
        return frozen[name]

    if args.per_step:
        per_step(libs, models, frozen_of, args)
        return
    if args.onednn_probe:
        for name in models:
            with quiet_stdout():  # the building's own convolutions are not the probed library's
                run = runners([lib for lib in libs if lib.name == args.onednn_probe], frozen_of(name), args.threads,
                              args.opset)[args.onednn_probe]
            run(random_images(1, frozen_of(name).image_size, args.seed + 2))
        return
    print(f"cpu: {common.cpu_model()}")
    print(versions(libs))
    for line in common.blas_description() + ([] if args.no_probe else common.onednn_description(libs)):
        print(line)

    load_at_start = " ".join(f"{v:.2f}" for v in os.getloadavg())
    results = common.Results()
    differences = {}
    for name in models:
        t0 = time.perf_counter()
        model = frozen_of(name)
        run = runners(libs, model, args.threads, args.opset)
        images = {b: random_images(b, model.image_size, args.seed + 2) for b in batches}
        print(f"{name}: built, frozen ({len(model.data) / 1e6:.1f} MB) and loaded in {time.perf_counter() - t0:.1f} s")
        differences[name] = agreement(run, list(images.values()))
        bad = {lib: d for lib, d in differences[name].items() if not d <= args.tolerance}
        if bad:
            sys.exit(f"{name}: logits differ from pygrad's by more than {args.tolerance:g} (relative): " +
                     ", ".join(f"{lib} {d:.2e}" for lib, d in bad.items()))
        for batch in batches:
            for _ in range(args.repeats):
                for lib in libs:
                    results.add(f"{name} b{batch}", lib.name, time_case(run[lib.name], images[batch], args))
        del run

    print(f"\nthreads={args.threads} repeats={args.repeats} warmup={args.warmup} min_time={args.min_time} "
          f"min_steps={args.min_steps} (median over repeats of per-repeat statistics, microseconds); load average "
          f"{load_at_start} at the start, {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")
    results.print_table()
    if args.csv:
        write_csv(args.csv, results, models, batches, [lib.name for lib in libs], args.threads)
    for name, diff in differences.items():
        print(f"{name}: max |logits - pygrad's| / max |pygrad's| over batches {args.batches}: " +
              (", ".join(f"{lib} {d:.1e}" for lib, d in diff.items()) or "no peer"))


if __name__ == "__main__":
    main()
