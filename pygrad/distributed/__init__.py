"""pygrad.distributed: a DistBelief-style parameter server on Dask (`pip install pygrad[distributed]`).

    import pygrad as tf
    from pygrad import distributed

    def model():
        x = tf.placeholder(tf.float32, [None, 784]); y_ = tf.placeholder(tf.float32, [None, 10])
        ...
        return {"loss": loss, "inputs": [x, y_], "accuracy": accuracy}

    report = distributed.train(model, (images, labels), workers=2, ps_shards=1, mode="async",
                               steps=1000, batch_size=50,
                               optimizer=lambda: tf.train.GradientDescentOptimizer(0.5))

Importing this package imports nothing from Dask; a run does. See the README's section
"Distributed training (parameter server)".
"""
from pygrad.distributed.driver import connect, local_cluster, model_variables, train
from pygrad.distributed.placement import partition
from pygrad.distributed.report import Report
from pygrad.distributed.spec import VarSpec, WorkerError

__all__ = ["Report", "VarSpec", "WorkerError", "connect", "local_cluster", "model_variables", "partition", "train"]
