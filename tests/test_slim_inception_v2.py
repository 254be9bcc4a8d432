"""slim.nets.inception_v2 against TF-Slim's (the tf_slim fixture), beyond the logits that
tests/test_slim_nets.py compares: inception_v2_base up to each end point and with a depth
multiplier builds TF-Slim's variables and end_points, and bad arguments raise as TF-Slim's."""
import pytest
from slim_check import quiet

import pygrad as tf
import pygrad.contrib.slim as slim  # noqa: PLR0402  (the import TF-Slim programs write)
from pygrad.contrib.slim.nets import inception

END_POINTS = ["Conv2d_1a_7x7", "Mixed_4a"]  # Mixed_5c, the whole base, is test_slim_nets.py's


def build(lib, sl, nets, **kwargs):
    """(variables [(name, shape)], end_points [(key, shape)]) of inception_v2_base."""
    graph = lib.Graph()
    with graph.as_default(), quiet(lib), sl.arg_scope(nets.inception_v2_arg_scope()):
        _, end_points = nets.inception_v2_base(lib.placeholder(lib.float32, [1, 64, 64, 3]), **kwargs)
        return ([(v.op.name, tuple(v.shape.as_list())) for v in lib.global_variables()],
                [(k, tuple(v.shape.as_list())) for k, v in end_points.items()])


@pytest.mark.parametrize("kwargs", [{"final_endpoint": e} for e in END_POINTS] + [
    {"depth_multiplier": 0.25, "min_depth": 8}])
def test_inception_v2_base_matches_tf_slim(tf_slim, tf_peer, kwargs):
    from tf_slim.nets import inception as tf_inception
    assert build(tf, slim, inception, **kwargs) == build(tf_peer, tf_slim, tf_inception, **kwargs)


def test_inception_v2_bad_arguments():
    x = tf.placeholder(tf.float32, [1, 64, 64, 3])
    with pytest.raises(ValueError, match="Unknown final endpoint Mixed_9z"):
        inception.inception_v2_base(x, final_endpoint="Mixed_9z")
    with pytest.raises(ValueError, match="depth_multiplier is not greater than zero"):
        inception.inception_v2(x, depth_multiplier=0)
