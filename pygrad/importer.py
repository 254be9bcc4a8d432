"""tf.import_graph_def: a TensorFlow GraphDef (a frozen inference graph) built into the default
graph as pygrad ops, with TF's semantics: names under `name` ("import" by default, "" for none),
input_map replacing inputs, return_elements, control inputs, nodes in any order.

Each NodeDef becomes the pygrad ops that _BUILD names for its TF type; the result keeps the node's
name (an Identity of that name where the pygrad op that computes it has another). All checks
(op types, input_map keys, inputs that name no node) run before the first op is built, and the
ops are built under a scope that rolls the graph back if building fails, so nothing
half-imported stays in the default graph.
"""
import numpy as np

from pygrad import errors, nn
from pygrad.graph import get_default_graph
from pygrad.ops import array_ops, manip_ops, math_ops, reduction_ops, sequence_ops, slice_ops

_NP = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 7: np.object_,
       9: np.int64, 10: np.bool_, 17: np.uint16, 19: np.float16}
_VALS = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val", 7: "string_val",
         9: "int64_val", 10: "bool_val", 17: "int_val", 19: "half_val"}


def tensor_value(t):
    """The NumPy value of a TensorProto: tensor_content, or the typed field with TF's rule that
    a shorter list repeats its last value."""
    shape = [d.size for d in t.tensor_shape.dim]
    dtype = _NP[t.dtype]
    if t.tensor_content:
        return np.frombuffer(t.tensor_content, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    values = list(getattr(t, _VALS[t.dtype]))
    if t.dtype == 19:
        values = np.array(values, np.uint16).view(np.float16)
    n = int(np.prod(shape))
    if len(values) < n:
        values = list(values) + [values[-1] if len(values) else 0] * (n - len(values))
    return np.array(values, dtype=dtype).reshape(shape)


def _attr(node, key, default=None):
    if key not in node.attr:
        return default
    a = node.attr[key]
    kind = a.WhichOneof("value")
    if kind == "list":
        return [v.decode() for v in a.list.s] if a.list.s else list(a.list.i)
    if kind == "s":
        return a.s.decode()
    if kind == "shape":
        return None if a.shape.unknown_rank else [None if d.size < 0 else d.size for d in a.shape.dim]
    if kind == "tensor":
        return tensor_value(a.tensor)
    return getattr(a, kind) if kind else default


def _dtype(node, key):
    return np.dtype(_NP[node.attr[key].type]).name


def _fmt(n):
    return _attr(n, "data_format", "NHWC")


def _batch_norm(n, x, scale, offset, mean, var):
    if _attr(n, "is_training", True):
        raise errors.UnimplementedError(None, None, f"{n.name}: {n.op} with is_training true (import inference graphs)")
    y = (x - mean) * math_ops.rsqrt(var + _attr(n, "epsilon", 1e-4)) * scale + offset
    return [y, mean, var]


# TF op type -> fn(node, input tensors, const values of inputs) -> output tensor or list of outputs.
_BUILD = {
    "Identity": lambda n, x, c: array_ops.identity(x[0], name=n.name),
    "Relu": lambda n, x, c: nn.relu(x[0], name=n.name),
    "Relu6": lambda n, x, c: nn.relu6(x[0], name=n.name),
    "Softmax": lambda n, x, c: nn.softmax(x[0], name=n.name),
    "Rsqrt": lambda n, x, c: math_ops.rsqrt(x[0], name=n.name),
    "BiasAdd": lambda n, x, c: nn.bias_add(x[0], x[1], data_format=_fmt(n), name=n.name),
    "Add": lambda n, x, c: math_ops.add(x[0], x[1], name=n.name),
    "AddV2": lambda n, x, c: math_ops.add(x[0], x[1], name=n.name),
    "Sub": lambda n, x, c: math_ops.subtract(x[0], x[1], name=n.name),
    "Mul": lambda n, x, c: math_ops.multiply(x[0], x[1], name=n.name),
    "RealDiv": lambda n, x, c: math_ops.realdiv(x[0], x[1], name=n.name),
    "MatMul": lambda n, x, c: math_ops.matmul(x[0], x[1], transpose_a=_attr(n, "transpose_a", False),
                                              transpose_b=_attr(n, "transpose_b", False), name=n.name),
    "Conv2D": lambda n, x, c: nn.conv2d(x[0], x[1], strides=_attr(n, "strides"), padding=_attr(n, "padding"),
                                        data_format=_fmt(n), dilations=_attr(n, "dilations", [1, 1, 1, 1]),
                                        name=n.name),
    "DepthwiseConv2dNative": lambda n, x, c: nn.depthwise_conv2d_native(
        x[0], x[1], strides=_attr(n, "strides"), padding=_attr(n, "padding"), data_format=_fmt(n),
        dilations=_attr(n, "dilations", [1, 1, 1, 1]), name=n.name),
    "MaxPool": lambda n, x, c: nn.max_pool(x[0], ksize=_attr(n, "ksize"), strides=_attr(n, "strides"),
                                           padding=_attr(n, "padding"), data_format=_fmt(n), name=n.name),
    "AvgPool": lambda n, x, c: nn.avg_pool(x[0], ksize=_attr(n, "ksize"), strides=_attr(n, "strides"),
                                           padding=_attr(n, "padding"), data_format=_fmt(n), name=n.name),
    "Reshape": lambda n, x, c: array_ops.reshape(x[0], [int(d) for d in c(1)], name=n.name),
    "Squeeze": lambda n, x, c: array_ops.squeeze(x[0], axis=_attr(n, "squeeze_dims") or None, name=n.name),
    "Mean": lambda n, x, c: reduction_ops.reduce_mean(x[0], axis=[int(a) for a in np.ravel(c(1))],
                                                      keepdims=_attr(n, "keep_dims", False), name=n.name),
    "ArgMax": lambda n, x, c: reduction_ops.argmax(x[0], axis=int(c(1)), output_type=_dtype(n, "output_type"),
                                                   name=n.name),
    "ConcatV2": lambda n, x, c: manip_ops.concat(x[:-1], int(c(len(x) - 1)), name=n.name),
    "Pack": lambda n, x, c: manip_ops.stack(x, axis=_attr(n, "axis", 0), name=n.name),
    "Pad": lambda n, x, c: sequence_ops.pad(x[0], c(1).tolist(), name=n.name),
    "Shape": lambda n, x, c: array_ops.shape(x[0], out_type=_dtype(n, "out_type"), name=n.name),
    "StridedSlice": lambda n, x, c: slice_ops.strided_slice(
        x[0], c(1).tolist(), c(2).tolist(), c(3).tolist(), begin_mask=_attr(n, "begin_mask", 0),
        end_mask=_attr(n, "end_mask", 0), ellipsis_mask=_attr(n, "ellipsis_mask", 0),
        new_axis_mask=_attr(n, "new_axis_mask", 0), shrink_axis_mask=_attr(n, "shrink_axis_mask", 0), name=n.name),
    "FusedBatchNorm": lambda n, x, c: _batch_norm(n, *x[:5]),
    "FusedBatchNormV3": lambda n, x, c: _batch_norm(n, *x[:5]),
    "Placeholder": lambda n, x, c: array_ops.placeholder(_dtype(n, "dtype"), shape=_attr(n, "shape"), name=n.name),
    "Const": lambda n, x, c: array_ops.constant(tensor_value(n.attr["value"].tensor), name=n.name),
}


def parse_graph_def(data, what="GraphDef"):
    """The GraphDef serialized in data; DataLossError if the bytes do not parse (truncated or corrupt)."""
    from google.protobuf.message import DecodeError

    from pygrad.tf_protos import GraphDef
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
    except DecodeError as e:
        raise errors.DataLossError(None, None, f"{what}: {len(data)} bytes do not parse as a GraphDef ({e})") from None
    return graph_def


def _const(node, source):
    """The value of source, a Const input of node that pygrad takes as an attribute."""
    if source.op != "Const":
        raise errors.UnimplementedError(None, None, f"{node.name} ({node.op}): input '{source.name}' is a "
                                        f"{source.op}, not a Const (pygrad takes it as a static value)")
    return tensor_value(source.attr["value"].tensor)


def _split(name):
    """(node, output index, control) of an input or tensor name."""
    control = name.startswith("^")
    node, _, index = name.lstrip("^").partition(":")
    return node, int(index or 0), control


def _order(nodes):
    """The nodes in topological order (TF's GraphDef may list them in any order)."""
    by_name = {n.name: n for n in nodes}
    done, out = set(), []
    for root in nodes:
        stack = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            if n.name in done:
                continue
            if expanded:
                done.add(n.name)
                out.append(n)
                continue
            stack.append((n, True))
            stack.extend((by_name[_split(i)[0]], False) for i in n.input if _split(i)[0] not in done)
    return out


def _check(graph_def, input_map):
    nodes = {n.name: n for n in graph_def.node}
    unsupported = {}
    for n in graph_def.node:
        if n.op not in _BUILD:
            unsupported.setdefault(n.op, n.name)
        for i in n.input:
            if _split(i)[0] not in nodes:
                raise ValueError(f"Node '{n.name}': Unknown input node '{i}'")
    if unsupported:
        listed = ", ".join(f"{op} (node '{name}')" for op, name in sorted(unsupported.items()))
        raise errors.UnimplementedError(None, None, f"import_graph_def: op types pygrad does not run: {listed}")
    missing = [k for k in input_map if _split(k)[0] not in nodes]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(sorted(missing))}]")


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """The GraphDef's nodes as pygrad ops in the default graph (TF's tf.import_graph_def);
    graph_def may also be its serialized bytes. op_dict and producer_op_list are accepted and
    unused, as in TF 1.15 (deprecated there)."""
    if isinstance(graph_def, bytes):
        graph_def = parse_graph_def(graph_def)
    input_map = {(k if ":" in k or k.startswith("^") else k + ":0"): v for k, v in (input_map or {}).items()}
    _check(graph_def, input_map)
    graph = get_default_graph()
    prefix = "import" if name is None else name
    prefix = graph.unique_name(prefix) + "/" if prefix else ""
    outputs, ops, by_name = {}, {}, {n.name: n for n in graph_def.node}
    with graph.rollback_on_error():
        for n in _order(list(graph_def.node)):
            inputs = [i for i in n.input if not i.startswith("^")]
            tensors = [input_map[f"{a}:{k}"] if f"{a}:{k}" in input_map else outputs[a][k]
                       for a, k, _ in map(_split, inputs)]
            const = lambda k, n=n, inputs=inputs: _const(n, by_name[_split(inputs[k])[0]])  # noqa: E731
            node = type(n)()
            node.CopyFrom(n)
            node.name = prefix + n.name
            with graph.control_dependencies([ops[_split(i)[0]] for i in n.input if i.startswith("^")]):
                result = _BUILD[n.op](node, tensors, const)
            result = result if isinstance(result, list) else [result]
            if result[0].op.name != node.name:
                result[0] = array_ops.identity(result[0], name=node.name)
            outputs[n.name], ops[n.name] = result, result[0].op
    if return_elements is None:
        return None
    out = []
    for e in return_elements:
        a, k, _ = _split(e)
        if a not in ops:
            raise ValueError(f"Requested return_element '{e}' not found in graph_def.")
        out.append(outputs[a][k] if ":" in e else ops[a])
    return out
