"""tf.train.SyncReplicasOptimizer: synchronous replicas on a cluster's parameter servers.

What TF1's observes: each global step applies, with the wrapped optimizer, the mean of
replicas_to_aggregate gradients computed against that step; a gradient computed against an
older step is dropped; a worker's train op returns once its step's update is applied, and sets
its local step (`sync_rep_local_step`, a local variable) to the new global step (TF's token).
TF builds that from conditional accumulators, a token queue and a chief thread that applies and
hands out tokens. pygrad's train op is the same computation in one write batch on the global
step's ps task (cluster_service.TaskService): each gradient goes through a SyncReplicasAccumulate
op (colocated with its variable), the wrapped optimizer's update reads their means, and a
SyncReplicasToken op (with the global step) gives the token. The ps task holds the step's sums;
the push that completes a step runs the update and wakes the others; a stale push changes
nothing. So get_init_tokens_op and the chief queue runner have nothing to do, and the chief's
queue runner starts no thread. In one process (no ps task elsewhere) only replicas_to_aggregate=1
can run: the accumulate passes the gradient through.
"""
from pygrad import errors
from pygrad.graph import GraphKeys, get_default_graph, unwrap
from pygrad.ops import array_ops, state_ops
from pygrad.ops.indexed_slices import IndexedSlices
from pygrad.registry import BETWEEN, HostError, OpDef, Spec
from pygrad.train.hooks import SessionRunHook
from pygrad.train.optimizer import Optimizer
from pygrad.train.session_manager import report_uninitialized_variables

# (variable, gradient, local step) -> the mean gradient of the step; attrs replicas, total
SyncAccumulate = OpDef("SyncReplicasAccumulate", host=BETWEEN, differentiable=False, ref_input=0,
                       output_is_ref=False)


@SyncAccumulate.shape
def _(var, grad, local_step, *, replicas, total):
    return Spec(grad.dtype, grad.shape)


@SyncAccumulate.host
def _(ctx, op, values):
    if op.attrs["replicas"] != 1:
        raise HostError(f"replicas_to_aggregate={op.attrs['replicas']} needs the variables on a ps task of another "
                        f"process (tf.train.Server of job 'ps'); in one process only 1 can run")
    return [values[1]]


# (global step, its value after the update) -> the token: the new global step. On a ps task the
# task reads the global step itself, so input 1 is for a run in one process only.
SyncToken = OpDef("SyncReplicasToken", host=BETWEEN, differentiable=False, ref_input=0, output_is_ref=False)
SyncToken.local_only_inputs = (1,)


@SyncToken.shape
def _(global_step, after):
    return Spec(after.dtype, after.shape)


@SyncToken.host
def _(ctx, op, values):
    return [values[1]]


class _ChiefQueueRunner:
    """The chief's queue runner: pygrad's ps task applies each step itself, so it starts no thread."""

    name = "sync_token_q"

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        return []


class SyncReplicasOptimizer(Optimizer):
    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        if variable_averages is not None:
            raise errors.UnimplementedError(None, None, "SyncReplicasOptimizer: variable_averages is not supported "
                                                        "yet")
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._gradients_applied = False
        self._global_step = self._local_step = None
        self.local_step_init_op = self.chief_init_op = self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        graph = get_default_graph()
        self._global_step = global_step
        anchor = state_ops.no_op()  # on this worker: the local step is colocated with it, not on a ps task
        with graph.control_dependencies(None), graph.colocate_with(anchor):
            self._local_step = state_ops.Variable(0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                                  dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        self.ready_for_local_init_op = report_uninitialized_variables(state_ops.global_variables())
        aggregated = []
        with graph.name_scope(name or self._name):
            for grad, var in grads_and_vars:
                if grad is None:
                    aggregated.append(None)
                    continue
                if isinstance(grad, IndexedSlices):  # (TF: a sparse accumulator; here its dense sum)
                    grad = array_ops.convert_to_tensor(grad)
                aggregated.append(SyncAccumulate(unwrap(var), grad, unwrap(self._local_step),
                                                 replicas=self._replicas_to_aggregate,
                                                 total=self._total_num_replicas, name="grad_accum"))
            with graph.device(global_step.device), graph.name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, [v for _, v in grads_and_vars])),
                                                      global_step)
            with graph.device(global_step.device), graph.name_scope(""):
                with graph.control_dependencies([update_op]):
                    after = array_ops.identity(global_step)
                token = SyncToken(unwrap(global_step), after, name="sync_token")
                train_op = state_ops.assign(self._local_step, token)
        self.chief_init_op = state_ops.group(self.local_step_init_op)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self):
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return _ChiefQueueRunner()

    def get_init_tokens_op(self, num_tokens=-1):
        """A no-op: pygrad's ps task hands out the tokens (see the module's docstring)."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < self._tokens_per_step - self._total_num_replicas:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                             f"{self._tokens_per_step - self._total_num_replicas} (needed)")
        return state_ops.no_op(name="sync_init_tokens")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()


class _SyncReplicasOptimizerHook(SessionRunHook):
    """After the session is made: the chief runs chief_init_op, the others local_step_init_op."""

    def __init__(self, opt, is_chief, num_tokens):
        self._opt, self._is_chief, self._num_tokens = opt, is_chief, num_tokens

    def begin(self):
        if not self._opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        self._local_init_op = self._opt.chief_init_op if self._is_chief else self._opt.local_step_init_op
        self._ready_for_local_init_op = self._opt.ready_for_local_init_op

    def after_create_session(self, session, coord):
        session.run(self._local_init_op)
