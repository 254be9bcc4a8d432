"""tf.data.Dataset: an input pipeline that runs in Python on NumPy arrays, element by element.

A dataset is a recipe; iterating it (``_elements``) yields each element as a flat list of arrays,
one per component of its structure (``pygrad.nest``). Tensors of the graph a dataset is built from
(a placeholder given to ``from_tensor_slices``, a tensor-valued ``batch_size``) are its captures:
an iterator's initializer gets their values from the run that initializes it. Functions given to
``map`` and ``filter`` are traced once into the graph on placeholders and run per element in the
session that owns the iterator (through the run's host context), so they may use any op, variable
or captured tensor.
"""
import numpy as np

from pygrad import dtypes, errors, nest
from pygrad.data import interleave_ops
from pygrad.data.interleave_ops import AUTOTUNE
from pygrad.data.iterator_ops import Iterator
from pygrad.data.structure import SparseSpec, batch_sparse, flatten_shapes, lists_as_arrays, spec_of, trace
from pygrad.graph import Tensor, TensorLike, get_default_graph
from pygrad.ops import array_ops, io_ops, script_ops
from pygrad.ops.random_ops import op_seeds
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.shapes import TensorShape, as_shape


def _capture(x, what, dtype=dtypes.int64):
    """A dataset argument: a Python value as it is, or a scalar graph tensor of the right kind."""
    if isinstance(x, TensorLike):
        x = x.value() if hasattr(x, "value") and not isinstance(x, Tensor) else x
    if isinstance(x, Tensor) and x.dtype != dtype and not (x.dtype.is_integer and dtype.is_integer):
        raise TypeError(f"{what}: expected a tensor of dtype {dtype.name}, got {x.dtype.name}")
    return x


class Dataset:
    """A sequence of elements; every transformation returns a new dataset (TF1's tf.data.Dataset)."""

    def __init__(self, specs, structure, captures=()):
        self._specs = list(specs)  # (DType, TensorShape) per flat component
        self._structure = structure  # a nested structure with one leaf per component
        self._captures = list(captures)

    # ---- description ----
    @property
    def output_types(self):
        return nest.pack_sequence_as(self._structure, [d for d, _ in self._specs])

    @property
    def output_shapes(self):
        return nest.pack_sequence_as(self._structure, [s for _, s in self._specs])

    @property
    def output_classes(self):
        from pygrad.ops.sparse_tensor import SparseTensor
        return nest.pack_sequence_as(self._structure, [SparseTensor if isinstance(s, SparseSpec) else Tensor
                                                       for s in self._specs])

    element_spec = output_shapes

    def _all_captures(self):
        """The graph tensors this pipeline captured, each once, in order."""
        out = []
        for d in [self] + self._inputs():
            for t in d._captures:
                if t not in out:
                    out.append(t)
        return out

    def _inputs(self):
        """Every dataset this one reads from, transitively."""
        return []

    def _elements(self, ctx):
        raise NotImplementedError  # each subclass yields its elements

    # ---- sources ----
    @staticmethod
    def from_tensor_slices(tensors):
        return _SliceDataset(lists_as_arrays(tensors))

    @staticmethod
    def from_tensors(tensors):
        return _TensorDataset(lists_as_arrays(tensors))

    @staticmethod
    def range(*args, output_type=dtypes.int64):
        return _RangeDataset(args, dtypes.as_dtype(output_type))

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        return _GeneratorDataset(generator, output_types, output_shapes, args)

    @staticmethod
    def zip(datasets):
        return _ZipDataset(datasets)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The names of the files file_pattern (a glob or a list of them) matches when the iterator
        starts, shuffled unless shuffle is False (TF's: all of them, seeded as shuffle is)."""
        names = _MatchingFilesDataset(file_pattern)
        return names if shuffle is False else names.shuffle(np.iinfo(np.int64).max, seed)

    # ---- transformations ----
    def batch(self, batch_size, drop_remainder=False):
        return _BatchDataset(self, batch_size, drop_remainder, None, None)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False):
        return _BatchDataset(self, batch_size, drop_remainder, padded_shapes or self.output_shapes, padding_values)

    def unbatch(self):
        return _UnbatchDataset(self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        return _ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None):
        return _RepeatDataset(self, count)

    def map(self, map_func, num_parallel_calls=None):
        return _MapDataset(self, map_func)

    def filter(self, predicate):
        return _FilterDataset(self, predicate)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None):
        """The elements of the datasets map_func makes of this one's, cycle_length at a time, taking
        block_length from each in turn (TF's order: pygrad/data/interleave_ops.py)."""
        return _InterleaveDataset(self, map_func, cycle_length, block_length)

    def flat_map(self, map_func):
        """The elements of the datasets map_func makes of this one's, one dataset after the other."""
        return _InterleaveDataset(self, map_func, 1, 1)

    def take(self, count):
        return _TakeSkipDataset(self, count, take=True)

    def skip(self, count):
        return _TakeSkipDataset(self, count, take=False)

    def prefetch(self, buffer_size):
        """Elements are made in the run that needs them (the plan runs without the GIL, but the
        pipeline does not run beside it): the same elements, in the same order."""
        return self

    def cache(self, filename=""):
        if filename:
            raise errors.UnimplementedError(None, None, "Dataset.cache: pygrad caches in memory only "
                                                       "(filename='')")
        return _CacheDataset(self)

    def concatenate(self, dataset):
        return _ConcatenateDataset(self, dataset)

    def enumerate(self, start=0):
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def apply(self, transformation_func):
        return transformation_func(self)

    # ---- iterators ----
    def make_one_shot_iterator(self):
        return Iterator.one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        return Iterator.initializable(self)

    def __iter__(self):
        raise RuntimeError("tf.data.Dataset is only iterable in eager mode; in a graph use "
                           "make_one_shot_iterator() or make_initializable_iterator() and get_next()")


def _as_component(x):
    """A dataset component: (array or None, tensor or None, DType, TensorShape)."""
    if isinstance(x, TensorLike) and not isinstance(x, Tensor):
        x = x.value()
    if isinstance(x, Tensor):
        return None, x, x.dtype, x.shape
    arr = array_ops.numpy_value(x)
    return arr, None, dtypes.as_dtype(arr.dtype), TensorShape(arr.shape)


class _SliceDataset(Dataset):
    def __init__(self, tensors):
        comps = [_as_component(x) for x in nest.flatten(tensors)]
        firsts = {s[0].value for _, _, _, s in comps if s.ndims}
        if any(s.ndims == 0 for _, _, _, s in comps):
            raise ValueError("from_tensor_slices: every component needs at least one dimension to slice")
        known = {d for d in firsts if d is not None}
        if len(known) > 1:
            raise ValueError(f"from_tensor_slices: dimension 0 of the components differs: {sorted(known)}")
        super().__init__([(d, s[1:]) for _, _, d, s in comps], tensors, [t for _, t, _, _ in comps if t is not None])
        self._comps = comps

    def _arrays(self, ctx):
        arrays = [a if a is not None else np.asarray(ctx.value(t)) for a, t, _, _ in self._comps]
        lengths = {len(a) for a in arrays}
        if len(lengths) > 1:
            raise errors.InvalidArgumentError(None, None, f"from_tensor_slices: dimension 0 of the components "
                                                          f"differs: {sorted(lengths)}")
        return arrays, (lengths.pop() if lengths else 0)

    def _elements(self, ctx):
        arrays, n = self._arrays(ctx)
        for i in range(n):
            yield [a[i] for a in arrays]


class _TensorDataset(Dataset):
    def __init__(self, tensors):
        comps = [_as_component(x) for x in nest.flatten(tensors)]
        super().__init__([(d, s) for _, _, d, s in comps], tensors, [t for _, t, _, _ in comps if t is not None])
        self._comps = comps

    def _elements(self, ctx):
        yield [a if a is not None else np.asarray(ctx.value(t)) for a, t, _, _ in self._comps]


class _RangeDataset(Dataset):
    def __init__(self, args, dtype):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 arguments (start, stop, step), got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        self._range = [_capture(x, "Dataset.range") for x in (start, stop, step)]
        if not isinstance(self._range[2], Tensor) and step == 0:
            raise errors.InvalidArgumentError(None, None, "Dataset.range: step must not be 0")
        super().__init__([(dtype, TensorShape([]))], 0, [x for x in self._range if isinstance(x, Tensor)])

    def _elements(self, ctx):
        np_dtype = self._specs[0][0].np
        start, stop, step = (int(ctx.value(x)) for x in self._range)
        if step == 0:
            raise errors.InvalidArgumentError(None, None, "Dataset.range: step must not be 0")
        for v in range(start, stop, step):
            yield [np.array(v, np_dtype)]


class _MatchingFilesDataset(Dataset):
    def __init__(self, patterns):
        patterns = _capture(patterns, "file_pattern", dtypes.string)
        super().__init__([(dtypes.string, TensorShape([]))], 0, [patterns] if isinstance(patterns, Tensor) else [])
        self._patterns = patterns

    def _elements(self, ctx):
        patterns = ctx.value(self._patterns) if isinstance(self._patterns, Tensor) else self._patterns
        for name in io_ops.matching_names(np.asarray(patterns, dtype=object).reshape(-1)):
            yield [np.array(name.encode("utf-8"), dtype=object)]


class _GeneratorDataset(Dataset):
    def __init__(self, generator, output_types, output_shapes, args):
        types = [dtypes.as_dtype(t) for t in nest.flatten(output_types)]
        if output_shapes is None:
            shapes = [TensorShape(None)] * len(types)
        else:
            shapes = [as_shape(s) for s in flatten_shapes(output_shapes, output_types)]
        super().__init__(list(zip(types, shapes)), output_types)
        self._generator, self._args = generator, tuple(args or ())

    def _values(self):
        """The generator's values; its exception becomes the tf.errors class TF's py_func gives it (a
        RuntimeError an UnknownError, "RuntimeError: <message>"), with the exception as __cause__."""
        values = iter(self._generator(*self._args))
        while True:
            try:
                value = next(values)
            except StopIteration:
                return
            except Exception as e:  # noqa: BLE001 (every exception becomes a tf.errors class, as in TF)
                raise script_ops.error_class(e)(None, None, f"from_generator: {type(e).__name__}: {e}") from e
            yield value

    def _elements(self, ctx):
        for value in self._values():
            flat = nest.flatten(value) if nest.is_sequence(self._structure) else [value]
            if len(flat) != len(self._specs):
                raise errors.InvalidArgumentError(None, None, f"from_generator: the generator yielded {len(flat)} "
                                                              f"components, output_types has {len(self._specs)}")
            out = []
            for x, (dtype, shape) in zip(flat, self._specs):
                arr = np.asarray(x)
                if arr.dtype != dtype.np:
                    if not dtypes.fits(arr, dtype.np) and arr.dtype.kind in "iub":
                        raise errors.InvalidArgumentError(None, None, f"from_generator: {x!r} does not fit "
                                                                      f"{dtype.name}")
                    arr = arr.astype(dtype.np)
                if not shape.is_compatible_with(arr.shape):
                    raise errors.InvalidArgumentError(None, None, f"from_generator: `generator` yielded an element "
                                                                  f"of shape {arr.shape} where an element of shape "
                                                                  f"{shape} was expected.")
                out.append(arr)
            yield out


class _ZipDataset(Dataset):
    def __init__(self, datasets):
        self._datasets = nest.flatten(datasets)
        if not all(isinstance(d, Dataset) for d in self._datasets):
            raise TypeError("Dataset.zip takes a nested structure of datasets")
        structure = nest.pack_sequence_as(datasets, [d._structure for d in self._datasets])
        super().__init__([s for d in self._datasets for s in d._specs], structure)

    def _inputs(self):
        return [x for d in self._datasets for x in [d] + d._inputs()]

    def _elements(self, ctx):
        for parts in zip(*(d._elements(ctx) for d in self._datasets)):
            yield [a for p in parts for a in p]


class _Unary(Dataset):
    """A transformation of one input dataset."""

    def __init__(self, input_dataset, specs, structure, captures=()):
        super().__init__(specs, structure, captures)
        self._input = input_dataset

    def _inputs(self):
        return [self._input] + self._input._inputs()


def _count(ctx, value, what):
    n = ctx.value(value)
    n = int(n) if n is not None else -1
    return n


class _BatchDataset(_Unary):
    def __init__(self, input_dataset, batch_size, drop_remainder, padded_shapes, padding_values):
        batch_size = _capture(batch_size, "batch_size")
        if not isinstance(batch_size, Tensor) and int(batch_size) <= 0:
            raise errors.InvalidArgumentError(None, None, f"batch_size must be greater than zero, got {batch_size}")
        first = TensorShape([int(batch_size) if drop_remainder and not isinstance(batch_size, Tensor) else None])
        self._padded = None
        if padded_shapes is not None:
            self._padded = [as_shape(s) for s in flatten_shapes(padded_shapes, input_dataset._structure)]
            values = nest.flatten(padding_values) if padding_values is not None else [None] * len(self._padded)
            self._padding = [0 if v is None else _capture(v, "padding_values", d) for v, (d, _) in
                             zip(values, input_dataset._specs)]
            shapes = self._padded
            if any(isinstance(s, SparseSpec) for s in input_dataset._specs):
                raise TypeError("Dataset.padded_batch: pygrad pads dense components only, and this dataset has a "
                                "SparseTensor component (batch() batches it)")
        else:
            shapes = [s for _, s in input_dataset._specs]
        specs = [type(spec)((spec[0], first.concatenate(s))) for spec, s in zip(input_dataset._specs, shapes)]
        captures = [x for x in [batch_size] + (self._padding if self._padded else []) if isinstance(x, Tensor)]
        super().__init__(input_dataset, specs, input_dataset._structure, captures)
        self._batch_size, self._drop = batch_size, drop_remainder

    def _elements(self, ctx):
        size = _count(ctx, self._batch_size, "batch_size")
        if size <= 0:
            raise errors.InvalidArgumentError(None, None, f"batch_size must be greater than zero, got {size}")
        if self._padded is None and type(self._input) is _SliceDataset:  # consecutive rows: views, no copy
            arrays, n = self._input._arrays(ctx)
            stop = n - n % size if self._drop else n
            for i in range(0, stop, size):
                yield [np.ascontiguousarray(a[i:i + size]) for a in arrays]
            return
        padding = None if self._padded is None else \
            [np.array(ctx.value(v), d.np) for v, (d, _) in zip(self._padding, self._input._specs)]
        batch = []
        for element in self._input._elements(ctx):
            batch.append(element)
            if len(batch) == size:
                yield self._stack(batch, padding)
                batch = []
        if batch and not self._drop:
            yield self._stack(batch, padding)

    def _stack(self, batch, padding):
        out = []
        for c in range(len(batch[0])):
            if isinstance(self._input._specs[c], SparseSpec):
                out.append(batch_sparse([e[c] for e in batch]))
                continue
            parts = [np.asarray(e[c]) for e in batch]
            if self._padded is not None:
                out.append(self._pad(parts, c, padding[c]))
                continue
            first = parts[0].shape
            for j, p in enumerate(parts):
                if p.shape != first:
                    raise errors.InvalidArgumentError(None, None, f"Cannot batch tensors with different shapes in "
                                                                  f"component {c}. First element had shape "
                                                                  f"{list(first)} and element {j} had shape "
                                                                  f"{list(p.shape)}.")
            out.append(np.stack(parts))
        return out

    def _pad(self, parts, c, padding):
        target = self._padded[c]
        ndim = parts[0].ndim
        dims = []
        for axis in range(ndim):
            want = target[axis].value if target.ndims is not None else None
            longest = max(p.shape[axis] for p in parts)
            if want is not None and longest > want:
                raise errors.InvalidArgumentError(None, None, f"padded_batch: component {c} has dimension {axis} of "
                                                              f"{longest}, above its padded shape {target}")
            dims.append(longest if want is None else want)
        out = np.full([len(parts)] + dims, padding, dtype=parts[0].dtype)
        for i, p in enumerate(parts):
            out[(i,) + tuple(slice(0, n) for n in p.shape)] = p
        return out


class _UnbatchDataset(_Unary):
    def __init__(self, input_dataset):
        if any(isinstance(s, SparseSpec) for s in input_dataset._specs):
            raise TypeError("Dataset.unbatch: pygrad unbatches dense components only")
        super().__init__(input_dataset, [(d, s[1:] if s.ndims else s) for d, s in input_dataset._specs],
                         input_dataset._structure)

    def _elements(self, ctx):
        for element in self._input._elements(ctx):
            for i in range(len(element[0])):
                yield [a[i] for a in element]


class _ShuffleDataset(_Unary):
    """TF's shuffle: a buffer of buffer_size elements; each output is a uniformly random one of
    the buffer, replaced by the next input element. Seeded as TF1's random ops are; with
    reshuffle_each_iteration every new pass (repeat) draws another order."""

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        buffer_size = _capture(buffer_size, "buffer_size")
        super().__init__(input_dataset, input_dataset._specs, input_dataset._structure,
                         [buffer_size] if isinstance(buffer_size, Tensor) else [])
        self._buffer_size = buffer_size
        self._seeds = op_seeds(seed)
        self._reshuffle = reshuffle_each_iteration
        self._passes = 0

    def _elements(self, ctx):
        size = _count(ctx, self._buffer_size, "buffer_size")
        if size <= 0:
            raise errors.InvalidArgumentError(None, None, f"buffer_size must be greater than zero, got {size}")
        rng = np.random.default_rng([*self._seeds, self._passes])
        if self._reshuffle:
            self._passes += 1
        buffer = []
        for element in self._input._elements(ctx):
            buffer.append(element)
            if len(buffer) == size:
                i = int(rng.integers(len(buffer)))
                yield buffer[i]
                buffer[i] = buffer[-1]
                buffer.pop()
        while buffer:
            i = int(rng.integers(len(buffer)))
            yield buffer[i]
            buffer[i] = buffer[-1]
            buffer.pop()


class _RepeatDataset(_Unary):
    def __init__(self, input_dataset, count):
        count = _capture(count, "count") if count is not None else -1
        super().__init__(input_dataset, input_dataset._specs, input_dataset._structure,
                         [count] if isinstance(count, Tensor) else [])
        self._repeat = count

    def _elements(self, ctx):
        count = _count(ctx, self._repeat, "count")
        done = 0
        while count < 0 or done < count:
            empty = True
            for element in self._input._elements(ctx):
                empty = False
                yield element
            done += 1
            if empty:
                return  # an empty input repeated forever is empty, as in TF


class _TakeSkipDataset(_Unary):
    def __init__(self, input_dataset, count, take):
        count = _capture(count, "count")
        super().__init__(input_dataset, input_dataset._specs, input_dataset._structure,
                         [count] if isinstance(count, Tensor) else [])
        self._n, self._take = count, take

    def _elements(self, ctx):
        n = _count(ctx, self._n, "count")
        for i, element in enumerate(self._input._elements(ctx)):
            if self._take:
                if 0 <= n <= i:
                    return
                yield element
            elif n < 0:
                return
            elif i >= n:
                yield element


class _CacheDataset(_Unary):
    def __init__(self, input_dataset):
        super().__init__(input_dataset, input_dataset._specs, input_dataset._structure)

    def _elements(self, ctx):
        cache = ctx.host.state(self, dict)  # this session's complete first pass, under "elements"
        if "elements" in cache:
            yield from cache["elements"]
            return
        seen = []
        for element in self._input._elements(ctx):
            seen.append(element)
            yield element
        cache["elements"] = seen


class _ConcatenateDataset(Dataset):
    def __init__(self, first, second):
        nest.assert_same_structure(first._structure, second._structure)
        for (d1, _), (d2, _) in zip(first._specs, second._specs):
            if d1 != d2:
                raise TypeError(f"Dataset.concatenate: the datasets have different types: {d1.name} and {d2.name}")
        specs = [(d, s1.most_specific_compatible_shape(s2)) for (d, s1), (_, s2) in zip(first._specs, second._specs)]
        super().__init__(specs, first._structure)
        self._parts = (first, second)

    def _inputs(self):
        return [x for d in self._parts for x in [d] + d._inputs()]

    def _elements(self, ctx):
        for d in self._parts:
            yield from d._elements(ctx)


class _Traced:
    """A function of a dataset's element, traced once into the graph on placeholders; called per
    element by running its outputs in the iterating session with the element fed (a run of the
    host context)."""

    def __init__(self, fn, input_dataset, what):
        with get_default_graph().name_scope(what):
            self.inputs, result = trace(fn, input_dataset)
            self.structure = result
            self.outputs = [x if isinstance(x, SparseTensor) else array_ops.convert_to_tensor(x)
                            for x in nest.flatten(result)]
        self.what = what

    def __call__(self, ctx, element):
        return ctx.host.run(self.outputs, {**ctx.feeds, **dict(zip(self.inputs, element))})


class _MapDataset(_Unary):
    def __init__(self, input_dataset, map_func):
        fn = _Traced(map_func, input_dataset, "map")
        structure = fn.structure if nest.is_sequence(fn.structure) else 0
        super().__init__(input_dataset, [spec_of(t) for t in fn.outputs], structure)
        self._fn = fn

    def _elements(self, ctx):
        for element in self._input._elements(ctx):
            yield self._fn(ctx, element)


class _FilterDataset(_Unary):
    def __init__(self, input_dataset, predicate):
        fn = _Traced(predicate, input_dataset, "filter")
        if len(fn.outputs) != 1 or fn.outputs[0].dtype != dtypes.bool_ or fn.outputs[0].shape.ndims not in (0, None):
            raise ValueError("Dataset.filter: the predicate must return a scalar tf.bool tensor")
        super().__init__(input_dataset, input_dataset._specs, input_dataset._structure)
        self._fn = fn

    def _elements(self, ctx):
        for element in self._input._elements(ctx):
            if bool(self._fn(ctx, element)[0]):
                yield element


class _InterleaveDataset(_Unary):
    def __init__(self, input_dataset, map_func, cycle_length, block_length):
        with get_default_graph().name_scope("interleave"):
            self._args, inner = trace(map_func, input_dataset)
        if not isinstance(inner, Dataset):
            raise TypeError(f"The `map_func` argument must return a `Dataset` object. Got {type(inner)!r}.")
        self._lengths = [_capture(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length"),
                         _capture(1 if block_length is None else block_length, "block_length")]
        interleave_ops.check_lengths(*(None if isinstance(x, Tensor) else int(x) for x in self._lengths))
        super().__init__(input_dataset, inner._specs, inner._structure,
                         [x for x in self._lengths if isinstance(x, Tensor)])
        self._inner, self._inner_captures = inner, inner._all_captures()

    def _elements(self, ctx):
        cycle, block = interleave_ops.check_lengths(*(_count(ctx, x, "") for x in self._lengths))
        return interleave_ops.interleave(iter(self._input._elements(ctx)), lambda element: interleave_ops.open_element(
            ctx, self._inner, self._inner_captures, self._args, element), cycle, block)
