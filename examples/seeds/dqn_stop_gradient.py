"""A tiny DQN loss: the target passes through `tf.stop_gradient`, and the target network
is a separate copy of the online network that only changes when it is synced.

    Q(s, a)        the online network (variable scope "online")
    Q_target(s, a) the same architecture in scope "target"
    target = tf.stop_gradient(r + gamma * (1 - done) * max_a Q_target(s', a))
    loss   = mean((target - Q(s, a))**2)

Both networks are 3 -> 4 -> 2 MLPs with ReLU, built with `tf.get_variable` and constant
initializers (so the program is deterministic). `compute_gradients(loss)` over all the
trainable variables returns None for the four target-network variables: no gradient
reaches them through the stop_gradient. RMSPropOptimizer(0.01) trains the online network
on four fixed transitions (the target network starts equal to it: same initializers).
Every 5 steps `sync_target`, a group of `target_var.assign(online_var)`, copies the
online weights into the target network; the loss jumps then, since the targets change.

Run: python examples/seeds/dqn_stop_gradient.py
"""
import numpy as np

import pygrad as tf

STATE_DIM, HIDDEN, N_ACTIONS = 3, 4, 2
GAMMA = 0.9


def q_network(states, scope):
    """Q-values [batch, N_ACTIONS] of a 3 -> 4 -> 2 MLP whose variables live in `scope`."""
    with tf.variable_scope(scope):
        w1 = tf.get_variable("w1", [STATE_DIM, HIDDEN],
                             initializer=tf.constant_initializer(np.linspace(-0.5, 0.6, STATE_DIM * HIDDEN)))
        b1 = tf.get_variable("b1", [HIDDEN], initializer=tf.constant_initializer(0.1))
        w2 = tf.get_variable("w2", [HIDDEN, N_ACTIONS],
                             initializer=tf.constant_initializer(np.linspace(0.4, -0.3, HIDDEN * N_ACTIONS)))
        b2 = tf.get_variable("b2", [N_ACTIONS], initializer=tf.zeros_initializer())
        hidden = tf.nn.relu(tf.matmul(states, w1) + b1)
        return tf.matmul(hidden, w2) + b2


states = tf.placeholder(tf.float32, [None, STATE_DIM])
actions = tf.placeholder(tf.float32, [None, N_ACTIONS])  # one-hot
rewards = tf.placeholder(tf.float32, [None])
next_states = tf.placeholder(tf.float32, [None, STATE_DIM])
done = tf.placeholder(tf.float32, [None])

q = q_network(states, "online")
q_next = q_network(next_states, "target")

target = tf.stop_gradient(rewards + GAMMA * (1. - done) * tf.reduce_max(q_next, axis=1))
q_taken = tf.reduce_sum(q * actions, axis=1)
loss = tf.reduce_mean(tf.square(target - q_taken))

optimizer = tf.train.RMSPropOptimizer(0.01)
grads_and_vars = optimizer.compute_gradients(loss)  # all trainable variables, both networks
train_op = optimizer.apply_gradients(grads_and_vars)  # pairs with a None gradient are skipped

online_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="online")
target_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="target")
sync_target = tf.group(*[t.assign(o) for o, t in zip(online_vars, target_vars)])

feed = {
    states: [[1., 0., 0.5], [0., 1., -0.5], [0.5, 0.5, 1.], [-1., 0.2, 0.3]],
    actions: [[1., 0.], [0., 1.], [0., 1.], [1., 0.]],
    rewards: [1., 0., -1., 0.5],
    next_states: [[0., 1., -0.5], [0.5, 0.5, 1.], [-1., 0.2, 0.3], [1., 0., 0.5]],
    done: [0., 0., 1., 0.],
}

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for grad, var in grads_and_vars:
        print(var.name, "gradient:", None if grad is None else sess.run(grad, feed).ravel())
    for step in range(1, 16):
        _, loss_value = sess.run([train_op, loss], feed)
        print("step %d: loss %g" % (step, loss_value))
        if step % 5 == 0:
            sess.run(sync_target)
            gap = max(np.abs(sess.run(o) - sess.run(t)).max() for o, t in zip(online_vars, target_vars))
            print("synced the target network; max |online - target| = %g, loss %g" % (gap, sess.run(loss, feed)))
