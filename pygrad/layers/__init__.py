"""tf.layers: TF1's layers, as classes and functional forms."""
from pygrad.layers.base import Layer  # noqa: F401
from pygrad.layers.convolutional import (AveragePooling2D, Conv2D, Conv2DTranspose, MaxPooling2D,  # noqa: F401
                                         SeparableConv2D, average_pooling2d, conv2d, conv2d_transpose,
                                         max_pooling2d, separable_conv2d)
from pygrad.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten  # noqa: F401
from pygrad.layers.normalization import BatchNormalization, batch_normalization  # noqa: F401

Convolution2D = Conv2D
Convolution2DTranspose = Conv2DTranspose
Deconvolution2D = Conv2DTranspose
MaxPool2D = MaxPooling2D
SeparableConvolution2D = SeparableConv2D
AveragePool2D = AveragePooling2D
convolution2d = conv2d
convolution2d_transpose = conv2d_transpose
