"""What the parameter-server tests share: a local cluster for a test module, separable data and
a softmax model (float32 or float64) to train on it."""
import collections
import contextlib
import logging
import sys

import numpy as np

import pygrad as tf
from pygrad import distributed


_by_value = collections.Counter()  # module -> the local_client contexts open that registered it


@contextlib.contextmanager
def local_client(module_name, workers=2, ps_shards=2, timeout=None):
    """(cluster, client) of a quiet local cluster whose workers get this module's and
    module_name's functions by value; timeout: the client's (Dask's default: 30 s), also how
    long it tries to reconnect to a scheduler that went away."""
    import cloudpickle
    from distributed import Client

    levels = {name: logging.getLogger(name).level for name in ("distributed", "tornado", "asyncio")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    modules = [sys.modules[__name__], sys.modules[module_name]]
    for m in modules:
        cloudpickle.register_pickle_by_value(m)
        _by_value[m] += 1
    cluster = distributed.local_cluster(workers=workers, ps_shards=ps_shards, dashboard_address=None,
                                        silence_logs=logging.CRITICAL)
    timeout = {} if timeout is None else {"timeout": timeout}
    client = Client(cluster, set_as_default=False, **timeout)  # with the cluster's own credentials
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()
        for m in modules:
            _by_value[m] -= 1
            if not _by_value[m]:
                cloudpickle.unregister_pickle_by_value(m)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def blobs(n=2000, d=20, k=4, dtype=np.float32, seed=0):
    """Separable clusters: k centers, n points, one-hot labels."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(k, d) * 0.5
    labels = rng.randint(0, k, n)
    x = centers[labels] + rng.randn(n, d)
    return x.astype(dtype), np.eye(k, dtype=dtype)[labels]


def softmax_model(d=20, k=4, dtype=tf.float32):
    x = tf.placeholder(dtype, [None, d])
    y_ = tf.placeholder(dtype, [None, k])
    W = tf.Variable(tf.zeros([d, k], dtype=dtype), name="W")
    b = tf.Variable(tf.zeros([k], dtype=dtype), name="b")
    logits = tf.matmul(x, W) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1)), tf.float32))
    return {"loss": loss, "inputs": [x, y_], "accuracy": accuracy}


def softmax_model_64():
    return softmax_model(dtype=tf.float64)
