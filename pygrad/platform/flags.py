"""tf.app.flags / tf.flags: absl's flags, as TF1's have been since 1.5 (DEFINE_*, validators,
--flagfile, --helpfull, unknown flags refused), with TF1's two differences: FLAGS parses sys.argv
the first time a flag is read before an explicit parse, and the define functions still take
TF's old keyword names (flag_name, default_value, docstring)."""
import functools
import logging
import sys

from absl import flags as _absl
from absl.flags import (  # noqa: F401
    DEFINE, DEFINE_alias, DEFINE_enum, DEFINE_enum_class, DEFINE_flag, DEFINE_list, DEFINE_multi,
    DEFINE_multi_enum, DEFINE_multi_enum_class, DEFINE_multi_float, DEFINE_multi_integer, DEFINE_multi_string,
    DEFINE_spaceseplist, ArgumentParser, ArgumentSerializer, BooleanFlag, CantOpenFlagFileError, EnumFlag, Error,
    Flag, FlagHolder, FlagNameConflictsWithMethodError, FlagValues, IllegalFlagValueError, UnparsedFlagAccessError,
    UnrecognizedFlagError, ValidationError, adopt_module_key_flags, declare_key_flag, disclaim_key_flags,
    mark_bool_flags_as_mutual_exclusive, mark_flag_as_required, mark_flags_as_mutual_exclusive,
    mark_flags_as_required, multi_flags_validator, register_multi_flags_validator, register_validator,
    validator)

disclaim_key_flags()  # flags defined through this module belong to the module that calls it (--help lists them)
_RENAMED = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _old_names(define):
    @functools.wraps(define)
    def wrapper(*args, **kwargs):
        old = [k for k in _RENAMED if k in kwargs]
        for k in old:
            kwargs[_RENAMED[k]] = kwargs.pop(k)
        if old:
            logging.getLogger("pygrad").warning("Use of the keyword argument names (flag_name, default_value, "
                                                "docstring) is deprecated, please use (name, default, help) instead.")
        return define(*args, **kwargs)
    return wrapper


DEFINE_string = _old_names(_absl.DEFINE_string)
DEFINE_boolean = _old_names(_absl.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean
DEFINE_float = _old_names(_absl.DEFINE_float)
DEFINE_integer = _old_names(_absl.DEFINE_integer)


class _ParsedOnFirstRead:
    """absl's FLAGS, parsing sys.argv the first time a flag is read before any parse (TF1's
    wrapper; absl alone raises UnparsedFlagAccessError)."""

    def __init__(self, flags_object):
        self.__dict__["_wrapped"] = flags_object

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed() and not name.startswith("_") and name in wrapped:
            wrapped(sys.argv)
        return getattr(wrapped, name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name):
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name):
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name, flag):
        self.__dict__["_wrapped"][name] = flag

    def __contains__(self, name):
        return name in self.__dict__["_wrapped"]

    def __len__(self):
        return len(self.__dict__["_wrapped"])

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __str__(self):
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _ParsedOnFirstRead(_absl.FLAGS)
