"""Reading event files back: each record as an Event (TensorFlow's message, pygrad/tf_protos.py),
and a run's scalar series."""
import glob
import logging
import os
import re

from pygrad import errors
from pygrad.summary.records import read_records

_log = logging.getLogger("pygrad")


def summary_iterator(path):
    """Yields the Events of one event file (tf.compat.v1.train.summary_iterator). As TF's, it yields
    the records before a damaged one, then raises DataLossError naming the file and the offset."""
    from pygrad.tf_protos import Event
    for data in read_records(path):
        yield Event.FromString(data)


def _name_order(path):
    """Orders names with numbers by their values (events.out.tfevents.<s>.<host>.2 before ....10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", os.path.basename(path))]


def event_files(logdir):
    """A run's event files, oldest first."""
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")), key=_name_order)


def read_scalars(logdir):
    """{tag: [(step, value), ...]} of every simple_value in a run's event files, in file order. As
    TensorBoard, a damaged record ends the reading of its file: the values before it are kept, the
    rest of that file is skipped with a warning (logger "pygrad"), and the next files are read."""
    series = {}
    for path in event_files(logdir):
        try:
            for event in summary_iterator(path):
                for value in event.summary.value:
                    if value.WhichOneof("value") == "simple_value":
                        series.setdefault(value.tag, []).append((event.step, value.simple_value))
        except errors.DataLossError as e:
            _log.warning("%s; the events before it are read, the rest of the file is skipped", e.message)
    return series
