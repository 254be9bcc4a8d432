"""tf.contrib.rnn: the core cells, wrappers and static RNNs under their contrib names, and
contrib's own cells, wrappers and stacked bidirectional RNNs (re-exports only)."""
from pygrad.rnn.cells import (BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell, LSTMStateTuple,  # noqa: F401
                              RNNCell)
from pygrad.rnn.contrib_cells import (GRUBlockCell, GRUBlockCellV2, LayerNormBasicLSTMCell,  # noqa: F401
                                      LSTMBlockCell, LSTMBlockFusedCell, LSTMBlockWrapper)
from pygrad.rnn.contrib_wrappers import (AttentionCellWrapper, EmbeddingWrapper, HighwayWrapper,  # noqa: F401
                                         InputProjectionWrapper, OutputProjectionWrapper)
from pygrad.rnn.stacked import stack_bidirectional_dynamic_rnn, stack_bidirectional_rnn  # noqa: F401
from pygrad.rnn.static import static_bidirectional_rnn, static_rnn  # noqa: F401
from pygrad.rnn.wrappers import DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper  # noqa: F401
