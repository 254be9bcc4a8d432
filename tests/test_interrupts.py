"""Signals during native runs: Ctrl-C in a training loop raises KeyboardInterrupt and the session
goes on; no signal corrupts memory. A signal handled on a thread while oneDNN's float32 products ran
there used to corrupt the heap (pg/signals.h): a timer signal every 0.5 ms aborted every such loop
on two threads, and Ctrl-C about half of the training loops it stopped.

Each case runs in a child process, so that a crash is a failed test rather than a dead test run."""
import subprocess
import sys
import textwrap

import pytest

MODELS = """
import os, random, signal, threading, time
import numpy as np
import pygrad as tf

signal.signal(signal.SIGINT, signal.default_int_handler)
tf.set_num_threads(2)
rng = np.random.RandomState(0)
if MODEL == "mlp":
    x = tf.placeholder(tf.float32, [None, 784])
    h = tf.layers.dense(x, 512, tf.nn.relu)
    h = tf.layers.dense(h, 512, tf.nn.relu)
    logits = tf.layers.dense(h, 10)
    xs = rng.rand(256, 784).astype(np.float32)
else:
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    h = tf.layers.max_pooling2d(tf.layers.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu), 2, 2)
    h = tf.layers.max_pooling2d(tf.layers.conv2d(h, 64, 5, padding="same", activation=tf.nn.relu), 2, 2)
    logits = tf.layers.dense(tf.layers.flatten(h), 10)
    xs = rng.rand(32, 28, 28, 1).astype(np.float32)
y = tf.placeholder(tf.float32, [None, 10])
ys = np.eye(10, dtype=np.float32)[rng.randint(0, 10, len(xs))]
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
train = tf.train.AdamOptimizer(1e-4).minimize(loss)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
feed = {x: xs, y: ys}
"""

STORM = """
ticks = [0]
signal.signal(signal.SIGALRM, lambda *_: ticks.__setitem__(0, ticks[0] + 1))
signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
for _ in range(STEPS):
    sess.run([train, loss], feed)
signal.setitimer(signal.ITIMER_REAL, 0)
print("signals", ticks[0], "loss", sess.run(loss, feed))
"""

CTRL_C = """
main = threading.main_thread().ident
running = threading.Semaphore(0)


def interrupter():  # sends SIGINT to the main thread at a random moment of each training loop
    rng = random.Random(0)
    for _ in range(TRIES):
        running.acquire()
        time.sleep(rng.uniform(0.0, DELAY))
        signal.pthread_kill(main, signal.SIGINT)


threading.Thread(target=interrupter, daemon=True).start()
interrupted = 0
for _ in range(TRIES):
    try:
        running.release()
        while True:
            sess.run([train, loss], feed)
    except KeyboardInterrupt:
        interrupted += 1
value = sess.run(loss, feed)
assert np.isfinite(value), value
print("interrupted", interrupted, "loss", value)
"""


def _child(model, body, **params):
    program = f"MODEL = {model!r}\n" + "".join(f"{k} = {v!r}\n" for k, v in params.items()) + \
        textwrap.dedent(MODELS) + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"the child ended with {out.returncode}:\n{out.stderr[-3000:]}"
    return out.stdout.split()


def test_timer_signals_during_two_thread_products_corrupt_nothing():
    words = _child("mlp", STORM, STEPS=2000)
    assert words[0] == "signals" and int(words[1]) > 100  # signals did arrive while the plans ran


@pytest.mark.parametrize("model, tries, delay", [("mlp", 200, 0.02), ("convnet", 200, 0.05)])
def test_ctrl_c_in_a_training_loop_raises_keyboard_interrupt(model, tries, delay):
    words = _child(model, CTRL_C, TRIES=tries, DELAY=delay)
    assert words[:2] == ["interrupted", str(tries)]
