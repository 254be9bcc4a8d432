"""check_numerics and add_check_numerics_ops: a NaN or an Inf fails the run, naming the op, its
message and the line that built it."""
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.ops.state_ops import group
from pygrad.registry import CUSTOM, OpDef, Spec, fail_dtype

CheckNumerics = OpDef("CheckNumerics", lowering=CUSTOM)


@CheckNumerics.shape
def _(x, *, message):
    if not x.dtype.is_floating:
        fail_dtype(f"tensor must be floating point, got {x.dtype.name}")
    return Spec(x.dtype, x.shape)


@CheckNumerics.grad
def _(op, dy):
    return [check_numerics(dy, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                               + op.attrs["message"])]


@CheckNumerics.lower
def _(ctx, op):
    ctx.step("check_numerics", [ctx.operand(op.inputs[0])], [], {"message": op.attrs["message"]})
    ctx.alias(op.outputs[0], op.inputs[0])


def check_numerics(tensor, message, name=None):
    """tensor itself, after checking it: a NaN or an Inf in it fails the run with InvalidArgumentError
    "<message> : Tensor had NaN values" (or Inf values), naming this op and the line that built it.
    The gradient is checked the same way."""
    return CheckNumerics(convert_to_tensor(tensor), message=str(message), name=name or "CheckNumerics")


def add_check_numerics_ops():
    """A check_numerics for every floating-point tensor the default graph holds so far, each named
    by its tensor ("op:index"), chained one after the other as TF does; returns the op running them
    all."""
    graph = get_default_graph()
    check = []
    for op in list(graph.get_operations()):
        for t in op.outputs:
            if t.dtype.is_floating:
                with graph.control_dependencies(check):
                    check = [check_numerics(t, f"{op.name}:{t.value_index}").op]
    return group(*check)
