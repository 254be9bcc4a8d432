"""Scaling sweep: pygrad vs TensorFlow 1 (compat.v1), PyTorch and JAX over model width and batch size.

Two models, each library's code shared with the benchmark that defines it:
  mlp      bench_train.py's MLP 784-w-w-10 (relu, softmax cross entropy, Adam lr 1e-3) at widths
           --widths (default 64, 256, 1024, 4096) and batches --batches (default 1, 16, 128, 1024):
           a training step ``sess.run([train_op, loss])`` (pygrad, tensorflow), the PyTorch
           nn.Sequential + torch.optim.Adam step, the jitted JAX step (hand-written Adam, TF's
           formula; optax is not a dependency), as bench_train.py describes.
  convnet  bench_convnet.py's Deep MNIST convnet training step (keep_prob 0.5, Adam 1e-4) at
           batches --conv-batches (default 1, 16, 64, 256).
--quick runs a small grid instead: widths 64, 256, batches 1, 16, convnet batches 1, 16, and
--min-time 0.05.

Method: for each point and library, a fresh network from the same NumPy initial values (seed
--seed), --warmup untimed steps, then timed steps (time.perf_counter around each step) until
--min-time seconds and --min-steps steps have passed, at most --max-steps. The batches are the first
16 of common.make_batches at the point's batch size (the same for every library, cycled). --repeats
repeats interleave the libraries at each point (pygrad, tensorflow, torch, jax, ...); a time is the
median over repeats of the per-repeat median step time.

Cross-check at every point: the MLP's losses over its first 5 steps, and the convnet's over its
warm-up steps (run with keep_prob 1.0, so that no random draw is involved; the timed steps use
0.5), are compared with pygrad's from the same initial values (max relative difference, last
repeat; float32 rounding gave 1e-7 to 2e-4 in a --quick run, the most at batch 1).

FLOPs (the ``*_flops`` functions of bench_train.py and bench_convnet.py, whose docstrings give the
formulas): the matrix products of a training step, 2*M*N*K each, forward, weight gradients and the
input gradients the step needs; a convolution as its im2col product, 2 * N*OH*OW*O * KH*KW*C.
MLP: 4*B*(784 w + w^2 + 10 w) + 2*B*(w^2 + 10 w). Convnet: 82,049,024 per example. Elementwise
work (biases, relu, softmax, pooling, Adam) is not counted, so at small sizes the rate
understates the work done. GFLOP/s = FLOPs / median step time.

Peak: the single-core float32 FMA peak is measured when the script starts (common.fma_peak:
native/peak.c compiled with the system's cc -O2 -march=native, independent FMA chains on each
vector width the CPU has, the fastest width counted); the peak of --threads T threads is taken as
T times the single-core peak (turbo and shared cores can make the true T-thread peak lower). Without
a C compiler the fraction-of-peak column stays empty, with a message. "%peak" = pygrad's GFLOP/s /
(T x single-core peak).

Output: one row per point (pygrad's time, each peer's time and ratio peer / pygrad, pygrad's
GFLOP/s and fraction of peak, the largest loss difference); --out DIR (default benches/results/)
receives sweep-threads<T>.csv (one row per point and library: model, width, batch, library,
median/p10/p90 microseconds, ratio, FLOPs per step, GFLOP/s, fraction of peak, timed steps, loss
difference) and sweep-threads<T>.png, a chart (matplotlib, Agg backend): per MLP width and for the
convnet, time per step against batch size on log-log axes, one line per library, and a panel of
pygrad's fraction of peak against batch size. Without matplotlib the chart is skipped with a
message; the CSV is always written.

Header: the CPU, the measured FMA peak, the BLAS libraries loaded (common.blas_description) and the
oneDNN implementations pygrad's and TensorFlow's convolutions ran at the convnet's batch sizes (the
script runs itself again with --onednn-probe and ONEDNN_VERBOSE=1; common.onednn_description).

Threads: every library gets --threads threads, set as benches/common.py describes. A peer that
cannot be imported is skipped with a message.

Run:
  python benches/bench_sweep.py --data-dir DIR [--quick] [--threads 1] [--repeats 3]
                                [--widths 64,256,1024,4096] [--batches 1,16,128,1024]
                                [--conv-batches 1,16,64,256] [--warmup 3] [--min-time 0.5]
                                [--min-steps 5] [--max-steps 1000] [--out DIR]
                                [--peers tensorflow,torch,jax]
DIR holds the four MNIST IDX .gz files (train-images-idx3-ubyte.gz, ...); it defaults to
$PYGRAD_MNIST_DIR. ``--peers none`` runs pygrad alone; ``--conv-batches none`` or ``--widths none``
leaves a model out.
"""
import csv
import os
import time

import bench_convnet
import bench_train
import common

FULL_GRID = {"widths": "64,256,1024,4096", "batches": "1,16,128,1024", "conv_batches": "1,16,64,256"}
QUICK_GRID = {"widths": "64,256", "batches": "1,16", "conv_batches": "1,16"}
QUICK_MIN_TIME = 0.05
BATCHES_PER_POINT = 16
CHECK_STEPS = 5


def parse_sizes(parser, text, option):
    if text.strip() == "none":
        return []
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = [0]
    if not sizes or min(sizes) < 1:
        parser.error(f"{option} takes positive integers separated by commas, or 'none'; got {text!r}")
    return sizes


def points(widths, batches, conv_batches):
    """[(model, width or None, batch)], the MLP's points first."""
    return [("mlp", w, b) for w in widths for b in batches] + [("convnet", None, b) for b in conv_batches]


def case_name(model, width, batch):
    return f"mlp_w{width}_b{batch}" if model == "mlp" else f"convnet_b{batch}"


def train_flops(model, width, batch):
    return bench_train.mlp_train_flops(batch, width) if model == "mlp" else bench_convnet.train_flops(batch)


def run_point(lib, model, width, batches, inits, args):
    """(per-step seconds after warm-up, losses of the checked steps) of `lib` at one point."""
    if model == "mlp":
        network = bench_train.mlp_network(lib, inits["mlp", width])
        check_steps = CHECK_STEPS

        def step(train, i):
            return train(*batches[i % len(batches)])
    else:
        network = bench_convnet.network(lib, inits["convnet"])
        check_steps = args.warmup

        def step(train_and_infer, i):
            bx, by = batches[i % len(batches)]
            return train_and_infer[0](bx, by, 1.0 if i < args.warmup else bench_convnet.KEEP_PROB_TRAIN)

    times, losses = [], []
    with network as train:
        i = 0
        while True:
            t0 = time.perf_counter()
            loss = step(train, i)
            t1 = time.perf_counter()
            if i < check_steps:
                losses.append(loss)
            if i >= args.warmup:
                times.append(t1 - t0)
                if len(times) >= args.max_steps or (len(times) >= args.min_steps and sum(times) >= args.min_time):
                    return times, losses
            i += 1


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def draw_chart(path, rows, widths, conv_batches, libraries, peak_line):
    """The PNG chart; returns a message saying what was written or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install matplotlib)"
    panels = [("mlp", w) for w in widths] + ([("convnet", None)] if conv_batches else [])
    ncols = min(3, len(panels) + 1)
    nrows = -(-(len(panels) + 1) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 4 * nrows), squeeze=False)
    axes = axes.ravel()
    for ax, (model, width) in zip(axes, panels):
        for lib in libraries:
            pts = sorted((r["batch"], r["median_us"] / 1e3) for r in rows
                         if r["model"] == model and r["width"] == (width or "") and r["library"] == lib)
            if pts:
                ax.loglog(*zip(*pts), marker="o", label=lib)
        ax.set_title(f"MLP 784-{width}-{width}-10, Adam" if model == "mlp" else "Deep MNIST convnet, Adam")
        ax.set_xlabel("batch size")
        ax.set_ylabel("ms per training step")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax = axes[len(panels)]
    for model, width in panels:
        pts = sorted((r["batch"], r["fraction_of_peak"]) for r in rows
                     if r["model"] == model and r["width"] == (width or "") and r["library"] == "pygrad"
                     and r["fraction_of_peak"] != "")
        if pts:
            ax.semilogx(*zip(*pts), marker="o", label=f"MLP w={width}" if model == "mlp" else "convnet")
    ax.set_title("pygrad: fraction of the FMA peak")
    ax.set_xlabel("batch size")
    ax.set_ylabel("GFLOP/s / peak")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.text(0.02, 0.98, peak_line, transform=ax.transAxes, va="top", fontsize=8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center right")
    for ax in axes[len(panels) + 1:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"chart: {path}"


def main():
    p = common.argument_parser(__doc__)
    p.add_argument("--quick", action="store_true",
                   help="a small grid (widths 64,256; batches 1,16; convnet 1,16) and --min-time 0.05")
    p.add_argument("--widths", help=f"MLP widths (default {FULL_GRID['widths']})")
    p.add_argument("--batches", help=f"MLP batch sizes (default {FULL_GRID['batches']})")
    p.add_argument("--conv-batches", help=f"convnet batch sizes (default {FULL_GRID['conv_batches']})")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per point (default: %(default)s)")
    p.add_argument("--min-time", type=float, help="timed seconds per point and library (default 0.5)")
    p.add_argument("--min-steps", type=int, default=5, help="timed steps at least (default: %(default)s)")
    p.add_argument("--max-steps", type=int, default=1000, help="timed steps at most (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="NumPy seed of the initial weights")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                   help="directory for the CSV and the chart (default: benches/results/)")
    common.add_onednn_probe_option(p)
    args, libs, _ = common.start(p, None)
    grid = QUICK_GRID if args.quick else FULL_GRID
    widths = parse_sizes(p, args.widths or grid["widths"], "--widths")
    batches = parse_sizes(p, args.batches or grid["batches"], "--batches") if widths else []
    conv_batches = parse_sizes(p, args.conv_batches or grid["conv_batches"], "--conv-batches")
    if args.min_time is None:
        args.min_time = QUICK_MIN_TIME if args.quick else 0.5
    if args.warmup < 1 or args.min_steps < 1 or args.max_steps < args.min_steps:
        p.error("--warmup and --min-steps must be at least 1, and --max-steps at least --min-steps")
    if args.onednn_probe:
        bench_convnet.onednn_probe(libs, args.onednn_probe, args.data_dir, conv_batches, args.seed)
        return

    peak = common.fma_peak()
    print(f"cpu: {common.cpu_model()}")
    for line in peak.lines + common.blas_description() + (common.onednn_description(libs) if conv_batches else []):
        print(line)
    peak_all = peak.gflops * args.threads if peak.gflops else None
    peak_line = (f"peak: {args.threads} x {peak.gflops:.1f} = {peak_all:.1f} GFLOP/s" if peak_all
                 else "peak: not measured")

    images, labels = common.load_mnist_train(args.data_dir)
    grid_points = points(widths, batches, conv_batches)
    data = {b: common.make_batches(images, labels, b, count=BATCHES_PER_POINT)
            for b in sorted({b for _, _, b in grid_points})}
    inits = {("mlp", w): bench_train.mlp_initial_values(w, args.seed) for w in widths}
    inits["convnet"] = bench_convnet.initial_values(args.seed)

    results = common.Results()
    losses = {}
    steps = {}
    for _ in range(args.repeats):
        for model, width, batch in grid_points:
            case = case_name(model, width, batch)
            for lib in libs:
                times, losses[case, lib.name] = run_point(lib, model, width, data[batch], inits, args)
                results.add(case, lib.name, times)
                steps[case, lib.name] = len(times)

    rows = []
    names = [lib.name for lib in libs]
    print(f"\nthreads={args.threads} repeats={args.repeats} warmup={args.warmup} min_time={args.min_time} "
          f"min_steps={args.min_steps} (median over repeats of the per-repeat median; ms per step; "
          f"ratio = peer / pygrad; {peak_line})")
    print(f"{'point':<20}" + "".join(f"{n + ' ms':>20}" for n in names) + f"{'GFLOP/s':>10}{'%peak':>8}{'loss diff':>11}")
    for model, width, batch in grid_points:
        case = case_name(model, width, batch)
        flops = train_flops(model, width, batch)
        base = results.median(case, "pygrad")
        ref = losses.get((case, "pygrad"))
        line = f"{case:<20}"
        worst = None
        for name in names:
            med, p10, p90 = results.median(case, name)
            ratio = med / base[0] if base is not None and name != "pygrad" else None
            gflops = flops / (med * 1e-6) / 1e9
            fraction = gflops / peak_all if peak_all else None
            diff = (bench_train.max_relative_difference(losses[case, name], ref)
                    if ref is not None and name != "pygrad" else None)
            if diff is not None:
                worst = diff if worst is None else max(worst, diff)
            cell = f"{med / 1e3:.3f}" + (f" ({ratio:.2f}x)" if ratio is not None else "")
            line += f"{cell:>20}"
            rows.append({"model": model, "width": width or "", "batch": batch, "library": name, "threads": args.threads,
                         "median_us": round(med, 2), "p10_us": round(p10, 2), "p90_us": round(p90, 2),
                         "ratio_peer_over_pygrad": round(ratio, 4) if ratio is not None else "",
                         "flops_per_step": flops, "gflops": round(gflops, 3),
                         "fraction_of_peak": round(fraction, 4) if fraction is not None else "",
                         "timed_steps": steps[case, name],
                         "max_rel_loss_diff": f"{diff:.3e}" if diff is not None else ""})
        if base is not None:
            gflops = flops / (base[0] * 1e-6) / 1e9
            line += f"{gflops:>10.2f}" + (f"{100 * gflops / peak_all:>7.1f}%" if peak_all else f"{'':>8}")
        line += f"{worst:>11.1e}" if worst is not None else ""
        print(line)
    if not rows:
        print("no point to run")
        return

    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"sweep-threads{args.threads}")
    write_csv(stem + ".csv", rows)
    print(f"\ncsv: {stem}.csv")
    print(draw_chart(stem + ".png", rows, widths, conv_batches, names, peak_line))


if __name__ == "__main__":
    main()
