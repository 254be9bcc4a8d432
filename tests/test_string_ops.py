"""The string ops (tf.strings, tf.as_string, tf.substr, tf.regex_replace, tf.reduce_join, the hash
buckets, tf.fingerprint) against TensorFlow on the same inputs: values, dtypes, static shapes and
errors. The hashes are checked on strings of every length 0..300, through all of FarmHash's length
branches."""
import numpy as np
import pytest

import pygrad as tf

WORDS = [b"", b"a", b"Hello, World", "h\u00e9llo w\u00f6rld".encode(), "\u65e5\u672c\u8a9e".encode(), b"  pad\t\n",
         b"x\xffy"]
rng = np.random.default_rng(0)
RANDOM = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in range(301)]
TEXT = [b"the quick brown fox", b"  2 apples, 13 pears\n", "na\u00efve caf\u00e9 \u0661\u0662".encode(), b"",
        b"aaa", b"A1b2C3", b"line\nnext\n", b"x\xffy", "\u00e9\u00c9 ab".encode()]
FLOATS = np.array([0.0, -0.0, 1.5, -2.25, 3.14159265358979, 1e-7, 123456789.0, np.inf, -np.inf, np.nan, -np.nan,
                   2.5e300], np.float64)


def _c(lib, values, dtype=None):
    return lib.constant(values, dtype) if dtype is not None else lib.constant(values)


CASES = {
    "as_string float": lambda m: m.as_string(_c(m, FLOATS[:10], m.float32)),
    "as_string double precision": lambda m: m.as_string(_c(m, FLOATS), precision=3),
    "as_string scientific": lambda m: m.strings.as_string(_c(m, FLOATS), scientific=True, precision=2, width=12),
    "as_string shortest": lambda m: m.as_string(_c(m, FLOATS), shortest=True),
    "as_string width fill 0": lambda m: m.as_string(_c(m, FLOATS[:7]), width=14, fill="0", precision=4),
    "as_string nan inf fill 0": lambda m: m.as_string(_c(m, FLOATS[7:11]), width=6, fill="0"),
    "as_string left": lambda m: m.as_string(_c(m, [[1, -22], [333, 0]]), width=5, fill="-"),
    "as_string int64 plus": lambda m: m.as_string(_c(m, [2 ** 62, -5], m.int64), fill="+", width=3),
    "as_string int8": lambda m: m.as_string(_c(m, [-128, 7], m.int8), width=6, fill="0"),
    "as_string bool": lambda m: m.as_string(_c(m, [True, False])),
    "as_string half": lambda m: m.as_string(_c(m, [1.5, -2.25, 65504], m.float16), shortest=True, width=9),
    "as_string unsigned": lambda m: m.as_string(_c(m, [[1, 255], [7, 65535]], m.uint16), width=5, fill="0"),
    "as_string uint8": lambda m: m.as_string(_c(m, [0, 255], m.uint8)),
    "as_string strings": lambda m: m.strings.as_string(_c(m, WORDS), width=5, fill="-"),
    "string_join": lambda m: m.string_join([_c(m, WORDS), _c(m, b"|"), _c(m, WORDS[::-1])], separator="-"),
    "string_join scalars": lambda m: m.strings.join([_c(m, b"a"), _c(m, "\u00e9")], separator=", "),
    "string_join matrix": lambda m: m.strings.join([_c(m, [[b"a", b"b"], [b"c", b""]]), _c(m, b"!")]),
    "string_join one": lambda m: m.string_join([_c(m, WORDS)]),
    "length": lambda m: m.strings.length(_c(m, WORDS)),
    "length utf8": lambda m: m.strings.length(_c(m, [WORDS, WORDS]), unit="UTF8_CHAR"),
    "substr scalar": lambda m: m.substr(_c(m, [b"Hello", b"abc", b""]), 0, 2),
    "substr negative pos": lambda m: m.substr(_c(m, [b"Hello", b"abc"]), -3, 2),
    "substr negative len": lambda m: m.strings.substr(_c(m, [b"Hello", b"abc"]), 1, -1),
    "substr past the end": lambda m: m.substr(_c(m, [b"Hello", b"abc"]), 2, 10),
    "substr elementwise": lambda m: m.substr(_c(m, [[b"Hello", b"World"], [b"abc", b"xy"]]),
                                             _c(m, [[1, 0], [2, 2]]), _c(m, [[3, 9], [1, 0]])),
    "substr int64": lambda m: m.substr(_c(m, [b"Hello", b"World"]), _c(m, [1, 2], m.int64), _c(m, [3, 2], m.int64)),
    "substr broadcast 1-d": lambda m: m.substr(_c(m, b"Hello"), _c(m, [0, 1, 4]), _c(m, [1, 2, 1])),
    "substr broadcast 2-d": lambda m: m.substr(_c(m, [[b"Hello"], [b"World"]]), _c(m, [0, 2]), _c(m, [2, 3])),
    "substr utf8": lambda m: m.strings.substr(_c(m, WORDS[2:5]), 1, 3, unit="UTF8_CHAR"),
    "substr utf8 negative": lambda m: m.strings.substr(_c(m, WORDS[2:5]), -3, 2, unit="UTF8_CHAR"),
    "substr utf8 negative len": lambda m: m.strings.substr(_c(m, WORDS[2:5]), 1, -1, unit="UTF8_CHAR"),
    "substr utf8 past the end": lambda m: m.strings.substr(_c(m, WORDS[2:5]), -2, 5, unit="UTF8_CHAR"),
    "strip": lambda m: m.string_strip(_c(m, [b"  a b \t", b"\n\x0b\x0cx\r", b"", b"   "])),
    "lower": lambda m: m.strings.lower(_c(m, [b"HeLLo", "\u00c9COLE \u00d6".encode()])),
    "lower utf-8": lambda m: m.strings.lower(_c(m, [b"HeLLo", "\u00c9COLE \u00d6 \u0391".encode()]), encoding="utf-8"),
    "upper utf-8": lambda m: m.strings.upper(_c(m, [b"hello", "\u00e9cole stra\u00dfe".encode()]), encoding="utf-8"),
    "upper": lambda m: m.strings.upper(_c(m, [b"hello", "\u00e9cole".encode()])),
    "regex_replace": lambda m: m.regex_replace(_c(m, TEXT), r"(\w+) (\w+)", r"\2_\1"),
    "regex_replace first": lambda m: m.regex_replace(_c(m, TEXT), r"[aeiou]", "*", replace_global=False),
    "regex_replace empty matches": lambda m: m.strings.regex_replace(_c(m, TEXT + [b"abxd"]), "x*", "-"),
    "regex_replace ascii classes": lambda m: m.regex_replace(_c(m, TEXT), r"\d|\s", "#"),
    "regex_replace word boundary": lambda m: m.regex_replace(_c(m, TEXT), r"\b", "|"),
    "regex_replace end": lambda m: m.regex_replace(_c(m, TEXT), "$", "<end>"),
    "regex_replace multiline": lambda m: m.regex_replace(_c(m, TEXT), "(?m)^(.)", r"[\1]"),
    "regex_replace dot utf-8": lambda m: m.regex_replace(_c(m, TEXT), "\u00ef.", "?"),
    "regex_replace posix class": lambda m: m.regex_replace(_c(m, TEXT), "[[:upper:][:digit:]]+", "_"),
    "regex_replace case": lambda m: m.regex_replace(_c(m, TEXT), "(?i)A|CAF\u00c9", "@"),
    "regex_replace not utf-8": lambda m: m.regex_replace(_c(m, TEXT), r"(?s).|\W|[^a]", "."),
    "regex_replace flags later": lambda m: m.regex_replace(_c(m, TEXT), "(?i)(?s)e.|a(?i)B(?-i:C)", "!"),
    "regex_replace scoped flags": lambda m: m.regex_replace(_c(m, TEXT), "(?m:x$)|(?i:\u00c9)", "!"),
    "regex_replace names and repeats": lambda m: m.regex_replace(_c(m, TEXT), "(?P<v>[aeiou]){1,2}?|(a*)*|x{2,}",
                                                                   r"<\1>"),
    "regex_replace quoted": lambda m: m.regex_replace(_c(m, [b"a.b*c", b"abc"]), r"\Q.b*\E", "!"),
    "regex_replace literal braces": lambda m: m.regex_replace(_c(m, [b"a{,2}", b"aa"]), "a{,2}", "<>"),
    "regex_replace backslash rewrite": lambda m: m.regex_replace(_c(m, TEXT), "(o)", r"\\\1\0"),
    "regex_replace missing group": lambda m: m.regex_replace(_c(m, TEXT), "(o)", r"\2"),
    "regex_replace tensors": lambda m: m.regex_replace(_c(m, TEXT), _c(m, "[a-c]"), _c(m, "(\\0)")),
    "regex_full_match": lambda m: m.strings.regex_full_match(_c(m, TEXT), r"[a-z ]+"),
    "regex_full_match tensor": lambda m: m.strings.regex_full_match(_c(m, [TEXT[:3], TEXT[3:6]]), _c(m, ".*\\d.*")),
    "reduce_join all": lambda m: m.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]])),
    "reduce_join axis 0": lambda m: m.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]]), 0, separator="+"),
    "reduce_join axis -1 keep": lambda m: m.strings.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]]), -1,
                                                                keep_dims=True),
    "reduce_join axes 0 1": lambda m: m.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]]), [0, 1], separator="."),
    "reduce_join axes 1 0": lambda m: m.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]]), [1, 0], separator="."),
    "reduce_join 3-d": lambda m: m.reduce_join(_c(m, np.array(WORDS[:6] * 4, object).reshape(2, 3, 4)), [2, 0],
                                               keepdims=True, separator="/"),
    "reduce_join axis tensor": lambda m: m.strings.reduce_join(_c(m, [[b"a", b"b"], [b"c", b"d"]]), axis=_c(m, [1])),
    "reduce_join scalar": lambda m: m.reduce_join(_c(m, b"a"), separator="/"),
    "reduce_join no axes": lambda m: m.reduce_join(_c(m, [b"a", b"b"]), [], separator="/"),
    "reduce_join empty": lambda m: m.reduce_join(_c(m, np.zeros((2, 0), object).astype(bytes)), 1),
    "format": lambda m: m.strings.format("x={} y={}!", [_c(m, [[1.5, 2.0], [0.1, 1e-7]]), _c(m, b"ab")]),
    "format one tensor": lambda m: m.strings.format("a {} b", _c(m, 3)),
    "format python values": lambda m: m.strings.format("{} {}", [1, 2.5]),
    "format summarize": lambda m: m.strings.format("{}|{}", [_c(m, np.arange(10)), _c(m, np.arange(24).reshape(
        2, 3, 4))], summarize=2),
    "format summarize all": lambda m: m.strings.format("{}", _c(m, np.arange(24).reshape(2, 3, 4)), summarize=-1),
    "format summarize none": lambda m: m.strings.format("{} {}", [_c(m, 5), _c(m, np.zeros((2, 0)))], summarize=0),
    "format strings": lambda m: m.strings.format("%s %s", [_c(m, WORDS + [b'q"\\\x01\x7f']), _c(m, [True, False])],
                                                 placeholder="%s"),
    "format half and double": lambda m: m.strings.format("{} {}", [_c(m, [0.1, 65504], m.float16), _c(
        m, [0.1, np.nan, -np.inf, 1e100], m.float64)]),
    "to_number": lambda m: m.strings.to_number(_c(m, [b"1.5", b"-2"])),
    "hash fast": lambda m: m.string_to_hash_bucket_fast(_c(m, RANDOM), 2 ** 63 - 1),
    "hash fast small": lambda m: m.strings.to_hash_bucket_fast(_c(m, [WORDS, WORDS]), 10),
    "hash strong": lambda m: m.string_to_hash_bucket_strong(_c(m, RANDOM), 2 ** 63 - 1, [123, -456]),
    "hash strong small": lambda m: m.strings.to_hash_bucket_strong(_c(m, WORDS), 7, [2 ** 62, 1]),
    "hash legacy": lambda m: m.string_to_hash_bucket(_c(m, RANDOM), 2 ** 63 - 1),
    "hash legacy small": lambda m: m.strings.to_hash_bucket(input=_c(m, WORDS), num_buckets=1000),
    "fingerprint strings": lambda m: m.fingerprint(_c(m, RANDOM[60:80])),
    "fingerprint string rows": lambda m: m.fingerprint(_c(m, np.array(RANDOM[:24], object).reshape(4, 3, 2))),
    "fingerprint int32": lambda m: m.fingerprint(_c(m, np.arange(24, dtype=np.int32).reshape(2, 3, 4))),
    "fingerprint float64": lambda m: m.fingerprint(_c(m, np.linspace(0, 1, 30).reshape(3, 10))),
    "fingerprint uint8": lambda m: m.fingerprint(_c(m, np.arange(300, dtype=np.int64).astype(np.uint8).reshape(3, 100))),
}


def _run(lib, build, feed=None):
    out = build(lib)
    outs = out if isinstance(out, (list, tuple)) else [out]
    shapes = [t.shape.as_list() if t.shape.ndims is not None else None for t in outs]
    with lib.Session() as sess:
        return sess.run(list(outs)), shapes


@pytest.mark.parametrize("name", sorted(CASES))
def test_string_ops_equal_tf(tf_peer, name):
    (ours, our_shapes), (theirs, their_shapes) = _run(tf, CASES[name]), _run(tf_peer, CASES[name])
    assert our_shapes == their_shapes
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        assert a.tolist() == b.tolist()


def _strings(lib, shape=None):
    return lib.placeholder(lib.string, shape)


# Static shapes where inputs are partly known: the same rule as TF's shape functions.
SHAPES = {
    "string_join": lambda m: m.string_join([_strings(m, [None, 3]), _strings(m, []), _strings(m, [2, None])]),
    "string_join unknown rank": lambda m: m.string_join([_strings(m), _strings(m, [])]),
    "substr broadcast": lambda m: m.substr(_strings(m, [None, 1]), m.placeholder(m.int32, [4]),
                                           m.placeholder(m.int32, [4])),
    "reduce_join": lambda m: m.reduce_join(_strings(m, [None, 5, 2]), [0, 2], keep_dims=True),
    "regex": lambda m: [m.regex_replace(_strings(m, [None, 2]), "a", "b"), m.strings.regex_full_match(
        _strings(m, [3]), "a")],
    "fingerprint": lambda m: m.fingerprint(_strings(m, [None, 4])),
    "hash": lambda m: m.strings.to_hash_bucket_fast(_strings(m, [None, 4]), 3),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_static_shapes_are_tfs(tf_peer, name):
    def shapes(lib, graph):
        with graph.as_default():
            out = SHAPES[name](lib)
            return [t.shape.as_list() if t.shape.ndims is not None else None
                    for t in (out if isinstance(out, list) else [out])]
    assert shapes(tf, tf.Graph()) == shapes(tf_peer, tf_peer.Graph())


RUN_ERRORS = [
    (lambda m: m.substr(_c(m, [b"abc", b"Hello"]), 4, 1), "pos 4 out of range for string b'abc' at index 0"),
    (lambda m: m.substr(_c(m, [b"abc", b"Hello"]), _c(m, [0, -6]), _c(m, [1, 1])),
     "pos -6 out of range for string b'Hello' at index 1"),
    (lambda m: m.substr(_c(m, [[b"abc"], [b"Hello"]]), _c(m, [0, 4]), _c(m, [1, 1])),
     r"pos 4 out of range for string b'abc' at index \(0, 1\)"),
    (lambda m: m.strings.substr(_c(m, [b"abc", "\u00e9\u00e9".encode()]), 3, 1, unit="UTF8_CHAR"),
     "pos 3 out of range for string at index 1"),
    (lambda m: m.strings.substr(_c(m, [b"abc"]), -4, 1, unit="UTF8_CHAR"), "pos -4 out of range for string at index 0"),
    (lambda m: m.strings.substr(_c(m, [b"abcd"]), -2, -1, unit="UTF8_CHAR"), "pos -2 out of range for string at index 0"),
    (lambda m: m.reduce_join(_c(m, [[b"a", b"b"]]), [1, -1]), "Duplicate reduction dimension -1"),
    (lambda m: m.regex_replace(_c(m, [b"a"]), "(a", "b"), r"Invalid pattern: \(a, error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), r"(a)\1", "b"), r"Invalid pattern: \(a\)\\1, error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), "(?=a)", "b"), r"Invalid pattern: \(\?=a\), error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), "a*+", "b"), r"Invalid pattern: a\*\+, error: "),
    (lambda m: m.strings.regex_full_match(_c(m, [b"a"]), _c(m, "[a")), r"Invalid pattern: \[a, error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), "(?<n>a)", "b"), r"Invalid pattern: \(\?<n>a\), error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), "a{1001}", "b"), r"Invalid pattern: a\{1001\}, error: "),
    (lambda m: m.regex_replace(_c(m, [b"a"]), r"\Z", "b"), r"Invalid pattern: \\Z, error: "),
]


@pytest.mark.parametrize("build, message", RUN_ERRORS)
def test_run_errors_are_tfs(tf_peer, build, message):
    for lib in (tf_peer, tf):
        with pytest.raises(lib.errors.InvalidArgumentError, match=message):
            _run(lib, build)


def test_substr_broadcasts_in_two_dimensions_at_most_as_tf(tf_peer):
    def build(m):
        return m.substr(_c(m, np.full((1, 1, 2), b"ab", object)), _c(m, [[[0]], [[1]]]), _c(m, [[[0]], [[1]]]))
    for lib in (tf_peer, tf):
        with pytest.raises(lib.errors.UnimplementedError, match="Substr broadcast not implemented for 3 dimensions"):
            _run(lib, build)


def test_join_shapes_that_do_not_match_fail_as_tf(tf_peer):
    for lib in (tf_peer, tf):
        with lib.Graph().as_default():
            a, b = _strings(lib), _strings(lib)
            with lib.Session() as sess, pytest.raises(lib.errors.InvalidArgumentError,
                                                      match=r"Input shapes do not match: \[2\] vs. \[3\]"):
                sess.run(lib.string_join([a, b]), {a: [b"x"] * 2, b: [b"y"] * 3})
    with pytest.raises(ValueError, match="StringJoin.*Input shapes do not match"):
        tf.string_join([_strings(tf, [2]), _strings(tf, [3])])


# Attribute errors: TF's kernel raises them when the op first runs; pygrad when it is built, in the same words.
BUILD_ERRORS = [
    (lambda m: m.as_string(_c(m, [1]), precision=2), "precision not supported for datatype int32"),
    (lambda m: m.as_string(_c(m, [1]), scientific=True), "scientific and shortest format not supported"),
    (lambda m: m.as_string(_c(m, [1.0]), scientific=True, shortest=True),
     "Cannot select both scientific and shortest notation"),
    (lambda m: m.as_string(_c(m, [1.0]), fill="ab"), "Fill string must be one or fewer characters"),
    (lambda m: m.strings.lower(_c(m, [b"A"]), encoding="latin-1"), "only utf-8 or '' \\(no encoding\\) is supported"),
]


@pytest.mark.parametrize("build, message", BUILD_ERRORS)
def test_attribute_errors_are_tfs(tf_peer, build, message):
    with pytest.raises(tf_peer.errors.InvalidArgumentError, match=message):
        _run(tf_peer, build)
    with pytest.raises(ValueError, match=message):
        build(tf)


def test_reduce_join_axes_out_of_range_of_a_fed_rank_fail_as_tf(tf_peer):
    for lib in (tf_peer, tf):
        with lib.Graph().as_default():
            x = _strings(lib)
            with lib.Session() as sess, pytest.raises(lib.errors.OutOfRangeError,
                                                      match="Invalid reduction dimension 1 for input with 1 dim"):
                sess.run(lib.reduce_join(x, 1), {x: [b"a"]})


def test_fingerprint_methods_are_tfs(tf_peer):
    for lib in (tf_peer, tf):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match="Unsupported method: md5"):
                lib.fingerprint(lib.constant([b"a"]), method="md5")
            method = lib.placeholder(lib.string, [])
            with lib.Session() as sess, pytest.raises(lib.errors.InvalidArgumentError,
                                                      match="Unsupported fingerprint method: md5"):
                sess.run(lib.fingerprint(lib.constant([b"a"]), method=method), {method: "md5"})


def test_format_needs_one_input_per_placeholder(tf_peer):
    for lib in (tf_peer, tf):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="The template expects 2 tensors, but the "
                                                                      "inputs only has 1"):
            lib.strings.format("{} {}", [lib.constant(1)])


def test_reduce_join_bad_axes_fail_when_built(tf_peer):
    x = [[b"a", b"b"]]
    for lib in (tf_peer, tf):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="Invalid reduction dimension 2 for input "
                                                                      "with 2 dimensions"):
            lib.reduce_join(lib.constant(x), 2)


@pytest.mark.parametrize("pattern, what", [(r"\pL", "Unicode classes"), (r"\p{Greek}", "Unicode classes"),
                                           ("a(?i)b|c", r"flags set inside a group before an alternation \(\|\)"),
                                           ("(?U)a+", "non-greedy flag"), (r"[^\D]", r"negated class \\D"),
                                           (r"\C", "single bytes")])
def test_re2_syntax_python_cannot_express_is_refused_by_name(pattern, what):
    with pytest.raises(ValueError, match=f"StaticRegexReplace .*uses RE2 syntax pygrad cannot translate.*{what}"):
        tf.regex_replace(tf.constant([b"a"]), pattern, "b")
    p = tf.placeholder(tf.string, [])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=f"RegexFullMatch.*{what}"):
        sess.run(tf.strings.regex_full_match(tf.constant([b"a"]), p), {p: pattern})


def test_bad_inputs_name_the_op():
    with pytest.raises(TypeError, match="StringLength.*input must be a string tensor, got int32"):
        tf.strings.length(tf.constant([1]))
    with pytest.raises(ValueError, match="StringLength.*unit must be one of"):
        tf.strings.length(tf.constant([b"a"]), unit="CHAR")
    with pytest.raises(ValueError, match="Substr.*pos and len shapes must match"):
        tf.substr(tf.constant([b"a"]), [0, 1], [1])
    with pytest.raises(ValueError, match=r"StaticRegexReplace.*invalid rewrite pattern: \\n: RE2 rewrites take"):
        tf.regex_replace(tf.constant([b"a"]), "a", r"\n")
    with pytest.raises(ValueError, match=r"Substr.*Incompatible shapes: \(2,\) vs. \(3,\)"):
        tf.substr(tf.constant([b"a", b"b"]), [0, 1, 2], [1, 1, 1])
    with pytest.raises(ValueError, match="StringToHashBucketStrong.*Key must have 2 elements"):
        tf.string_to_hash_bucket_strong(tf.constant([b"a"]), 3, [1, 2, 3])
    with pytest.raises(ValueError, match="Fingerprint.*at least one dimension"):
        tf.fingerprint(tf.constant(b"a"))
    with pytest.raises(ValueError, match="AsString.*fill 'x'"):
        tf.as_string(tf.constant([1]), width=3, fill="x")


def _pipeline(m):
    """A feature pipeline's string ops on a fed batch, one named output each."""
    x = m.placeholder(m.string, [None], name="x")
    outs = [m.as_string(m.strings.length(x), width=3), m.string_join([x, "!"], "-"), m.substr(x, 1, 3),
            m.regex_replace(x, r"\d", "#"), m.regex_replace(x, m.constant("o"), m.constant("0")),
            m.strings.regex_full_match(x, ".*o.*"), m.reduce_join(x, 0, separator="|"),
            m.string_to_hash_bucket_fast(x, 100), m.string_to_hash_bucket_strong(x, 100, [1, 2]),
            m.string_to_hash_bucket(x, 100), m.fingerprint(x), m.strings.lower(x), m.string_strip(x),
            m.strings.format("{}", x)]
    return [m.identity(o, name=f"out{i}").name for i, o in enumerate(outs)]


def test_graph_defs_go_both_ways(tf_peer):
    """A pygrad graph of string ops runs in TF from its GraphDef, and TF's runs in pygrad."""
    feed, results = {"x:0": [b"Hello World", b" ab 12 "]}, []
    for build_lib, run_lib in ((tf, tf_peer), (tf_peer, tf), (tf, tf)):
        with build_lib.Graph().as_default() as g:
            names = _pipeline(build_lib)
        with run_lib.Graph().as_default():
            run_lib.import_graph_def(run_lib.GraphDef.FromString(g.as_graph_def().SerializeToString()), name="")
            with run_lib.Session() as sess:
                results.append(sess.run(names, feed))
    for ours in results[1:]:
        for a, b in zip(ours, results[0]):
            assert np.asarray(a).tolist() == np.asarray(b).tolist()


def test_slice_input_producer_over_file_names_gives_tensorflows_batches(tf_peer):
    """TF1's file-list pipeline: slice_input_producer over names and labels (a gather of strings)."""
    def batches(m):
        with m.Graph().as_default():
            name, label = m.train.slice_input_producer([m.constant([b"a.jpg", b"b.jpg", b"c.jpg"]),
                                                        m.constant([3, 1, 2])], shuffle=False)
            picked = m.gather(m.constant([[b"p", b"q"], [b"r", b"s"]]), [1, 0, 1], axis=1)
            out = m.train.batch([name, label], batch_size=2)
            with m.Session() as s:
                s.run(m.local_variables_initializer())
                coord = m.train.Coordinator()
                threads = m.train.start_queue_runners(s, coord)
                got = [s.run(out) for _ in range(3)] + [s.run(picked)]
                coord.request_stop()
                coord.join(threads)
        return got
    for a, b in zip(batches(tf), batches(tf_peer)):
        for x, y in zip(a, b) if isinstance(b, list) else [(a, b)]:
            np.testing.assert_array_equal(x, y)
