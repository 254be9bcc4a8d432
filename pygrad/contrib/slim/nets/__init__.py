"""TF-Slim's nets (tf.contrib.slim.nets): alexnet, inception (inception_v1, inception_v2,
inception_v3), overfeat, resnet_utils, resnet_v1, resnet_v2 and vgg, each a module as TF-Slim's,
and lenet and mobilenet_v1 as the models repository's, built on the contrib layers with TF-Slim's
scopes, variable names and end_points."""
from pygrad.contrib.slim.nets import (  # noqa: F401
                                      alexnet,
                                      inception,
                                      inception_v1,
                                      inception_v2,
                                      inception_v3,
                                      lenet,
                                      mobilenet_v1,
                                      overfeat,
                                      resnet_utils,
                                      resnet_v1,
                                      resnet_v2,
                                      vgg,
)
