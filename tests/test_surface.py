"""The names around the graph TF1 programs use: tf.Print / tf.print, tf.device, the session
config protos, flags and app.run, logging, gfile, and the alias table."""
import operator
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygrad as tf
from pygrad import compat
from pygrad.ops.logging_ops import summarize_v1


def test_print_passes_its_input_through_and_prints_data(capfd):
    x = tf.constant([[1., 2., 3.], [4., 5., 6.]])
    y = tf.Print(x, [x, tf.constant(1 / 3.), tf.constant([7, 8], tf.int64)], "x is ", summarize=4) * 2
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [[2, 4, 6], [8, 10, 12]])
        assert capfd.readouterr().err == "x is [[1 2 3][4...]...][0.333333343][7 8]\n"
        np.testing.assert_array_equal(sess.run(g), np.full([2, 3], 2.0))


def test_print_first_n(capfd):
    x = tf.placeholder(tf.float32, [])
    y = tf.Print(x, [x], first_n=2)
    with tf.Session() as sess:
        for i in range(4):
            sess.run(y, {x: i})
    assert capfd.readouterr().err == "[0][1]\n".replace("][", "]\n[")


@pytest.mark.parametrize("value,summarize", [
    (np.arange(6, dtype=np.float32).reshape(2, 3), 3), (np.arange(6, dtype=np.float32).reshape(2, 3), 4),
    (np.arange(24, dtype=np.int32).reshape(2, 3, 4), 5), (np.float64(0.1), 3), (np.array([1.5, -2.25e-8]), -1),
    (np.arange(5, dtype=np.int64), 3), (np.array(np.float32(np.inf)), 3)])
def test_print_format_matches_tensorflow(capfd, value, summarize):
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_eager_execution()
    with tf1.Graph().as_default():
        c = tf1.constant(value)
        with tf1.Session() as sess:
            sess.run(tf1.Print(c, [c], "m", summarize=summarize))
    want = capfd.readouterr().err.strip().splitlines()[-1]
    assert "m[" + summarize_v1(value, summarize) + "]" == want


def test_tf_print_op(capfd):
    op = tf.print("loss:", tf.constant([[1, 2], [3, 4]]), tf.constant(2.5), sep=" | ")
    with tf.Session() as sess:
        sess.run(op)
    assert capfd.readouterr().err == "loss: | [[1 2]\n [3 4]] | 2.5\n"


def test_device_is_recorded_and_everything_runs_on_the_cpu():
    with tf.device("/gpu:0"):
        a = tf.constant(2.0)
        with tf.device(lambda op: "/cpu:0" if op.type == "Const" else "/job:ps"):
            b = tf.constant(3.0)
            c = a * b
    d = a + 1
    # TF's strings: the outer scope merges under what the function returned, field by field.
    assert (a.op.device, b.op.device, c.op.device, d.op.device) == ("/device:GPU:0", "/device:CPU:0",
                                                                    "/job:ps/device:GPU:0", "")
    assert c.device == "/job:ps/device:GPU:0"
    config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
    config.gpu_options.allow_growth = True
    with tf.Session(config=config) as sess:
        assert sess.run(c) == 6.0


def test_config_protos():
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.5))
    assert config.gpu_options.per_process_gpu_memory_fraction == 0.5
    assert config.intra_op_parallelism_threads == 0 and config.graph_options.optimizer_options.opt_level == 0
    with pytest.raises(ValueError, match="no \"intra_op_threads\" field"):
        tf.ConfigProto(intra_op_threads=2)
    before = tf.get_num_threads()
    try:
        x = tf.constant(1.0)
        options, metadata = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()
        with tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1)) as sess:
            assert tf.get_num_threads() == 1
            assert sess.run(x, options=options, run_metadata=metadata) == 1.0
    finally:
        tf.set_num_threads(before)


def run_script(tmp_path, source, *args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120)


def test_flags_and_app_run(tmp_path):
    out = run_script(tmp_path, """
        import pygrad as tf
        flags = tf.app.flags
        flags.DEFINE_integer("steps", 10, "training steps")
        flags.DEFINE_float("lr", 0.1, "learning rate")
        flags.DEFINE_string("name", "run", "a name")
        flags.DEFINE_boolean("fast", False, "go fast")
        flags.DEFINE_list("layers", "8,4", "widths")
        FLAGS = flags.FLAGS

        def main(argv):
            print(FLAGS.steps, FLAGS.lr, FLAGS.name, FLAGS.fast, FLAGS.layers, argv[1:])
            return 3

        if __name__ == "__main__":
            tf.app.run()
        """, "--steps=5", "--lr", "0.5", "--fast", "extra")
    assert out.returncode == 3, out.stderr
    assert out.stdout.split("\n")[0] == "5 0.5 run True ['8', '4'] ['extra']"
    assert tf.flags is tf.app.flags


ABSL_PROGRAM = """
    import sys
    import pygrad as tf
    flags = tf.app.flags
    flags.DEFINE_integer(flag_name="steps", default_value=10, docstring="training steps")  # TF's old names
    flags.DEFINE_string("name", "run", "a name")
    flags.register_validator("steps", lambda v: v > 0, message="--steps must be positive")
    FLAGS = flags.FLAGS

    def main(argv):
        print(FLAGS.steps, FLAGS.name, argv[1:])

    if __name__ == "__main__":
        if sys.argv[1:2] == ["implicit"]:  # a flag read before any parse parses sys.argv (TF1's FLAGS)
            print(FLAGS.steps)
        else:
            tf.app.run()
    """


@pytest.mark.parametrize("args,code,out", [
    (["--flagfile={dir}/flags.txt", "--unknown=1", "pos"], 0, "7 from-file ['--unknown=1', 'pos']"),
    (["--help"], 1, "prog.py:\n  --name: a name\n    (default: 'run')\n  --steps: training steps"),  # absl exits 1
    (["--steps=0"], 1, "--steps must be positive"),
    (["--steps=x"], 1, "IllegalFlagValueError: flag --steps=x: invalid literal for int()"),
    (["implicit", "--steps=4"], 0, "4"),
    (["implicit", "--stepz=4"], 1, "Unknown command line flag 'stepz'"),
])
def test_flags_are_absl_flags(tmp_path, args, code, out):
    (tmp_path / "flags.txt").write_text("--steps=7\n--name=from-file\n")
    result = run_script(tmp_path, ABSL_PROGRAM, *[a.format(dir=tmp_path) for a in args])
    assert result.returncode == code, result.stdout + result.stderr
    assert out in result.stdout + result.stderr


def test_logging(capfd):
    tf.logging.set_verbosity(tf.logging.INFO)
    try:
        tf.logging.info("step %d", 3)
        tf.logging.debug("hidden")
        for i in range(5):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
            tf.logging.log_first_n(tf.logging.WARN, "first %d", 1, i)
        err = capfd.readouterr().err
        assert "step 3" in err and "hidden" not in err
        assert [line for line in err.splitlines() if "every" in line] == \
            ["INFO:pygrad:every 0", "INFO:pygrad:every 2", "INFO:pygrad:every 4"]
        assert [line for line in err.splitlines() if "first" in line] == ["WARNING:pygrad:first 0"]
        assert tf.logging.get_verbosity() == tf.logging.INFO
    finally:
        tf.logging.set_verbosity(tf.logging.WARN)


def test_gfile(tmp_path):
    d = str(tmp_path / "a" / "b")
    tf.gfile.MakeDirs(d)
    assert tf.gfile.IsDirectory(d) and tf.gfile.Exists(d)
    path = os.path.join(d, "f.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("hello\n")
    with tf.gfile.Open(path) as f:
        assert f.read() == "hello\n"
    assert tf.gfile.ListDirectory(d) == ["f.txt"]
    assert tf.gfile.Glob(os.path.join(d, "*.txt")) == [path]
    tf.gfile.Copy(path, path + ".bak")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(path, path + ".bak")
    tf.gfile.Rename(path + ".bak", path + ".2")
    tf.gfile.Remove(path + ".2")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Remove(path + ".2")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.GFile(path + ".missing")
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(d)


def test_alias_table_binds_the_same_functions():
    for old, new in compat.OLD_NAMES.items():
        assert getattr(tf, old) is getattr(tf, new), old
    for ns, names in compat.NAMESPACES.items():
        module = getattr(tf, ns)
        for entry in names:
            target = names[entry] if isinstance(names, dict) else entry
            name = entry.rsplit(".", 1)[-1]  # "nn.top_k": tf.<ns>.top_k is tf.nn.top_k
            assert getattr(module, name) is operator.attrgetter(target)(tf), f"tf.{ns}.{name}"
    assert tf.compat.v1 is tf
    assert tf.compat.v1.placeholder is tf.placeholder
    tf.compat.v1.disable_eager_execution()
    tf.disable_v2_behavior()
    assert not tf.executing_eagerly()


def test_old_names_run():
    a = tf.constant([[3., 1.], [0., 5.]])
    with tf.Session() as sess:
        sess.run(tf.initialize_all_variables())
        assert list(sess.run(tf.arg_max(a, 1))) == [0, 1]
        assert list(sess.run(tf.arg_min(a, 0))) == [1, 0]
        np.testing.assert_array_equal(sess.run(tf.mul(a, 2.0)), [[6, 2], [0, 10]])
        np.testing.assert_array_equal(sess.run(tf.select(a > 2.0, a, -a)), [[3, -1], [0, 5]])
        np.testing.assert_array_equal(sess.run(tf.pack([a[0], a[1]])), sess.run(a))
        assert sess.run(tf.to_double(tf.constant(1.5))).dtype == np.float64


def test_nest_as_tensorflows(tf_peer):
    """tf.nest's structure functions give TensorFlow's results (is_sequence: TF 2 calls it is_nested)."""
    structure = {"b": 4, "a": (1, [2, 3])}
    for lib in (tf, tf_peer):
        assert lib.nest.pack_sequence_as(structure, [10, 20, 30, 40]) == {"a": (10, [20, 30]), "b": 40}
        lib.nest.assert_same_structure(structure, {"a": (5, [6, 7]), "b": 8})
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            lib.nest.assert_same_structure(structure, {"a": (1, 2), "b": 4})
        with pytest.raises(TypeError, match="don't have the same sequence type"):
            lib.nest.assert_same_structure((1, 2), [1, 2])
        lib.nest.assert_same_structure((1, 2), [1, 2], check_types=False)
    assert [tf.nest.is_sequence(v) for v in ([1], (), {"a": 1}, 3, "ab")] == [
        tf_peer.nest.is_nested(v) for v in ([1], (), {"a": 1}, 3, "ab")] == [True, True, True, False, False]


def test_logging_levels_and_conditions_as_tensorflow(tf_peer):
    """fatal (CRITICAL, no exit), vlog at a level, log_if on its condition: the records
    tensorflow's logger gets, on pygrad's logger (tf.get_logger; tf.logging has no get_logger in TF)."""
    import logging

    def records(lib):
        logger = lib.get_logger()
        assert isinstance(logger, logging.Logger)
        seen = []
        handler = logging.Handler(logging.DEBUG)
        handler.emit = lambda r: seen.append((r.levelno, r.getMessage()))
        old = logger.level
        logger.addHandler(handler)
        lib.logging.set_verbosity(lib.logging.INFO)
        try:
            lib.logging.fatal("fatal %s", "x")
            lib.logging.vlog(lib.logging.WARN, "vlog %d", 1)
            lib.logging.vlog(lib.logging.DEBUG, "below the verbosity")
            lib.logging.vlog(25, "between %s and %s", "INFO", "WARN")
            for i in range(3):
                lib.logging.log_if(lib.logging.ERROR, "if %d", i % 2 == 1, i)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old)
        return seen

    ours = records(tf)
    assert ours == records(tf_peer)
    assert ours == [(50, "fatal x"), (30, "vlog 1"), (25, "between INFO and WARN"), (40, "if 1")]


def test_gfile_walk_and_stat_as_tensorflow(tmp_path, tf_peer):
    """Walk top-down and bottom-up (a missing top yields nothing) and Stat's FileStatistics, as
    TensorFlow's gfile on the same tree."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "c").mkdir()
    (tmp_path / "top.txt").write_bytes(b"12345")
    (tmp_path / "a" / "b" / "deep.bin").write_bytes(b"\0" * 1000)
    for in_order in (True, False):
        ours = [(d, sorted(s), sorted(f)) for d, s, f in tf.gfile.Walk(str(tmp_path), in_order)]
        theirs = [(d, sorted(s), sorted(f)) for d, s, f in tf_peer.gfile.Walk(str(tmp_path), in_order)]
        assert ours == theirs and len(ours) == 4
    assert list(tf.gfile.Walk(str(tmp_path / "missing"))) == list(tf_peer.gfile.Walk(str(tmp_path / "missing"))) == []
    for path in (tmp_path / "top.txt", tmp_path / "a" / "b" / "deep.bin", tmp_path / "a"):
        ours, theirs = tf.gfile.Stat(str(path)), tf_peer.gfile.Stat(str(path))
        assert isinstance(ours, tf.gfile.FileStatistics)
        assert (ours.length, ours.mtime_nsec, ours.is_directory) == (theirs.length, theirs.mtime_nsec,
                                                                       theirs.is_directory)
    made = tf.gfile.FileStatistics(length=3, mtime_nsec=7, is_directory=False)
    assert (made.length, made.mtime_nsec, made.is_directory) == (3, 7, False)
