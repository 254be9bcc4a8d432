"""Device names, as TensorFlow 1 writes and merges them: DeviceSpec (tf.DeviceSpec), and the
entries of a graph's device stack (tf.device scopes), whose merge gives each op its device string.

pygrad records devices and runs every op on this process's CPU; the strings are TF's, so a
graph's ops, its exported GraphDef and the placement of tf.train.replica_device_setter read the
same as in TensorFlow."""

_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})


def _str_or_none(value):
    return None if value is None else str(value)


def _int_or_none(value):
    return None if value is None else int(value)


def _device_type(value):
    return value.upper() if value in ("cpu", "gpu") else _str_or_none(value)


class DeviceSpec:
    """A (possibly partial) device: job, replica, task, device type and index, each optional.
    TF1's tf.DeviceSpec: its fields can be set, parse_from_string and merge_from change it in place."""

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job, self.replica, self.task = job, replica, task
        self.device_type, self.device_index = device_type, device_index

    job = property(lambda self: self._job, lambda self, v: setattr(self, "_job", _str_or_none(v)))
    replica = property(lambda self: self._replica, lambda self, v: setattr(self, "_replica", _int_or_none(v)))
    task = property(lambda self: self._task, lambda self, v: setattr(self, "_task", _int_or_none(v)))
    device_type = property(lambda self: self._device_type,
                           lambda self, v: setattr(self, "_device_type", _device_type(v)))
    device_index = property(lambda self: self._device_index,
                            lambda self, v: setattr(self, "_device_index", _int_or_none(v)))

    @classmethod
    def from_string(cls, spec):
        """The spec of "/job:<name>/replica:<i>/task:<i>/device:<TYPE>:<i>" (every part optional;
        "/cpu:0", "/GPU:1" and "/device:GPU:*" name devices too)."""
        return cls(*parse(spec))

    def parse_from_string(self, spec):
        """Sets every field from spec (None where spec lacks it); returns self."""
        self.job, self.replica, self.task, self.device_type, self.device_index = parse(spec)
        return self

    def _fields(self):
        return self.job, self.replica, self.task, self.device_type, self.device_index

    def _merged(self, dev):
        return tuple(mine if theirs is None else theirs for mine, theirs in zip(self._fields(), dev._fields()))

    def merge_from(self, dev):
        """Sets the fields dev has (dev's take precedence)."""
        self.job, self.replica, self.task, self.device_type, self.device_index = self._merged(dev)

    def make_merged_spec(self, dev):
        """A new spec: this one with the fields dev has replaced by dev's."""
        return type(self)(*self._merged(dev))

    def replace(self, **kwargs):
        fields = dict(zip(("job", "replica", "task", "device_type", "device_index"), self._fields()))
        fields.update(kwargs)
        return type(self)(**fields)

    def to_string(self):
        """"/job:<name>/replica:<i>/task:<i>/device:<TYPE>:<i or *>", the parts set."""
        out = ""
        if self.job is not None:
            out += "/job:" + self.job
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            out += f"/device:{self.device_type}:{'*' if self.device_index is None else self.device_index}"
        return out

    def __eq__(self, other):
        return isinstance(other, type(self)) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return (f"<DeviceSpec(job={self.job}, replica={self.replica}, task={self.task}, "
                f"device_type={self.device_type}, device_index={self.device_index})>")


def parse(spec):
    """(job, replica, task, device_type, device_index) of a device string; ValueError, with TF's
    text, for a part that is not one of these."""
    if not isinstance(spec, str) and spec is not None:
        raise TypeError(f"a device must be a string, a DeviceSpec, a function of the op or None; got "
                        f"{type(spec).__name__} {spec!r}")
    job = replica = task = device_type = device_index = None
    for part in (spec or "").split("/"):
        y = part.split(":")
        if len(y) == 2 and y[0] == "job":
            job = y[1]
        elif len(y) == 2 and y[0] == "replica":
            replica = int(y[1])
        elif len(y) == 2 and y[0] == "task":
            task = int(y[1])
        elif len(y) in (1, 2) and y[0].upper() in _DEVICE_TYPES or len(y) == 3 and y[0] == "device":
            if device_type is not None:
                raise ValueError(f"Multiple device types are not allowed while parsing the device spec: {spec}.")
            device_type, index = (y[0].upper(), y[1] if len(y) == 2 else "*") if len(y) < 3 else (y[1], y[2])
            device_index = None if index == "*" else int(index)
        elif y[0] != "":
            raise ValueError(f"Unknown attribute '{y[0]}' is encountered while parsing the device spec: '{spec}'.")
    return job, replica, task, device_type, device_index


def canonical_name(device):
    """The to_string() of a device string or DeviceSpec ("" for None)."""
    if device is None:
        return ""
    return (device if isinstance(device, DeviceSpec) else DeviceSpec.from_string(device)).to_string()


class StackEntry:
    """One tf.device scope: None (ops inside take no device from the scopes around it), a device
    function of the op, or a (partial) spec merged under the op's device so far: the fields the
    inner scopes set win."""

    def __init__(self, device):
        self.function = device if callable(device) and not isinstance(device, DeviceSpec) else None
        self.is_break = device is None
        self.spec = None
        if not self.is_break and self.function is None:
            is_spec = isinstance(device, DeviceSpec)
            self.spec = DeviceSpec(*device._fields()) if is_spec else DeviceSpec.from_string(device)

    def apply(self, op):
        """op's device string after this scope, from op.device (the inner scopes' result)."""
        if self.function is not None:
            device = self.function(op)
            if isinstance(device, DeviceSpec):
                return device.to_string()
            if not isinstance(device, str):
                raise TypeError(f"the device function {getattr(self.function, '__name__', self.function)!r} "
                                f"returned {device!r} for op {op.name!r}; it must return a device string")
            return device
        return self.spec.make_merged_spec(DeviceSpec.from_string(op.device)).to_string()


def device_of(op, stack):
    """The device the stack of scopes (outermost first) gives op, innermost scope first."""
    for entry in reversed(stack):
        if entry.is_break:
            break
        if entry.spec is not None and not entry.spec.to_string():
            continue
        op._device = entry.apply(op)
    return op._device
