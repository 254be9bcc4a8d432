"""tf.contrib.lookup: TF1's lookup tables and vocabulary tables (pygrad/ops/lookup_ops.py)."""
from pygrad.ops.lookup_ops import (FastHashSpec, HashTable, IdTableWithHashBuckets,  # noqa: F401
                                   KeyValueTensorInitializer, StrongHashSpec, TextFileIdTableInitializer,
                                   TextFileIndex, TextFileInitializer, TextFileStringTableInitializer,
                                   index_table_from_file, index_table_from_tensor, index_to_string_table_from_file,
                                   index_to_string_table_from_tensor)
