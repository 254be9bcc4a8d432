"""tf.contrib.training (HParams, create_train_op), tf.contrib.losses and tf.contrib.learn.datasets.
HParams has no installed reference: its behaviour and messages are TF 1.15's
tensorflow/contrib/training/python/training/hparam.py, checked here against Python's own parsing
(int(), float(), json) of the same text. create_train_op is compared with TF-Slim's
training.create_train_op (tf_slim.training, the contrib module TF-Slim ships) over a few steps;
the MNIST aliases with the tutorials' loader they name."""
import json

import numpy as np
import pytest
from slim_check import assert_values, quiet

import pygrad as tf
from pygrad.contrib.training import HParams
from pygrad.examples.tutorials.mnist import input_data

# ---------------------------------------------------------------- HParams

def test_hparams_values_types_and_json():
    h = HParams(learning_rate=0.1, units=100, act="relu", flag=True, layers=[64, 32])
    assert h.learning_rate == 0.1 and h.units == 100 and h.layers == [64, 32]
    assert h.values() == {"learning_rate": 0.1, "units": 100, "act": "relu", "flag": True, "layers": [64, 32]}
    assert json.loads(h.to_json()) == h.values()
    assert h.to_json(sort_keys=True, indent=1) == json.dumps(h.values(), sort_keys=True, indent=1)
    assert str(h) == str(sorted(h.values().items())) and repr(h) == f"HParams({h})"
    assert "units" in h and "nope" not in h and h.get("nope", 3) == 3 and h.get("units", 5) == 100


def test_hparams_parse_follows_python_parsing():
    h = HParams(lr=0.1, n=1, s="a", b=False, ls=[1.0], li=[1])
    text = "lr=-.54e3,n=-12, s=bar_1,b=true,ls=[1,1e-12],li=[3 4,5]"
    assert h.parse(text) is h
    assert h.values() == {"lr": float("-.54e3"), "n": int("-12"), "s": "bar_1", "b": True,
                          "ls": [float("1"), float("1e-12")], "li": [3, 4, 5]}
    for b, want in [("False", False), ("1", True), ("0", False)]:
        assert h.parse(f"b={b}").b is want


@pytest.mark.parametrize("text, message", [
    ("n=1.5", "Could not parse hparam 'n' of type 'int' with value '1.5' in n=1.5"),
    ("b=maybe", "Could not parse hparam 'b' of type 'bool' with value 'maybe' in b=maybe"),
    ("zz=1", "Unknown hyperparameter type for zz"),
    ("n=1,n=2", "Multiple assignments to variable 'n' in n=1,n=2"),
    ("=1", "Malformed hyperparameter value: =1"),
    ("n=[1,2]", "Must not pass a list for single-valued parameter: n"),
    ("li=3", "Must pass a list for multi-valued parameter: li."),
    ("li[0]=[1]", "Assignment of a list to a list index."),
])
def test_hparams_parse_errors_are_tfs(text, message):
    h = HParams(n=1, b=False, li=[1])
    with pytest.raises(ValueError) as e:
        h.parse(text)
    assert str(e.value) == message


def test_parse_values_maps_names_to_values_lists_and_indices():
    """parse_values, TF's example ("x=5,L=[1,2],arr[1]=3" gives {'x': 5, 'L': [1, 2], 'arr': {1: 3}})
    and its rules: indexed assignments gather in a dict, a name is assigned once, a list is not
    assigned to an index, an unknown name is an error unless ignore_unknown."""
    parse_values = tf.contrib.training.parse_values
    assert parse_values("x=5,L=[1,2],arr[1]=3", {"x": int, "L": int, "arr": int}) == {"x": 5, "L": [1, 2],
                                                                                       "arr": {1: 3}}
    got = parse_values("lr=1e-3, arr[0]=true,arr[ 2 ]=0,names=[a b,c]", {"lr": float, "arr": bool, "names": str})
    assert got == {"lr": float("1e-3"), "arr": {0: True, 2: False}, "names": ["a", "b", "c"]}
    assert parse_values("x=5,y=2", {"x": int}, ignore_unknown=True) == {"x": 5}
    assert parse_values("", {}) == {}
    for text, message in [("a=1,a=2", "Multiple assignments to variable 'a' in a=1,a=2"),
                          ("a[1]=1,a[1]=2", r"Multiple assignments to variable 'a\[1\]'"),
                          ("a=1,a[0]=2", "Multiple assignments to variable 'a'"),
                          ("a=[1],a=1", "Multiple assignments to variable 'a'"),
                          ("a[1]=[1,2,3]", "Assignment of a list to a list index."),
                          ("a=[1,x]", r"Could not parse hparam 'a' of type 'int' with value '1,x'"),
                          ("x=5,y=2", "Unknown hyperparameter type for y"),
                          ("a=1;b=2", "with value .1;b=2. in a=1;b=2"),  # the value runs to the comma
                          ("a=1,,b=2", "Malformed hyperparameter value: ,b=2")]:
        with pytest.raises(ValueError, match=message):
            parse_values(text, {"a": int, "x": int})


def test_hparams_set_add_override_and_type_checks():
    h = HParams(lr=0.1, n=1, s="a", b=False, li=[1])
    h.set_hparam("lr", 3)  # an int into a float is cast
    assert h.lr == 3.0 and type(h.lr) is float
    h.override_from_dict({"n": 7, "li": [2, 3]})
    assert (h.n, h.li) == (7, [2, 3])
    h.add_hparam("extra", "x")
    assert h.values()["extra"] == "x"
    bad = [("n", 1.5, "Could not cast hparam 'n' of type '<class 'int'>' from value 1.5"),
           ("s", 3, "Could not cast hparam 's' of type '<class 'str'>' from value 3"),
           ("b", 1, "Could not cast hparam 'b' of type '<class 'bool'>' from value 1"),
           ("lr", "x", "Could not cast hparam 'lr' of type '<class 'float'>' from value 'x'")]
    for name, value, message in bad:
        with pytest.raises(ValueError) as e:
            h.set_hparam(name, value)
        assert str(e.value) == message
    with pytest.raises(ValueError, match="Hyperparameter name is reserved: values"):
        h.add_hparam("values", 1)
    with pytest.raises(ValueError, match="Multi-valued hyperparameters cannot be empty: e"):
        h.add_hparam("e", [])
    with pytest.raises(ValueError, match="incompatible with default=x"):
        h.get("n", "x")
    h.del_hparam("extra")
    assert "extra" not in h and h.parse_json('{"n": 9}').n == 9


# ---------------------------------------------------------------- create_train_op

def _train(lib, training, weights=None, steps=3):
    """(losses, variables, summary tags, initial weights) of create_train_op's op with a
    transform_grads_fn and gradient summaries on a small regression."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        rng = np.random.default_rng(3)
        x, y = lib.constant(rng.standard_normal((5, 3)).astype(np.float32)), lib.constant(np.ones((5, 2), np.float32))
        w = lib.get_variable("w", [3, 2])
        b = lib.get_variable("b", [2], initializer=lib.zeros_initializer())
        loss = lib.reduce_mean(lib.square(lib.matmul(x, w) + b - y))
        op = training.create_train_op(loss, lib.train.MomentumOptimizer(0.1, 0.9), summarize_gradients=True,
                                      transform_grads_fn=lambda gv: [(g * 0.5, v) for g, v in gv])
        merged = lib.summary.merge_all()
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            if weights is None:
                weights = sess.run(w)
            w.load(weights, sess)
            losses = [sess.run(op) for _ in range(steps)]
            tags = sorted(v.tag for v in tf.Summary.FromString(sess.run(merged)).value)
            return losses, sess.run([w, b]), tags, weights


def test_contrib_training_create_train_op_matches_tf_slim(tf_slim, tf_peer):
    from tf_slim.training import training as peer_training
    want = _train(tf_peer, peer_training)
    got = _train(tf, tf.contrib.training, weights=want[3])
    assert_values(got[0], want[0], "loss")
    assert_values(got[1], want[1], "variable after training")
    assert got[2] == want[2] and want[0][-1] != want[0][0]


# ---------------------------------------------------------------- contrib.losses and contrib.learn

def test_contrib_losses_is_slim_losses():
    """TF 1.15's tensorflow/contrib/losses is the module TF-Slim exports as slim.losses (compared
    with TF-Slim's in tests/test_slim.py)."""
    assert tf.contrib.losses is tf.contrib.slim.losses
    for name in ["softmax_cross_entropy", "sigmoid_cross_entropy", "sparse_softmax_cross_entropy",
                 "mean_squared_error", "absolute_difference", "log_loss", "hinge_loss", "get_total_loss",
                 "get_losses", "add_loss", "get_regularization_losses", "compute_weighted_loss"]:
        assert callable(getattr(tf.contrib.losses, name)), name


def test_learn_datasets_are_the_tutorials_loader():
    datasets = tf.contrib.learn.datasets
    assert datasets.mnist.read_data_sets is input_data.read_data_sets
    assert datasets.mnist.load_mnist is input_data.load_mnist
    fake = datasets.mnist.read_data_sets("unused", fake_data=True, one_hot=True)
    assert fake.train.next_batch(2, fake_data=True) == input_data.read_data_sets(
        "unused", fake_data=True, one_hot=True).train.next_batch(2, fake_data=True)
    assert datasets.DATASETS["mnist"] is input_data.load_mnist  # load_dataset("mnist") reads "MNIST-data"
    with pytest.raises(ValueError, match="Name of dataset is not found: nope"):
        datasets.load_dataset("nope")

