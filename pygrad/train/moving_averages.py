"""tf.train.ExponentialMovingAverage: shadow variables updated as shadow -= (1 - decay) * (shadow - var);
assign_moving_average, the same update of one variable (batch norm's moving statistics)."""
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.ops import math_ops, state_ops
from pygrad.ops.array_ops import cast, convert_to_tensor, zeros
from pygrad.ops.init_ops import zeros_initializer
from pygrad.ops.variable_scope import get_variable, get_variable_scope, variable_scope
from pygrad.train.slot_creator import create_slot


class ExponentialMovingAverage:
    """Keeps a moving average of variables (or tensors). With num_updates, the decay is
    min(decay, (1 + num_updates) / (10 + num_updates)), as in TF. With zero_debias, the average of a
    tensor (which starts at zero) is divided by 1 - decay^t after t updates, as TF's: the biased
    average and t live in variables named `<average>/biased` and `<average>/local_step`."""

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}
        self._debias = {}  # average -> (biased, local_step), for the tensors averaged with zero_debias

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Creates the shadow variables and returns the op that updates them all. A variable can be
        averaged once: applying to it again is a ValueError, as in TF."""
        graph = get_default_graph()
        if var_list is None:
            var_list = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        for var in var_list:
            if var.dtype.base_dtype not in (math_ops.dtypes.float32, math_ops.dtypes.float64):
                raise TypeError(f"The variables must be float or double: {var.name}")
            if var in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
            with graph.name_scope(None), graph.control_dependencies(None):  # TF's init_scope
                if isinstance(var, state_ops.Variable):
                    # The variable's initial value: the same draw when run together with the
                    # variable's initializer (global_variables_initializer). Depending on that
                    # initializer instead would reset a trained variable when only the shadow is
                    # initialized.
                    init = var.initial_value
                    graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)  # Variables only, as TF
                else:  # a tensor: its average starts at zero
                    init = zeros(var.shape.as_list(), var.dtype)
                avg = create_slot(var, init, self._name)
                if self._zero_debias and not isinstance(var, state_ops.Variable):
                    with graph.name_scope(avg.op.name + "/"):
                        self._debias[avg] = (state_ops.Variable(zeros(var.shape.as_list(), var.dtype),
                                                                trainable=False, name="biased"),
                                             state_ops.Variable(zeros([], var.dtype), trainable=False,
                                                                name="local_step"))
            self._averages[var] = avg
        with graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, preferred_dtype="float32", name="decay")
            if self._num_updates is not None:
                n = cast(convert_to_tensor(self._num_updates), decay.dtype)
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            one_minus_decay = 1.0 - decay  # in the decay's dtype (float32), then cast per variable, as TF
            updates = []
            for var in var_list:
                avg = self._averages[var]
                omd = cast(one_minus_decay, var.dtype)
                if avg in self._debias:
                    biased, local_step = self._debias[avg]
                    biased = state_ops.assign_sub(biased, (biased - var) * omd)
                    bias_factor = 1.0 - math_ops.pow(1.0 - omd, state_ops.assign_add(local_step, 1.0))
                    updates.append(state_ops.assign(avg, biased / bias_factor))
                else:
                    updates.append(state_ops.assign_sub(avg, (avg - var) * omd))
            return state_ops.group(*updates, name=scope)

    def average(self, var):
        return self._averages.get(var)

    def average_name(self, var):
        """The name of var's shadow variable: its actual name once apply made it (inside a
        variable_scope it is scoped, as TF's), else '<var>/<name>'."""
        if var in self._averages:
            return self._averages[var].op.name
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable}, as TF: each of moving_avg_variables (default: the trainable
        and the moving-average variables) maps its average's name to itself, so restoring loads the
        averages; every other global variable maps its own name to itself, except those whose name
        is already a key (the shadow variables)."""
        graph = get_default_graph()
        if moving_avg_variables is None:
            moving_avg_variables = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES) + \
                graph.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES)
        moving_avg_variables = set(moving_avg_variables)
        restore = {self.average_name(v): v for v in moving_avg_variables}
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
            if v not in moving_avg_variables and v.op.name not in restore:
                restore[v.op.name] = v
        return restore


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay), TF's moving_averages.assign_moving_average.
    With zero_debias the update goes to a variable '<variable>/biased' (made, with a step count
    '<variable>/local_step', in the variable scope named after variable, inside the current one, as
    TF's), and variable gets biased / (1 - decay^step)."""
    graph = get_default_graph()
    with graph.name_scope(name or "AssignMovingAvg") as scope:
        one_minus_decay = convert_to_tensor(1.0 - decay, name="decay")
        one_minus_decay = cast(one_minus_decay, variable.dtype.base_dtype)
        if not zero_debias:
            return state_ops.assign_sub(variable, (variable - value) * one_minus_decay, name=scope)
        biased, local_step = _zero_debias_variables(variable)
        update_biased = state_ops.assign_sub(biased, (biased - value) * one_minus_decay)
        bias_factor = 1.0 - math_ops.pow(1.0 - one_minus_decay, state_ops.assign_add(local_step, 1.0))
        return state_ops.assign(variable, update_biased / bias_factor, name=scope)


def _zero_debias_variables(variable):
    """(biased, local_step) for assign_moving_average's zero_debias: zeros, not trainable; a name
    already taken gets TF's _1, _2 suffix unless the scope reuses."""
    with variable_scope(variable.op.name):
        scope = get_variable_scope()
        taken = {v.op.name for v in get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)}

        def unique(short):
            if scope.reuse or scope.name + "/" + short not in taken:
                return short
            i = 1
            while f"{scope.name}/{short}_{i}" in taken:
                i += 1
            return f"{short}_{i}"

        with get_default_graph().name_scope(None), get_default_graph().control_dependencies(None):
            biased = get_variable(unique("biased"), shape=variable.shape, dtype=variable.dtype.base_dtype,
                                  initializer=zeros_initializer(), trainable=False)
            local_step = get_variable(unique("local_step"), shape=[], dtype=variable.dtype.base_dtype,
                                      initializer=zeros_initializer(), trainable=False)
    return biased, local_step
