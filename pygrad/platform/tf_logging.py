"""tf.logging: TF1's logging functions on a Python logger named "pygrad" (messages to stderr)."""
import logging as _logging
import sys

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR, _logging.FATAL



class _StderrHandler(_logging.StreamHandler):
    """Writes to whatever sys.stderr is when a message is logged."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


_logger = _logging.getLogger("pygrad")
if not _logger.handlers:
    _handler = _StderrHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_handler)
    _logger.setLevel(WARN)
    _logger.propagate = False

_counts = {}


def get_logger():
    """The logger tf.logging writes to (tf.get_logger; TF's is named "tensorflow", pygrad's "pygrad")."""
    return _logger


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.fatal(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def _counted(key):
    _counts[key] = _counts.get(key, 0) + 1
    return _counts[key] - 1


def log_every_n(level, msg, n, *args):
    """Logs on the 1st, (n+1)th, (2n+1)th ... call from one line of the program."""
    frame = sys._getframe(1)
    if _counted((frame.f_code.co_filename, frame.f_lineno)) % max(int(n), 1) == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    """Logs the first n calls from one line of the program."""
    frame = sys._getframe(1)
    if _counted((frame.f_code.co_filename, frame.f_lineno)) < n:
        _logger.log(level, msg, *args)


def log_if(level, msg, condition, *args):
    if condition:
        _logger.log(level, msg, *args)
