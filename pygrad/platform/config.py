"""The option protos TF1 sessions take: ConfigProto, GPUOptions, GraphOptions and RunOptions, as
plain objects with TF's field names and defaults, and RunMetadata, TF's message (pygrad/tf_protos.py,
built on first use). What pygrad honours: ``intra_op_parallelism_threads`` (> 0 sets pygrad's thread
count when a session starts), ``operation_timeout_in_ms`` and RunOptions' ``timeout_in_ms`` (a run
that takes longer stops with DeadlineExceededError; RunOptions' wins when both are set), and
RunOptions' ``trace_level``: SOFTWARE_TRACE, HARDWARE_TRACE or FULL_TRACE fills the run's
RunMetadata.step_stats with the ops it ran and their times (pygrad/step_stats.py); and
RewriterConfig's mixed-precision switches (bfloat16 products). The rest is
accepted and kept, since pygrad runs on the CPU alone (device counts, placement logging, GPU memory).
"""
from pygrad.proto import lazy_messages


class _Options:
    _fields = {}

    def __init__(self, **kwargs):
        for name, default in self._fields.items():
            setattr(self, name, default() if callable(default) else default)
        for name, value in kwargs.items():
            if name not in self._fields:
                raise ValueError(f"Protocol message {type(self).__name__} has no \"{name}\" field.")
            setattr(self, name, value)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self._fields)})"


class GPUOptions(_Options):
    _fields = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False, "allocator_type": "",
               "visible_device_list": "", "force_gpu_compatible": False}


class OptimizerOptions(_Options):
    L1, L0 = 0, -1
    DEFAULT, OFF, ON_1, ON_2 = 0, 2, 1, 2
    _fields = {"do_common_subexpression_elimination": False, "do_constant_folding": False, "opt_level": 0,
               "global_jit_level": 0}


class RewriterConfig(_Options):
    """TF's graph rewriter switches. pygrad honours the mixed-precision ones: ON for
    ``auto_mixed_precision``, ``auto_mixed_precision_onednn_bfloat16`` (TF's oneDNN bfloat16 rewrite) or
    ``auto_mixed_precision_mkl`` (its earlier name) runs the session's float32 convolutions and matrix
    products in bfloat16 (pygrad/bfloat16.py), as does a session created after
    ``enable_mixed_precision_graph_rewrite`` unless ``auto_mixed_precision`` is OFF (TF's rule)."""
    DEFAULT, ON, OFF, AGGRESSIVE, EXPERIMENTAL_MLIR, EXPERIMENTAL_BOTH = 0, 1, 2, 3, 4, 5
    _fields = {"constant_folding": 0, "arithmetic_optimization": 0, "layout_optimizer": 0, "remapping": 0,
               "memory_optimization": 0, "disable_meta_optimizer": False, "auto_mixed_precision": 0,
               "auto_mixed_precision_mkl": 0, "auto_mixed_precision_onednn_bfloat16": 0,
               "auto_mixed_precision_cpu": 0, "min_graph_nodes": 0, "optimizers": list}


class GraphOptions(_Options):
    _fields = {"optimizer_options": OptimizerOptions, "enable_bfloat16_sendrecv": False, "build_cost_model": 0,
               "infer_shapes": False, "place_pruned_graph": False, "rewrite_options": RewriterConfig}


class ConfigProto(_Options):
    _fields = {"device_count": dict, "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "allow_soft_placement": False, "log_device_placement": False,
               "gpu_options": GPUOptions, "graph_options": GraphOptions, "operation_timeout_in_ms": 0,
               "isolate_session_state": False, "device_filters": list}


class RunOptions(_Options):
    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _fields = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


__getattr__ = lazy_messages(__name__, ("RunMetadata",))
