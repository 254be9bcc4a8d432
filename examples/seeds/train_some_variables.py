"""Training some variables and not others: constants and `var_list`.

1. y = w1*x + w2*x + w3*x with w3 = tf.constant(4.), x = 1, label 1, squared loss.
   Only the variables w1 and w2 train (from 1 and 2): they get the same gradient, each
   moves by -3, and w1 + w2 converges to 1 - 4 = -3 (w1 = -2, w2 = -1).
2. The same with w1 = 4 a variable and w3 = 4, but `minimize(loss, var_list=[w2])`:
   w1 stays 4 and w2 goes from 0 to 1 - 4 - 4 = -7.
3. The simplest: y = w*x, w = 3, x = 1, label 1, squared loss: w goes to 1.

GradientDescent with learning rate 0.1, 100 steps each.

Run: python examples/seeds/train_some_variables.py
"""
import pygrad as tf

x = tf.constant(1.)
label = tf.constant(1.)

# 1. A constant does not train.
w1 = tf.Variable(1.)
w2 = tf.Variable(2.)
w3 = tf.constant(4.)
loss = tf.square(w1 * x + w2 * x + w3 * x - label)
train_1 = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

# 2. Only the variables in var_list train.
v1 = tf.Variable(4.)
v2 = tf.Variable(0.)
v3 = tf.constant(4.)
loss_2 = tf.square(v1 * x + v2 * x + v3 * x - label)
train_2 = tf.train.GradientDescentOptimizer(0.1).minimize(loss_2, var_list=[v2])

# 3. One variable.
w = tf.Variable(3.)
loss_3 = tf.square(w * x - label)
train_3 = tf.train.GradientDescentOptimizer(0.1).minimize(loss_3)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(100):
        sess.run(train_1)
    print("1. w1 = %g, w2 = %g, w1 + w2 = %g, loss = %g" % (sess.run(w1), sess.run(w2), sess.run(w1 + w2),
                                                            sess.run(loss)))
    for _ in range(100):
        sess.run(train_2)
    print("2. w1 = %g, w2 = %g, loss = %g" % (sess.run(v1), sess.run(v2), sess.run(loss_2)))
    for _ in range(100):
        sess.run(train_3)
    print("3. w = %g, loss = %g" % (sess.run(w), sess.run(loss_3)))
