"""The DistBelief (parameter server) pattern: workers evaluate gradients, the gradients
travel as NumPy arrays, and the server applies them through placeholders.

1. The decayed gradient: x = tf.Variable(10.), b fed 1.0, loss = 0.5 * (x - b)**2,
   GradientDescent with learning rate 1. Each step the gradient x - b is fetched,
   multiplied by 0.1 in NumPy and fed back to `apply_gradients`:
   x = 10 - 0.9 = 9.1, then 9.1 - 0.81 = 8.29, 7.561, ... (x - 1 shrinks by 0.9 a step).
2. On the "Deep MNIST for experts" convnet (see deep_mnist.py):
   - all eight gradients evaluated in one `sess.run(grads)` equal the same gradients
     evaluated one at a time (it prints the largest difference: 0);
   - two workers each evaluate the gradients on their own batch of 50; the server
     averages them in NumPy (their average is the gradient on the two batches together,
     up to float32 rounding: it prints the largest difference, about 1e-6) and applies the
     average with AdamOptimizer(1e-4) through one placeholder per variable. Every 100
     steps it prints the training accuracy, at the end the test accuracy (about 0.97
     after 1000 steps).

Run: python examples/seeds/parameter_server.py DATA_DIR [--steps N] [--seed N]

DATA_DIR holds the four MNIST .gz files (downloaded there when missing). --seed fixes the
batch order (NumPy) and the graph-level seed (initial weights and dropout).
"""
import argparse

import numpy as np

import pygrad as tf
from pygrad.examples.tutorials.mnist import input_data


def decayed_gradient():
    x = tf.Variable(10.)
    b = tf.placeholder(tf.float32)
    loss = 0.5 * (x - b) ** 2
    optimizer = tf.train.GradientDescentOptimizer(1.0)
    (grad, _), = optimizer.compute_gradients(loss, var_list=[x])
    grad_placeholder = tf.placeholder(tf.float32, shape=x.get_shape())
    apply_op = optimizer.apply_gradients([(grad_placeholder, x)])

    with tf.Session() as sess:
        sess.run(x.initializer)
        for step in range(1, 9):
            grad_value = sess.run(grad, feed_dict={b: 1.0})
            sess.run(apply_op, feed_dict={grad_placeholder: grad_value * 0.1})
            print("step %d: x = %g" % (step, sess.run(x)))


def convnet(x, keep_prob):
    """The logits of TensorFlow's Deep MNIST convnet and its eight variables."""
    def weight_variable(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias_variable(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    def conv_relu_pool(inputs, W, b):
        h = tf.nn.relu(tf.nn.conv2d(inputs, W, strides=[1, 1, 1, 1], padding="SAME") + b)
        return tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    W_conv1, b_conv1 = weight_variable([5, 5, 1, 32]), bias_variable([32])
    W_conv2, b_conv2 = weight_variable([5, 5, 32, 64]), bias_variable([64])
    W_fc1, b_fc1 = weight_variable([7 * 7 * 64, 1024]), bias_variable([1024])
    W_fc2, b_fc2 = weight_variable([1024, 10]), bias_variable([10])

    h_pool1 = conv_relu_pool(tf.reshape(x, [-1, 28, 28, 1]), W_conv1, b_conv1)
    h_pool2 = conv_relu_pool(h_pool1, W_conv2, b_conv2)
    h_fc1 = tf.nn.relu(tf.matmul(tf.reshape(h_pool2, [-1, 7 * 7 * 64]), W_fc1) + b_fc1)
    logits = tf.matmul(tf.nn.dropout(h_fc1, keep_prob), W_fc2) + b_fc2
    return logits, [W_conv1, b_conv1, W_conv2, b_conv2, W_fc1, b_fc1, W_fc2, b_fc2]


def parameter_server(data_dir, steps):
    mnist = input_data.read_data_sets(data_dir, one_hot=True)
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)
    logits, params = convnet(x, keep_prob)
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))

    # What a worker evaluates, and what the server applies.
    grads = tf.gradients(cross_entropy, params)
    grad_placeholders = [tf.placeholder(tf.float32, shape=v.get_shape()) for v in params]
    apply_op = tf.train.AdamOptimizer(1e-4).apply_gradients(zip(grad_placeholders, params))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())

        batch_xs, batch_ys = mnist.train.next_batch(50)
        feed = {x: batch_xs, y_: batch_ys, keep_prob: 1.0}
        all_at_once = sess.run(grads, feed_dict=feed)
        one_by_one = [sess.run(g, feed_dict=feed) for g in grads]
        print("gradients in one run vs one by one, max difference: %g"
              % max(np.abs(a - b).max() for a, b in zip(all_at_once, one_by_one)))

        batch2_xs, batch2_ys = mnist.train.next_batch(50)
        worker2 = sess.run(grads, feed_dict={x: batch2_xs, y_: batch2_ys, keep_prob: 1.0})
        together = sess.run(grads, feed_dict={x: np.concatenate([batch_xs, batch2_xs]),
                                              y_: np.concatenate([batch_ys, batch2_ys]), keep_prob: 1.0})
        print("average of two workers' gradients vs the gradient on both batches, max difference: %.1e"
              % max(np.abs((a + b) / 2 - t).max() for a, b, t in zip(all_at_once, worker2, together)))

        for step in range(steps):
            if step % 100 == 0:
                batch_xs, batch_ys = mnist.train.next_batch(50)
                print("step %d, training accuracy %g"
                      % (step, sess.run(accuracy, feed_dict={x: batch_xs, y_: batch_ys, keep_prob: 1.0})))
            worker_grads = []
            for worker in range(2):
                batch_xs, batch_ys = mnist.train.next_batch(50)
                worker_grads.append(sess.run(grads, feed_dict={x: batch_xs, y_: batch_ys, keep_prob: 0.5}))
            average = [np.mean(g, axis=0) for g in zip(*worker_grads)]
            sess.run(apply_op, feed_dict=dict(zip(grad_placeholders, average)))

        test_accuracy = np.mean([sess.run(accuracy, feed_dict={x: mnist.test.images[i:i + 1000],
                                                               y_: mnist.test.labels[i:i + 1000], keep_prob: 1.0})
                                 for i in range(0, mnist.test.num_examples, 1000)])
        print("test accuracy %g" % test_accuracy)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--steps", type=int, default=1000, help="server updates (two worker batches each)")
    parser.add_argument("--seed", type=int, default=None, help="NumPy and graph-level random seed")
    args = parser.parse_args()
    if args.seed is not None:
        np.random.seed(args.seed)
        tf.set_random_seed(args.seed)

    print("1. The decayed gradient")
    decayed_gradient()
    print("2. Two workers and a parameter server, on the convnet")
    parameter_server(args.data_dir, args.steps)


if __name__ == "__main__":
    main()
