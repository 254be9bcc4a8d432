"""Which parameter-server shard holds which variable: TF1's `GreedyLoadBalancingStrategy` with
`byte_size_load_fn` (tf.contrib.training, pygrad/train/device_setter.py): in the order the
variables were created, each goes to the shard with the least bytes so far (the lowest index on a
tie)."""
import numpy as np

from pygrad.train.device_setter import GreedyLoadBalancingStrategy


def byte_size(shape, dtype):
    """The bytes a variable of this shape and dtype stores (what byte_size_load_fn estimates)."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def partition(specs, num_shards):
    """[[spec, ...] per shard] for specs (objects with .shape and .dtype, in creation order)."""
    if num_shards < 1:
        raise ValueError(f"the number of parameter-server shards must be at least 1, got {num_shards}")
    choose = GreedyLoadBalancingStrategy(num_shards, lambda spec: byte_size(spec.shape, spec.dtype))
    shards = [[] for _ in range(num_shards)]
    for spec in specs:
        shards[choose(spec)].append(spec)
    return shards
