"""The ``checkpoint`` state file (a text-format CheckpointState) and the functions that find
checkpoints: latest_checkpoint, get_checkpoint_state, update_checkpoint_state, checkpoint_exists,
as TensorFlow's checkpoint_management.py. The state file is replaced atomically (temporary file,
fsync, rename), so a reader sees the old state or the new one, never a mix."""
import glob
import logging
import os
import re

from pygrad import errors
from pygrad.platform import gfile
from pygrad.train import checkpoint_bundle

DEFAULT_STATE_FILENAME = "checkpoint"
_log = logging.getLogger("pygrad")


class CheckpointState:
    """TensorFlow's CheckpointState message: the newest checkpoint and those still kept."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(), all_model_checkpoint_timestamps=(),
                 last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self):
        lines = [f'model_checkpoint_path: "{_escape(self.model_checkpoint_path)}"']
        lines += [f'all_model_checkpoint_paths: "{_escape(p)}"' for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text):
        """Parses the text format; ValueError on a line it cannot read."""
        state = cls()
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r'(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))', line)
            if m is None:
                raise ValueError(f"cannot parse line {line!r}")
            name, string, number = m.groups()
            if name == "model_checkpoint_path" and string is not None:
                state.model_checkpoint_path = _unescape(string)
            elif name == "all_model_checkpoint_paths" and string is not None:
                state.all_model_checkpoint_paths.append(_unescape(string))
            elif name == "all_model_checkpoint_timestamps" and number is not None:
                state.all_model_checkpoint_timestamps.append(float(number))
            elif name == "last_preserved_timestamp" and number is not None:
                state.last_preserved_timestamp = float(number)
            else:
                raise ValueError(f"unknown field in line {line!r}")
        return state

    def __repr__(self):
        return self.to_text()


def _escape(s):
    """C-style escaping, as protobuf's text format writes strings."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\\'':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def _unescape(s):
    out, i = bytearray(), 0
    simple = {"n": 10, "r": 13, "t": 9, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = s[i + 1:i + 2]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt.isdigit():
            digits = re.match(r"[0-7]{1,3}", s[i + 1:]).group(0)
            out.append(int(digits, 8))
            i += 1 + len(digits)
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", s[i + 2:]).group(0)
            out.append(int(digits, 16))
            i += 2 + len(digits)
        else:
            raise ValueError(f"bad escape in {s!r}")
    return out.decode("utf-8")


def _state_filename(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or DEFAULT_STATE_FILENAME)


def atomic_write_string_to_file(filename, contents):
    """Writes contents to a temporary file beside filename, fsyncs it and renames it over filename; an
    OSError becomes TF's error class for its errno."""
    tmp = checkpoint_bundle.temp_filename(filename)
    try:
        with open(tmp, "w") as f:
            f.write(contents)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, filename)
        checkpoint_bundle.fsync_dir(os.path.dirname(filename))
    except OSError as e:
        raise errors.from_os_error(e, "Writing the checkpoint state", filename) from e
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None, last_preserved_timestamp=None):
    """A CheckpointState whose list ends with model_checkpoint_path; with a relative save_dir,
    relative paths are made relative to it (as TensorFlow does)."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    timestamps = list(all_model_checkpoint_timestamps or [])
    if timestamps and len(timestamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths (got paths {paths} and "
                         f"timestamps {timestamps})")
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, timestamps, last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None, latest_filename=None,
                            all_model_checkpoint_timestamps=None, last_preserved_timestamp=None,
                            save_relative_paths=False):
    """Writes the state file of save_dir atomically. With save_relative_paths, absolute paths are
    stored relative to save_dir."""
    filename = _state_filename(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        rel = lambda p: os.path.relpath(p, save_dir) if os.path.isabs(p) else p  # noqa: E731
        model_checkpoint_path, paths = rel(model_checkpoint_path), [rel(p) for p in paths]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, paths, all_model_checkpoint_timestamps,
                                            last_preserved_timestamp)
    if filename == state.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           f"Please use a different save path.")
    atomic_write_string_to_file(filename, state.to_text())


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of checkpoint_dir (paths made absolute or joined to the directory), or
    None when there is no readable state file."""
    filename = _state_filename(checkpoint_dir, latest_filename)
    try:
        with open(filename) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _log.warning("%s: %s; checkpoint ignored", filename, e)
        return None
    try:
        state = CheckpointState.from_text(text)
    except ValueError as e:
        _log.warning("%s: %s; checkpoint ignored", filename, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    join = lambda p: p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)  # noqa: E731
    state.model_checkpoint_path = join(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [join(p) for p in state.all_model_checkpoint_paths]
    return state


def checkpoint_exists(checkpoint_prefix):
    """Whether a V2 checkpoint (its .index file) or a V1 file exists at the prefix."""
    return bool(glob.glob(glob.escape(checkpoint_bundle.index_filename(checkpoint_prefix)))) or \
        bool(glob.glob(checkpoint_prefix))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint the state file names, or None if there is none (or its
    files are gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times (gfile.Stat's, whole seconds) of the checkpoints' index files, or of
    the V1 files at the prefixes; missing checkpoints are left out."""
    out = []
    for prefix in checkpoint_prefixes:
        for pattern in (glob.escape(checkpoint_bundle.index_filename(prefix)), prefix):
            names = glob.glob(pattern)
            if names:
                out.append(gfile.Stat(names[0]).mtime_nsec / 1e9)
                break
    return out


def remove_checkpoint(checkpoint_prefix, meta_graph_suffix="meta"):
    """Deletes a checkpoint's files (index, data shards, meta graph), ignoring those already gone."""
    paths = [checkpoint_bundle.index_filename(checkpoint_prefix), f"{checkpoint_prefix}.{meta_graph_suffix}"]
    paths += glob.glob(glob.escape(checkpoint_prefix) + ".data-?????-of-?????")
    for p in paths:
        try:
            os.remove(p)
        except FileNotFoundError:
            pass
