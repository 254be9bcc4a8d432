"""tf.estimator against TensorFlow 2.15's (the last with estimators; recorded by
tests/references/record_estimators.py): from the same initial weights, a custom-model_fn convnet
on MNIST gives TF's loss at every step, TF's variable names and shapes, TF's evaluation and
predictions. And the Estimator's own behaviour: resuming from model_dir, max_steps, TF's errors
for a malformed EstimatorSpec, train_and_evaluate's evaluations, events and exporters (BestExporter,
an Exporter of one's own), SavedModels TensorFlow serves with the same predictions (serving
receivers, the classify and regress outputs), VocabInfo."""
import os

import numpy as np
import pytest

import pygrad as tf
from estimator_models import convnet_model_fn, loss_recorder, mnist_subset

REFERENCES = {np.float32: "estimator_mnist.npz", np.float64: "estimator_mnist64.npz"}
# Per-step loss tolerances. In float64 the whole run agrees to the loss's last float32 bit (TF's
# tf.losses reduce in float32): the training itself does not drift. In float32 the first steps
# agree to rounding, whose differences (1e-7) Adam then doubles every few steps (1e-3 by step 60).
TOLERANCES = {np.float32: [(20, 2e-6), (30, 3e-5), (60, 1e-2)], np.float64: [(60, 3e-7)]}


def _initial_checkpoint(ref, path):
    """A checkpoint of TF's initial values of the trainable variables."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.Graph().as_default():
        variables = [tf.Variable(ref[f"init/{n}"], name=n) for n in ref["names"]
                     if "Adam" not in n and "power" not in n and n != "global_step"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            return tf.train.Saver(variables).save(s, path)


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def trained(request, mnist_dir, tmp_path_factory):
    dtype = request.param
    ref = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "references", REFERENCES[dtype]))
    x, y, ex, ey = (a.astype(dtype) if a.dtype.kind == "f" else a for a in mnist_subset(mnist_dir))
    tmp = tmp_path_factory.mktemp("estimator")
    warm = tf.estimator.WarmStartSettings(_initial_checkpoint(ref, str(tmp / "init" / "model")))
    config = tf.estimator.RunConfig(save_checkpoints_steps=len(ref["losses"]), log_step_count_steps=None)
    est = tf.estimator.Estimator(convnet_model_fn(tf), model_dir=str(tmp / "model"), config=config,
                                 params={"learning_rate": 1e-3}, warm_start_from=warm)
    rec = loss_recorder(tf)()
    est.train(tf.estimator.inputs.numpy_input_fn({"image": x}, y, batch_size=50, num_epochs=None, shuffle=False),
              steps=len(ref["losses"]), hooks=[rec])
    return ref, est, rec.losses, (ex, ey), TOLERANCES[dtype]


def test_convnet_trains_to_tensorflows_losses_with_its_variables(trained):
    ref, est, losses, _, tolerances = trained
    assert len(losses) == len(ref["losses"])
    for steps, rtol in tolerances:
        np.testing.assert_allclose(losses[:steps], ref["losses"][:steps], rtol=rtol, err_msg=f"first {steps} steps")
    names = est.get_variable_names()
    assert names == list(ref["names"])
    shapes = {n: str(list(np.shape(est.get_variable_value(n)))) for n in names}
    assert [shapes[n] for n in names] == list(ref["shapes"])


def test_convnet_evaluates_and_predicts_as_tensorflow(trained):
    ref, est, _, (ex, ey), tolerances = trained
    rtol = tolerances[-1][1] / 10
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn({"image": ex}, ey, batch_size=100, shuffle=False))
    assert metrics["global_step"] == ref["eval_global_step"]
    np.testing.assert_allclose(metrics["accuracy"], ref["eval_accuracy"], atol=1e-6 + rtol)
    np.testing.assert_allclose(metrics["loss"], ref["eval_loss"], rtol=rtol)
    preds = list(est.predict(tf.estimator.inputs.numpy_input_fn({"image": ex[:20]}, batch_size=10, shuffle=False)))
    np.testing.assert_array_equal([p["classes"] for p in preds], ref["classes"])
    np.testing.assert_allclose(np.stack([p["probabilities"] for p in preds]), ref["probabilities"], atol=rtol)
    assert tf.summary.event_files(est.eval_dir())


def _linear_model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features["x"], 2, name="logits")
    predictions = {"classes": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "scores": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.GradientDescentOptimizer(params.get("lr", 0.5)).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={
        "accuracy": tf.metrics.accuracy(labels, predictions["classes"])})


def _data(n=200):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 4).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int32)


def _train_fn(epochs=None):
    x, y = _data()
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=20, num_epochs=epochs, shuffle=False)


def test_training_resumes_from_model_dir_and_stops_at_max_steps(tmp_path):
    config = tf.estimator.RunConfig(save_checkpoints_steps=5, log_step_count_steps=None)
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path), config=config, params={"lr": 0.5})
    est.train(_train_fn(), steps=7)
    assert est.get_variable_value("global_step") == 7
    again = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path), config=config, params={"lr": 0.5})
    again.train(_train_fn(), steps=3)
    assert again.get_variable_value("global_step") == 10
    again.train(_train_fn(), max_steps=10)  # already there: no step
    assert again.get_variable_value("global_step") == 10
    again.train(_train_fn(epochs=1))  # ends with the input: 200 rows in batches of 20
    assert again.get_variable_value("global_step") == 20
    assert os.path.basename(tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path) == "model.ckpt-20"


@pytest.mark.parametrize("spec, error, message", [
    (lambda m, loss, op: tf.estimator.EstimatorSpec(m, train_op=op), ValueError, "Missing loss."),
    (lambda m, loss, op: tf.estimator.EstimatorSpec(m, loss=loss), ValueError, "Missing train_op."),
    (lambda m, loss, op: tf.estimator.EstimatorSpec(m, loss=tf.ones([2]), train_op=op), ValueError,
     "Loss must be scalar"),
    (lambda m, loss, op: tf.estimator.EstimatorSpec(m, loss=loss, train_op=op, eval_metric_ops={"a": loss}),
     TypeError, r"Values of eval_metric_ops must be \(metric_value, update_op\) tuples"),
    (lambda m, loss, op: tf.estimator.EstimatorSpec(m, loss=loss, train_op=op, training_hooks=[1]), TypeError,
     "All hooks must be SessionRunHook instances"),
    (lambda m, loss, op: {"loss": loss}, ValueError, "model_fn should return an EstimatorSpec."),
])
def test_a_malformed_spec_gets_tensorflows_error(tmp_path, spec, error, message):
    def model_fn(features, labels, mode):
        loss = tf.reduce_sum(tf.layers.dense(features["x"], 1))
        return spec(mode, loss, tf.train.GradientDescentOptimizer(0.1).minimize(loss))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(error, match=message):
        est.train(_train_fn(), steps=1)


def test_constructor_and_input_errors_are_tensorflows(tmp_path):
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda labels, mode: None)
    with pytest.raises(ValueError, match="does not include params argument"):
        tf.estimator.Estimator(lambda features, labels: None, params={"a": 1})
    with pytest.raises(ValueError, match="`model_dir` are set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path / "a"),
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "b")))
    with pytest.raises(ValueError, match="shuffle must be provided explicitly as a bool"):
        tf.estimator.inputs.numpy_input_fn({"x": np.zeros(3)})
    est = tf.estimator.Estimator(lambda features, mode: None, model_dir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match="model_fn does not take labels, but input_fn returns labels."):
        est.train(_train_fn(), steps=1)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        est.train(_train_fn(), steps=1, max_steps=2)


def test_train_and_evaluate_evaluates_each_checkpoint_and_exports(tmp_path):
    config = tf.estimator.RunConfig(save_checkpoints_steps=10, log_step_count_steps=None)
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path), config=config, params={"lr": 0.5})
    x, y = _data()
    serving = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 4])})
    eval_spec = tf.estimator.EvalSpec(
        tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=50, shuffle=False), steps=None, throttle_secs=0,
        exporters=[tf.estimator.LatestExporter("latest", serving, exports_to_keep=2),
                   tf.estimator.FinalExporter("final", serving)])
    metrics, exports = tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(_train_fn(), max_steps=30),
                                                       eval_spec)
    assert metrics["global_step"] == 30 and metrics["accuracy"] > 0.9
    steps = sorted(int(e.step) for e in tf.train.summary_iterator(tf.summary.event_files(est.eval_dir())[0])
                   if e.summary.value and e.summary.value[0].tag != "checkpoint_path")
    assert steps == [10, 20, 30]
    assert len(os.listdir(tmp_path / "export" / "latest")) == 2 and len(os.listdir(tmp_path / "export" / "final")) == 1
    assert len([e for e in exports if e]) == 4


def test_an_exported_saved_model_serves_in_tensorflow(tf_peer, tmp_path):
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path / "model"), params={"lr": 0.5},
                                 config=tf.estimator.RunConfig(log_step_count_steps=None))
    est.train(_train_fn(), steps=20)
    x, _ = _data(8)
    ours = list(est.predict(tf.estimator.inputs.numpy_input_fn({"x": x}, shuffle=False)))
    path = est.export_saved_model(str(tmp_path / "export"), tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 4])})).decode()
    with tf_peer.Graph().as_default(), tf_peer.Session() as s:
        meta = tf_peer.saved_model.loader.load(s, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        out = s.run(signature.outputs["probabilities"].name, {signature.inputs["x"].name: x})
    np.testing.assert_allclose(out, np.stack([p["probabilities"] for p in ours]), rtol=1e-6)
    assert set(meta.signature_def) == {"serving_default", "scores"}


def _served_model_fn(features, labels, mode, params):
    """_linear_model_fn on a dict of features or on the tensor a TensorServingInputReceiver gives,
    exporting a classify and a regress signature beside the prediction one when asked."""
    x = features["x"] if isinstance(features, dict) else features
    spec = _linear_model_fn({"x": x}, labels, mode, params)
    if mode != tf.estimator.ModeKeys.PREDICT or not params.get("all_outputs"):
        return spec
    probs = spec.predictions["probabilities"]
    export = tf.estimator.export
    outputs = {"serving_default": export.PredictOutput(spec.predictions), "classify": export.ClassificationOutput(
        scores=probs), "regress": export.RegressionOutput(probs[:, 1])}
    assert all(isinstance(o, export.ExportOutput) for o in outputs.values())
    return tf.estimator.EstimatorSpec(mode, predictions=spec.predictions, export_outputs=outputs)


def test_serving_receivers_and_export_outputs_serve_in_tensorflow(tf_peer, tmp_path):
    """A receiver of one string tensor (ServingInputReceiver) and a TensorServingInputReceiver: the
    SavedModels serve in TensorFlow with the estimator's own predictions; the ClassificationOutput
    and RegressionOutput signatures have the method names, inputs and outputs of TensorFlow's
    export_output classes and serve the same numbers. build_parsing_serving_input_receiver_fn
    parses TF's serialized tf.Examples as TF's parse_example; its SavedModel is refused with a clear
    error (pygrad's example parsing runs in Python, which a GraphDef cannot hold)."""
    from tensorflow.python.saved_model.model_utils import export_output as tf_export_output
    est = tf.estimator.Estimator(_served_model_fn, model_dir=str(tmp_path / "model"), params={"lr": 0.5},
                                 config=tf.estimator.RunConfig(log_step_count_steps=None))
    est.train(_train_fn(), steps=20)
    x, _ = _data(6)
    want = np.stack([p["probabilities"] for p in est.predict(tf.estimator.inputs.numpy_input_fn({"x": x},
                                                                                                shuffle=False))])

    def string_receiver():
        s = tf.placeholder(tf.string, [None, 4], name="text")
        return tf.estimator.export.ServingInputReceiver({"x": tf.string_to_number(s)}, {"inputs": s})

    every_output = tf.estimator.Estimator(_served_model_fn, model_dir=str(tmp_path / "model"),
                                          params={"lr": 0.5, "all_outputs": True})
    path = every_output.export_saved_model(str(tmp_path / "strings"), string_receiver).decode()
    with tf_peer.Graph().as_default(), tf_peer.Session() as s:
        sigs = tf_peer.saved_model.loader.load(s, ["serve"], path).signature_def
        out = s.run([sigs["serving_default"].outputs["probabilities"].name, sigs["classify"].outputs["scores"].name,
                     sigs["regress"].outputs["outputs"].name], {sigs["classify"].inputs["inputs"].name: x.astype(str)})
        text = tf_peer.placeholder(tf_peer.string, [None, 4])
        scores = tf_peer.placeholder(tf_peer.float32, [None, 2])
        theirs = {"classify": tf_export_output.ClassificationOutput(scores=scores).as_signature_def({"inputs": text}),
                  "regress": tf_export_output.RegressionOutput(scores[:, 1]).as_signature_def({"inputs": text})}
    for key, sig in theirs.items():
        assert sigs[key].method_name == sig.method_name
        assert sorted(sigs[key].inputs) == sorted(sig.inputs) and sorted(sigs[key].outputs) == sorted(sig.outputs)
    for got in (out[0], out[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(out[2], want[:, 1], rtol=1e-5)

    examples = [tf_peer.train.Example(features=tf_peer.train.Features(feature={"x": tf_peer.train.Feature(
        float_list=tf_peer.train.FloatList(value=row))})).SerializeToString() for row in x]
    spec = {"x": tf.FixedLenFeature([4], tf.float32)}
    parsing = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)
    with tf.Graph().as_default(), tf.Session() as sess:
        receiver = parsing()
        (name, placeholder), = receiver.receiver_tensors.items()
        assert (name, placeholder.name, placeholder.shape.as_list()) == ("examples", "input_example_tensor:0", [None])
        parsed = sess.run(receiver.features["x"], {placeholder: examples})
    with tf_peer.Graph().as_default(), tf_peer.Session() as s:
        np.testing.assert_array_equal(parsed, s.run(tf_peer.parse_example(examples, {
            "x": tf_peer.FixedLenFeature([4], tf_peer.float32)})["x"]))
    with pytest.raises(ValueError, match="ParseExample.* is not exported as TF's ParseExampleV2"):
        est.export_saved_model(str(tmp_path / "parsing"), parsing)

    def tensor_receiver():
        t = tf.placeholder(tf.float32, [None, 4], name="x")
        return tf.estimator.export.TensorServingInputReceiver(t, {"x": t})

    path = est.export_saved_model(str(tmp_path / "tensor"), tensor_receiver).decode()
    with tf_peer.Graph().as_default(), tf_peer.Session() as s:
        sig = tf_peer.saved_model.loader.load(s, ["serve"], path).signature_def["serving_default"]
        np.testing.assert_allclose(s.run(sig.outputs["probabilities"].name, {sig.inputs["x"].name: x}), want,
                                   rtol=1e-6)

    receiver = tf.estimator.export.ServingInputReceiver
    t = tf.placeholder(tf.string, [None])
    assert receiver(t, t).features == {"feature": t} and receiver(t, t).receiver_tensors == {"input": t}
    for args, message in (((None, t), "features must be defined."), ((t, {}), "receiver_tensors must be defined."),
                          (({1: t}, t), "feature keys must be strings: 1."),
                          (({"a": 1.0}, t), "feature a must be a Tensor or SparseTensor."),
                          ((t, {"r": 2}), "receiver_tensor r must be a Tensor.")):
        with pytest.raises(ValueError, match=message):
            receiver(*args)
    with pytest.raises(ValueError, match="At least one of scores and classes must be set."):
        tf.estimator.export.ClassificationOutput()
    with pytest.raises(ValueError, match="Regression output value must be a float32 Tensor"):
        tf.estimator.export.RegressionOutput(tf.constant([1]))


def test_exporters_in_train_and_evaluate(tmp_path):
    """An Exporter subclass gets each evaluation (model_dir/export/<name>, the checkpoint, the
    result, the final one marked); BestExporter exports when compare_fn(best_eval_result=,
    current_eval_result=) says the evaluation is better (here: a larger loss, so only the first),
    and refuses TF's malformed compare_fns."""
    seen = []

    class Recorder(tf.estimator.Exporter):
        name = "recorder"

        def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
            seen.append((export_path, os.path.basename(checkpoint_path), dict(eval_result), is_the_final_export))
            return export_path

    def larger_loss(best_eval_result, current_eval_result):
        return current_eval_result["loss"] > best_eval_result["loss"]

    config = tf.estimator.RunConfig(save_checkpoints_steps=10, log_step_count_steps=None)
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path), config=config, params={"lr": 0.5})
    x, y = _data()
    serving = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32, [None, 4])})
    best = tf.estimator.BestExporter("best", serving, compare_fn=larger_loss, event_file_pattern=None)
    eval_spec = tf.estimator.EvalSpec(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=50, shuffle=False),
                                      steps=None, throttle_secs=0, exporters=[Recorder(), best])
    _, exports = tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(_train_fn(), max_steps=30), eval_spec)
    assert [(p, c, r["global_step"], final) for p, c, r, final in seen] == [
        (os.path.join(str(tmp_path), "export", "recorder"), f"model.ckpt-{s}", s, s == 30) for s in (10, 20, 30)]
    losses = [r["loss"] for _, _, r, _ in seen]
    expected = [i == 0 or losses[i] > max(losses[:i]) for i in range(3)]  # the rule, replayed
    assert len(os.listdir(tmp_path / "export" / "best")) == sum(expected) == 1  # the loss went down
    assert [e is not None for e in exports[1::2]] == expected
    for bad, message in ((None, "`compare_fn` must not be None."),
                         (lambda best_eval_result: True, "must include current_eval_result argument."),
                         (lambda best_eval_result, current_eval_result, other: True,
                          r"not expected args: \['other'\]")):
        with pytest.raises(ValueError, match=message):
            tf.estimator.BestExporter(serving_input_receiver_fn=serving, compare_fn=bad)


def test_vocab_info_is_tensorflows_and_warm_starting_with_it_is_refused(tf_peer, tmp_path):
    """VocabInfo: TF's fields, defaults and axis check; a warm start asking for vocabulary
    remapping, which pygrad does not do, fails clearly instead of starting from other values."""
    args = ("new.txt", 5, 1, "old.txt")
    ours, theirs = tf.estimator.VocabInfo(*args), tf_peer.train.VocabInfo(*args)
    assert ours._fields == theirs._fields and tuple(ours) == tuple(theirs)
    assert tuple(tf.estimator.VocabInfo(*args, 3, None, 1)) == tuple(tf_peer.train.VocabInfo(*args, 3, None, 1))
    for lib in (tf.estimator, tf_peer.train):
        with pytest.raises(ValueError, match="The only supported values for the axis argument are 0 and 1"):
            lib.VocabInfo(*args, axis=2)
    est = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path / "a"), params={"lr": 0.5},
                                 config=tf.estimator.RunConfig(log_step_count_steps=None))
    est.train(_train_fn(), steps=1)
    warm = tf.estimator.WarmStartSettings(str(tmp_path / "a"), var_name_to_vocab_info={"logits/kernel": ours})
    again = tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path / "b"), params={"lr": 0.5},
                                   warm_start_from=warm)
    with pytest.raises(NotImplementedError, match="var_name_to_vocab_info"):
        again.train(_train_fn(), steps=1)


def test_pandas_input_fn_batches_the_frame_as_tensorflow():
    """pandas_input_fn as tensorflow_estimator's pandas_io: the DataFrame's columns as features, y a
    Series (one tensor) or a DataFrame (a dict), the rows in order without shuffling, the last batch
    partial, then the end of input; a y on another index, or a target named as a column, is refused."""
    pd = pytest.importorskip("pandas")
    index = np.arange(100, 105)
    x = pd.DataFrame({"a": np.arange(5, dtype=np.float32), "b": np.arange(5, 10)}, index=index)
    for y in (pd.Series(np.arange(-5, 0), index=index), pd.DataFrame({"t": np.arange(-5, 0)}, index=index)):
        with tf.Graph().as_default():
            features, target = tf.estimator.inputs.pandas_input_fn(x, y, batch_size=2, num_epochs=1, shuffle=False)()
            got = []
            with tf.Session() as sess:
                with pytest.raises(tf.errors.OutOfRangeError):
                    while True:
                        got.append(sess.run((features, target)))
        assert [sorted(f) for f, _ in got] == [["a", "b"]] * 3
        np.testing.assert_array_equal(np.concatenate([f["a"] for f, _ in got]), x["a"].values)
        np.testing.assert_array_equal(np.concatenate([f["b"] for f, _ in got]), x["b"].values)
        targets = [t["t"] if isinstance(t, dict) else t for _, t in got]
        assert [len(t) for t in targets] == [2, 2, 1]
        np.testing.assert_array_equal(np.concatenate(targets), np.arange(-5, 0))
    with pytest.raises(ValueError, match="Index for x and y are mismatched"):
        tf.estimator.inputs.pandas_input_fn(x, pd.Series(np.arange(5)), shuffle=False)
    with pytest.raises(ValueError, match="Cannot use name a for target column"):
        tf.estimator.inputs.pandas_input_fn(x, pd.Series(np.arange(5), index=index), shuffle=False, target_column="a")
    with pytest.raises(ValueError, match="shuffle must be provided explicitly"):
        tf.estimator.inputs.pandas_input_fn(x)
