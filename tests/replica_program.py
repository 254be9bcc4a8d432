"""The between-graph replicated program of tests/test_supervisor.py (TensorFlow's mnist_replica
model: a hidden layer, softmax, Adam, global step, variables placed by replica_device_setter,
a chief Supervisor), written once against a module `m`: pygrad, or tensorflow.compat.v1.

Run as a script, it is TensorFlow's side, in a process of its own: TF's ps and worker servers
listen on every interface and cannot be stopped, so they end with that process. Its argument is
a JSON object {"spec", "ours", "theirs", "services", "out"}: the cluster, pygrad's checkpoint
directory (restored and trained on), TF's own two directories, and the JSON file it writes."""
import glob
import json
import os
import sys
import time

import numpy as np

RNG = np.random.default_rng(7)
W1, B1 = RNG.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)
W2, B2 = RNG.standard_normal((16, 3)).astype(np.float32) * 0.3, np.zeros(3, np.float32)
X = RNG.standard_normal((64, 8)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 64)]


def model(m, spec):
    """The model, built in the default graph as worker 0 of the cluster spec."""
    with m.device(m.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)):
        global_step = m.Variable(0, name="global_step", trainable=False)
        hid_w, hid_b = m.Variable(W1, name="hid_w"), m.Variable(B1, name="hid_b")
        sm_w, sm_b = m.Variable(W2, name="sm_w"), m.Variable(B2, name="sm_b")
        x, y_ = m.placeholder(m.float32, [None, 8]), m.placeholder(m.float32, [None, 3])
        hid = m.nn.relu(m.nn.xw_plus_b(x, hid_w, hid_b))
        y = m.nn.softmax(m.nn.xw_plus_b(hid, sm_w, sm_b))
        loss = -m.reduce_sum(y_ * m.log(m.clip_by_value(y, 1e-10, 1.0)))
        m.summary.scalar("hid_w_norm", m.reduce_sum(hid_w * hid_w))  # what the chief's summary thread writes
        train = m.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    return {"x": x, "y_": y_, "loss": loss, "train": train, "global_step": global_step, "hid_w": hid_w}


def train(sess, parts, steps, first):
    """The losses of `steps` training steps on batches first, first + 1, ... (of 16 rows, cycling)."""
    losses = []
    for i in range(first, first + steps):
        rows = slice(16 * (i % 4), 16 * (i % 4) + 16)
        _, loss = sess.run([parts["train"], parts["loss"]], {parts["x"]: X[rows], parts["y_"]: Y[rows]})
        losses.append(float(loss))
    return losses


def run_chief(m, target, spec, logdir, steps, save):
    """Trains `steps` steps under a chief Supervisor on logdir (restoring its newest checkpoint),
    saving a checkpoint at the end if save; (losses, global step before, hid_w after)."""
    with m.Graph().as_default():
        parts = model(m, spec)
        sv = m.train.Supervisor(is_chief=True, logdir=logdir, init_op=m.global_variables_initializer(),
                                recovery_wait_secs=1, global_step=parts["global_step"], save_model_secs=0,
                                save_summaries_secs=0)
        sess = sv.prepare_or_wait_for_session(target)
        start = int(sess.run(parts["global_step"]))
        losses = train(sess, parts, steps, start)
        if save:
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
        weights = sess.run(parts["hid_w"])
        sv.stop()
        sess.close()
    return losses, start, weights


def services(m, target, spec, logdir):
    """Trains for about 2.5 s under managed_session with 1 s checkpoint and summary services;
    (the summary tags of logdir's event files, their SessionLog statuses, the newest checkpoint's
    global step, whether graph.pbtxt was written)."""
    with m.Graph().as_default():
        parts = model(m, spec)
        sv = m.train.Supervisor(logdir=logdir, global_step=parts["global_step"], save_model_secs=1,
                                save_summaries_secs=1)
        with sv.managed_session(target) as sess:
            end, step = time.time() + 2.5, 0
            while not sv.should_stop() and time.time() < end:
                train(sess, parts, 1, step)
                step += 1
                time.sleep(0.01)
    tags, statuses = set(), set()
    for path in glob.glob(os.path.join(logdir, "events.out.tfevents.*")):
        for event in m.train.summary_iterator(path):
            tags |= {v.tag for v in event.summary.value}
            if event.HasField("session_log"):
                statuses.add(int(event.session_log.status))
    step = int(m.train.load_variable(m.train.latest_checkpoint(logdir), "global_step"))
    return sorted(tags), sorted(statuses), step, os.path.exists(os.path.join(logdir, "graph.pbtxt"))


def main(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as m

    m.disable_eager_execution()
    m.disable_resource_variables()  # TF1's variables, as pygrad's
    spec = args["spec"]
    servers = [m.train.Server(spec, "ps", 0), m.train.Server(spec, "worker", 0)]
    target = servers[1].target
    first = run_chief(m, target, spec, args["theirs"], 8, save=True)
    resumed = run_chief(m, target, spec, args["ours"], 4, save=False)  # pygrad's checkpoint
    out = {"target": target, "losses": first[0], "start": first[1], "hid_w": first[2].tolist(),
           "resumed_losses": resumed[0], "resumed_start": resumed[1],
           "services": services(m, target, spec, args["services"])}
    with open(args["out"], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
