"""TensorFlow's "Deep MNIST for experts": a small convolutional network.

    conv 5x5, 32 channels, ReLU, 2x2 max pool   28x28x1 -> 14x14x32
    conv 5x5, 64 channels, ReLU, 2x2 max pool   -> 7x7x64
    fully connected 1024, ReLU, dropout(keep_prob)
    readout 10, softmax cross entropy, AdamOptimizer(1e-4), batches of 50

Weights start from tf.truncated_normal(stddev=0.1), biases at 0.1. Every 100 steps it
prints "step N, training accuracy A" (on the current batch, keep_prob 1); at the end
"test accuracy A" over the 10000 test images, evaluated 1000 at a time to bound memory.
TensorFlow's tutorial runs 20000 steps and reaches about 0.992; 1000 steps give about 0.96.

Run: python examples/seeds/deep_mnist.py DATA_DIR [--steps N] [--seed N]

DATA_DIR holds the four MNIST .gz files (downloaded there when missing). --seed fixes the
batch order (NumPy) and the graph-level seed (initial weights and dropout).
"""
import argparse

import numpy as np

import pygrad as tf
from pygrad.examples.tutorials.mnist import input_data


def weight_variable(shape):
    initial = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(initial)


def bias_variable(shape):
    initial = tf.constant(0.1, shape=shape)
    return tf.Variable(initial)


def conv2d(x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--steps", type=int, default=20000, help="training steps (default 20000, as TensorFlow's)")
    parser.add_argument("--seed", type=int, default=None, help="NumPy and graph-level random seed")
    args = parser.parse_args()
    if args.seed is not None:
        np.random.seed(args.seed)
        tf.set_random_seed(args.seed)

    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)

    x = tf.placeholder(tf.float32, shape=[None, 784])
    y_ = tf.placeholder(tf.float32, shape=[None, 10])
    x_image = tf.reshape(x, [-1, 28, 28, 1])

    W_conv1 = weight_variable([5, 5, 1, 32])
    b_conv1 = bias_variable([32])
    h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)
    h_pool1 = max_pool_2x2(h_conv1)

    W_conv2 = weight_variable([5, 5, 32, 64])
    b_conv2 = bias_variable([64])
    h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)
    h_pool2 = max_pool_2x2(h_conv2)

    W_fc1 = weight_variable([7 * 7 * 64, 1024])
    b_fc1 = bias_variable([1024])
    h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 64])
    h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)

    keep_prob = tf.placeholder(tf.float32)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)

    W_fc2 = weight_variable([1024, 10])
    b_fc2 = bias_variable([10])
    y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2

    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv))
    train_step = tf.train.AdamOptimizer(1e-4).minimize(cross_entropy)
    correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(args.steps):
            batch = mnist.train.next_batch(50)
            if i % 100 == 0:
                train_accuracy = accuracy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0})
                print("step %d, training accuracy %g" % (i, train_accuracy))
            train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})

        # The whole test set at once needs about 1 GB of activations; 1000 images at a time.
        test_accuracy = np.mean([accuracy.eval(feed_dict={x: mnist.test.images[i:i + 1000],
                                                          y_: mnist.test.labels[i:i + 1000], keep_prob: 1.0})
                                 for i in range(0, mnist.test.num_examples, 1000)])
        print("test accuracy %g" % test_accuracy)


if __name__ == "__main__":
    main()
