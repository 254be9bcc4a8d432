"""TF1's canned estimators (tensorflow_estimator's canned/, v1): BaselineClassifier/Regressor (a
bias), LinearClassifier/Regressor (a
linear_model, Ftrl), DNNClassifier/Regressor (an input_layer and dense layers, Adagrad) and
DNNLinearCombinedClassifier/Regressor (their logits summed, each part with its own optimizer),
with TF's variable names, heads and default optimizers and learning rates."""
import math

from pygrad import feature_column, losses
from pygrad.estimator.canned.head import RegressionHead, classification_head
from pygrad.estimator.estimator import Estimator
from pygrad.graph import GraphKeys, get_default_graph
from pygrad.layers.core import Dense
from pygrad.ops import math_ops
from pygrad.ops.init_ops import glorot_uniform_initializer
from pygrad.ops.partitioned_variables import min_max_variable_partitioner
from pygrad.ops.random_ops import dropout as _dropout
from pygrad.ops.reduction_ops import reduce_mean
from pygrad.ops.state_ops import assign_add, group
from pygrad.ops.summary_ops import histogram, scalar
from pygrad.ops.variable_scope import variable_scope
from pygrad.train import optimizers as _opt
from pygrad.train.training_util import get_global_step

_OPTIMIZERS = {"Adagrad": _opt.AdagradOptimizer, "Adam": _opt.AdamOptimizer, "Ftrl": _opt.FtrlOptimizer,
               "RMSProp": _opt.RMSPropOptimizer, "SGD": _opt.GradientDescentOptimizer}


def get_optimizer_instance(opt, learning_rate=None):
    """An optimizer from a name (with learning_rate), a callable, or an instance (TF's)."""
    if isinstance(opt, str):
        if opt in _OPTIMIZERS:
            if not learning_rate:
                raise ValueError("learning_rate must be specified when opt is string.")
            return _OPTIMIZERS[opt](learning_rate=learning_rate)
        raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(_OPTIMIZERS))}")
    if callable(opt):
        opt = opt()
    if not isinstance(opt, _opt.Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


def _check_features(features):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def _zero_fraction(x):
    return reduce_mean(math_ops.cast(math_ops.equal(x, 0.0), "float32"))


def _linear_logits(features, columns, units, sparse_combiner):
    """linear_model's logits in scope linear/ (TF's linear_logit_fn_builder), with its summaries."""
    cols_to_vars = {}
    logits = feature_column.linear_model(features, columns, units=units, sparse_combiner=sparse_combiner,
                                         cols_to_vars=cols_to_vars)
    bias = cols_to_vars.pop("bias")
    bias = bias[0] if isinstance(bias, (list, tuple)) else bias
    if units > 1:
        histogram("bias", bias)
    else:
        scalar("bias", bias[0])
    weights = [v for vs in cols_to_vars.values() for v in (vs if isinstance(vs, (list, tuple)) else [vs])]
    sizes = [float(v.shape.num_elements()) for v in weights]
    if weights:
        zeros = math_ops.add_n([_zero_fraction(v) * n for v, n in zip(weights, sizes)])
        scalar("fraction_of_zero_weights", zeros / sum(sizes))
    return logits


def _dnn_logits(features, columns, hidden_units, units, activation_fn, dropout, mode, input_layer_partitioner):
    """TF's _DNNModel: input_from_feature_columns/input_layer, hiddenlayer_<i>, logits (glorot
    uniform kernels, zero biases), dropout in training."""
    with variable_scope("input_from_feature_columns", partitioner=input_layer_partitioner):
        net = feature_column.input_layer(features, columns)
    for i, n in enumerate(hidden_units):
        net = Dense(n, activation=activation_fn, kernel_initializer=glorot_uniform_initializer(),
                    name=f"hiddenlayer_{i}")(net)
        if dropout is not None and mode == "train":
            net = _dropout(net, rate=dropout)
        scalar(f"dnn/hiddenlayer_{i}/fraction_of_zero_values", _zero_fraction(net))
        histogram(f"dnn/hiddenlayer_{i}/activation", net)
    logits = Dense(units, activation=None, kernel_initializer=glorot_uniform_initializer(), name="logits")(net)
    scalar("dnn/logits/fraction_of_zero_values", _zero_fraction(logits))
    histogram("dnn/logits/activation", logits)
    return logits


def _partitioner(config, min_slice_size=256 << 10):
    """TF's default partitioner of a canned model's variables: as many parts as the cluster has ps
    tasks (one part, on one machine)."""
    return min_max_variable_partitioner(max_partitions=config.num_ps_replicas if config else 0,
                                        min_slice_size=min_slice_size)


def _combined_model_fn(features, labels, mode, head, config, linear_columns=None, linear_optimizer=None,
                       dnn_columns=None, dnn_optimizer=None, hidden_units=None, activation_fn=None, dropout=None,
                       sparse_combiner="sum", linear_lr=None, dnn_lr=None, linear_partitioner=None,
                       input_layer_partitioner=None, alone=False):
    """The logits of the linear part (scope linear/) and of the DNN part (dnn/), summed, each part
    trained by its optimizer. alone: a LinearClassifier's or DNNClassifier's model, whose spec (and
    so its optimizer's slots) TF builds inside the part's variable scope."""
    _check_features(features)
    if not linear_columns and not dnn_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    input_layer_partitioner = input_layer_partitioner or _partitioner(config, 64 << 20)
    parts = []
    graph = get_default_graph()

    def train_op_fn(loss):
        """Each part's optimizer on its own variables; the global step once (TF's)."""
        ops = [opt.minimize(loss, var_list=graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=name))
               for _, opt, name in parts]
        with graph.control_dependencies([group(*ops)]):
            return assign_add(get_global_step(), 1).op

    def spec(logits):
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
                                          logits=logits)

    if dnn_columns:
        if not hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        dnn_opt = get_optimizer_instance(dnn_optimizer, learning_rate=dnn_lr)
        with variable_scope("dnn", partitioner=_partitioner(config)) as scope:
            dnn = _dnn_logits(features, dnn_columns, hidden_units, head.logits_dimension, activation_fn, dropout, mode,
                              input_layer_partitioner)
            parts.append((dnn, dnn_opt, scope.name))
            if alone:
                return spec(dnn)
    if linear_columns:
        lin_opt = get_optimizer_instance(linear_optimizer, learning_rate=linear_lr(len(linear_columns)))
        with variable_scope("linear", partitioner=linear_partitioner or input_layer_partitioner) as scope:
            lin = _linear_logits(features, linear_columns, head.logits_dimension, sparse_combiner)
            parts.append((lin, lin_opt, scope.name))
            if alone:
                return spec(lin)
    return spec(parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0])


def _check_columns(columns, what):
    columns = list(columns or [])
    for c in columns:
        if not hasattr(c, "name"):
            raise ValueError(f"Items of {what} must be a _FeatureColumn. Given: {c}")
    return columns


class _Canned(Estimator):
    def __init__(self, head, model_fn, model_dir, config, warm_start_from):
        self._head = head

        def wrapped(features, labels, mode, config):
            return model_fn(features, labels, mode, head, config)
        super().__init__(wrapped, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


def _linear_fn(columns, optimizer, sparse_combiner, partitioner):
    def model_fn(features, labels, mode, head, config):
        return _combined_model_fn(features, labels, mode, head, config, linear_columns=columns,
                                  linear_optimizer=optimizer, sparse_combiner=sparse_combiner,
                                  linear_lr=lambda n: 0.2, linear_partitioner=partitioner, alone=True)
    return model_fn


def _dnn_fn(hidden_units, columns, optimizer, activation_fn, dropout, input_layer_partitioner):
    def model_fn(features, labels, mode, head, config):
        return _combined_model_fn(features, labels, mode, head, config, dnn_columns=columns, dnn_optimizer=optimizer,
                                  hidden_units=hidden_units, activation_fn=activation_fn, dropout=dropout,
                                  dnn_lr=0.05, input_layer_partitioner=input_layer_partitioner, alone=True)
    return model_fn


class LinearClassifier(_Canned):
    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=losses.Reduction.SUM, sparse_combiner="sum"):
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, _linear_fn(_check_columns(feature_columns, "feature_columns"), optimizer,
                                          sparse_combiner, partitioner), model_dir, config, warm_start_from)


class LinearRegressor(_Canned):
    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl",
                 config=None, partitioner=None, warm_start_from=None, loss_reduction=losses.Reduction.SUM,
                 sparse_combiner="sum"):
        head = RegressionHead(weight_column, label_dimension, loss_reduction)
        super().__init__(head, _linear_fn(_check_columns(feature_columns, "feature_columns"), optimizer,
                                          sparse_combiner, partitioner), model_dir, config, warm_start_from)


class DNNClassifier(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Adagrad", activation_fn=math_ops.relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=losses.Reduction.SUM, batch_norm=False):
        if batch_norm:
            raise NotImplementedError("DNNClassifier(batch_norm=True) is not supported")
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, _dnn_fn(hidden_units, _check_columns(feature_columns, "feature_columns"), optimizer,
                                       activation_fn, dropout, input_layer_partitioner), model_dir, config,
                         warm_start_from)


class DNNRegressor(_Canned):
    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Adagrad", activation_fn=math_ops.relu, dropout=None, input_layer_partitioner=None,
                 config=None, warm_start_from=None, loss_reduction=losses.Reduction.SUM, batch_norm=False):
        if batch_norm:
            raise NotImplementedError("DNNRegressor(batch_norm=True) is not supported")
        head = RegressionHead(weight_column, label_dimension, loss_reduction)
        super().__init__(head, _dnn_fn(hidden_units, _check_columns(feature_columns, "feature_columns"), optimizer,
                                       activation_fn, dropout, input_layer_partitioner), model_dir, config,
                         warm_start_from)


def _baseline_fn(optimizer, weight_column):
    """TF's baseline: a bias per output (baseline/bias), the same for every example; Ftrl 0.3."""
    from pygrad.ops.array_ops import ones, shape
    from pygrad.ops.init_ops import zeros_initializer
    from pygrad.ops.variable_scope import get_variable

    def model_fn(features, labels, mode, head, config):
        _check_features(features)
        key = weight_column if isinstance(weight_column, str) else getattr(weight_column, "key", None)
        batch = [v for k, v in features.items() if k != key][0]
        with variable_scope("baseline"):
            bias = get_variable("bias", shape=[head.logits_dimension], initializer=zeros_initializer())
            logits = bias * ones([shape(batch)[0], head.logits_dimension])
        if head.logits_dimension > 1:
            histogram("bias", bias)
        else:
            scalar("bias", bias[0])
        opt = get_optimizer_instance(optimizer, learning_rate=0.3)
        return head.create_estimator_spec(features=features, mode=mode, logits=logits, labels=labels,
                                          train_op_fn=lambda loss: opt.minimize(loss, global_step=get_global_step()))
    return model_fn


class BaselineClassifier(_Canned):
    def __init__(self, model_dir=None, n_classes=2, weight_column=None, label_vocabulary=None, optimizer="Ftrl",
                 config=None, loss_reduction=losses.Reduction.SUM):
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, _baseline_fn(optimizer, weight_column), model_dir, config, None)


class BaselineRegressor(_Canned):
    def __init__(self, model_dir=None, label_dimension=1, weight_column=None, optimizer="Ftrl", config=None,
                 loss_reduction=losses.Reduction.SUM):
        head = RegressionHead(weight_column, label_dimension, loss_reduction)
        super().__init__(head, _baseline_fn(optimizer, weight_column), model_dir, config, None)


def _linear_learning_rate(n):
    return min(0.005, 1.0 / math.sqrt(n))


class _Combined(_Canned):
    def __init__(self, head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
                 dnn_hidden_units, dnn_activation_fn, dnn_dropout, linear_sparse_combiner, model_dir, config,
                 warm_start_from, input_layer_partitioner):
        linear = _check_columns(linear_feature_columns, "linear_feature_columns")
        dnn = _check_columns(dnn_feature_columns, "dnn_feature_columns")
        if not linear and not dnn:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")

        def model_fn(features, labels, mode, head, config):
            return _combined_model_fn(features, labels, mode, head, config, linear_columns=linear,
                                      linear_optimizer=linear_optimizer, dnn_columns=dnn, dnn_optimizer=dnn_optimizer,
                                      hidden_units=dnn_hidden_units, activation_fn=dnn_activation_fn,
                                      dropout=dnn_dropout, sparse_combiner=linear_sparse_combiner,
                                      linear_lr=_linear_learning_rate, dnn_lr=0.001,
                                      input_layer_partitioner=input_layer_partitioner)
        super().__init__(head, model_fn, model_dir, config, warm_start_from)


class DNNLinearCombinedClassifier(_Combined):
    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=math_ops.relu, dnn_dropout=None,
                 n_classes=2, weight_column=None, label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=losses.Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = classification_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
                         dnn_hidden_units, dnn_activation_fn, dnn_dropout, linear_sparse_combiner, model_dir, config,
                         warm_start_from, input_layer_partitioner)


class DNNLinearCombinedRegressor(_Combined):
    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl", dnn_feature_columns=None,
                 dnn_optimizer="Adagrad", dnn_hidden_units=None, dnn_activation_fn=math_ops.relu, dnn_dropout=None,
                 label_dimension=1, weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=losses.Reduction.SUM, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = RegressionHead(weight_column, label_dimension, loss_reduction)
        super().__init__(head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
                         dnn_hidden_units, dnn_activation_fn, dnn_dropout, linear_sparse_combiner, model_dir, config,
                         warm_start_from, input_layer_partitioner)
