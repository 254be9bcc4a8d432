"""tf.metrics: TF1's streaming metrics. Each returns (value, update_op): the update op adds a batch
to the metric's local variables and gives the metric after it; value reads the variables."""
from pygrad.metrics.at_k import (average_precision_at_k, precision_at_k, precision_at_top_k,  # noqa: F401
                                 recall_at_k, recall_at_top_k, sparse_average_precision_at_k,
                                 sparse_precision_at_k)
from pygrad.metrics.classification import (auc, false_negatives, false_negatives_at_thresholds,  # noqa: F401
                                           false_positives, false_positives_at_thresholds, precision,
                                           precision_at_thresholds, recall, recall_at_thresholds,
                                           sensitivity_at_specificity, specificity_at_sensitivity, true_negatives,
                                           true_negatives_at_thresholds, true_positives,
                                           true_positives_at_thresholds)
from pygrad.metrics.means import (accuracy, mean, mean_absolute_error, mean_cosine_distance,  # noqa: F401
                                  mean_iou, mean_per_class_accuracy, mean_relative_error, mean_squared_error,
                                  mean_tensor, percentage_below, root_mean_squared_error)
