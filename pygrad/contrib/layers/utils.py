"""What the contrib layers share (TF-Slim's layers/utils.py and the variable getters of its
layers.py): the getter that makes a tf.layers layer's variables model variables under TF-Slim's
names, variables_collections and outputs_collections, smart_cond, and the NHWC check."""
from pygrad.contrib.framework.variables import model_variable
from pygrad.graph import get_default_graph
from pygrad.ops.array_ops import constant_value
from pygrad.ops.control_flow_ops import cond

NHWC, NCHW = "NHWC", "NCHW"


def model_variable_getter(getter, name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True,
                          collections=None, caching_device=None, partitioner=None, rename=None, use_resource=None,
                          synchronization=None, aggregation=None, **_):
    """A custom getter: the variable as a model variable, its last name component renamed by
    rename ({'kernel': 'weights', 'bias': 'biases'} for the layers that TF-Slim wraps)."""
    parts = name.split("/")
    if rename and parts[-1] in rename:
        name = "/".join(parts[:-1] + [rename[parts[-1]]])
    return model_variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                          collections=collections, trainable=trainable, caching_device=caching_device,
                          partitioner=partitioner, custom_getter=getter, use_resource=use_resource,
                          synchronization=synchronization, aggregation=aggregation)


def build_variable_getter(rename=None):
    def layer_variable_getter(getter, *args, **kwargs):
        kwargs["rename"] = rename
        return model_variable_getter(getter, *args, **kwargs)

    return layer_variable_getter


WEIGHTS_AND_BIASES = {"bias": "biases", "kernel": "weights"}


def get_variable_collections(variables_collections, name):
    """The collections for variable `name`: variables_collections[name] of a dict, else itself."""
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


def add_variable_to_collections(variable, variables_collections, name):
    graph = get_default_graph()
    for collection in get_variable_collections(variables_collections, name) or []:
        if variable not in graph.get_collection(collection):
            graph.add_to_collection(collection, variable)


def collect_named_outputs(collections, alias, outputs):
    """outputs, added to collections (if any) with the alias (the layer's scope name, no '/')
    appended to outputs.aliases."""
    if collections:
        alias = alias.removesuffix("/")
        if not hasattr(outputs, "aliases"):
            outputs.aliases = []
        outputs.aliases.append(alias)
        get_default_graph().add_to_collections(collections, outputs)
    return outputs


def static_flag(pred):
    """pred as a Python bool when the graph fixes it (a bool, or a constant tensor), else None."""
    if isinstance(pred, bool):
        return pred
    value = constant_value(pred)
    return None if value is None else bool(value)


def smart_cond(pred, true_fn, false_fn):
    """true_fn() or false_fn() when pred is known now, else tf.cond (only the taken branch runs)."""
    flag = static_flag(pred)
    if flag is None:
        return cond(pred, true_fn, false_fn)
    return true_fn() if flag else false_fn()


def check_data_format(data_format, what):
    """Refuses data formats other than NHWC (pygrad's convolution, pooling and batch norm kernels)."""
    if data_format not in (NHWC, NCHW, None):
        raise ValueError(f"{what}: data_format has to be either NCHW or NHWC, got {data_format!r}")
    if data_format == NCHW:
        raise ValueError(f"{what}: data_format 'NCHW' is not supported (pygrad's kernels are NHWC only)")
