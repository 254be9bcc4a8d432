"""Helpers shared by the benchmark scripts in this directory.

- command line: the options every script takes (--data-dir, --repeats, --threads, --peers);
- threads: OMP/OPENBLAS/MKL_NUM_THREADS are set to --threads before any library is imported;
  then pygrad gets pygrad.set_num_threads, TensorFlow a ConfigProto with intra/inter-op
  parallelism, PyTorch torch.set_num_threads / set_num_interop_threads, and JAX's CPU thread pool
  is limited to --threads CPUs by affinity (XLA has no thread-count setting; see
  ``load_libraries``). pygrad sets OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=5000 and
  OPENBLAS_THREAD_TIMEOUT=16 unless they are set; PyTorch shares that OpenMP runtime;
- MNIST: the 55000 training examples and a fixed, seeded order of batches;
- timing: ``time_steps`` times one callable per step after warm-up; ``Results`` keeps the
  per-repeat median/p10/p90 and prints the table with the ratio peer time / pygrad time;
- machine: ``cpu_model`` and ``blas_description`` (which BLAS libraries a process loaded and which
  OpenBLAS core, i.e. kernel set, each dispatched to), for the header of a benchmark's output;
  ``onednn_description`` (which oneDNN implementations pygrad's and TensorFlow's convolutions ran:
  the script run again in a child process with ONEDNN_VERBOSE=1, its verbose lines summarized);
  ``fma_peak`` (the single-core float32 FMA peak, measured by ``native/peak.c``, compiled when
  called with the system's C compiler).

NumPy and the libraries are imported inside the functions, so that importing this module does not
load anything before the thread environment is set.
"""
import argparse
import contextlib
import ctypes
import functools
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import namedtuple

PEERS = ("tensorflow", "torch", "jax")

Library = namedtuple("Library", "name module session_kwargs")
"""A loaded library: name, module (``pygrad``, ``tensorflow.compat.v1``, ``torch`` or ``jax``) and
the keyword arguments for ``tf.Session`` (TF1-style libraries only, else {})."""


def argument_parser(doc, default_repeats=3):
    """An ArgumentParser with the options every benchmark script takes."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=os.environ.get("PYGRAD_MNIST_DIR"),
                   help="directory with the MNIST IDX .gz files (default: $PYGRAD_MNIST_DIR)")
    p.add_argument("--repeats", type=int, default=default_repeats,
                   help="repeats, interleaving the libraries (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for every library (default: %(default)s)")
    p.add_argument("--peers", default=",".join(PEERS),
                   help="comma-separated peers out of %s, or 'none' (default: all)" % ",".join(PEERS))
    return p


def parse_peers(parser, text):
    peers = [s.strip() for s in text.split(",") if s.strip() and s.strip() != "none"]
    unknown = [s for s in peers if s not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    return peers


def start(parser, batch):
    """Parses the command line, sets the thread environment, then loads the libraries and the MNIST
    batches of `batch` examples; returns (args, [Library], batches). With `batch` None no batches
    are made (None is returned; ``make_batches`` makes them)."""
    args = parser.parse_args()
    peers = parse_peers(parser, args.peers)
    if not args.data_dir:
        parser.error("--data-dir is required (or set PYGRAD_MNIST_DIR)")
    set_thread_environment(args.threads)
    libs = load_libraries(peers, args.threads)
    if not libs:
        sys.exit("no library to benchmark")
    if batch is None:
        return args, libs, None
    return args, libs, make_batches(*load_mnist_train(args.data_dir), batch)


def set_thread_environment(threads):
    """Call before importing NumPy or any library: the BLAS and OpenMP runtimes read these once,
    when they load. Also keeps TensorFlow's C++ logging quiet and JAX on the CPU."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def load_libraries(peers, threads):
    """[Library] for pygrad and the requested peers, each limited to `threads` threads; a library
    that cannot be imported is skipped with a message.

    pygrad: pygrad.set_num_threads. TensorFlow: a ConfigProto with intra/inter-op parallelism.
    PyTorch: torch.set_num_threads and torch.set_num_interop_threads. JAX: XLA's CPU client sizes
    its thread pool from the CPUs the process may run on and ignores OMP_NUM_THREADS and the
    XLA_FLAGS thread options, so when `threads` is below that count the client is created while
    the calling thread is restricted (sched_setaffinity) to the first `threads` of those CPUs; the
    pool threads inherit that mask, the calling thread gets its full mask back."""
    libs = []
    for name in ("pygrad", *peers):
        try:
            libs.append(_LOADERS[name](threads))
        except ImportError as e:
            print(f"skipped {name}: {e}")
    return libs


def _load_pygrad(threads):
    import pygrad
    if not hasattr(pygrad, "Session"):
        raise ImportError("pygrad has no Session (not built?)")
    pygrad.set_num_threads(threads)
    return Library("pygrad", pygrad, {})


def _load_tensorflow(threads):
    import tensorflow.compat.v1 as tf1
    tf1.logging.set_verbosity(tf1.logging.ERROR)
    tf1.disable_eager_execution()
    tf1.disable_v2_behavior()
    config = tf1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
    return Library("tensorflow", tf1, {"config": config})


def _load_torch(threads):
    import torch
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # only allowed before any inter-op work
        torch.set_num_interop_threads(threads)
    return Library("torch", torch, {})


def _load_jax(threads):
    import jax
    jax.config.update("jax_enable_x64", False)
    _start_jax_cpu_client(jax, threads)
    return Library("jax", jax, {})


_LOADERS = {"pygrad": _load_pygrad, "tensorflow": _load_tensorflow, "torch": _load_torch, "jax": _load_jax}


def _start_jax_cpu_client(jax, threads):
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not 0 < threads < len(allowed):
        jax.devices("cpu")
        return
    os.sched_setaffinity(0, allowed[:threads])
    try:
        jax.devices("cpu")
    finally:
        os.sched_setaffinity(0, allowed)


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), else what the platform module knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def blas_description():
    """Lines naming the BLAS (and OpenMP) runtimes loaded in this process, with the OpenBLAS core
    each dispatched to and its thread count; call it after the libraries are imported.

    threadpoolctl's view when it is installed; else the one pygrad links to (scipy_openblas32, asked
    through its own get_config/get_corename), if it is loaded. OPENBLAS_CORETYPE, which overrides
    OpenBLAS's dispatch, is shown as this process's environment has it (pygrad sets a default on
    AMD CPUs with AVX-512)."""
    lines = []
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        for lib in threadpool_info():
            core = f" core {lib['architecture']}" if lib.get("architecture") else ""
            lines.append(f"{lib['user_api']}: {lib['internal_api']} {lib.get('version') or ''}{core}, "
                         f"threads: {lib['num_threads']} ({os.path.basename(lib['filepath'])})")
    else:
        openblas = sys.modules.get("scipy_openblas32")
        if openblas is not None and hasattr(openblas, "dll"):
            import ctypes
            for fn in ("scipy_openblas_get_config", "scipy_openblas_get_corename"):
                getattr(openblas.dll, fn).restype = ctypes.c_char_p
            lines.append(f"blas: {openblas.dll.scipy_openblas_get_config().decode()} (core "
                         f"{openblas.dll.scipy_openblas_get_corename().decode()}), "
                         f"threads: {openblas.dll.scipy_openblas_get_num_threads()} "
                         f"(scipy_openblas32; threadpoolctl not installed)")
        else:
            lines.append("blas: not identified (threadpoolctl not installed)")
    lines.append(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    return lines


# --------------------------------------------------------------------------- oneDNN implementations

ONEDNN_LIBRARIES = ("pygrad", "tensorflow")
"""The libraries whose convolutions run through oneDNN (pygrad's forward, conv_onednn.cc; TensorFlow's
oneDNN-enabled CPU kernels, the default on x86 Linux)."""


def add_onednn_probe_option(parser):
    """--onednn-probe LIBRARY: what ``onednn_description`` runs in its child process (the script
    then runs that library's convolutions once and exits)."""
    parser.add_argument("--onednn-probe", choices=ONEDNN_LIBRARIES, metavar="LIBRARY",
                        help="run LIBRARY's convolutions once and exit (used by the header, with "
                             "ONEDNN_VERBOSE=1 set)")


def onednn_description(libs):
    """Lines naming the oneDNN primitives and implementations that pygrad's and TensorFlow's
    convolutions run, for each such library in `libs`: this script is run again in a child process,
    with the same arguments plus ``--peers <that library or none> --onednn-probe <library>`` and
    ONEDNN_VERBOSE=1 (and the older DNNL_VERBOSE=1), and the verbose lines it prints on stdout
    are summarized (``summarize_onednn_verbose``). The child inherits the thread environment, so
    it runs what the benchmark runs. The script must handle --onednn-probe
    (``add_onednn_probe_option``)."""
    lines = []
    for lib in libs:
        if lib.name not in ONEDNN_LIBRARIES:
            continue
        peers = "none" if lib.name == "pygrad" else lib.name
        cmd = [sys.executable, sys.argv[0], *sys.argv[1:], "--peers", peers, "--onednn-probe", lib.name]
        env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            lines.append(f"oneDNN ({lib.name}): the probe did not finish in 900 s")
            continue
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            lines.append(f"oneDNN ({lib.name}): the probe failed (exit {r.returncode}): {last}")
            continue
        lines.extend(summarize_onednn_verbose(r.stdout, lib.name))
    return lines


def summarize_onednn_verbose(text, library, max_problems=3):
    """Lines summarizing oneDNN's verbose output `text` (ONEDNN_VERBOSE=1): the version and ISA it
    reports, then per (primitive kind, propagation kind, implementation) the number of executions
    and the problems it served (oneDNN's descriptors, e.g. mb50_ic32oc64_ih14oh14kh5...).

    Both line formats are read: oneDNN 3.2's ``onednn_verbose,exec,cpu,convolution,
    brgconv:avx512_core,forward_training,...`` and the later ``onednn_verbose,v1,primitive,exec,
    ...``, with or without a timestamp (ONEDNN_VERBOSE_TIMESTAMP); dnnl_verbose lines too."""
    version = isa = None
    groups = {}
    for line in text.splitlines():
        fields = line.strip().split(",")
        if fields[0] not in ("onednn_verbose", "dnnl_verbose"):
            continue
        fields = fields[1:]
        while fields and re.fullmatch(r"v\d+|[\d.]+", fields[0]):  # format version, timestamp
            fields = fields[1:]
        if fields[:1] == ["primitive"]:
            fields = fields[1:]
        if fields[:1] == ["info"]:
            info = ",".join(fields[1:])
            if info.startswith("oneDNN v"):
                version = info.split()[1]
            elif "isa:" in info:
                isa = info.split("isa:", 1)[1]
            continue
        if len(fields) < 9 or fields[0] != "exec":
            continue  # creation lines (ONEDNN_VERBOSE=2 and above), graph API lines
        kind, impl, prop, problem = fields[2], fields[3] or "(unnamed)", fields[4], fields[-2]
        groups.setdefault((kind, prop, impl), []).append(problem)
    head = f"oneDNN ({library}): {version or 'version not reported'}"
    if isa:
        head += f", isa: {isa}"
    if not groups:
        return [head + "; no oneDNN primitive ran"]
    lines = [head]
    for (kind, prop, impl), problems in groups.items():
        distinct = list(dict.fromkeys(problems))
        shown = " ".join(distinct[:max_problems]) + (f" (+{len(distinct) - max_problems} more)"
                                                     if len(distinct) > max_problems else "")
        lines.append(f"  {kind} {prop}: {impl} x{len(problems)} [{shown}]")
    return lines


# --------------------------------------------------------------------------- the FMA peak

PEAK_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "peak.c")

Peak = namedtuple("Peak", "gflops lanes lines")
"""The measured single-core float32 FMA peak: GFLOP/s of the fastest width (None when it could not
be measured), that width in float32 lanes, and lines describing each width measured (or why
nothing was)."""

_WIDTH_NAMES = {16: "AVX-512 (16 lanes)", 8: "AVX2+FMA (8 lanes)", 4: "FMA on SSE registers (4 lanes)",
                1: "scalar fmaf (1 lane)"}


def fma_peak(seconds=0.05, repeats=5, cc=None):
    """The single-core float32 FMA peak (``Peak``), measured on the calling thread.

    ``native/peak.c`` is compiled with `cc` (default: $CC, else cc, gcc or clang on the PATH) as
    ``-O2 -march=native -shared -fPIC`` into a temporary directory and loaded with ctypes; each
    vector width the compiled target has (AVX-512 16 lanes, AVX2 8, SSE 4, scalar) runs
    independent FMA chains for about `seconds`, `repeats` times, and the best repeat counts
    (other processes only ever slow a repeat down). The peak is the fastest width's rate: the
    widest unit is not always the fastest per cycle (AMD's Zen 4 runs a 512-bit FMA as two
    256-bit halves, so its AVX-512 and AVX2 rates agree). Without a compiler, or when it fails,
    gflops is None and the lines say why. The peak of T threads is taken as T times this one."""
    cc = cc or os.environ.get("CC") or next(
        (c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if cc is None or not shutil.which(cc):
        return Peak(None, None, ["FMA peak: not measured: no C compiler found (set CC); "
                                 "the fraction-of-peak column is left empty"])
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "peak.so")
        r = subprocess.run([cc, "-O2", "-march=native", "-shared", "-fPIC", "-o", so, PEAK_SOURCE, "-lm"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            return Peak(None, None, [f"FMA peak: not measured: {cc} could not compile {PEAK_SOURCE}: {msg}"])
        lib = ctypes.CDLL(so)
    lib.peak_fma_seconds.restype = ctypes.c_double
    lib.peak_fma_seconds.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.POINTER(ctypes.c_float)]
    chains = lib.peak_fma_chains()
    sink = ctypes.c_float()
    rates = {}
    for lanes in (16, 8, 4, 1):
        iterations = 10000
        elapsed = lib.peak_fma_seconds(lanes, iterations, ctypes.byref(sink))
        if elapsed < 0:
            continue  # the target has no such width
        while elapsed < seconds / 10:  # calibrate: about `seconds` per repeat
            iterations *= 4
            elapsed = lib.peak_fma_seconds(lanes, iterations, ctypes.byref(sink))
        iterations = max(1, int(iterations * seconds / max(elapsed, 1e-9)))
        best = min(lib.peak_fma_seconds(lanes, iterations, ctypes.byref(sink)) for _ in range(repeats))
        rates[lanes] = iterations * chains * lanes * 2 / best / 1e9
    lanes = max(rates, key=rates.get)
    lines = [f"FMA peak, one core, float32 ({cc} -O2 -march=native; {chains} independent chains): "
             + ", ".join(f"{_WIDTH_NAMES[w]} {g:.1f} GFLOP/s" for w, g in rates.items())
             + f"; peak = {rates[lanes]:.1f} GFLOP/s per thread (T threads: T x that)"]
    return Peak(rates[lanes], lanes, lines)


def jax_adam(jax, params, grads, m, v, beta1_power, beta2_power, lr, beta1=0.9, beta2=0.999, epsilon=1e-8):
    """One Adam update of the pytree params in JAX, in TensorFlow's formula (lr_t = lr sqrt(1 - beta2^t) /
    (1 - beta1^t); m, v updated; var -= lr_t m / (sqrt(v) + epsilon)), for the benchmarks' hand-written
    JAX steps (optax is not a dependency). Returns (params, m, v, beta1_power, beta2_power), the
    powers advanced for the next step."""
    jnp = jax.numpy
    lr_t = lr * jnp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = jax.tree.map(lambda m, g: m + (g - m) * (1 - beta1), m, grads)
    v = jax.tree.map(lambda v, g: v + (g * g - v) * (1 - beta2), v, grads)
    params = jax.tree.map(lambda p, m, v: p - lr_t * m / (jnp.sqrt(v) + epsilon), params, m, v)
    return params, m, v, beta1_power * beta1, beta2_power * beta2


def print_loss_check(check, label=""):
    """Prints each library's first losses ({name: array}) and each peer's largest relative difference
    from pygrad's; label qualifies the losses (e.g. "keep_prob 1.0, ")."""
    import numpy as np
    for name, losses in check.items():
        print(f"losses ({name}, {label}first {len(losses)} steps): " + " ".join(f"{v:.6f}" for v in losses))
    if "pygrad" in check:
        ref = check["pygrad"]
        for name, losses in check.items():
            if name != "pygrad":
                rel = np.max(np.abs(losses - ref) / np.abs(ref))
                print(f"max |loss_{name} - loss_pygrad| / |loss_pygrad| over {len(ref)} steps: {rel:.2e}")


def fresh_graph(tf):
    """A new default graph for a TF1-style library (a no-op context for others)."""
    return tf.Graph().as_default() if hasattr(tf, "Graph") else contextlib.nullcontext()


@functools.lru_cache(maxsize=1)
def load_mnist_train(data_dir):
    """The 55000 training examples (validation = first 5000 dropped), float32 in [0, 1], one-hot.
    Read once per directory and process: callers must not write to the arrays."""
    import numpy as np

    def read(name, offset):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)

    images = read("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255.0
    labels = read("train-labels-idx1-ubyte.gz", 8)
    one_hot = np.zeros((labels.size, 10), dtype=np.float32)
    one_hot[np.arange(labels.size), labels] = 1.0
    return images[5000:], one_hot[5000:]


def make_batches(images, labels, batch, count=None):
    """Consecutive batches of a fixed permutation (NumPy seed 0) of the examples, C-contiguous; the
    first `count` of them when given (the same batches, whatever the count)."""
    import numpy as np
    perm = np.random.RandomState(0).permutation(len(images))
    starts = range(0, len(images) - batch + 1, batch)
    return [(np.ascontiguousarray(images[perm[i:i + batch]]),
             np.ascontiguousarray(labels[perm[i:i + batch]]))
            for i in (starts if count is None else starts[:count])]


def time_steps(step, warmup, steps):
    """Calls step(i) for i in range(warmup + steps); returns (seconds of each call after warm-up,
    the values returned by all calls)."""
    times, values = [], []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        v = step(i)
        t1 = time.perf_counter()
        values.append(v)
        if i >= warmup:
            times.append(t1 - t0)
    return times, values


class Results:
    """Per (case, library): one (median, p10, p90) in microseconds per repeat; ``print_table``
    reports the median of each over the repeats and peer median / pygrad median."""

    def __init__(self):
        self._stats = {}
        self._order = []

    def add(self, case, library, seconds):
        import numpy as np
        if (case, library) not in self._stats:
            self._stats[case, library] = []
            self._order.append((case, library))
        self._stats[case, library].append(np.percentile(seconds, [50, 10, 90]) * 1e6)

    def median(self, case, library):
        """(median, p10, p90) in microseconds, each the median over the repeats; None if not run."""
        import numpy as np
        stats = self._stats.get((case, library))
        return None if stats is None else tuple(np.median(np.array(stats), axis=0))

    def print_table(self):
        import numpy as np
        cases = list(dict.fromkeys(c for c, _ in self._order))
        print(f"{'case':<22}{'library':<12}{'median_us':>12}{'p10':>12}{'p90':>12}{'peer/pygrad':>14}")
        for case in cases:
            rows = {lib: np.median(np.array(self._stats[c, lib]), axis=0)
                    for c, lib in self._order if c == case}
            base = rows.get("pygrad")
            for lib, (med, p10, p90) in rows.items():
                ratio = f"{med / base[0]:.2f}x" if base is not None and lib != "pygrad" else ""
                print(f"{case:<22}{lib:<12}{med:>12.1f}{p10:>12.1f}{p90:>12.1f}{ratio:>14}")


def per_step_report(tf, sess, fetches, feed_of, steps, title, top=12):
    """Times each op of a training step from traced runs (RunOptions FULL_TRACE: the native plan's
    per-step timers, wall time on the run's thread) over `steps` steps (feed_of(i) gives step i's
    feeds) and prints the median microseconds per step of each op's step, largest first. Fused
    steps are labelled with all their ops."""
    print_per_step(traced_op_times(tf, sess, fetches, feed_of, steps), steps, title, top)


def print_per_step(times, steps, title, top=12):
    """per_step_report's table of times, traced_op_times' result over `steps` runs."""
    import numpy as np
    per_op = {f"{types}  {node}": v for (types, node), v in times.items()}
    rows = sorted(((float(np.median(v)), k) for k, v in per_op.items()), reverse=True)
    print(f"\n{title}: median µs per step over {steps} traced steps (the plan's per-step timers)")
    for us, label in rows[:top]:
        print(f"  {us:9.1f}  {label}")
    rest = sum(us for us, _ in rows[top:])
    print(f"  {rest:9.1f}  the other {max(0, len(rows) - top)} steps; all steps {sum(us for us, _ in rows):.1f}")


# --------------------------------------------------------------------------- peak resident memory

_ENVIRON_AT_START = dict(os.environ)  # before any library is imported: what a memory probe's child gets

MEMORY_PREFIX = "memory-probe: "

_MODULES = {"pygrad": ("pygrad",), "tensorflow": ("tensorflow", "tf_keras"), "torch": ("torch",),
            "jax": ("jax", "jaxlib")}
"""The top-level modules of each library; a memory probe's child blocks the other libraries'."""


def add_memory_options(parser, default_steps=10):
    """--memory-steps, --memory-only and --memory-probe LIBRARY (what ``memory_table`` runs in its
    child processes; the script must hand it to ``memory_probe`` before ``start``)."""
    parser.add_argument("--memory-steps", type=int, default=default_steps,
                        help="training steps after --warmup in each library's memory probe "
                             "(0: no memory table; default: %(default)s)")
    parser.add_argument("--memory-only", action="store_true", help="print the memory table only (no timing)")
    parser.add_argument("--memory-probe", choices=("pygrad", *PEERS), metavar="LIBRARY",
                        help="measure LIBRARY's training step alone and print the result (used by the "
                             "memory table, in a child process of its own)")


def _status_kib(field):
    """A field of /proc/self/status in KiB (VmRSS: resident now, VmHWM: the peak), else None; VmHWM
    falls back to getrusage's ru_maxrss (the peak since the process started)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    if field == "VmHWM":
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return None


def _reset_peak():
    """Resets the process's VmHWM to its resident size now (Linux 4.0 on: '5' written to
    /proc/self/clear_refs); False where that cannot be done (the peak then counts from the start)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_probe(args, batch, training_step):
    """What --memory-probe LIBRARY runs, in a child process of its own: the thread environment is
    set, the batches read (and the full data set dropped) before anything else, then only LIBRARY
    is imported (the other libraries' modules are blocked: an optional import of one fails) and
    training_step(lib, batches), a context manager that builds the network and yields step(i)
    (one training step on batch i), is entered. The resident size then is the `built` one; the
    peak (VmHWM) is reset to it, --warmup steps run and the peak is read (`warmup`), reset again,
    --memory-steps steps run and the peak is read (`steady`). For pygrad the plans the steps added
    to the default session's plan cache report their temporaries (CompiledRun.temp_bytes,
    temp_bytes_before_reuse, plan.arena_bytes), and the session's arenas kept between runs are
    read. Prints one line, MEMORY_PREFIX and the results as JSON, on stdout."""
    import gc
    import json
    set_thread_environment(args.threads)
    count = args.warmup + args.memory_steps
    batches = make_batches(*load_mnist_train(args.data_dir), batch, count=count)
    load_mnist_train.cache_clear()
    gc.collect()
    name = args.memory_probe
    for other, modules in _MODULES.items():  # TensorFlow imports JAX when it can (for TF Lite)
        if other != name:
            for module in modules:
                sys.modules.setdefault(module, None)  # (an import of it raises ImportError)
    lib = _LOADERS[name](args.threads)
    out = {"library": name}
    with training_step(lib, batches) as step:
        session = lib.module.get_default_session() if name == "pygrad" else None
        known = {id(c) for c in session.plans.values()} if session is not None else set()
        out["built"] = _status_kib("VmRSS")
        out["reset"] = _reset_peak()
        for i in range(args.warmup):
            step(i)
        out["warmup"] = _status_kib("VmHWM")
        _reset_peak()
        for i in range(args.warmup, count):
            step(i)
        out["steady"] = _status_kib("VmHWM")
        out["end"] = _status_kib("VmRSS")
        out["imported"] = [m for m in ("pygrad", *PEERS) if sys.modules.get(m) is not None]
        if session is not None:
            out["plans"] = [{"steps": len(c.step_ops), "temp_bytes": c.temp_bytes,
                             "temp_bytes_before_reuse": c.temp_bytes_before_reuse,
                             "arena_bytes": c.plan.arena_bytes}
                            for c in session.plans.values() if id(c) not in known]
            out["arenas_kept"] = session._store.arenas.free_bytes
    print(MEMORY_PREFIX + json.dumps(out), flush=True)


def memory_table(names, args, case):
    """Runs this script again once per library of `names`, each child with --memory-probe LIBRARY
    (``memory_probe``) and the environment this process had before it imported any library, and
    prints the table: resident MiB after import and build, the peak over the warm-up and the
    steps, the step's own memory (peak - built) and the peak over the steps after the warm-up;
    then pygrad's plan of the training step. `case` names the step measured."""
    import json
    rows, notes = [], []
    for name in names:
        cmd = [sys.executable, sys.argv[0], *sys.argv[1:], "--memory-probe", name]
        try:
            r = subprocess.run(cmd, env=_ENVIRON_AT_START, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            notes.append(f"{name}: the memory probe did not finish in 1800 s")
            continue
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(MEMORY_PREFIX)]
        if r.returncode != 0 or not lines:
            last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            notes.append(f"{name}: the memory probe failed (exit {r.returncode}): {last}")
            continue
        rows.append(json.loads(lines[-1][len(MEMORY_PREFIX):]))

    def mib(kib):
        return kib / 1024

    print(f"\npeak resident memory of {case}, each library alone in a child process (cpu: {cpu_model()}; "
          f"threads={args.threads} warmup={args.warmup} steps={args.memory_steps}; MiB, /proc/self/status)")
    print(f"{'library':<12}{'built':>10}{'peak':>10}{'step':>10}{'steady':>10}")
    for row in rows:
        peak = max(row["warmup"], row["steady"])
        mark = "" if row["reset"] else "  (peak since the process started: VmHWM could not be reset)"
        if row["imported"] != [row["library"]]:
            mark += f"  (the child imported {', '.join(row['imported'])})"
        print(f"{row['library']:<12}{mib(row['built']):>10.1f}{mib(peak):>10.1f}{mib(peak - row['built']):>10.1f}"
              f"{mib(row['steady']):>10.1f}{mark}")
    print("built: resident after import, build and initialization, before the first step; peak: the most "
          "resident over the warm-up and the steps; step: peak - built; steady: the peak over the steps after "
          "the warm-up")
    for row in rows:
        for plan in row.get("plans", ()):
            print(f"pygrad plan of {case} ({plan['steps']} steps): temporaries "
                  f"{plan['temp_bytes'] / 2**20:.2f} MiB after reuse (arena {plan['arena_bytes'] / 2**20:.2f} MiB), "
                  f"{plan['temp_bytes_before_reuse'] / 2**20:.2f} MiB before reuse")
        if "arenas_kept" in row:
            print(f"pygrad session arenas kept between runs: {row['arenas_kept'] / 2**20:.2f} MiB")
    for note in notes:
        print(note)


def start_with_memory(parser, batch, case, training_step):
    """``start``, for a script with the memory options (``add_memory_options``): a child process's
    --memory-probe runs ``memory_probe`` with training_step(lib, batches, args), --memory-only
    prints ``memory_table`` of pygrad and the peers; both then return None."""
    args = parser.parse_args()
    if args.memory_probe or args.memory_only:
        if not args.data_dir:
            parser.error("--data-dir is required (or set PYGRAD_MNIST_DIR)")
        if args.memory_probe:
            memory_probe(args, batch, lambda lib, batches: training_step(lib, batches, args))
        else:
            memory_table(["pygrad", *parse_peers(parser, args.peers)], args, case)
        return None
    return start(parser, batch)


# --------------------------------------------------------------------------- per-op cost by op type

def traced_op_times(tf, sess, fetches, feed_of, steps):
    """{(op types, node name): [microseconds in each of `steps` traced runs]} from pygrad's per-step
    timers (RunOptions FULL_TRACE; feed_of(i) gives run i's feeds). The op types are the timeline
    label's, "Type" or "Type+Type2+..." for a fused step (named by its first node); a node that runs
    more than once in a run (in a loop) has its times added."""
    per_op = {}
    for i in range(steps):
        rm = tf.RunMetadata()
        sess.run(fetches, feed_dict=feed_of(i), options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=rm)
        run = {}
        for dev in rm.step_stats.dev_stats:
            for n in dev.node_stats:
                key = (n.timeline_label.split(" = ", 1)[-1].split("(", 1)[0], n.node_name)
                run[key] = run.get(key, 0) + (n.all_end_rel_nanos or n.all_end_rel_micros * 1000) / 1000
        for key, us in run.items():
            per_op.setdefault(key, []).append(us)
    return per_op


def per_op_report(tf, sess, fetches, feed_of, steps, title, top=12):
    """Prints, from `steps` traced runs (``traced_op_times``), the median microseconds per run of each
    op type (a fused step counted under its "Type+Type2" label), with the number of nodes and the share
    of the run's traced time, then the `top` most expensive nodes; and the median untraced run
    (`steps` runs) beside the traced steps' sum, the gap being the run's own overhead."""
    import numpy as np
    per_op = traced_op_times(tf, sess, fetches, feed_of, steps)
    untraced = []
    for i in range(steps):
        t0 = time.perf_counter()
        sess.run(fetches, feed_dict=feed_of(i))
        untraced.append(time.perf_counter() - t0)
    medians = {key: float(np.median(v)) for key, v in per_op.items()}
    total = sum(medians.values())
    by_type = {}
    for (types, _), us in medians.items():
        count, sum_us = by_type.get(types, (0, 0.0))
        by_type[types] = (count + 1, sum_us + us)
    print(f"\n{title}: median µs per run over {steps} traced runs (RunOptions FULL_TRACE step stats)")
    print(f"  {'µs':>9}  {'share':>6}  {'nodes':>5}  op type")
    for types, (count, us) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
        print(f"  {us:9.1f}  {100 * us / total:5.1f}%  {count:5d}  {types}")
    print(f"  {total:9.1f}  all {len(medians)} steps; an untraced run: {np.median(untraced) * 1e6:.1f} µs (median)")
    print(f"  the {top} most expensive steps:")
    for us, (types, node) in sorted(((us, key) for key, us in medians.items()), reverse=True)[:top]:
        print(f"  {us:9.1f}  {types}  {node}")
