"""tf.io: TFRecord files (pygrad/platform/tf_record.py), Example parsing and decoding
(pygrad/ops/parsing_ops.py, decode_ops.py), whole-file ops (pygrad/ops/io_ops.py) and tf.io.gfile,
TF 2's lower-case names for tf.gfile's functions (pygrad/platform/gfile.py, the one implementation)."""
import types

from pygrad.ops.decode_ops import decode_csv, decode_raw  # noqa: F401
from pygrad.ops.io_ops import matching_files, read_file, write_file  # noqa: F401
from pygrad.ops.parsing_ops import (FixedLenFeature, FixedLenSequenceFeature, RaggedFeature,  # noqa: F401
                                    SparseFeature, VarLenFeature, parse_example, parse_single_example)
from pygrad.ops.parsing_sequence import parse_sequence_example, parse_single_sequence_example  # noqa: F401
from pygrad.platform import gfile as _gfile
from pygrad.platform.tf_record import (TFRecordCompressionType, TFRecordOptions, TFRecordWriter,  # noqa: F401
                                       tf_record_iterator)

# tf.io.gfile.<name> -> tf.gfile.<name>
_GFILE_NAMES = {"GFile": "GFile", "exists": "Exists", "isdir": "IsDirectory", "makedirs": "MakeDirs", "mkdir": "MkDir",
                "listdir": "ListDirectory", "glob": "Glob", "remove": "Remove", "rmtree": "DeleteRecursively",
                "rename": "Rename", "copy": "Copy", "stat": "Stat"}
gfile = types.ModuleType("pygrad.io.gfile", "tf.io.gfile: TF 2's names for tf.gfile's functions.")
for _new, _old in _GFILE_NAMES.items():
    setattr(gfile, _new, getattr(_gfile, _old))


def _walk(top, topdown=True, onerror=None):
    return _gfile.Walk(top, in_order=topdown)


gfile.walk = _walk

# tf.python_io: TF1's name for the TFRecord part
python_io = types.ModuleType("pygrad.python_io", "tf.python_io: TFRecord files.")
for _name in ("TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"):
    setattr(python_io, _name, globals()[_name])
