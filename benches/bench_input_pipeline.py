"""Input-pipeline benchmark: how long a training step waits for its batch when a queue pipeline with
two reader threads feeds it.

The pipeline is TensorFlow's CIFAR-10 one (cifar10_input.distorted_inputs): --files binary files of
--records records in CIFAR-10's format (a label byte, then 3 planes of 32x32 bytes; random bytes,
NumPy seed 0), written to a temporary directory -> string_input_producer ->
FixedLengthRecordReader -> decode_raw -> label and a [32, 32, 3] image (strided_slice, reshape,
transpose) -> cast -> random_crop 24x24 -> random_flip_left_right -> random_brightness(63) ->
random_contrast(0.2, 1.8) -> per_image_standardization -> shuffle_batch (num_threads=2: two
threads each reading and distorting records; batch --batch, min_after_dequeue 4 * batch,
capacity min_after_dequeue + 3 * batch, as the tutorial sizes it).

The step: a small convnet on the batch (conv 5x5x32, relu, max-pool 3/2, conv 5x5x64, relu,
max-pool 3/2, dense 10; softmax cross-entropy; gradient descent, learning rate 0.01), float32,
weights drawn once (NumPy seed --seed) and the same for every library.

How the wait is measured. Each training step is two runs of one session: the first fetches the
batch (the shuffle_batch outputs: it dequeues --batch elements from the queue the reader threads
fill, and returns as soon as the queue holds them), the second runs the training op on that batch,
fed to the placeholders the convnet is built on (it reads no input; TensorFlow would dequeue again
for a convnet built on the batch tensors with those tensors fed, its gradients' shape ops reading
them). The first run's time is the step's wait for its input; it includes the dequeue itself (the
run's dispatch, the batch's copy), so it is an upper bound of the time the step spends on input. wait % = first / (first + second), per step;
the table gives its median, p10 and p90 over the timed steps (each the median over the repeats).
The target: under 10%.

A cross-check with nothing left out: after the pipeline's steps, the reader threads are stopped
and the training op is timed again fed the last batch (--steps runs). "pipeline cost" is the
median pipelined step (both runs) over that median, minus one: it also counts the CPU time the
reader threads take from the training when they compete for cores.

Run:
  python benches/bench_input_pipeline.py [--steps 50] [--warmup 5] [--repeats 3] [--threads 1]
                                         [--batch 64] [--peers tensorflow|none]
(--data-dir is not used.) The numbers depend on whatever else runs on the machine.
"""
import os
import tempfile
import time

import common

RECORD_BYTES = 1 + 32 * 32 * 3
TARGET_WAIT = 10.0  # percent of the step


def write_records(directory, files, records, seed=0):
    """--files CIFAR-10-format files of random records (labels 0..9) in directory; their paths."""
    import numpy as np
    rng = np.random.default_rng(seed)
    paths = []
    for f in range(files):
        data = rng.integers(0, 256, (records, RECORD_BYTES), dtype=np.uint8)
        data[:, 0] %= 10
        path = os.path.join(directory, f"data_batch_{f + 1}.bin")
        with open(path, "wb") as out:
            out.write(data.tobytes())
        paths.append(path)
    return paths


def distorted_inputs(m, paths, batch):
    """(images [batch, 24, 24, 3], labels [batch]) of cifar10_input.distorted_inputs, in module m."""
    files = m.train.string_input_producer(paths)
    _, value = m.FixedLengthRecordReader(record_bytes=RECORD_BYTES).read(files)
    record = m.decode_raw(value, m.uint8)
    label = m.cast(m.strided_slice(record, [0], [1]), m.int32)
    image = m.transpose(m.reshape(m.strided_slice(record, [1], [RECORD_BYTES]), [3, 32, 32]), [1, 2, 0])
    image = m.random_crop(m.cast(image, m.float32), [24, 24, 3])
    image = m.image.random_flip_left_right(image)
    image = m.image.random_brightness(image, max_delta=63)
    image = m.image.random_contrast(image, lower=0.2, upper=1.8)
    image = m.image.per_image_standardization(image)
    image.set_shape([24, 24, 3])
    label.set_shape([1])
    min_after_dequeue = 4 * batch
    images, labels = m.train.shuffle_batch([image, label], batch, num_threads=2,
                                           capacity=min_after_dequeue + 3 * batch,
                                           min_after_dequeue=min_after_dequeue)
    return images, m.reshape(labels, [batch])


def initial_values(seed):
    import numpy as np
    rng = np.random.RandomState(seed)

    def normal(*shape):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[:-1]))).astype(np.float32)
    return {"w1": normal(5, 5, 3, 32), "b1": np.zeros(32, np.float32), "w2": normal(5, 5, 32, 64),
            "b2": np.zeros(64, np.float32), "w3": normal(6 * 6 * 64, 10), "b3": np.zeros(10, np.float32)}


def convnet(m, images, labels, init):
    """(loss, train op) of the small convnet on images."""
    def conv(x, w, b):
        return m.nn.relu(m.nn.conv2d(x, m.Variable(init[w]), [1, 1, 1, 1], "SAME") + m.Variable(init[b]))

    def pool(x):
        return m.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    net = pool(conv(pool(conv(images, "w1", "b1")), "w2", "b2"))
    logits = m.matmul(m.reshape(net, [-1, 6 * 6 * 64]), m.Variable(init["w3"])) + m.Variable(init["b3"])
    loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return loss, m.train.GradientDescentOptimizer(0.01).minimize(loss)


def run_once(lib, paths, args, init):
    """One repeat: (wait seconds, train seconds, fixed-batch train seconds) per timed step."""
    m = lib.module
    with m.Graph().as_default():
        m.set_random_seed(args.seed)
        images, labels = distorted_inputs(m, paths, args.batch)
        x_in = m.placeholder(m.float32, images.shape)
        y_in = m.placeholder(m.int32, labels.shape)
        loss, train = convnet(m, x_in, y_in, init)
        with m.Session(**lib.session_kwargs) as sess:
            sess.run([m.global_variables_initializer(), m.local_variables_initializer()])
            coord = m.train.Coordinator()
            threads = m.train.start_queue_runners(sess, coord)
            waits, trains = [], []
            try:
                for i in range(args.warmup + args.steps):
                    t0 = time.perf_counter()
                    x, y = sess.run([images, labels])
                    t1 = time.perf_counter()
                    sess.run([loss, train], {x_in: x, y_in: y})
                    t2 = time.perf_counter()
                    if i >= args.warmup:
                        waits.append(t1 - t0)
                        trains.append(t2 - t1)
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=30)
            fixed, _ = common.time_steps(lambda i: sess.run([loss, train], {x_in: x, y_in: y}), args.warmup,
                                         args.steps)
    return waits, trains, fixed


def main(argv=None):
    p = common.argument_parser(__doc__)
    p.set_defaults(peers="tensorflow")
    p.add_argument("--steps", type=int, default=50, help="timed training steps per repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before timing")
    p.add_argument("--batch", type=int, default=64, help="examples per batch")
    p.add_argument("--files", type=int, default=4, help="record files")
    p.add_argument("--records", type=int, default=1000, help="records per file")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the weights, graph seed of the pipeline")
    args = p.parse_args(argv)
    peers = common.parse_peers(p, args.peers)
    common.set_thread_environment(args.threads)
    libs = common.load_libraries(peers, args.threads)
    import numpy as np

    print(f"cpu: {common.cpu_model()} ({os.cpu_count()} logical CPUs)")
    for line in common.blas_description():
        print(line)
    init = initial_values(args.seed)
    stats = {lib.name: [] for lib in libs}
    with tempfile.TemporaryDirectory() as directory:
        paths = write_records(directory, args.files, args.records)
        for _ in range(args.repeats):
            for lib in libs:
                waits, trains, fixed = (np.array(t) for t in run_once(lib, paths, args, init))
                percent = 100 * waits / (waits + trains)
                step, reference = np.median(waits + trains), np.median(fixed)
                stats[lib.name].append([np.median(waits) * 1e3, step * 1e3, *np.percentile(percent, [50, 10, 90]),
                                        reference * 1e3, 100 * (step / reference - 1)])

    print(f"\nthreads={args.threads} repeats={args.repeats} steps={args.steps} warmup={args.warmup} "
          f"batch={args.batch} reader threads=2 (median over repeats of per-repeat statistics)")
    print(f"{'library':<12}{'wait_ms':>10}{'step_ms':>10}{'wait_%':>9}{'p10':>8}{'p90':>8}"
          f"{'fixed_batch_ms':>16}{'pipeline cost':>15}")
    for name, rows in stats.items():
        wait, step, med, p10, p90, reference, cost = np.median(np.array(rows), axis=0)
        print(f"{name:<12}{wait:>10.2f}{step:>10.2f}{med:>8.1f}%{p10:>7.1f}%{p90:>7.1f}%{reference:>16.2f}"
              f"{cost:>14.1f}%")
    ours = np.median(np.array(stats["pygrad"]), axis=0)[2]
    print(f"check: pygrad's median wait {ours:.1f}% of the step, target under {TARGET_WAIT:.0f}%: "
          f"{'met' if ours < TARGET_WAIT else 'NOT met'}")


if __name__ == "__main__":
    main()
