"""Parameter-server benchmark: pygrad.distributed on a local Dask cluster against single-process
training of the same model, and a calibrated model of larger clusters.

Models (--model): softmax (MNIST softmax regression, SGD 0.5), convnet (Deep MNIST, Adam 1e-4) and
embedding (word2vec-style: the mean of 4 word vectors of a 50,000 x 64 embedding, then a linear
layer to 10 classes, Adagrad 0.5; each word belongs to a class, drawn by a Zipf law as words
are, and an example's words to one class).

Part 1, measured. For each number of workers in --workers (default 1,2,4), each mode in --modes
(async, sync) and each variant in --variants, one run of --steps steps per worker, batch --batch,
on one shard; then the same model trained in this process on the same total examples. Variants:
default (overlapped pushes and pulls, shared memory on this host, sparse pushes), no-overlap
(async: push and pull in the worker's loop), messages (through Dask's messages, in the loop: the
transport before shared memory), dense (IndexedSlices gradients pushed dense) and bfloat16 (float32
gradients pushed rounded to bfloat16). A row: examples/s,
pushes/s, bytes moved per worker step, the shard's update latency (median, with its rewrite of
shared memory), the share of the workers' loop spent waiting on the parameter server, the speed
relative to the single process and to one worker, and the test accuracy. All processes share this
machine's cores, so more workers than cores cannot go faster.

Part 2, simulated. From the 1-worker async run of the first variant it takes
  T   a worker's step (its loop's seconds per step: compute and what it waited),
  a   the shard's seconds per push (its update and its rewrite of the weights, the median),
and measures in this process
  o   the round trip of the smallest push through the local link (one float: the socket's message,
      the shard's checks and lock, the reply), the fixed cost of a push to a shard,
and models W workers and K shards holding 1/K of the bytes each: each shard serves a push in
s_K = o + a / K (a worker's own copying of its gradients and weights does not load the shard),
the cluster does min(W / T, 1 / s_K) steps per second, a shard saturates when
W / T >= 1 / s_K, and K shards suffice from K >= a / (T / W - o). When T / W <= o no number of
shards suffices: every shard sees every worker's pushes.

Run: python benches/bench_ps.py [--data-dir DIR] [--model softmax|convnet|embedding] [--steps 300]
                                [--batch 100] [--workers 1,2,4] [--modes async,sync]
                                [--variants default,no-overlap,messages,dense,bfloat16] [--threads 1]
                                [--chart PNG]
--chart writes examples/s against workers: the measured runs, and the model's lines for one shard
and for the shards it says are needed (matplotlib; skipped with a message without it).
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "distributed"))


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=os.environ.get("PYGRAD_MNIST_DIR"))
    p.add_argument("--model", choices=["softmax", "convnet", "embedding"], default="softmax")
    p.add_argument("--steps", type=int, default=300, help="steps per worker")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--modes", default="async,sync")
    p.add_argument("--variants", default="default", help="of default, no-overlap, messages, dense, bfloat16")
    p.add_argument("--threads", type=int, default=1, help="pygrad threads per worker and for the single process")
    p.add_argument("--simulate", default="8,16,32,64,128,256", help="worker counts of the simulation")
    p.add_argument("--chart", help="write a PNG chart of the measured and modelled throughput here")
    return p.parse_args()


V, D, C = 50_000, 64, 10  # the embedding model's words, their width and the classes


def embedding_model():
    """word2vec-style: the mean of 4 word vectors, then a linear layer; its gradient of the
    embedding is IndexedSlices (the rows looked up)."""
    import pygrad as tf

    ids = tf.placeholder(tf.int64, [None, 4])
    y_ = tf.placeholder(tf.float32, [None, C])
    emb = tf.Variable(tf.random_uniform([V, D], -0.5, 0.5, seed=1), name="embedding")
    w = tf.Variable(tf.random_uniform([D, C], -0.1, 0.1, seed=2), name="w")
    logits = tf.matmul(tf.reduce_mean(tf.nn.embedding_lookup(emb, ids), 1), w)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))
    return {"loss": loss, "inputs": [ids, y_], "accuracy": accuracy}


def embedding_data(n, seed):
    """(ids, one-hot labels): word i belongs to class i % C; an example's 4 words are of one class,
    each drawn by a Zipf law over that class's words."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, C, n)
    ranks = np.minimum(rng.zipf(1.2, size=(n, 4)) - 1, V // C - 1)
    return (labels[:, None] + C * ranks).astype(np.int64), np.eye(C, dtype=np.float32)[labels]


def simulate(T, a, o, batch, worker_counts):
    """Rows of the calibrated model (see the module's docstring)."""
    print(f"\ncalibration: worker step T = {T * 1e3:.3f} ms, shard per push a = {a * 1e3:.3f} ms, "
          f"the smallest push's round trip o = {o * 1e3:.3f} ms")
    print(f"{'workers':>8} {'1 shard ex/s':>14} {'saturated':>10} {'shards needed':>14} {'with them ex/s':>15}")
    rows = []
    for W in worker_counts:
        demand = W / T
        one = min(demand, 1.0 / (o + a))
        slack = T / W - o
        needed = math.ceil(a / slack) if slack > 0 else None
        with_needed = min(demand, 1.0 / (o + a / needed)) if needed else 1.0 / o
        print(f"{W:>8} {one * batch:>14.0f} {'yes' if demand > one else 'no':>10} "
              f"{needed if needed else 'none suffices':>14} {with_needed * batch:>15.0f}")
        rows.append((W, one * batch, demand * batch, needed, with_needed * batch))
    return rows


def chart(path, model, measured, rows):
    """A PNG of examples/s against workers: the measured runs and the model's 1-shard and
    enough-shards lines, with the ideal (no parameter-server cost) line."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for mode, points in measured.items():
        ax.plot([w for w, _ in points], [e for _, e in points], "o-", label=f"measured, {mode} (2 cores)")
    ws = [r[0] for r in rows]
    ax.plot(ws, [r[2] for r in rows], ":", color="gray", label="model: no parameter-server cost")
    ax.plot(ws, [r[1] for r in rows], "s-", label="model: 1 shard")
    ax.plot(ws, [r[4] for r in rows], "^-", label="model: shards needed")
    for w, _, _, needed, e in rows:
        ax.annotate(str(needed) if needed else "-", (w, e), textcoords="offset points", xytext=(0, 6), fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_ylabel("examples / s")
    ax.set_title(f"pygrad.distributed, {model}: throughput against workers\n"
                 "(model points labelled with the shards needed)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"chart: {path}")


VARIANTS = {"default": {}, "no-overlap": {"overlap": False}, "messages": {"transport": "messages", "overlap": False},
            "dense": {"sparse": False}, "bfloat16": {"compression": "bfloat16"}}


def main():
    args = parse()
    os.environ["PYGRAD_NUM_THREADS"] = str(args.threads)
    import logging

    from distributed import Client
    from ps_example import accuracy_on, single_process

    import pygrad as tf
    from pygrad import distributed

    if args.model == "softmax":
        from softmax_ps import model

        def optimizer():
            return tf.train.GradientDescentOptimizer(0.5)
    elif args.model == "convnet":
        from deep_mnist_ps import model

        def optimizer():
            return tf.train.AdamOptimizer(1e-4)
    else:
        model = embedding_model

        def optimizer():
            return tf.train.AdagradOptimizer(0.5)
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    for name in ("softmax_ps", "deep_mnist_ps"):
        if name in sys.modules:
            cloudpickle.register_pickle_by_value(sys.modules[name])
    if args.model == "embedding":
        data, test = embedding_data(100_000, 0), embedding_data(10_000, 1)
    else:
        from pygrad.examples.tutorials.mnist import input_data

        mnist = input_data.read_data_sets(args.data_dir, one_hot=True)
        data, test = (mnist.train.images, mnist.train.labels), (mnist.test.images, mnist.test.labels)
    worker_counts = [int(w) for w in args.workers.split(",")]
    variants = args.variants.split(",")
    cluster = distributed.local_cluster(workers=max(worker_counts), ps_shards=1, threads_per_worker=args.threads,
                                        dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster, set_as_default=False)
    try:
        print(f"{args.model}, batch {args.batch}, {args.steps} steps per worker, {args.threads} thread(s) each; "
              f"cpu: {cpu_model()}")
        print(f"{'run':>34} {'examples/s':>11} {'pushes/s':>9} {'kB/step':>8} {'update ms':>10} {'wait %':>7} "
              f"{'vs single':>10} {'vs 1 worker':>11} {'test acc':>9}")
        calibration, measured, one_worker = None, {}, {}
        for W in worker_counts:
            tf.set_num_threads(args.threads)
            start = time.monotonic()
            weights = single_process(model, optimizer, *data, args.steps * W, args.batch, 0)
            single = args.steps * W * args.batch / (time.monotonic() - start)
            print(f"{f'single process ({W}x)':>34} {single:>11.0f} {'':>9} {'':>8} {'':>10} {'':>7} {1.0:>10.2f} "
                  f"{'':>11} {accuracy_on(model, weights, *test):>9.4f}")
            for mode in args.modes.split(","):
                for variant in variants:
                    if mode == "sync" and variant in ("no-overlap",):
                        continue  # (sync pushes and pulls in the loop anyway)
                    report = distributed.train(model, data, workers=W, ps_shards=1, mode=mode, steps=args.steps,
                                               batch_size=args.batch, optimizer=optimizer, client=client,
                                               threads_per_worker=args.threads, progress=False, verbose=False,
                                               **VARIANTS[variant])
                    acc = accuracy_on(model, report.weights, *test)
                    key = (mode, variant)
                    print(f"{f'{mode}, {variant}, {W} worker(s)':>34} {report.examples_per_second:>11.0f} "
                          f"{report.pushes_per_second:>9.1f} {report.bytes_per_step / 1e3:>8.1f} "
                          f"{report.apply_latency()['p50'] * 1e3:>10.3f} {100 * report.wait_share:>7.1f} "
                          f"{report.examples_per_second / single:>10.2f} "
                          f"{report.examples_per_second / one_worker.get(key, report.examples_per_second):>11.2f} "
                          f"{acc:>9.4f}")
                    if W == 1:
                        one_worker[key] = report.examples_per_second
                    measured.setdefault(f"{mode}, {variant}", []).append((W, report.examples_per_second))
                    if W == 1 and mode == "async" and calibration is None:
                        steps = max(1, report.steps_done)
                        calibration = (report.worker_seconds["loop"] / steps, report.apply_latency()["p50"],
                                       smallest_push_round_trip())
        if calibration:
            rows = simulate(*calibration, args.batch, [int(w) for w in args.simulate.split(",")])
            if args.chart:
                chart(args.chart, args.model, measured, rows)
        else:
            print("\n(no 1-worker async run to calibrate the simulation: add 1 to --workers and async to --modes)")
    finally:
        client.close()
        cluster.close()


def smallest_push_round_trip(repeats=500):
    """The median seconds of a push of one float through a local link to a shard in this process."""
    import asyncio

    import pygrad as tf
    from pygrad.distributed.shard import ParameterShard
    from pygrad.distributed.spec import VarSpec
    from pygrad.distributed.transport import LocalLink

    specs = [VarSpec("w", (1,), "float32", np.zeros(1, np.float32))]
    shard = ParameterShard(0, specs, lambda: tf.train.GradientDescentOptimizer(0.1), ["t"], run_id="bench")
    endpoint = asyncio.run(shard.local_endpoint())
    link = LocalLink(endpoint["directory"], specs, 0, "t", 10.0)
    times, grad = [], {"w": np.ones(1, np.float32)}
    try:
        for step in range(repeats):
            start = time.perf_counter()
            link.start_push(0, "t", step, step, grad)
            link.finish_push()
            times.append(time.perf_counter() - start)
    finally:
        link.close()
        asyncio.run(shard.close())
    return float(np.median(times))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
