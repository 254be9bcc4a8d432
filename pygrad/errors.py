"""Error classes (as tf.errors) and the capture of the user's line that built an op."""
import errno
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


# TF's canonical error codes (tf.errors.OK, ..., tf.errors.UNAUTHENTICATED).
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, \
    RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, \
    UNAUTHENTICATED = range(17)


class OpError(Exception):
    """An error tied to an op, as tf.errors.OpError: node_def, op, message and error_code."""

    def __init__(self, node_def=None, op=None, message="", error_code=UNKNOWN):
        if message == "" and isinstance(node_def, str):  # OpError("message"), as some callers write
            node_def, message = None, node_def
        super().__init__(message)
        self.node_def = node_def if node_def is not None or op is None else op.node_def
        self.op = op
        self.message = message
        self.error_code = error_code


def _op_error(name, code, doc, *bases):
    def __init__(self, node_def=None, op=None, message=""):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,) + bases, {"__init__": __init__, "__doc__": doc, "__module__": __name__})


CancelledError = _op_error("CancelledError", CANCELLED, "An operation or step was cancelled.")
UnknownError = _op_error("UnknownError", UNKNOWN, "An error whose kind is not known.")
# A ValueError too, so that `except ValueError` also catches a bad value or shape found at run time.
InvalidArgumentError = _op_error("InvalidArgumentError", INVALID_ARGUMENT,
                                 "A bad value or shape, found when a graph runs (a missing feed, ...).", ValueError)
DeadlineExceededError = _op_error("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired.")
NotFoundError = _op_error("NotFoundError", NOT_FOUND, "A requested entity (a file, a checkpoint) was not found.")
AlreadyExistsError = _op_error("AlreadyExistsError", ALREADY_EXISTS, "An entity to create exists already.")
PermissionDeniedError = _op_error("PermissionDeniedError", PERMISSION_DENIED, "Not permitted.")
UnauthenticatedError = _op_error("UnauthenticatedError", UNAUTHENTICATED, "No valid credentials.")
ResourceExhaustedError = _op_error("ResourceExhaustedError", RESOURCE_EXHAUSTED, "A resource (memory, ...) ran out.")
FailedPreconditionError = _op_error("FailedPreconditionError", FAILED_PRECONDITION,
                                    "The graph cannot run yet, for instance it reads a variable never initialized.")
AbortedError = _op_error("AbortedError", ABORTED, "An operation was aborted.")
OutOfRangeError = _op_error("OutOfRangeError", OUT_OF_RANGE, "Past the end of a valid range (an exhausted input).")
UnimplementedError = _op_error("UnimplementedError", UNIMPLEMENTED, "An operation that is not implemented.")
InternalError = _op_error("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _op_error("UnavailableError", UNAVAILABLE, "A service is not available now.")
DataLossError = _op_error("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")


# TF's errno -> error code table (ErrnoToCode, as absl's ErrnoToStatusCode); any other errno is UNKNOWN.
_ERRNO_CLASSES = {
    InvalidArgumentError: ["EINVAL", "ENAMETOOLONG", "E2BIG", "EDESTADDRREQ", "EDOM", "EFAULT", "EILSEQ", "ENOPROTOOPT",
                           "ENOTSOCK", "ENOTTY", "EPROTOTYPE", "ESPIPE"],
    DeadlineExceededError: ["ETIMEDOUT"],
    NotFoundError: ["ENODEV", "ENOENT", "ENOMEDIUM", "ENXIO", "ESRCH"],
    AlreadyExistsError: ["EEXIST", "EADDRNOTAVAIL", "EALREADY", "ENOTUNIQ"],
    PermissionDeniedError: ["EPERM", "EACCES", "ENOKEY", "EROFS"],
    FailedPreconditionError: ["ENOTEMPTY", "EISDIR", "ENOTDIR", "EADDRINUSE", "EBADF", "EBADFD", "EBUSY", "ECHILD",
                              "EISCONN", "EISNAM", "ENOTBLK", "ENOTCONN", "EPIPE", "ESHUTDOWN", "ETXTBSY", "EUNATCH"],
    ResourceExhaustedError: ["ENOSPC", "EDQUOT", "EMFILE", "EMLINK", "ENFILE", "ENOBUFS", "ENOMEM", "EUSERS"],
    OutOfRangeError: ["ECHRNG", "EFBIG", "EOVERFLOW", "ERANGE"],
    UnimplementedError: ["ENOPKG", "ENOSYS", "ENOTSUP", "EAFNOSUPPORT", "EPFNOSUPPORT", "EPROTONOSUPPORT",
                         "ESOCKTNOSUPPORT", "EXDEV"],
    UnavailableError: ["EAGAIN", "ECOMM", "ECONNREFUSED", "ECONNABORTED", "ECONNRESET", "EINTR", "EHOSTDOWN",
                       "EHOSTUNREACH", "ENETDOWN", "ENETRESET", "ENETUNREACH", "ENOLCK", "ENOLINK", "ENONET"],
    AbortedError: ["EDEADLK", "ESTALE"],
    CancelledError: ["ECANCELED"],
}
_ERRNO_CLASS = {getattr(errno, n): cls for cls, names in _ERRNO_CLASSES.items() for n in names if hasattr(errno, n)}


def from_os_error(e, context, filename=None):
    """The tf.errors error TF raises for an OSError of a file operation: the class its errno maps to
    (UnknownError for none), the message "<context>: <file>; <strerror>" as TF's IOError."""
    cls = _ERRNO_CLASS.get(e.errno, UnknownError)
    return cls(None, None, f"{context}: {e.filename or filename}; {e.strerror or e}")


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
