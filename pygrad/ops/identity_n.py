"""tf.identity_n: several tensors passed through one op, whose outputs are its inputs (TF's
IdentityN). A GraphDef names a multi-output value of pygrad's (a cond's or a loop's outputs, written
as several Merge or Exit nodes) by one IdentityN node of its op's name; importing it builds this op."""
from pygrad.ops.array_ops import convert_to_tensor
from pygrad.registry import CUSTOM, OpDef, Spec

IdentityN = OpDef("IdentityN", lowering=CUSTOM)


@IdentityN.shape
def _(*xs):
    return [Spec(x.dtype, x.shape) for x in xs]


@IdentityN.lower
def _(ctx, op):
    for i, t in enumerate(op.inputs):
        ctx.copy(ctx.operand(t), ctx.output(i))


@IdentityN.grad
def _(op, *dys):
    return list(dys)


def identity_n(input, name=None):
    """TF's tf.identity_n: a list of tensors, each the value of the one at its position in input."""
    xs = [convert_to_tensor(x) for x in input]
    if not xs:
        raise IdentityN.error("input must hold at least one tensor", name)
    return list(IdentityN(*xs, name=name or "IdentityN"))
