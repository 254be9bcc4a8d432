"""tf.data: input pipelines (Dataset) and the iterators that feed their elements to a graph."""
from pygrad.data import experimental  # noqa: F401
from pygrad.data.dataset_ops import AUTOTUNE, Dataset  # noqa: F401
from pygrad.data.iterator_ops import (Iterator, get_output_shapes, get_output_types,  # noqa: F401
                                      make_initializable_iterator, make_one_shot_iterator)
from pygrad.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset  # noqa: F401
