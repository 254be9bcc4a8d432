"""The passes compile_run makes over a lowered program, in this order, before the plan's buffers are
assigned: each rewrites program.steps in place (fetches: the operands the plan returns, which no pass
may take away)."""
from pygrad.bfloat16 import bfloat16_products
from pygrad.dead_steps import drop_dead_steps
from pygrad.fold_constants import fold_batch_norms, fold_constants
from pygrad.fuse_checks import fuse_finite_checks
from pygrad.fuse_elementwise import fuse_elementwise
from pygrad.fuse_pool_grads import fuse_pool_relu_grads
from pygrad.fusion import accumulate_read_gradients, elide_loop_copies, fuse, fuse_epilogues, fuse_input_pads
from pygrad.slice_transposes import slice_through_transposes


def optimize(program, fetches, bfloat16=False):
    """bfloat16: run the float32 products in bfloat16 (pygrad/bfloat16.py; mixed precision)."""
    program.steps = fuse(program.steps, fetches)  # the softmax cost and its gradient
    fold_constants(program, fetches)  # values of constants alone, computed once
    fuse_input_pads(program, fetches)
    fuse_epilogues(program, fetches)  # a convolution's bias, batch norm, shortcut and activation
    fold_batch_norms(program)  # a constant scale into a constant filter
    fuse_pool_relu_grads(program, fetches)  # a max pool's gradient and its relu's
    fuse_finite_checks(program, fetches)  # reduce_all(is_finite(g * s)) in one pass
    elide_loop_copies(program, fetches)
    accumulate_read_gradients(program, fetches)
    slice_through_transposes(program, fetches)  # a slice of a transpose from its input
    drop_dead_steps(program, fetches)
    fuse_elementwise(program, fetches)
    if bfloat16:
        bfloat16_products(program, fetches)
