"""A character-level language model in TF1 style, with ``import pygrad as tf``: a MultiRNNCell of
two BasicLSTMCells unrolled by tf.nn.static_rnn over 20 characters, predicting each next
character; Adam with the gradients clipped by tf.clip_by_global_norm. Prints the loss (mean
cross-entropy per character, in nats) beside the loss of a uniform guess, ln(vocabulary size),
and a sample generated from the trained model.

    python examples/char_lstm.py TEXT_FILE [--steps 300] [--hidden 64]
"""
import argparse

import numpy as np

import pygrad as tf
from progress import progress


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("text_file")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=5.0)
    parser.add_argument("--display-step", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with open(args.text_file, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    vocab = len(chars)
    index = {c: i for i, c in enumerate(chars)}
    data = np.array([index[c] for c in text], dtype=np.int32)
    rng = np.random.default_rng(args.seed)
    tf.set_random_seed(args.seed)
    steps = args.seq_length

    inputs = tf.placeholder(tf.int32, [None, steps])
    targets = tf.placeholder(tf.int32, [None, steps])
    x = tf.unstack(tf.one_hot(inputs, vocab), steps, axis=1)
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(args.hidden) for _ in range(2)])
    outputs, _ = tf.nn.static_rnn(cell, x, dtype=tf.float32)
    softmax_w = tf.get_variable("softmax_w", [args.hidden, vocab])
    softmax_b = tf.get_variable("softmax_b", [vocab], initializer=tf.zeros_initializer())
    logits = tf.matmul(tf.concat(outputs, 0), softmax_w) + softmax_b  # [steps * batch, vocab], time-major
    labels = tf.reshape(tf.transpose(targets), [-1])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))

    tvars = tf.trainable_variables()
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, tvars), args.clip)
    train_op = tf.train.AdamOptimizer(args.learning_rate).apply_gradients(zip(grads, tvars))
    last_probs = tf.nn.softmax(logits[-1:])  # the next character after the last input, batch of 1

    def batch():
        starts = rng.integers(0, len(data) - steps - 1, args.batch)
        return (np.stack([data[s:s + steps] for s in starts]), np.stack([data[s + 1:s + steps + 1] for s in starts]))

    print(f"text: {len(text)} characters, vocabulary {vocab}, uniform loss {np.log(vocab):.4f}")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        recent: list[float] = []
        bar = progress(range(1, args.steps + 1), "training")
        for step in bar:
            xb, yb = batch()
            _, value = sess.run([train_op, loss], {inputs: xb, targets: yb})
            bar.set_postfix(loss=f"{value:.4f}")
            recent = (recent + [value])[-20:]
            if step % args.display_step == 0 or step == 1:
                print(f"step {step} loss {value:.4f}")
        print(f"final loss {np.mean(recent):.4f} (mean of the last {len(recent)} steps)")
        window = list(data[:steps])
        sample = []
        for _ in range(60):
            p = sess.run(last_probs, {inputs: np.array([window[-steps:]])})[0].astype(np.float64)
            window.append(int(rng.choice(vocab, p=p / p.sum())))
            sample.append(chars[window[-1]])
        print("sample:", repr("".join(sample)))


if __name__ == "__main__":
    main()
