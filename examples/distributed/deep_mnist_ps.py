"""TensorFlow's "Deep MNIST for experts" convnet (examples/seeds/deep_mnist.py) trained through
pygrad's parameter server on Dask.

    conv 5x5x32, ReLU, max pool; conv 5x5x64, ReLU, max pool; fc 1024, ReLU, dropout 0.5; readout 10
    softmax cross entropy, AdamOptimizer(1e-4) on the shards, batches of 50 per worker

Its eight variables (3.3 M floats, 13 MB; the 3136x1024 fully connected weights are 96% of
them) are spread over --ps-shards K shards, greedily by bytes. Each of --workers N workers reads
its own part of the 55,000 training images and runs --steps S steps. --single-process trains
the same model in this process on the same total examples (N x S batches) for comparison. The
last line printed is `test accuracy: X` on the 10,000 test images.

Run: python examples/distributed/deep_mnist_ps.py --data-dir DATA_DIR [--workers 2] [--ps-shards 1]
     [--mode async|sync] [--steps 1000] [--batch 50] [--threads-per-worker 1]
     [--checkpoint-dir D] [--kill-worker-at STEP] [--kill-ps-at STEP] [--scheduler ADDRESS]
     [--single-process]
"""
from ps_example import main, parse

import pygrad as tf


def model():
    x = tf.placeholder(tf.float32, [None, 784])
    y_ = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder_with_default(1.0, [])

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
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))
    return {"loss": cross_entropy, "inputs": [x, y_], "accuracy": accuracy, "train_feed": {keep_prob: 0.5}}


if __name__ == "__main__":
    args = parse(__doc__, steps=1000, batch=50, learning_rate=1e-4)
    main(model, lambda: tf.train.AdamOptimizer(args.learning_rate), args)
