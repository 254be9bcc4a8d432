"""The optimizers of tf.train, each one fused native update per variable (see ops/training_ops.py).
Update rules, slot names and initial slot values are TensorFlow 1's."""
from __future__ import annotations

import numpy as np

from pygrad.graph import TensorLike, get_default_graph
from pygrad.ops import state_ops, training_ops
from pygrad.ops.array_ops import constant, ones
from pygrad.train.optimizer import Optimizer

Rate = float | np.floating | TensorLike  # a hyperparameter: a number, a tensor (a decayed rate), a variable


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate: Rate, use_locking: bool = False, name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.ApplyGradientDescent(var.value(), self._for(self._lr, var), grad,
                                                 name="ApplyGradientDescent")

    def _apply_sparse_duplicate_indices(self, grad, var):
        # TF: var.scatter_sub(values * lr), repeated rows applied one after the other.
        return training_ops.SparseApplyGradientDescent(var.value(), self._for(self._lr, var), grad.values,
                                                       grad.indices, name="ScatterSub")


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (Nesterov: var -= lr * (grad + momentum * accum)).
    Slot "momentum", starting at zero."""

    def __init__(self, learning_rate: Rate, momentum: Rate, use_locking: bool = False, name: str = "Momentum",
                 use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._momentum, self._use_nesterov = learning_rate, momentum, bool(use_nesterov)

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._mom = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "momentum")
        return training_ops.ApplyMomentum(var.value(), accum.value(),
                                          self._for(self._lr, var), grad, self._for(self._mom, var),
                                          use_nesterov=self._use_nesterov, name="ApplyMomentum")

    def _apply_sparse(self, grad, var):
        return training_ops.SparseApplyMomentum(var.value(), self.get_slot(var, "momentum").value(),
                                                self._for(self._lr, var), grad.values, grad.indices,
                                                self._for(self._mom, var), use_nesterov=self._use_nesterov,
                                                name="SparseApplyMomentum")


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= lr * grad / sqrt(accum). Slot "accumulator", starting at 0.1."""

    def __init__(self, learning_rate: Rate, initial_accumulator_value: float = 0.1, use_locking: bool = False,
                 name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate, self._initial = learning_rate, initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "accumulator", constant(np.full(v.shape.as_list(), self._initial, v.dtype.np)), self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return training_ops.ApplyAdagrad(var.value(), acc.value(), self._for(self._lr, var),
                                         grad, name="ApplyAdagrad")

    def _apply_sparse(self, grad, var):
        return training_ops.SparseApplyAdagrad(var.value(), self.get_slot(var, "accumulator").value(),
                                               self._for(self._lr, var), grad.values, grad.indices,
                                               name="SparseApplyAdagrad")


class RMSPropOptimizer(Optimizer):
    """ms += (grad^2 - ms) * (1 - decay); mom = momentum * mom + lr * grad / sqrt(ms + epsilon);
    var -= mom. Centered subtracts mg^2 (mg the mean gradient) inside the root. Slots "rms"
    (starting at 1.0), "momentum" (0) and, centered, "mg" (0)."""

    def __init__(self, learning_rate: Rate, decay: Rate = 0.9, momentum: Rate = 0.0, epsilon: Rate = 1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._decay, self._momentum, self._epsilon = learning_rate, decay, momentum, epsilon
        self._centered = centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "rms", ones(v.shape, v.dtype), self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._rho = self._hyper(self._decay, "decay")
        self._mom = self._hyper(self._momentum, "momentum")
        self._eps = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        ins = [var.value(), self.get_slot(var, "rms").value(),
               self.get_slot(var, "momentum").value(), self._for(self._lr, var),
               self._for(self._rho, var), self._for(self._mom, var), self._for(self._eps, var), grad]
        if self._centered:
            return training_ops.ApplyCenteredRMSProp(*ins, self.get_slot(var, "mg").value(),
                                                     name="ApplyCenteredRMSProp")
        return training_ops.ApplyRMSProp(*ins, name="ApplyRMSProp")

    def _apply_sparse(self, grad, var):
        ins = [var.value(), self.get_slot(var, "rms").value(), self.get_slot(var, "momentum").value(),
               self._for(self._lr, var), self._for(self._rho, var), self._for(self._mom, var),
               self._for(self._eps, var), grad.values, grad.indices]
        if self._centered:
            return training_ops.SparseApplyCenteredRMSProp(*ins, self.get_slot(var, "mg").value(),
                                                           name="SparseApplyCenteredRMSProp")
        return training_ops.SparseApplyRMSProp(*ins, name="SparseApplyRMSProp")


class AdamOptimizer(Optimizer):
    """m += (grad - m)(1 - beta1); v += (grad^2 - v)(1 - beta2);
    var -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon).
    Slots "m" and "v" (zeros); beta1_power and beta2_power are updated after all variables."""

    def __init__(self, learning_rate: Rate = 0.001, beta1: Rate = 0.9, beta2: Rate = 0.999, epsilon: Rate = 1e-08,
                 use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)  # TF's: the beta powers go where this variable is
        self._beta1_power = self._non_slot("beta1_power", self._beta1, first)
        self._beta2_power = self._non_slot("beta2_power", self._beta2, first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._b1 = self._hyper(self._beta1, "beta1")
        self._b2 = self._hyper(self._beta2, "beta2")
        self._eps = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        return training_ops.ApplyAdam(
            var.value(), self.get_slot(var, "m").value(),
            self.get_slot(var, "v").value(), self._for(self._beta1_power, var),
            self._for(self._beta2_power, var), self._for(self._lr, var), self._for(self._b1, var),
            self._for(self._b2, var), self._for(self._eps, var), grad, name="ApplyAdam")

    def _apply_sparse(self, grad, var):
        # TF1's _apply_sparse_shared: m and v decay everywhere, the rows are scatter-added, and
        # every row of var moves.
        return training_ops.SparseApplyAdam(
            var.value(), self.get_slot(var, "m").value(), self.get_slot(var, "v").value(),
            self._for(self._beta1_power, var), self._for(self._beta2_power, var), self._for(self._lr, var),
            self._for(self._b1, var), self._for(self._b2, var), self._for(self._eps, var), grad.values,
            grad.indices, name="SparseApplyAdam")

    def _finish(self, update_ops, name):
        graph = get_default_graph()
        with graph.control_dependencies(update_ops), graph.colocate_with(self._beta1_power):
            update_b1 = state_ops.assign(self._beta1_power, self._beta1_power * self._b1)
            update_b2 = state_ops.assign(self._beta2_power, self._beta2_power * self._b2)
        return state_ops.group(*update_ops, update_b1, update_b2, name=name)


class AdadeltaOptimizer(Optimizer):
    """accum = rho * accum + (1 - rho) grad^2; update = sqrt(accum_update + eps) / sqrt(accum + eps) * grad;
    var -= lr * update; accum_update = rho * accum_update + (1 - rho) update^2. Slots "accum" and
    "accum_update" (zeros)."""

    def __init__(self, learning_rate: Rate = 0.001, rho: Rate = 0.95, epsilon: Rate = 1e-8, use_locking: bool = False,
                 name: str = "Adadelta") -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._rho_t = self._hyper(self._rho, "rho")
        self._eps = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        return training_ops.ApplyAdadelta(var.value(), self.get_slot(var, "accum").value(),
                                          self.get_slot(var, "accum_update").value(), self._for(self._lr, var),
                                          self._for(self._rho_t, var), self._for(self._eps, var), grad,
                                          name="ApplyAdadelta")


def _check_strengths(**values):
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"{name} {value} must be >= 0.")


class ProximalGradientDescentOptimizer(Optimizer):
    """FOBOS with a fixed rate: prox = var - lr * grad; var = sign(prox) max(|prox| - lr l1, 0) / (1 + lr l2)."""

    def __init__(self, learning_rate: Rate, l1_regularization_strength: Rate = 0.0,
                 l2_regularization_strength: Rate = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._l1, self._l2 = learning_rate, l1_regularization_strength, l2_regularization_strength

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad, var):
        return training_ops.ApplyProximalGradientDescent(
            var.value(), self._for(self._lr, var), self._for(self._l1_t, var), self._for(self._l2_t, var), grad,
            name="ApplyProximalGradientDescent")


class ProximalAdagradOptimizer(Optimizer):
    """FOBOS with Adagrad's rate lr / sqrt(accum) (accum += grad^2 first). Slot "accumulator"."""

    def __init__(self, learning_rate: Rate, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: Rate = 0.0, l2_regularization_strength: Rate = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate, self._initial = learning_rate, initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "accumulator", constant(np.full(v.shape.as_list(), self._initial, v.dtype.np)), self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad, var):
        return training_ops.ApplyProximalAdagrad(
            var.value(), self.get_slot(var, "accumulator").value(), self._for(self._lr, var),
            self._for(self._l1_t, var), self._for(self._l2_t, var), grad, name="ApplyProximalAdagrad")


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (McMahan et al. 2013) as TF's ApplyFtrl / ApplyFtrlV2 (with l2 shrinkage).
    Slots "accum" (starting at initial_accumulator_value) and "linear" (zeros). `beta` adds
    beta / (2 lr) to the L2 strength, as TF does."""

    def __init__(self, learning_rate: Rate, learning_rate_power: Rate = -0.5, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: Rate = 0.0, l2_regularization_strength: Rate = 0.0,
                 use_locking: bool = False, name: str = "Ftrl", accum_name: str | None = None,
                 linear_name: str | None = None, l2_shrinkage_regularization_strength: Rate = 0.0,
                 beta: Rate | None = None) -> None:
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value {initial_accumulator_value} must be >= 0.")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} must be <= 0.")
        _check_strengths(l1_regularization_strength=l1_regularization_strength,
                         l2_regularization_strength=l2_regularization_strength,
                         l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength)
        super().__init__(use_locking, name)
        self._learning_rate, self._power, self._initial = learning_rate, learning_rate_power, initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._shrinkage, self._beta = l2_shrinkage_regularization_strength, 0.0 if beta is None else beta
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "accum", constant(np.full(v.shape.as_list(), self._initial, v.dtype.np)),
                       self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._lr = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")
        self._adjusted_l2 = self._l2_t + self._beta / (2.0 * self._lr) if self._beta else self._l2_t
        self._power_t = self._hyper(self._power, "learning_rate_power")
        self._shrinkage_t = self._hyper(self._shrinkage, "l2_shrinkage_regularization_strength")

    def _apply_dense(self, grad, var):
        ins = [var.value(), self.get_slot(var, "accum").value(), self.get_slot(var, "linear").value(), grad,
               self._for(self._lr, var), self._for(self._l1_t, var), self._for(self._adjusted_l2, var),
               self._for(self._power_t, var)]
        if self._shrinkage > 0.0:
            return training_ops.ApplyFtrlV2(*ins, self._for(self._shrinkage_t, var), name="ApplyFtrlV2")
        return training_ops.ApplyFtrl(*ins, name="ApplyFtrl")
