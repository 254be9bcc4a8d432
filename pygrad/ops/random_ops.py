"""Random tensors (random_uniform, random_normal, truncated_normal), dropout, and TF's seed rules.

Each random op owns a hidden int64 counter in the session's variable store; a run draws
Philox values for (seed, counter + i) and advances the counter, so every run draws new numbers,
and a graph built with the same graph- and op-level seeds draws the same sequence.
"""
import secrets


from pygrad import dtypes
from pygrad.graph import Tensor, build_error, get_default_graph
from pygrad.ops import array_ops, math_ops
from pygrad.ops.array_ops import constant_value, convert_to_tensor
from pygrad.ops.shape_exprs import has_refs, resolve, shape_expr
from pygrad.ops.state_ops import VariableV2
from pygrad.registry import SHAPE_ONLY_AFTER_FIRST, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape, as_shape

DEFAULT_GRAPH_SEED = 87654321


def get_seed(op_seed):
    """TF1's rule: (graph seed, op seed); the op count stands in for a missing op seed when the
    graph has a seed; with neither, (None, None)."""
    graph = get_default_graph()
    if graph.seed is not None:
        seeds = (graph.seed, op_seed if op_seed is not None else graph.version)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed)
    else:
        return None, None
    if seeds == (0, 0):
        return 0, 2 ** 31 - 1
    return int(seeds[0]), int(seeds[1])


def op_seeds(op_seed):
    """The seeds a random op is built with: get_seed's, or fresh random ones where it gives None
    (as TF's kernels draw their own for seed = seed2 = 0)."""
    seed1, seed2 = get_seed(op_seed)
    if seed1 is None:
        return secrets.randbits(31), secrets.randbits(31)
    return seed1, seed2


class _Counter:
    """A hidden entry of the graph's variable numbering: the random op's int64 counter. Each session
    starts it by itself (see session_start), without an initializer."""

    def __init__(self, graph, name, seeded):
        self.shape = TensorShape([])
        self.dtype = dtypes.int64
        self.seeded = seeded
        with graph.device(None):  # pygrad's own state, not a TF variable: device functions never see it
            self._variable = graph.add_stored_variable(self, lambda index: VariableV2(
                shape=self.shape, dtype=self.dtype, var_index=index, name=name))
        self.op = self._variable.op

    def session_start(self):
        """The counter's value in a new session: zero for a seeded op, so every session repeats its
        sequence (TF's rule); a random point of the stream for an unseeded one, so each session
        draws new values."""
        return 0 if self.seeded else secrets.randbits(62)


def _random_op(type_name, distribution):
    d = OpDef(type_name, kernel="random_fwd", differentiable=False, ref_input=0, output_is_ref=False,
              shape_only_inputs=SHAPE_ONLY_AFTER_FIRST)  # the inputs after the counter only give sizes

    @d.shape
    def _(counter, *like, shape, dtype, seed, seed2):
        if dtype not in math_ops.FLOATS:
            fail(f"dtype must be float32 or float64, got {dtype.name}")
        if shape is None:  # tf.shape(like[0])
            return Spec(dtype, like[0].shape)
        return Spec(dtype, TensorShape(resolve(shape, like)))

    d.native_attrs(lambda attrs, ins, outs: {"distribution": distribution, "seed": attrs["seed"],
                                             "seed2": attrs["seed2"]})
    return d


RandomUniform = _random_op("RandomUniform", "uniform")
RandomStandardNormal = _random_op("RandomStandardNormal", "normal")
TruncatedNormal = _random_op("TruncatedNormal", "truncated_normal")


def _draw(opdef, shape, dtype, seed, seeds=None, name=None):
    """A standard draw of `shape` (a list, a TensorShape, or a Tensor whose shape to copy); seeds:
    the op's (seed, seed2) as a GraphDef holds them (0, 0: unseeded), instead of TF1's rule on seed."""
    graph = get_default_graph()
    if seeds is None:
        seed1, seed2 = op_seeds(seed)
        seeded = graph.seed is not None or seed is not None
    else:
        (seed1, seed2), seeded = seeds, any(seeds)
        if not seeded:
            seed1, seed2 = secrets.randbits(31), secrets.randbits(31)
    counter = _Counter(graph, graph.unique_name("counter"), seeded)._variable
    name = {"name": name} if name else {}
    dtype = dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor) and shape.op.type == "Shape":
        return opdef(counter, shape.op.inputs[0], shape=None, dtype=dtype, seed=seed1, seed2=seed2, **name)
    expr = shape_expr(shape)
    if expr is not None and has_refs(expr[0]):  # sizes read from shapes, e.g. [tf.shape(x)[0], 10]
        return opdef(counter, *expr[1], shape=tuple(expr[0]), dtype=dtype, seed=seed1, seed2=seed2, **name)
    value = constant_value(shape) if isinstance(shape, Tensor) else None
    shape = as_shape(expr[0] if expr is not None else value.tolist() if value is not None else shape)
    if not shape.is_fully_defined():
        raise opdef.error(f"shape must be fully defined, tf.shape(t) or sizes read from shapes (tf.shape(t)[i]), "
                          f"got {shape}")
    return opdef(counter, shape=shape, dtype=dtype, seed=seed1, seed2=seed2, **name)


def draw(opdef, shape, dtype, seed, seed2, name):
    """A draw of opdef (RandomUniform, RandomStandardNormal, TruncatedNormal) with the seeds a
    GraphDef's node holds (what import_graph_def builds)."""
    return _draw(opdef, shape, dtype, None, (seed, seed2), name)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (maxval defaults to 1)."""
    graph = get_default_graph()
    with graph.name_scope(name or "random_uniform"):
        u = _draw(RandomUniform, shape, dtype, seed)
        maxval = 1 if maxval is None else maxval
        if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)) and minval == 0 and maxval == 1:
            return u
        minval = convert_to_tensor(minval, dtype=u.dtype)
        return u * (convert_to_tensor(maxval, dtype=u.dtype) - minval) + minval


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    graph = get_default_graph()
    with graph.name_scope(name or "random_normal"):
        x = _draw(RandomStandardNormal, shape, dtype, seed)
        return x * convert_to_tensor(stddev, dtype=x.dtype) + convert_to_tensor(mean, dtype=x.dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values redrawn until within two standard deviations of the mean."""
    graph = get_default_graph()
    with graph.name_scope(name or "truncated_normal"):
        x = _draw(TruncatedNormal, shape, dtype, seed)
        return x * convert_to_tensor(stddev, dtype=x.dtype) + convert_to_tensor(mean, dtype=x.dtype)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """x / keep_prob where a uniform draw keeps it (probability keep_prob), else 0 (TF1's tf.nn.dropout)."""
    if keep_prob is None:
        if rate is None:
            raise build_error("dropout", name, "dropout needs keep_prob (or rate)")
        keep_prob = 1 - rate
    if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
        raise build_error("dropout", name, f"keep_prob must be a scalar tensor or a float in the range (0, 1], got "
                                           f"{keep_prob}")
    graph = get_default_graph()
    with graph.name_scope(name or "dropout"):
        x = convert_to_tensor(x)
        if isinstance(keep_prob, (int, float)) and keep_prob == 1:
            return x
        keep_prob = convert_to_tensor(keep_prob, dtype=x.dtype)
        shape = noise_shape if noise_shape is not None else \
            x.shape if x.shape.is_fully_defined() else array_ops.shape(x)
        keep = math_ops.floor(keep_prob + random_uniform(shape, dtype=x.dtype, seed=seed))
        return x / keep_prob * keep


# ---------------------------------------------------------------- shuffles and categorical draws


def _counter(seed):
    """(the new counter variable, seed1, seed2) of a random op, by TF's seed rules."""
    graph = get_default_graph()
    seed1, seed2 = op_seeds(seed)
    seeded = graph.seed is not None or seed is not None
    return _Counter(graph, graph.unique_name("counter"), seeded)._variable, seed1, seed2


RandomShuffle = OpDef("RandomShuffle", kernel="random_shuffle", differentiable=False, ref_input=0,
                      output_is_ref=False)


@RandomShuffle.shape
def _(counter, x, *, seed, seed2):
    return Spec(x.dtype, x.shape)


RandomShuffle.native_attrs(lambda attrs, ins, outs: {"seed": attrs["seed"], "seed2": attrs["seed2"]})


def random_shuffle(value, seed=None, name=None):
    """value with its slices along the first dimension in a random order (tf.random_shuffle): a
    new order each run, the same sequence of orders for the same graph- and op-level seeds."""
    x = convert_to_tensor(value)
    with x.graph.as_default():
        counter, seed1, seed2 = _counter(seed)
    return RandomShuffle(counter, x, seed=seed1, seed2=seed2, name=name or "RandomShuffle")


Multinomial = OpDef("Multinomial", kernel="multinomial", differentiable=False, ref_input=0, output_is_ref=False)


@Multinomial.shape
def _(counter, logits, *, num_samples, output_dtype, seed, seed2):
    if logits.dtype not in math_ops.FLOATS:
        fail_dtype(f"logits must be float32 or float64, got {logits.dtype.name}")
    if output_dtype not in (dtypes.int32, dtypes.int64):
        fail_dtype(f"output_dtype must be int32 or int64, got {output_dtype.name}")
    if logits.shape.ndims not in (None, 2):
        fail(f"logits should be a matrix [batch_size, num_classes], got shape {logits.shape}")
    if num_samples < 0:
        fail(f"num_samples should be nonnegative, got {num_samples}")
    batch = logits.shape.dims[0] if logits.shape.dims is not None else None
    return Spec(output_dtype, TensorShape([batch, num_samples]))


Multinomial.native_attrs(lambda attrs, ins, outs: {"seed": attrs["seed"], "seed2": attrs["seed2"]})


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """num_samples class indices per row of logits [batch_size, num_classes], drawn with
    probabilities softmax(logits[i]) (tf.multinomial); output_dtype int64 unless given."""
    logits = convert_to_tensor(logits)
    n = array_ops.static_int(num_samples, "num_samples", Multinomial, name)
    with logits.graph.as_default():
        counter, seed1, seed2 = _counter(seed)
    out = dtypes.as_dtype(output_dtype or dtypes.int64)
    return Multinomial(counter, logits, num_samples=n, output_dtype=out, seed=seed1, seed2=seed2,
                       name=name or "Multinomial")


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """tf.random.categorical: multinomial with the output dtype named dtype."""
    return multinomial(logits, num_samples, seed=seed, name=name, output_dtype=dtype)
