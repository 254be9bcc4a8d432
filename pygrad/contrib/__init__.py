"""tf.contrib: the parts of TF1's contrib that TF1 programs commonly use."""
from pygrad.contrib import (  # noqa: F401
    crf,
    distributions,
    framework,
    layers,
    learn,
    legacy_seq2seq,
    lookup,
    metrics,
    rnn,
    seq2seq,
    slim,
    training,
)
from pygrad.contrib.slim import losses  # noqa: F401  (tf.contrib.losses is slim.losses)
