"""pygrad: TensorFlow 1's graph API on a native CPU executor. Use it as ``import pygrad as tf``."""
import os as _os


# The native runtimes' environment defaults (why each: _native_library_defaults). The native
# benchmark runner sets the same (benches/native/bench_kernels.cc; tests/test_native.py checks).
_ENV_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "5000", "OPENBLAS_THREAD_TIMEOUT": "16"}
_AMD_AVX512_ENV_DEFAULTS = {"OPENBLAS_CORETYPE": "SkylakeX"}


def _native_library_defaults():
    """Defaults for the OpenMP runtime and the BLAS, read when they load; the environment overrides.

    pygrad's own loops run on its thread pool and call the BLAS on one thread; OpenMP threads run
    only oneDNN's convolutions of a single image (kernels/conv_onednn.cc) and what other code in the
    process starts. These keep such threads from spinning long on cores pygrad's threads need:
    - OMP_WAIT_POLICY=PASSIVE: OpenMP threads that finish a loop sleep rather than spin for
      milliseconds (libgomp's default), or for good (ACTIVE);
    - GOMP_SPINCOUNT=5000: but first spin about 50 microseconds (libgomp counts some 100,000 spins
      a millisecond), as pygrad's own helpers do, for the next convolution of the same run: waking a
      sleeping thread for each of a model's convolutions made MobileNet v1's two-thread batch-1
      inference 1.5x slower (bench_inference.py).
    - OPENBLAS_THREAD_TIMEOUT=16: OpenBLAS's threads spin for 2^16 cycles (tens of microseconds)
      after a call before they sleep, not its default 2^28 (about a tenth of a second).
    - OPENBLAS_CORETYPE=SkylakeX on AMD CPUs with AVX-512 (Zen 4 on): OpenBLAS's dispatch gives them
      its Haswell (AVX2) kernels; its AVX-512 ones make a 5x5x32x64 conv2d 1.6x faster."""
    for name, value in _ENV_DEFAULTS.items():
        _os.environ.setdefault(name, value)
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read(1 << 16)
    except OSError:
        return
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    if "AuthenticAMD" in info and {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= set(flags):
        for name, value in _AMD_AVX512_ENV_DEFAULTS.items():
            _os.environ.setdefault(name, value)


_native_library_defaults()

import scipy_openblas32 as _openblas  # noqa: E402,F401  (loads the BLAS the extension links to)

from pygrad import _C  # noqa: E402
from pygrad import errors, nn, test, train  # noqa: F401
from pygrad.dtypes import (DType, as_dtype, bool_ as bool, double, float16, float32, float64, half, int8,  # noqa: A001
                           int16, int32, int64, string, uint8, uint16)
from pygrad.gradients import AggregationMethod, UnconnectedGradients, gradients
from pygrad.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph, reset_default_graph
from pygrad.ops.array_ops import (cast, constant, convert_to_tensor, expand_dims, identity, ones, ones_like,
                                  placeholder, rank, reshape, shape, size, squeeze, stop_gradient, to_double, to_float,
                                  to_int32, to_int64, transpose, zeros, zeros_like)
from pygrad.ops.math_ops import (abs, add, add_n, ceil, cos, div, divide, equal, exp, floor, floordiv, floormod,
                                 greater, greater_equal, less, less_equal, log, log1p, logical_and, logical_not,
                                 logical_or, logical_xor, matmul, maximum, minimum, mod, multiply, negative, not_equal,
                                 pow, realdiv, reciprocal, round, rsqrt, scalar_mul, sigmoid, sign, sin, sqrt, square,
                                 squared_difference, subtract, tanh, truediv)
from pygrad.ops.reduction_ops import (argmax, argmin, fill, reduce_all, reduce_any, reduce_max, reduce_mean,
                                      reduce_min, reduce_prod, reduce_sum)
from pygrad.ops.numerics import add_check_numerics_ops, check_numerics
from pygrad.ops.manip_ops import concat, gather, newaxis, one_hot, split, stack, tile, unstack, where
from pygrad.ops.slice_ops import slice, strided_slice  # noqa: A004
from pygrad.ops import conv_ops as _conv_ops  # noqa: F401  (registers conv and pooling ops)
from pygrad.ops import training_ops as _training_ops  # noqa: F401  (registers the fused update ops)
from pygrad.ops.random_ops import get_seed, random_normal, random_uniform, truncated_normal
from pygrad.ops.state_ops import (Variable, assign, assign_add, assign_sub, global_variables,
                                  global_variables_initializer, group, is_variable_initialized, local_variables,
                                  local_variables_initializer, no_op, trainable_variables, variables_initializer)
from pygrad.ops.init_ops import (constant_initializer, glorot_normal_initializer, glorot_uniform_initializer,
                                 ones_initializer, random_normal_initializer, random_uniform_initializer,
                                 truncated_normal_initializer, variance_scaling_initializer, zeros_initializer)
from pygrad.ops.variable_scope import (AUTO_REUSE, VariableScope, create_partitioned_variables, get_variable,
                                       get_variable_scope, variable_scope)
from pygrad.ops.partitioned_variables import (PartitionedVariable, fixed_size_partitioner, min_max_variable_partitioner,
                                              variable_axis_size_partitioner)
from pygrad.registry import check_registry as _check_registry
from pygrad.train.clip import clip_by_global_norm, clip_by_norm, clip_by_value, global_norm
from pygrad.graph import get_default_session
from pygrad.session import InteractiveSession, Session
from pygrad.shapes import Dimension, TensorShape



def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def name_scope(name, default_name=None, values=None):
    return get_default_graph().name_scope(name or default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def set_random_seed(seed):
    get_default_graph().seed = seed


def set_num_threads(n):
    """Threads for pygrad's native loops and its BLAS together."""
    _C.set_num_threads(int(n))


def get_num_threads():
    return _C.get_num_threads()


# ---- input pipelines
from pygrad import data, nest  # noqa: E402,F401
from pygrad import image  # noqa: E402,F401  (tf.image: registers the resize and codec ops)

# ---- around the graph: devices, session options, flags, logging, files, printing
from pygrad.ops.logging_ops import Print, print  # noqa: E402,F401,A004
from pygrad.ops.script_ops import numpy_function, py_func  # noqa: E402,F401
from pygrad.platform import app, gfile  # noqa: E402,F401
from pygrad.platform import flags  # noqa: E402,F401
from pygrad.platform import tf_logging as logging  # noqa: E402,F401
from pygrad.platform.tf_logging import get_logger  # noqa: E402,F401
from pygrad.platform.config import (ConfigProto, GPUOptions, GraphOptions, OptimizerOptions,  # noqa: E402,F401
                                    RunOptions)

app.flags = flags


def device(device_name_or_function):
    """Records a device on the ops built inside (see Graph.device); pygrad runs them on the CPU."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    """Ops built inside go where op is (see Graph.colocate_with)."""
    return get_default_graph().colocate_with(op, ignore_existing)


from pygrad.device import DeviceSpec  # noqa: E402,F401
from pygrad.train.session_manager import report_uninitialized_variables  # noqa: E402,F401


def disable_eager_execution():
    """pygrad is graph mode only, as TF1 programs expect: nothing to disable."""


disable_v2_behavior = disable_eager_execution


def executing_eagerly():
    return False


# Sparse gradients (tf.nn's embedding_lookup and the sparse optimizer updates)
from pygrad.ops.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: E402,F401
# Sparse tensors (tf.SparseTensor, tf.sparse_*; tf.sparse is the alias table's)
from pygrad.ops.sparse_tensor import (SparseTensor, SparseTensorValue,  # noqa: E402,F401
                                      convert_to_tensor_or_sparse_tensor, sparse_placeholder)
from pygrad.ops.sparse_ops import (invert_permutation, sparse_add, sparse_concat, sparse_merge,  # noqa: E402,F401
                                   sparse_reorder, sparse_reshape, sparse_retain, sparse_tensor_to_dense,
                                   sparse_to_dense, sparse_to_indicator)
from pygrad.ops.sparse_ops import from_dense as sparse_from_dense  # noqa: E402,F401
from pygrad.ops.string_split import string_split  # noqa: E402,F401
from pygrad.ops.sparse_cross import sparse_cross, sparse_cross_hashed  # noqa: E402,F401
# Lookup tables (tf.lookup, tf.contrib.lookup)
from pygrad import lookup  # noqa: E402,F401
from pygrad.ops.lookup_ops import tables_initializer  # noqa: E402,F401
from pygrad.ops.sparse_math import (sparse_fill_empty_rows, sparse_reduce_sum,  # noqa: E402,F401
                                    sparse_tensor_dense_matmul)
from pygrad.ops.sparse_embedding import (sparse_segment_mean, sparse_segment_sqrt_n,  # noqa: E402,F401
                                         sparse_segment_sum)


# tf.layers, tf.losses, tf.contrib (layers, rnn)
from pygrad import contrib, layers, losses  # noqa: E402,F401
# tf.metrics (streaming metrics), and the checks and confusion matrix they build on
from pygrad import metrics  # noqa: E402,F401
from pygrad.ops.check_ops import (Assert, assert_equal, assert_greater, assert_greater_equal,  # noqa: E402,F401
                                  assert_less, assert_less_equal, assert_non_negative, assert_positive, assert_type)
from pygrad.ops.confusion_matrix import confusion_matrix  # noqa: E402,F401
from pygrad.ops.math_ops import div_no_nan  # noqa: E402,F401

# TensorBoard summaries and event files (tf.summary), with the names used before TF 0.12
from pygrad import summary  # noqa: E402
from pygrad.ops.summary_ops import (audio_summary, histogram_summary, image_summary,  # noqa: E402,F401
                                    merge_all_summaries, merge_summary, scalar_summary)
train.SummaryWriter = summary.FileWriter
train.summary_iterator = summary.summary_iterator

# tf.profiler (parameter, flop and time counts); tensorflow.python.client.timeline is pygrad.client.timeline
from pygrad import client, profiler  # noqa: E402,F401

# tf.mixed_precision (loss scaling and the bfloat16 rewrite switch; also in tf.train.experimental)
from pygrad import mixed_precision  # noqa: E402,F401

# tf.feature_column (input_layer, linear_model and the columns)
from pygrad import feature_column  # noqa: E402,F401

# ---- control flow: cond, case, while_loop, TensorArray, map_fn, scan
from pygrad.ops.control_flow_ops import case, cond, while_loop  # noqa: E402,F401
from pygrad.ops.identity_n import identity_n  # noqa: E402,F401
from pygrad import control_flow_grad as _control_flow_grad  # noqa: E402,F401  (registers cond and loop gradients)
from pygrad.ops.functional_ops import map_fn, scan  # noqa: E402,F401
from pygrad.ops.tensor_array_ops import TensorArray  # noqa: E402,F401

# Array and math ops: sequences, padding, scans, linear algebra, index ops, segment sums, scatters
from pygrad import linalg, math, random  # noqa: E402,F401,A004
from pygrad.ops.sequence_ops import (lin_space, linspace, pad, placeholder_with_default, range,  # noqa: E402,A004
                                     reverse, reverse_sequence, reverse_v2, sequence_mask)
from pygrad.ops.cumulative_ops import (count_nonzero, cumprod, cumsum, is_finite, is_inf, is_nan,  # noqa: E402
                                       reduce_logsumexp)
from pygrad.ops.linalg_ops import einsum, matrix_determinant, matrix_inverse, norm, tensordot  # noqa: E402
from pygrad.ops.scatter_ops import (boolean_mask, gather_nd, scatter_add, scatter_nd, scatter_sub,  # noqa: E402
                                    scatter_update, segment_sum, unique, unsorted_segment_sum)
from pygrad.ops.random_ops import multinomial, random_shuffle  # noqa: E402
from pygrad.ops.image_ops import random_crop  # noqa: E402,F401
from pygrad.ops.topk_ops import argsort, sort  # noqa: F401
# TF1's queues and readers (the input pipelines of tf.train's queue runners).
from pygrad.ops.queue_ops import (FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase,  # noqa: E402,F401
                                  RandomShuffleQueue, count_up_to)
from pygrad.ops.reader_ops import (FixedLengthRecordReader, IdentityReader, ReaderBase,  # noqa: E402,F401
                                   TextLineReader, WholeFileReader)

# ---- files and records: TFRecord files, tf.train.Example parsing, decoding, tf.io
from pygrad.platform import tf_io as io  # noqa: E402,A001
from pygrad.platform.tf_io import python_io  # noqa: E402,F401
from pygrad.platform.tf_record import TFRecordReader  # noqa: E402,F401
from pygrad.ops.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature, SparseFeature,  # noqa: E402,F401
                                    VarLenFeature, parse_example, parse_single_example)
from pygrad.ops.parsing_sequence import parse_sequence_example, parse_single_sequence_example  # noqa: E402,F401
from pygrad.ops.decode_ops import decode_csv, decode_raw, string_to_number  # noqa: E402,F401
from pygrad.ops.io_ops import matching_files, read_file, write_file  # noqa: E402,F401
from pygrad import strings  # noqa: F401  (tf.strings)
from pygrad.ops.string_hash import (fingerprint, string_to_hash_bucket, string_to_hash_bucket_fast,  # noqa: F401
                                    string_to_hash_bucket_strong)
from pygrad.ops.string_ops import (as_string, reduce_join, regex_replace, string_join, string_strip,  # noqa: F401
                                   substr)

# ---- the alias table (pygrad/compat.py) and tf.compat.v1, which is pygrad itself
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402

from pygrad import compat  # noqa: E402

for _name, _module in compat.bind(globals(), _types.ModuleType).items():
    globals()[_name] = _module
compat.v1 = _sys.modules[__name__]

set_num_threads(int(_os.environ.get("PYGRAD_NUM_THREADS", _os.environ.get("OMP_NUM_THREADS", _os.cpu_count() or 1))))
_check_registry()
from pygrad.importer import import_graph_def  # noqa: E402,F401
from pygrad import graph_util, saved_model  # noqa: E402,F401  (GraphDef transforms; SavedModels)
from pygrad import proto as _proto  # noqa: E402

# TF's messages (pygrad/tf_protos.py): tf.GraphDef, tf.Summary, ..., built on first use, not by `import pygrad`
_MESSAGES = ("GraphDef", "NodeDef", "AttrValue", "Event", "HistogramProto", "LogMessage", "SessionLog", "Summary",
             "SummaryMetadata", "RunMetadata")
_message = _proto.lazy_messages(__name__, _MESSAGES)
# Namespaces loaded on first use (tf.estimator: its training, serving and export machinery).
_LAZY_MODULES = ("estimator",)


def alias_tensorflow():
    """Makes `import tensorflow` (tensorflow.compat.v1, tensorflow.contrib.*, tensorflow.python.*, ...) give
    pygrad from now on in this process, as `python -m pygrad program.py` does: for a notebook. Idempotent.
    The import hook (pygrad/tf_alias.py) sits above this package and is imported only here."""
    import importlib
    importlib.import_module("pygrad.tf_alias").alias_tensorflow()


def __getattr__(name):
    if name in _LAZY_MODULES:
        import importlib
        return importlib.import_module(f"pygrad.{name}")  # (the import binds it in this module)
    return _message(name)


def __dir__():
    return sorted({*globals(), *_MESSAGES, *_LAZY_MODULES})


__version__ = "0.1.0"
