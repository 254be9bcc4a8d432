"""tf.contrib.learn.datasets.mnist: the tutorials' MNIST loader (tf.examples.tutorials.mnist.
input_data), which is where TF 1 kept it too."""
from pygrad.examples.tutorials.mnist.input_data import (  # noqa: F401
    DEFAULT_SOURCE_URL,
    DataSet,
    Datasets,
    dense_to_one_hot,
    extract_images,
    extract_labels,
    load_mnist,
    read_data_sets,
)
