"""Gradients sum over the batch.

    X = [1, 2] (fed through a placeholder), w = 10, L = sum(X * w**2)
    dL/dw = sum(X) * 2 * w = 3 * 20 = 60

`tf.gradients` of the un-reduced per-example loss X * w**2 gives the same 60: the
gradient of a non-scalar tensor is that of the sum of its entries. One
GradientDescent step with learning rate 1 moves w to 10 - 60 = -50.

Run: python examples/seeds/sum_over_batch.py
"""
import pygrad as tf

X = tf.placeholder(tf.float32, [None])
w = tf.Variable(10.)
per_example = X * w ** 2
L = tf.reduce_sum(per_example)

grad = tf.gradients(L, w)[0]
grad_per_example = tf.gradients(per_example, w)[0]
train_op = tf.train.GradientDescentOptimizer(1.0).minimize(L)

feed = {X: [1., 2.]}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("L =", sess.run(L, feed))
    print("dL/dw =", sess.run(grad, feed))
    print("gradient of the per-example losses =", sess.run(grad_per_example, feed))
    sess.run(train_op, feed)
    print("w after one step =", sess.run(w))
