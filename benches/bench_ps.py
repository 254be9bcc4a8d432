"""Parameter-server benchmark: pygrad.distributed on a local Dask cluster against single-process
training of the same model, and a calibrated model of larger clusters.

Part 1, measured. For each number of workers in --workers (default 1,2,4) and each mode in --modes
(async, sync), one run of --steps steps per worker, batch --batch, on one shard; then the same model
trained in this process on the same total examples. A row: examples/s, pushes/s, bytes moved per
worker step, the shard's update latency (median), and the speed relative to the single process.
All processes share this machine's cores, so more workers than cores cannot go faster.

Part 2, simulated. From the 1-worker async run it takes
  c   compute seconds per worker step (one Session.run of the loss and all gradients),
  r   push + pull seconds per worker step (serialization, transfer, the shard's work),
  a   the shard's update seconds (the fused optimizer step over every variable),
  o   the round trip of an empty actor call (the fixed cost of one message),
and models W workers and K shards holding 1/K of the bytes each: a worker step takes
T = c + r (a worker's own serialization does not shrink with K); each shard receives W / T pushes
and pulls per second, and serves one push + pull in s_K = 2 o + (a + (r - 2 o - a) / 2) / K (its
update plus its half of the transfer, split over the shards, and the fixed message cost, which is
not). The cluster does min(W / T, 1 / s_K) steps per second; a shard saturates when
W / T >= 1 / s_K, and K shards suffice from K >= (a + (r - 2 o - a) / 2) / (T / W - 2 o). When
T / W <= 2 o no number of shards suffices: every shard sees every worker's messages.

Run: python benches/bench_ps.py [--data-dir DIR] [--model softmax|convnet] [--steps 300]
                                [--batch 100] [--workers 1,2,4] [--modes async,sync] [--threads 1]
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
    p.add_argument("--model", choices=["softmax", "convnet"], default="softmax")
    p.add_argument("--steps", type=int, default=300, help="steps per worker")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--modes", default="async,sync")
    p.add_argument("--threads", type=int, default=1, help="pygrad threads per worker and for the single process")
    p.add_argument("--simulate", default="8,16,32,64,128,256", help="worker counts of the simulation")
    p.add_argument("--chart", help="write a PNG chart of the measured and modelled throughput here")
    return p.parse_args()


def _pings(shard, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        shard.ping().result()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def message_round_trip(client, repeats=200):
    """Seconds of one empty actor call from a worker to a shard and back, the median over repeats."""
    import pygrad as tf
    from pygrad.distributed.shard import ParameterShard
    from pygrad.distributed.spec import VarSpec

    ps = next(a for a, w in client.scheduler_info()["workers"].items() if w["resources"].get("ps"))
    shard = client.submit(ParameterShard, 0, [VarSpec("w", (1,), "float32", np.zeros(1, np.float32))],
                          lambda: tf.train.GradientDescentOptimizer(0.1), ["unused"], workers=[ps],
                          actor=True).result()
    return client.submit(_pings, shard, repeats, resources={"compute": 1}, pure=False).result()


def simulate(c, r, a, o, batch, worker_counts):
    """Rows of the calibrated model (see the module's docstring)."""
    T = c + r
    shard_work = a + max(0.0, r - 2 * o - a) / 2
    print(f"\ncalibration: compute c = {c * 1e3:.3f} ms, push+pull r = {r * 1e3:.3f} ms, "
          f"shard update a = {a * 1e3:.3f} ms, message o = {o * 1e3:.3f} ms per worker step")
    print(f"{'workers':>8} {'1 shard ex/s':>14} {'saturated':>10} {'shards needed':>14} {'with them ex/s':>15}")
    rows = []
    for W in worker_counts:
        demand = W / T
        one = min(demand, 1.0 / (2 * o + shard_work))
        slack = T / W - 2 * o
        needed = math.ceil(shard_work / slack) if slack > 0 else None
        with_needed = min(demand, 1.0 / (2 * o + shard_work / needed)) if needed else 1.0 / (2 * o)
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


def main():
    args = parse()
    os.environ["PYGRAD_NUM_THREADS"] = str(args.threads)
    import logging

    from distributed import Client
    from ps_example import accuracy_on, single_process

    import pygrad as tf
    from pygrad import distributed
    from pygrad.examples.tutorials.mnist import input_data

    if args.model == "softmax":
        from softmax_ps import model

        def optimizer():
            return tf.train.GradientDescentOptimizer(0.5)
    else:
        from deep_mnist_ps import model

        def optimizer():
            return tf.train.AdamOptimizer(1e-4)
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    for name in ("softmax_ps", "deep_mnist_ps"):
        if name in sys.modules:
            cloudpickle.register_pickle_by_value(sys.modules[name])
    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)
    data = (mnist.train.images, mnist.train.labels)
    worker_counts = [int(w) for w in args.workers.split(",")]
    cluster = distributed.local_cluster(workers=max(worker_counts), ps_shards=1, threads_per_worker=args.threads,
                                        dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster, set_as_default=False)
    try:
        with client.as_current():
            o = message_round_trip(client)
        print(f"{args.model}, batch {args.batch}, {args.steps} steps per worker, {args.threads} thread(s) each")
        print(f"{'run':>22} {'examples/s':>11} {'pushes/s':>9} {'kB/step':>8} {'update ms':>10} {'wait %':>7} "
              f"{'vs single':>10} {'vs 1 worker':>11} {'test acc':>9}")
        calibration, measured, one_worker = None, {}, {}
        for W in worker_counts:
            tf.set_num_threads(args.threads)
            start = time.monotonic()
            weights = single_process(model, optimizer, *data, args.steps * W, args.batch, 0)
            single = args.steps * W * args.batch / (time.monotonic() - start)
            print(f"{f'single process ({W}x)':>22} {single:>11.0f} {'':>9} {'':>8} {'':>10} {'':>7} {1.0:>10.2f} "
                  f"{'':>11} "
                  f"{accuracy_on(model, weights, mnist.test.images, mnist.test.labels):>9.4f}")
            for mode in args.modes.split(","):
                report = distributed.train(model, data, workers=W, ps_shards=1, mode=mode, steps=args.steps,
                                           batch_size=args.batch, optimizer=optimizer, client=client,
                                           threads_per_worker=args.threads, progress=False, verbose=False)
                acc = accuracy_on(model, report.weights, mnist.test.images, mnist.test.labels)
                print(f"{f'{mode}, {W} worker(s)':>22} {report.examples_per_second:>11.0f} "
                      f"{report.pushes_per_second:>9.1f} {report.bytes_per_step / 1e3:>8.1f} "
                      f"{report.apply_latency()['p50'] * 1e3:>10.3f} {100 * report.wait_share:>7.1f} "
                      f"{report.examples_per_second / single:>10.2f} "
                      f"{report.examples_per_second / one_worker.get(mode, report.examples_per_second):>11.2f} "
                      f"{acc:>9.4f}")
                if W == 1:
                    one_worker[mode] = report.examples_per_second
                measured.setdefault(mode, []).append((W, report.examples_per_second))
                if W == 1 and mode == "async":
                    steps = max(1, report.steps_done)
                    calibration = (report.worker_seconds["compute"] / steps,
                                   (report.worker_seconds["push"] + report.worker_seconds["pull"]) / steps,
                                   report.apply_latency()["p50"], o)
        if calibration:
            rows = simulate(*calibration, args.batch, [int(w) for w in args.simulate.split(",")])
            if args.chart:
                chart(args.chart, args.model, measured, rows)
        else:
            print("\n(no 1-worker async run to calibrate the simulation: add 1 to --workers and async to --modes)")
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
