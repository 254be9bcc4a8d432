"""RunConfig: where and how often an Estimator saves (TF's defaults: a checkpoint every 600 s
unless save_checkpoints_steps is given, the 5 latest kept, summaries and a step-rate log every 100
steps). The distributed settings TF reads from TF_CONFIG are TF's single-process values: an
Estimator runs in one process, and a TF_CONFIG naming a cluster is refused, saying so."""
import json
import os

_USE_DEFAULT = object()
_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
                "log_step_count_steps", "train_distribute", "device_fn", "eval_distribute", "experimental_distribute",
                "experimental_max_worker_delay_secs", "session_creation_timeout_secs", "checkpoint_save_graph_def")


class TaskType:
    MASTER, PS, WORKER, CHIEF, EVALUATOR = "master", "ps", "worker", "chief", "evaluator"


class RunConfig:
    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT, session_config=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200, checkpoint_save_graph_def=True):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and save_checkpoints_secs.")
        for name, value in (("save_summary_steps", save_summary_steps), ("log_step_count_steps", log_step_count_steps),
                            ("save_checkpoints_steps", save_checkpoints_steps),
                            ("save_checkpoints_secs", save_checkpoints_secs),
                            ("keep_checkpoint_max", keep_checkpoint_max)):
            if value is not None and value < 0:
                raise ValueError(f"{name} should be >= 0, given: {value}")
        tf_config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
        if tf_config.get("cluster"):
            raise NotImplementedError(
                "RunConfig: TF_CONFIG names a cluster, and pygrad's Estimator runs in one process; run the "
                "training without TF_CONFIG (or see pygrad.distributed for training on a parameter server)")
        model_dir = tf_config.get("model_dir", model_dir)
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute, self._eval_distribute = train_distribute, eval_distribute
        self._device_fn = device_fn
        self._experimental_distribute = experimental_distribute
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    device_fn = property(lambda self: self._device_fn)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    # One process: TF's values for a run without a cluster.
    cluster_spec = property(lambda self: {})
    master = property(lambda self: "")
    evaluation_master = property(lambda self: "")
    is_chief = property(lambda self: True)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_id = property(lambda self: 0)
    task_type = property(lambda self: TaskType.WORKER)
    global_id_in_cluster = property(lambda self: 0)
    service = property(lambda self: None)
    protocol = property(lambda self: None)

    def replace(self, **kwargs):
        """A copy with some properties replaced (those TF allows)."""
        for k in kwargs:
            if k not in _REPLACEABLE:
                raise ValueError(f"{k} is not a valid property.")
        args = {k: getattr(self, f"_{k}") for k in _REPLACEABLE}
        args.update(kwargs)
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs \
                and kwargs["save_checkpoints_steps"] is not None:
            args["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs \
                and kwargs["save_checkpoints_secs"] is not None:
            args["save_checkpoints_steps"] = None
        return RunConfig(**args)

    def __repr__(self):
        return "RunConfig(" + ", ".join(f"{k}={getattr(self, '_' + k)!r}" for k in _REPLACEABLE) + ")"
