"""tf.lookup: the lookup tables of pygrad/ops/lookup_ops.py under TF 1.15's names in this namespace."""
from pygrad.ops.lookup_ops import (KeyValueTensorInitializer, StaticHashTable, TextFileIndex,  # noqa: F401
                                   TextFileInitializer)
