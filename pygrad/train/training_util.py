"""The global step and learning-rate schedules."""
import logging

from pygrad import dtypes
from pygrad.graph import GraphKeys, TensorLike, get_default_graph
from pygrad.ops import math_ops
from pygrad.ops.array_ops import cast, convert_to_tensor
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.manip_ops import where
from pygrad.ops.variable_scope import get_variable


_log = logging.getLogger("pygrad")


def assert_global_step(global_step_tensor):
    """TypeError unless global_step_tensor is a scalar (or unknown-shaped) integer Variable or Tensor."""
    if not isinstance(global_step_tensor, TensorLike):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype.name}')
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def get_global_step(graph=None):
    """The one member of the GLOBAL_STEP collection, else the variable (or tensor) named
    'global_step:0'; None when there is neither, or (logged as an error) when the collection holds
    several. TypeError when it is not a scalar integer."""
    graph = graph or get_default_graph()
    steps = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) > 1:
        _log.error("Multiple tensors in global_step collection.")
        return None
    if steps:
        step = steps[0]
    else:
        try:
            step = graph.get_tensor_by_name(GraphKeys.GLOBAL_STEP + ":0")
        except KeyError:
            return None
        step = next((v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) if v.op is step.op), step)
    assert_global_step(step)
    return step


def create_global_step(graph=None):
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    # As TF: get_variable outside any name scope, so the name follows the variable scope only
    # ('global_step', or 'train/global_step' inside variable_scope('train')).
    with graph.as_default(), graph.name_scope(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64, initializer=zeros_initializer(),
                            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The graph's int64 global_step variable (in the GLOBAL_STEP collection), created at 0 if missing."""
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps); the exponent floored if staircase."""
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    with get_default_graph().name_scope(name or "ExponentialDecay"):
        lr = convert_to_tensor(learning_rate, preferred_dtype="float32", name="learning_rate")
        step = cast(global_step, lr.dtype)
        p = step / cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(cast(convert_to_tensor(decay_rate), lr.dtype), p))


def global_step(sess, global_step_tensor):
    """The global step's value in sess, as an int."""
    return int(sess.run(global_step_tensor))


def _schedule_inputs(learning_rate, global_step, name, **numbers):
    """(learning rate tensor, step as its dtype, {name: number as its dtype}) of a schedule."""
    if global_step is None:
        raise ValueError(f"global_step is required for {name}.")
    lr = convert_to_tensor(learning_rate, preferred_dtype="float32", name="learning_rate")
    return lr, cast(global_step, lr.dtype), {k: cast(convert_to_tensor(v), lr.dtype) for k, v in numbers.items()}


def _progress(step, decay_steps, staircase):
    p = step / decay_steps
    return math_ops.floor(p) if staircase else p


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (the ratio floored if staircase)."""
    with get_default_graph().name_scope(name or "NaturalExpDecay"):
        lr, step, n = _schedule_inputs(learning_rate, global_step, "natural_exp_decay", decay_steps=decay_steps,
                                       decay_rate=decay_rate)
        return lr * math_ops.exp(-n["decay_rate"] * _progress(step, n["decay_steps"], staircase))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (the ratio floored if staircase)."""
    with get_default_graph().name_scope(name or "InverseTimeDecay"):
        lr, step, n = _schedule_inputs(learning_rate, global_step, "inverse_time_decay", decay_steps=decay_steps,
                                       decay_rate=decay_rate)
        return lr / (1.0 + n["decay_rate"] * _progress(step, n["decay_steps"], staircase))


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                     name=None):
    """(lr - end) * (1 - step / decay_steps) ** power + end, with step capped at decay_steps; with
    cycle, decay_steps grows to the next multiple of itself past the step instead (TF's rule)."""
    with get_default_graph().name_scope(name or "PolynomialDecay"):
        lr, step, n = _schedule_inputs(learning_rate, global_step, "polynomial_decay", decay_steps=decay_steps,
                                       end=end_learning_rate, power=power)
        steps = n["decay_steps"]
        if cycle:
            multiplier = math_ops.maximum(math_ops.ceil(step / steps), 1.0)  # 1 at step 0, as TF's cond gives
            steps = steps * multiplier
        else:
            step = math_ops.minimum(step, steps)
        return (lr - n["end"]) * math_ops.pow(1.0 - step / steps, n["power"]) + n["end"]


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)."""
    with get_default_graph().name_scope(name or "CosineDecay"):
        lr, step, n = _schedule_inputs(learning_rate, global_step, "cosine_decay", decay_steps=decay_steps,
                                       alpha=alpha)
        step = math_ops.minimum(step, n["decay_steps"])
        cosine = 0.5 * (1.0 + math_ops.cos(3.141592653589793 * step / n["decay_steps"]))
        return lr * ((1.0 - n["alpha"]) * cosine + n["alpha"])


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] past the last boundary. Boundaries take x's dtype (int32 ones widen to int64)."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with get_default_graph().name_scope(name or "PiecewiseConstant"):
        x = convert_to_tensor(x)
        bounds = [convert_to_tensor(b) for b in boundaries]
        for i, b in enumerate(bounds):
            if b.dtype != x.dtype:
                if not (b.dtype.is_integer and x.dtype.is_integer):
                    raise ValueError(f"Boundaries ({b.dtype.name}) must have the same dtype as x ({x.dtype.name}).")
                bounds[i] = cast(b, x.dtype)
        vals = [convert_to_tensor(v) for v in values]
        if any(v.dtype != vals[0].dtype for v in vals):
            raise ValueError(f"Values must have elements all with the same dtype ({[v.dtype.name for v in vals]}).")
        out = vals[-1]
        for b, v in reversed(list(zip(bounds, vals))):
            out = where(math_ops.less_equal(x, b), v, out)
        return out
