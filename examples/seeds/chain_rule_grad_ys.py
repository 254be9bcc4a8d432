"""The chain rule by hand with `grad_ys` (DDPG's actor update).

    g = w - 10,  f = g**2
    dfdg = tf.gradients(f, g)                      # 2 * g
    dfdw = tf.gradients(g, w, grad_ys=dfdg)        # dg/dw weighted by df/dg = df/dw

`grad_ys` seeds backpropagation from g with df/dg instead of ones, so dfdw equals
tf.gradients(f, w). DDPG's actor does the same with the critic's action gradients
(dQ/da, fed in) and the actor's parameters. Applying dfdw with GradientDescent
(learning rate 0.1) drives w from 0 to 10 and f to 0: w = 10 - 10 * 0.8**step, until float32 rounding
stops it two units in the last place below 10 (f = 3.6e-12).

Run: python examples/seeds/chain_rule_grad_ys.py
"""
import pygrad as tf

w = tf.Variable(0.)
g = w - 10
f = g ** 2

dfdg = tf.gradients(f, g)
dfdw = tf.gradients(g, w, grad_ys=dfdg)
dfdw_direct = tf.gradients(f, w)
train_op = tf.train.GradientDescentOptimizer(0.1).apply_gradients(zip(dfdw, [w]))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("dfdg =", sess.run(dfdg[0]), "dfdw =", sess.run(dfdw[0]), "tf.gradients(f, w) =", sess.run(dfdw_direct[0]))
    for step in range(101):
        if step % 10 == 0:
            print("step %d: w = %g, f = %g" % (step, sess.run(w), sess.run(f)))
        sess.run(train_op)
