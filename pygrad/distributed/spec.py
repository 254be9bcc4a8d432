"""The plain data the driver hands to shards and workers: what a variable is, what a run is, and
how a model function's result is read."""
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from pygrad import errors

EVENT_TOPIC = "pygrad.distributed"


@dataclasses.dataclass
class VarSpec:
    """A trainable variable: its name (the variable op's, as TF checkpoints name it), shape,
    NumPy dtype name, initial value and the shard holding it."""
    name: str
    shape: tuple
    dtype: str
    value: Any = None
    shard: int = 0
    sparse: bool = False  # its gradient is IndexedSlices (an embedding's): pushed as the rows touched


@dataclasses.dataclass
class Job:
    """What every worker task of one run gets."""
    run_id: str
    model_fn: Callable
    specs: list
    num_workers: int
    num_shards: int
    mode: str
    steps: int
    batch_size: int
    fetch_every: int
    push_every: int
    shuffle: bool
    seed: int
    threads: int
    timeout: float
    log_every: float
    data_fn: Callable | None = None
    overlap: bool = True     # async: push and pull in a thread while computing (else in the loop)
    compression: str | None = None  # "bfloat16": float32 gradients pushed as bfloat16
    transport: str = "auto"  # "auto": shared memory with a shard on this host, else messages; "messages"

    @property
    def handles_name(self):
        return f"pygrad-ps-{self.run_id}"


def read_model(model, where):
    """{"loss", "inputs", "accuracy", "train_feed"} of a model function's result: a dict with
    "loss" and "inputs" (the placeholders the data's arrays feed, in order), optionally "accuracy"
    and "train_feed" (extra feeds for training steps, e.g. {keep_prob: 0.5})."""
    from pygrad.graph import Tensor

    if not isinstance(model, dict) or "loss" not in model or "inputs" not in model:
        raise errors.InvalidArgumentError(
            None, None, f"{where}: the model function must return a dict with 'loss' and 'inputs' (the placeholders "
                        f"the data's arrays feed, in order), got {type(model).__name__}")
    inputs = model["inputs"]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for t in [model["loss"]] + inputs:
        if not isinstance(t, Tensor):
            raise errors.InvalidArgumentError(None, None, f"{where}: 'loss' and 'inputs' must be tensors, got {t!r}")
    unknown = set(model) - {"loss", "inputs", "accuracy", "train_feed"}
    if unknown:
        raise errors.InvalidArgumentError(None, None, f"{where}: the model dict has unknown keys {sorted(unknown)}")
    return {"loss": model["loss"], "inputs": inputs, "accuracy": model.get("accuracy"),
            "train_feed": dict(model.get("train_feed") or {})}


class WorkerError(errors.UnknownError):
    """A worker task failed: .worker (its index), .address and .cause (the exception)."""

    def __init__(self, worker, address, cause):
        text = str(cause)
        named = re.match(r"worker \d+ \(([^)]*)\): (.*)", text, re.DOTALL)  # raised on the worker, naming itself
        if named:
            address, text = address or named.group(1), named.group(2)
        self.worker, self.address, self.cause = worker, address, cause
        where = f"worker {worker}" + (f" ({address})" if address else "")
        super().__init__(None, None, f"{where} failed: {type(cause).__name__}: {text}")


class _DeadActorCalls:
    """Drops tornado's report of a Dask actor call whose worker died while the call was under way
    (Dask logs the callback's FutureCancelledError); the caller has already seen the failure and
    recovers from it."""

    def filter(self, record):
        return "wait_then_set_result" not in record.getMessage()


def quiet_dead_actor_calls():
    import logging

    log = logging.getLogger("tornado.application")
    if not any(isinstance(f, _DeadActorCalls) for f in log.filters):
        log.addFilter(_DeadActorCalls())
