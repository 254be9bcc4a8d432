"""Summary ops: the serialized Summary bytes against TensorFlow's for the same inputs, and each
encoding against an independent reference (bisect histogram, zlib-decoded PNG, Python's wave
module); host ops cost no extra native run and read a variable where they stand in the plan."""
import io
import wave
import zlib
from bisect import bisect_right

import numpy as np
import pytest

import pygrad as tf
from pygrad.ops import summary_encoding as enc

RNG = np.random.RandomState(0)
VALUES = {
    "s": np.float32(0.25),
    "h": (RNG.randn(1000) * 3).astype(np.float32),
    "iu": RNG.randint(0, 256, (3, 5, 7, 3)).astype(np.uint8),
    "if": np.where(RNG.rand(2, 6, 4, 4) < .1, np.nan, RNG.randn(2, 6, 4, 4)).astype(np.float32),
    "ib": (RNG.rand(1, 120, 90, 3) * 2).astype(np.float32),
    "ig": RNG.rand(1, 1, 9, 1).astype(np.float64),
    "a": RNG.uniform(-1.2, 1.2, (2, 50, 2)).astype(np.float32),
}
CASES = {
    "scalar": lambda t, x: t.summary.scalar("loss", x["s"]),
    "scalar_family": lambda t, x: t.summary.scalar("s", x["s"], family="fam"),
    "histogram": lambda t, x: t.summary.histogram("w", x["h"]),
    "image_uint8": lambda t, x: t.summary.image("iu", x["iu"], max_outputs=2),
    "image_float_nan": lambda t, x: t.summary.image("if", x["if"], max_outputs=1),
    "image_120x90": lambda t, x: t.summary.image("ib", x["ib"]),
    "image_one_row_float64": lambda t, x: t.summary.image("ig", x["ig"]),
    "text": lambda t, x: t.summary.text("t", t.constant(["a", "bc"])),
    "audio": lambda t, x: t.summary.audio("a", x["a"], 8000.0, max_outputs=2),
}


def run_cases(lib):
    with lib.Graph().as_default():
        ph = {k: lib.placeholder(lib.as_dtype(v.dtype), np.shape(v)) for k, v in VALUES.items()}
        summaries = {k: f(lib, ph) for k, f in CASES.items()}
        merged = lib.summary.merge_all()
        with lib.Session() as sess:
            return sess.run([summaries, merged], {ph[k]: v for k, v in VALUES.items()})


@pytest.fixture(scope="module")
def both():
    tft = pytest.importorskip("tensorflow.compat.v1")
    tft.disable_v2_behavior()
    return run_cases(tft), run_cases(tf)


@pytest.mark.parametrize("case", list(CASES))
def test_summary_bytes_equal_tensorflows(both, case):
    theirs, ours = both
    assert ours[0][case] == theirs[0][case], (tf.Summary.FromString(ours[0][case]),
                                              tf.Summary.FromString(theirs[0][case]))


def test_merged_bytes_equal_tensorflows(both):
    theirs, ours = both
    assert ours[1] == theirs[1]


def _run(summary, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return tf.Summary.FromString(sess.run(summary, feed))


def test_scalar_tags_and_values():
    with tf.Graph().as_default():
        with tf.name_scope("train"):
            s = tf.summary.scalar("loss/total", tf.constant(2.5, tf.float64))
        assert s.op.name == "train/loss/total"
        v = _run(s).value
    assert [(x.tag, x.simple_value) for x in v] == [("train/loss/total", 2.5)]


def test_legacy_scalar_summary_uses_tags_as_given_and_several():
    with tf.Graph().as_default():
        with tf.name_scope("outer"):
            s = tf.scalar_summary(["a", "b"], tf.constant([1, 2]))
        assert s.op.type == "ScalarSummary"
        assert [(x.tag, x.simple_value) for x in _run(s).value] == [("a", 1.0), ("b", 2.0)]


def test_histogram_matches_a_bisect_reference():
    values = np.array([0.0, 1e-13, -2.5, 3.0, 3.0, 1e5], np.float64)
    h = enc.histogram(values)
    limits = list(enc.BUCKET_LIMITS)
    counts = [0] * len(limits)
    for v in values:
        counts[bisect_right(limits, v)] += 1
    nonzero = [(limits[i], c) for i, c in enumerate(counts) if c]
    assert [(lim, c) for lim, c in zip(h.bucket_limit, h.bucket) if c] == nonzero
    assert (h.min, h.max, h.num, h.sum) == (-2.5, 1e5, 6.0, sum(values))
    assert sum(h.bucket) == 6 and h.bucket_limit[-1] == enc.DBL_MAX
    assert limits[len(limits) // 2] == 0.0 and limits[len(limits) // 2 + 1] == 1e-12


def test_png_decodes_to_the_pixels():
    image = RNG.randint(0, 256, (17, 11, 4)).astype(np.uint8)
    data = enc.png(image)
    assert enc.read_png(data).tolist() == image.tolist()
    # The IDAT stream inflates with zlib alone to rows of 1 + 11 * 4 bytes.
    idat = data[data.index(b"IDAT") + 4:data.index(b"IEND") - 8]
    assert len(zlib.decompress(idat)) == 17 * (1 + 44)


def test_float_image_scaling():
    pos = np.array([[[0.0], [0.5], [2.0]]], np.float32)
    assert enc.float_image_to_uint8(pos, [255, 0, 0, 255]).ravel().tolist() == [0, 63, 255]
    mixed = np.array([[[-1.0], [0.0], [np.inf]]], np.float32)
    assert enc.float_image_to_uint8(mixed, [7, 0, 0, 255]).ravel().tolist() == [1, 128, 7]


def test_audio_is_a_wav_the_wave_module_reads():
    audio = np.array([[[0.5, -1.0], [1.0, 0.25], [-0.00002, 2.0]]], np.float32)
    with tf.Graph().as_default():
        value = _run(tf.summary.audio("a", tf.constant(audio), 16000)).value[0]
    assert value.tag == "a/audio/0" and value.audio.content_type == "audio/wav"
    with wave.open(io.BytesIO(value.audio.encoded_audio_string)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getsampwidth(), w.getnframes()) == (2, 16000, 2, 3)
        samples = np.frombuffer(w.readframes(3), "<i2")
    assert samples.tolist() == [16384, -32768, 32767, 8192, -1, 32767]


def test_merge_all_collections_and_key():
    with tf.Graph().as_default():
        a = tf.summary.scalar("a", 1.0)
        tf.summary.scalar("b", 2.0, collections=["mine"])
        tf.summary.histogram("c", [1.0, 2.0], collections=[])
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a]
        assert tf.summary.merge_all("nothing") is None
        mine = tf.summary.merge_all("mine")
        assert mine.op.name == "Merge/MergeSummary"
        assert [v.tag for v in _run(mine).value] == ["b"]
        assert [v.tag for v in _run(tf.merge_all_summaries()).value] == ["a"]


def test_a_summary_costs_no_extra_native_run_and_reads_before_the_update():
    with tf.Graph().as_default():
        x = tf.Variable(1.0, name="x")
        tf.summary.scalar("x", x)
        tf.summary.histogram("xs", tf.stack([x, 2 * x]))
        merged = tf.summary.merge_all()
        train = tf.assign_add(x, 10.0)
        with tf.Session() as sess:
            sess.run(x.initializer)
            sess.run([train, merged])
            compiled = list(sess.plans.values())[-1]  # the plan of [train, merged]
            plan, calls = compiled.plan, []

            class Counting:
                def run(self, arrays, deadline=0):
                    calls.append(1)
                    return plan.run(arrays, deadline)

            compiled.plan = Counting()
            _, summary = sess.run([train, merged])
    values = tf.Summary.FromString(summary).value
    assert calls == [1]
    assert values[0].simple_value == 11.0  # the value before this run's update, as the loss would be
    assert (values[1].histo.min, values[1].histo.max) == (11.0, 22.0)


def test_nan_in_histogram_names_the_op_and_line():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32)
        h = tf.summary.histogram("weights", p)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"HistogramSummary 'weights': Nan in summary histogram for: weights\n"
                                     r"  op defined at .*test_summary.py"):
                sess.run(h, {p: [1.0, np.nan]})
            assert sess.run(h, {p: [1.0]})  # the session still runs


def test_duplicate_tags_in_merge():
    with tf.Graph().as_default():
        a = tf.scalar_summary("same", 1.0)
        b = tf.scalar_summary("same", 2.0)
        m = tf.summary.merge([a, b])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="MergeSummary.*Duplicate tag same found"):
                sess.run(m)
        fed = tf.placeholder(tf.string)
        m2 = tf.summary.merge([a, fed])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse one of the summary inputs"):
                sess.run(m2, {fed: b"\x0a\xff"})
            other = tf.Summary(value=[tf.Summary.Value(tag="other", simple_value=5.0)]).SerializeToString()
            assert [v.tag for v in tf.Summary.FromString(sess.run(m2, {fed: [other]})).value] == ["same", "other"]


def test_bad_inputs_are_refused_when_built():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"ScalarSummary 'ScalarSummary': tags and values not the same shape"):
            tf.scalar_summary(["a", "b"], tf.constant([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match=r"ImageSummary 'img': Tensor must be 4-D with last dim 1, 3, or 4"):
            tf.summary.image("img", tf.zeros([2, 3, 3, 2]))
        with pytest.raises(TypeError, match=r"HistogramSummary 'h': values must be a real number tensor, got bool"):
            tf.summary.histogram("h", tf.constant([True]))
        with pytest.raises(ValueError, match="to have dtype string"):
            tf.summary.text("t", tf.constant(1.0))


def test_fed_shape_mismatch_fails_when_run():
    with tf.Graph().as_default():
        tags, values = tf.placeholder(tf.string), tf.placeholder(tf.float32)
        s = tf.scalar_summary(tags, values)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"tags and values not the same shape"):
                sess.run(s, {tags: ["a", "b"], values: [1.0]})
            assert tf.Summary.FromString(sess.run(s, {tags: "a", values: 3.0})).value[0].simple_value == 3.0


def test_legacy_summaries_equal_tensorflows_raw_ops(tf_peer):
    """tf.histogram_summary, image_summary, audio_summary and merge_summary (TF 0.11's names) are
    the kernels with the tag as given: their bytes equal TF's HistogramSummary, ImageSummary,
    AudioSummaryV2 and MergeSummary ops on the same inputs, under the ops' own name scopes."""
    x = VALUES

    def theirs():
        raw = tf_peer.raw_ops
        with tf_peer.Graph().as_default(), tf_peer.Session() as sess:
            ops = [raw.HistogramSummary(tag="w", values=x["h"]),
                   raw.ImageSummary(tag="img", tensor=x["iu"], max_images=2),
                   raw.AudioSummaryV2(tag="snd", tensor=x["a"], sample_rate=8000.0, max_outputs=1)]
            return sess.run(ops + [raw.MergeSummary(inputs=ops)])

    with tf.Graph().as_default():
        with tf.name_scope("outer"):
            ops = [tf.histogram_summary("w", x["h"]), tf.image_summary("img", x["iu"], max_images=2),
                   tf.audio_summary("snd", x["a"], 8000, max_outputs=1, collections=["sounds"])]
            merged = tf.merge_summary(ops, name="all")
        assert [t.op.name for t in ops] == ["outer/HistogramSummary", "outer/ImageSummary", "outer/AudioSummary"]
        # TF's merge_summary opens the scope `name` and names its op `name` inside it
        assert merged.op.name == "outer/all/all" and merged.op.type == "MergeSummary"
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == ops[:2] and tf.get_collection("sounds") == ops[2:]
        with tf.Session() as sess:
            ours = sess.run(ops + [merged])
    want = theirs()
    for i, (a, b) in enumerate(zip(ours, want)):
        assert a == b, (i, tf.Summary.FromString(a), tf.Summary.FromString(b))
    with pytest.raises(ValueError, match="max_images must be at least 1"):
        tf.image_summary("img", x["iu"], max_images=0)
