"""TensorFlow's mnist_replica.py, as TF1 programs wrote it: one process per task of a cluster
(--job_name=ps|worker --task_index=N, the ps and worker hosts as flags), a hidden layer and a
softmax on MNIST, variables placed by replica_device_setter, Adam, a global step, a chief
Supervisor, async or sync (SyncReplicasOptimizer) updates. It imports `tensorflow` and runs
unchanged under `python -m pygrad` (tests/test_replicas.py). A worker prints one JSON line per
event ("ready", a "step" every 50 local steps, "done" with the global step, the validation
cross-entropy and the test accuracy)."""
import argparse
import json
import sys
import time

import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

IMAGE_PIXELS = 28


def say(**event):
    print(json.dumps(event), flush=True)


def main(_):
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)
    ps_spec = FLAGS.ps_hosts.split(",")
    worker_spec = FLAGS.worker_hosts.split(",")
    num_workers = len(worker_spec)
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        say(event="serving")
        server.join()

    is_chief = FLAGS.task_index == 0
    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, ps_device="/job:ps/cpu:0",
                                                  cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)
        hid_w = tf.Variable(tf.truncated_normal([IMAGE_PIXELS * IMAGE_PIXELS, FLAGS.hidden_units],
                                                stddev=1.0 / IMAGE_PIXELS, seed=1), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, 10], stddev=1.0 / FLAGS.hidden_units ** 0.5,
                                               seed=2), name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")
        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))

        opt = tf.train.AdamOptimizer(FLAGS.learning_rate)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers,
                                                 total_num_replicas=num_workers, name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)

        if FLAGS.sync_replicas:
            local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()
        init_op = tf.global_variables_initializer()
        if FLAGS.sync_replicas:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=None, init_op=init_op, local_init_op=local_init_op,
                                     ready_for_local_init_op=ready_for_local_init_op, recovery_wait_secs=1,
                                     global_step=global_step)
        else:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=None, init_op=init_op, recovery_wait_secs=1,
                                     global_step=global_step)
        sess = sv.prepare_or_wait_for_session(server.target)
        say(event="ready", task=FLAGS.task_index)
        if FLAGS.sync_replicas and is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])

        local_step = 0
        while True:
            batch_xs, batch_ys = mnist.train.next_batch(FLAGS.batch_size)
            _, step = sess.run([train_step, global_step], feed_dict={x: batch_xs, y_: batch_ys})
            local_step += 1
            if local_step % 50 == 0:
                say(event="step", task=FLAGS.task_index, local=local_step, step=int(step))
            if step >= FLAGS.train_steps:
                break
            if FLAGS.step_pause:
                time.sleep(FLAGS.step_pause)
        val_feed = {x: mnist.validation.images, y_: mnist.validation.labels}
        test_feed = {x: mnist.test.images, y_: mnist.test.labels}
        say(event="done", task=FLAGS.task_index, local=local_step, global_step=int(sess.run(global_step)),
            xent=float(sess.run(cross_entropy, feed_dict=val_feed)), accuracy=float(sess.run(accuracy, test_feed)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", default="/tmp/mnist-data")
    parser.add_argument("--hidden_units", type=int, default=100)
    parser.add_argument("--train_steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--sync_replicas", action="store_true")
    parser.add_argument("--ps_hosts", default="localhost:2222")
    parser.add_argument("--worker_hosts", default="localhost:2223,localhost:2224")
    parser.add_argument("--job_name")
    parser.add_argument("--task_index", type=int)
    parser.add_argument("--step_pause", type=float, default=0.0)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
