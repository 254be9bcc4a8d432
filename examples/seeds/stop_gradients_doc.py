"""The `stop_gradients` example of TensorFlow's `tf.gradients` documentation.

    a = tf.constant(0.); b = 2 * a
    tf.gradients(a + b, [a, b], stop_gradients=[a, b])   # [1.0, 1.0]
    tf.gradients(a + b, [a, b])                          # [3.0, 1.0]

With `stop_gradients` each of a and b is treated as a constant, so only the direct
paths from a + b count; without it the path through b = 2 * a adds 2 to da. Wrapping b
in `tf.stop_gradient` at build time gives the same [1.0, 1.0] (and no gradient flows
from b's op back to a).

Run: python examples/seeds/stop_gradients_doc.py
"""
import pygrad as tf

a = tf.constant(0.)
b = 2 * a
g = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
g_full = tf.gradients(a + b, [a, b])

# The same with tf.stop_gradient in the graph itself.
a2 = tf.stop_gradient(tf.constant(0.))
b2 = tf.stop_gradient(2 * a2)
g_op = tf.gradients(a2 + b2, [a2, b2])

with tf.Session() as sess:
    print("stop_gradients=[a, b]:", [float(v) for v in sess.run(g)])
    print("without stop_gradients:", [float(v) for v in sess.run(g_full)])
    print("tf.stop_gradient:", [float(v) for v in sess.run(g_op)])
