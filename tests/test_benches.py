"""The benchmarks' helpers that can be checked without timing anything: the FLOP counts against hand
counts, the FMA-peak program (it compiles and measures a positive rate where a C compiler is
present), the summary of oneDNN's verbose lines, the batches' contract, and the peak resident
memory table (its numbers' consistency, not their size)."""
import importlib.util
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import bench_convnet  # noqa: E402
import bench_train  # noqa: E402
import common  # noqa: E402


def test_mlp_flops_match_a_hand_count():
    # batch 1, width 64: forward 2*(784*64 + 64*64 + 64*10) = 109,824; the weight gradients the
    # same; the input gradients of layers 2 and 3: 2*(64*64 + 64*10) = 9,472.
    assert bench_train.mlp_train_flops(1, 64) == 109_824 + 109_824 + 9_472
    # linear in the batch
    assert bench_train.mlp_train_flops(128, 256) == 128 * bench_train.mlp_train_flops(1, 256)
    # width 256: forward 2*(200,704 + 65,536 + 2,560) = 537,600; input gradients 2*(65,536 + 2,560)
    assert bench_train.mlp_train_flops(1, 256) == 2 * 537_600 + 136_192


def test_convnet_flops_match_a_hand_count():
    # per example: conv1 2*28*28*32*25 = 1,254,400 (forward, filter gradient), conv2
    # 2*14*14*64*800 = 20,070,400, fc1 2*3136*1024 = 6,422,528, fc2 2*1024*10 = 20,480 (forward and
    # both gradients)
    assert bench_convnet.inference_flops(1) == 1_254_400 + 20_070_400 + 6_422_528 + 20_480 == 27_767_808
    assert bench_convnet.train_flops(1) == 2 * 1_254_400 + 3 * (20_070_400 + 6_422_528 + 20_480) == 82_049_024
    assert bench_convnet.train_flops(50) == 50 * 82_049_024


def test_mlp_initial_values_are_glorot_uniform():
    init = bench_train.mlp_initial_values(64, seed=0)
    assert {k: v.shape for k, v in init.items()} == {"W1": (784, 64), "b1": (64,), "W2": (64, 64), "b2": (64,),
                                                   "W3": (64, 10), "b3": (10,)}
    assert all(v.dtype == np.float32 for v in init.values())
    limit = np.sqrt(6.0 / (784 + 64))
    assert 0.95 * limit < np.abs(init["W1"]).max() <= limit
    assert not init["b1"].any()
    np.testing.assert_array_equal(init["W2"], bench_train.mlp_initial_values(64, seed=0)["W2"])


@pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler")
def test_fma_peak_compiles_and_measures_a_positive_rate():
    peak = common.fma_peak(seconds=0.005, repeats=2)
    assert peak.gflops is not None and peak.gflops > 0, peak.lines
    assert peak.lanes in (16, 8, 4, 1)
    assert "GFLOP/s" in peak.lines[0]


def test_fma_peak_without_a_compiler_says_why():
    peak = common.fma_peak(cc="no-such-compiler-here")
    assert peak.gflops is None
    assert "no C compiler" in peak.lines[0]


ONEDNN_3_2 = """\
onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e8866a7259df35f817229454d0c96)
onednn_verbose,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
onednn_verbose,info,prim_template:operation,engine,primitive,implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time
onednn_verbose,exec,cpu,convolution,brgconv:avx512_core,forward_training,src_f32::blocked:acdb::f0 wei_f32::blocked:cdba::f0 bia_undef::undef::: dst_f32::blocked:acdb::f0,attr-scratchpad:user ,alg:convolution_direct,mb4_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,0.618164
some other line the program printed
onednn_verbose,exec,cpu,convolution,brgconv:avx512_core,forward_training,src_f32::blocked:acdb::f0 wei_f32::blocked:cdba::f0 bia_undef::undef::: dst_f32::blocked:acdb::f0,attr-scratchpad:user ,alg:convolution_direct,mb4_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,0.594971
"""

ONEDNN_3_7 = """\
onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)
onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time
onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core,forward_training,src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb64a::f0 bia:undef::undef::: dst:f32::blocked:acdb::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,1.56592
onednn_verbose,v1,1700000000.5,primitive,exec,cpu,convolution,jit:avx512_core,backward_weights,src:f32::blocked:acdb::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32::blocked:acdb::f0,,alg:convolution_direct,mb8_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,1.61401
"""


def test_onednn_verbose_summary_reads_both_formats():
    assert common.summarize_onednn_verbose(ONEDNN_3_2, "pygrad") == [
        "oneDNN (pygrad): v3.2.0, isa: Intel AVX-512 with Intel DL Boost and bfloat16 support",
        "  convolution forward_training: brgconv:avx512_core x2 [mb4_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2]",
    ]
    lines = common.summarize_onednn_verbose(ONEDNN_3_7, "tensorflow")
    assert lines[0].startswith("oneDNN (tensorflow): v3.7.3, isa: Intel AVX-512")
    assert lines[1:] == [
        "  convolution forward_training: brg_conv_fwd:avx512_core x1 [mb8_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2]",
        "  convolution backward_weights: jit:avx512_core x1 [mb8_ic32oc64_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2]",
    ]


def test_onednn_verbose_summary_of_nothing_says_so():
    assert common.summarize_onednn_verbose("hello\n", "pygrad") == [
        "oneDNN (pygrad): version not reported; no oneDNN primitive ran"]


def test_pygrads_convolution_reports_its_onednn_implementation(tmp_path):
    """A real run: pygrad's float32 forward convolution runs through oneDNN, which names its
    implementation when ONEDNN_VERBOSE is set."""
    import os
    import subprocess
    program = ("import numpy as np, pygrad as tf\n"
               "x = tf.constant(np.ones((2, 8, 8, 3), np.float32))\n"
               "w = tf.constant(np.ones((3, 3, 3, 4), np.float32))\n"
               "print(tf.Session().run(tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], 'SAME'))))\n")
    out = subprocess.run([sys.executable, "-c", program], env=dict(os.environ, ONEDNN_VERBOSE="1", PYGRAD_NUM_THREADS="1"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    lines = common.summarize_onednn_verbose(out, "pygrad")
    assert lines[0].startswith("oneDNN (pygrad): v3."), lines
    convs = [line for line in lines[1:] if line.startswith("  convolution forward_")]
    assert len(convs) == 1 and "mb2_ic3oc4_ih8oh8kh3" in convs[0], lines
    # the rest: the filter's reorder into the layout the convolution takes, if it needs one
    assert all(line.startswith("  reorder") for line in lines[1:] if line not in convs), lines


def test_make_batches_count_takes_the_first_batches():
    images = np.arange(40, dtype=np.float32).reshape(20, 2)
    labels = np.arange(20, dtype=np.float32).reshape(20, 1)
    every = common.make_batches(images, labels, 3)
    first = common.make_batches(images, labels, 3, count=2)
    assert len(every) == 6 and len(first) == 2
    for (a, b), (c, d) in zip(first, every):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert all(a.flags.c_contiguous and a.shape == (3, 2) for a, _ in every)


def test_input_pipeline_bench_runs_in_a_tiny_mode(tmp_path):
    """benches/bench_input_pipeline.py end to end on a few small batches (in a child process: the
    bench sets the thread environment of the process it runs in)."""
    import subprocess
    out = subprocess.run([sys.executable, str(BENCHES / "bench_input_pipeline.py"), "--steps", "3", "--warmup", "1",
                          "--repeats", "1", "--files", "2", "--records", "40", "--batch", "4", "--peers", "none"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("pygrad ")]
    assert len(rows) == 1 and rows[0][3].endswith("%"), out
    assert "check: pygrad's median wait" in out


def test_per_step_timer_of_the_softmax_step(tmp_path, mnist_dir):
    """bench_train.py --per-step: the table the README's breakdown of the softmax step quotes, from
    traced runs; its rows are the step's ops and they add up to the whole."""
    import subprocess
    out = subprocess.run([sys.executable, str(BENCHES / "bench_train.py"), "--per-step", "--steps", "5",
                          "--peers", "none", "--data-dir", mnist_dir],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [line.split() for line in out.splitlines()[out.splitlines().index(next(
        line for line in out.splitlines() if line.startswith("pygrad, the softmax step"))) + 1:]]
    ops = {r[2] for r in rows if len(r) == 3}
    assert {"MatMul", "gradients/MatMul_grad/MatMul_1", "GradientDescent/update_Variable/ApplyGradientDescent"} <= ops
    total = float(rows[-1][-1])
    assert abs(sum(float(r[0]) for r in rows[:-1]) + float(rows[-1][0]) - total) < 0.2 + 1e-3 * total



def test_per_op_times_of_the_lstm_step(tmp_path, mnist_dir):
    """bench_lstm.py --per-step: the breakdown docs/benchmarks.md quotes, from traced runs: the
    products, the cell's forward and backward as one fused step each, and the run's total."""
    import subprocess
    out = subprocess.run([sys.executable, str(BENCHES / "bench_lstm.py"), "--per-step", "--steps", "2",
                          "--peers", "none", "--data-dir", mnist_dir],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    types = {f[3] for f in map(str.split, out.splitlines()) if len(f) == 4 and f[1].endswith("%")}
    assert "MatMul" in types and any(t.startswith("Add+Split+") for t in types), out
    assert any(t.startswith("AddN+") and t.endswith("+ConcatV2") for t in types), out
    assert re.search(r"all \d+ steps; an untraced run: [\d.]+ µs", out), out

def test_memory_table_of_the_lstm_step(tmp_path, mnist_dir):
    """bench_lstm.py --memory-only: pygrad's training step measured in a child process of its own,
    which imports no other library; the peak is at least the resident size before the first step,
    and the plan of the step reports its temporaries, fewer after reuse than before."""
    import re
    import subprocess
    out = subprocess.run([sys.executable, str(BENCHES / "bench_lstm.py"), "--memory-only", "--warmup", "1",
                          "--memory-steps", "2", "--peers", "none", "--data-dir", mnist_dir],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    assert common.cpu_model() in out
    rows = [line.split() for line in out.splitlines() if re.match(r"pygrad +\d", line)]
    assert len(rows) == 1 and len(rows[0]) == 5, out  # no note: VmHWM was reset, no other library imported
    built, peak, step, steady = map(float, rows[0][1:])
    assert 0 < built <= steady <= peak and abs(peak - built - step) < 0.11
    after, arena, before = map(float, re.search(
        r"plan of lstm_train_step \(\d+ steps\): temporaries ([\d.]+) MiB after reuse \(arena ([\d.]+) MiB\), "
        r"([\d.]+) MiB before reuse", out).groups())
    assert 0 < after <= arena < before


def test_inference_bench_frozen_model_agrees_with_tensorflow_and_onnxruntime(tf_peer):
    """bench_inference.py's check on a small MobileNet v1 (depth multiplier 0.25, 64x64 images): the
    frozen GraphDef pygrad builds, with TF-Slim's names and no variable left, gives TensorFlow's
    logits (and ONNX Runtime's, converted by tf2onnx, where both are installed) to 1e-4 of the
    logits' scale, at batch 1 and 4, on logits that differ from image to image."""
    import pygrad
    import bench_inference
    frozen = bench_inference.build_frozen("mobilenet_v1", image_size=64, depth_multiplier=0.25)
    graph_def = tf_peer.GraphDef.FromString(frozen.data)
    ops = {n.name: n.op for n in graph_def.node}
    assert ops["MobilenetV1/Conv2d_0/weights"] == ops["MobilenetV1/Conv2d_1_depthwise/BatchNorm/moving_mean"] == "Const"
    assert not {"VariableV2", "VarHandleOp", "Assign"} & set(ops.values())
    assert frozen.output == "MobilenetV1/Logits/SpatialSqueeze:0"
    images = [bench_inference.random_images(b, 64, 2) for b in (1, 4)]
    run = {"pygrad": bench_inference.pygrad_runner(pygrad, frozen)[0],
           "tensorflow": bench_inference.tensorflow_runner(tf_peer, frozen, {})}
    try:
        import onnxruntime
        import tf2onnx  # noqa: F401
    except ImportError:
        onnxruntime = None  # a benchmark reference only: CI does not install it
    if onnxruntime is not None:
        run["onnxruntime"] = bench_inference.onnxruntime_runner(onnxruntime, frozen, 1, 17)
    logits = run["pygrad"](images[1])
    assert logits.shape == (4, 1000)
    # the calibrated batch norms keep the image in the logits: they differ between images by a
    # good part of their scale (0.12 here; 0.04 with the random moving statistics uncalibrated)
    assert np.std(logits, axis=0).mean() > 0.05 * np.abs(logits).max()
    differences = bench_inference.agreement(run, images)
    assert set(differences) == set(run) - {"pygrad"}
    assert all(d < 1e-4 for d in differences.values()), differences
    # and the measure itself sees a difference of the logits' scale
    assert bench_inference.relative_difference(logits * (1 + 1e-3), logits) > 1e-4


def test_inference_bench_runs_in_a_tiny_mode(tmp_path):
    """benches/bench_inference.py end to end on the small MobileNet v1, pygrad alone: the table, and
    --per-step's per-op-type costs, whose rows add up to the traced run and show the fused steps; the
    CSV file and the chart drawn from such files."""
    import subprocess
    import bench_inference
    tiny = ["--models", "mobilenet_v1", "--image-size", "64", "--depth-multiplier", "0.25", "--peers", "none"]
    out = subprocess.run([sys.executable, str(BENCHES / "bench_inference.py"), *tiny, "--batches", "1,2",
                          "--repeats", "1", "--warmup", "1", "--min-time", "0", "--min-steps", "2", "--no-probe",
                          "--csv", "t1.csv"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("mobilenet_v1 b")]
    assert [r[:3] for r in rows] == [["mobilenet_v1", "b1", "pygrad"], ["mobilenet_v1", "b2", "pygrad"]], out
    written = bench_inference.read_csv(tmp_path / "t1.csv")
    assert [(r["model"], r["batch"], r["threads"], r["library"]) for r in written] == \
        [("mobilenet_v1", "1", "1", "pygrad"), ("mobilenet_v1", "2", "1", "pygrad")]
    assert [float(r["median_us"]) for r in written] == [float(r[3]) for r in rows]
    # a chart of a peer's ratios, from rows as two runs' files give them
    peer_rows = written + [{**r, "library": "tensorflow", "peer_over_pygrad": "1.25"} for r in written]
    peer_rows += [{**r, "threads": "2"} for r in peer_rows]
    said = bench_inference.draw_chart(tmp_path / "chart.png", peer_rows)
    if importlib.util.find_spec("matplotlib") is None:  # the sanitizer's environment
        assert said == "chart skipped: matplotlib is not installed (pip install matplotlib)"
    else:
        assert said == f"chart: {tmp_path / 'chart.png'}"
        assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = subprocess.run([sys.executable, str(BENCHES / "bench_inference.py"), *tiny, "--per-step",
                          "--steps-traced", "3"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("µs"))
    end = next(i for i, line in enumerate(lines) if " all " in line and "steps; an untraced run" in line)
    types = {line.split()[3]: float(line.split()[0]) for line in lines[head + 1:end]}
    # the batch norms and activations are done by the convolutions' steps
    assert {"Conv2D+Mul+Add+Relu6", "DepthwiseConv2dNative+Mul+Add+Relu6"} <= set(types) and "Relu6" not in types, out
    total = float(lines[end].split()[0])
    assert abs(sum(types.values()) - total) < 0.1 * len(types) + 1e-3 * total, out


def test_bfloat16_bench_runs_in_a_tiny_mode(tmp_path, mnist_dir):
    """bench_bfloat16.py end to end on a few steps: the speed rows of both precisions with the
    bfloat16 speed-up, and the accuracy rows with the difference in points; then --per-step, whose
    products' total and the rest add up to the traced step."""
    import subprocess
    args = [sys.executable, str(BENCHES / "bench_bfloat16.py"), "--peers", "none", "--data-dir", mnist_dir]
    out = subprocess.run(args + ["--repeats", "1", "--steps", "2", "--warmup", "1", "--accuracy-steps", "3",
                                 "--lstm-accuracy-steps", "3"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600, check=True).stdout
    assert re.search(r"cpu: .*; bfloat16 flags: .*; pygrad runs bfloat16 products: (yes|no)", out), out
    speed = [line.split() for line in out.splitlines() if re.match(r"(convnet|lstm)_\w+ +pygrad +(float32|bfloat16)",
                                                                   line)]
    assert len(speed) == 6 and all(r[-1].endswith("x") for r in speed if r[2] == "bfloat16"), out
    assert re.search(r"convnet_train_step +pygrad +bf16-api +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+x", out), out
    accuracy = [line.split() for line in out.splitlines() if re.match(r"(convnet|lstm) +3 +pygrad", line)]
    assert len(accuracy) == 4 and all(0 <= float(r[4]) <= 1 for r in accuracy), out
    out = subprocess.run(args + ["--per-step", "--steps", "2"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, check=True).stdout
    totals = re.findall(r"all steps ([\d.]+)\n  products ([\d.]+) ms, the other steps ([\d.]+) ms", out)
    assert len(totals) == 2, out
    for total, products, rest in totals:
        assert float(products) > 0 and abs(float(products) + float(rest) - float(total) / 1000) < 0.02


def test_parameter_server_bench_runs_the_embedding_model_in_a_tiny_mode(tmp_path):
    """benches/bench_ps.py end to end on the embedding model (synthetic data, no MNIST): one worker,
    both modes, sparse and dense pushes; the rows and the calibration print."""
    pytest.importorskip("distributed")
    import subprocess
    out = subprocess.run([sys.executable, str(BENCHES / "bench_ps.py"), "--model", "embedding", "--steps", "20",
                          "--batch", "16", "--workers", "1", "--variants", "default,dense", "--simulate", "8"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = {line[:34].strip(): line[34:].split() for line in out.splitlines() if "worker(s)" in line}
    assert set(rows) == {f"{m}, {v}, 1 worker(s)" for m in ("async", "sync") for v in ("default", "dense")}, out
    # kB per step: the rows touched against the whole 50,000 x 64 embedding
    assert float(rows["sync, default, 1 worker(s)"][2]) < float(rows["sync, dense, 1 worker(s)"][2]) / 20, out
    assert "calibration: worker step T =" in out
