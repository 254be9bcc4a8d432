"""tf.profiler: a graph's parameter and floating-point operation counts, and its ops' times from a
traced run, as TF's profiler reports them (model_analyzer.py)."""
from pygrad.profiler.model_analyzer import GraphNodeProto, profile  # noqa: F401
from pygrad.profiler.option_builder import ProfileOptionBuilder  # noqa: F401

MultiGraphNodeProto = GraphNodeProto
