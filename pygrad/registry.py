"""OpDef: an op's type, shape rule, gradient and native lowering, declared once in its family file.

    Softmax = OpDef("Softmax", kernel="softmax_fwd")

    @Softmax.shape
    def _(logits, *, axis):            # inputs are Tensors (static shapes) or Specs (concrete shapes)
        return Spec(logits.dtype, logits.shape)

    @Softmax.grad
    def _(op, dy):                     # builds graph ops, one gradient (or None) per input
        return [SoftmaxGrad(op.outputs[0], dy, axis=op.attrs["axis"])]

    @Softmax.native_attrs             # kernel attributes from the op's attributes and concrete shapes
    def _(attrs, ins, outs):
        return {"axis": attrs["axis"] % len(ins[0].shape.dims)}

An op that runs in Python names its stage in the run (BEFORE, BETWEEN or AFTER the plan) and
gives the function; per-op Python values (a py_func's function) are attributes it reads:

    PyFunc = OpDef("PyFunc", host=BETWEEN, differentiable=False)

    @PyFunc.host
    def _(ctx, op, values):           # ctx: state per session, runs in the same session
        return op.attrs["func"](*values)
"""
import contextlib
from collections import namedtuple

from pygrad import _C, errors
from pygrad.graph import Operation, Tensor, build_error, get_default_graph
from pygrad.op_identity import TABLE as TF_IDENTITY
from pygrad.shapes import TensorShape

Spec = namedtuple("Spec", ["dtype", "shape"])
Spec.__doc__ = "What a shape rule works on and returns: a dtype and a TensorShape."

NOT_DIFFERENTIABLE = "not differentiable"

# How an op becomes part of a native plan (see lowering.py).
KERNEL = "kernel"  # one step of OpDef.kernel
ALIAS = "alias"  # output 0 shares input 0's buffer (reshape, identity, ...)
CONST = "const"  # attrs["value"] becomes a constant buffer
FEED = "feed"  # must be fed (placeholders)
VARIABLE = "variable"  # the session's variable buffer
NOOP = "noop"  # no step (groups, no_op)
VALUE = "value"  # output computed in Python from concrete input shapes (shape, size, rank)
CUSTOM = "custom"  # OpDef.lower(ctx, op) emits the steps
HOST = "host"  # no step: the op runs in Python, at its host stage (the default of OpDef(host=...))

# When an op that runs in Python runs, relative to the native plan (OpDef(host=...); see host.py).
# Its OpDef.host function is fn(ctx, op, input values) -> output values, ctx being the run's
# host.HostContext. The session runs such ops around the plan (they are Graph.host_ops), all but
# the pure values: an AFTER op with outputs of its own (a summary) is computed in the plan's run,
# after the plan, on the plan's fetches (host.HostValues), and its function gets no context (None).
BEFORE = "before"  # outputs bound like feeds before the plan (an iterator's next element)
BETWEEN = "between"  # outputs computed from its inputs' values between two plans (py_func, where, unique)
AFTER = "after"  # acts on its inputs' values after the plan (an iterator's initializer, tf.Print, summaries)
HOST_STAGES = (BEFORE, BETWEEN, AFTER)

# The highest rank the native kernels take (csrc/pg/view.h).
MAX_RANK = _C.max_rank

# OpDef(shape_only_inputs=...) of an op with any number of inputs, all read for their shapes but the first.
SHAPE_ONLY_AFTER_FIRST = range(1, 1 << 31)


class RuleError(ValueError):
    """A shape rule's complaint; the builder adds the op's type, name and site."""


class DTypeRuleError(TypeError):
    """A dtype rule's complaint; the builder adds the op's type, name and site."""


class HostError(ValueError):
    """A host function's complaint about its input values; the run raises it as
    InvalidArgumentError naming the op and its site (host.call_host)."""


def fail(message):
    raise RuleError(message)


def fail_dtype(message):
    raise DTypeRuleError(message)


class OpDef:
    all = {}
    # The "op" attribute an elementwise kernel takes (unary_fwd's "exp"): a row of
    # csrc/pg/elementwise.def, checked at import (check_elementwise); None for other ops.
    kernel_op = None

    def __init__(self, type, kernel=None, *, lowering=None, differentiable=True, broadcasting=False,
                 shape_only_inputs=(), ref_input=None, reads_ref=True, output_is_ref=True, initializes=False,
                 host=None):
        if type in OpDef.all:
            raise ValueError(f"op type {type} is defined twice")
        if host not in (None,) + HOST_STAGES:
            raise ValueError(f"{type}: host stage {host!r} is not one of {HOST_STAGES}")
        self.type = type
        self.kernel = kernel
        self.lowering = lowering or (KERNEL if kernel else HOST if host else None)
        self.host_stage = host  # when the op runs in Python (BEFORE, BETWEEN, AFTER), or None
        self.differentiable = differentiable
        self.broadcasting = broadcasting  # gradients.py sums input gradients back to the input's shape
        self.ref_input = ref_input  # index of the variable input this op writes in place
        self.reads_ref = reads_ref  # False for a plain assign: the old value is not read
        self.output_is_ref = output_is_ref  # output 0 is the written variable itself (assign ops)
        self.initializes = initializes  # writing the whole variable initializes it
        # Inputs read for their shape only (their values are never computed for this op): a
        # collection of indices, or SHAPE_ONLY_AFTER_FIRST for every input but the first.
        self.shape_only_inputs = shape_only_inputs
        self.shape_fn = None
        self.grad_fn = None if differentiable else NOT_DIFFERENTIABLE
        self.attrs_fn = None
        self.lower_fn = None
        self.value_fn = None
        self.host_fn = None
        self.tf = TF_IDENTITY.get(type)  # its TensorFlow identity (op_identity.TFOp), None if the table lacks it
        OpDef.all[type] = self

    # ---- declaration decorators ----
    def shape(self, fn):
        self.shape_fn = fn
        return fn

    def grad(self, fn):
        if not self.differentiable:
            raise ValueError(f"{self.type} is declared not differentiable")
        self.grad_fn = fn
        return fn

    def native_attrs(self, fn):
        self.attrs_fn = fn
        return fn

    def lower(self, fn):
        self.lower_fn = fn
        return fn

    def value(self, fn):
        self.value_fn = fn
        return fn

    def host(self, fn):
        """fn(ctx, op, input values) -> output values (None for none), run in Python at the op's
        host stage; it raises HostError for bad values."""
        self.host_fn = fn
        return fn

    # ---- building ----
    def error(self, rule, name=None, cls=ValueError):
        """An error of this op's wrapper, raised before the op is built (see graph.build_error)."""
        return build_error(self.type, name, rule, cls)

    def infer(self, inputs, attrs, *, name, site):
        """Runs the shape rule; errors name the op, the rule and the site."""
        try:
            specs = self.shape_fn(*inputs, **attrs)
        except RuleError as e:
            raise ValueError(errors.op_message(self.type, name, str(e), site)) from None
        except DTypeRuleError as e:
            raise TypeError(errors.op_message(self.type, name, str(e), site)) from None
        specs = [specs] if isinstance(specs, Spec) else list(specs)
        for i, s in enumerate(specs):
            rank = s.shape.ndims if isinstance(s.shape, TensorShape) else len(s.shape)
            if rank is not None and rank > MAX_RANK:
                raise ValueError(errors.op_message(self.type, name, f"output {i} of shape {TensorShape(s.shape)} has "
                                                   f"rank {rank}, above {MAX_RANK}, the most pygrad supports", site))
        return specs

    def __call__(self, *inputs, name=None, **attrs):
        """Adds an op of this type to the inputs' graph; returns its output(s), or the op if none."""
        graph = inputs[0].graph if inputs else get_default_graph()
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"{self.type}: inputs must be Tensors, got {type(t).__name__}")
            if t.graph is not graph:
                raise ValueError(f"{self.type}: {t.name} must be from the same graph as {inputs[0].name}")
        # A name ending in '/' is a scope name used verbatim (TF's rule, used by Variable).
        full_name = name[:-1] if name and name.endswith("/") else graph.unique_name(name or self.type)
        site = errors.user_site()
        specs = self.infer(inputs, attrs, name=full_name, site=site)
        # An op writing a variable goes where the variable is (TF colocates an op with its ref inputs).
        ref = inputs[self.ref_input].op if self.ref_input is not None else None
        with graph.colocate_with(ref) if ref is not None and graph.holds_variable(ref) else contextlib.nullcontext():
            op = Operation(graph, self, full_name, inputs, attrs,
                           [(s.dtype, s.shape if isinstance(s.shape, TensorShape) else TensorShape(s.shape))
                            for s in specs], site)
        if self.host_stage is not None and not (self.host_stage == AFTER and self.lowering == HOST and op.outputs):
            graph.host_ops.append(op)  # the session runs it around the plan (host.plan_host_run)
        if not op.outputs:
            return op
        return op.outputs[0] if len(op.outputs) == 1 else op.outputs


def check_registry():
    """Every op has a shape rule, every differentiable op a gradient, every kernel op a kernel,
    every host op a host function, and every op an entry in the op-identity table, which names no
    other op."""
    kernels = set(_C.kernel_names())
    problems = []
    for t, d in OpDef.all.items():
        if d.shape_fn is None:
            problems.append(f"{t} has no shape rule")
        if d.grad_fn is None:
            problems.append(f"{t} is differentiable but has no gradient")
        if d.lowering is None:
            problems.append(f"{t} has no lowering")
        if d.lowering == KERNEL and d.kernel not in kernels:
            problems.append(f"{t} names kernel {d.kernel!r}, which is not in kernels.def")
        if d.lowering == CUSTOM and d.lower_fn is None:
            problems.append(f"{t} has custom lowering but no lower function")
        if d.lowering == VALUE and d.value_fn is None:
            problems.append(f"{t} is computed from shapes but has no value function")
        if d.lowering == HOST and d.host_stage is None:
            problems.append(f"{t} is lowered as a host op but has no host stage")
        if d.host_stage is not None and d.host_fn is None:
            problems.append(f"{t} runs on the host but has no host function")
        if d.tf is None:
            problems.append(f"{t} has no entry in op_identity.TABLE")
    problems += [f"op_identity.TABLE has an entry for {t}, which is no op type"
                 for t in TF_IDENTITY if t not in OpDef.all]
    native = _C.elementwise_ops()
    problems += check_elementwise(elementwise_table(native), native)
    if problems:
        raise RuntimeError("pygrad op registry is inconsistent:\n  " + "\n  ".join(problems))


def elementwise_table(kernels):
    """{kernel: {op name: [types of the ops that give the kernel that name]}} of the ops that run on
    one of kernels (the elementwise ones) or name a kernel_op; the name is None for an op of an
    elementwise kernel that names none."""
    table = {}
    for t, d in OpDef.all.items():
        if d.kernel_op is not None or d.lowering == KERNEL and d.kernel in kernels:
            table.setdefault(d.kernel, {}).setdefault(d.kernel_op, []).append(t)
    return table


def check_elementwise(table, native):
    """The problems between pygrad's elementwise op table (elementwise_table) and the native one,
    native (_C.elementwise_ops(): csrc/pg/elementwise.def), both ways: an op that names an op its
    kernel does not have, or none, and a row of elementwise.def that no op uses."""
    problems = []
    for kernel, ops in table.items():
        have = native.get(kernel)
        for name, types in ops.items():
            if have is None:
                problems.append(f"kernel {kernel!r} takes no op, but {', '.join(types)} give it {name!r} "
                                f"(csrc/pg/elementwise.def's kernels: {', '.join(sorted(native))})")
            elif name is None:
                problems.append(f"{kernel} needs an op name, none given by {', '.join(types)} (OpDef.kernel_op)")
            elif name not in have:
                problems.append(f"{kernel} has no op {name!r} (csrc/pg/elementwise.def), but {', '.join(types)} "
                                f"name it")
    for kernel, names in native.items():
        for name in names:
            if name not in table.get(kernel, {}):
                problems.append(f"csrc/pg/elementwise.def's {kernel} op {name!r} is used by no op")
    return problems
