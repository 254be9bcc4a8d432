"""tf.profiler.ProfileOptionBuilder: the options dict of tf.profiler.profile, with TF's defaults
and presets (tensorflow/python/profiler/option_builder.py)."""
import copy


def _options(**changes):
    base = {"max_depth": 100, "min_bytes": 0, "min_micros": 0, "min_params": 0, "min_float_ops": 0,
            "min_occurrence": 0, "order_by": "name", "account_type_regexes": [".*"], "start_name_regexes": [".*"],
            "trim_name_regexes": [], "show_name_regexes": [".*"], "hide_name_regexes": [],
            "account_displayed_op_only": False, "select": ["micros"], "step": -1, "output": "stdout"}
    base.update(changes)
    return base


class ProfileOptionBuilder:
    """Builds an options dict: ProfileOptionBuilder(preset).with_...(...).build()."""

    def __init__(self, options=None):
        self._options = copy.deepcopy(options) if options is not None else _options()

    @staticmethod
    def trainable_variables_parameter():
        """The parameters of the trainable variables (for the 'scope' view)."""
        return _options(max_depth=10000, account_type_regexes=["_trainable_variables"],
                        account_displayed_op_only=True, select=["params"])

    @staticmethod
    def float_operation():
        """The floating-point operations of the ops TF registers a flops statistic for."""
        return _options(max_depth=10000, min_float_ops=1, order_by="float_ops", account_displayed_op_only=True,
                        select=["float_ops"])

    @staticmethod
    def time_and_memory(min_micros=1, min_bytes=1, min_accelerator_micros=0, min_cpu_micros=0, min_peak_bytes=0,
                        min_residual_bytes=0, min_output_bytes=0):
        """The ops' times (from a traced run's RunMetadata); pygrad reports no memory per op, so the
        byte thresholds are kept and not applied."""
        return _options(max_depth=10000, min_bytes=min_bytes, min_peak_bytes=min_peak_bytes,
                        min_residual_bytes=min_residual_bytes, min_output_bytes=min_output_bytes,
                        min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                        min_cpu_micros=min_cpu_micros, order_by="micros", account_displayed_op_only=True,
                        select=["micros", "bytes"])

    def build(self):
        return copy.deepcopy(self._options)

    def _set(self, **changes):
        self._options.update(changes)
        return self

    def with_max_depth(self, max_depth):
        return self._set(max_depth=max_depth)

    def with_min_memory(self, min_bytes=0, min_peak_bytes=0, min_residual_bytes=0, min_output_bytes=0):
        return self._set(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes, min_residual_bytes=min_residual_bytes,
                         min_output_bytes=min_output_bytes)

    def with_min_execution_time(self, min_micros=0, min_accelerator_micros=0, min_cpu_micros=0):
        return self._set(min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                         min_cpu_micros=min_cpu_micros)

    def with_min_parameters(self, min_params):
        return self._set(min_params=min_params)

    def with_min_occurrence(self, min_occurrence):
        return self._set(min_occurrence=min_occurrence)

    def with_min_float_operations(self, min_float_ops):
        return self._set(min_float_ops=min_float_ops)

    def with_accounted_types(self, account_type_regexes):
        return self._set(account_type_regexes=list(account_type_regexes))

    def with_node_names(self, start_name_regexes=None, show_name_regexes=None, hide_name_regexes=None,
                        trim_name_regexes=None):
        for key, value in (("start_name_regexes", start_name_regexes), ("show_name_regexes", show_name_regexes),
                           ("hide_name_regexes", hide_name_regexes), ("trim_name_regexes", trim_name_regexes)):
            if value is not None:
                self._options[key] = list(value)
        return self

    def account_displayed_op_only(self, is_true):
        return self._set(account_displayed_op_only=is_true)

    def with_empty_output(self):
        return self._set(output="none")

    def with_stdout_output(self):
        return self._set(output="stdout")

    def with_file_output(self, outfile):
        return self._set(output=f"file:outfile={outfile}")

    def with_timeline_output(self, timeline_file):
        return self._set(output=f"timeline:outfile={timeline_file}")

    def with_pprof_output(self, pprof_file):
        return self._set(output=f"pprof:outfile={pprof_file}")

    def order_by(self, attribute):
        return self._set(order_by=attribute)

    def select(self, attributes):
        return self._set(select=list(attributes))

    def with_step(self, step):
        return self._set(step=step)
