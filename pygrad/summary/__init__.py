"""tf.summary: summary ops, the event-file writer and reader, and the messages of event files
(tf.summary.Summary, Event, SessionLog, ...: TF's, from pygrad/tf_protos.py, built on first use)."""
from pygrad import proto
from pygrad.ops.summary_ops import (audio, histogram, image, merge, merge_all, scalar, tensor_summary,  # noqa: F401
                                    text)
from pygrad.summary.reader import event_files, read_scalars, summary_iterator  # noqa: F401
from pygrad.summary.writer import FileWriter, FileWriterCache  # noqa: F401

_MESSAGES = ("Event", "SessionLog", "Summary", "SummaryDescription", "SummaryMetadata", "TaggedRunMetadata")

__getattr__ = proto.lazy_messages(__name__, _MESSAGES)


def __dir__():
    return sorted([*globals(), *_MESSAGES])
