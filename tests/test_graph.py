"""The graph with TensorFlow 1's semantics: unique names and name scopes, variable names, lookups by
name, collections, static shapes with unknown dimensions, default graphs, and Tensor identity."""
import numpy as np
import pytest

import pygrad as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


# ---------------------------------------------------------------- names


def test_unique_op_names():
    a = tf.placeholder(tf.float32, [2, 2])
    assert a.name == "Placeholder:0" and a.op.name == "Placeholder"
    assert tf.matmul(a, a).name == "MatMul:0"
    assert tf.matmul(a, a).name == "MatMul_1:0"
    assert tf.matmul(a, a).op.name == "MatMul_2"
    assert tf.matmul(a, a, name="MatMul_1").op.name == "MatMul_1_1"  # an explicit name that is taken
    assert tf.identity(a, name="mine").op.name == "mine"
    assert tf.identity(a, name="mine").op.name == "mine_1"



def test_operator_op_names_are_tf1s():
    """The names TF1 gives operator-built ops (read off tensorflow.compat.v1): lower-case for the
    arithmetic, the op type for comparisons, negation and abs."""
    a, b = tf.placeholder(tf.float32, [2, 2]), tf.placeholder(tf.float32, [2, 2])
    c = tf.placeholder(tf.bool, [2])
    built = [a + b, 1 + a, a - b, 2 - a, a * b, 2 * a, a / b, 2 / a, a // b, a ** b, 2 ** a, a @ b, -a, abs(a),
             a < b, a >= b, c & c, c | c, c ^ c, ~c, a[0]]
    assert [t.op.name for t in built] == [
        "add", "add_1", "sub", "sub_1", "mul", "mul_1", "truediv", "truediv_1", "floordiv", "pow", "pow_1",
        "matmul", "Neg", "Abs", "Less", "GreaterEqual", "and", "or", "xor", "LogicalNot", "strided_slice"]
    assert [t.op.type for t in built[:6:2]] == ["Add", "Sub", "Mul"]

def test_name_scopes():
    a = tf.placeholder(tf.float32, [2, 2])
    with tf.name_scope("scope") as scope:
        assert scope == "scope/"
        assert tf.matmul(a, a).op.name == "scope/MatMul"
        assert tf.matmul(a, a).op.name == "scope/MatMul_1"
        with tf.name_scope("inner") as inner:
            assert inner == "scope/inner/"
            assert tf.matmul(a, a).op.name == "scope/inner/MatMul"
    assert tf.matmul(a, a).op.name == "MatMul"
    with tf.name_scope("scope") as again:  # a second scope of the same name is made unique
        assert again == "scope_1/"
        assert tf.matmul(a, a).op.name == "scope_1/MatMul"
    with tf.name_scope("scope/") as reentered:  # a trailing '/' re-enters the existing scope
        assert reentered == "scope/"
        assert tf.matmul(a, a).op.name == "scope/MatMul_2"
        with tf.name_scope("scope/inner/"):  # the name is absolute, not relative to the current scope
            assert tf.matmul(a, a).op.name == "scope/inner/MatMul_1"
        with tf.name_scope("inner/"):
            assert tf.matmul(a, a).op.name == "inner/MatMul"
    with tf.name_scope("scope"):
        with tf.name_scope(None) as root:  # None returns to the top level
            assert root == ""
            assert tf.matmul(a, a).op.name == "MatMul_1"


def test_scope_and_op_names_share_one_namespace():
    a = tf.placeholder(tf.float32, [])
    with tf.name_scope("block"):
        tf.identity(a)
    assert tf.identity(a, name="block").op.name == "block_1"
    tf.identity(a, name="layer")
    with tf.name_scope("layer") as scope:
        assert scope == "layer_1/"


def test_names_are_unique_ignoring_case():
    a = tf.placeholder(tf.float32, [])
    assert tf.identity(a, name="Foo").op.name == "Foo"
    assert tf.identity(a, name="foo").op.name == "foo_1"


def test_variable_names():
    assert tf.Variable(1.0).name == "Variable:0"
    assert tf.Variable(1.0).name == "Variable_1:0"
    w = tf.Variable(1.0, name="W")
    assert w.name == "W:0" and w.op.name == "W" and w.op.type == "VariableV2"
    assert tf.Variable(1.0, name="W").name == "W_1:0"
    with tf.name_scope("layer"):
        v = tf.Variable(1.0, name="W")
    assert v.name == "layer/W:0"
    assert v.initializer.name == "layer/W/Assign"


def test_lookup_by_name():
    g = tf.get_default_graph()
    a = tf.placeholder(tf.float32, [2], name="a")
    b = tf.add(a, 1.0, name="b")
    w = tf.Variable(1.0, name="W")
    assert g.get_tensor_by_name("a:0") is a
    assert g.get_tensor_by_name("b:0") is b
    assert g.get_operation_by_name("b") is b.op
    assert g.get_tensor_by_name("W:0") is w.value()
    assert g.get_operation_by_name("W") is w.op
    with pytest.raises(KeyError):
        g.get_tensor_by_name("missing:0")
    with pytest.raises(KeyError):
        g.get_tensor_by_name("a:1")
    with pytest.raises(KeyError):
        g.get_operation_by_name("missing")
    with pytest.raises(ValueError):
        g.get_tensor_by_name("a")  # an op name, not a tensor name


def test_get_operations_in_creation_order():
    a = tf.constant(1.0, name="first")
    b = tf.identity(a, name="second")
    assert [op.name for op in tf.get_default_graph().get_operations()] == ["first", "second"]
    assert b.op.inputs == (a,)
    assert a.consumers() == [b.op]


# ---------------------------------------------------------------- collections


def test_variable_collections():
    w = tf.Variable(1.0, name="w")
    frozen = tf.Variable(2.0, name="frozen", trainable=False)
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [w, frozen]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == [w]
    assert tf.global_variables() == [w, frozen]
    assert tf.trainable_variables() == [w]
    assert w.trainable and not frozen.trainable


def test_variable_with_explicit_collections():
    local = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
    assert tf.global_variables() == []
    assert tf.local_variables() == [local]
    custom = tf.Variable(1.0, collections=["mine"])  # trainable: TF adds it to TRAINABLE_VARIABLES too
    assert tf.get_collection("mine") == [custom]
    assert tf.trainable_variables() == [custom]
    assert tf.global_variables() == []


def test_get_collection_scope_filter_is_re_match():
    with tf.name_scope("layer"):
        a = tf.Variable(1.0, name="W")
    with tf.name_scope("layer2"):
        b = tf.Variable(1.0, name="W")
    with tf.name_scope("other"):
        with tf.name_scope("layer"):
            c = tf.Variable(1.0, name="W")
    key = tf.GraphKeys.GLOBAL_VARIABLES
    assert tf.get_collection(key, "layer") == [a, b]  # a prefix match, as re.match
    assert tf.get_collection(key, "layer/") == [a]
    assert tf.get_collection(key, ".*layer/") == [a, c]
    assert tf.get_collection(key, "other") == [c]
    assert tf.get_collection(key, "nothing") == []
    assert tf.trainable_variables("layer2") == [b]
    assert tf.global_variables(scope="other/layer") == [c]


def test_add_to_collection():
    t = tf.constant(1.0, name="t")
    tf.add_to_collection("things", t)
    tf.add_to_collection("things", 42)  # items without a name are kept, but never match a scope
    tf.add_to_collections(["a", "b"], t)
    assert tf.get_collection("things") == [t, 42]
    assert tf.get_collection("things", "t") == [t]
    assert tf.get_collection("a") == [t] and tf.get_collection("b") == [t]
    assert tf.get_collection("never") == []


def test_get_collection_is_a_copy_and_ref_is_live():
    tf.add_to_collection("c", 1)
    copy = tf.get_collection("c")
    copy.append(2)
    assert tf.get_collection("c") == [1]
    ref = tf.get_collection_ref("c")
    ref.append(3)
    assert tf.get_collection("c") == [1, 3]


# ---------------------------------------------------------------- static shapes


def test_static_shape_inference_with_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    logits = tf.matmul(x, W) + b
    assert logits.shape.as_list() == [None, 10]
    assert tf.nn.softmax(logits).shape.as_list() == [None, 10]
    assert tf.reduce_sum(logits, 1).shape.as_list() == [None]
    assert tf.reduce_sum(logits, 1, keepdims=True).shape.as_list() == [None, 1]
    assert tf.reduce_mean(logits).shape.as_list() == []
    assert tf.argmax(logits, 1).shape.as_list() == [None]
    assert tf.transpose(logits).shape.as_list() == [10, None]
    assert tf.reshape(x, [-1, 28, 28, 1]).shape.as_list() == [None, 28, 28, 1]
    assert tf.matmul(x, x, transpose_b=True).shape.as_list() == [None, None]
    y = tf.placeholder(tf.float32, [None, 10])
    assert (y * logits).shape.as_list() == [None, 10]


def test_incompatible_static_shapes_fail_when_building():
    x = tf.placeholder(tf.float32, [None, 784])
    with pytest.raises(ValueError):
        tf.matmul(x, tf.zeros([783, 10]))
    with pytest.raises(ValueError):
        tf.placeholder(tf.float32, [None, 3]) + tf.zeros([4])


def test_unknown_rank_placeholder_and_set_shape():
    q = tf.placeholder(tf.float32)
    assert q.shape.ndims is None
    with pytest.raises(ValueError):
        q.shape.as_list()
    q.set_shape([None, 3])
    assert q.shape.as_list() == [None, 3]
    q.set_shape([4, None])  # merges
    assert q.get_shape().as_list() == [4, 3]
    with pytest.raises(ValueError):
        q.set_shape([5, 3])
    with pytest.raises(ValueError):
        q.set_shape([4, 3, 1])
    assert q.shape.as_list() == [4, 3]


def test_tensor_shape():
    x = tf.placeholder(tf.float32, [None, 784])
    s = x.get_shape()
    assert s is x.shape or s == x.shape
    assert s.as_list() == [None, 784]
    assert s[0].value is None and s[1].value == 784
    assert s.ndims == 2 and len(s) == 2
    assert [d.value for d in s] == [None, 784]
    assert s.is_compatible_with([5, 784]) and s.is_compatible_with([None, 784])
    assert s.is_compatible_with(tf.TensorShape(None))
    assert not s.is_compatible_with([5, 783])
    assert not s.is_compatible_with([5, 784, 1])
    assert not s.is_fully_defined() and s.num_elements() is None
    full = tf.TensorShape([3, 4])
    assert full.is_fully_defined() and full.num_elements() == 12
    assert full == tf.TensorShape([3, 4]) and full != tf.TensorShape([4, 3])
    assert int(full[1]) == 4
    assert full[1:].as_list() == [4]
    assert str(s) == "(?, 784)"
    assert tf.TensorShape(None).ndims is None
    assert s.merge_with([7, None]).as_list() == [7, 784]
    with pytest.raises(ValueError):
        s.merge_with([7, 1])


# ---------------------------------------------------------------- graphs


def test_reset_default_graph():
    g = tf.get_default_graph()
    a = tf.constant(1.0)
    tf.Variable(1.0)
    assert a.name == "Const:0"
    tf.reset_default_graph()
    assert tf.get_default_graph() is not g
    assert tf.get_default_graph().get_operations() == []
    assert tf.global_variables() == []
    assert tf.constant(1.0).name == "Const:0"


def test_reset_default_graph_inside_as_default_is_refused():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError):
            tf.reset_default_graph()


def test_graph_as_default():
    outer = tf.get_default_graph()
    g = tf.Graph()
    with g.as_default() as entered:
        assert entered is g and tf.get_default_graph() is g
        c = tf.constant(1.0)
        v = tf.Variable(2.0)
        assert c.graph is g and v.graph is g
        assert tf.global_variables() == [v]
        with tf.Session() as sess:
            assert sess.graph is g
            sess.run(v.initializer)
            assert sess.run(c + v) == 3.0
    assert tf.get_default_graph() is outer
    assert outer.get_operations() == []
    assert tf.global_variables() == []


def test_mixing_graphs_is_a_value_error():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
        va = tf.Variable(1.0)
    b = tf.constant(2.0)
    with pytest.raises(ValueError):
        a + b
    with pytest.raises(ValueError):
        tf.matmul(tf.reshape(a, [1, 1]), tf.reshape(b, [1, 1]))
    with pytest.raises(ValueError):
        va * b


def test_control_dependencies_from_another_graph_are_rejected():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
    with pytest.raises(ValueError):
        with tf.control_dependencies([a]):
            pass


# ---------------------------------------------------------------- Tensor as a Python value


def test_tensor_is_not_a_python_bool():
    t = tf.constant(1.0)
    with pytest.raises(TypeError):
        bool(t)
    with pytest.raises(TypeError):
        if t:
            pass
    with pytest.raises(TypeError):
        t and True
    v = tf.Variable(1.0)
    with pytest.raises(TypeError):
        bool(v)


def test_tensor_equality_is_identity():
    a = tf.constant(1.0)
    b = tf.constant(1.0)
    assert a == a and not (a == b) and a != b
    assert (a == b) is False
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert len({a, b, a}) == 2
    assert a in [a] and b not in [a]


def test_comparison_operators_build_ops():
    x = tf.placeholder(tf.float32, [3])
    lt = x < 1.0
    assert isinstance(lt, tf.Tensor) and lt.dtype == tf.bool
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(lt, {x: [0., 1., 2.]}), [True, False, False])


def test_gradient_override_map_refuses_what_it_cannot_honour():
    g = tf.Graph()
    with g.gradient_override_map({}):
        pass
    with pytest.raises(LookupError, match="RegisterGradient"):
        with g.gradient_override_map({"Identity": "CustomGrad"}):
            pass
