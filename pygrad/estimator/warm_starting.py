"""WarmStartSettings: an Estimator's variables initialized from another model's checkpoint (TF's
warm_starting_util): the trainable variables whose names match vars_to_warm_start (a regex, or a
list of regexes, names or variables; ".*" by default), each from the checkpoint's variable of the
same name or of var_name_to_prev_var_name's. Vocabulary remapping (VocabInfo) is not supported."""
import collections
import re

from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops.state_ops import Variable
from pygrad.train.checkpoint_utils import init_from_checkpoint, list_variables

class VocabInfo(collections.namedtuple("VocabInfo", ["new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab",
                                                     "old_vocab_size", "backup_initializer", "axis"])):
    """How a warm-started variable's vocabulary maps onto the checkpoint's (its rows, or columns for
    axis 1). pygrad keeps it for WarmStartSettings; warm starting with it is not supported."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1, backup_initializer=None,
                axis=0):
        if axis not in (0, 1):
            raise ValueError(f"The only supported values for the axis argument are 0 and 1.  Provided axis: {axis}")
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size,
                               backup_initializer, axis)


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
                var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start, var_name_to_vocab_info or {},
                               var_name_to_prev_var_name or {})


def as_warm_start_settings(warm_start_from):
    if warm_start_from is None or isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    if isinstance(warm_start_from, (str, bytes)):
        return WarmStartSettings(ckpt_to_initialize_from=warm_start_from)
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got {type(warm_start_from)}")


def _name(v):
    return v.op.name if hasattr(v, "op") else v.name.split(":")[0]


def _chosen(spec):
    graph = get_default_graph()
    if spec is None:
        return []
    if isinstance(spec, str):
        pattern = re.compile(spec)
        return [v for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES) if pattern.match(_name(v))]
    out = []
    for item in spec:
        if isinstance(item, Variable):
            out.append(item)
        else:
            pattern = re.compile(item)
            out += [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                    if pattern.match(_name(v)) and v not in out]
    return out


def warm_start(settings):
    """Sets the chosen variables' initializers to the checkpoint's values."""
    if settings.var_name_to_vocab_info:
        raise NotImplementedError("WarmStartSettings: var_name_to_vocab_info (vocabulary remapping) is not supported")
    in_checkpoint = {name for name, _ in list_variables(settings.ckpt_to_initialize_from)}
    grouped = {}  # the parts of a partitioned variable go together, under its name (TF's grouped variables)
    for v in _chosen(settings.vars_to_warm_start):
        info = getattr(v, "_save_slice_info", None)
        grouped.setdefault(info.full_name if info else _name(v), []).append(v)
    mapping = {}
    for name, vs in grouped.items():
        prev = settings.var_name_to_prev_var_name.get(name, name)
        if prev not in in_checkpoint:
            raise ValueError(f"Tensor {prev} is not found in {settings.ckpt_to_initialize_from} checkpoint")
        mapping[prev] = vs if getattr(vs[0], "_save_slice_info", None) else vs[0]
    unused = set(settings.var_name_to_prev_var_name) - set(grouped)
    if unused:
        raise ValueError(f"You provided the following variables in var_name_to_prev_var_name that were not used: "
                         f"{sorted(unused)}.  Perhaps you misspelled them?  Here is the list of viable variable "
                         f"names: {sorted(grouped)}")
    if mapping:
        init_from_checkpoint(settings.ckpt_to_initialize_from, mapping)
