"""tf.nn.embedding_lookup, as TF1's embedding_ops.py: rows of params (a variable, a tensor, or a
list of them sharded by partition_strategy) at ids of any rank. The gradient for a variable is
its rows, an IndexedSlices (see manip_ops' GatherV2), which the optimizers apply sparsely."""
from pygrad.graph import build_error, get_default_graph, unwrap
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, expand_dims, identity, zeros_like
from pygrad.ops.manip_ops import Select, gather
from pygrad.ops.partitioned_variables import PartitionedVariable
from pygrad.ops.reduction_ops import reduce_sum


def _clip(params, ids, max_norm):
    """Rows with an L2 norm above max_norm scaled down to it (TF's _clip, a clip_by_norm over the
    embedding's dimensions)."""
    if max_norm is None:
        return params
    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    axes = list(range(ids_rank, params_rank))
    l2sum = reduce_sum(params * params, axis=axes, keepdims=True)
    positive = cast(math_ops.greater(l2sum, 0.0), params.dtype)
    l2norm = math_ops.sqrt(l2sum * positive + (1.0 - positive)) * positive
    return identity(params * max_norm / math_ops.maximum(l2norm, max_norm))


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    """params[ids] of shape ids.shape + params.shape[1:]. A list of params is one table sharded by
    rows: 'mod' puts id in shard id % n at row id // n, 'div' gives each shard a contiguous block
    of ids (the first ones one row more when the count does not divide)."""
    if params is None or (isinstance(params, (list, tuple)) and not params):
        raise ValueError("Need at least one param")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    shards = list(params) if isinstance(params, (list, tuple, PartitionedVariable)) else [params]  # a partitioned one: its parts, as TF
    with get_default_graph().name_scope(name or "embedding_lookup"):
        shards = [unwrap(p) if hasattr(p, "_as_graph_element") else convert_to_tensor(p, name="params")
                  for p in shards]
        ids = convert_to_tensor(ids, name="ids")
        if len(shards) == 1:
            return identity(_clip(gather(shards[0], ids), ids, max_norm))
        return identity(_clip(_sharded_lookup(shards, ids, partition_strategy), ids, max_norm))


def _sharded_lookup(shards, ids, strategy):
    """Each id's row from its shard. Every shard is gathered at every id (an id of another shard
    reads a valid row of this one, whose value is masked out), so shapes stay static; a shard's
    gradient rows are zero at the ids of other shards."""
    n = len(shards)
    rows = [s.shape.as_list()[0] if s.shape.ndims else None for s in shards]
    if any(r is None for r in rows):
        raise build_error("GatherV2", "embedding_lookup", f"sharded params must have known first dimensions, got "
                                                          f"{[str(s.shape) for s in shards]}")
    if strategy == "mod":
        assign, new_ids = math_ops.floormod(ids, n), math_ops.floordiv(ids, n)
    else:
        total = sum(rows)
        per, extras = total // n, total % n
        assign = math_ops.maximum(math_ops.floordiv(ids, per + 1), math_ops.floordiv(ids - extras, per))
        first = cast(math_ops.less(assign, extras), ids.dtype)
        new_ids = (first * math_ops.floormod(ids, per + 1)
                   + (1 - first) * math_ops.floormod(ids - extras, per))
    result = None
    for p, shard in enumerate(shards):
        mine = math_ops.equal(assign, p)
        safe = Select(mine, new_ids, zeros_like(new_ids))
        rows_p = gather(shard, safe)
        mask = cast(mine, shard.dtype)
        for _ in range(shard.shape.ndims - 1):
            mask = expand_dims(mask, -1)
        part = rows_p * mask
        result = part if result is None else result + part
    return result
