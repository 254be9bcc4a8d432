"""TF1's mixed-precision switch. The process-wide state lives with the rewrite it switches
(pygrad/bfloat16.py: set_graph_rewrite, graph_rewrite_enabled, float32_session_created), which a
Session reads when it is created."""
from pygrad import bfloat16


def graph_rewrite_enabled():
    """Whether enable_mixed_precision_graph_rewrite is in effect."""
    return bfloat16.graph_rewrite_enabled()
