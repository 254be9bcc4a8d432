"""Serving inputs and SavedModel export of an Estimator (tf.estimator.export): a
ServingInputReceiver names the serving graph's inputs (receiver_tensors) and the features the
model_fn gets; export_saved_model builds the PREDICT graph on them, restores the checkpoint and
writes a SavedModel (pygrad/saved_model) with a signature per export output, in a new
<export_dir_base>/<timestamp> directory, as TF's."""
import collections
import os
import shutil
import time

from pygrad import dtypes
from pygrad.estimator.model_fn import ClassificationOutput, ExportOutput, PredictOutput, RegressionOutput  # noqa: F401
from pygrad.graph import Graph, Tensor, unwrap
from pygrad.ops.array_ops import placeholder
from pygrad.ops.lookup_ops import tables_initializer
from pygrad.ops.parsing_ops import parse_example
from pygrad.ops.sparse_tensor import SparseTensor
from pygrad.ops.state_ops import group, local_variables_initializer
from pygrad.saved_model import builder as builder_lib, tag_constants
from pygrad.session import Session
from pygrad.train.saver import Saver

SINGLE_FEATURE_KEY, SINGLE_RECEIVER_KEY = "feature", "input"


def _as_dict(x, key):
    return dict(x) if isinstance(x, dict) else {key: x}


class ServingInputReceiver(collections.namedtuple("ServingInputReceiver", [
        "features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """The features a serving model_fn gets and the tensors a request feeds."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        features = _as_dict(features, SINGLE_FEATURE_KEY)
        for name, t in features.items():
            if not isinstance(name, str):
                raise ValueError(f"feature keys must be strings: {name}.")
            if not isinstance(unwrap(t), (Tensor, SparseTensor)):
                raise ValueError(f"feature {name} must be a Tensor or SparseTensor.")
        receiver_tensors = _as_dict(receiver_tensors, SINGLE_RECEIVER_KEY)
        if not receiver_tensors:
            raise ValueError("receiver_tensors must be defined.")
        for name, t in receiver_tensors.items():
            if not isinstance(name, str):
                raise ValueError(f"receiver_tensors keys must be strings: {name}.")
            if not isinstance(unwrap(t), Tensor):
                raise ValueError(f"receiver_tensor {name} must be a Tensor.")
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(ServingInputReceiver):
    """A receiver whose features are one tensor (the model_fn gets it as is)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        self = super().__new__(cls, {SINGLE_FEATURE_KEY: features}, receiver_tensors, receiver_tensors_alternatives)
        self._tensor = features
        return self


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver of serialized tf.Examples (string vector "examples"), parsed by feature_spec."""
    def serving_input_receiver_fn():
        examples = placeholder(dtypes.string, shape=[default_batch_size], name="input_example_tensor")
        return ServingInputReceiver(parse_example(examples, feature_spec), {"examples": examples})
    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver feeding the features themselves (placeholders shaped like the given tensors)."""
    def serving_input_receiver_fn():
        receivers = {}
        for name, t in features.items():
            shape = [default_batch_size] + t.shape.as_list()[1:] if t.shape.ndims else None
            receivers[name] = placeholder(t.dtype, shape=shape, name=name)
        return ServingInputReceiver(dict(receivers), receivers)
    return serving_input_receiver_fn


def _export_dir(export_dir_base):
    """A new timestamped directory name under export_dir_base (a later second if it exists)."""
    while True:
        path = os.path.join(os.fspath(export_dir_base), str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)


def export_saved_model(estimator, export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                       checkpoint_path, mode):
    from pygrad.estimator.model_fn import ModeKeys
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    if mode != ModeKeys.PREDICT:
        raise NotImplementedError("export_saved_model: pygrad exports the PREDICT graph only")
    export_dir = _export_dir(export_dir_base)
    temp_dir = export_dir + ".tmp"
    with Graph().as_default() as graph:
        from pygrad.train import training_util
        training_util.get_or_create_global_step(graph)
        receiver = serving_input_receiver_fn()
        features = receiver.features
        if isinstance(receiver, TensorServingInputReceiver):
            features = receiver._tensor
        spec = estimator._call_model_fn(features, None, ModeKeys.PREDICT, estimator.config)
        signatures = {key: out.as_signature_def(receiver.receiver_tensors) for key, out in spec.export_outputs.items()}
        with Session(config=estimator.config.session_config) as sess:
            saver = spec.scaffold.saver or Saver(sharded=True)
            saver.restore(sess, checkpoint_path)
            builder = builder_lib.SavedModelBuilder(temp_dir)
            builder.add_meta_graph_and_variables(sess, [tag_constants.SERVING], signature_def_map=signatures,
                                                 main_op=group(local_variables_initializer(), tables_initializer()),
                                                 saver=saver)
            builder.save(as_text)
    if assets_extra:
        extra = os.path.join(temp_dir, "assets.extra")
        for dest, source in assets_extra.items():
            target = os.path.join(extra, dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
    os.rename(temp_dir, export_dir)
    return export_dir.encode()
