"""SparseTensors through queues, as TF1's tf.train.batch takes them: each one is stored in a map of
the session under an int64 handle (AddSparseToTensorsMap; AddManySparseToTensorsMap stores each
row of a batch), the handles go through the queue, and TakeManySparseFromTensorsMap makes the
handles dequeued together one SparseTensor, its first index the position in the batch and its
dense shape the largest of each dimension. The map is a Python object of the graph (named in
the ops' attributes); its contents live in the run's host context (see host.py)."""
import itertools
import threading

import numpy as np

from pygrad import dtypes
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.registry import BETWEEN, HostError, OpDef, Spec, fail
from pygrad.shapes import TensorShape


class SparseTensorsMap:
    """A map of the graph: `name` (its ops' shared_name), its session state made on first use."""

    def __init__(self, name):
        self.name = name

    def state(self, ctx):
        return ctx.state(self, _MapState)


class _MapState:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = {}
        self.next = itertools.count(1)

    def put(self, item):
        with self.lock:
            handle = next(self.next)
            self.items[handle] = item
            return handle


AddSparseToTensorsMap = OpDef("AddSparseToTensorsMap", host=BETWEEN, differentiable=False)


@AddSparseToTensorsMap.shape
def _(sparse_indices, sparse_values, sparse_shape, keep, *, tensors_map):
    return Spec(dtypes.int64, TensorShape([]))


@AddSparseToTensorsMap.host
def _(ctx, op, values):
    indices, vals, shape, keep = (np.asarray(v) for v in values)
    if not keep:
        return [np.array(-1, np.int64)]
    return [np.array(op.attrs["tensors_map"].state(ctx).put((indices.copy(), vals.copy(), shape.copy())), np.int64)]


AddManySparseToTensorsMap = OpDef("AddManySparseToTensorsMap", host=BETWEEN, differentiable=False)


@AddManySparseToTensorsMap.shape
def _(sparse_indices, sparse_values, sparse_shape, keep, *, tensors_map):
    return Spec(dtypes.int64, TensorShape([None]))


@AddManySparseToTensorsMap.host
def _(ctx, op, values):
    indices, vals, shape, keep = (np.asarray(v) for v in values)
    if shape.size < 2:
        raise HostError(f"SparseTensor must have rank at least 2 to be stored as many, got dense shape "
                        f"{shape.tolist()}")
    rows = int(shape[0])
    keep = np.broadcast_to(keep, (rows,))
    state = op.attrs["tensors_map"].state(ctx)
    handles = np.full(rows, -1, np.int64)
    for r in range(rows):
        if keep[r]:
            mine = indices[:, 0] == r
            handles[r] = state.put((indices[mine, 1:].copy(), vals[mine].copy(), shape[1:].copy()))
    return [handles]


TakeManySparseFromTensorsMap = OpDef("TakeManySparseFromTensorsMap", host=BETWEEN, differentiable=False)


@TakeManySparseFromTensorsMap.shape
def _(sparse_handles, *, dtype, rank, tensors_map):
    if sparse_handles.shape.ndims not in (None, 1):
        fail(f"sparse_handles should be a vector, got shape {sparse_handles.shape}")
    return [Spec(dtypes.int64, TensorShape([None, rank])), Spec(dtype, TensorShape([None])),
            Spec(dtypes.int64, TensorShape([rank]))]


@TakeManySparseFromTensorsMap.host
def _(ctx, op, values):
    state = op.attrs["tensors_map"].state(ctx)
    handles = np.asarray(values[0], np.int64).reshape(-1)
    with state.lock:
        missing = [int(h) for h in handles if int(h) not in state.items]
        if missing:
            raise HostError(f"Unable to find SparseTensor: {missing[0]} in map: {op.attrs['tensors_map'].name}")
        items = [state.items.pop(int(h)) for h in handles]
    rank = op.attrs["rank"]
    for i, (_, _, shape) in enumerate(items):
        if shape.size != rank - 1:
            raise HostError(f"Inconsistent rank across SparseTensors: rank prior to SparseTensor[{i}] was: "
                            f"{rank - 1} but rank of SparseTensor[{i}] is: {shape.size}")
    indices = [np.concatenate([np.full((len(ind), 1), b, np.int64), ind.reshape(len(ind), rank - 1)], 1)
               for b, (ind, _, _) in enumerate(items)]
    dims = np.max([s for _, _, s in items], axis=0) if items else np.zeros(rank - 1, np.int64)
    vals = [v for _, v, _ in items]
    dtype = op.attrs["dtype"]
    return [np.concatenate(indices) if indices else np.zeros((0, rank), np.int64),
            np.concatenate(vals) if vals else np.empty(0, object if dtype == dtypes.string else dtype.np),
            np.concatenate([[len(items)], dims]).astype(np.int64)]


def store(sp, keep, many, tensors_map):
    """The handle (or handles, one per row, for many) under which sp goes into the map."""
    op = AddManySparseToTensorsMap if many else AddSparseToTensorsMap
    return op(sp.indices, sp.values, sp.dense_shape, keep, tensors_map=tensors_map)


def take_many(handles, dtype, rank, tensors_map):
    """The SparseTensor of the stored tensors of handles, of rank `rank` (the batch dimension first)."""
    return SparseTensor(*TakeManySparseFromTensorsMap(handles, dtype=dtype, rank=rank, tensors_map=tensors_map))
