"""The names of the native kernels that Python code steps to by name (lowering, fusion and custom
lowerings; an OpDef names its kernel itself, and registry.check_registry checks it), and the kinds
of a plan's buffers. csrc/pg/kernels.def is the one list of kernels: every name here is checked
against it (_C.kernel_names()) when pygrad is imported."""
from pygrad import _C

# ---- kernels (csrc/pg/kernels.def)
UNARY_FWD = "unary_fwd"
UNARY_BWD = "unary_bwd"
BINARY_FWD = "binary_fwd"
BROADCAST_TO = "broadcast_to"
CAST = "cast"
CONCAT = "concat"
COPY = "copy"  # y = x, same dtype and shape (cast converts)
FILL = "fill"
MATMUL_FWD = "matmul_fwd"
REDUCE_FWD = "reduce_fwd"
SPLIT = "split"
TRANSPOSE = "transpose"
CONV2D_FWD = "conv2d_fwd"
CONV2D_BWD_INPUT = "conv2d_bwd_input"
CONV2D_BWD_FILTER = "conv2d_bwd_filter"
TO_BFLOAT16 = "to_bfloat16"
DEPTHWISE_CONV2D_FWD = "depthwise_conv2d_fwd"
PAD_FWD = "pad_fwd"
SOFTMAX_NLL = "softmax_nll"
FUSED_ELEMENTWISE = "fused_elementwise"
TA_READ = "ta_read"
TA_WRITE = "ta_write"
STACK_PUSH = "stack_push"
STACK_POP = "stack_pop"
ACTIVATION_FWD = "activation_fwd"
ALL_FINITE = "all_finite"
FLOAT_CLASS = "float_class"
ARG_REDUCE_FWD = "arg_reduce_fwd"
GATHER_FWD = "gather_fwd"
ONE_HOT = "one_hot"
SELECT = "select"
STRIDED_SLICE_FWD = "strided_slice_fwd"
TILE_FWD = "tile_fwd"

# ---- the kinds of a plan's buffers (lowering.Buffer.kind; the native Plan's add_feed, add_const,
# add_var and add_temp)
FEED_BUFFER = "feed"  # a fed array, bound at each run
CONST_BUFFER = "const"  # an array of the graph's, read in place
VAR_BUFFER = "var"  # a variable of the session's store
TEMP_BUFFER = "temp"  # an intermediate of the run, in its arena

# Every kernel name above.
KERNELS = tuple(v for k, v in dict(globals()).items() if k.isupper() and k[0] != "_" and not k.endswith("_BUFFER"))


def check_kernel_names(names, native):
    """The names of names that are not kernels of native (the list of kernels.def), as problems."""
    known = set(native)
    return [f"pygrad.kernels names kernel {n!r}, which is not in csrc/pg/kernels.def" for n in names
            if n not in known]


_problems = check_kernel_names(KERNELS, _C.kernel_names())
if _problems:
    raise RuntimeError("\n".join(_problems))
