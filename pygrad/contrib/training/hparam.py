"""tf.contrib.training.HParams: named hyperparameters whose types come from their first values,
overridden from "name=value,..." strings (parse), dicts (override_from_dict) or JSON, with TF
1.15's parsing rules, type checks and messages."""
import json
import numbers
import re

__all__ = ["HParams", "parse_values"]

# One clause: name, an optional [index], '=', then one value or a [list] of values.
PARAM_RE = re.compile(r"""
  (?P<name>[a-zA-Z][\w]*)
  (\[\s*(?P<index>\d+)\s*\])?
  \s*=\s*
  ((?P<val>[^,\[]*)
   |
   \[(?P<vals>[^\]]*)\])
  ($|,\s*)""", re.VERBOSE)


def _parse_fail(name, var_type, value, values):
    raise ValueError(f"Could not parse hparam '{name}' of type '{var_type.__name__}' with value '{value}' in {values}")


def _reuse_fail(name, values):
    raise ValueError(f"Multiple assignments to variable '{name}' in {values}")


def _scalar(name, parse, var_type, m, values, results):
    try:
        value = parse(m["val"])
    except ValueError:
        _parse_fail(name, var_type, m["val"], values)
    if not m["index"]:
        if name in results:
            _reuse_fail(name, values)
        results[name] = value
        return
    if name in results and not isinstance(results[name], dict):
        _reuse_fail(name, values)
    indexed = results.setdefault(name, {})
    index = int(m["index"])
    if index in indexed:
        _reuse_fail(f"{name}[{index}]", values)
    indexed[index] = value


def _list(name, parse, var_type, m, values, results):
    if m["index"] is not None:
        raise ValueError("Assignment of a list to a list index.")
    if name in results:
        _reuse_fail(name, values)
    try:
        results[name] = [parse(e) for e in re.split("[ ,]", m["vals"]) if e]
    except ValueError:
        _parse_fail(name, var_type, m["vals"], values)


def parse_values(values, type_map, ignore_unknown=False):
    """{name: value, list of values, or {index: value}} of a string of comma-separated
    name=value, name=[v1,v2] or name[i]=value clauses, each value parsed as type_map[name]
    (booleans: true/True, false/False or an integer). ValueError for a malformed string, an
    unknown name (skipped with ignore_unknown), an unparsable value or a name assigned twice."""
    results = {}
    pos = 0
    while pos < len(values):
        m = PARAM_RE.match(values, pos)
        if not m:
            raise ValueError(f"Malformed hyperparameter value: {values[pos:]}")
        pos = m.end()
        m = m.groupdict()
        name = m["name"]
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        type_ = type_map[name]
        if type_ == bool:
            def parse(value, name=name):
                if value in ("true", "True"):
                    return True
                if value in ("false", "False"):
                    return False
                try:
                    return bool(int(value))
                except ValueError:
                    _parse_fail(name, bool, value, values)
        else:
            parse = type_
        if m["val"] is not None:
            _scalar(name, parse, type_, m, values, results)
        elif m["vals"] is not None:
            _list(name, parse, type_, m, values, results)
        else:
            _parse_fail(name, type_, "", values)
    return results


def _cast_to_type_if_compatible(name, param_type, value):
    """value as param_type; ValueError for a non-string into a string, a bool into a non-bool
    (or the reverse), a non-integer into an integer or a non-number into a number."""
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if issubclass(param_type, type(None)):
        return value
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise ValueError(fail)  # noqa: TRY004  (TF's exception)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)  # noqa: TRY004  (TF's exception)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)  # noqa: TRY004  (TF's exception)
    return param_type(value)


class HParams:
    """Hyperparameters as attributes: HParams(learning_rate=0.1, layers=[64, 32]). Each one's type
    (and whether it is a list) is that of the value it was added with."""

    _HAS_DYNAMIC_ATTRIBUTES = True

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        self._hparam_types = {}
        self._model_structure = model_structure
        if hparam_def:
            raise ValueError("HParams: hparam_def (an HParamDef protocol buffer) is not supported; "
                             "pass the values as keyword arguments")
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds the hyperparameter name; ValueError if name is an attribute already or value an
        empty list."""
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets an existing hyperparameter, the value cast to its type (ValueError if it cannot be,
        or if a list is given for a single value or the reverse; KeyError for an unknown name)."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast_to_type_if_compatible(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast_to_type_if_compatible(name, param_type, value))

    def del_hparam(self, name):
        """Removes the hyperparameter name, if there is one."""
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values):
        """Overrides values from a "name=value,..." string (see parse_values); returns self."""
        type_map = {name: param_type for name, (param_type, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict):
        """set_hparam for each name and value of the dict; returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_from_map(self, values_map):
        """Deprecated: override_from_dict."""
        return self.override_from_dict(values_map)

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """values() as a JSON string (json.dumps' options)."""
        return json.dumps(self.values(), indent=indent, separators=separators, sort_keys=sort_keys)

    def parse_json(self, values_json):
        """Overrides values from a JSON object string; returns self."""
        return self.override_from_dict(json.loads(values_json))

    def values(self):
        """{name: value} of the hyperparameters."""
        return {n: getattr(self, n) for n in self._hparam_types}

    def get(self, key, default=None):
        """The value of key, or default if there is no such hyperparameter; ValueError if default
        does not fit the hyperparameter's type."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            type_str = f"list<{param_type}>" if is_list else str(param_type)
            fail = f"Hparam '{key}' of type '{type_str}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for value in default if is_list else [default]:
                    _cast_to_type_if_compatible(key, param_type, value)
            except ValueError as e:
                raise ValueError(f"{fail}. {e}") from None
        return getattr(self, key)

    def __contains__(self, key):
        return key in self._hparam_types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return f"{type(self).__name__}({self})"
