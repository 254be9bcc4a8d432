"""tf.estimator.Estimator: a model_fn trained, evaluated, asked for predictions and exported, each
call in a graph of its own, the state kept in model_dir (checkpoints, event files), as TF's.

train runs a MonitoredTrainingSession with TF's hooks (stop at steps/max_steps, NaN loss, the loss
and step logged, checkpoints by RunConfig, summaries); evaluate restores the newest checkpoint,
runs the metrics' update ops over the input (or `steps` batches) and writes their values to
model_dir/eval (eval_<name>); predict yields the predictions of the newest checkpoint;
export_saved_model writes a SavedModel TensorFlow serves (pygrad/estimator/serving.py).
"""
import copy
import inspect
import logging
import os
import tempfile

import numpy as np

from pygrad.estimator import model_fn as model_fn_lib
from pygrad.estimator.model_fn import ModeKeys
from pygrad.estimator.run_config import RunConfig
from pygrad.graph import Graph, GraphKeys
from pygrad.ops import state_ops
from pygrad.ops.summary_ops import scalar
from pygrad.summary.writer import FileWriterCache
from pygrad.train import checkpoint_management, checkpoint_utils, hooks as hooks_lib, training_util
from pygrad.train.monitored_session import ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession
from pygrad.train.saver import Saver

_log = logging.getLogger("pygrad")
_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


def _args(fn):
    return set(inspect.signature(fn).parameters)


class _DatasetInitializerHook(hooks_lib.SessionRunHook):
    """Initializes the iterator of an input_fn's Dataset when the session is made."""

    def __init__(self, iterator):
        self._iterator = iterator

    def after_create_session(self, session, coord):
        session.run(self._iterator.initializer)


class _StopAfterNEvalsHook(hooks_lib.SessionRunHook):
    def __init__(self, num_evals):
        self._num_evals, self._done = num_evals, 0

    def after_run(self, run_context, run_values):
        self._done += 1
        if self._done >= self._num_evals:
            run_context.request_stop()


def _check_hooks(hooks):
    hooks = list(hooks or [])
    for h in hooks:
        if not isinstance(h, hooks_lib.SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {h}")
    return hooks


class Estimator:
    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
        model_dir = os.fspath(model_dir) if model_dir is not None else None
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError(f"`model_dir` are set both in constructor and `RunConfig`, but with different values. "
                             f"In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            _log.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        args = _args(model_fn)
        if "features" not in args:
            raise ValueError(f"model_fn ({model_fn}) must include features argument.")
        if params is not None and "params" not in args:
            raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params ({params}) is "
                             f"passed to Estimator.")
        unexpected = args - _MODEL_FN_ARGS
        if unexpected and not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(model_fn).parameters.values()):
            raise ValueError(f"model_fn ({model_fn}) has following not expected args: {sorted(unexpected)}")
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        from pygrad.estimator.warm_starting import as_warm_start_settings
        self._warm_start_settings = as_warm_start_settings(warm_start_from)

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))
    model_fn = property(lambda self: self._model_fn)

    # ---------------------------------------------------------------- checkpoints
    def latest_checkpoint(self):
        return checkpoint_management.latest_checkpoint(self._model_dir)

    def _checkpoint(self):
        path = self.latest_checkpoint()
        if not path:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        return path

    def _checkpoint_or_none(self, checkpoint_path, what):
        """checkpoint_path, else the newest checkpoint; None (and a log line, as TF's) if there is none."""
        path = checkpoint_path or self.latest_checkpoint()
        if not path:
            _log.info("Could not find trained model in model_dir: %s, running initialization to %s.",
                      self._model_dir, what)
        return path

    def get_variable_names(self):
        return [name for name, _ in checkpoint_utils.list_variables(self._checkpoint())]

    def get_variable_value(self, name):
        return checkpoint_utils.load_variable(self._checkpoint(), name)

    def eval_dir(self, name=None):
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # ---------------------------------------------------------------- building
    def _input(self, input_fn, mode):
        """(features, labels, hooks) of input_fn's result: a Dataset (its initializable iterator's
        next element), a (features, labels) pair, or features."""
        from pygrad.data.dataset_ops import Dataset
        kwargs = {}
        args = _args(input_fn)
        for name, value in (("mode", mode), ("params", self.params), ("config", self.config)):
            if name in args:
                kwargs[name] = value
        result, hooks = input_fn(**kwargs), []
        if isinstance(result, Dataset):
            iterator = result.make_initializable_iterator()
            hooks.append(_DatasetInitializerHook(iterator))
            result = iterator.get_next()
        if isinstance(result, (list, tuple)):
            if len(result) != 2:
                raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
            return result[0], result[1], hooks
        return result, None, hooks

    def _call_model_fn(self, features, labels, mode, config):
        args, kwargs = _args(self._model_fn), {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        for name, value in (("mode", mode), ("params", self.params), ("config", config)):
            if name in args:
                kwargs[name] = value
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, model_fn_lib.EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec.")
        return spec

    def _graph(self):
        graph = Graph()
        cm = graph.as_default()
        cm.__enter__()
        if self._config.tf_random_seed is not None:
            graph.seed = self._config.tf_random_seed
        step = training_util.get_global_step(graph)
        if step is None:
            step = training_util.create_global_step(graph)
        return graph, cm, step

    def _maybe_warm_start(self, checkpoint_path):
        if not checkpoint_path and self._warm_start_settings:
            from pygrad.estimator.warm_starting import warm_start
            warm_start(self._warm_start_settings)

    # ---------------------------------------------------------------- train
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for steps more steps, or up to global step max_steps, or until input_fn's input
        ends; resumes from model_dir's newest checkpoint."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            latest = self.latest_checkpoint()
            start = int(checkpoint_utils.load_variable(latest, GraphKeys.GLOBAL_STEP)) if latest else 0
            if max_steps <= start:
                _log.info("Skipping training since max_steps has already saved.")
                return self
        hooks = _check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(hooks_lib.StopAtStepHook(num_steps=steps, last_step=max_steps))
        for listener in saving_listeners or []:
            if not isinstance(listener, hooks_lib.CheckpointSaverListener):
                raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}")
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        _log.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        graph, cm, step = self._graph()
        try:
            features, labels, input_hooks = self._input(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            self._maybe_warm_start(None)
            if not any(s.op.name == "loss" for s in graph.get_collection(GraphKeys.SUMMARIES)):
                scalar("loss", spec.loss)
            graph.add_to_collection(GraphKeys.LOSSES, spec.loss)
            config = self._config
            worker_hooks = input_hooks + hooks + [hooks_lib.NanTensorHook(spec.loss)]
            if config.log_step_count_steps is not None:
                worker_hooks.append(hooks_lib.LoggingTensorHook({"loss": spec.loss, "step": step},
                                                                every_n_iter=config.log_step_count_steps))
            worker_hooks += list(spec.training_hooks)
            if not (spec.scaffold.saver or graph.get_collection(GraphKeys.SAVERS)):
                graph.add_to_collection(GraphKeys.SAVERS, Saver(
                    sharded=True, max_to_keep=config.keep_checkpoint_max, defer_build=True,
                    keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours, save_relative_paths=True))
            chief_hooks = []
            savers = [h for h in worker_hooks + list(spec.training_chief_hooks)
                      if isinstance(h, hooks_lib.CheckpointSaverHook)]
            if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not savers:
                chief_hooks = [hooks_lib.CheckpointSaverHook(self._model_dir, save_secs=config.save_checkpoints_secs,
                                                             save_steps=config.save_checkpoints_steps,
                                                             scaffold=spec.scaffold)]
                savers = chief_hooks
            if saving_listeners:
                if not savers:
                    raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. Please set one of "
                                     "the RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.")
                savers[0]._listeners += [x for x in saving_listeners if x not in savers[0]._listeners]
            loss, steps_done = None, False
            with MonitoredTrainingSession(checkpoint_dir=self._model_dir, scaffold=spec.scaffold, hooks=worker_hooks,
                                          chief_only_hooks=chief_hooks + list(spec.training_chief_hooks),
                                          save_checkpoint_secs=0, save_summaries_steps=config.save_summary_steps,
                                          config=config.session_config,
                                          log_step_count_steps=config.log_step_count_steps) as sess:
                while not sess.should_stop():
                    _, loss = sess.run([spec.train_op, spec.loss])
                    steps_done = True
            if not steps_done:
                _log.warning("Training with estimator made no steps. Perhaps input is empty or misspecified.")
            return loss
        finally:
            cm.__exit__(None, None, None)

    # ---------------------------------------------------------------- evaluate
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """The metrics (and "loss", the mean loss, and "global_step") over input_fn's input (or
        steps batches), for the newest checkpoint (or checkpoint_path); written to eval_dir(name)."""
        from pygrad import metrics
        hooks = _check_hooks(hooks)
        if steps is not None:
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
            hooks.append(_StopAfterNEvalsHook(steps))
        checkpoint_path = self._checkpoint_or_none(checkpoint_path, "evaluate")
        graph, cm, step = self._graph()
        try:
            features, labels, input_hooks = self._input(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            self._maybe_warm_start(checkpoint_path)
            metric_ops = dict(spec.eval_metric_ops)
            if model_fn_lib.LOSS_METRIC_KEY in metric_ops:
                raise ValueError('Metric with name "loss" is not allowed, because Estimator already defines a '
                                 'default metric with the same name.')
            metric_ops[model_fn_lib.LOSS_METRIC_KEY] = metrics.mean(spec.loss)
            updates = [metric_ops[k][1] for k in sorted(metric_ops)]
            values = {k: v[0] for k, v in metric_ops.items()}
            if GraphKeys.GLOBAL_STEP in values:
                raise ValueError("Metric with name `global_step` is not allowed, because Estimator already defines a "
                                 "default metric with the same name.")
            values[GraphKeys.GLOBAL_STEP] = step
            final = hooks_lib.FinalOpsHook(values)
            all_hooks = input_hooks + hooks + list(spec.evaluation_hooks) + [final]
            update = state_ops.group(*updates)
            _log.info("Starting evaluation")
            creator = ChiefSessionCreator(scaffold=spec.scaffold, checkpoint_filename_with_path=checkpoint_path,
                                          config=self._config.session_config)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as sess:
                while not sess.should_stop():
                    sess.run(update)
            results = final.final_ops_values
            _log.info("Saving dict for global step %d: %s", results[GraphKeys.GLOBAL_STEP],
                      ", ".join(f"{k} = {v}" for k, v in sorted(results.items())))
            _write_summaries(self.eval_dir(name), results, checkpoint_path)
            return results
        finally:
            cm.__exit__(None, None, None)

    # ---------------------------------------------------------------- predict
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None, yield_single_examples=True):
        """Yields the predictions of the newest checkpoint (or checkpoint_path) over input_fn's
        input: one example at a time, or a batch at a time."""
        hooks = _check_hooks(hooks)
        checkpoint_path = self._checkpoint_or_none(checkpoint_path, "predict")
        graph, cm, _ = self._graph()
        try:
            features, _, input_hooks = self._input(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            self._maybe_warm_start(checkpoint_path)
            predictions = _keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(scaffold=spec.scaffold, checkpoint_filename_with_path=checkpoint_path,
                                          config=self._config.session_config)
            with MonitoredSession(session_creator=creator,
                                  hooks=input_hooks + hooks + list(spec.prediction_hooks)) as sess:
                while not sess.should_stop():
                    values = sess.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {k: v[i] for k, v in values.items()}
        finally:
            cm.__exit__(None, None, None)

    # ---------------------------------------------------------------- export
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                           checkpoint_path=None, experimental_mode=ModeKeys.PREDICT):
        """Writes a SavedModel of the PREDICT graph with the newest checkpoint's variables into a
        new export_dir_base/<timestamp> directory; returns its path (bytes, as TF's)."""
        from pygrad.estimator.serving import export_saved_model
        return export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                                  checkpoint_path or self.latest_checkpoint(), experimental_mode)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None, as_text=False,
                          checkpoint_path=None, strip_default_attrs=False):
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                                       checkpoint_path)


def _keys(predictions, keys):
    if keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    keys = [keys] if isinstance(keys, str) else list(keys)
    missing = [k for k in keys if k not in predictions]
    if missing:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, provided {keys}.")
    return {k: predictions[k] for k in keys}


def _batch_length(values):
    sizes = {k: np.shape(v)[0] if np.ndim(v) else None for k, v in values.items()}
    if None in sizes.values():
        raise ValueError(f"Batch length of predictions should be same. {sizes}")
    if len(set(sizes.values())) > 1:
        raise ValueError(f"Batch length of predictions should be same. {sizes}")
    return next(iter(sizes.values()))


def _write_summaries(output_dir, results, checkpoint_path):
    """The evaluation's scalars (and the checkpoint's path) as TF writes them, at the global step."""
    from pygrad.tf_protos import Summary  # TF's messages are built on first use
    step = int(results[GraphKeys.GLOBAL_STEP])
    summary = Summary()
    for key, value in sorted(results.items()):
        if key == GraphKeys.GLOBAL_STEP:
            continue
        arr = np.asarray(value)
        if arr.ndim == 0 and arr.dtype.kind in "fiub":
            summary.value.add(tag=key, simple_value=float(arr))
        else:
            _log.warning("Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int.", key)
    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, step)
    if checkpoint_path:
        text = Summary()
        v = text.value.add(tag="checkpoint_path")
        v.metadata.plugin_data.plugin_name = "text"
        v.tensor.dtype = 7  # DT_STRING
        v.tensor.string_val.append(checkpoint_path.encode())
        writer.add_summary(text, step)
    writer.flush()
