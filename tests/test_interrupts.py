"""Stopping native runs: Ctrl-C in a training loop raises KeyboardInterrupt and the session goes on,
a run that never ends stops at SIGINT or at its time limit, and no signal corrupts memory. A signal
handled on a thread while oneDNN's float32 products ran there used to corrupt the heap
(pg/signals.h): a timer signal every 0.5 ms aborted every such loop on two threads, and Ctrl-C 6 of
15 of the training loops it stopped.

The signal cases run in a child process, so that a crash is a failed test rather than a dead test
run."""
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import faults
import pygrad as tf

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
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                         cwd=tempfile.gettempdir())  # (the installed pygrad, not the source tree's)
    assert out.returncode == 0, f"the child ended with {out.returncode}:\n{out.stderr[-3000:]}"
    return out.stdout.split()


def test_timer_signals_during_two_thread_products_corrupt_nothing():
    words = _child("mlp", STORM, STEPS=2000)
    assert words[0] == "signals" and int(words[1]) > 100  # signals did arrive while the plans ran


@pytest.mark.parametrize("model, tries, delay", [("mlp", 200, 0.02), ("convnet", 200, 0.05)])
def test_ctrl_c_in_a_training_loop_raises_keyboard_interrupt(model, tries, delay):
    words = _child(model, CTRL_C, TRIES=tries, DELAY=delay)
    assert words[:2] == ["interrupted", str(tries)]
    faults.record(f"SIGINT into a {model} training loop", tries=tries, keyboard_interrupts=int(words[1]), crashes=0)


def _runaway():
    """A while_loop that never ends (i < 10 with i * 1 from a fed 0), a quick run, and their feeds."""
    i0 = tf.placeholder(tf.int32, [])
    loop = tf.while_loop(lambda i: i < 10, lambda i: i * 1, [i0])
    x = tf.placeholder(tf.float32, [])
    return loop, i0, x * 2, x


@pytest.mark.parametrize("where", ["run_options", "config"])
def test_a_run_past_its_time_limit_raises_deadline_exceeded(where):
    loop, i0, y, x = _runaway()
    config = tf.ConfigProto(operation_timeout_in_ms=300) if where == "config" else None
    options = tf.RunOptions(timeout_in_ms=300) if where == "run_options" else None
    with tf.Session(config=config) as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting for notification") as e:
            sess.run(loop, {i0: 0}, options=options)
        waited = time.monotonic() - start
        assert waited >= 0.3  # not before the limit (the loop never ends: raising at all shows the limit acts)
        faults.record("runaway while_loop past a 300 ms limit", deadline_errors=1, worst_ms=round(waited * 1000))
        assert e.value.op is not None and e.value.op.name.startswith("while")
        assert sess.run(y, {x: 3.0}) == 6.0  # the session goes on
        assert sess.run(loop, {i0: 10}, options=options) == 10  # a loop that ends, under the same limit


def test_run_options_timeout_wins_over_the_config_one():
    """The run's 400 ms, not the session's 50 ms: a lower bound on the wait, which load cannot break."""
    loop, i0, _, _ = _runaway()
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=50)) as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(loop, {i0: 0}, options=tf.RunOptions(timeout_in_ms=400))
        assert time.monotonic() - start >= 0.4


RUNAWAY_CTRL_C = """
import signal, threading, time
import pygrad as tf

signal.signal(signal.SIGINT, signal.default_int_handler)
i0 = tf.placeholder(tf.int32, [])
loop = tf.while_loop(lambda i: i < 10, lambda i: i * 1, [i0])
x = tf.placeholder(tf.float32, [])
sess = tf.Session()
main = threading.main_thread().ident
sent = []


def interrupt():
    time.sleep(0.3)
    sent.append(time.monotonic())
    signal.pthread_kill(main, signal.SIGINT)


threading.Thread(target=interrupt).start()
try:
    sess.run(loop, {i0: 0})
except KeyboardInterrupt:
    print("latency", time.monotonic() - sent[0], "after", sess.run(x * 2, {x: 4.0}))
"""


def test_ctrl_c_stops_a_run_that_never_ends():
    out = subprocess.run([sys.executable, "-c", RUNAWAY_CTRL_C], capture_output=True, text=True, timeout=120,
                         cwd=tempfile.gettempdir())
    assert out.returncode == 0, out.stderr[-3000:]
    words = out.stdout.split()
    assert words[0] == "latency" and float(words[1]) < 0.2, out.stdout
    faults.record("SIGINT into a runaway while_loop", keyboard_interrupts=1, latency_ms=round(float(words[1]) * 1000, 1))
    assert words[2:] == ["after", "8.0"]
