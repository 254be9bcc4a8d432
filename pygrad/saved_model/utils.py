"""TensorInfo, a signature's name for a graph tensor: its name, dtype and static shape (TF's
saved_model/utils_impl.py)."""
from pygrad.graph import Tensor, get_default_graph, prepend_name_scope, unwrap
from pygrad.messages import DATA_TYPE


def build_tensor_info(tensor):
    """The TensorInfo (tf_protos.TensorInfo) of a tensor (or variable)."""
    from pygrad.tf_protos import TensorInfo, TensorShapeProto
    tensor = unwrap(tensor)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"build_tensor_info: expected a Tensor, got {type(tensor).__name__}")
    if tensor.dtype.name not in DATA_TYPE:
        raise TypeError(f"build_tensor_info: {tensor.name} has dtype {tensor.dtype.name}, which TensorInfo cannot hold")
    shape = TensorShapeProto()
    if tensor.shape.ndims is None:
        shape.unknown_rank = True
    else:
        for d in tensor.shape.as_list():
            shape.dim.add(size=-1 if d is None else d)
    return TensorInfo(name=tensor.name, dtype=DATA_TYPE[tensor.dtype.name], tensor_shape=shape)


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The tensor of graph (the default graph) that tensor_info names, under import_scope.
    KeyError naming it if the graph has no such tensor."""
    graph = graph or get_default_graph()
    kind = next((k for k in ("name", "coo_sparse", "composite_tensor") if tensor_info.HasField(k)), None)
    if kind != "name":
        raise ValueError(f"Invalid TensorInfo.encoding: {kind}. pygrad reads dense tensors (`name`) only.")
    name = prepend_name_scope(tensor_info.name, import_scope)
    try:
        return graph.get_tensor_by_name(name)
    except (KeyError, ValueError) as e:
        raise KeyError(f"TensorInfo names '{name}', which is not a tensor of the graph: {e}") from None
