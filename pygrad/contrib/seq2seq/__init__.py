"""tf.contrib.seq2seq: TF 1.15's sequence-to-sequence library built from pygrad's ops: decoders
run by dynamic_decode (decoder.py), BasicDecoder with its training and inference helpers
(basic_decoder.py), attention (attention_wrapper.py), beam search (beam_search_decoder.py),
sequence_loss (loss.py)."""
from pygrad.contrib.seq2seq.attention_wrapper import (AttentionMechanism, AttentionWrapper,  # noqa: F401
                                                      AttentionWrapperState, BahdanauAttention, LuongAttention,
                                                      hardmax)
from pygrad.contrib.seq2seq.basic_decoder import (BasicDecoder, BasicDecoderOutput, GreedyEmbeddingHelper,  # noqa: F401
                                                  Helper, SampleEmbeddingHelper, TrainingHelper)
from pygrad.contrib.seq2seq.beam_search_decoder import (BeamSearchDecoder, BeamSearchDecoderOutput,  # noqa: F401
                                                        BeamSearchDecoderState, FinalBeamSearchDecoderOutput,
                                                        gather_tree, tile_batch)
from pygrad.contrib.seq2seq.decoder import Decoder, dynamic_decode  # noqa: F401
from pygrad.contrib.seq2seq.loss import sequence_loss  # noqa: F401
