"""tf.contrib.learn: the part TF1 programs still import, its datasets (MNIST)."""
from pygrad.contrib.learn import datasets  # noqa: F401
