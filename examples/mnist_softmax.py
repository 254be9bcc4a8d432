"""TensorFlow's classic MNIST softmax regression, as TF1 code, with ``import pygrad as tf``.

    python examples/mnist_softmax.py [DATA_DIR]            # GradientDescentOptimizer(0.01).minimize(cost)
    python examples/mnist_softmax.py [DATA_DIR] --manual   # the update built by hand with tf.gradients

DATA_DIR holds the four MNIST IDX .gz files (they are downloaded there when missing); by default
$PYGRAD_MNIST_DIR, else the copy shipped in examples/data/mnist.
"""
import argparse
import os

import pygrad as tf
from progress import progress
from pygrad.examples.tutorials.mnist import input_data


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", default=os.environ.get("PYGRAD_MNIST_DIR") or
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mnist"))
    parser.add_argument("--manual", action="store_true", help="build the update with tf.gradients and assign")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=None, help="seed for the order of the batches")
    args = parser.parse_args()

    if args.seed is not None:
        import numpy
        numpy.random.seed(args.seed)
    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)

    learning_rate = 0.01
    training_epochs = args.epochs
    batch_size = 100
    display_step = 1

    x = tf.placeholder(tf.float32, [None, 784])  # mnist data image of shape 28*28=784
    y = tf.placeholder(tf.float32, [None, 10])  # 0-9 digits recognition => 10 classes

    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))

    pred = tf.nn.softmax(tf.matmul(x, W) + b)  # Softmax
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))  # cross entropy

    if args.manual:
        grad_W, grad_b = tf.gradients(xs=[W, b], ys=cost)
        new_W = W.assign(W - learning_rate * grad_W)
        new_b = b.assign(b - learning_rate * grad_b)
        optimizer = tf.group(new_W, new_b)
    else:
        optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)

    init = tf.global_variables_initializer()

    with tf.Session() as sess:
        sess.run(init)
        for epoch in range(training_epochs):
            avg_cost = 0.
            total_batch = int(mnist.train.num_examples / batch_size)
            bar = progress(range(total_batch), f"epoch {epoch + 1}")
            for i in bar:
                batch_xs, batch_ys = mnist.train.next_batch(batch_size)
                _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs, y: batch_ys})
                avg_cost += c / total_batch
                bar.set_postfix(loss=f"{c:.4f}")
            if (epoch + 1) % display_step == 0:
                print("Epoch:", '%04d' % (epoch + 1), "cost=", "{:.9f}".format(avg_cost))
        print("Optimization Finished!")

        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        print("Accuracy:", accuracy.eval({x: mnist.test.images[:3000], y: mnist.test.labels[:3000]}))


if __name__ == "__main__":
    main()
