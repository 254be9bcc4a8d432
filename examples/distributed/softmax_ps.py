"""TensorFlow's "MNIST for ML beginners" softmax regression (examples/seeds/softmax_regression.py)
trained through pygrad's parameter server on Dask: `--workers N` workers each push the gradients
of their batches of `--batch` to `--ps-shards K` shards, which apply them with
GradientDescentOptimizer(0.5). The last line printed is `test accuracy: X` (10,000 test images).

Run: python examples/distributed/softmax_ps.py --data-dir DATA_DIR [--workers 2] [--mode async]
     [--steps 500] [--kill-worker-at 100] [--kill-ps-at 200 --checkpoint-dir /some/dir]
     [--scheduler tls://host:8786 --tls-ca ... | --scheduler tcp://host:8786 --insecure]
     [--single-process]
"""
from ps_example import main, parse

import pygrad as tf


def model():
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
    return {"loss": cross_entropy, "inputs": [x, y_], "accuracy": accuracy}


if __name__ == "__main__":
    args = parse(__doc__, steps=500, batch=100, learning_rate=0.5)
    main(model, lambda: tf.train.GradientDescentOptimizer(args.learning_rate), args)
