"""TF-Slim's fine-tuning idiom, pygrad against TensorFlow with tf_slim: a resnet_v1_50 checkpoint
written by TensorFlow (10 classes) restored into a net with a new 3-class head, every variable but
the logits' (slim.get_variables_to_restore(exclude=...), slim.assign_from_checkpoint_fn), then the
new head alone trained (slim.learning.create_train_op(variables_to_train=...)): the restored
weights are TF's, the body stays as restored, and the losses of the first steps are TF's."""
import numpy as np
from slim_check import quiet

import pygrad as tf
import pygrad.contrib.slim as slim  # noqa: PLR0402  (the import TF-Slim programs write)

IMAGES = np.random.default_rng(3).uniform(-1, 1, (4, 64, 64, 3)).astype(np.float32)
LABELS = np.array([0, 2, 1, 2], np.int64)


def _pretrained(tf_peer, tf_slim, path):
    """A checkpoint of TF's resnet_v1_50 with 10 classes, in TensorFlow."""
    from tf_slim.nets import resnet_v1
    graph = tf_peer.Graph()
    with graph.as_default(), quiet(tf_peer):
        x = tf_peer.placeholder(tf_peer.float32, IMAGES.shape)
        with tf_slim.arg_scope(resnet_v1.resnet_arg_scope()):
            resnet_v1.resnet_v1_50(x, num_classes=10, is_training=False)
        with tf_peer.Session(graph=graph) as s:
            s.run(tf_peer.global_variables_initializer())
            return tf_peer.train.Saver().save(s, path)


def _finetune(lib, sl, nets, checkpoint, head_values=None, steps=4):
    """(losses, the body's restored values, the body's values after training, the head's names and
    initial values) of the idiom in lib; the head starts from head_values when given."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        x = lib.placeholder(lib.float32, IMAGES.shape)
        with sl.arg_scope(nets.resnet_v1.resnet_arg_scope()):
            logits, _ = nets.resnet_v1.resnet_v1_50(x, num_classes=3, is_training=False)
        logits = lib.reshape(logits, [-1, 3])
        restore = sl.get_variables_to_restore(exclude=["resnet_v1_50/logits"])
        init_fn = sl.assign_from_checkpoint_fn(checkpoint, restore)
        loss = lib.losses.sparse_softmax_cross_entropy(LABELS, logits)
        head = sl.get_variables("resnet_v1_50/logits")
        train_op = sl.learning.create_train_op(loss, lib.train.GradientDescentOptimizer(1e-7),
                                               variables_to_train=head)
        body = [v for v in restore if "weights" in v.op.name][:3]
        with lib.Session(graph=graph) as s:
            s.run(lib.global_variables_initializer())
            init_fn(s)
            if head_values is not None:
                for v, value in zip(head, head_values):
                    v.load(value, s)
            head_values = s.run(head)
            restored = s.run(body)
            losses = [float(s.run(train_op, {x: IMAGES})) for _ in range(steps)]
            return losses, restored, s.run(body), sorted(v.op.name for v in head), head_values


def test_a_tf_slim_checkpoint_fine_tunes_a_new_head_as_in_tensorflow(tf_slim, tf_peer, tmp_path):
    import tf_slim.nets as tf_nets
    checkpoint = _pretrained(tf_peer, tf_slim, str(tmp_path / "resnet"))
    theirs = _finetune(tf_peer, tf_slim, tf_nets, checkpoint)
    ours = _finetune(tf, slim, slim.nets, checkpoint, head_values=theirs[4])
    assert ours[3] == theirs[3] == ["resnet_v1_50/logits/biases", "resnet_v1_50/logits/weights"]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_array_equal(a, b)  # restored from TF's checkpoint
    for a, b in zip(ours[1], ours[2]):
        np.testing.assert_array_equal(a, b)  # the body is not trained
    np.testing.assert_allclose(ours[0], theirs[0], rtol=3e-5)
    assert ours[0][-1] < ours[0][0]
