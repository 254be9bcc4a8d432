"""Gradient clipping by global norm: compute_gradients -> clip_by_global_norm -> apply_gradients.

A linear model y = x W + b fitted by mean squared error on three fixed points, with
GradientDescent (learning rate 0.1). The gradients are rescaled together so that their
global norm, sqrt(sum of the squares of every entry of every gradient), is at most 1:

    grads_and_vars = optimizer.compute_gradients(loss)
    grads, variables = zip(*grads_and_vars)
    clipped, global_norm = tf.clip_by_global_norm(grads, 1.0)
    train_op = optimizer.apply_gradients(zip(clipped, variables))

It prints the gradients before and after clipping and the global norm (28.15 at the start, so every
gradient is scaled by 1/28.15), then the loss, global norm, W and b over five steps. Each step
moves the variables by exactly 0.1 in norm while the global norm is above 1.

Run: python examples/seeds/gradient_clipping.py
"""
import pygrad as tf

x = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
y = tf.constant([[1.], [2.], [3.]])
W = tf.Variable([[0.5], [-0.5]])
b = tf.Variable([0.1])
prediction = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.square(y - prediction))

optimizer = tf.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
grads, variables = zip(*grads_and_vars)
clipped, global_norm = tf.clip_by_global_norm(grads, 1.0)
train_op = optimizer.apply_gradients(zip(clipped, variables))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    grad_W, grad_b = sess.run(grads)
    print("gradient of W:", grad_W.ravel(), "gradient of b:", grad_b)
    print("global norm:", sess.run(global_norm))
    clipped_W, clipped_b = sess.run(clipped)
    print("clipped gradient of W:", clipped_W.ravel(), "clipped gradient of b:", clipped_b)
    for step in range(1, 6):
        _, loss_value, norm_value = sess.run([train_op, loss, global_norm])
        print("step %d: loss %g, global norm %g" % (step, loss_value, norm_value))
        print("  W:", sess.run(W).ravel(), "b:", sess.run(b))
