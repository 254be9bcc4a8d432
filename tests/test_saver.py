"""tf.train.Saver and the checkpoint helpers: save/restore by name, kept checkpoints, TF's errors,
optimizer slots named and restored as TensorFlow's (training resumes exactly), crash safety
under SIGKILL, and checkpoints exchanged with TensorFlow both ways."""
import errno
import json
import os
import socket
import subprocess
import sys
import warnings

import numpy as np
import pytest

import faults
import pygrad as tf

VALUES = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7, "f64": np.linspace(-1, 1, 5),
          "i32": np.array([3, -4], np.int32), "i64": np.int64(-(2 ** 40))}


def _make_vars(lib):
    return {k: lib.Variable(v, name=k) for k, v in VALUES.items()}


def _files(d):
    return sorted(f for f in os.listdir(d))


def test_save_and_restore_by_name(tmp_path):
    vs = _make_vars(tf)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
        assert path == str(tmp_path / "model")
        for v in vs.values():
            sess.run(v.assign(tf.zeros_like(v)))
        saver.restore(sess, path)
        got = sess.run(vs)
    for k, v in VALUES.items():
        assert got[k].dtype == np.asarray(v).dtype
        np.testing.assert_array_equal(got[k], v)
    assert tf.train.list_variables(str(tmp_path)) == [("f32", [2, 3]), ("f64", [5]), ("i32", [2]), ("i64", [])]
    assert tf.train.load_variable(str(tmp_path), "i64") == -(2 ** 40)


def test_dict_var_list_renames(tmp_path):
    a = tf.Variable([1.0, 2.0], name="a")
    with tf.Session() as sess:
        sess.run(a.initializer)
        tf.train.Saver({"renamed/a": a}).save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(str(tmp_path)) == [("renamed/a", [2])]
    tf.reset_default_graph()
    b = tf.Variable([0.0, 0.0], name="b")
    with tf.Session() as sess:
        tf.train.Saver({"renamed/a": b}).restore(sess, str(tmp_path / "m"))
        np.testing.assert_array_equal(sess.run(b), [1.0, 2.0])


def test_max_to_keep_and_state_file(tmp_path):
    tf.Variable(0.0, name="v")
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = []
        for _ in range(4):
            sess.run(inc)
            paths.append(saver.save(sess, prefix, global_step=step))
        assert paths == [f"{prefix}-{i}" for i in range(1, 5)]
        assert saver.last_checkpoints == paths[2:]
    assert _files(tmp_path) == ["checkpoint", "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index",
                                "model.ckpt-3.meta", "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index",
                                "model.ckpt-4.meta"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[3] and state.all_model_checkpoint_paths == paths[2:]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[3]
    assert tf.train.NewCheckpointReader(paths[3]).get_tensor("global_step") == 4


def test_keep_all_and_keep_every_n_hours(tmp_path):
    v = tf.Variable(0.0, name="v")
    os.mkdir(tmp_path / "a")
    keep_all = tf.train.Saver(max_to_keep=None)
    every = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=0.0)  # every deleted one is kept
    with tf.Session() as sess:
        sess.run(v.initializer)
        for i in range(3):
            keep_all.save(sess, str(tmp_path / "a" / "m"), global_step=i)
            every.save(sess, str(tmp_path / "m"), global_step=i, latest_filename="every_state")
        assert keep_all.last_checkpoints == []  # as TF: with max_to_keep None the list is not kept
        assert every.last_checkpoints == [str(tmp_path / "m-2")]
    assert len([f for f in os.listdir(tmp_path / "a") if f.endswith(".index")]) == 3
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".index")]) == 3
    assert tf.train.latest_checkpoint(str(tmp_path), "every_state") == str(tmp_path / "m-2")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_pad_step_number_and_step_tensor(tmp_path):
    tf.Variable(1.0, name="v")  # a variable for the Saver to save
    step = tf.Variable(42, dtype=tf.int64, name="step")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.Saver(pad_step_number=True).save(sess, str(tmp_path / "m"), global_step=step) == \
            str(tmp_path / "m-00000042")
        assert tf.train.global_step(sess, step) == 42


def test_save_errors(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).save(tf.Session(), str(tmp_path / "m")) is None
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver([v])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="Parent directory of .*nope/deeper/m doesn't exist, can't save."):
            saver.save(sess, str(tmp_path / "nope" / "deeper" / "m"))  # (one missing level is made, as TF 2's)
        with pytest.raises(ValueError, match="'latest_filename' collides with 'save_path'"):
            saver.save(sess, str(tmp_path / "checkpoint"))
    with pytest.raises(ValueError, match="At least two variables have the same name: v"):
        tf.train.Saver([v, v])
    with pytest.raises(TypeError, match="not a Variable"):
        tf.train.Saver([v + 1.0])
    w = tf.Variable(2.0, name="w")
    with tf.Session() as sess:  # w never initialized
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value w"):
            tf.train.Saver([w]).save(sess, str(tmp_path / "m"))


def _fail_writes(monkeypatch, module, code, where):
    """Makes module's open of a temporary file fail as a read-only or full directory would: code
    raised when the file opens, or (where="write") ENOSPC from writing to /dev/full."""
    def fake_open(path, mode="r", *args, **kwargs):
        if ".tempstate" not in os.fspath(path):
            return open(path, mode, *args, **kwargs)
        if where == "write":
            return open("/dev/full", mode, *args, **kwargs)
        raise OSError(code, os.strerror(code), os.fspath(path))
    monkeypatch.setattr(module, "open", fake_open, raising=False)


@pytest.mark.parametrize("code, where, error", [
    (errno.EACCES, "open", "PermissionDeniedError"), (errno.EPERM, "open", "PermissionDeniedError"),
    (errno.EROFS, "open", "PermissionDeniedError"), (errno.EDQUOT, "open", "ResourceExhaustedError"),
    (errno.ENOSPC, "write", "ResourceExhaustedError"), (errno.EFBIG, "open", "OutOfRangeError"),
    (errno.EIO, "open", "UnknownError")])
@pytest.mark.parametrize("stage", ["bundle", "state"])
def test_save_into_a_read_only_or_full_directory(tmp_path, monkeypatch, code, where, error, stage):
    """An OSError of a save is TF's error class for its errno (errno -> code as TF's ErrnoToCode),
    naming the file; the previous checkpoint stays the latest, intact, and no temporary file is left."""
    from pygrad.train import checkpoint_bundle, checkpoint_management
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver([v])
    prefix = str(tmp_path / "model")
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = saver.save(sess, prefix, global_step=1)
        sess.run(v.assign(2.0))
        with monkeypatch.context() as m:
            _fail_writes(m, checkpoint_bundle if stage == "bundle" else checkpoint_management, code, where)
            match = f"{tmp_path}/(model|checkpoint).*; {os.strerror(code)}"
            with pytest.raises(getattr(tf.errors, error), match=match):
                saver.save(sess, prefix, global_step=2)
        assert tf.train.latest_checkpoint(str(tmp_path)) == first
        saver.restore(sess, first)
        assert sess.run(v) == 1.0
    assert not [f for f in os.listdir(tmp_path) if "tempstate" in f]


def test_next_save_removes_temporary_files_of_killed_saves(tmp_path):
    """A save removes the temporary files pygrad's saves name <file>.tempstate-pg<pid>-<hex>-<host>
    made on this host by a process that is gone (a save killed midway); a live process's, another
    host's, and names of other patterns (TF's) stay."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = socket.gethostname()
    try:
        stale = [f"model-1.index.tempstate-pg{dead_pid}-00ab-{host}",
                 f"checkpoint.tempstate-pg{dead_pid}-0123456789abcdef-{host}"]
        kept = [f"model-1.data-00000-of-00001.tempstate-pg{live.pid}-00ff-{host}",
                f"model-1.index.tempstate-pg{dead_pid}-00ab-another-{host}", "model-1.index.tempstate1234",
                "checkpoint.tmp0123abcd"]
        for name in stale + kept:
            (tmp_path / name).write_bytes(b"partial")
        v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            tf.train.Saver([v]).save(sess, str(tmp_path / "model"), global_step=2)
        assert set(kept) <= set(os.listdir(tmp_path))
        assert not set(stale) & set(os.listdir(tmp_path))
    finally:
        live.kill()
        live.wait()


@pytest.fixture
def saved(tmp_path):
    """A checkpoint of a (float32 [2, 3]) and b (int32 [2])."""
    tf.Variable(np.ones((2, 3), np.float32), name="a")
    tf.Variable(np.array([5, 6], np.int32), name="b")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    return path


def _restore_fails_and_leaves(saved, make, error, match):
    """Restoring into the variables make() builds raises error; the session's values are unchanged."""
    vs = make()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(vs)
        with pytest.raises(error, match=match):
            tf.train.Saver(vs).restore(sess, saved)
        after = sess.run(vs)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


def test_restore_missing_variable_is_not_found(saved):
    _restore_fails_and_leaves(saved, lambda: [tf.Variable(np.zeros((2, 3), np.float32), name="a"),
                                              tf.Variable(0.0, name="c")],
                              tf.errors.NotFoundError, "(?s)Restoring from checkpoint failed.*a Variable name or other "
                                                       "graph key that is missing.*Key c not found in checkpoint")


def test_restore_shape_mismatch_is_invalid_argument(saved):
    _restore_fails_and_leaves(saved, lambda: [tf.Variable(np.zeros(3, np.int32), name="b")],
                              tf.errors.InvalidArgumentError,
                              r"(?s)mismatch between the current graph.*lhs shape= \[3\] rhs shape= \[2\]")


def test_restore_dtype_mismatch_is_invalid_argument(saved):
    _restore_fails_and_leaves(saved, lambda: [tf.Variable(np.zeros((2, 3), np.float64), name="a")],
                              tf.errors.InvalidArgumentError,
                              "tensor_name = a; expected dtype float64 does not equal original dtype float32")


def test_restore_corrupted_is_data_loss(saved):
    data = saved + ".data-00000-of-00001"
    with open(data, "rb") as f:
        raw = bytearray(f.read())
    raw[-1] ^= 1  # the last byte of b (keys are written in sorted order)
    with open(data, "wb") as f:
        f.write(bytes(raw))
    _restore_fails_and_leaves(saved, lambda: [tf.Variable(np.zeros((2, 3), np.float32), name="a"),
                                              tf.Variable(np.zeros(2, np.int32), name="b")],
                              tf.errors.DataLossError, f"{data}.*checksum of 'b'")


def test_restore_bad_paths(tmp_path):
    tf.Variable(1.0, name="v")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Can't load save_path when it is None."):
            tf.train.Saver().restore(sess, None)
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: .*nothing"):
            tf.train.Saver().restore(sess, str(tmp_path / "nothing"))


def test_init_from_checkpoint(tmp_path):
    with tf.variable_scope("old"):
        tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
        tf.get_variable("b", initializer=np.array([3.0], np.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    with tf.variable_scope("new"):
        w2 = tf.get_variable("w", shape=[2], initializer=tf.zeros_initializer())
        b2 = tf.get_variable("b", shape=[1], initializer=tf.zeros_initializer())
    other = tf.Variable([0.0, 0.0], name="other")
    tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/", "old/w": other})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w2), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(b2), [3.0])
        np.testing.assert_array_equal(sess.run(other), [1.0, 2.0])
    with pytest.raises(ValueError, match="Tensor old/zz is not found in"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/zz": other})
    with pytest.raises(ValueError, match="Shape of variable other:0"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/b": other})
    os.mkdir(tmp_path / "empty_dir")
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        tf.train.load_checkpoint(str(tmp_path / "empty_dir"))


# ---------------------------------------------------------------- slot names and resuming training


def _slot_graph(lib, scope_kind):
    with lib.variable_scope("eval_net"):
        w = lib.get_variable("w", [2], initializer=lib.zeros_initializer())
    b = lib.Variable([1.0, 2.0], name="b")
    loss = lib.reduce_sum(w * w) + lib.reduce_sum(b * b)
    with (lib.name_scope("train") if scope_kind == "name_scope" else lib.variable_scope("train")):
        step = lib.train.get_or_create_global_step()
        lib.train.RMSPropOptimizer(0.1).minimize(loss, global_step=step)
        lib.train.AdamOptimizer(0.1).minimize(loss)
        lib.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    return [v.op.name for v in lib.global_variables()], \
        [v.op.name for v in lib.get_collection(lib.GraphKeys.GLOBAL_VARIABLES, scope="train")]


SLOT_NAMES = {
    "variable_scope": ["eval_net/w", "b", "train/global_step", "train/eval_net/w/RMSProp", "train/eval_net/w/RMSProp_1",
                       "train/b/RMSProp", "train/b/RMSProp_1", "train/beta1_power", "train/beta2_power",
                       "train/eval_net/w/Adam", "train/eval_net/w/Adam_1", "train/b/Adam", "train/b/Adam_1",
                       "train/eval_net/w/Momentum", "train/b/Momentum"],
    "name_scope": ["eval_net/w", "b", "global_step", "eval_net/w/RMSProp", "eval_net/w/RMSProp_1", "b/RMSProp",
                   "b/RMSProp_1", "train/beta1_power", "train/beta2_power", "eval_net/w/Adam", "eval_net/w/Adam_1",
                   "b/Adam", "b/Adam_1", "eval_net/w/Momentum", "b/Momentum"]}


@pytest.mark.parametrize("scope_kind", ["variable_scope", "name_scope"])
def test_slot_names_are_tensorflows(scope_kind):
    names, in_train = _slot_graph(tf, scope_kind)
    assert names == SLOT_NAMES[scope_kind]
    assert in_train == [n for n in names if n.startswith("train")]


@pytest.mark.parametrize("scope_kind", ["variable_scope", "name_scope"])
def test_slot_names_match_tensorflow(scope_kind, tf_peer):
    with tf_peer.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _slot_graph(tf_peer, scope_kind) == _slot_graph(tf, scope_kind)


def _ema_graph(lib):
    w = lib.Variable([1.0, 2.0], name="w")
    with lib.variable_scope("train"):
        ema = lib.train.ExponentialMovingAverage(0.9)
        ema.apply([w])
    with lib.name_scope("ns"):
        lib.train.ExponentialMovingAverage(0.9, name="E2").apply([w])
    return [v.op.name for v in lib.global_variables()], ema.average_name(w), sorted(ema.variables_to_restore())


def test_moving_average_names_are_tensorflows():
    assert _ema_graph(tf) == (["w", "train/w/ExponentialMovingAverage", "w/E2"], "train/w/ExponentialMovingAverage",
                              ["train/w/ExponentialMovingAverage", "w/E2"])


def test_moving_average_names_match_tensorflow(tf_peer):
    with tf_peer.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _ema_graph(tf_peer) == _ema_graph(tf)


OPTIMIZERS = {"adam": lambda lib: lib.train.AdamOptimizer(0.05),
              "momentum": lambda lib: lib.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
              "rmsprop": lambda lib: lib.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)}


def _regression(lib, make_opt):
    rng = np.random.RandomState(3)
    x = lib.constant(rng.randn(16, 5).astype(np.float32))
    y = lib.constant(rng.randn(16, 2).astype(np.float32))
    with lib.variable_scope("train"):
        w = lib.get_variable("w", initializer=rng.randn(5, 2).astype(np.float32))
        b = lib.get_variable("b", initializer=np.zeros(2, np.float32))
        loss = lib.reduce_mean(lib.square(lib.matmul(x, w) + b - y))
        step = lib.train.get_or_create_global_step()
        train = make_opt(lib).minimize(loss, global_step=step)
    return train, loss


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_training_resumes_exactly(tmp_path, opt):
    """Three steps, save, three more == restore in a new graph, three more: bit for bit."""
    train, loss = _regression(tf, OPTIMIZERS[opt])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
        straight = [sess.run([train, loss])[1] for _ in range(3)] + [sess.run(tf.global_variables())]
    names = [v.op.name for v in tf.global_variables()]
    assert any(n.startswith("train/train/") for n in names)  # slots are named in the variable scope
    tf.reset_default_graph()
    train, loss = _regression(tf, OPTIMIZERS[opt])
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, path)
        resumed = [sess.run([train, loss])[1] for _ in range(3)] + [sess.run(tf.global_variables())]
    assert resumed[:3] == straight[:3]
    for x, y in zip(resumed[3], straight[3]):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------- crash safety

CRASH_SCRIPT = r'''
import os, random, signal, sys, time, json
import numpy as np
import pygrad as tf

d, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
big = tf.Variable(np.zeros((128, 256), np.float32), name="big")
vec = tf.Variable(np.zeros(999, np.float64), name="scope/vec")
step = tf.Variable(np.int64(0), name="step")
sess = tf.Session()
sess.run(tf.global_variables_initializer())
prefix = os.path.join(d, "model")
checker = tf.train.Saver(max_to_keep=3)
checker.save(sess, prefix, global_step=0)


def saving_child(start):
    saver = tf.train.Saver(max_to_keep=3)
    saver.recover_last_checkpoints(tf.train.get_checkpoint_state(d).all_model_checkpoint_paths)
    s = start
    while True:
        s += 1
        big.load(np.full((128, 256), s, np.float32), sess)
        vec.load(np.full(999, -s, np.float64), sess)
        step.load(s, sess)
        saver.save(sess, prefix, global_step=s)


def check(path, s):
    reader = tf.train.NewCheckpointReader(path)
    assert (reader.get_tensor("big") == s).all() and (reader.get_tensor("scope/vec") == -s).all()
    assert reader.get_tensor("step") == s


rng = random.Random(seed)
last, mid_write = 0, 0
for i in range(n):
    pid = os.fork()
    if pid == 0:
        try:
            saving_child(last)
        finally:
            os._exit(1)
    time.sleep(rng.uniform(0.0, 0.1))  # a save (four fsyncs) takes tens of milliseconds
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    mid_write += any(".tempstate" in f or ".tmp" in f for f in os.listdir(d))
    for f in os.listdir(d):  # what a killed save left behind
        if ".tempstate" in f or ".tmp" in f:
            os.remove(os.path.join(d, f))
    latest = tf.train.latest_checkpoint(d)
    assert latest is not None, i
    s = int(latest.rsplit("-", 1)[1])
    assert s >= last, (i, s, last)
    check(latest, s)
    checker.restore(sess, latest)
    assert sess.run(step) == s
    kept = tf.train.get_checkpoint_state(d).all_model_checkpoint_paths
    assert kept[-1] == latest
    for p in kept:
        check(p, int(p.rsplit("-", 1)[1]))
    last = s
print(json.dumps({"kills": n, "last_step": last, "mid_write": mid_write}))
'''


def test_killed_saves_never_lose_a_checkpoint(tmp_path):
    """A child saves in a loop and is killed (SIGKILL) after a random delay, 200 times; after each
    kill the latest checkpoint is complete and loadable and no earlier one is lost."""
    env = dict(os.environ, PYGRAD_NUM_THREADS="1")
    # cwd: `python -c` puts the working directory first on sys.path, where the checkout's source tree
    # (without the built extension) would shadow the installed package.
    out = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(tmp_path), "200", "7"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["kills"] == 200 and result["last_step"] >= 50  # the children made progress
    assert result["mid_write"] > 0  # some kills landed in the middle of a save
    faults.record("SIGKILL during Saver.save", kills=result["kills"], mid_write=result["mid_write"],
                  restored=result["kills"], lost=0)


# ---------------------------------------------------------------- TensorFlow reads ours, we read TF's


def _peer_graph_values(tf_peer, build, restore_from=None, save_to=None, init_values=None):
    """Builds build(tf_peer) in a new TF graph; restores restore_from (or initializes, then assigns
    init_values); saves to save_to; returns {name: value} of the global variables."""
    with tf_peer.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build(tf_peer)
        saver = tf_peer.train.Saver()
        with tf_peer.Session() as sess:
            if restore_from:
                saver.restore(sess, restore_from)
            else:
                sess.run(tf_peer.global_variables_initializer())
            if save_to:
                saver.save(sess, save_to, write_meta_graph=False)
            return {v.op.name: sess.run(v) for v in tf_peer.global_variables()}


def _with_adam(lib):
    vs = _make_vars(lib)
    loss = lib.reduce_sum(lib.square(vs["f32"])) + lib.reduce_sum(lib.cast(vs["f64"], lib.float32))
    lib.train.AdamOptimizer(0.1).minimize(loss, var_list=[vs["f32"]])


def test_tensorflow_restores_ours(tmp_path, tf_peer):
    _with_adam(tf)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_default_graph().get_operation_by_name("Adam"))
        ours = {v.op.name: sess.run(v) for v in tf.global_variables()}
        path = tf.train.Saver().save(sess, str(tmp_path / "ours"))
    assert sorted(ours) == ["beta1_power", "beta2_power", "f32", "f32/Adam", "f32/Adam_1", "f64", "i32", "i64"]
    theirs = _peer_graph_values(tf_peer, _with_adam, restore_from=path)
    assert sorted(theirs) == sorted(ours)
    for k, value in ours.items():
        assert np.asarray(theirs[k]).dtype == np.asarray(value).dtype, k
        np.testing.assert_array_equal(theirs[k], value, err_msg=k)


def test_we_restore_tensorflows(tmp_path, tf_peer):
    theirs = _peer_graph_values(tf_peer, _with_adam, save_to=str(tmp_path / "theirs"))
    _with_adam(tf)
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        ours = {v.op.name: sess.run(v) for v in tf.global_variables()}
    assert sorted(theirs) == sorted(ours)
    for k, value in ours.items():
        np.testing.assert_array_equal(value, theirs[k], err_msg=k)


# ---------------------------------------------------------------- Deep MNIST across the two libraries


def _deep_mnist(lib):
    """examples/seeds/deep_mnist.py's convnet (without dropout, which draws different random
    numbers in each library), Adam(1e-4), with named variables."""
    rng = np.random.RandomState(0)
    x = lib.placeholder(lib.float32, [None, 784], name="x")
    y_ = lib.placeholder(lib.float32, [None, 10], name="y_")

    def weight(shape, name):
        return lib.Variable(np.clip(rng.normal(0, 0.1, shape), -0.2, 0.2).astype(np.float32), name=name)

    def bias(shape, name):
        return lib.Variable(np.full(shape, 0.1, np.float32), name=name)

    def conv_pool(h, w, b):
        h = lib.nn.relu(lib.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME") + b)
        return lib.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    h = conv_pool(lib.reshape(x, [-1, 28, 28, 1]), weight([5, 5, 1, 32], "W_conv1"), bias([32], "b_conv1"))
    h = conv_pool(h, weight([5, 5, 32, 64], "W_conv2"), bias([64], "b_conv2"))
    h = lib.nn.relu(lib.matmul(lib.reshape(h, [-1, 7 * 7 * 64]), weight([3136, 1024], "W_fc1")) + bias([1024], "b_fc1"))
    y = lib.matmul(h, weight([1024, 10], "W_fc2")) + bias([10], "b_fc2")
    loss = lib.reduce_mean(lib.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train = lib.train.AdamOptimizer(1e-4).minimize(loss)
    return x, y_, train, loss


def _batches(mnist_dir, n):
    from pygrad.examples.tutorials.mnist import input_data
    mnist = input_data.read_data_sets(mnist_dir, one_hot=True)
    return [(mnist.train.images[i * 50:(i + 1) * 50], mnist.train.labels[i * 50:(i + 1) * 50]) for i in range(n)]


def _train(lib, sess, model, batches):
    x, y_, train, loss = model
    return [sess.run([train, loss], {x: bx, y_: by})[1] for bx, by in batches]


def _run_in(lib, batches, restore_from=None, save_to=None, train_first=()):
    """In a new graph of lib: builds the convnet, restores (or initializes), trains on train_first,
    saves, then returns the losses of training on batches."""
    graph = lib.Graph()
    with graph.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _deep_mnist(lib)
        saver = lib.train.Saver()
        with lib.Session(graph=graph) as sess:
            if restore_from:
                saver.restore(sess, restore_from)
            else:
                sess.run(lib.global_variables_initializer())
            _train(lib, sess, model, train_first)
            if save_to:
                saver.save(sess, save_to, write_meta_graph=False)
            return _train(lib, sess, model, batches)


@pytest.mark.parametrize("first", ["pygrad", "tensorflow"])
def test_deep_mnist_continues_across_libraries(tmp_path, mnist_dir, tf_peer, first):
    """Train 3 Adam steps in one library and save; the other library restores and continues 3
    steps; the losses match those of the first library continuing."""
    batches = _batches(mnist_dir, 6)
    a, b = (tf, tf_peer) if first == "pygrad" else (tf_peer, tf)
    path = str(tmp_path / "deep")
    same = _run_in(a, batches[3:], save_to=path, train_first=batches[:3])
    other = _run_in(b, batches[3:], restore_from=path)
    np.testing.assert_allclose(other, same, rtol=2e-5)
    assert same[-1] < same[0] + 0.5  # a real training run, not a constant


def test_checkpoint_file_helpers_match_tensorflow(tmp_path, tf_peer):
    """checkpoint_exists, get_checkpoint_mtimes and remove_checkpoint on checkpoints pygrad saved,
    beside TensorFlow's functions on a copy; generate_checkpoint_state_proto's fields and text for
    absolute and relative directories, and its error for timestamps that do not match the paths."""
    import shutil

    from google.protobuf import text_format
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    _make_vars(tf)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver = tf.train.Saver(max_to_keep=None)
        for step in (1, 2):
            saver.save(sess, str(ours_dir / "model"), global_step=step)
    shutil.copytree(ours_dir, theirs_dir)
    for lib, d in ((tf, ours_dir), (tf_peer, theirs_dir)):
        prefixes = [str(d / "model-1"), str(d / "model-2"), str(d / "model-3")]
        assert [lib.train.checkpoint_exists(p) for p in prefixes] == [True, True, False]
        mtimes = lib.train.get_checkpoint_mtimes(prefixes)  # whole seconds, as TF's local file system gives them
        assert mtimes == [os.stat(p + ".index").st_mtime_ns // 10**9 for p in prefixes[:2]]
        lib.train.remove_checkpoint(prefixes[0])
        lib.train.remove_checkpoint(prefixes[2])  # nothing there: nothing done
        assert not lib.train.checkpoint_exists(prefixes[0])
    assert _files(ours_dir) == _files(theirs_dir) == ["checkpoint", "model-2.data-00000-of-00001", "model-2.index",
                                                      "model-2.meta"]

    cases = [("/abs/dir", "/abs/dir/m-3", ["/abs/dir/m-1", "/abs/dir/m-2"], [1.5, 2.5, 1700000000.25], 1.0),
             ("rel/dir", "rel/dir/m-3", ["rel/dir/m-1", "/abs/m-2"], None, None),
             ("rel/dir", "/abs/m-3", ["/abs/m-3"], [3.0], 2.5),
             ("rel", "m-1", None, None, None)]
    for case in cases:
        ours = tf.train.generate_checkpoint_state_proto(*case)
        theirs = tf_peer.train.generate_checkpoint_state_proto(*[list(c) if isinstance(c, list) else c for c in case])
        assert ours.model_checkpoint_path == theirs.model_checkpoint_path
        assert list(ours.all_model_checkpoint_paths) == list(theirs.all_model_checkpoint_paths)
        assert list(ours.all_model_checkpoint_timestamps) == list(theirs.all_model_checkpoint_timestamps)
        assert ours.last_preserved_timestamp == theirs.last_preserved_timestamp
        assert ours.to_text() == text_format.MessageToString(theirs)
    for lib in (tf, tf_peer):
        with pytest.raises(ValueError, match="Checkpoint timestamps, if provided, must match checkpoint paths"):
            lib.train.generate_checkpoint_state_proto("/d", "/d/m-2", ["/d/m-1"], [1.0])
