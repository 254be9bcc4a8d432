"""Dataset.interleave and Dataset.flat_map (and tf.data.experimental.parallel_interleave): the
elements of the datasets a function makes of each input element, in TF's order.

TF's order (InterleaveDatasetOp): a cycle of cycle_length slots. The slot in turn, if open, gives
its dataset's next element, and after block_length of them the turn passes to the next slot; a
dataset at its end closes its slot and passes the turn. A closed slot in turn opens on the next
input element (the turn stays), or, once the input is done, passes the turn. flat_map is a cycle
of one. parallel_interleave's deterministic order (sloppy=False) is the same.

map_func is traced once on placeholders (as Dataset.map's function); per input element, the
tensors the dataset it returned captured are computed by a run of the iterating session with the
element fed, and that dataset is iterated on those values, its own functions' runs feeding the
element too (they may use map_func's arguments).
"""
import os

from pygrad import errors
from pygrad.data.dataset_ops import AUTOTUNE, Dataset, _capture, _count, _Unary, trace
from pygrad.data.iterator_ops import PipelineContext
from pygrad.graph import Tensor, get_default_graph

_END = object()


def interleave(inputs, open_element, cycle_length, block_length):
    """Yields the elements of the iterators open_element(x) makes of each x of inputs (an
    iterator), in TF's interleave order (see the module's docstring)."""
    slots = [None] * cycle_length
    turn = block = opened = 0
    inputs_done = False
    while not inputs_done or opened:
        if slots[turn] is not None:
            element = next(slots[turn], _END)
            if element is not _END:
                block += 1
                if block == block_length:
                    turn, block = (turn + 1) % cycle_length, 0
                yield element
                continue
            slots[turn] = None
            opened -= 1
            turn, block = (turn + 1) % cycle_length, 0
        elif not inputs_done:
            x = next(inputs, _END)
            if x is _END:
                inputs_done = True
            else:
                slots[turn] = iter(open_element(x))
                opened += 1
        else:
            turn, block = (turn + 1) % cycle_length, 0


def cycle_length_of(n):
    """A cycle length as TF takes it: AUTOTUNE (or None) is the number of CPUs this process may use."""
    n = AUTOTUNE if n is None else int(n)
    if n == AUTOTUNE:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, "cycle_length must be greater than zero.")
    return n


class InterleaveDataset(_Unary):
    def __init__(self, input_dataset, map_func, cycle_length, block_length):
        with get_default_graph().name_scope("interleave"):
            self._args, inner = trace(map_func, input_dataset)
        if not isinstance(inner, Dataset):
            raise TypeError(f"The `map_func` argument must return a `Dataset` object. Got {type(inner)!r}.")
        cycle_length = AUTOTUNE if cycle_length is None else _capture(cycle_length, "cycle_length")
        block_length = 1 if block_length is None else _capture(block_length, "block_length")
        for value, what in ((cycle_length, "cycle_length"), (block_length, "block_length")):
            if not isinstance(value, Tensor) and int(value) <= 0 and not (what == "cycle_length" and value == AUTOTUNE):
                raise errors.InvalidArgumentError(None, None, f"{what} must be greater than zero.")
        super().__init__(input_dataset, inner._specs, inner._structure,
                         [x for x in (cycle_length, block_length) if isinstance(x, Tensor)])
        self._inner, self._inner_captures = inner, inner._all_captures()
        self._cycle_length, self._block_length = cycle_length, block_length

    def _open(self, ctx, element):
        """The elements of the dataset map_func made, for one input element."""
        feeds = {**ctx.feeds, **dict(zip(self._args, element))}
        captured = dict(zip(self._inner_captures, ctx.host.run(self._inner_captures, feeds))) \
            if self._inner_captures else {}
        return self._inner._elements(PipelineContext(ctx.host, captured, feeds))

    def _elements(self, ctx):
        cycle = cycle_length_of(_count(ctx, self._cycle_length, "cycle_length"))
        block = _count(ctx, self._block_length, "block_length")
        if block <= 0:
            raise errors.InvalidArgumentError(None, None, "block_length must be greater than zero.")
        return interleave(iter(self._input._elements(ctx)), lambda x: self._open(ctx, x), cycle, block)


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False, buffer_output_elements=None,
                        prefetch_input_elements=None):
    """tf.data.experimental.parallel_interleave: Dataset.interleave's transformation, for
    Dataset.apply. pygrad makes the elements in the order sloppy=False gives in TF, whatever sloppy
    says (the buffers are TF's performance knobs; pygrad reads when the iterator asks)."""
    def apply(dataset):
        return InterleaveDataset(dataset, map_func, cycle_length, block_length)
    return apply
