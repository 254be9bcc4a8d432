"""Profiling one training step of the convnet of convnet_layers.py as TF1 programs do.

    python examples/profile_step.py [DATA_DIR] [--trace timeline.json] [--logdir DIR] [--top 10]

Runs a few steps, then one with RunOptions(trace_level=FULL_TRACE) and a RunMetadata; writes the
step's Chrome trace (open it in chrome://tracing or https://ui.perfetto.dev) with
tensorflow.python.client.timeline's Timeline (pygrad.client.timeline), prints the ops that took
longest, and the model's trainable parameters and floating-point operations per tf.profiler.profile.
With --logdir the run metadata goes to an event file (FileWriter.add_run_metadata) for TensorBoard.
"""
import argparse
import os

import numpy as np

import pygrad as tf
from convnet_layers import build
from pygrad.client import timeline
from pygrad.examples.tutorials.mnist import input_data


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", default=os.environ.get("PYGRAD_MNIST_DIR") or
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mnist"))
    parser.add_argument("--trace", default="timeline.json", help="where the Chrome trace goes")
    parser.add_argument("--logdir", default=None, help="write the run metadata to an event file here")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    tf.set_random_seed(0)
    mnist = input_data.read_data_sets(args.data_dir, one_hot=False)

    x, labels, is_training, logits, loss, train = build()

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):  # (the first runs build the plan and warm the caches)
            xs, ys = mnist.train.next_batch(50)
            sess.run(train, {x: xs, labels: ys, is_training: True})
        xs, ys = mnist.train.next_batch(50)
        run_metadata = tf.RunMetadata()
        _, c = sess.run([train, loss], {x: xs, labels: ys, is_training: True},
                        options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    print(f"traced step: loss {c:.4f}")

    with open(args.trace, "w") as f:
        f.write(timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format())
    print(f"Chrome trace written to {args.trace}")
    if args.logdir:
        writer = tf.summary.FileWriter(args.logdir, tf.get_default_graph())
        writer.add_run_metadata(run_metadata, "step_6", 6)
        writer.close()
        print(f"run metadata written to {args.logdir} (TensorBoard's graph tab, run 'step_6')")

    nodes = run_metadata.step_stats.dev_stats[0].node_stats
    by_op: dict[str, int] = {}
    for n in nodes:
        by_op[n.node_name] = by_op.get(n.node_name, 0) + n.all_end_rel_nanos
    total = sum(by_op.values())
    print(f"\n{len(nodes)} op executions, {total / 1e3:.0f} us in kernels; the longest:")
    labels_of = {n.node_name: n.timeline_label.split(" = ")[1].split("(")[0] for n in nodes}
    for name, ns in sorted(by_op.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {ns / 1e3:9.1f} us  {100 * ns / total:5.1f}%  {name} ({labels_of[name]})")

    quiet = {"output": "none"}
    params = tf.profiler.profile(tf.get_default_graph(), cmd="scope", options={
        **tf.profiler.ProfileOptionBuilder.trainable_variables_parameter(), **quiet})
    flops = tf.profiler.profile(tf.get_default_graph(), run_meta=run_metadata, cmd="op", options={
        **tf.profiler.ProfileOptionBuilder.float_operation(), **quiet})
    print(f"\ntrainable parameters: {params.total_parameters:,}")
    for v in params.children:
        print(f"  {v.name:40s} {v.total_parameters:>9,}")
    print(f"floating-point operations of the graph (TF's count, shapes from the traced step): "
          f"{flops.total_float_ops:,}")
    for g in flops.children[:args.top]:
        print(f"  {g.name:40s} {g.total_float_ops:>13,}")
    return np.float32(c)


if __name__ == "__main__":
    main()
