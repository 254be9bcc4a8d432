"""Runs a frozen TensorFlow graph (a .pb GraphDef, as TF1's convert_variables_to_constants and
model zoos write them) on pygrad: on an image, or on a random batch; prints the top outputs of the
first example and the time per batch.

    python examples/frozen_graph.py MODEL.pb [--image PHOTO.jpg] [--batch 8] [--runs 10]
                                    [--input NAME] [--output NAME] [--size 224] [--scale 1/255]

The input defaults to the graph's only Placeholder, the output to the last node no other node
reads. An image is resized to the input's height and width (or --size) and scaled by --scale;
reading one needs the optional `pillow` package.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import pygrad as tf


def _endpoints(graph_def, input_name, output_name):
    placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
    if input_name is None:
        if len(placeholders) != 1:
            sys.exit(f"the graph has {len(placeholders)} placeholders ({', '.join(placeholders)}): give --input")
        input_name = placeholders[0]
    read = {i.lstrip("^").partition(":")[0] for n in graph_def.node for i in n.input}
    if output_name is None:
        ends = [n.name for n in graph_def.node if n.name not in read and n.op not in ("Const", "NoOp")]
        if not ends:
            sys.exit("no node is an output of the graph: give --output")
        output_name = ends[-1]
    return input_name, output_name


def _image(path, height, width, scale):
    try:
        from PIL import Image
    except ImportError:
        sys.exit("reading an image needs pillow (pip install pillow); without --image a random batch is used")
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB").resize((width, height)), np.float32) * scale


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--image")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--input")
    parser.add_argument("--output")
    parser.add_argument("--size", type=int, default=224, help="height and width where the input does not say")
    parser.add_argument("--scale", type=float, default=1 / 255)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()

    with open(args.model, "rb") as f:
        graph_def = tf.GraphDef.FromString(f.read())
    input_name, output_name = _endpoints(graph_def, args.input, args.output)
    start = time.perf_counter()
    tf.import_graph_def(graph_def, name="")
    graph = tf.get_default_graph()
    x, y = graph.get_tensor_by_name(input_name + ":0"), graph.get_tensor_by_name(output_name + ":0")
    print(f"{args.model}: {len(graph_def.node)} nodes imported in {time.perf_counter() - start:.2f} s; "
          f"input {input_name} {x.shape}, output {output_name} {y.shape}")

    dims = [d if d is not None else args.size for d in x.shape.as_list()[1:]]
    if args.image:
        batch = _image(args.image, dims[0], dims[1], args.scale)[None]
    else:
        batch = np.random.default_rng(0).random([args.batch] + dims, dtype=np.float32)
    sess = tf.Session()
    out = sess.run(y, {x: batch})  # the first run builds the plan
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        out = sess.run(y, {x: batch})
        times.append(time.perf_counter() - start)
    scores = np.asarray(out)[0].reshape(-1)
    top = np.argsort(-scores)[:args.top]
    print("top outputs of the first example: " + ", ".join(f"{i}: {scores[i]:.4f}" for i in top))
    print(f"batch of {len(batch)}: median {statistics.median(times) * 1e3:.2f} ms per batch over {args.runs} runs")


if __name__ == "__main__":
    main()
