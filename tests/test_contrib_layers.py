"""tf.contrib.layers and tf.contrib.framework against TF-Slim (the tf_slim package on TensorFlow's
compat.v1 graph mode): each layer's variables, collections, outputs and gradients; the variable
helpers, checkpoint assignment, custom getters, sort, and the summaries."""
import numpy as np
import pytest
from peer import compare as compare_ops
from slim_check import assert_values, compare, quiet

import pygrad as tf

RNG = np.random.default_rng(5)
IMAGES = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
SEQ = RNG.standard_normal((3, 4, 5)).astype(np.float32)
IDS = np.array([[1, 4, 1], [0, 4, 2]], np.int64)

LAYER_CASES = {
    "conv2d_transpose": (lambda lib, sl, x: sl.conv2d_transpose(
        x, 4, [3, 3], stride=2, weights_regularizer=sl.l2_regularizer(0.1), scope="up"), [IMAGES]),
    "conv2d_transpose-valid": (lambda lib, sl, x: sl.conv2d_transpose(
        x, 2, 3, stride=[2, 1], padding="VALID", activation_fn=None), [IMAGES]),
    "separable_conv2d": (lambda lib, sl, x: sl.separable_conv2d(
        x, 5, [3, 3], depth_multiplier=2, weights_regularizer=sl.l2_regularizer(0.1),
        biases_regularizer=sl.l1_regularizer(0.2)), [IMAGES]),
    "separable_conv2d-depthwise-only": (lambda lib, sl, x: sl.separable_conv2d(
        x, None, 3, depth_multiplier=2, stride=2, padding="VALID"), [IMAGES]),
    "conv2d-rate": (lambda lib, sl, x: sl.conv2d(x, 4, [3, 3], rate=2), [IMAGES]),
    "separable_conv2d-rate": (lambda lib, sl, x: [sl.separable_conv2d(x, 4, 3, rate=[2, 3]),
                                                  sl.separable_conv2d(x, None, 3, rate=2, padding="VALID")],
                              [IMAGES]),
    "conv2d-normalizer-no-bias": (lambda lib, sl, x: sl.conv2d(
        x, 3, 1, normalizer_fn=sl.layer_norm, biases_initializer=None, trainable=False), [IMAGES]),
    "pools": (lambda lib, sl, x: [sl.max_pool2d(x, [3, 2], stride=[1, 2], padding="SAME"),
                                  sl.avg_pool2d(x, 2, stride=1), sl.avg_pool2d(x, 3, padding="SAME")], [IMAGES]),
    "layer_norm": (lambda lib, sl, x: [sl.layer_norm(x), sl.layer_norm(x, begin_norm_axis=-1, center=False),
                                       sl.layer_norm(x, begin_params_axis=1, scale=False)], [SEQ]),
    "fully_connected-rank3": (lambda lib, sl, x: sl.fully_connected(
        x, 4, activation_fn=lib.nn.tanh, weights_initializer=lib.truncated_normal_initializer(stddev=0.3),
        biases_initializer=lib.constant_initializer(0.1)), [SEQ]),
    "fully_connected-reuse": (lambda lib, sl, x: [sl.fully_connected(x, 3, scope="fc"),
                                                  sl.fully_connected(x, 3, scope="fc", reuse=True)], [SEQ[0]]),
    "batch_norm-rank3": (lambda lib, sl, x: [sl.batch_norm(x, scale=True), sl.batch_norm(x, fused=False),
                                             sl.batch_norm(x, updates_collections=None, decay=0.5)], [SEQ]),
    "batch_norm-rank2-inference": (lambda lib, sl, x: sl.batch_norm(
        x, is_training=False, param_initializers={"moving_mean": lib.constant_initializer(0.3)},
        param_regularizers={"beta": sl.l2_regularizer(0.5)}), [SEQ[0]]),
    "dropout-keep-all": (lambda lib, sl, x: sl.dropout(x, keep_prob=1.0), [SEQ]),
    "one_hot_encoding": (lambda lib, sl, y: sl.one_hot_encoding(y, 5, on_value=2.0),
                         [np.array([0, 3, 1], np.int32)]),
    "repeat": (lambda lib, sl, x: sl.repeat(x, 3, sl.conv2d, 4, [3, 3], scope="block"), [IMAGES]),
    "stack-fc": (lambda lib, sl, x: sl.stack(x, sl.fully_connected, [8, 6]), [SEQ[0]]),
    "stack-conv": (lambda lib, sl, x: sl.stack(x, sl.conv2d, [(4, [3, 3]), (5, [1, 1])], scope="convs"),
                   [IMAGES]),
    "relu-linear-layers": (lambda lib, sl, x: [sl.relu(x, 3), sl.linear(x, 2), sl.relu6(x, 2)], [SEQ[0]]),
}


@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_layer_matches_tf_slim(tf_slim, tf_peer, case):
    build, inputs = LAYER_CASES[case]
    compare(tf_slim, tf_peer, build, inputs)


@pytest.mark.parametrize("unique", [False, True])
def test_embed_sequence_matches_tf_contrib(tf_peer, unique):
    """contrib's embed_sequence (not in tf_slim): the model variable EmbedSequence/embeddings looked
    up per id, against TF's embedding_lookup of the same variable."""
    import tensorflow.compat.v1 as peer
    with peer.Graph().as_default() as g:
        emb = peer.get_variable("EmbedSequence/embeddings", [5, 3])
        want = peer.nn.embedding_lookup(emb, IDS)
        with peer.Session(graph=g) as sess:
            sess.run(peer.global_variables_initializer())
            table, want = sess.run([emb, want])
    out = tf.contrib.layers.embed_sequence(IDS, vocab_size=5, embed_dim=3, unique=unique)
    again = tf.contrib.layers.embed_sequence(IDS, scope="EmbedSequence", reuse=True, unique=unique)
    assert [v.name for v in tf.contrib.framework.get_model_variables()] == ["EmbedSequence/embeddings:0"]
    with tf.Session() as sess:
        tf.global_variables()[0].load(table, sess)
        got, got_again = sess.run([out, again])
    assert_values([got, got_again], [want, want], "embedding")
    with pytest.raises(ValueError, match="Must specify vocab size and embedding dimension"):
        tf.contrib.layers.embed_sequence(IDS, vocab_size=5)


def test_collections_aliases_and_variables_collections(tf_slim, tf_peer):
    def build(lib, sl, x):
        h = sl.conv2d(x, 2, 3, outputs_collections="outs", variables_collections={"weights": ["W"]}, scope="c")
        h = sl.max_pool2d(h, 2, outputs_collections=["outs"])
        return sl.fully_connected(sl.flatten(h), 2, variables_collections=["both"], outputs_collections="outs")

    ours = compare(tf_slim, tf_peer, build, [IMAGES])
    for lib in (tf, tf_peer):
        g = lib.Graph()
        with g.as_default(), quiet(lib):
            build(lib, tf.contrib.slim if lib is tf else tf_slim, lib.constant(IMAGES))
            outs = g.get_collection("outs")
            got = ([t.aliases for t in outs], [v.name for v in g.get_collection("W")],
                   [v.name for v in g.get_collection("both")])
        if lib is tf:
            ours = got
    assert ours == got


def test_dropout_keeps_and_scales_when_training():
    x = np.ones((400, 50), np.float32)
    flag = tf.placeholder(tf.bool, [])
    y = tf.contrib.slim.dropout(x, keep_prob=0.8, is_training=flag, seed=3)
    off = tf.contrib.slim.dropout(x, is_training=False)
    assert y.op.name.startswith("Dropout/") and off.op.name.startswith("Dropout_1/")
    with tf.Session() as sess:
        on, same = sess.run([y, off], {flag: True})
        np.testing.assert_array_equal(sess.run(y, {flag: False}), x)
    np.testing.assert_array_equal(same, x)
    assert set(np.unique(on)) <= {0.0, np.float32(1 / 0.8)} and abs((on == 0).mean() - 0.2) < 0.02


def test_bad_inputs_are_refused_as_tf_slim(tf_slim, tf_peer):
    for lib, sl in ((tf, tf.contrib.slim), (tf_peer, tf_slim)):
        with lib.Graph().as_default(), quiet(lib):
            with pytest.raises(ValueError, match="num_outputs type should be one of"):
                sl.fully_connected(lib.zeros([2, 3]), 2.0)
            with pytest.raises(ValueError, match="stack_args need to be a list or tuple"):
                sl.stack(lib.zeros([2, 3]), sl.fully_connected, 4)
            with pytest.raises(ValueError, match="begin_params_axis .* must be < rank"):
                sl.layer_norm(lib.zeros([2, 3]), begin_norm_axis=2)
            with pytest.raises(TypeError, match="include is provided but is not a list or a tuple"):
                sl.get_variables_to_restore(include="conv")
            with pytest.raises(ValueError, match="`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
                sl.conv2d(lib.zeros([1, 8, 8, 2]), 2, 3, stride=2, rate=2)
    with pytest.raises(ValueError, match="'NCHW' is not supported"):
        tf.contrib.slim.conv2d(tf.zeros([1, 3, 4, 4]), 2, 3, data_format="NCHW")
    with pytest.raises(ValueError, match=r"Conv.*4-D NHWC inputs, got inputs of shape \(2, 3\)"):
        tf.contrib.slim.conv2d(tf.zeros([2, 3]), 2, 3)
    with pytest.raises(ValueError, match="batch_weights, renorm and adjustment are not supported"):
        tf.contrib.slim.batch_norm(tf.zeros([2, 3]), renorm=True)


# ---------------------------------------------------------------- framework


def _model(lib, sl):
    x = lib.constant(IMAGES)
    with lib.variable_scope("net"):
        h = sl.conv2d(x, 3, 3, scope="conv1", normalizer_fn=sl.batch_norm)
        h = sl.fully_connected(sl.flatten(h), 4, scope="fc")
    sl.fully_connected(h, 2, scope="logits")
    sl.local_variable(lib.zeros([2]), name="counts")
    sl.global_variable(lib.ones([1]), name="g")
    sl.model_variable("extra", shape=[2], collections=["mine"], initializer=lib.zeros_initializer())
    sl.variable("plain", shape=[3], initializer=lib.ones_initializer(), device="/cpu:0")
    sl.get_or_create_global_step()


def test_variable_helpers_match_tf_slim(tf_slim, tf_peer):
    def lookups(lib, sl):
        def names(vs):
            return [v.name for v in vs]

        with lib.Graph().as_default() as g, quiet(lib):
            _model(lib, sl)
            with lib.variable_scope("net") as scope:
                pass
            return [names(sl.get_variables()), names(sl.get_variables("net")), names(sl.get_variables(scope)),
                    names(sl.get_variables(suffix="weights")), names(sl.get_model_variables()),
                    names(sl.get_model_variables("net", "beta")), names(sl.get_local_variables()),
                    names(sl.get_trainable_variables("logits")),
                    names(sl.get_variables_to_restore(include=["net", "logits"], exclude=["net/fc"])),
                    names(sl.get_variables_to_restore(exclude=["net/conv1/BatchNorm"])),
                    names(sl.get_variables_by_name("biases")), names(sl.get_variables_by_suffix("moving_mean")),
                    sl.get_unique_variable("net/fc/weights").name, names(g.get_collection("mine")),
                    names(sl.filter_variables(sl.get_model_variables(), ["weights", "beta"], ["fc"])),
                    sl.get_or_create_global_step().name, sl.get_variable_full_name(sl.get_variables("logits")[0])]

    assert lookups(tf, tf.contrib.slim) == lookups(tf_peer, tf_slim)
    with pytest.raises(ValueError, match="Couldn't find variable nope"):
        tf.contrib.framework.get_unique_variable("nope")


def test_assign_from_checkpoint_reads_tensorflows_checkpoint(tf_slim, tf_peer, tmp_path):
    path = str(tmp_path / "model.ckpt")
    with tf_peer.Graph().as_default() as g, quiet(tf_peer):
        _model(tf_peer, tf_slim)
        saver = tf_peer.train.Saver(tf_peer.global_variables())
        with tf_peer.Session(graph=g) as sess:
            sess.run(tf_peer.global_variables_initializer())
            want = {v.op.name: sess.run(v) for v in tf_peer.global_variables()}
            saver.save(sess, path)
    _model(tf, tf.contrib.slim)
    fw = tf.contrib.framework
    restore = fw.get_variables_to_restore(exclude=["logits"])
    op, feed = fw.assign_from_checkpoint(path, restore)
    later = fw.assign_from_checkpoint_fn(path, {"logits/weights": fw.get_unique_variable("logits/weights")})
    missing = tf.get_variable("not_in_checkpoint", [1])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(op, feed)
        got = {v.op.name: sess.run(v) for v in restore}
        later(sess)
        got["logits/weights"] = sess.run("logits/weights:0")
    assert_values([got[k] for k in sorted(got)], [want[k] for k in sorted(got)], "restored")
    with pytest.raises(ValueError, match=r"Checkpoint is missing variable \[not_in_checkpoint\]"):
        fw.assign_from_checkpoint(path, [missing])
    assert fw.assign_from_checkpoint(path, [missing], ignore_missing_vars=True)[1] == {}
    assert fw.assign_from_checkpoint_fn(path, [missing], ignore_missing_vars=True) is None
    with pytest.raises(ValueError, match="var_list cannot be empty"):
        fw.assign_from_checkpoint_fn(path, [])


def test_assign_from_values():
    v = tf.contrib.framework.model_variable("w", shape=[2, 2])
    op, feed = tf.contrib.framework.assign_from_values({"w": np.arange(4.0).reshape(2, 2)})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(op, feed)
        np.testing.assert_array_equal(sess.run(v), np.arange(4.0).reshape(2, 2))
    with pytest.raises(ValueError, match="Variable nope wasn't found"):
        tf.contrib.framework.assign_from_values({"nope": 1.0})


def test_custom_getters_nest_as_tensorflow(tf_peer):
    """variable_scope's custom_getter: the inner scope's getter wraps the outer's, which wraps the
    real getter, and both see the full name."""
    def run(lib):
        seen = []

        def getter(tag):
            def fn(getter, name, *args, **kwargs):
                seen.append((tag, name))
                kwargs["initializer"] = lib.constant_initializer(2.0 if tag == "outer" else 3.0)
                return getter(name + "_" + tag, *args, **kwargs)
            return fn

        with lib.Graph().as_default() as g:
            with lib.variable_scope("a", custom_getter=getter("outer")):
                with lib.variable_scope("b", custom_getter=getter("inner")):
                    v = lib.get_variable("v", [2])
                w = lib.get_variable("w", [1])
            with lib.Session(graph=g) as sess:
                sess.run(lib.global_variables_initializer())
                return seen, v.name, w.name, sess.run(v).tolist()

    assert run(tf) == run(tf_peer)


def test_sort_and_argsort_as_tensorflow(tf_peer):
    x = RNG.standard_normal((3, 4, 5))
    compare_ops(tf_peer, lambda m, a: [m.sort(a), m.sort(a, axis=1, direction="DESCENDING"),
                                       m.argsort(a, axis=0), m.argsort(a, direction="DESCENDING")], [x], wrt=[0])
    assert tf.contrib.framework.sort is tf.sort and tf.contrib.framework.nest is tf.nest
    with pytest.raises(ValueError, match="should be one of ASCENDING, DESCENDING"):
        tf.sort(x, direction="UP")


def test_summaries_as_tf_slim(tf_slim, tf_peer):
    def names(lib, sl):
        with lib.Graph().as_default() as g, quiet(lib):
            x = lib.constant(IMAGES)
            sl.summarize_activation(lib.nn.relu6(x, name="act"))
            sl.summarize_tensors([lib.reduce_sum(x, name="total"), x])
            sl.summarize_tensor(lib.constant(True))
            return sorted(op.op.name for op in g.get_collection(lib.GraphKeys.SUMMARIES))

    assert names(tf, tf.contrib.layers) == names(tf_peer, tf_slim)


def test_regularizers_as_tf_slim(tf_slim, tf_peer):
    """l1_l2_regularizer (either scale 0 leaves the other one), sum_regularizer and
    apply_regularization (on a list, and on the WEIGHTS collection): TF-Slim's values, op names
    and REGULARIZATION_LOSSES; their errors."""
    w0, w1 = RNG.standard_normal((3, 2)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)

    def run(lib, sl):
        with lib.Graph().as_default() as g, quiet(lib):
            a, b = lib.Variable(w0, name="a"), lib.Variable(w1, name="b")
            lib.add_to_collection(lib.GraphKeys.WEIGHTS, b)
            outs = [sl.l1_l2_regularizer(0.1, 0.2)(a), sl.l1_l2_regularizer(0.0, 0.5)(a),
                    sl.l1_l2_regularizer(0.3, 0.0, scope="only_l1")(b),
                    sl.sum_regularizer([sl.l1_regularizer(0.3), None, sl.l2_regularizer(0.5)], scope="both")(a),
                    sl.apply_regularization(sl.l1_l2_regularizer(0.01, 0.02), [a, b]),
                    sl.apply_regularization(sl.l2_regularizer(0.25))]
            assert sl.l1_l2_regularizer(0.0, 0.0)(a) is None and sl.sum_regularizer([None]) is None
            with lib.Session(graph=g) as sess:
                sess.run(lib.global_variables_initializer())
                return ([t.op.name for t in outs], [t.op.name for t in g.get_collection(
                    lib.GraphKeys.REGULARIZATION_LOSSES)], sess.run(outs))

    ours, theirs = run(tf, tf.contrib.layers), run(tf_peer, tf_slim)
    assert ours[:2] == theirs[:2]
    assert_values(ours[2], theirs[2], "penalty")
    assert tf.contrib.slim.l1_l2_regularizer is tf.contrib.layers.l1_l2_regularizer
    assert tf.contrib.slim.sum_regularizer is tf.contrib.layers.sum_regularizer
    for bad in (lambda: tf.contrib.layers.l1_l2_regularizer(1, 0.5), lambda: tf.contrib.layers.l1_l2_regularizer(
            0.5, 2)):
        with pytest.raises(ValueError, match=r"scale_l[12] cannot be an integer"):
            bad()
    with pytest.raises(ValueError, match="No weights to regularize."):
        tf.contrib.slim.apply_regularization(tf.contrib.layers.l2_regularizer(0.1))
    with pytest.raises(ValueError, match="regularizer must return a scalar Tensor instead of a Tensor with rank 1"):
        tf.contrib.layers.apply_regularization(lambda w: w * 2.0, [tf.constant([1.0, 2.0])])


def test_summarize_collection_and_activations_as_tf_slim(tf_slim, tf_peer):
    """summarize_collection (a name filter; scalars and histograms) and summarize_activations
    (ACTIVATIONS, relus with their zero fraction): TF-Slim's summaries, tags and bytes (of ops exact
    in both, so that the histograms agree to the bit)."""
    def run(lib, sl):
        with lib.Graph().as_default() as g, quiet(lib):
            x = lib.constant(IMAGES)
            for t in (lib.nn.relu(x, name="block/relu"), lib.abs(x, name="block/abs"),
                      lib.nn.relu(x - 0.5, name="other/relu")):
                lib.add_to_collection(lib.GraphKeys.ACTIVATIONS, t)
            for t in (lib.reduce_mean(x, name="stats/mean"), lib.identity(x, name="stats/x"), lib.constant("s")):
                lib.add_to_collection("mine", t)
            made = sl.summarize_activations("block/") + sl.summarize_collection("mine") + \
                sl.summarize_collection("mine", name_filter="stats/m")
            with lib.Session(graph=g) as sess:
                return [None if s is None else s.op.name for s in made], sess.run(lib.summary.merge_all())

    ours, theirs = run(tf, tf.contrib.layers), run(tf_peer, tf_slim)
    assert ours[0] == theirs[0] and ours[0][-2] is None  # the string tensor is not summarized
    assert ours[1] == theirs[1], (tf.Summary.FromString(ours[1]), tf.Summary.FromString(theirs[1]))
    assert tf.contrib.slim.summarize_collection is tf.contrib.layers.summarize_collection
    assert tf.contrib.slim.summarize_activations is tf.contrib.layers.summarize_activations


def test_arg_scope_keys_and_current_scope_as_tf_slim(tf_slim):
    """current_arg_scope is keyed by arg_scope_func_key (one key for a layer and its aliases, the
    str() of an undecorated function); nested scopes merge, an inner value wins, as TF-Slim's."""
    def scopes(sl):
        key = sl.arg_scope_func_key
        seen = [dict(sl.current_arg_scope())]
        with sl.arg_scope([sl.conv2d, sl.fully_connected], activation_fn=None, trainable=False):
            with sl.arg_scope([sl.convolution2d], padding="VALID", trainable=True) as sc:
                assert sc is sl.current_arg_scope()
                seen.append({k: dict(v) for k, v in sl.current_arg_scope().items()})
            seen.append({k: dict(v) for k, v in sl.current_arg_scope().items()})
        seen.append(dict(sl.current_arg_scope()))
        names = {key(sl.conv2d): "conv2d", key(sl.fully_connected): "fully_connected"}
        assert key(sl.conv2d) == key(sl.convolution2d) != key(sl.fully_connected)
        assert key(len) == str(len)
        return [{names[k]: v for k, v in s.items()} for s in seen]

    got = scopes(tf.contrib.slim)
    assert got == scopes(tf_slim)
    assert got[1] == {"conv2d": {"activation_fn": None, "trainable": True, "padding": "VALID"},
                      "fully_connected": {"activation_fn": None, "trainable": False}}
    assert tf.contrib.framework.current_arg_scope is tf.contrib.slim.current_arg_scope


def test_global_step_and_model_variable_helpers_as_tf_slim(tf_slim, tf_peer, caplog):
    """create_global_step (name, dtype, collections; once only), assert_or_get_global_step (found
    in GLOBAL_STEP or by the name global_step:0; TypeError for a float, non-scalar or non-tensor
    step; None, logged, when the collection holds two) and add_model_variable, as TF-Slim's."""
    def run(lib, sl):
        out = []
        with lib.Graph().as_default() as g:
            with lib.variable_scope("outer"):
                step = sl.create_global_step()
            out.append((step.name, step.dtype.base_dtype.name, step.shape.as_list(), step in lib.global_variables(),
                        step in lib.trainable_variables(), g.get_collection(lib.GraphKeys.GLOBAL_STEP) == [step]))
            out.append(sl.assert_or_get_global_step() is step)
            out.append(sl.assert_or_get_global_step(global_step_tensor=lib.constant(3, lib.int64)).name)
            with pytest.raises(ValueError, match='"global_step" already exists.'):
                sl.create_global_step()
            w = lib.Variable([1.0, 2.0], name="w")
            sl.add_model_variable(w)
            sl.add_model_variable(w)
            out.append([v.name for v in sl.get_model_variables()])
            for bad, message in ((lib.constant(1.0), "does not have integer type"),
                                 (lib.constant([1, 2]), "is not scalar"), (3, "must be a Variable or Tensor")):
                with pytest.raises(TypeError, match=f'Existing "global_step" {message}'):
                    sl.assert_or_get_global_step(global_step_tensor=bad)
            g.add_to_collection(lib.GraphKeys.GLOBAL_STEP, lib.constant(1, lib.int64))
            out.append(sl.assert_or_get_global_step())  # two in the collection: None, and an error logged
        with lib.Graph().as_default():  # not in the collection: found by its name (TF1's variable, not a resource)
            lib.Variable(0, dtype=lib.int64, name="global_step", use_resource=False)
            out.append(sl.assert_or_get_global_step().name)
            with pytest.raises(ValueError, match='"global_step" already exists.'):
                sl.create_global_step()
        with lib.Graph().as_default():
            lib.Variable(0.5, name="global_step", use_resource=False)
            with pytest.raises(TypeError, match="does not have integer type"):
                sl.assert_or_get_global_step()
        return out

    with caplog.at_level("ERROR"):
        got = run(tf, tf.contrib.slim)
    assert "Multiple tensors in global_step collection." in caplog.text
    assert got == run(tf_peer, tf_slim)
    assert got[0] == ("outer/global_step:0", "int64", [], True, False, True) and got[-1] == "global_step:0"
    assert tf.contrib.framework.create_global_step is tf.train.create_global_step
    assert tf.contrib.slim.add_model_variable is tf.contrib.framework.add_model_variable
