"""Summary ops: each yields a scalar string tensor holding a serialized `Summary` protocol buffer,
built as TensorFlow's kernels build it (kernels/summary_op.cc, summary_image_op.cc,
summary_audio_op.cc, summary_tensor_op.cc). They are host ops of stage AFTER, pure values: the
plan computes their numeric inputs and returns them with the run's fetches, and the summary is
encoded in Python after the plan ran (host.HostValues), so `sess.run([train_op, merged])` is still
one native run.

The wrappers are TF1's `tf.summary.*` (tags from the name scope, `family`, the SUMMARIES
collection) and the older `tf.scalar_summary`, ... (tags used as given). The messages are
TensorFlow's (pygrad/tf_protos.py), imported where they are used: building them is not a cost of
`import pygrad`.
"""
import re

import numpy as np

from pygrad import dtypes
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.messages import tensor_proto
from pygrad.ops import summary_encoding as enc
from pygrad.ops.array_ops import constant, convert_to_tensor
from pygrad.registry import AFTER, HostError, OpDef, Spec, fail, fail_dtype
from pygrad.shapes import TensorShape

_REAL = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16"))
_SCALAR_STRING = Spec(dtypes.string, TensorShape([]))


def _string(value):
    return np.array(value, dtype=object)


def _require_string(t, what):
    if t.dtype != dtypes.string:
        fail_dtype(f"{what} must be a string tensor, got {t.dtype.name}")


def _require_real(t, what):
    if t.dtype.name not in _REAL:
        fail_dtype(f"{what} must be a real number tensor, got {t.dtype.name}")


def _require_scalar(t, what):
    if t.shape.ndims is not None and t.shape.ndims != 0:
        fail(f"{what} must be a scalar, got shape {t.shape}")


def _tag(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# ---------------------------------------------------------------- ScalarSummary

ScalarSummary = OpDef("ScalarSummary", host=AFTER, differentiable=False)


@ScalarSummary.shape
def _(tags, values):
    _require_string(tags, "tags")
    _require_real(values, "values")
    t, v = tags.shape, values.shape
    if t.is_fully_defined() and v.is_fully_defined() and t.as_list() != v.as_list():
        fail(f"tags and values not the same shape: {t} != {v}")
    return _SCALAR_STRING


@ScalarSummary.host
def _(ctx, op, ins):
    tags, values = np.asarray(ins[0]), np.asarray(ins[1])
    if tags.shape != values.shape:
        single = f" (tag '{_tag(tags.reshape(-1)[0])}')" if tags.size == 1 else ""
        raise HostError(f"tags and values not the same shape: {list(tags.shape)} != {list(values.shape)}{single}")
    from pygrad.tf_protos import Summary
    values = values.astype(np.float32).reshape(-1)
    s = Summary(value=[Summary.Value(tag=_tag(t), simple_value=float(v)) for t, v in zip(tags.reshape(-1), values)])
    return [_string(s.SerializeToString())]


# ---------------------------------------------------------------- HistogramSummary

HistogramSummary = OpDef("HistogramSummary", host=AFTER, differentiable=False)


@HistogramSummary.shape
def _(tag, values):
    _require_string(tag, "tag")
    _require_scalar(tag, "tags")
    _require_real(values, "values")
    return _SCALAR_STRING


@HistogramSummary.host
def _(ctx, op, ins):
    values = np.asarray(ins[1]).astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        first = values[bad][0]
        raise HostError(f"{'Nan' if np.isnan(first) else 'Infinity'} in summary histogram for: {op.name}")
    from pygrad.tf_protos import Summary
    s = Summary(value=[Summary.Value(tag=_tag(ins[0][()]), histo=enc.histogram(values))])
    return [_string(s.SerializeToString())]


# ---------------------------------------------------------------- ImageSummary

ImageSummary = OpDef("ImageSummary", host=AFTER, differentiable=False)
_IMAGE_DTYPES = ("uint8", "float16", "float32", "float64")


@ImageSummary.shape
def _(tag, tensor, *, max_images, bad_color):
    _require_string(tag, "tag")
    _require_scalar(tag, "Tags")
    if tensor.dtype.name not in _IMAGE_DTYPES:
        fail_dtype(f"images must be uint8, float16, float32 or float64, got {tensor.dtype.name}")
    s = tensor.shape
    if s.ndims is not None and (s.ndims != 4 or s.as_list()[3] not in (None, 1, 3, 4)):
        fail(f"Tensor must be 4-D with last dim 1, 3, or 4, not {s}")
    return _SCALAR_STRING


@ImageSummary.host
def _(ctx, op, ins):
    images = np.asarray(ins[1])
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise HostError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(images.shape)}")
    batch, h, w, depth = images.shape
    max_images, tag = op.attrs["max_images"], _tag(ins[0][()])
    from pygrad.tf_protos import Summary
    s = Summary()
    for i in range(min(max_images, batch)):
        if h == 0 or w == 0:
            raise HostError(f"PNG encoding failed: image of shape {list(images.shape[1:])} is empty")
        image = images[i] if images.dtype == np.uint8 else enc.float_image_to_uint8(images[i], op.attrs["bad_color"])
        s.value.add(tag=f"{tag}/image/{i}" if max_images > 1 else f"{tag}/image",
                    image=Summary.Image(height=h, width=w, colorspace=depth, encoded_image_string=enc.png(image)))
    return [_string(s.SerializeToString())]


# ---------------------------------------------------------------- AudioSummaryV2

AudioSummaryV2 = OpDef("AudioSummaryV2", host=AFTER, differentiable=False)


@AudioSummaryV2.shape
def _(tag, tensor, sample_rate, *, max_outputs):
    _require_string(tag, "tag")
    _require_scalar(tag, "Tag")
    if tensor.dtype != dtypes.float32:
        fail_dtype(f"audio must be float32, got {tensor.dtype.name}")
    if sample_rate.dtype != dtypes.float32:
        fail_dtype(f"sample_rate must be float32, got {sample_rate.dtype.name}")
    _require_scalar(sample_rate, "sample_rate")
    if tensor.shape.ndims is not None and tensor.shape.ndims not in (2, 3):
        fail(f"Tensor must be 3-D or 2-D, got: {tensor.shape}")
    return _SCALAR_STRING


@AudioSummaryV2.host
def _(ctx, op, ins):
    audio, sample_rate = np.asarray(ins[1]), float(ins[2])
    if audio.ndim not in (2, 3):
        raise HostError(f"Tensor must be 3-D or 2-D, got: {list(audio.shape)}")
    if not sample_rate > 0:
        raise HostError("sample_rate must be > 0")
    batch, frames = audio.shape[:2]
    channels = 1 if audio.ndim == 2 else audio.shape[2]
    if frames == 0 or channels == 0:
        raise HostError(f"audio of shape {list(audio.shape)} has no samples to encode")
    max_outputs, tag = op.attrs["max_outputs"], _tag(ins[0][()])
    rate = max(int(np.rint(np.float32(sample_rate))), 1)
    from pygrad.tf_protos import Summary
    s = Summary()
    for i in range(min(max_outputs, batch)):
        s.value.add(tag=f"{tag}/audio/{i}" if max_outputs > 1 else f"{tag}/audio",
                    audio=Summary.Audio(sample_rate=sample_rate, num_channels=channels, length_frames=frames,
                                        content_type="audio/wav",
                                        encoded_audio_string=enc.wav(audio[i].reshape(frames, channels), rate)))
    return [_string(s.SerializeToString())]


# ---------------------------------------------------------------- TensorSummaryV2

TensorSummaryV2 = OpDef("TensorSummaryV2", host=AFTER, differentiable=False)


@TensorSummaryV2.shape
def _(tag, tensor, serialized_summary_metadata):
    _require_string(tag, "tag")
    _require_string(serialized_summary_metadata, "serialized_summary_metadata")
    return _SCALAR_STRING


@TensorSummaryV2.host
def _(ctx, op, ins):
    from pygrad.tf_protos import Summary, SummaryMetadata
    s = Summary()
    value = s.value.add(tag=_tag(ins[0][()]), metadata=SummaryMetadata.FromString(ins[2][()]))
    value.tensor.MergeFromString(tensor_proto(np.asarray(ins[1]), op.inputs[1].dtype.name).SerializeToString())
    return [_string(s.SerializeToString())]


# ---------------------------------------------------------------- MergeSummary

MergeSummary = OpDef("MergeSummary", host=AFTER, differentiable=False)


@MergeSummary.shape
def _(*inputs):
    if not inputs:
        fail("needs at least one summary to merge")
    for i, t in enumerate(inputs):
        _require_string(t, f"input {i}")
    return _SCALAR_STRING


@MergeSummary.host
def _(ctx, op, ins):
    from google.protobuf.message import DecodeError

    from pygrad.tf_protos import Summary
    merged, tags = Summary(), set()
    for value in ins:
        for data in np.asarray(value, dtype=object).reshape(-1):
            try:
                summary = Summary.FromString(bytes(data))
            except DecodeError:
                raise HostError("Could not parse one of the summary inputs") from None
            for v in summary.value:
                if v.tag and v.tag in tags:
                    raise HostError(f"Duplicate tag {v.tag} found in summary inputs")
                tags.add(v.tag)
            merged.value.extend(summary.value)
    return [_string(merged.SerializeToString())]


# ---------------------------------------------------------------- tf.summary.*

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def _clean_tag(name):
    """TF's summary_op_util.clean_tag: characters other than letters, digits, '_', '-', '.' and '/'
    become '_', leading slashes go."""
    return None if name is None else _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


class _SummaryScope:
    """TF's summary_scope: a name scope named after the summary (family/name with a family); yields
    (tag, scope), the tag being the scope's name (prefixed by the family again)."""

    def __init__(self, name, family):
        self.name, self.family = _clean_tag(name), _clean_tag(family)

    def __enter__(self):
        base = self.name if self.family is None else f"{self.family}/{self.name}"
        self._cm = get_default_graph().name_scope(base)
        scope = self._cm.__enter__()
        tag = scope.rstrip("/") if self.family is None else f"{self.family}/{scope.rstrip('/')}"
        return tag, scope

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def _collect(value, collections, default):
    for key in default if collections is None else collections:
        get_default_graph().add_to_collection(key, value)


def _tag_tensor(tag, name):
    return tag if not isinstance(tag, (str, bytes, list, tuple, np.ndarray)) else constant(tag, dtypes.string, name=name)


def scalar(name, tensor, collections=None, family=None):
    """A summary of a real scalar, tagged with the name scope's name (tf.summary.scalar)."""
    with _SummaryScope(name, family) as (tag, scope):
        val = ScalarSummary(_tag_tensor(tag, "tags"), convert_to_tensor(tensor, name="values"), name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def histogram(name, values, collections=None, family=None):
    """A histogram of a tensor's values, in TF1's default buckets (tf.summary.histogram)."""
    with _SummaryScope(name, family) as (tag, scope):
        val = HistogramSummary(_tag_tensor(tag, "tag"), convert_to_tensor(values, name="values"), name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """PNG images of the first max_outputs of a [batch, h, w, 1|3|4] tensor (tf.summary.image)."""
    with _SummaryScope(name, family) as (tag, scope):
        val = _image(tag, tensor, max_outputs, scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def _image(tag, tensor, max_images, name):
    if int(max_images) < 1:
        raise ImageSummary.error(f"max_images must be at least 1, got {max_images}", name)
    return ImageSummary(_tag_tensor(tag, "tag"), convert_to_tensor(tensor, name="tensor"), max_images=int(max_images),
                        bad_color=np.array([255, 0, 0, 255], np.uint8), name=name)


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """WAV audio of the first max_outputs of a [batch, frames(, channels)] float32 tensor in [-1, 1]
    (tf.summary.audio)."""
    with _SummaryScope(name, family) as (tag, scope):
        val = _audio(tag, tensor, sample_rate, max_outputs, scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def _audio(tag, tensor, sample_rate, max_outputs, name):
    if int(max_outputs) < 1:
        raise AudioSummaryV2.error(f"max_outputs must be at least 1, got {max_outputs}", name)
    rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
    return AudioSummaryV2(_tag_tensor(tag, "tag"), convert_to_tensor(tensor, name="tensor"), rate,
                          max_outputs=int(max_outputs), name=name)


def tensor_summary(name, tensor, summary_description=None, collections=None, summary_metadata=None, family=None,
                   display_name=None):
    """A summary holding a whole tensor as a TensorProto (tf.summary.tensor_summary)."""
    from pygrad.tf_protos import SummaryMetadata
    metadata = summary_metadata if summary_metadata is not None else SummaryMetadata()
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    with _SummaryScope(name, family) as (tag, scope):
        val = TensorSummaryV2(_tag_tensor(tag, "tag"), convert_to_tensor(tensor, name="tensor"),
                              constant(metadata.SerializeToString(), dtypes.string, name="serialized_summary_metadata"),
                              name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def text(name, tensor, collections=None):
    """A string tensor for TensorBoard's text dashboard (tf.summary.text)."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got {tensor.dtype.name}")
    from pygrad.tf_protos import SummaryMetadata
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def merge(inputs, collections=None, name=None):
    """One summary holding the values of all inputs; duplicate tags fail when it runs (tf.summary.merge)."""
    inputs = [convert_to_tensor(t) for t in inputs]
    with get_default_graph().name_scope(name or "Merge"):
        val = MergeSummary(*inputs, name=name)
    _collect(val, collections, [])
    return val


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """merge() of the summaries in collection key (matching scope), or None when it is empty."""
    summaries = get_default_graph().get_collection(key, scope)
    return merge(summaries, name=name) if summaries else None


# ---------------------------------------------------------------- the names before TF 0.12


def _legacy(op_type, name):
    return get_default_graph().name_scope(name or op_type)


def scalar_summary(tags, values, collections=None, name=None):
    """tf.scalar_summary: tags (a string, or strings shaped like values) used as given."""
    with _legacy("ScalarSummary", name) as scope:
        val = ScalarSummary(_tag_tensor(tags, "tags"), convert_to_tensor(values, name="values"), name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def histogram_summary(tag, values, collections=None, name=None):
    with _legacy("HistogramSummary", name) as scope:
        val = HistogramSummary(_tag_tensor(tag, "tag"), convert_to_tensor(values, name="values"), name=scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def image_summary(tag, tensor, max_images=3, collections=None, name=None):
    with _legacy("ImageSummary", name) as scope:
        val = _image(tag, tensor, max_images, scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def audio_summary(tag, tensor, sample_rate, max_outputs=3, collections=None, name=None):
    with _legacy("AudioSummary", name) as scope:
        val = _audio(tag, tensor, sample_rate, max_outputs, scope)
        _collect(val, collections, [GraphKeys.SUMMARIES])
    return val


def merge_summary(inputs, collections=None, name=None):
    inputs = [convert_to_tensor(t) for t in inputs]
    with _legacy("MergeSummary", name):
        val = MergeSummary(*inputs, name=name)
    _collect(val, collections, [])
    return val


def merge_all_summaries(key=GraphKeys.SUMMARIES):
    summaries = get_default_graph().get_collection(key)
    return merge_summary(summaries) if summaries else None
