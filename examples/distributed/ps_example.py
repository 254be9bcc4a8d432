"""The command line the parameter-server examples share: flags, MNIST, the run through
pygrad.distributed, the single-process comparison and the test accuracy (the last line printed).

Flags: --data-dir, --workers N, --ps-shards K, --mode async|sync, --steps S (per worker), --batch B,
--threads-per-worker T, --checkpoint-dir D, --kill-worker-at STEP, --kill-ps-at STEP (SIGKILL one of
the run's own processes at that step, to show recovery; local cluster only), --no-overlap (async:
push and pull in the worker's loop), --transport auto|messages, --scheduler ADDRESS
(default: a local cluster, TLS with its own credentials), --tls-ca/--tls-cert/--tls-key (Dask TLS),
--insecure (allow a scheduler without TLS: anyone who reaches it runs code as you),
--allow-lost-updates (a shard killed without a checkpoint starts again from its initial values
instead of failing the run), --single-process (also train
in this process on the same total examples and print both accuracies), --seed.
"""
import argparse
import functools
import os
import sys
import time

import cloudpickle
import numpy as np

import pygrad as tf
from pygrad import distributed
from pygrad.examples.tutorials.mnist import input_data


def parse(description, steps, batch, learning_rate):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=os.environ.get("PYGRAD_MNIST_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mnist"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ps-shards", type=int, default=1)
    p.add_argument("--mode", choices=["async", "sync"], default="async")
    p.add_argument("--steps", type=int, default=steps, help="steps per worker")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--learning-rate", type=float, default=learning_rate)
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--fetch-every", type=int, default=1, help="pull every N steps (async)")
    p.add_argument("--push-every", type=int, default=1, help="push the summed gradients every N steps")
    p.add_argument("--no-overlap", action="store_true",
                   help="async: push and pull in the worker's loop (else in a thread, while it computes)")
    p.add_argument("--transport", choices=["auto", "messages"], default="auto",
                   help="auto: shared memory with the shards on the worker's host; messages: always Dask's")
    p.add_argument("--max-staleness", type=int, default=None)
    p.add_argument("--backup-workers", type=int, default=0)
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--checkpoint-steps", type=int, default=50)
    p.add_argument("--kill-worker-at", type=int, default=None)
    p.add_argument("--kill-ps-at", type=int, default=None)
    p.add_argument("--scheduler", default=None, help="a Dask scheduler address (default: a local cluster)")
    p.add_argument("--tls-ca", default=None)
    p.add_argument("--tls-cert", default=None)
    p.add_argument("--tls-key", default=None)
    p.add_argument("--insecure", action="store_true", help="allow a scheduler address without TLS")
    p.add_argument("--allow-lost-updates", action="store_true",
                   help="a shard lost without a checkpoint restarts from its initial values")
    p.add_argument("--single-process", action="store_true", help="also train in one process, same total examples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args()


def mnist_part(data_dir, index, workers):
    """Worker index's contiguous part of MNIST's 55,000 training images, read on the worker."""
    train = input_data.read_data_sets(data_dir, one_hot=True).train
    bounds = np.linspace(0, train.num_examples, workers + 1).astype(int)
    return train.images[bounds[index]:bounds[index + 1]], train.labels[bounds[index]:bounds[index + 1]]


def accuracy_on(model_fn, weights, images, labels):
    """The accuracy of model_fn's model with these weights (by variable name) on images."""
    with tf.Graph().as_default() as graph:
        model = model_fn()
        with tf.Session(graph=graph) as sess:
            for v in tf.trainable_variables():
                v.load(weights[v.op.name], sess)
            x, y_ = model["inputs"]
            return float(np.mean([sess.run(model["accuracy"], {x: images[i:i + 1000], y_: labels[i:i + 1000]})
                                  for i in range(0, len(images), 1000)]))


def single_process(model_fn, optimizer_fn, images, labels, steps, batch, seed):
    """Trains model_fn's model in this process on steps batches; returns its weights."""
    rng = np.random.RandomState(seed)
    with tf.Graph().as_default() as graph:
        model = model_fn()
        train = optimizer_fn().minimize(model["loss"])
        x, y_ = model["inputs"]
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            order = rng.permutation(len(images))
            for step in range(steps):
                pos = (step * batch + np.arange(batch)) % len(images)
                if step and pos[0] < batch:
                    order = rng.permutation(len(images))
                feed = {x: images[order[pos]], y_: labels[order[pos]]}
                feed.update(model.get("train_feed", {}))
                sess.run(train, feed)
            return {v.op.name: value for v, value in zip(tf.trainable_variables(),
                                                          sess.run(tf.trainable_variables()))}


def main(model_fn, optimizer_fn, args):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers get mnist_part by value
    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)
    security = None
    if args.tls_ca:
        from distributed.security import Security
        security = Security(tls_ca_file=args.tls_ca, tls_client_cert=args.tls_cert, tls_client_key=args.tls_key,
                            require_encryption=True)
    tf.set_random_seed(args.seed)
    report = distributed.train(
        model_fn, functools.partial(mnist_part, os.path.abspath(args.data_dir)), workers=args.workers,
        ps_shards=args.ps_shards, mode=args.mode, steps=args.steps, batch_size=args.batch, optimizer=optimizer_fn,
        fetch_every=args.fetch_every, push_every=args.push_every, max_staleness=args.max_staleness,
        backup_workers=args.backup_workers,
        seed=args.seed, checkpoint_dir=args.checkpoint_dir, checkpoint_steps=args.checkpoint_steps,
        scheduler=args.scheduler, security=security, insecure=args.insecure,
        allow_lost_updates=args.allow_lost_updates, threads_per_worker=args.threads_per_worker,
        kill_worker_at=args.kill_worker_at, kill_ps_at=args.kill_ps_at, progress=not args.no_progress,
        overlap=not args.no_overlap, transport=args.transport)
    accuracy = accuracy_on(model_fn, report.weights, mnist.test.images, mnist.test.labels)
    if args.single_process:
        start = time.monotonic()
        tf.set_num_threads(args.threads_per_worker)
        weights = single_process(model_fn, optimizer_fn, mnist.train.images, mnist.train.labels,
                                 args.steps * args.workers, args.batch, args.seed)
        print(f"single process, {args.steps * args.workers} steps of {args.batch} "
              f"({time.monotonic() - start:.1f} s): test accuracy "
              f"{accuracy_on(model_fn, weights, mnist.test.images, mnist.test.labels):.4f}")
        print(f"parameter server ({args.mode}, {args.workers} workers, {report.wall_seconds:.1f} s): "
              f"test accuracy {accuracy:.4f}")
    print(f"test accuracy: {accuracy:.4f}")
    return report
