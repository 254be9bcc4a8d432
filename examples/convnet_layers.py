"""A small MNIST convnet written with tf.layers, as TF1 code with ``import pygrad as tf``.

    python examples/convnet_layers.py DATA_DIR [--steps 300] [--seed 0]

conv2d (3x3, 16) + relu, max_pooling2d, conv2d (3x3, 32), batch_normalization(training=is_training)
+ relu, max_pooling2d, dense (128, relu), dropout(training=is_training), dense (10), trained with
Adam on batches of 50; the moving statistics of batch normalization are updated through
tf.GraphKeys.UPDATE_OPS. Prints the loss every 100 steps and the test accuracy (is_training false).
"""
import argparse

import numpy as np

import pygrad as tf
from progress import progress
from pygrad.examples.tutorials.mnist import input_data


def build():
    """The graph: (x, labels, is_training placeholders, logits, loss, Adam train op)."""
    x = tf.placeholder(tf.float32, [None, 784])
    labels = tf.placeholder(tf.int64, [None])
    is_training = tf.placeholder(tf.bool, [])
    h = tf.reshape(x, [-1, 28, 28, 1])
    h = tf.layers.conv2d(h, 16, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 32, 3, padding="same", use_bias=False)
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=is_training))
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.dense(tf.layers.flatten(h), 128, activation=tf.nn.relu)
    h = tf.layers.dropout(h, rate=0.3, training=is_training)
    logits = tf.layers.dense(h, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    return x, labels, is_training, logits, loss, train


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    np.random.seed(args.seed)
    tf.set_random_seed(args.seed)
    mnist = input_data.read_data_sets(args.data_dir, one_hot=False)

    x, labels, is_training, logits, loss, train = build()
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        bar = progress(range(1, args.steps + 1), "training")
        for step in bar:
            xs, ys = mnist.train.next_batch(50)
            _, c = sess.run([train, loss], {x: xs, labels: ys, is_training: True})
            bar.set_postfix(loss=f"{c:.4f}")
            if step % 100 == 0:
                print(f"Step {step:04d} loss= {c:.4f}")
        acc = np.mean([sess.run(accuracy, {x: mnist.test.images[i:i + 1000], labels: mnist.test.labels[i:i + 1000],
                                           is_training: False}) for i in range(0, 5000, 1000)])
        print(f"Test accuracy: {acc:.4f}")


if __name__ == "__main__":
    main()
