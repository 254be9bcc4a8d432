"""The op-identity table (pygrad/op_identity.py): every op has an entry and every entry an op; the
ops without a TF counterpart are the listed ones; each entry names the op's own attributes and
inputs; and, where TensorFlow is installed, the TF op types, attributes and inputs it names are
TF's, and a model built in pygrad has the node types of the same model built with tf.compat.v1."""
import collections
import inspect

import numpy as np
import pytest

import pygrad as tf
from pygrad.op_identity import DERIVED, FAMILIES, TABLE
from pygrad.registry import OpDef

# Changing this set is a deliberate act: an op gains or loses its TF counterpart.
NO_TF_COUNTERPART = {
    "BroadcastLike", "ClipByGlobalNorm", "ConcatV2Grad", "DynamicSlice", "DynamicSliceGrad", "GatherV2Grad",
    "LogSoftmaxGrad", "LogicalXor", "LoopVar", "PadGrad", "ProdGrad", "ProdGradGrad", "SegmentGather",
    "SoftmaxGrad", "SparseApplyAdam", "SparseApplyGradientDescent", "SumToShape", "TensorArrayReadGrad",
    "TopKV2Grad", "TopKV2GradGrad", "IfInPython", "WhileInPython", "SyncReplicasAccumulate", "SyncReplicasToken",
}
MAPPED = sorted(t for t, e in TABLE.items() if e.type is not None)


def test_every_op_has_an_entry_and_every_entry_an_op():
    assert sorted(t for t, d in OpDef.all.items() if d.tf is None) == []
    assert sorted(set(TABLE) - set(OpDef.all)) == []
    assert all(d.tf is TABLE[t] for t, d in OpDef.all.items())
    assert sum(len(f) for f in FAMILIES) == len(TABLE)  # no op in two families


def test_ops_without_a_tf_counterpart():
    missing = sorted(t for t, e in TABLE.items() if e.type is None)
    print("\nops without a TF counterpart:\n" + "\n".join(f"  {t:28s} {TABLE[t].note}" for t in missing))
    assert set(missing) == NO_TF_COUNTERPART
    assert [t for t in missing if not TABLE[t].note] == []


def _rule(opdef):
    """(positional input names, whether the rule takes any number of inputs, keyword attribute
    names, whether it takes any keywords) of an op's shape rule."""
    ps = inspect.signature(opdef.shape_fn).parameters.values()
    kinds = inspect.Parameter
    return ([p.name for p in ps if p.kind == kinds.POSITIONAL_OR_KEYWORD],
            any(p.kind == kinds.VAR_POSITIONAL for p in ps),
            {p.name for p in ps if p.kind == kinds.KEYWORD_ONLY}, any(p.kind == kinds.VAR_KEYWORD for p in ps))


def test_entries_name_the_ops_attributes_and_inputs():
    """Every keyword attribute of an op's shape rule is carried, moved to an input or declared
    pygrad's own; `ins` has one item per input of the rule; derived sources are known ones."""
    problems = []
    for t in MAPPED:
        e = TABLE[t]
        positional, variadic, keywords, any_keywords = _rule(OpDef.all[t])
        named = set(e.attrs) | set(e.inputs) | set(e.own)
        if not any_keywords and named != keywords:
            problems.append(f"{t}: the entry names attributes {sorted(named)}, the shape rule {sorted(keywords)}")
        if set(e.attrs) & set(e.inputs) or set(e.own) & (set(e.attrs) | set(e.inputs)):
            problems.append(f"{t}: an attribute is named twice")
        if e.ins is not None:
            fixed, rest = [i for i in e.ins if not i.endswith("*")], e.ins[-1].endswith("*")
            if len(fixed) < len(positional) or not variadic and (rest or len(fixed) > len(positional)):
                problems.append(f"{t}: ins {e.ins} for the rule's inputs {positional}{' *' if variadic else ''}")
        problems += [f"{t}: derived source {s!r} is not in DERIVED" for s in e.derived.values() if s not in DERIVED]
    assert problems == []


@pytest.fixture(scope="module")
def tf_registry():
    pytest.importorskip("tensorflow")
    from tensorflow.python.framework import op_def_registry
    return op_def_registry


def _tf_names(e):
    """The TF inputs an entry's `ins` names."""
    return {i.removeprefix("shape:").rstrip("*") for i in e.ins or () if i.rstrip("*") != "-"}


def test_entries_name_tf_ops_attributes_and_inputs(tf_registry):
    """Each TF type exists; each TF attribute and input an entry names is one of that op's; every
    TF input comes from somewhere, and every TF attribute without a default is set."""
    problems = []
    for t in MAPPED:
        e = TABLE[t]
        problems += [f"{t}: TF has no op {name}" for name in (e.type,) + e.also if tf_registry.get(name) is None]
        op_def = tf_registry.get(e.type)
        if op_def is None:
            continue
        attrs = {a.name for a in op_def.attr}
        args = [a for a in op_def.input_arg]
        arg_names = {a.name for a in args}
        for what, names, known in (("attribute", e.attrs.values(), attrs), ("input", e.inputs.values(), arg_names),
                                   ("attribute or input", e.derived, attrs | arg_names),
                                   ("input", _tf_names(e), arg_names)):
            problems += [f"{t}: {e.type} has no {what} {n}" for n in sorted(set(names) - known)]
        filled = set(e.inputs.values()) | set(e.derived)
        if e.ins is None:  # pygrad's inputs are the rest of TF's, in TF's order
            positional, variadic, _, _ = _rule(OpDef.all[t])
            rest = [a for a in args if a.name not in filled]
            lists = [a.name for a in rest if a.number_attr or a.type_list_attr]
            if variadic and not (lists or t.startswith(("Apply", "SparseApply"))) or \
                    not variadic and (lists or len(rest) != len(positional)):
                problems.append(f"{t}: inputs {positional}{' *' if variadic else ''}, TF's {[a.name for a in rest]}")
        else:
            unfilled = arg_names - filled - _tf_names(e)
            problems += [f"{t}: nothing gives {e.type}'s input {n}" for n in sorted(unfilled)]
        required = {a.name for a in op_def.attr if not a.HasField("default_value")}
        problems += [f"{t}: nothing sets {e.type}'s attribute {n}"
                     for n in sorted(required - set(e.attrs.values()) - set(e.derived))]
    assert problems == []


def _model(lib):
    """A small convnet with its loss, accuracy and a few array ops, weights as constants."""
    rng = np.random.RandomState(0)
    x = lib.placeholder(lib.float32, [None, 8, 8, 3], name="x")
    labels = lib.placeholder(lib.float32, [None, 10], name="labels")
    w = lib.constant(rng.randn(3, 3, 3, 4).astype(np.float32))
    h = lib.nn.relu(lib.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME") + lib.constant(np.ones(4, np.float32)))
    h = lib.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    h = lib.nn.avg_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    flat = lib.reshape(h, [-1, 2 * 2 * 4])
    logits = lib.matmul(flat, lib.constant(rng.randn(16, 10).astype(np.float32)), transpose_b=False)
    y = lib.nn.softmax(logits)
    loss = lib.reduce_mean(-lib.reduce_sum(labels * lib.log(y), axis=1))
    correct = lib.equal(lib.argmax(y, 1), lib.argmax(labels, 1))
    accuracy = lib.reduce_mean(lib.cast(correct, lib.float32))
    both = lib.concat([lib.expand_dims(loss, 0), lib.expand_dims(accuracy, 0)], axis=0)
    return lib.identity(lib.transpose(lib.tile(lib.expand_dims(both, 1), [1, 3])) / 2.0, name="out")


def _array_ops(lib):
    """Array, indexing and sequence ops on a fed matrix and fed indices (the pad has a constant
    other than 0: TF's PadV2, the table's primary type; with 0 TF1 emits Pad, one input fewer)."""
    x = lib.placeholder(lib.float32, [4, 6], name="x")
    i = lib.placeholder(lib.int32, [3], name="i")
    a, b = lib.split(x, 2, axis=1)
    parts = [lib.gather(a, i), lib.one_hot(i, 3), lib.slice(b, [0, 0], [3, 3]), x[1:, ::2][:3],
             lib.squeeze(lib.stack([b[:3], a[:3]], axis=1)[:, :1], [1]),
             lib.where(lib.greater(a[:3], 0.0), lib.cumsum(a[:3], axis=1), lib.nn.top_k(b[:3], 3).values),
             lib.pad(a, [[1, 0], [0, 0]], constant_values=1.0)[:3], lib.reverse(b, [0])[:3],
             lib.sigmoid(lib.maximum(a, b))[:3]]
    return lib.add_n([p * 1.0 for p in parts])


@pytest.mark.parametrize("build", [_model, _array_ops])
def test_a_model_has_tf1s_node_types(tf_peer, build):
    """The model's pygrad ops, mapped through the table (with a Const for each attribute TF takes
    as an input), are the node types TF1 emits for the same code."""
    primary = {also: e.type for e in TABLE.values() for also in e.also}
    g = tf_peer.Graph()
    with g.as_default():
        build(tf_peer)
    tf_types = collections.Counter(primary.get(op.type, op.type) for op in g.get_operations())
    with tf.Graph().as_default() as pg:
        build(tf)
    ours = collections.Counter()
    for op in pg.get_operations():
        ours[op.opdef.tf.type] += 1
        ours["Const"] += len(op.opdef.tf.inputs)
    assert ours == tf_types
