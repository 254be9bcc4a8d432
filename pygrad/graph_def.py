"""A pygrad Graph as TensorFlow's GraphDef (graph.proto; the messages of pygrad.tf_protos): what
TensorFlow's tf.import_graph_def builds and runs with pygrad's numbers, what TensorBoard's graph
tab reads from an event file, and what a checkpoint's .meta file holds.

Each Operation is written through its op-identity entry (op.opdef.tf; see pygrad/op_identity.py):
TF's op type; its attributes renamed; those TF takes as inputs written as Const nodes named under
the op ("Reshape/shape", as TF's wrappers name them); the derived attributes (T, Tidx, N, ...)
from its inputs' and outputs' dtypes; its inputs in TF's order, an input read for its shape only
as TF computes that shape (a Const where the graph knows it, else a Shape node; sizes read from
other tensors' shapes as Shape, StridedSlice and Pack). An op TF has no op for (a gradient
helper, a fused update) is written as the TF ops that compute the same value
(graph_def_compose.py), the last of them carrying the op's name, so every pygrad tensor name
names the same value in TensorFlow. Inputs are "op" for output 0, "op:1" for others and "^op"
for control inputs, after the data inputs; with add_shapes, "_output_shapes" lists the static
shapes of a node's outputs, as TF's `Graph.as_graph_def(add_shapes=True)` writes them.

Conds and loops (If and While, with their regions' ops) are written as TF1's dataflow control
flow by graph_def_control_flow.py. An update of a variable waits (control inputs) for the readers
pygrad runs before it (_reads_before_writes). What TF holds as Python (py_func, dataset
iterators) raises NotExportableError naming the op; with picture=True (TensorBoard's graph tab)
such an op is written as a node of its type with its inputs, for the picture only.
"""
import numpy as np

from pygrad import messages
from pygrad.dtypes import DType, as_dtype, int32
from pygrad.graph_def_compose import COMPOSE
from pygrad.graph_def_control_flow import CONTROL_FLOW, outer_controls, own_name
from pygrad.shapes import TensorShape

# The GraphDef version TensorFlow 1.15 writes (core/public/version.h: TF_GRAPH_DEF_VERSION).
PRODUCER = 134

# TF inputs whose order is not pygrad's inputs, then the moved attributes, then the derived
# inputs (TF's OpDefs; tests/test_graph_def_export.py checks every entry against them).
TF_INPUT_ORDER = {
    "ApplyCenteredRMSProp": "var mg ms mom lr rho momentum epsilon grad",
    "SparseApplyCenteredRMSProp": "var mg ms mom lr rho momentum epsilon grad indices",
    "ApplyFtrlV2": "var accum linear grad lr l1 l2 l2_shrinkage lr_power",
    "Range": "start limit delta",
    "ReluGrad": "gradients features",
    "ScatterNd": "indices updates shape",
    "Split": "split_dim value",
    "StridedSliceGrad": "shape begin end strides dy",
}
# The type attribute of a TF input that is not int32 (the dtype its Const or Shape node gets).
TF_INPUT_TYPE = {("Fill", "value"): "T", ("OneHot", "on_value"): "T", ("OneHot", "off_value"): "T",
                 ("PadV2", "constant_values"): "T", ("Range", "start"): "Tidx", ("Range", "delta"): "Tidx",
                 ("ScatterNd", "shape"): "Tindices", ("InTopKV2", "k"): "T"}
# Derived sources that are not dtypes, counts or shapes: what TF holds as functions or Python.
_UNEXPORTABLE_SOURCES = {
    "regions": "TF takes a cond's branches and a loop's condition and body as functions of the GraphDef's "
               "library, which pygrad does not write",
    "host": "it runs Python (a function, a dataset), which TensorFlow cannot run from a GraphDef",
}


class NotExportableError(ValueError):
    """An op TensorFlow cannot run from a GraphDef as pygrad would write it."""


def graph_def(graph, add_shapes=False, from_version=None, picture=False):
    """The GraphDef (pygrad.tf_protos.GraphDef) of graph's ops, of those added since its version
    was from_version if given; serialize it with .SerializeToString(). picture: write the ops TF
    cannot run (NotExportableError) as plain nodes, for TensorBoard."""
    writer = _Writer(graph, add_shapes)
    ops = graph.get_operations()[from_version or 0:]
    hidden = _hidden_state(ops)
    writer.before = _reads_before_writes(ops)
    for op in ops:
        if op not in hidden and op._control_flow_context is None:  # a region's ops: written by its If or While
            writer.write(op, picture, writer.before.get(op, ()))
    return writer.graph_def


def _slot_specs(op):
    """What each of op's inputs is to TF per its entry's `ins`: a TF input name, "shape:name",
    "-" (pygrad's own) or "-*" (pygrad's own, a tensor whose sizes an attribute reads); None where
    the entry has no `ins`."""
    ins = op.opdef.tf.ins
    if ins is None:
        return [None] * len(op.inputs)
    fixed = [s for s in ins if not s.endswith("*")]
    star = ins[-1] if ins[-1].endswith("*") else None
    return [fixed[i] if i < len(fixed) else star for i in range(len(op.inputs))]


def _hidden_state(ops):
    """The variables only pygrad's own inputs read (a random op's stream counter): TF keeps that
    state in the kernel, so they are not written."""
    read, own = set(), set()
    for op in ops:
        if op.opdef.tf.type is None:
            read.update(t.op for t in op.inputs)
            continue
        for t, spec in zip(op.inputs, _slot_specs(op)):
            (own if spec == "-" else read).add(t.op)
    return {op for op in own - read if op.type == "VariableV2"}


def _reads_before_writes(ops):
    """{writer: the readers of its variable it is to wait for}: pygrad runs a variable's readers
    before its writers unless they depend on the write (lowering.schedule), so that
    sess.run([loss, train]) reads the old value; TF orders nothing it is not told to (TF1's
    optimizers gate their gradients for this). A writer that reads its variable (an update, not
    an Assign, which may be its initializer) waits (a control input) for each reader of it that it
    neither feeds nor depends on and that can run whenever it does: a stateless op whose other
    inputs are constants or what the writer depends on."""
    index = {op: i for i, op in enumerate(ops)}
    preds = {op: [p for p in (*(t.op for t in op.inputs), *op.control_inputs,
                              *(outer_controls(op) if op.type in CONTROL_FLOW else ())) if p in index] for op in ops}
    succ = {op: [] for op in ops}
    for op in ops:
        for p in preds[op]:
            succ[p].append(op)
    before, after = _closure(_topological(ops, preds), preds, index), _closure(_topological(ops, succ), succ, index)
    readers = {}
    for op in ops:
        for t in op.inputs:
            if t.op.type == "VariableV2":
                readers.setdefault(t.op, []).append(op)

    def precedes(a, b):
        return a in index and before[b] >> index[a] & 1

    order = {}
    for w in ops:
        if w.opdef.ref_input is None or not w.opdef.reads_ref:  # an Assign may be the initializer
            continue
        var = w.inputs[w.opdef.ref_input].op
        order[w] = [r for r in readers.get(var, ()) if r is not w and not precedes(r, w) and not precedes(w, r)
                    and r.opdef.ref_input is None and r.opdef.host_stage is None
                    and all(precedes(t.op, w) or t.op is var or t.op.type == "Const" for t in r.inputs)]
    return order


def _topological(ops, preds):
    """ops ordered so that each comes after its preds (depth first, iterative)."""
    order, done, stack = [], set(), [(op, False) for op in reversed(ops)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
        elif op not in done:
            done.add(op)
            stack.append((op, True))
            stack.extend((p, False) for p in preds[op] if p not in done)
    return order


def _closure(order, preds, index):
    """{op: the bit set (bit index[p]) of every op it reaches through preds}, in one pass over order."""
    bits = {}
    for op in order:
        b = 0
        for p in preds[op]:
            b |= bits[p] | 1 << index[p]
        bits[op] = b
    return bits


# ---------------------------------------------------------------- attribute values


def shape_proto(shape, message):
    """Fills a TensorShapeProto message (messages.shape_proto's bytes) from a TensorShape or a
    list of dims (None: unknown)."""
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    message.SetInParent()  # a scalar's shape is an empty message, present
    message.MergeFromString(messages.shape_proto(None if shape.dims is None else shape.as_list()).SerializeToString())
    return message


def tensor_proto(value, dtype, message):
    """Fills a TensorProto message (messages.tensor_proto's bytes) with a NumPy value of dtype."""
    message.MergeFromString(messages.tensor_proto(np.asarray(value), as_dtype(dtype).name).SerializeToString())
    return message


def _field(value):
    """(AttrValue field, the value as the field holds it) of one attribute value."""
    if isinstance(value, (bool, np.bool_)):
        return "b", bool(value)
    if isinstance(value, (int, np.integer)):
        return "i", int(value)
    if isinstance(value, (float, np.floating)):
        return "f", float(value)
    if isinstance(value, str):
        return "s", value.encode("utf-8")
    if isinstance(value, bytes):
        return "s", value
    if isinstance(value, DType):
        return "type", messages.DATA_TYPE[value.name]
    if isinstance(value, TensorShape):
        return "shape", value
    if isinstance(value, np.ndarray):
        return "tensor", value
    raise TypeError(f"no TF attribute value for {value!r}")


def _array_dtype(value):
    return "string" if value.dtype.kind in "OSU" else value.dtype.name


def set_attr(message, value):
    """Fills an AttrValue message with a Python value: a number, bool, string, DType,
    TensorShape, NumPy array, or a list of one kind of them."""
    if isinstance(value, (list, tuple)):
        message.list.SetInParent()
        for item in value:
            kind, v = _field(item)
            if kind == "shape":
                shape_proto(v, message.list.shape.add())
            elif kind == "tensor":
                tensor_proto(v, _array_dtype(v), message.list.tensor.add())
            else:
                getattr(message.list, kind).append(v)
        return message
    kind, v = _field(value)
    if kind == "shape":
        shape_proto(v, message.shape)
    elif kind == "tensor":
        tensor_proto(v, _array_dtype(v), message.tensor)
    else:
        setattr(message, kind, v)
    return message


# ---------------------------------------------------------------- the writer


class _Writer:
    """Adds the NodeDefs of ops to one GraphDef; the helpers graph_def_compose.py writes with."""

    unexportable = NotExportableError

    def __init__(self, graph, add_shapes):
        from pygrad import tf_protos
        self.graph_def = tf_protos.GraphDef()
        self.graph_def.versions.producer = PRODUCER
        self.add_shapes = add_shapes
        self.taken = {op.name for op in graph.get_operations()}
        self.op = None  # the op being written: its device goes on every node written for it
        self.controls = []  # "^name" inputs of every node written for it: its control inputs, the readers it waits for
        self.before = {}  # {op: the readers it waits for} (_reads_before_writes)
        self.ctx = None  # the cond branch or loop region being written (graph_def_control_flow.Context)
        self.anchor = None  # a node of that region: the control input of its nodes that read nothing of it
        self.invariants = set()  # the loop invariants (Enter nodes with is_constant) of the frames written
        self.stacks = {}  # {("stack", gradient region, tensor): the StackV2 of its values}

    # ---- nodes
    def node(self, type, name, inputs=(), attrs=None, shapes=None, exact=False):
        """Adds a node (a unique name from name, or name itself if exact); returns its name."""
        if not exact:
            name = self.unique(name)
        node = self.graph_def.node.add(name=name, op=type, input=list(inputs))
        if self.anchor is not None and all(i in self.invariants for i in inputs):
            node.input.append(f"^{self.anchor}")  # else it would run outside its branch, or once per frame
        node.input.extend(self.controls)
        if self.op is not None:
            node.device = self.op.device if isinstance(self.op.device, str) else ""
        for key, value in (attrs or {}).items():
            set_attr(node.attr[key], value)
        if self.add_shapes and shapes is not None:
            set_attr(node.attr["_output_shapes"], [TensorShape(s) for s in shapes])
        return name

    def unique(self, name):
        """name, or name_1, name_2, ... if a node has it."""
        candidate, i = name, 0
        while candidate in self.taken:
            i += 1
            candidate = f"{name}_{i}"
        self.taken.add(candidate)
        return candidate

    def scoped(self, suffix):
        return f"{self.op.name}/{suffix}"

    def tensor(self, t):
        """The TF name of a pygrad tensor (composed ops end in a node of the op's name) where the
        region being written reads it."""
        return own_name(t) if self.ctx is None else self.ctx.name(t)

    def const(self, value, dtype, name):
        value = np.asarray(value, dtype=as_dtype(dtype).np)
        return self.node("Const", name, attrs={"value": value, "dtype": as_dtype(dtype)}, shapes=[value.shape])

    def add(self, type, inputs, attrs=None, name=None):
        """A node under the op's name (name, or its type), for a composition."""
        return self.node(type, self.scoped(name or type), [i if isinstance(i, str) else self.tensor(i)
                                                           for i in inputs], attrs)

    # ---- shapes as TF computes them
    def shape_of(self, t, name, dtype=int32):
        """t's shape as an input: a Const if the graph knows it (as TF's array_ops.shape), else Shape."""
        if t.shape.is_fully_defined():
            return self.const(t.shape.as_list(), dtype, name)
        return self.node("Shape", name, [self.tensor(t)], {"T": t.dtype, "out_type": as_dtype(dtype)},
                         shapes=[[t.shape.ndims]])

    def dim(self, t, axis, name, dtype=int32):
        """Dimension axis of t as a scalar input: a Const if the graph knows it, else tf.shape(t)[axis]."""
        known = t.shape.dims[axis] if t.shape.dims is not None else None
        if known is not None:
            return self.const(known, dtype, name)
        return self.dim_of(self.tensor(t), t.dtype, axis, name, dtype)

    def dim_of(self, tensor, tensor_dtype, axis, name, dtype=int32):
        """tf.shape(tensor)[axis] of a TF tensor name: Shape, then StridedSlice."""
        shape = self.node("Shape", name + "/Shape", [tensor], {"T": tensor_dtype, "out_type": as_dtype(dtype)})
        bounds = [self.const([v], int32, f"{name}/stack{s}") for v, s in ((axis, ""), (axis + 1, "_1"), (1, "_2"))]
        return self.node("StridedSlice", name, [shape, *bounds],
                         {"T": as_dtype(dtype), "Index": int32, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                          "new_axis_mask": 0, "shrink_axis_mask": 1}, shapes=[[]])

    def dims(self, dims, name, dtype=int32):
        """A shape vector input from dims: ints, and (tensor, axis) for sizes read from shapes (a
        Const if all are ints, else TF's Pack of scalars)."""
        if all(not isinstance(d, tuple) for d in dims):
            return self.const([int(d) for d in dims], dtype, name)
        items = [self.dim(d[0], d[1], f"{name}/{i}", dtype) if isinstance(d, tuple) else
                 self.const(int(d), dtype, f"{name}/{i}") for i, d in enumerate(dims)]
        return self.node("Pack", name, items, {"N": len(items), "T": as_dtype(dtype), "axis": 0},
                         shapes=[[len(items)]])

    # ---- ops
    def write(self, op, picture, waits=(), controls=None):
        """Writes op's nodes; controls: their control inputs (op's and waits', if None)."""
        saved = self.op, self.controls
        self.op = op
        self.controls = [f"^{c.name}" for c in [*op.control_inputs, *waits]] if controls is None else controls
        written, stacks = len(self.graph_def.node), dict(self.stacks)
        try:
            compose = COMPOSE.get(op.type) or CONTROL_FLOW.get(op.type)
            if compose is not None:
                outs = compose(self, op)
            elif op.opdef.tf.type is None:
                raise NotExportableError(op.error(f"TF has no op for {op.type}, and pygrad writes none: "
                                                  f"{op.opdef.tf.note}"))
            else:
                outs = self.mapped(op)
            if outs != _output_names(op):  # a composition's outputs, given op's name
                self.node("IdentityN" if len(outs) > 1 else "Identity", op.name, outs,
                          {"T": [t.dtype for t in op.outputs] if len(outs) > 1 else op.outputs[0].dtype},
                          [t.shape for t in op.outputs], exact=True)
        except NotExportableError:
            if not picture:
                raise
            del self.graph_def.node[written:]  # what was written of it before the error
            self.stacks = stacks
            self.picture(op)
        finally:
            self.op, self.controls = saved

    def final(self, type, inputs, attrs=None):
        """The last node of a composition: named op.name, with op's output shapes; returns op's output names."""
        self.node(type, self.op.name, [i if isinstance(i, str) else self.tensor(i) for i in inputs], attrs,
                  [t.shape for t in self.op.outputs] or None, exact=True)
        return _output_names(self.op)

    def picture(self, op):
        """A node of op's type (TF's if it has one) with its inputs and its attributes that have a
        TF value: TensorBoard's picture of an op TF cannot run from this GraphDef."""
        self.node(op.opdef.tf.type or op.type, op.name, [self.tensor(t) for t in op.inputs],
                  {k: v for k, v in op.attrs.items() if _has_attr_value(v)}, [t.shape for t in op.outputs] or None,
                  exact=True)

    def mapped(self, op, tf_type=None, attrs=None, drop=(), replace=None):
        """Writes op as its entry's TF op (tf_type, if given, for another of its `also` types);
        attrs: more TF attributes; drop: moved attributes TF's type does not take; replace:
        {input index: the TF name of what that input is to be}. Returns op's outputs' TF names."""
        e = op.opdef.tf
        tf_type = tf_type or e.type
        attrs = dict(attrs or {})
        for key, value in op.attrs.items():
            if key in e.attrs and value is not None:
                attrs.setdefault(e.attrs[key], value)
        inputs, refs, derived_inputs = [], [], []
        for name, source in e.derived.items():
            if source in _UNEXPORTABLE_SOURCES:
                raise NotExportableError(op.error(f"{op.type} is not exported as TF's {tf_type}: "
                                                  f"{_UNEXPORTABLE_SOURCES[source]}"))
            if source == "dim":
                derived_inputs.append(name)
            else:
                attrs[name] = _derived(op, source)
        replace = replace or {}
        for i, (t, spec) in enumerate(zip(op.inputs, _slot_specs(op))):
            if spec == "-*":
                refs.append(t)
            elif spec == "-":
                continue
            elif spec is not None and spec.startswith("shape:"):
                name = spec[len("shape:"):]
                inputs.append((name, self.shape_of(t, self.scoped(name), self._input_type(tf_type, name, attrs))))
            else:
                inputs.append((spec, replace[i] if i in replace else self.tensor(t)))
        for key, name in e.inputs.items():
            if name in drop:
                continue
            inputs.append((name, self._moved(op, key, name, self._input_type(tf_type, name, attrs), refs)))
        for name in derived_inputs:  # "dim": dimension `axis` of input 0 (Range's limit)
            inputs.append((name, self.dim(op.inputs[0], op.attrs["axis"], self.scoped(name), attrs.get("Tidx", int32))))
        order = TF_INPUT_ORDER.get(tf_type)
        if order:
            named = {n: v for n, v in inputs if n is not None}
            unnamed = iter([v for n, v in inputs if n is None])
            inputs = [(n, named[n] if n in named else next(unnamed)) for n in order.split()]
        self.node(tf_type, op.name, [v for _, v in inputs], attrs, [t.shape for t in op.outputs] or None, exact=True)
        return _output_names(op)

    @staticmethod
    def _input_type(tf_type, name, attrs):
        key = TF_INPUT_TYPE.get((tf_type, name))
        return attrs[key] if key else int32

    def _moved(self, op, key, name, dtype, refs):
        """The input a moved attribute becomes: a Const of its value or, for an op whose dims may
        read sizes of its `-*` inputs, the shape vector of dims ((k, axis): dimension axis of
        refs[k]); a None value is TF's default: all of input 0's axes to reduce, its axes
        reversed to transpose (computed from its rank where the graph does not know it), refs[0]'s
        shape for a random op's shape."""
        value = op.attrs[key]
        node_name = self.scoped(name)
        if value is None and name == "shape":
            return self.shape_of(refs[0], node_name, dtype)
        if value is None and op.inputs[0].shape.ndims is None:
            return self._axes_of(op.inputs[0], node_name, reverse=name == "perm")
        if value is None:
            value = list(range(op.inputs[0].shape.ndims))[::-1 if name == "perm" else 1]
        if isinstance(value, TensorShape):
            value = value.as_list()
        if op.opdef.tf.ins and op.opdef.tf.ins[-1] == "-*" and isinstance(value, (list, tuple)):
            return self.dims([(refs[d[0]], d[1]) if isinstance(d, tuple) else d for d in value], node_name, dtype)
        return self.const(value, dtype, node_name)


    def _axes_of(self, x, name, reverse):
        """All axes of x, whose rank the graph does not know: range(rank(x)) (TF's _ReductionDims),
        reversed as (rank - 1) - range(rank) (TF's transpose without perm)."""
        rank = self.node("Rank", name + "/Rank", [self.tensor(x)], {"T": x.dtype})
        zero, one = self.const(0, int32, name + "/start"), self.const(1, int32, name + "/delta")
        if not reverse:
            return self.node("Range", name, [zero, rank, one], {"Tidx": int32})
        axes = self.node("Range", name + "/Range", [zero, rank, one], {"Tidx": int32})
        last = self.node("Sub", name + "/sub", [rank, one], {"T": int32})
        return self.node("Sub", name, [last, axes], {"T": int32})


def _output_names(op):
    return [op.name if i == 0 else f"{op.name}:{i}" for i in range(len(op.outputs))]


def _has_attr_value(value):
    try:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            _field(item)
        return True
    except TypeError:
        return False


def _derived(op, source):
    """The value of a derived TF attribute (op_identity.DERIVED)."""
    if source.startswith("in") and source[2:].isdigit():
        return op.inputs[int(source[2:])].dtype
    if source.startswith("out") and source[3:].isdigit():
        return op.outputs[int(source[3:])].dtype
    if source == "inN":
        return op.inputs[op.attrs["N"]].dtype
    values = {"ins": lambda: [t.dtype for t in op.inputs], "ins1:": lambda: [t.dtype for t in op.inputs[1:]],
              "outs": lambda: [t.dtype for t in op.outputs], "out_shapes": lambda: [t.shape for t in op.outputs],
              "n_ins": lambda: len(op.inputs), "n_outs": lambda: len(op.outputs),
              "int32": lambda: as_dtype("int32"), "int64": lambda: as_dtype("int64")}
    if source not in values:
        raise NotExportableError(op.error(f"{op.type}'s TF form takes {source!r} (op_identity.DERIVED), which pygrad "
                                          f"does not write"))
    return values[source]()
