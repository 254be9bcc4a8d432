"""slim.nets against TF-Slim's nets (the tf_slim fixture): each net, built with its arg_scope in
both, has TF-Slim's variables (names, shapes, order) and end_points (keys, static shapes); with
TensorFlow's initial values copied in, the logits agree. Inputs are the smallest each net allows
and num_classes is 10; batch norm and dropout in inference mode (their training modes are
test_slim.py's). The values are compared once per code path: vgg_16, vgg_19 and overfeat (whose
fc6 alone holds 100M weights) share their code with vgg_a and alexnet_v2, the deeper ResNets their
graph code with the 50-layer ones (their blocks are compared). ResNet's output_stride (its last
units atrous) is compared at 8 and 16, and with gradients and batch norm's updates in a narrow
ResNet."""
import numpy as np
import pytest
from slim_check import compare, quiet

import pygrad as tf
import pygrad.contrib.slim as slim  # noqa: PLR0402  (the import TF-Slim programs write)
from pygrad.contrib.slim.nets import inception, vgg

TOL = 1e-4  # relative to the largest logit

# id: (module, net, arg_scope, input size, batch, is_training, compare values[, the net's other arguments])
CASES = {
    "alexnet_v2": ("alexnet", "alexnet_v2", "alexnet_v2_arg_scope", 195, 1, False, True),
    "vgg_a": ("vgg", "vgg_a", "vgg_arg_scope", 224, 1, False, True),
    "vgg_16": ("vgg", "vgg_16", "vgg_arg_scope", 224, 1, False, False),
    "vgg_19": ("vgg", "vgg_19", "vgg_arg_scope", 224, 1, False, False),
    "overfeat": ("overfeat", "overfeat", "overfeat_arg_scope", 231, 1, False, False),
    "resnet_v1_50": ("resnet_v1", "resnet_v1_50", "resnet_arg_scope", 64, 2, False, True),
    "resnet_v2_50": ("resnet_v2", "resnet_v2_50", "resnet_arg_scope", 64, 2, False, True),
    "inception_v1": ("inception_v1", "inception_v1", "inception_v1_arg_scope", 193, 1, False, True),
    "inception_v2": ("inception_v2", "inception_v2", "inception_v2_arg_scope", 64, 1, False, True),
    "inception_v3": ("inception_v3", "inception_v3", "inception_v3_arg_scope", 107, 1, False, True),
    # output_stride: the last blocks atrous (dilated), dense logits without the global pool
    "resnet_v1_50-output_stride_8": ("resnet_v1", "resnet_v1_50", "resnet_arg_scope", 33, 1, False, True,
                                     {"output_stride": 8, "global_pool": False}),
    "resnet_v2_50-output_stride_16": ("resnet_v2", "resnet_v2_50", "resnet_arg_scope", 45, 1, False, True,
                                      {"output_stride": 16, "global_pool": False}),
}


def run(lib, sl, nets, case, images, weights=None):
    """(variables [(name, shape)], end_points {key: shape}, logits, weights) of the net in a new
    graph; the last two None when the case compares no values."""
    module, net, scope_fn, _, _, is_training, values, *kwargs = CASES[case]
    module = getattr(nets, module)
    graph = lib.Graph()
    with graph.as_default(), quiet(lib):
        x = lib.placeholder(lib.float32, images.shape)
        with sl.arg_scope(getattr(module, scope_fn)()):
            logits, end_points = getattr(module, net)(x, num_classes=10, is_training=is_training, **dict(*kwargs))
        variables = [(v.op.name, tuple(v.shape.as_list())) for v in lib.global_variables()]
        shapes = [(k, tuple(v.shape.as_list())) for k, v in end_points.items()]
        if not values:
            return variables, shapes, None, None
        with lib.Session(graph=graph) as sess:
            if weights is None:
                sess.run(lib.global_variables_initializer())
                weights = sess.run(lib.global_variables())
            else:
                for v, w in zip(lib.global_variables(), weights):
                    v.load(w, sess)
            return variables, shapes, sess.run(logits, {x: images}), weights


@pytest.mark.parametrize("case", sorted(CASES))
def test_net_matches_tf_slim(tf_slim, tf_peer, case):
    import tf_slim.nets as tf_nets
    size, batch = CASES[case][3], CASES[case][4]
    images = np.random.default_rng(1).uniform(-1, 1, (batch, size, size, 3)).astype(np.float32)
    want = run(tf_peer, tf_slim, tf_nets, case, images)
    got = run(tf, slim, slim.nets, case, images, weights=want[3])
    assert got[0] == want[0]
    assert got[1] == want[1]
    if want[2] is not None:
        scale = float(np.max(np.abs(want[2])))
        np.testing.assert_allclose(got[2], want[2], rtol=TOL, atol=TOL * scale)


@pytest.mark.parametrize("net", ["resnet_v1_50", "resnet_v1_101", "resnet_v1_152", "resnet_v1_200",
                                 "resnet_v2_50", "resnet_v2_101", "resnet_v2_152", "resnet_v2_200"])
def test_resnet_blocks_match_tf_slim(tf_slim, monkeypatch, net):
    """The blocks each ResNet passes to resnet_v1 or resnet_v2 (scope, unit arguments), caught
    without building the graph."""
    import tf_slim.nets as tf_nets

    def blocks(nets):
        module = getattr(nets, net[:9])
        monkeypatch.setattr(module, net[:9], lambda inputs, blocks, *args, **kwargs: blocks)
        return [(b.scope, b.unit_fn.__name__, b.args) for b in getattr(module, net)(None)]

    assert blocks(slim.nets) == blocks(tf_nets)


@pytest.mark.parametrize("version", ["resnet_v1", "resnet_v2"])
def test_atrous_resnet_trains_as_tf_slim(tf_slim, tf_peer, version):
    """A narrow ResNet at output_stride 4 (its three units at rates 1, 2 and 4), in training mode:
    variables, the dense logits, the gradients (wrt the images and every variable) and batch norm's
    updates agree with TF-Slim's, within TOL: the gradients of the first layers, through the
    batch-normalized ones, differ by up to 2.5e-5 between the two float32 computations (and by
    up to 8e-5 in the same net without output_stride)."""
    import tf_slim.nets  # noqa: F401  (sl.nets below)

    def build(lib, sl, x):
        module = getattr(sl.nets, version)
        block = getattr(module, version + "_block")
        blocks = [block(f"block{i + 1}", base_depth=depth, num_units=1, stride=2) for i, depth in enumerate([2, 3, 4])]
        with sl.arg_scope(module.resnet_arg_scope()):
            net, end_points = getattr(module, version)(x, blocks, num_classes=3, global_pool=False, output_stride=4)
        return [net, end_points[f"{version}/block3"]]

    images = np.random.default_rng(3).uniform(-1, 1, (2, 21, 21, 3)).astype(np.float32)
    ours = compare(tf_slim, tf_peer, build, [images], tol=TOL)
    assert ours[1][0].shape == (2, 6, 6, 3)


@pytest.mark.parametrize("endpoint", ["MaxPool_3a_3x3", "Mixed_6a"])
def test_inception_v3_base_end_points_match_tf_slim(tf_slim, tf_peer, endpoint):
    from tf_slim.nets import inception as tf_inception

    def build(lib, module):
        graph = lib.Graph()
        with graph.as_default(), quiet(lib):
            net, end_points = module.inception_v3_base(lib.placeholder(lib.float32, [1, 99, 99, 3]),
                                                       final_endpoint=endpoint, depth_multiplier=0.5)
            return net.shape.as_list(), [(k, v.shape.as_list()) for k, v in end_points.items()], \
                [(v.op.name, v.shape.as_list()) for v in lib.global_variables()]

    assert build(tf, inception) == build(tf_peer, tf_inception)


def test_nets_bad_arguments():
    x = tf.placeholder(tf.float32, [1, 99, 99, 3])
    with pytest.raises(ValueError, match="Unknown final endpoint Mixed_9z"):
        inception.inception_v3_base(x, final_endpoint="Mixed_9z")
    with pytest.raises(ValueError, match="depth_multiplier is not greater than zero"):
        inception.inception_v3(x, depth_multiplier=0)
    with pytest.raises(ValueError, match="Unknown final endpoint"):
        inception.inception_v1_base(x, final_endpoint="Logits")
    assert vgg.vgg_16.default_image_size == 224 and vgg.vgg_d is vgg.vgg_16
