"""TF1's queues (tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue, tf.PriorityQueue): the
graph ops, and each queue's state in a session.

A queue is a Python object of the graph; its ops name it in an attribute. Their host functions
act on the queue's state in the session that runs them (the run's host context keeps it), as TF's
queue resources live in a session: dequeue, size and is_closed bind their values like feeds
before the plan (host stage BEFORE); enqueue and close act after the plan on its values (AFTER).
A blocked enqueue or dequeue waits on the state's condition only (no other lock is held), wakes
when the queue changes or closes, stops at the run's time limit (DeadlineExceededError) and, when
the session closes, with CancelledError.
"""
import collections
import heapq
import itertools
import threading
import time

import numpy as np

from pygrad import dtypes, errors
from pygrad.ops import array_ops, random_ops
from pygrad.ops.data_ops import feedable
from pygrad.registry import AFTER, BEFORE, HostError, OpDef, Spec
from pygrad.shapes import TensorShape, as_shape

_LABELS = itertools.count()  # TF names a queue's resource "_<n>_<op name>" in its messages


class QueueState:
    """A queue in one session: its elements (tuples of arrays), closed or not, and the runs
    waiting on it. `take(n)` and `ready(n)` are the kind's order (FIFO, random, priority)."""

    def __init__(self, queue, kind):
        self.queue = queue
        self.label = f"{kind} '_{next(_LABELS)}_{queue.name}'"
        self.cv = threading.Condition()
        self.items = collections.deque()
        self.closed = False
        self.cancel_enqueues = False  # close(cancel_pending_enqueues=True)
        self.cancelled = False  # the session closed
        self.enqueuers = collections.deque()  # enqueue attempts, served in order

    def __len__(self):
        return len(self.items)

    def put(self, element):
        self.items.append(element)

    def take(self, n):
        return [self.items.popleft() for _ in range(n)]

    def ready(self, n):
        return len(self.items) >= n

    def cancel(self):
        """Wakes every waiting run with CancelledError (the session is closing)."""
        with self.cv:
            self.cancelled = True
            self.cv.notify_all()

    def close(self, cancel_pending_enqueues):
        with self.cv:
            self.closed = True
            self.cancel_enqueues = self.cancel_enqueues or cancel_pending_enqueues
            self.cv.notify_all()

    def _wait(self, op, deadline, what):
        """Waits for a change (the condition held); raises when the session closed or the time is up."""
        if self.cancelled:
            raise errors.CancelledError(None, op, op.error(f"{what} operation was cancelled"))
        timeout = None
        if deadline:
            timeout = (deadline - time.monotonic_ns()) / 1e9
            if timeout <= 0:
                raise errors.DeadlineExceededError(None, op, op.error("Timed out waiting for notification"))
        self.cv.wait(timeout)

    def enqueue(self, op, elements, deadline):
        with self.cv:
            if self.closed:
                raise errors.CancelledError(None, op, op.error(f"{self.label} is closed."))
            token = object()
            self.enqueuers.append(token)
            try:
                for element in elements:
                    while self.enqueuers[0] is not token or len(self.items) >= self.queue.capacity >= 0:
                        if self.cancel_enqueues:
                            raise errors.CancelledError(None, op, op.error("Enqueue operation was cancelled"))
                        self._wait(op, deadline, "Enqueue")
                    self.put(element)
                    self.cv.notify_all()
            finally:
                self.enqueuers.remove(token)
                self.cv.notify_all()

    def dequeue(self, op, n, up_to, deadline, assemble=None):
        """n elements (fewer for up_to once closed), or OutOfRangeError when closed without enough;
        with assemble, assemble(elements), made before the enqueuers waiting for room wake (they would
        take the CPU the copy into a batch needs)."""
        with self.cv:
            while not self.ready(n):
                if self.closed:
                    if up_to and self.items:
                        n = min(n, len(self.items))
                        break
                    if len(self.items) < n:
                        raise errors.OutOfRangeError(None, op, op.error(
                            f"{self.label} is closed and has insufficient elements (requested {n}, current size "
                            f"{len(self.items)})"))
                    break  # a RandomShuffleQueue gives its last elements once closed
                self._wait(op, deadline, "Dequeue")
            out = self.take(n)
            if assemble is None:
                self.cv.notify_all()
                return out
        out = assemble(out)
        with self.cv:
            self.cv.notify_all()
        return out


class _ShuffleState(QueueState):
    def __init__(self, queue, kind):
        super().__init__(queue, kind)
        self.items = []
        self.rng = np.random.default_rng(queue.seeds)

    def take(self, n):
        out = []
        for _ in range(n):
            i = int(self.rng.integers(len(self.items)))
            self.items[i], self.items[-1] = self.items[-1], self.items[i]
            out.append(self.items.pop())
        return out

    def ready(self, n):
        return len(self.items) - n >= self.queue.min_after_dequeue


class _PriorityState(QueueState):
    def __init__(self, queue, kind):
        super().__init__(queue, kind)
        self.items = []
        self.order = itertools.count()  # equal priorities leave in the order they came

    def put(self, element):
        heapq.heappush(self.items, (int(element[0]), next(self.order), element))

    def take(self, n):
        return [heapq.heappop(self.items)[2] for _ in range(n)]


# ---------------------------------------------------------------- the ops
def _queue_of(op):
    return op.attrs["queue"]


QueueEnqueueV2 = OpDef("QueueEnqueueV2", host=AFTER, differentiable=False)
QueueEnqueueManyV2 = OpDef("QueueEnqueueManyV2", host=AFTER, differentiable=False)
QueueDequeueV2 = OpDef("QueueDequeueV2", host=BEFORE, differentiable=False)
QueueDequeueManyV2 = OpDef("QueueDequeueManyV2", host=BEFORE, differentiable=False)
QueueDequeueUpToV2 = OpDef("QueueDequeueUpToV2", host=BEFORE, differentiable=False)
QueueCloseV2 = OpDef("QueueCloseV2", host=AFTER, differentiable=False)
QueueSizeV2 = OpDef("QueueSizeV2", host=BEFORE, differentiable=False)
QueueIsClosedV2 = OpDef("QueueIsClosedV2", host=BEFORE, differentiable=False)


@QueueEnqueueV2.shape
def _(*components, queue, keep):
    return []


QueueEnqueueManyV2.shape(QueueEnqueueV2.shape_fn)


@QueueEnqueueV2.host
def _(ctx, op, values):
    queue = _queue_of(op)
    if op.attrs["keep"] and not values.pop():
        return
    queue._state(ctx).enqueue(op, [queue._element(op, values)], ctx.deadline)


@QueueEnqueueManyV2.host
def _(ctx, op, values):
    queue = _queue_of(op)
    keep = np.asarray(values.pop(), bool) if op.attrs["keep"] else None
    arrays = [np.asarray(v) for v in values]
    sizes = {a.shape[0] if a.ndim else None for a in arrays}
    if len(sizes) != 1 or None in sizes:
        raise HostError(f"every component must have the same first dimension (the number of elements), got "
                        f"shapes {[a.shape for a in arrays]}")
    rows = range(sizes.pop())
    if keep is not None:
        rows = [i for i in rows if (keep if keep.ndim == 0 else keep[i])]
    elements = [queue._element(op, [a[i] for a in arrays]) for i in rows]
    queue._state(ctx).enqueue(op, elements, ctx.deadline)


@QueueDequeueV2.shape
def _(*, queue):
    return [Spec(d, s) for d, s in zip(queue.dtypes, queue.shapes)]


@QueueDequeueManyV2.shape
def _(*, queue, n):
    return [Spec(d, TensorShape([n]).concatenate(s)) for d, s in zip(queue.dtypes, queue.shapes)]


@QueueDequeueUpToV2.shape
def _(*, queue, n):
    return [Spec(d, TensorShape([None]).concatenate(s)) for d, s in zip(queue.dtypes, queue.shapes)]


@QueueDequeueV2.host
def _(ctx, op, values):
    queue = _queue_of(op)
    (element,) = queue._state(ctx).dequeue(op, 1, False, ctx.deadline)
    return [feedable(v, d) for v, d in zip(element, queue.dtypes)]


@QueueDequeueManyV2.host
def _(ctx, op, values):
    queue = _queue_of(op)
    if not all(s.is_fully_defined() for s in queue._shapes) and not isinstance(queue, PaddingFIFOQueue):
        raise errors.InvalidArgumentError(None, op, op.error(
            f"{queue._kind}'s DequeueMany and DequeueUpTo require the components to have specified shapes."))
    return queue._state(ctx).dequeue(op, op.attrs["n"], op.type.endswith("UpToV2"), ctx.deadline,
                                     lambda elements: queue._stack(op, elements))


QueueDequeueUpToV2.host(QueueDequeueManyV2.host_fn)


@QueueCloseV2.shape
def _(*, queue, cancel_pending_enqueues):
    return []


@QueueCloseV2.host
def _(ctx, op, values):
    _queue_of(op)._state(ctx).close(op.attrs["cancel_pending_enqueues"])


@QueueSizeV2.shape
def _(*, queue):
    return Spec(dtypes.int32, TensorShape([]))


@QueueSizeV2.host
def _(ctx, op, values):
    return [np.array(len(_queue_of(op)._state(ctx)), np.int32)]


@QueueIsClosedV2.shape
def _(*, queue):
    return Spec(dtypes.bool_, TensorShape([]))


@QueueIsClosedV2.host
def _(ctx, op, values):
    return [np.array(_queue_of(op)._state(ctx).closed)]


# ---------------------------------------------------------------- an input producer's epoch counter
CountUpTo = OpDef("CountUpTo", host=BEFORE, differentiable=False)


@CountUpTo.shape
def _(*, limit, read, increment):
    return Spec(dtypes.int64, TensorShape([]))


@CountUpTo.host
def _(ctx, op, values):
    limit = op.attrs["limit"]
    with ctx.state((op, "lock"), threading.Lock):  # one count at a time, as TF's ref lock
        value = int(ctx.run(op.attrs["read"]))
        if value >= limit:
            raise errors.OutOfRangeError(None, op, op.error(f"Reached limit of {limit}"))
        ctx.run(op.attrs["increment"])
    return [np.array(value, np.int64)]


def count_up_to(variable, limit, name=None):
    """The variable's value, increased by one in each run, until it reaches limit: then
    OutOfRangeError (tf.count_up_to). The variable is read and written by runs of its own."""
    return CountUpTo(limit=int(limit), read=variable.value(), increment=variable.assign_add(1).op,
                     name=name or "CountUpTo")


# ---------------------------------------------------------------- the queues
def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class QueueBase:
    """tf.QueueBase: a queue of tuples of tensors (components of fixed dtypes, and shapes when
    given), with its own state in every session that runs its ops."""

    _kind = "FIFOQueue"
    _state_class = QueueState
    min_after_dequeue = 0
    seeds = None

    def __init__(self, dtypes, shapes, names, queue_ref=None, *, capacity=-1, name="queue"):
        from pygrad.graph import get_default_graph
        self._dtypes = [_as_dtype(d) for d in _as_list(dtypes)]
        if shapes is None:
            self._shapes = [TensorShape(None)] * len(self._dtypes)
        else:
            if len(shapes) != len(self._dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = shapes
        if names is not None:
            names = _as_list(names)
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
        self._names = names
        self.capacity = int(capacity)
        self._graph = get_default_graph()
        # A name ending in '/' is a name scope's, used as it is (TF's input producers name their queue so).
        self._name = name[:-1] if name.endswith("/") else self._graph.unique_name(name)
        self.name = self._name

    @property
    def dtypes(self):
        return list(self._dtypes)

    @property
    def shapes(self):
        return list(self._shapes)

    @property
    def names(self):
        return self._names

    @property
    def queue_ref(self):
        """The queue itself: pygrad's queue ops name the queue object, not a resource tensor."""
        return self

    @staticmethod
    def from_list(index, queues):
        raise NotImplementedError("pygrad has no tf.QueueBase.from_list: select the queue in Python")

    # ---- building ----
    def _components(self, vals, many, name):
        """The enqueued tensors, in component order, checked against the queue's dtypes and shapes."""
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names) != sorted(vals.keys()):
                raise ValueError(f"Keys in dictionary to enqueue {sorted(vals.keys())} don't match the names of the "
                                 f"queue {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        elif self._names is not None:
            raise ValueError("You must enqueue a dictionary in a Queue with names")
        vals = _as_list(vals)
        if len(vals) != len(self._dtypes):
            raise ValueError(f"{name}: expected {len(self._dtypes)} components, got {len(vals)}")
        out = []
        for i, (v, d, s) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = array_ops.convert_to_tensor(v, dtype=d)
            shape = t.shape
            if many:
                shape = element_shape(shape, name)
            if not shape.is_compatible_with(s):
                raise ValueError(f"Shapes {shape} and {s} are incompatible")
            out.append(t)
        return out

    def _keep(self, keep_input):
        if keep_input is None:
            return [], False
        return [array_ops.convert_to_tensor(keep_input, dtype=dtypes.bool_)], True

    def enqueue(self, vals, name=None, keep_input=None):
        """An op that adds one element (blocks while the queue is full). keep_input, pygrad's own (what
        tf.train.maybe_batch builds with a cond in TF): a bool scalar tensor; the element is added
        only in runs where it is true."""
        name = name or f"{self._name}_enqueue"
        keep, has_keep = self._keep(keep_input)
        return QueueEnqueueV2(*self._components(vals, False, name), *keep, queue=self, keep=has_keep, name=name)

    def enqueue_many(self, vals, name=None, keep_input=None):
        """An op that adds the slices of vals along their first dimension as elements (keep_input: as
        enqueue's, or a bool vector choosing the slices)."""
        name = name or f"{self._name}_EnqueueMany"
        keep, has_keep = self._keep(keep_input)
        return QueueEnqueueManyV2(*self._components(vals, True, name), *keep, queue=self, keep=has_keep, name=name)

    def _dequeued(self, outs):
        outs = [outs] if hasattr(outs, "op") else list(outs)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name=None):
        """The next element (blocks while the queue is empty)."""
        return self._dequeued(QueueDequeueV2(queue=self, name=name or f"{self._name}_Dequeue"))

    def _batch_size(self, n, name):
        value = array_ops.constant_value(n)
        if value is None or np.ndim(value) != 0:
            raise ValueError(f"{name}: n must be a Python integer or a constant scalar (pygrad plans static "
                             f"shapes), got {n!r}")
        return int(value)

    def dequeue_many(self, n, name=None):
        """The next n elements, stacked (blocks until there are n)."""
        name = name or f"{self._name}_DequeueMany"
        return self._dequeued(QueueDequeueManyV2(queue=self, n=self._batch_size(n, name), name=name))

    def dequeue_up_to(self, n, name=None):
        """As dequeue_many, but once the queue is closed, what is left when fewer than n remain."""
        name = name or f"{self._name}_DequeueUpTo"
        return self._dequeued(QueueDequeueUpToV2(queue=self, n=self._batch_size(n, name), name=name))

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op that closes the queue: later enqueues fail; dequeues take what is left."""
        return QueueCloseV2(queue=self, cancel_pending_enqueues=bool(cancel_pending_enqueues),
                            name=name or f"{self._name}_Close")

    def is_closed(self, name=None):
        return QueueIsClosedV2(queue=self, name=name or f"{self._name}_Is_Closed")

    def size(self, name=None):
        return QueueSizeV2(queue=self, name=name or f"{self._name}_Size")

    # ---- running ----
    def _state(self, ctx):
        return ctx.state(self, lambda: self._state_class(self, self._kind))

    def _element(self, op, values):
        """One element's arrays, checked against the component shapes."""
        element = []
        for i, (v, d, s) in enumerate(zip(values, self._dtypes, self._shapes)):
            arr = feedable(v, d)
            if not s.is_compatible_with(arr.shape):
                raise HostError(f"Shape mismatch in tuple component {i}. Expected {s.as_list()}, got "
                                f"{list(arr.shape)}")
            element.append(arr)
        return tuple(element)

    def _stack(self, op, elements):
        return [feedable(np.stack([e[i] for e in elements]) if elements else np.zeros([0] + s.as_list(), d.np), d)
                for i, (d, s) in enumerate(zip(self._dtypes, self._shapes))]


def element_shape(shape, name):
    """The shape of one element of a batch of shape `shape` (its dimensions after the first)."""
    if shape.ndims == 0:
        raise ValueError(f"{name}: Shape must be at least rank 1 but is rank 0 (enqueue_many takes a batch of "
                         f"elements)")
    return shape if shape.ndims is None else TensorShape(shape.as_list()[1:])


def _as_dtype(d):  # (QueueBase's `dtypes` argument hides the module there)
    return dtypes.as_dtype(d)


def _as_shape_list(shapes, unknown_dim_allowed=False):
    """TF's reading of a queue's shapes argument: None, one shape, or a list of shapes, all fully
    defined (known rank, unknown dimensions allowed for a PaddingFIFOQueue)."""
    if unknown_dim_allowed and (not isinstance(shapes, (list, tuple)) or not shapes or
                                any(s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError(f"Shapes must be a TensorShape or a list or tuple of TensorShapes, got {type(shapes)} "
                        f"instead.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    shapes = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


class FIFOQueue(QueueBase):
    """tf.FIFOQueue: elements leave in the order they came."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):
        super().__init__(dtypes, _as_shape_list(shapes), names, capacity=capacity, name=name)


class PaddingFIFOQueue(QueueBase):
    """tf.PaddingFIFOQueue: a FIFOQueue whose dequeue_many pads the dimensions the shapes leave
    unknown (None) to the longest element, with zeros (empty strings)."""

    _kind = "PaddingFIFOQueue"

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):
        super().__init__(dtypes, _as_shape_list(shapes, unknown_dim_allowed=True), names, capacity=capacity,
                         name=name)

    def _stack(self, op, elements):
        out = []
        for i, (d, s) in enumerate(zip(self._dtypes, self._shapes)):
            dims = [max([e[i].shape[k] for e in elements], default=0) if s.dims[k] is None else s.dims[k]
                    for k in range(s.ndims)]
            batch = np.full([len(elements)] + dims, b"" if d == dtypes.string else 0,
                            object if d == dtypes.string else d.np)
            for j, e in enumerate(elements):
                batch[(j,) + tuple(slice(0, n) for n in e[i].shape)] = e[i] if e[i].ndim else e[i][()]
            out.append(feedable(batch, d))
        return out


class RandomShuffleQueue(QueueBase):
    """tf.RandomShuffleQueue: each dequeue takes random elements, leaving at least min_after_dequeue
    until the queue is closed. Its numbers are NumPy's, seeded from (graph seed, seed): the order
    is not TensorFlow's."""

    _kind = "RandomShuffleQueue"
    _state_class = _ShuffleState

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None, shared_name=None,
                 name="random_shuffle_queue"):
        super().__init__(dtypes, _as_shape_list(shapes), names, capacity=capacity, name=name)
        self.min_after_dequeue = int(min_after_dequeue)
        seed1, seed2 = random_ops.op_seeds(seed)
        self.seeds = None if seed1 is None and seed2 is None else [int(seed1 or 0), int(seed2 or 0)]


class PriorityQueue(QueueBase):
    """tf.PriorityQueue: the first component is an int64 priority; the smallest leaves first."""

    _kind = "PriorityQueue"
    _state_class = _PriorityState

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None, name="priority_queue"):
        types = [dtypes.int64] + _as_list(types)
        shapes = _as_shape_list(shapes)
        if shapes is not None:
            shapes = [TensorShape([])] + shapes
        if names is not None:
            names = ["priority"] + _as_list(names)
        super().__init__(types, shapes, names, capacity=capacity, name=name)
