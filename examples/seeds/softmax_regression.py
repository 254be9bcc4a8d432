"""TensorFlow's "MNIST for ML beginners": softmax regression trained with gradient descent.

    y = x W + b
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

1000 steps on batches of 100, then it prints the accuracy on the 10000 test images
(about 0.92). With --by-hand the update is built from `tf.gradients` and `assign`:
W.assign(W - 0.5 * dW), b.assign(b - 0.5 * db), the same step as minimize().

Run: python examples/seeds/softmax_regression.py DATA_DIR [--by-hand] [--seed N]

DATA_DIR holds the four MNIST .gz files (downloaded there when missing). The batches are
shuffled with NumPy's global generator; --seed fixes it, making the result reproducible.
"""
import argparse

import numpy as np

import pygrad as tf
from pygrad.examples.tutorials.mnist import input_data


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--by-hand", action="store_true", help="build the update with tf.gradients and assign")
    parser.add_argument("--seed", type=int, default=None, help="seed for the order of the batches")
    args = parser.parse_args()
    if args.seed is not None:
        np.random.seed(args.seed)

    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)

    # The model.
    x = tf.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b

    # The loss and the optimizer.
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    if args.by_hand:
        grad_W, grad_b = tf.gradients(cross_entropy, [W, b])
        train_step = tf.group(W.assign(W - 0.5 * grad_W), b.assign(b - 0.5 * grad_b))
    else:
        train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    for _ in range(1000):
        batch_xs, batch_ys = mnist.train.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})

    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    print(sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels}))


if __name__ == "__main__":
    main()
