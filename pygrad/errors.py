"""Error classes (as tf.errors) and the capture of the user's line that built an op."""
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class OpError(Exception):
    """An error tied to an op, like tf.errors.OpError."""

    def __init__(self, node_def=None, op=None, message=""):
        if message == "" and isinstance(node_def, str):
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message


class InvalidArgumentError(OpError, ValueError):
    """A bad value or shape, found when a graph runs (a missing or ill-shaped feed, ...)."""


class FailedPreconditionError(OpError):
    """The graph cannot run yet, for instance it reads a variable that was never initialized."""


class NotFoundError(OpError):
    pass


class UnimplementedError(OpError):
    pass


def user_site():
    """'file.py:42' of the innermost stack frame outside this package, or '<unknown>'."""
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR):
            return f"{filename}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def op_message(op_type, name, rule, site):
    """The one layout of op errors: "<Type> '<name>': <rule>\\n  op defined at <site>"."""
    return f"{op_type} '{name}': {rule}\n  op defined at {site}"
