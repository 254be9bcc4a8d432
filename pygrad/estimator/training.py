"""tf.estimator.train_and_evaluate in one process, as TF's local mode: the Estimator trains up to
TrainSpec.max_steps; after each checkpoint it saves (at most every EvalSpec.throttle_secs) and once
at the end, the EvalSpec's evaluation runs on that checkpoint and the exporters export it
(LatestExporter, FinalExporter, BestExporter into model_dir/export/<name>)."""
import collections
import glob
import inspect
import logging
import os
import shutil

from pygrad.estimator.estimator import Estimator
from pygrad.estimator.model_fn import validate_hooks
from pygrad.graph import GraphKeys
from pygrad.train import hooks as hooks_lib

_log = logging.getLogger("pygrad")


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    def __new__(cls, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, validate_hooks(hooks), tuple(saving_listeners or []))


class EvalSpec(collections.namedtuple("EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters",
                                                   "start_delay_secs", "throttle_secs"])):
    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None, start_delay_secs=120,
                throttle_secs=600):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        exporters = () if exporters is None else tuple(exporters) if isinstance(exporters, (list, tuple)) \
            else (exporters,)
        names = set()
        for e in exporters:
            if not isinstance(e, Exporter):
                raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {e}.")
            if not e.name or not e.name.strip():
                raise ValueError("An Exporter must have a non-empty name.")
            if e.name in names:
                raise ValueError(f"`exporters` must have unique names. Such a name cannot be `None`. {e.name} "
                                 f"already exists.")
            names.add(e.name)
        return super().__new__(cls, input_fn, steps, name, validate_hooks(hooks), exporters, start_delay_secs,
                               throttle_secs)


class _EvalListener(hooks_lib.CheckpointSaverListener):
    """Evaluates (and exports) after a checkpoint is saved, at most every throttle_secs, and at
    the end if the last checkpoint was not evaluated."""

    def __init__(self, estimator, train_spec, eval_spec):
        self._estimator, self._train_spec, self._eval_spec = estimator, train_spec, eval_spec
        self._timer = hooks_lib.SecondOrStepTimer(every_secs=eval_spec.throttle_secs)
        self._first = True
        self.eval_result, self.export_results = None, []

    def after_save(self, session, global_step_value):
        if self._first:  # the checkpoint of the session's start: nothing trained since
            self._first = False
            return None
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            _log.info("Skip the current checkpoint eval due to throttle secs (%s secs).", self._eval_spec.throttle_secs)
        return None

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, step):
        self._timer.update_last_triggered_step(step)
        spec, estimator = self._eval_spec, self._estimator
        checkpoint = estimator.latest_checkpoint()
        self.eval_result = estimator.evaluate(spec.input_fn, steps=spec.steps, hooks=spec.hooks, name=spec.name,
                                              checkpoint_path=checkpoint)
        final = self._train_spec.max_steps is not None and \
            self.eval_result[GraphKeys.GLOBAL_STEP] >= self._train_spec.max_steps
        for exporter in spec.exporters:
            path = os.path.join(estimator.model_dir, "export", exporter.name)
            self.export_results.append(exporter.export(estimator, path, checkpoint, self.eval_result, final))


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains and evaluates as above; returns (the last evaluation's metrics, the exports)."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`, given {type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}")
    config = estimator.config
    if not (config.save_checkpoints_steps or config.save_checkpoints_secs):
        raise ValueError("train_and_evaluate evaluates after each checkpoint: set RunConfig.save_checkpoints_steps "
                         "or save_checkpoints_secs")
    _log.info("Start train and evaluate loop. The evaluate will happen after every checkpoint. Checkpoint frequency "
              "is determined based on RunConfig arguments: save_checkpoints_steps %s or save_checkpoints_secs %s.",
              config.save_checkpoints_steps, config.save_checkpoints_secs)
    listener = _EvalListener(estimator, train_spec, eval_spec)
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks), max_steps=train_spec.max_steps,
                    saving_listeners=[listener] + list(train_spec.saving_listeners))
    if listener.eval_result is None:  # trained before: evaluate what model_dir holds
        listener._evaluate(int(estimator.get_variable_value(GraphKeys.GLOBAL_STEP)))
    return listener.eval_result, listener.export_results


# ---------------------------------------------------------------- exporters

class Exporter:
    name = None

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False, exports_to_keep=5):
        self._name, self._fn, self._assets, self._as_text = name, serving_input_receiver_fn, assets_extra, as_text
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got %s" % exports_to_keep)
        self._keep = exports_to_keep

    name = property(lambda self: self._name)

    def _export(self, estimator, export_path, checkpoint_path):
        out = estimator.export_saved_model(export_path, self._fn, assets_extra=self._assets, as_text=self._as_text,
                                           checkpoint_path=checkpoint_path)
        if self._keep is not None:
            stamps = sorted((int(d) for d in os.listdir(export_path) if d.isdigit()))
            for old in stamps[:-self._keep]:
                shutil.rmtree(os.path.join(export_path, str(old)), ignore_errors=True)
        return out


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation, keeping the newest exports_to_keep."""

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        return self._export(estimator, export_path, checkpoint_path)


class FinalExporter(_SavedModelExporter):
    """Exports once, after the final evaluation."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text, None)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        return self._export(estimator, export_path, checkpoint_path) if is_the_final_export else None


def _loss_smaller(best_eval_result, current_eval_result):
    for what, r in (("best_eval_result", best_eval_result), ("current_eval_result", current_eval_result)):
        if not r or "loss" not in r:
            raise ValueError(f"{what} cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


def _verify_compare_fn_args(compare_fn):
    args = set(inspect.signature(compare_fn).parameters)
    for needed in ("best_eval_result", "current_eval_result"):
        if needed not in args:
            raise ValueError(f"compare_fn ({compare_fn}) must include {needed} argument.")
    extra = sorted(args - {"best_eval_result", "current_eval_result"})
    if extra:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: {extra}")


class BestExporter(_SavedModelExporter):
    """Exports when an evaluation is better (compare_fn(best_eval_result=, current_eval_result=);
    by default a smaller loss) than the best so far, read first from the evaluations' event files
    of the estimator's model_dir."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None, event_file_pattern="eval/*.tfevents.*",
                 compare_fn=_loss_smaller, assets_extra=None, as_text=False, exports_to_keep=5):
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        _verify_compare_fn_args(compare_fn)
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text, exports_to_keep)
        self._pattern, self._compare, self._best, self._model_dir = event_file_pattern, compare_fn, None, None

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._pattern:
            self._model_dir = estimator.model_dir
            self._best = _best_from_events(os.path.join(estimator.model_dir, self._pattern), self._compare)
        if self._best is None or self._compare(best_eval_result=self._best, current_eval_result=eval_result):
            self._best = eval_result
            return self._export(estimator, export_path, checkpoint_path)
        return None


def _best_from_events(pattern, compare):
    from pygrad.summary import summary_iterator
    best = None
    for path in glob.glob(pattern):
        for event in summary_iterator(path):
            if event.HasField("summary"):
                result = {v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")}
                if result and (best is None or compare(best, result)):
                    best = result
    return best
