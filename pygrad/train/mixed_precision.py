"""TF1's mixed-precision switch: the process-wide state that Sessions read when they are created
(TF's mixed_precision_global_state)."""

_state = {"enabled": False, "non_mixed_precision_session_created": False}


def graph_rewrite_enabled():
    """Whether enable_mixed_precision_graph_rewrite is in effect."""
    return _state["enabled"]


def note_session_created(uses_mixed_precision):
    """Called by Session.__init__: a session that does not use mixed precision makes a later enable warn."""
    if not uses_mixed_precision:
        _state["non_mixed_precision_session_created"] = True
