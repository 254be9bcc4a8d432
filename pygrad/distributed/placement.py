"""Which parameter-server shard holds which variable: TF1's `GreedyLoadBalancingStrategy` with
`byte_size_load_fn` (tf.contrib.training): in the order the variables were created, each goes to
the shard with the least bytes so far (the lowest index on a tie)."""
import numpy as np


def byte_size(shape, dtype):
    """The bytes a variable of this shape and dtype stores (what byte_size_load_fn estimates)."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def partition(specs, num_shards):
    """[[spec, ...] per shard] for specs (objects with .shape and .dtype, in creation order)."""
    if num_shards < 1:
        raise ValueError(f"the number of parameter-server shards must be at least 1, got {num_shards}")
    loads = [0] * num_shards
    shards = [[] for _ in range(num_shards)]
    for spec in specs:
        k = int(np.argmin(loads))
        shards[k].append(spec)
        loads[k] += byte_size(spec.shape, spec.dtype)
    return shards
