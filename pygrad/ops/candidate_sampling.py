"""Candidate samplers (tf.nn.log_uniform_candidate_sampler, uniform_candidate_sampler) and the
sampled losses built on them, nce_loss and sampled_softmax_loss, as TF1's
candidate_sampling_ops.py and nn_impl.py. The sampler runs natively (csrc/kernels/random.cc:
draws, unique rejection and TF's expected counts); the losses are graph code with TF's formulas."""
import numpy as np

from pygrad import dtypes
from pygrad.graph import get_default_graph
from pygrad.ops import math_ops, nn_ops
from pygrad.ops.activation_ops import sigmoid_cross_entropy_with_logits
from pygrad.ops.array_ops import cast, convert_to_tensor, expand_dims, ones_like, reshape, stop_gradient, zeros_like
from pygrad.ops.embedding_ops import embedding_lookup
from pygrad.ops.manip_ops import concat
from pygrad.ops.random_ops import _Counter, op_seeds
from pygrad.ops.reduction_ops import reduce_max, reduce_sum
from pygrad.registry import OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape


def _sampler_op(type_name, sampler):
    d = OpDef(type_name, kernel="candidate_sampler", differentiable=False, ref_input=0, output_is_ref=False)

    @d.shape
    def _(counter, true_classes, *, num_true, num_sampled, unique, range_max, seed, seed2):
        if true_classes.dtype != dtypes.int64:
            fail_dtype(f"true_classes must be int64, got {true_classes.dtype.name}")
        if true_classes.shape.ndims not in (None, 2) or (true_classes.shape.ndims == 2
                                                          and true_classes.shape.as_list()[1] not in (None, num_true)):
            fail(f"true_classes must have shape [batch_size, num_true={num_true}], got {true_classes.shape}")
        if range_max <= 0 or num_sampled <= 0 or (unique and num_sampled > range_max):
            fail(f"num_sampled {num_sampled} and range_max {range_max} must be positive, and num_sampled at most "
                 f"range_max when unique")
        return [Spec(dtypes.int64, TensorShape([num_sampled])), Spec(dtypes.float32, true_classes.shape),
                Spec(dtypes.float32, TensorShape([num_sampled]))]

    d.native_attrs(lambda attrs, ins, outs: {"sampler": sampler, "unique": int(attrs["unique"]),
                                             "range_max": attrs["range_max"], "seed": attrs["seed"],
                                             "seed2": attrs["seed2"]})
    return d


LogUniformCandidateSampler = _sampler_op("LogUniformCandidateSampler", "log_uniform")
UniformCandidateSampler = _sampler_op("UniformCandidateSampler", "uniform")


def _sample(opdef, true_classes, num_true, num_sampled, unique, range_max, seed, name):
    graph = get_default_graph()
    seed1, seed2 = op_seeds(seed)
    counter = _Counter(graph, graph.unique_name("counter"), graph.seed is not None or seed is not None)._variable
    true_classes = convert_to_tensor(true_classes)
    if true_classes.dtype != dtypes.int64:
        true_classes = cast(true_classes, dtypes.int64)
    return tuple(opdef(counter, true_classes, num_true=int(num_true), num_sampled=int(num_sampled),
                       unique=bool(unique), range_max=int(range_max), seed=seed1, seed2=seed2,
                       name=name or opdef.type))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """(sampled_candidates, true_expected_count, sampled_expected_count): num_sampled classes of
    [0, range_max) with P(c) = log((c + 2) / (c + 1)) / log(range_max + 1) (Zipfian)."""
    return _sample(LogUniformCandidateSampler, true_classes, num_true, num_sampled, unique, range_max, seed, name)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """As log_uniform_candidate_sampler, with P(c) = 1 / range_max."""
    return _sample(UniformCandidateSampler, true_classes, num_true, num_sampled, unique, range_max, seed, name)


# ---------------------------------------------------------------- sampled losses


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
                            subtract_log_q, remove_accidental_hits, partition_strategy, seed):
    """(logits [batch, num_true + num_sampled], labels): the true classes' and the sampled
    classes' logits, less log(expected count), as TF's nn_impl._compute_sampled_logits."""
    weights = weights if isinstance(weights, (list, tuple)) else [weights]
    biases = biases if isinstance(biases, (list, tuple)) else [biases]
    labels = convert_to_tensor(labels)
    if labels.dtype != dtypes.int64:
        labels = cast(labels, dtypes.int64)
    inputs = convert_to_tensor(inputs)
    labels_flat = reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed=seed)
    sampled, true_expected, sampled_expected = (stop_gradient(convert_to_tensor(s)) for s in sampled_values)
    sampled = cast(sampled, dtypes.int64) if sampled.dtype != dtypes.int64 else sampled
    # The rows of the true and the sampled classes (two lookups: their gradients are IndexedSlices).
    true_w = embedding_lookup(weights, labels_flat, partition_strategy=partition_strategy)
    sampled_w = embedding_lookup(weights, sampled, partition_strategy=partition_strategy)
    true_b = embedding_lookup(biases, labels_flat, partition_strategy=partition_strategy)
    sampled_b = embedding_lookup(biases, sampled, partition_strategy=partition_strategy)
    dim = true_w.shape.as_list()[1]
    sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
    row_wise_dots = expand_dims(inputs, 1) * reshape(true_w, [-1, num_true, dim])
    true_logits = reduce_sum(row_wise_dots, axis=2) + reshape(true_b, [-1, num_true])
    if remove_accidental_hits:
        # A sampled class equal to one of the row's true classes gets -FLT_MAX added to its logit.
        hits = math_ops.equal(expand_dims(labels, 2), reshape(sampled, [1, 1, -1]))
        hit = reduce_max(cast(hits, sampled_logits.dtype), axis=1)
        sampled_logits = sampled_logits + hit * float(-np.finfo(np.float32).max)
    if subtract_log_q:
        true_logits = true_logits - math_ops.log(cast(true_expected, true_logits.dtype))
        sampled_logits = sampled_logits - math_ops.log(cast(sampled_expected, sampled_logits.dtype))
    out_logits = concat([true_logits, sampled_logits], 1)
    out_labels = concat([ones_like(true_logits) / float(num_true), zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
             remove_accidental_hits=False, partition_strategy="mod", name="nce_loss", seed=None):
    """Noise-contrastive estimation loss per example [batch]: the sigmoid cross-entropy of the
    true classes (label 1 / num_true) and the sampled ones (label 0), logits less log(expected count)."""
    with get_default_graph().name_scope(name or "nce_loss"):
        logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                                 sampled_values, True, remove_accidental_hits, partition_strategy,
                                                 seed)
        sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="sampled_losses")
        return reduce_sum(sampled_losses, axis=1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
                         remove_accidental_hits=True, partition_strategy="mod", name="sampled_softmax_loss",
                         seed=None):
    """The softmax cross-entropy over the true and the sampled classes, per example [batch]."""
    with get_default_graph().name_scope(name or "sampled_softmax_loss"):
        logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                                 sampled_values, True, remove_accidental_hits, partition_strategy,
                                                 seed)
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits)
