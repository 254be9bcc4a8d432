"""tf.estimator.inputs: input_fns over NumPy arrays and pandas DataFrames. Each batch holds
batch_size rows (the last of an epoch fewer), num_epochs passes (None: forever), the rows in
order or shuffled; the input ends with OutOfRangeError, which ends an Estimator's train or
evaluate. (TF feeds them through a queue; pygrad through a tf.data pipeline, in the same order
when shuffle is False.)"""
import numpy as np

from pygrad.data.dataset_ops import Dataset


def _check(batch_size, num_epochs, shuffle):
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, got {shuffle} instead.")
    if batch_size is None or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    if num_epochs is not None and num_epochs <= 0:
        raise ValueError(f"num_epochs must be None or a positive integer, got {num_epochs}")


def _input_fn(features, target, batch_size, num_epochs, shuffle, queue_capacity, seed=None):
    rows = {len(v) for v in features.values()} | ({len(v) for v in target.values()} if isinstance(target, dict)
                                                  else {len(target)} if target is not None else set())
    if len(rows) > 1:
        raise ValueError(f"Length of tensors in x and y is mismatched. All elements in x and y must have the same "
                         f"length. Lengths: {sorted(rows)}")

    def input_fn():
        data = (features, target) if target is not None else features
        ds = Dataset.from_tensor_slices(data)
        if shuffle:
            ds = ds.shuffle(queue_capacity, seed=seed)
        ds = ds.repeat(num_epochs).batch(batch_size)
        return ds.make_one_shot_iterator().get_next()
    return input_fn


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1):
    """An input_fn of x (a dict of arrays, or an array) and y (an array or a dict of arrays)."""
    _check(batch_size, num_epochs, shuffle)
    if not isinstance(x, dict):
        x_dict, single = {"__direct_np_input_key__": np.asarray(x)}, True
    else:
        x_dict, single = {k: np.asarray(v) for k, v in x.items()}, False
    if y is not None and isinstance(y, dict):
        overlap = set(x_dict) & set(y)
        if overlap:
            raise ValueError(f"{sorted(overlap)} duplicate keys are found in both x and y: {sorted(x_dict)}, "
                             f"{sorted(y)}")
        y = {k: np.asarray(v) for k, v in y.items()}
    elif y is not None:
        y = np.asarray(y)
    inner = _input_fn(x_dict, y, batch_size, num_epochs, shuffle, queue_capacity)

    def input_fn():
        out = inner()
        features, target = out if y is not None else (out, None)
        if single:
            features = features["__direct_np_input_key__"]
        return (features, target) if y is not None else features
    return input_fn


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1,
                    target_column="target"):
    """An input_fn of a DataFrame's columns (and y, a Series or DataFrame)."""
    _check(batch_size, num_epochs, shuffle)
    features = {str(c): x[c].values for c in x.columns}
    target = None
    if y is not None:
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\nIndex for y: {y.index}\n")
        if target_column in features:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame already has a column "
                             f"with that name: {list(features)}")
        target = {str(c): y[c].values for c in y.columns} if hasattr(y, "columns") else np.asarray(y.values)
    return _input_fn(features, target, batch_size, num_epochs, shuffle, queue_capacity)
