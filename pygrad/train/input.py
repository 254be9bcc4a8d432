"""TF1's queue-fed input pipelines (tf.train.input_producer and its string, range and slice forms;
tf.train.batch, shuffle_batch, batch_join, shuffle_batch_join, maybe_batch): queues filled by
QueueRunners that start_queue_runners starts. Built as TF builds them (training/input.py): the
same queues, enqueue ops, summaries and the local `epochs` counter that ends an input after
num_epochs with OutOfRangeError."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import array_ops, math_ops, queue_ops, random_ops, script_ops, sparse_maps, state_ops, summary_ops
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.ops.sequence_ops import range as _range
from pygrad.shapes import as_shape
from pygrad.train.queue_runner import QueueRunner, add_queue_runner


def limit_epochs(tensor, num_epochs=None, name=None):
    """tensor, num_epochs times; then OutOfRangeError. Counts in a local variable `epochs` (run
    tf.local_variables_initializer() first)."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    graph = get_default_graph()
    with graph.name_scope(name or "limit_epochs") as scope:
        epochs = state_ops.Variable(array_ops.constant(0, dtype=dtypes.int64), name="epochs", trainable=False,
                                    collections=[GraphKeys.LOCAL_VARIABLES])
        counter = queue_ops.count_up_to(epochs, num_epochs)
        with graph.control_dependencies([counter]):
            return array_ops.identity(tensor, name=scope)


def _shuffle(tensor, seed):
    if tensor.dtype != dtypes.string:
        return random_ops.random_shuffle(tensor, seed=seed)
    # pygrad's kernels hold no strings: the strings are permuted in Python by a shuffled range.
    order = random_ops.random_shuffle(_range(array_ops.shape(tensor)[0]), seed=seed)
    shuffled = script_ops.py_func(lambda x, i: x[i], [tensor, order], dtypes.string, stateful=False)
    shuffled.set_shape(tensor.shape)  # (a string Reshape would need a kernel)
    return shuffled


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None, capacity=32,
                   shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A FIFOQueue of the rows of input_tensor (shuffled in each epoch when shuffle), refilled by a
    QueueRunner, num_epochs times (forever when None)."""
    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):
        input_tensor = array_ops.convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = queue_ops.element_shape(input_tensor.shape, "input_producer").merge_with(
            as_shape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or `element_shape` must be "
                             "specified")
        if shuffle:
            input_tensor = _shuffle(input_tensor, seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = queue_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype], shapes=[element_shape],
                                shared_name=shared_name, name=name or "fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            summary_ops.scalar(summary_name, array_ops.cast(q.size(), dtypes.float32) * (1. / capacity))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                          name=None, cancel_op=None):
    """A queue of the strings (file names, for a reader), num_epochs times."""
    with get_default_graph().name_scope(name or "input_producer") as scope:
        string_tensor = array_ops.convert_to_tensor(string_tensor, dtype=dtypes.string)
        value = array_ops.constant_value(string_tensor)
        if value is not None and np.size(value) == 0:
            raise ValueError("string_input_producer requires a non-null input tensor")
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope, cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None):
    """A queue of the integers 0, ..., limit - 1, num_epochs times."""
    with get_default_graph().name_scope(name or "input_producer") as scope:
        return input_producer(_range(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                         name=None):
    """One row of each tensor of tensor_list per run (the rows of one index), num_epochs times."""
    with get_default_graph().name_scope(name or "input_producer"):
        tensor_list = [array_ops.convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        size = tensor_list[0].shape.as_list()[0] if tensor_list[0].shape.ndims else None
        queue = range_input_producer(size if size is not None else array_ops.shape(tensor_list[0])[0],
                                     num_epochs=num_epochs, shuffle=shuffle, seed=seed, capacity=capacity,
                                     shared_name=shared_name)
        index = queue.dequeue()
        from pygrad.ops.manip_ops import gather
        return [gather(t, index) for t in tensor_list]


# ---------------------------------------------------------------- batching
def _as_tensor_list(tensors):
    return [tensors[k] for k in sorted(tensors, key=str)] if isinstance(tensors, dict) else tensors


def _as_original_type(original, dequeued):
    if isinstance(original, dict):
        dequeued = [dequeued] if len(original) == 1 else dequeued
        return {k: dequeued[i] for i, k in enumerate(sorted(original, key=str))}
    return dequeued


def _validate(tensor_list_list, what):
    out = [[array_ops.convert_to_tensor(t) for t in tl] for tl in tensor_list_list]
    if not out or not out[0]:
        raise ValueError(f"Expected at least one tensor in {what}().")
    types = [t.dtype for t in out[0]]
    for tl in out[1:]:
        if [t.dtype for t in tl] != types:
            raise TypeError(f"Expected types to be consistent: {', '.join(d.name for d in types)} vs. "
                            f"{', '.join(t.dtype.name for t in tl)}.")
    return out, types


def _keep_input(keep_input, enqueue_many):
    if keep_input is True:
        return None
    keep = array_ops.convert_to_tensor(keep_input, dtype=dtypes.bool_)
    if keep.shape.ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and keep.shape.ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if keep.shape.ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep


def _shapes(tensor_list_list, shapes, enqueue_many):
    if shapes is not None:
        return shapes
    out = []
    for i in range(len(tensor_list_list[0])):
        merged = None
        for tl in tensor_list_list:
            s = tl[i].shape
            if s.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
            s = queue_ops.element_shape(s, "batch") if enqueue_many else s
            merged = s if merged is None else merged.merge_with(s)
        out.append(merged)
    return out


def _enqueue(queue, tensor_list_list, threads_per_list, enqueue_many, keep):
    """The enqueue ops of each tensor list (threads_per_list runs of each), and their QueueRunner."""
    enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
    ops = [op for tl in tensor_list_list for op in [enqueue(tl, keep_input=keep)] * threads_per_list]
    add_queue_runner(QueueRunner(queue, ops))


def _batch(tensors_list, batch_size, keep_input, threads_per_list, capacity, enqueue_many, shapes, dynamic_pad,
           allow_smaller_final_batch, shared_name, name, what, shuffle=None):
    tensor_list_list = [_as_tensor_list(t) for t in tensors_list]
    if isinstance(tensors_list[0], dict) and any(set(t) != set(tensors_list[0]) for t in tensors_list):
        raise ValueError("All dictionaries in tensors_list must have the same keys")
    graph = get_default_graph()
    with graph.name_scope(name or what) as scope:
        keep = _keep_input(keep_input, enqueue_many)
        tensor_list_list, sparse = _store_sparse(tensor_list_list, keep, enqueue_many)
        tensor_list_list, types = _validate(tensor_list_list, what)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        if shuffle is not None:
            min_after_dequeue, seed = shuffle
            if capacity <= min_after_dequeue:
                raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")
            queue = queue_ops.RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                                                 dtypes=types, shapes=shapes, shared_name=shared_name)
        else:
            queue = (queue_ops.PaddingFIFOQueue if dynamic_pad else queue_ops.FIFOQueue)(
                capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)
        _enqueue(queue, tensor_list_list, threads_per_list, enqueue_many, keep)
        size = array_ops.cast(queue.size(), dtypes.float32)
        if shuffle is not None:
            full = array_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue), dtypes.float32) * \
                (1. / (capacity - min_after_dequeue))
            summary_ops.scalar(f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full", full)
        else:
            summary_ops.scalar(f"fraction_of_{capacity}_full", size * (1. / capacity))
        dequeue = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
        out = dequeue(batch_size, name=scope)
        if sparse:
            out = [out] if not isinstance(out, (list, tuple)) else list(out)
            for i, (tensors_map, dtype, rank) in sparse.items():
                out[i] = sparse_maps.take_many(out[i], dtype, rank + 1, tensors_map)
            out = out[0] if len(out) == 1 else out
        return _as_original_type(tensors_list[0], out)


def _store_sparse(tensor_list_list, keep, enqueue_many):
    """The lists with each SparseTensor replaced by its handle in a map (one map per position, as
    TF's _store_sparse_tensors), and {position: (map, dtype, rank of one element)}."""
    sparse = {}
    tensor_list_list = [list(tl) for tl in tensor_list_list]
    for i in range(len(tensor_list_list[0])):
        items = [tl[i] for tl in tensor_list_list]
        if not any(isinstance(t, SparseTensor) for t in items):
            continue
        if not all(isinstance(t, SparseTensor) for t in items):
            raise TypeError(f"Element {i} is a SparseTensor in some of the tensor lists and not in others")
        rank = items[0].shape.ndims
        if rank is None:
            raise ValueError(f"Element {i}: a SparseTensor batched through a queue needs a known rank")
        tensors_map = sparse_maps.SparseTensorsMap(get_default_graph().unique_name("SparseTensorsMap"))
        flag = keep if keep is not None else array_ops.constant(True)
        for tl in tensor_list_list:
            tl[i] = sparse_maps.store(tl[i], flag, enqueue_many, tensors_map)
        sparse[i] = (tensors_map, items[0].dtype, rank - 1 if enqueue_many else rank)
    return tensor_list_list, sparse


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
          allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of batch_size elements of tensors, which num_threads threads enqueue."""
    return _batch([tensors], batch_size, True, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name, "batch")


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
                dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """batch, of the elements whose keep_input is true."""
    return _batch([tensors], batch_size, keep_input, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name, "batch")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
               allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches from several lists of tensors, each enqueued by a thread of its own."""
    return _batch(tensors_list, batch_size, True, 1, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name, "batch_join")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None, enqueue_many=False,
                  shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of elements taken at random from a RandomShuffleQueue."""
    return _batch([tensors], batch_size, True, num_threads, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch", (min_after_dequeue, seed))


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None, enqueue_many=False,
                       shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch from several lists of tensors, each enqueued by a thread of its own."""
    return _batch(tensors_list, batch_size, True, 1, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch_join", (min_after_dequeue, seed))



def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False, shapes=None,
                     dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """batch_join, of the elements whose keep_input is true."""
    return _batch(tensors_list, batch_size, keep_input, 1, capacity, enqueue_many, shapes, dynamic_pad,
                  allow_smaller_final_batch, shared_name, name, "batch_join")


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input, num_threads=1, seed=None,
                        enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None,
                        name=None):
    """shuffle_batch, of the elements whose keep_input is true."""
    return _batch([tensors], batch_size, keep_input, num_threads, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch", (min_after_dequeue, seed))


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input, seed=None,
                             enqueue_many=False, shapes=None, allow_smaller_final_batch=False, shared_name=None,
                             name=None):
    """shuffle_batch_join, of the elements whose keep_input is true."""
    return _batch(tensors_list, batch_size, keep_input, 1, capacity, enqueue_many, shapes, False,
                  allow_smaller_final_batch, shared_name, name, "shuffle_batch_join", (min_after_dequeue, seed))
