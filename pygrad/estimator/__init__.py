"""tf.estimator (TF1's, as tensorflow-estimator 2.15 has it): Estimator, EstimatorSpec, ModeKeys,
RunConfig, train_and_evaluate with TrainSpec/EvalSpec, exporters, tf.estimator.export and
tf.estimator.inputs, WarmStartSettings, and the session hooks under their estimator names."""
import types

from pygrad.estimator import serving as _export_lib
from pygrad.estimator import inputs  # noqa: F401
from pygrad.estimator.canned import (BaselineClassifier, BaselineRegressor, DNNClassifier,  # noqa: F401
                                     DNNLinearCombinedClassifier,
                                     DNNLinearCombinedRegressor, DNNRegressor, LinearClassifier, LinearRegressor)
from pygrad.estimator.estimator import Estimator  # noqa: F401
from pygrad.estimator.model_fn import EstimatorSpec, ModeKeys  # noqa: F401
from pygrad.estimator.run_config import RunConfig  # noqa: F401
from pygrad.estimator.training import (BestExporter, EvalSpec, Exporter, FinalExporter, LatestExporter,  # noqa: F401
                                       TrainSpec, train_and_evaluate)
from pygrad.estimator.warm_starting import VocabInfo, WarmStartSettings  # noqa: F401
from pygrad.train.hooks import (CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook,  # noqa: F401
                                NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer, SessionRunArgs,
                                SessionRunContext, SessionRunHook, SessionRunValues, StepCounterHook,
                                StopAtStepHook, SummarySaverHook)

export = types.ModuleType("pygrad.estimator.export", "tf.estimator.export: serving inputs and export outputs.")
for _name in ("ServingInputReceiver", "TensorServingInputReceiver", "build_parsing_serving_input_receiver_fn",
              "build_raw_serving_input_receiver_fn", "PredictOutput", "ClassificationOutput", "RegressionOutput",
              "ExportOutput"):
    setattr(export, _name, getattr(_export_lib, _name))
