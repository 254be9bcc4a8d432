"""TensorFlow's classic recurrent MNIST classifier, as TF1 code, with ``import pygrad as tf``: each
28x28 image is read as a sequence of 28 rows of 28 pixels by an LSTM (tf.nn.dynamic_rnn over a
BasicLSTMCell of 128 units: one loop over the rows, in one native call per step), whose last
output goes through a linear layer to the 10 classes; Adam on the softmax cross-entropy.

    python examples/lstm_mnist.py [DATA_DIR] [--steps 500] [--batch 128]

DATA_DIR (default: $PYGRAD_MNIST_DIR, else the copy shipped in examples/data/mnist) holds the four
MNIST IDX .gz files (they are downloaded there when missing).
"""
import argparse
import os

import numpy as np

import pygrad as tf
from pygrad.examples.tutorials.mnist import input_data


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", default=os.environ.get("PYGRAD_MNIST_DIR") or
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mnist"))
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--display-step", type=int, default=100)
    parser.add_argument("--test-size", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    np.random.seed(args.seed)
    tf.set_random_seed(args.seed)
    mnist = input_data.read_data_sets(args.data_dir, one_hot=True)

    timesteps, num_input, num_hidden, num_classes = 28, 28, 128, 10
    X = tf.placeholder(tf.float32, [None, timesteps, num_input])
    Y = tf.placeholder(tf.float32, [None, num_classes])
    weights = tf.Variable(tf.random_normal([num_hidden, num_classes]))
    biases = tf.Variable(tf.random_normal([num_classes]))

    lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(num_hidden, forget_bias=1.0)
    outputs, states = tf.nn.dynamic_rnn(lstm_cell, X, dtype=tf.float32)  # outputs: [batch, timesteps, num_hidden]
    logits = tf.matmul(outputs[:, -1, :], weights) + biases
    prediction = tf.nn.softmax(logits)

    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
    train_op = tf.train.AdamOptimizer(learning_rate=args.learning_rate).minimize(loss_op)
    correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, args.steps + 1):
            batch_x, batch_y = mnist.train.next_batch(args.batch)
            batch_x = batch_x.reshape((args.batch, timesteps, num_input))
            _, loss, acc = sess.run([train_op, loss_op, accuracy], feed_dict={X: batch_x, Y: batch_y})
            if step % args.display_step == 0 or step == 1:
                print(f"Step {step}, Minibatch Loss= {loss:.4f}, Training Accuracy= {acc:.3f}")
        print("Optimization Finished!")
        test_x = mnist.test.images[:args.test_size].reshape((-1, timesteps, num_input))
        test_y = mnist.test.labels[:args.test_size]
        print("Testing Accuracy:", sess.run(accuracy, feed_dict={X: test_x, Y: test_y}))


if __name__ == "__main__":
    main()
