"""tf.contrib.learn.datasets: the MNIST loader under contrib's names, and load_dataset(name)."""
from pygrad.contrib.learn.datasets import mnist

__all__ = ["DATASETS", "load_dataset", "mnist"]

DATASETS = {"mnist": mnist.load_mnist}


def load_dataset(name, size="small", test_with_fake_data=False):
    """The data set called name, loaded with its defaults (for "mnist", read_data_sets on
    "MNIST-data"); size and test_with_fake_data concern only data sets pygrad does not ship."""
    if name not in DATASETS:
        raise ValueError(f"Name of dataset is not found: {name}")
    return DATASETS[name]()
