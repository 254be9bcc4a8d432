"""Contention benchmark: pygrad's MLP training step at one thread and at its default thread count,
alone and beside one or two busy neighbour processes.

The step: a 784-256-256-10 MLP (relu, softmax cross-entropy), float32, batch 100, plain gradient
descent (learning rate 0.1), run as users write it: ``sess.run([train_op, loss], feed_dict=...)``.
Weights (He-scaled normal, NumPy seed 0) and 20 batches of random data (uniform inputs, one-hot
random labels, NumPy seed 1) are the same in every run. --warmup (50) warm-up steps, then --steps
timed steps (wall clock per step, time.perf_counter).

Thread configurations: ``1`` (OMP/OPENBLAS/MKL_NUM_THREADS=1 set before pygrad loads, then
tf.set_num_threads(1)) and ``default`` (nothing set: pygrad's own default, PYGRAD_NUM_THREADS,
else OMP_NUM_THREADS, else the CPU count). Thread counts are fixed when OpenMP and OpenBLAS load,
so each configuration runs in a fresh child process (this script with --worker) that prints its
per-step times. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are left as the environment has them.

Situations: alone; beside one busy neighbour process; beside two. Neighbours are this script with
--neighbour-proc KIND, started by the parent, which waits until each has done one unit of work:
  tensorflow  the same MLP training in a loop in TensorFlow 1 graph mode (tensorflow.compat.v1)
  numpy       a loop of 1024x1024 float32 matmuls
  python      a pure-Python busy loop (one thread)
  pygrad      the same MLP training in a loop in pygrad
Default: tensorflow if it is installed, else numpy. --neighbour-threads N limits a neighbour's
library to N threads (as benches/common.py sets them); the default, 0, leaves each library its own
default, as a program that sets nothing would run. The parent stops its neighbours whatever
happens (try/finally, also on SIGTERM); a neighbour also exits by itself when its stdin closes
(the parent closed it or died) or after --neighbour-timeout seconds.

Each round (--repeats of them) runs: alone, then one neighbour, then two (the second started
beside the first), and in each situation both thread configurations, one after the other, their
order alternating between rounds. A row shows, for one (situation, threads), the median over
rounds of the per-round median, p10 and p90 (milliseconds per step), and on the default row the
ratio default median / one-thread median. The check lines state the target: beside two busy
TensorFlow neighbours, default threads <= 1.5x one thread; alone, default threads faster than one
thread. The one-thread and default runs see the same data from the same weights, so their losses
are compared as a cross-check (they agree to float32 rounding).

Run:
  python benches/bench_contention.py [--neighbour tensorflow|numpy|python|pygrad]
                                     [--steps 300] [--repeats 3] [--neighbour-threads 0]
The numbers depend on whatever else runs on the machine: compare rows of one run.
"""
import argparse
import importlib.util
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import common

WARMUP_STEPS = 50
BATCH = 100
SIZES = (784, 256, 256, 10)
LEARNING_RATE = 0.1
N_BATCHES = 20
NEIGHBOURS = ("tensorflow", "numpy", "python", "pygrad")
CONFIGS = ("1", "default")
RESULT_PREFIX = "RESULT "
READY = "ready"
READY_TIMEOUT = 180.0  # seconds a neighbour may take to import its library and do one unit of work
TARGET_CONTENDED = 1.5  # beside two busy TensorFlow neighbours: default median <= this x one-thread median


# ---- the model (shared by the worker and the tensorflow/pygrad neighbours) ----

def build_mlp(tf, np):
    """Placeholders x, y and the (train_op, loss) of the MLP, in the current default graph."""
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, SIZES[0]])
    y = tf.placeholder(tf.float32, [None, SIZES[-1]])
    h = x
    for i, (n_in, n_out) in enumerate(itertools.pairwise(SIZES)):
        W = tf.Variable((rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)).astype(np.float32))
        b = tf.Variable(np.zeros(n_out, np.float32))
        h = tf.matmul(h, W) + b
        if i < len(SIZES) - 2:
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
    train_op = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
    return x, y, train_op, loss


def make_batches(np):
    """N_BATCHES (inputs, one-hot labels) pairs of BATCH examples, float32, C-contiguous."""
    rng = np.random.RandomState(1)
    batches = []
    for _ in range(N_BATCHES):
        bx = rng.random_sample((BATCH, SIZES[0])).astype(np.float32)
        by = np.zeros((BATCH, SIZES[-1]), np.float32)
        by[np.arange(BATCH), rng.randint(0, SIZES[-1], BATCH)] = 1.0
        batches.append((bx, by))
    return batches


def _die_with_parent():
    """A child process (worker or neighbour) gets SIGTERM when the parent dies, on Linux
    (prctl PR_SET_PDEATHSIG); elsewhere the parent's try/finally and the neighbours' own exits
    (stdin closed, deadline) remain."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl
        os._exit(1)


# ---- worker: one thread configuration, timed, in its own process ----

def run_worker(args):
    _die_with_parent()
    threads = None if args.threads == "default" else int(args.threads)
    if threads is not None:
        common.set_thread_environment(threads)  # before pygrad (OpenMP, OpenBLAS) loads
    import numpy as np

    import pygrad as tf
    if threads is not None:
        tf.set_num_threads(threads)
    batches = make_batches(np)
    with tf.Graph().as_default():
        x, y, train_op, loss = build_mlp(tf, np)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())

            def step(i):
                bx, by = batches[i % len(batches)]
                return float(sess.run([train_op, loss], feed_dict={x: bx, y: by})[1])

            times, losses = common.time_steps(step, args.warmup, args.steps)
    env = {k: os.environ.get(k, "(unset)") for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT",
                                                      "OPENBLAS_L2_SIZE")}
    print(RESULT_PREFIX + json.dumps({"threads": tf.get_num_threads(), "times": times, "losses": losses,
                                      "blas": common.blas_description(), "env": env}), flush=True)


def run_worker_process(config, args):
    """Runs a worker for one thread configuration; returns its result dict."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--threads", config,
           "--steps", str(args.steps), "--warmup", str(args.warmup)]
    # stderr passes through; subprocess.run kills the worker if anything interrupts the wait
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.worker_timeout,
                          check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"worker (threads {config}) failed with exit status {proc.returncode}:\n{proc.stdout}")
    return json.loads(lines[-1][len(RESULT_PREFIX):])


# ---- neighbours: busy processes beside the worker ----

def _neighbour_tensorflow(threads):
    import numpy as np
    import tensorflow.compat.v1 as tf1
    tf1.logging.set_verbosity(tf1.logging.ERROR)
    tf1.disable_eager_execution()
    tf1.disable_v2_behavior()
    config = None
    if threads:
        config = tf1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
    return _mlp_loop(tf1, np, {"config": config})


def _neighbour_pygrad(threads):
    import numpy as np

    import pygrad as tf
    if threads:
        tf.set_num_threads(threads)
    return _mlp_loop(tf, np, {})


def _mlp_loop(tf, np, session_kwargs):
    batches = make_batches(np)
    x, y, train_op, _ = build_mlp(tf, np)
    sess = tf.Session(**session_kwargs)
    sess.run(tf.global_variables_initializer())
    counter = iter(range(1 << 62))

    def step():
        bx, by = batches[next(counter) % len(batches)]
        sess.run(train_op, feed_dict={x: bx, y: by})
    return step


def _neighbour_numpy(threads):
    import numpy as np
    rng = np.random.RandomState(2)
    a = rng.random_sample((1024, 1024)).astype(np.float32)
    b = rng.random_sample((1024, 1024)).astype(np.float32)
    out = np.empty_like(a)

    def step():
        np.matmul(a, b, out=out)
    return step


def _neighbour_python(threads):
    def step():
        x = 0
        for i in range(100_000):
            x += i * i
        return x
    return step


_NEIGHBOUR_LOOPS = {"tensorflow": _neighbour_tensorflow, "numpy": _neighbour_numpy,
                    "python": _neighbour_python, "pygrad": _neighbour_pygrad}


def _exit_on_stdin_eof():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def run_neighbour(args):
    """Busy loop of one kind until stdin closes or args.seconds pass."""
    deadline = time.monotonic() + args.seconds
    _die_with_parent()
    threading.Thread(target=_exit_on_stdin_eof, daemon=True).start()
    if args.neighbour_threads > 0:
        common.set_thread_environment(args.neighbour_threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    step = _NEIGHBOUR_LOOPS[args.neighbour_proc](args.neighbour_threads)
    step()
    print(READY, flush=True)
    while time.monotonic() < deadline:
        step()
    sys.stdout.flush()
    os._exit(0)  # not a normal exit: the stdin watcher holds stdin's lock


class Neighbour:
    """A started neighbour process; ``stop`` ends it (idempotent)."""

    def __init__(self, kind, args):
        self.kind = kind
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115  (open while the neighbour runs; closed by stop)
        cmd = [sys.executable, os.path.abspath(__file__), "--neighbour-proc", kind,
               "--seconds", str(args.neighbour_timeout), "--neighbour-threads", str(args.neighbour_threads)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"{self.kind} neighbour not ready after {READY_TIMEOUT:.0f} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if ready:
                line = self.proc.stdout.readline()
                if line.strip() == READY.encode():
                    return
                if not line:
                    self.proc.wait()
                    raise RuntimeError(f"{self.kind} neighbour exited with status {self.proc.returncode} "
                                       f"before it was ready:\n{self.error_tail()}")

    def check_running(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.kind} neighbour exited early (status {self.proc.returncode}; "
                               f"a longer --neighbour-timeout?):\n{self.error_tail()}")

    def error_tail(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()


# ---- the parent: situations x configurations over rounds ----

def situation_name(n, kind):
    return "alone" if n == 0 else f"beside {n} {kind}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--neighbour", choices=NEIGHBOURS,
                   help="kind of busy neighbour process (default: tensorflow if installed, else numpy)")
    p.add_argument("--steps", type=int, default=300, help="timed steps per run (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="warm-up steps per run (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="rounds, interleaving situations and thread counts "
                                                          "(default: %(default)s)")
    p.add_argument("--neighbour-threads", type=int, default=0,
                   help="threads for each neighbour's library; 0: the library's default (default: %(default)s)")
    p.add_argument("--neighbour-timeout", type=float, default=300.0,
                   help="seconds after which a neighbour exits by itself (default: %(default)s)")
    p.add_argument("--worker-timeout", type=float, default=600.0,
                   help="seconds a timed run may take (default: %(default)s)")
    # internal: the child processes
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--threads", default="default", help=argparse.SUPPRESS)
    p.add_argument("--neighbour-proc", choices=NEIGHBOURS, help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, default=60.0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return run_worker(args)
    if args.neighbour_proc:
        return run_neighbour(args)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0:
        p.error("--steps and --repeats must be positive, --warmup not negative")

    kind = args.neighbour or ("tensorflow" if importlib.util.find_spec("tensorflow") else "numpy")
    if kind == "tensorflow" and not importlib.util.find_spec("tensorflow"):
        p.error("--neighbour tensorflow: tensorflow is not installed")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # so finally blocks run

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"pygrad MLP {'-'.join(map(str, SIZES))} training step, batch {BATCH}, SGD, float32: "
          f"sess.run([train_op, loss])")
    print(f"CPU: {common.cpu_model()}; {os.cpu_count()} CPUs, {affinity} usable by this process")
    print(f"neighbours: {kind}, threads: "
          f"{args.neighbour_threads if args.neighbour_threads > 0 else 'library default'}")
    print(f"steps {args.steps} after {args.warmup} warm-up, repeats {args.repeats}; "
          f"OPENBLAS_CORETYPE as given: {os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
          f"OPENBLAS_L2_SIZE as given: {os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}")
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    sys.stdout.flush()

    t_start = time.monotonic()
    stats = {}     # (situation, config) -> [(median, p10, p90) ms per round]
    described = {}  # config -> first result (threads, BLAS, environment)
    alone_losses = {}
    import numpy as np
    for r in range(args.repeats):
        configs = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        neighbours = []
        try:
            for n in (0, 1, 2):
                while len(neighbours) < n:
                    neighbours.append(Neighbour(kind, args))
                    neighbours[-1].wait_ready()
                for config in configs:
                    res = run_worker_process(config, args)
                    for nb in neighbours:
                        nb.check_running()
                    ms = np.array(res["times"]) * 1e3
                    stats.setdefault((n, config), []).append(np.percentile(ms, [50, 10, 90]))
                    described.setdefault(config, res)
                    if n == 0 and r == 0:
                        alone_losses[config] = res["losses"]
                    print(f"  round {r + 1}/{args.repeats}, {situation_name(n, kind)}, threads {config} "
                          f"({res['threads']}): median {np.median(ms):.3f} ms", flush=True)
        finally:
            for nb in neighbours:
                nb.stop()

    print()
    for config in CONFIGS:
        res = described[config]
        print(f"threads {config}: pygrad threads {res['threads']}; "
              + ", ".join(f"{k}={v}" for k, v in res["env"].items()))
        for line in res["blas"]:
            print(f"  {line}")
    default_threads = described["default"]["threads"]
    if default_threads == 1:
        print("note: pygrad's default thread count is 1 here, so both configurations are the same")

    print(f"\nms per step, median over {args.repeats} rounds of per-round statistics "
          f"({args.steps} steps each)")
    print(f"{'situation':<22}{'threads':<14}{'median_ms':>10}{'p10':>10}{'p90':>10}{'default/one':>13}")
    ratios = {}
    for n in (0, 1, 2):
        one = np.median(np.array(stats[n, "1"]), axis=0)
        for config in CONFIGS:
            med, p10, p90 = np.median(np.array(stats[n, config]), axis=0)
            ratio = ""
            if config == "default":
                ratios[n] = med / one[0]
                ratio = f"{ratios[n]:.2f}x"
            label = "1" if config == "1" else f"default ({default_threads})"
            print(f"{situation_name(n, kind):<22}{label:<14}{med:>10.3f}{p10:>10.3f}{p90:>10.3f}{ratio:>13}")

    print()
    if kind == "tensorflow":
        met = "met" if ratios[2] <= TARGET_CONTENDED else "NOT met"
        print(f"check: beside 2 busy tensorflow neighbours, default/one = {ratios[2]:.2f}x "
              f"(target <= {TARGET_CONTENDED}x): {met}")
    else:
        print(f"check: beside 2 busy tensorflow neighbours: not measured (neighbours were {kind}; "
              f"beside 2 {kind}, default/one = {ratios[2]:.2f}x)")
    met = "met" if ratios[0] < 1.0 else "NOT met"
    print(f"check: alone, default/one = {ratios[0]:.2f}x (target < 1x, default faster): {met}")
    if set(alone_losses) == set(CONFIGS):
        a, b = np.array(alone_losses["1"]), np.array(alone_losses["default"])
        rel = np.max(np.abs(a - b) / np.abs(a))
        print(f"losses, 1 vs default threads (alone, round 1, {len(a)} steps): max relative difference {rel:.1e}; "
              f"loss {a[0]:.4f} -> {a[-1]:.4f}")
    print("load average at end: {:.2f} {:.2f} {:.2f}; {:.0f} s in all".format(*os.getloadavg(),
                                                                          time.monotonic() - t_start))


if __name__ == "__main__":
    main()
