"""tf.data.Iterator: the element tensors of a dataset in a graph, and the per-session state of
iterating it.

``get_next()`` adds an IteratorGetNext op (pygrad/ops/data_ops.py); each run that needs it takes
the next element of the session's pipeline and binds it like a feed. Iterators are per session,
as TF's iterator resources are (state the run's host context keeps per session): a one-shot
iterator starts its pipeline in a session on first use, an initializable one when its initializer
runs there (again on every run of the initializer). An iterator's string_handle() names it; a
feedable iterator (Iterator.from_string_handle) takes the elements of the iterator whose handle
its placeholder is fed in the run, so its state is that iterator's in the session.
At the end of the data, a run raises ``tf.errors.OutOfRangeError`` and the session stays usable.
"""
import itertools
import weakref

from pygrad import dtypes, errors, nest
from pygrad.data.structure import SparseSpec, as_graph_values, from_graph_tensors, graph_specs
from pygrad.ops import array_ops, data_ops
from pygrad.shapes import TensorShape, as_shape

_END = object()  # a pipeline that has run out


class PipelineContext:
    """What iterating a dataset needs: the run's host context (state per session; runs of traced
    functions in the session), the values the initializing run computed for the tensors the
    dataset captured, and, for a dataset made by a function of another's element (interleave),
    the values of the enclosing functions' arguments, which runs of its own functions feed."""

    def __init__(self, host, captured, feeds=None):
        self.host = host  # host.HostContext
        self.captured = captured  # {tensor: value}
        self.feeds = feeds or {}  # {placeholder: value}

    def value(self, x):
        return self.captured[x] if x in self.captured else x


class _Pipeline:
    """An iterator's state in one session: its generator of elements, _END once it has run out,
    or None before it starts."""

    __slots__ = ("elements",)

    def __init__(self):
        self.elements = None


class Iterator:
    """Gives a dataset's elements to the graph, one per run (TF1's tf.data.Iterator)."""

    def __init__(self, specs, structure):
        self._specs = list(specs)  # (DType, TensorShape) per flat component
        self._structure = structure
        self._one_shot_dataset = None
        self._initializer = None
        self._string_handle = None  # the handle tensor of an iterator made by from_string_handle
        self._handle = None  # this iterator's handle (bytes), once string_handle() has named it

    @classmethod
    def one_shot(cls, dataset):
        it = cls(dataset._specs, dataset._structure)
        it._one_shot_dataset = dataset
        return it

    @classmethod
    def initializable(cls, dataset):
        it = cls(dataset._specs, dataset._structure)
        it._initializer = it.make_initializer(dataset)
        return it

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """The feedable iterator: its get_next() gives the next element of the iterator whose
        string_handle() value string_handle (a string scalar, typically a placeholder) has in the
        run, so one graph reads from the iterator a feed chooses."""
        string_handle = array_ops.convert_to_tensor(string_handle)
        if string_handle.dtype != dtypes.string or string_handle.shape.ndims not in (0, None):
            raise TypeError(f"Iterator.from_string_handle: string_handle must be a string scalar, got "
                            f"{string_handle.dtype.name} of shape {string_handle.shape}")
        it = Iterator.from_structure(output_types, output_shapes, output_classes=output_classes)
        it._string_handle = string_handle
        return it

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An iterator any dataset of this structure can initialize (make_initializer)."""
        types = [dtypes.as_dtype(t) for t in nest.flatten(output_types)]
        if output_shapes is None:
            shapes = [TensorShape(None)] * len(types)
        else:
            shapes = [as_shape(s) for s in nest.flatten(output_shapes)] if nest.is_sequence(output_types) \
                else [as_shape(output_shapes)]
            if len(shapes) != len(types):
                raise ValueError(f"output_shapes has {len(shapes)} components, output_types {len(types)}")
        classes = nest.flatten(output_classes) if output_classes is not None else [None] * len(types)
        from pygrad.ops.sparse_tensor import SparseTensor
        return Iterator([SparseSpec(spec) if c is SparseTensor else spec
                         for spec, c in zip(zip(types, shapes), classes)], output_types)

    # ---- description ----
    @property
    def output_types(self):
        return nest.pack_sequence_as(self._structure, [d for d, _ in self._specs])

    @property
    def output_shapes(self):
        return nest.pack_sequence_as(self._structure, [s for _, s in self._specs])

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    # ---- graph ops ----
    def make_initializer(self, dataset, name=None):
        """An op that (re)starts this iterator on dataset in the session that runs it."""
        nest.assert_same_structure(self._structure, dataset._structure)
        for (d1, s1), (d2, s2), a, b in zip(self._specs, dataset._specs, self._specs, dataset._specs):
            if _kind(a) != _kind(b):
                raise TypeError(f"Expected output classes {[_kind(x) for x in self._specs]} but got dataset with "
                                f"output classes {[_kind(x) for x in dataset._specs]}.")
            if d1 != d2:
                raise TypeError(f"Expected output types {self.output_types} but got dataset with output types "
                                f"{dataset.output_types}.")
            if not s1.is_compatible_with(s2):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes} but got dataset "
                                f"with output shapes {dataset.output_shapes}.")
        captures = dataset._all_captures()

        def start(ctx, values):
            self._start(ctx, dataset, dict(zip(captures, values)))

        return data_ops.make_iterator(start, captures, name=name)

    def get_next(self, name=None):
        """The next element's tensors, in the dataset's structure: each run that needs them takes
        one element."""
        specs = graph_specs(self._specs)
        if self._string_handle is not None:
            outs = data_ops.iterator_get_next_from_string_handle(self._string_handle, self._next_of_handle, specs,
                                                                 name=name)
        else:
            outs = data_ops.iterator_get_next(self._next, specs, name=name)
        return nest.pack_sequence_as(self._structure, from_graph_tensors(outs, self._specs))

    def string_handle(self, name=None):
        """A string scalar that names this iterator (the same value in every session): fed to the
        placeholder of a from_string_handle iterator, it makes that one take this one's elements."""
        if self._string_handle is not None:
            return self._string_handle
        if self._handle is None:
            self._handle = b"pygrad-iterator:%d" % next(_SERIALS)
            _HANDLES[self._handle] = self
        return data_ops.iterator_to_string_handle(self._handle, name=name)

    # ---- running (called by the ops' host functions) ----
    def _start(self, ctx, dataset, captured):
        ctx.state(self, _Pipeline).elements = dataset._elements(PipelineContext(ctx, captured))

    def _next(self, ctx, op):
        state = ctx.state(self, _Pipeline)
        if state.elements is None:
            dataset = self._one_shot_dataset
            if dataset is None:
                raise errors.FailedPreconditionError(None, op, op.error(
                    "GetNext() failed because the iterator has not been initialized. Ensure that you have run "
                    "the initializer operation for this iterator before getting the next element."))
            captures = dataset._all_captures()
            self._start(ctx, dataset, dict(zip(captures, ctx.run(captures))) if captures else {})
        element = next(state.elements, _END) if state.elements is not _END else _END
        if element is _END:
            state.elements = _END
            raise errors.OutOfRangeError(None, op, op.error("End of sequence"))
        return [data_ops.feedable(v, d) for v, (d, _) in zip(as_graph_values(element, self._specs),
                                                             graph_specs(self._specs))]

    def _next_of_handle(self, ctx, op, handle):
        """The next element of the iterator handle names, which must give elements of this
        iterator's types and shapes (TF's checks and messages)."""
        target = _HANDLES.get(handle)
        if target is None:
            raise errors.InvalidArgumentError(None, op, op.error(
                "Could not parse string_handle as a valid ResourceHandle"))
        if len(target._specs) != len(self._specs):
            raise errors.InvalidArgumentError(None, op, op.error(
                f"Number of components does not match: expected {len(self._specs)} types but got "
                f"{len(target._specs)}."))
        for i, ((d1, s1), (d2, s2)) in enumerate(zip(self._specs, target._specs)):
            if _kind(self._specs[i]) != _kind(target._specs[i]):
                raise errors.InvalidArgumentError(None, op, op.error(
                    f"Component {i}: expected a {_kind(self._specs[i])} but got a {_kind(target._specs[i])}."))
            if d1 != d2:
                raise errors.InvalidArgumentError(None, op, op.error(
                    f"Data type mismatch at component {i}: expected {d1.name} but got {d2.name}."))
            if not s1.is_compatible_with(s2):
                raise errors.InvalidArgumentError(None, op, op.error(
                    f"Output shape mismatch at component {i}: expected {s1} but got {s2}."))
        return target._next(ctx, op)


def _kind(spec):
    return "SparseTensor" if isinstance(spec, SparseSpec) else "Tensor"


_SERIALS = itertools.count(1)
_HANDLES = weakref.WeakValueDictionary()  # string handle -> the Iterator it names


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes
