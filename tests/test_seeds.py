"""The seed example programs (examples/seeds/) print what TensorFlow 1 prints for them.

Each test runs one program in a subprocess and compares every number it prints with the
output of the same program under TensorFlow 1 (`import tensorflow.compat.v1 as tf;
tf.disable_eager_execution()` in place of `import pygrad as tf`; TensorFlow 2.21, CPU), to a
relative tolerance of 1e-4; the text between the numbers must match too. The MNIST programs
depend on random batches, initial weights and dropout: there the test checks the accuracy.
"""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parents[1] / "examples" / "seeds"
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def run(program, *args, threads=None, timeout=300):
    env = dict(os.environ)
    if threads is not None:
        env["PYGRAD_NUM_THREADS"] = str(threads)
    proc = subprocess.run([sys.executable, str(SEEDS / program), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, f"{program} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def split(text):
    """(the text with every number replaced by '#' and all whitespace removed, the numbers)."""
    return "".join(NUMBER.sub("#", text).split()), [float(n) for n in NUMBER.findall(text)]


def assert_prints(out, expected, rel_tol=1e-4, abs_tol=1e-6):
    """out has expected's text, and each of its numbers is within rel_tol of expected's (abs_tol
    near zero)."""
    got_text, got = split(out)
    want_text, want = split(expected)
    assert got_text == want_text, f"the output differs from TensorFlow's:\n{out}\nTensorFlow:\n{expected}"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert math.isclose(g, w, rel_tol=rel_tol, abs_tol=abs_tol), (
            f"number {i}: {g} vs TensorFlow's {w}\n{out}\nTensorFlow:\n{expected}")


def value(label, out):
    """The number after label at the end of a line."""
    m = re.search(re.escape(label) + r" (" + NUMBER.pattern + r")$", out, re.M)
    assert m, f"no line ending with {label!r} and a number in:\n{out}"
    return float(m.group(1))


# TensorFlow 1's outputs for the same programs, each run with `import tensorflow.compat.v1 as tf`.

STOP_GRADIENTS_DOC = """\
stop_gradients=[a, b]: [1.0, 1.0]
without stop_gradients: [3.0, 1.0]
tf.stop_gradient: [1.0, 1.0]
"""

CLIP_BY_NORM_GRADIENTS = """\
gradients: [(9.0, 2.0), (12.0, 3.0)]
clipped: [(5.0, 2.0), (5.0, 3.0)]
after one step: w = 1.5 x = 2.5
"""

SUM_OVER_BATCH = """\
L = 300.0
dL/dw = 60.0
gradient of the per-example losses = 60.0
w after one step = -50.0
"""

CHAIN_RULE_GRAD_YS = """\
dfdg = -20.0 dfdw = -20.0 tf.gradients(f, w) = -20.0
step 0: w = 0, f = 100
step 10: w = 8.92626, f = 1.15292
step 20: w = 9.88471, f = 0.0132922
step 30: w = 9.98762, f = 0.000153256
step 40: w = 9.99867, f = 1.76736e-06
step 50: w = 9.99986, f = 2.04636e-08
step 60: w = 9.99998, f = 2.62844e-10
step 70: w = 10, f = 3.63798e-12
step 80: w = 10, f = 3.63798e-12
step 90: w = 10, f = 3.63798e-12
step 100: w = 10, f = 3.63798e-12
"""

TRAIN_SOME_VARIABLES = """\
1. w1 = -2, w2 = -1, w1 + w2 = -3, loss = 5.68434e-14
2. w1 = 4, w2 = -7, loss = 9.09495e-13
3. w = 1, loss = 5.68434e-14
"""

LEARNING_RATE_OSCILLATION = """\
learning rate 1.0
  step 1: w = 4, loss = 1
  step 2: w = 2, loss = 1
  step 3: w = 4, loss = 1
  step 4: w = 2, loss = 1
  step 5: w = 4, loss = 1
  step 6: w = 2, loss = 1
learning rate 0.5
  step 1: w = 3, loss = 0
  step 2: w = 3, loss = 0
learning rate 0.1
  step 1: w = 2.2, loss = 0.64
  step 2: w = 2.36, loss = 0.4096
  step 3: w = 2.488, loss = 0.262144
  step 4: w = 2.5904, loss = 0.167772
  step 5: w = 2.67232, loss = 0.107374
  step 6: w = 2.73786, loss = 0.0687194
"""

GRADIENT_CLIPPING = """\
gradient of W: [-17.066668 -21.866669] gradient of b: [-4.8]
global norm: 28.150707
clipped gradient of W: [-0.6062607  -0.77677155] clipped gradient of b: [-0.17051083]
step 1: loss 6.42667, global norm 28.1507
  W: [ 0.5606261  -0.42232284] b: [0.11705109]
step 2: loss 3.92233, global norm 21.936
  W: [ 0.6211258  -0.34458786] b: [0.13428633]
step 3: loss 2.03946, global norm 15.7216
  W: [ 0.681399   -0.26675054] b: [0.1518505]
step 4: loss 0.777988, global norm 9.5082
  W: [ 0.74114674 -0.18868273] b: [0.17017058]
step 5: loss 0.137748, global norm 3.29996
  W: [ 0.79832655 -0.10961659] b: [0.1920569]
"""

DQN_STOP_GRADIENT = """\
online/w1:0 gradient: [ 0.09519999  0.0376     -0.02        0.0264      0.05296     0.01648
 -0.02       -0.05648     0.10944     0.03472    -0.04       -0.06272   ]
online/b1:0 gradient: [ 0.0848  0.0224 -0.04    0.0016]
online/w2:0 gradient: [-0.05895999  0.04       -0.05455999  0.12       -0.07615999  0.19999997
 -0.14976     0.28      ]
online/b2:0 gradient: [-0.608       0.41799998]
target/w1:0 gradient: None
target/b1:0 gradient: None
target/w2:0 gradient: None
target/b2:0 gradient: None
step 1: loss 0.438468
step 2: loss 0.430611
step 3: loss 0.422649
step 4: loss 0.414596
step 5: loss 0.406462
synced the target network; max |online - target| = 0, loss 0.415402
step 6: loss 0.415402
step 7: loss 0.406807
step 8: loss 0.398178
step 9: loss 0.389527
step 10: loss 0.380867
synced the target network; max |online - target| = 0, loss 0.392199
step 11: loss 0.392199
step 12: loss 0.383115
step 13: loss 0.374078
step 14: loss 0.365098
step 15: loss 0.356184
synced the target network; max |online - target| = 0, loss 0.370063
"""

# parameter_server.py's first part (the decayed gradient); the convnet part depends on random
# initial weights, batches and dropout.
PARAMETER_SERVER_DECAYED = """\
1. The decayed gradient
step 1: x = 9.1
step 2: x = 8.29
step 3: x = 7.561
step 4: x = 6.9049
step 5: x = 6.31441
step 6: x = 5.78297
step 7: x = 5.30467
step 8: x = 4.87421
"""

# softmax_regression.py DATA_DIR --seed 0 prints 0.9178 under TensorFlow 1, with and without
# --by-hand (seeds 1 and 2: 0.9195, 0.9194). With the batch order fixed by the seed the two
# libraries agree to the last digit; the test allows 5 of the 10000 test images to differ.
SOFTMAX_REGRESSION_SEED_0 = 0.9178


def test_stop_gradients_doc():
    assert_prints(run("stop_gradients_doc.py"), STOP_GRADIENTS_DOC)


def test_clip_by_norm_gradients():
    assert_prints(run("clip_by_norm_gradients.py"), CLIP_BY_NORM_GRADIENTS)


def test_sum_over_batch():
    assert_prints(run("sum_over_batch.py"), SUM_OVER_BATCH)


def test_chain_rule_grad_ys():
    assert_prints(run("chain_rule_grad_ys.py"), CHAIN_RULE_GRAD_YS)


def test_train_some_variables():
    assert_prints(run("train_some_variables.py"), TRAIN_SOME_VARIABLES)


def test_learning_rate_oscillation():
    assert_prints(run("learning_rate_oscillation.py"), LEARNING_RATE_OSCILLATION)


def test_gradient_clipping():
    assert_prints(run("gradient_clipping.py"), GRADIENT_CLIPPING)


def test_dqn_stop_gradient():
    assert_prints(run("dqn_stop_gradient.py"), DQN_STOP_GRADIENT)


@pytest.mark.parametrize("mode", [[], ["--by-hand"]], ids=["minimize", "by-hand"])
def test_softmax_regression(mnist_dir, mode):
    out = run("softmax_regression.py", mnist_dir, "--seed", 0, *mode)
    accuracy = float(out)
    assert abs(accuracy - SOFTMAX_REGRESSION_SEED_0) <= 5e-4, f"{accuracy} vs TensorFlow's {SOFTMAX_REGRESSION_SEED_0}"


# The convnets run on one thread: on the 2-core development machine, busy with other work, two
# threads made a convnet step 20x slower (about 1.2 s instead of 55 ms), one thread is steady.
# deep_mnist.py --steps 500: test accuracy 0.9418 under TensorFlow 1 (seed 0). Under pygrad a run is
# the same every time for a seed (seed 0 twice: 0.9383), but a seed's value moves with the build's
# rounding (seed 0 gave 0.951 on an earlier build), so the floor covers the spread over seeds:
# seeds 0-4 gave 0.9383, 0.9498, 0.9457, 0.9445, 0.9449 (mean 0.9446, standard deviation 0.0041);
# the floor is the mean less 3 standard deviations, rounded down. About 35 s on a quiet machine.
DEEP_MNIST_STEPS = 500
DEEP_MNIST_MIN_ACCURACY = 0.93


def test_deep_mnist(mnist_dir):
    out = run("deep_mnist.py", mnist_dir, "--steps", DEEP_MNIST_STEPS, "--seed", 0, threads=1)
    steps = [int(s) for s in re.findall(r"^step (\d+), training accuracy " + NUMBER.pattern + "$", out, re.M)]
    assert steps == list(range(0, DEEP_MNIST_STEPS, 100)), out
    assert value("test accuracy", out) >= DEEP_MNIST_MIN_ACCURACY, out


# parameter_server.py --steps 300 --seed 0: test accuracy 0.94 under TensorFlow 1; about 40 s. Under
# both, the gradients in one run equal those one by one exactly, and the workers' average differs
# from the gradient on both batches by rounding only (6.2e-6 under TensorFlow, 9.5e-7 under pygrad).
# Under pygrad, seeds 0-2 gave 0.9404, 0.9436, 0.9385 (an earlier build: 0.9422 for seed 0; mean
# 0.9408, standard deviation 0.0026): the floor is the mean less 3 standard deviations, rounded down.
PARAMETER_SERVER_STEPS = 300
PARAMETER_SERVER_MIN_ACCURACY = 0.93


def test_parameter_server(mnist_dir):
    out = run("parameter_server.py", mnist_dir, "--steps", PARAMETER_SERVER_STEPS, "--seed", 0, threads=1)
    first, rest = out.split("2. Two workers", 1)
    assert_prints(first, PARAMETER_SERVER_DECAYED)
    assert value("gradients in one run vs one by one, max difference:", rest) <= 1e-6, out
    assert value("gradient on both batches, max difference:", rest) <= 1e-4, out
    steps = [int(s) for s in re.findall(r"^step (\d+), training accuracy " + NUMBER.pattern + "$", rest, re.M)]
    assert steps == list(range(0, PARAMETER_SERVER_STEPS, 100)), out
    assert value("test accuracy", rest) >= PARAMETER_SERVER_MIN_ACCURACY, out
