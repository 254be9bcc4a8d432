"""Helpers for the tests of the plan's passes: what a plan's steps are, and runs without a pass."""
from pygrad import passes


def plan_steps(sess):
    """[op type + the types of the ops fused into it] of each step of the last signature's plan."""
    compiled = list(sess.plans.values())[-1]
    return ["+".join([op.type] + [o.type for o in fused]) for op, fused in zip(compiled.step_ops,
                                                                               compiled.step_fused)]


def without_pass(monkeypatch, name):
    """run(fn): fn() with the pass passes.<name> switched off."""
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(passes, name, lambda program, fetched: None)
            return fn()
    return run
