"""Clipping each gradient to norm 5 with `tf.clip_by_norm` between `compute_gradients`
and `apply_gradients`.

    w = tf.Variable(2.); x = tf.Variable(3.); loss = w * x * x
    d loss / dw = x * x = 9,  d loss / dx = 2 * w * x = 12

`compute_gradients` returns [(9.0, 2.0), (12.0, 3.0)] (gradient, variable value); after
`tf.clip_by_norm(g, 5)` both gradients have norm 5: [(5.0, 2.0), (5.0, 3.0)]. One
GradientDescent step with learning rate 0.1 then moves w to 1.5 and x to 2.5.

Run: python examples/seeds/clip_by_norm_gradients.py
"""
import pygrad as tf

w = tf.Variable(2.)
x = tf.Variable(3.)
loss = w * x * x

optimizer = tf.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
clipped_grads_and_vars = [(tf.clip_by_norm(grad, 5), var) for grad, var in grads_and_vars]
train_op = optimizer.apply_gradients(clipped_grads_and_vars)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("gradients:", [(float(g), float(v)) for g, v in sess.run(grads_and_vars)])
    print("clipped:", [(float(g), float(v)) for g, v in sess.run(clipped_grads_and_vars)])
    sess.run(train_op)
    print("after one step: w =", sess.run(w), "x =", sess.run(x))
