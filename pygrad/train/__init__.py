"""tf.train: optimizers, learning-rate schedules, the global step, moving averages."""
from pygrad.train.moving_averages import ExponentialMovingAverage
from pygrad.train.optimizer import Optimizer
from pygrad.train.optimizers import (AdadeltaOptimizer, AdagradOptimizer, AdamOptimizer, FtrlOptimizer,
                                     GradientDescentOptimizer, MomentumOptimizer, ProximalAdagradOptimizer,
                                     ProximalGradientDescentOptimizer, RMSPropOptimizer)
from pygrad.train.training_util import (cosine_decay, create_global_step, exponential_decay, get_global_step,
                                        get_or_create_global_step, global_step, inverse_time_decay,
                                        natural_exp_decay, piecewise_constant, polynomial_decay)

__all__ = ["AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "ExponentialMovingAverage", "FtrlOptimizer",
           "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "ProximalAdagradOptimizer",
           "ProximalGradientDescentOptimizer", "RMSPropOptimizer", "cosine_decay", "create_global_step",
           "exponential_decay", "get_global_step", "get_or_create_global_step", "global_step", "inverse_time_decay",
           "natural_exp_decay", "piecewise_constant", "polynomial_decay"]

# Checkpoints (TensorFlow's V2 format) and the training loop around them.
from pygrad.train.checkpoint_management import (CheckpointState, checkpoint_exists,  # noqa: E402
                                                generate_checkpoint_state_proto, get_checkpoint_mtimes,
                                                get_checkpoint_state, latest_checkpoint, remove_checkpoint,
                                                update_checkpoint_state)
from pygrad.train.checkpoint_utils import (NewCheckpointReader, init_from_checkpoint, list_variables,  # noqa: E402
                                           load_checkpoint, load_variable)
from pygrad.train.saver import Saver  # noqa: E402

__all__ += ["CheckpointState", "NewCheckpointReader", "Saver", "checkpoint_exists", "generate_checkpoint_state_proto",
            "get_checkpoint_mtimes", "get_checkpoint_state", "init_from_checkpoint",
            "latest_checkpoint", "list_variables", "load_checkpoint", "load_variable", "remove_checkpoint",
            "update_checkpoint_state"]

from pygrad.train.hooks import (CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook,  # noqa: E402
                                NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer, SessionRunArgs,
                                SessionRunContext, SessionRunHook, SessionRunValues, StepCounterHook, StopAtStepHook,
                                SummarySaverHook)
from pygrad.train.monitored_session import (ChiefSessionCreator, MonitoredSession,  # noqa: E402
                                            MonitoredTrainingSession, Scaffold, SessionCreator,
                                            SingularMonitoredSession)

__all__ += ["CheckpointSaverHook", "CheckpointSaverListener", "ChiefSessionCreator", "LoggingTensorHook",
            "MonitoredSession", "MonitoredTrainingSession", "NanLossDuringTrainingError", "NanTensorHook", "Scaffold",
            "SecondOrStepTimer", "SessionCreator", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
            "SessionRunValues", "SingularMonitoredSession", "StepCounterHook", "StopAtStepHook", "SummarySaverHook"]
from pygrad.train.hooks import FinalOpsHook  # noqa: E402

__all__ += ["FinalOpsHook"]

# Meta graphs (.meta files) and GraphDef files.
from pygrad.meta_graph import export_meta_graph, write_graph  # noqa: E402
from pygrad.train.saver import import_meta_graph  # noqa: E402

__all__ += ["export_meta_graph", "import_meta_graph", "write_graph"]

# tf.train.Example and its parts (pygrad/tf_protos.py), built on first use, not by `import pygrad`
from pygrad import proto as _proto  # noqa: E402

_MESSAGES = ("BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList", "Int64List",
             "SequenceExample")
__getattr__ = _proto.lazy_messages(__name__, _MESSAGES)

# TF1's queue-fed input pipelines: queue runners, their Coordinator, input producers and batching.
from pygrad.train import queue_runner  # noqa: E402
from pygrad.train.coordinator import Coordinator  # noqa: E402
from pygrad.train.input import (batch, batch_join, input_producer, limit_epochs, maybe_batch,  # noqa: E402
                                maybe_batch_join, maybe_shuffle_batch, maybe_shuffle_batch_join, range_input_producer,
                                shuffle_batch, shuffle_batch_join, slice_input_producer, string_input_producer)
from pygrad.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners  # noqa: E402

__all__ += ["Coordinator", "QueueRunner", "add_queue_runner", "batch", "batch_join", "input_producer", "limit_epochs",
            "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch", "maybe_shuffle_batch_join", "queue_runner", "range_input_producer", "shuffle_batch", "shuffle_batch_join",
            "slice_input_producer", "start_queue_runners", "string_input_producer"]

# Between-graph replication: the cluster, this process's server, the placement of ps and worker ops.
from pygrad.train.device_setter import replica_device_setter  # noqa: E402
from pygrad.train.server_lib import ClusterSpec, Server  # noqa: E402
from pygrad.train.session_manager import SessionManager  # noqa: E402
from pygrad.train.supervisor import Supervisor  # noqa: E402
from pygrad.train.sync_replicas import SyncReplicasOptimizer  # noqa: E402
from pygrad.train.coordinator import LooperThread  # noqa: E402
from pygrad.train.monitored_session import WorkerSessionCreator  # noqa: E402

__all__ += ["ClusterSpec", "LooperThread", "Server", "SessionManager", "Supervisor", "WorkerSessionCreator",
            "replica_device_setter"]

# Mixed precision: tf.train.experimental (loss scales, MixedPrecisionLossScaleOptimizer, the rewrite switch).
from pygrad.train import experimental  # noqa: E402

__all__ += ["experimental"]
