"""Checks the oneDNN-backed kernels' tests share (test_conv_onednn.py, test_pool_onednn.py,
test_depthwise_onednn.py): `case` is a test file's problem object, with call(kernel, impl) -> result
and check(kernel, result) against the reference kernels."""
import numpy as np

import pygrad as tf


def check_bitwise_repeatable_per_thread_count(case, kernels):
    """Each kernel's oneDNN result repeats bitwise run after run on one thread and on two, and both
    agree with the reference kernels."""
    old = tf.get_num_threads()
    try:
        runs = {}
        for threads in (1, 2, 1, 2):
            tf.set_num_threads(threads)
            runs.setdefault(threads, []).append([case.call(k, "onednn") for k in kernels])
    finally:
        tf.set_num_threads(old)
    for first, again in runs.values():
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)
    for kernel, one, two in zip(kernels, *[runs[t][0] for t in (1, 2)]):
        case.check(kernel, one)
        case.check(kernel, two)
