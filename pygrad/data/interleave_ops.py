"""The order of Dataset.interleave and Dataset.flat_map (and tf.data.experimental.parallel_interleave,
and the file datasets' num_parallel_reads): the elements of the datasets made of each input element.

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
from pygrad.data.iterator_ops import PipelineContext

AUTOTUNE = -1  # tf.data.AUTOTUNE: a parameter the runtime chooses
_END = object()


def interleave(inputs, open_element, cycle_length, block_length):
    """Yields the elements of the iterables open_element(x) makes of each x of inputs (an
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


def check_lengths(cycle_length, block_length=1):
    """(cycle_length, block_length) as TF takes them: AUTOTUNE cycles over as many datasets as this
    process may use CPUs; a length below one is TF's InvalidArgumentError. None: not known yet."""
    if cycle_length == AUTOTUNE:
        cycle_length = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for value, what in ((cycle_length, "cycle_length"), (block_length, "block_length")):
        if value is not None and value <= 0:
            raise errors.InvalidArgumentError(None, None, f"{what} must be greater than zero.")
    return cycle_length, block_length


def open_element(ctx, dataset, captures, args, element):
    """The elements of dataset, which map_func made on the placeholders args, for one element: the
    tensors it captured are run with the element fed (ctx: the input's PipelineContext)."""
    feeds = {**ctx.feeds, **dict(zip(args, element))}
    captured = dict(zip(captures, ctx.host.run(captures, feeds))) if captures else {}
    return dataset._elements(PipelineContext(ctx.host, captured, feeds))


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False, buffer_output_elements=None,
                        prefetch_input_elements=None):
    """tf.data.experimental.parallel_interleave: Dataset.interleave as a transformation for
    Dataset.apply. The elements come in the order sloppy=False gives in TF, whatever sloppy says;
    the buffers are TF's performance knobs (pygrad reads when the iterator asks)."""
    return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)
