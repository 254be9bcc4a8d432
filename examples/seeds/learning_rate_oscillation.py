"""A learning rate that is too large makes gradient descent oscillate.

    loss = (y - w * x)**2, y = 3, x = 1, w = 2 at the start
    d loss / dw = -2 * x * (y - w * x)

With learning rate 1 the step overshoots by exactly the distance to the minimum:
w goes 4, 2, 4, 2, ... and the loss stays 1. With learning rate 0.5 one step lands on
w = 3 (loss 0); with 0.1 w approaches 3 geometrically (the distance shrinks by 0.8 a step).

Run: python examples/seeds/learning_rate_oscillation.py
"""
import pygrad as tf

x = tf.constant(1.)
y = tf.constant(3.)
w = tf.Variable(2.)
loss = (y - w * x) ** 2

steps = {1.0: 6, 0.5: 2, 0.1: 6}  # learning rate -> steps to show
train_ops = {lr: tf.train.GradientDescentOptimizer(lr).minimize(loss) for lr in steps}

with tf.Session() as sess:
    for lr, train_op in train_ops.items():
        sess.run(tf.global_variables_initializer())  # back to w = 2
        print("learning rate", lr)
        for step in range(1, steps[lr] + 1):
            sess.run(train_op)
            print("  step %d: w = %g, loss = %g" % (step, sess.run(w), sess.run(loss)))
