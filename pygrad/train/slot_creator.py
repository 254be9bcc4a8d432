"""Slot variables (an optimizer's accumulators, a moving average's shadows), named as TensorFlow's
slot_creator.py names them."""
import contextlib

from pygrad.ops import state_ops
from pygrad.ops.partitioned_variables import SaveSliceInfo
from pygrad.ops.variable_scope import variable_scope


def create_slot(primary, initial_value, name):
    """A non-trainable variable holding initial_value, made in a new variable scope
    '<primary>/<name>' (made unique: '<name>_1', ...) under the current variable scope: inside
    variable_scope('train') the slot of 'w' is 'train/w/<name>'; a name scope alone changes nothing."""
    graph = primary.graph
    # As TF's: the slot of a variable goes where the variable is; a tensor's where the device scopes say.
    where = graph.colocate_with(primary) if graph.holds_variable(primary.op) else contextlib.nullcontext()
    with variable_scope(None, default_name=f"{primary.op.name}/{name}") as scope, where:
        slot = state_ops.Variable(initial_value, trainable=False, name=scope.name + "/")
    info = getattr(primary, "_save_slice_info", None)
    if info is not None:  # the slot of a part is the same part of the whole variable's slot
        # TF names the whole slot '<full name>/<the slot's name past len(primary's op name) + 1 chars>':
        # in variable scope 'dnn' the slot of 'dnn/hiddenlayer_0/kernel/part_0' is
        # 'dnn/dnn/hiddenlayer_0/kernel/part_0/Adagrad', so its whole is 'dnn/hiddenlayer_0/kernel/t_0/Adagrad'
        # (sic); TF's checkpoints hold that name, and so do pygrad's.
        real_slot_name = slot.op.name[len(primary.op.name + "/"):]
        n = slot.shape.ndims
        if n is None or n > 0:
            slot._save_slice_info = SaveSliceInfo(f"{info.full_name}/{real_slot_name}", info.full_shape[:n],
                                                  info.var_offset[:n], info.var_shape[:n])
    return slot
