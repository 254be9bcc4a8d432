"""The Inception modules of TF-Slim's inception nets as data: a module is a list of branches
(scopes Branch_0, Branch_1, ...), a branch a list of steps, and the module's output the branches
concatenated over channels. A step is ("conv", depth, kernel, scope[, kwargs]), ("max" or "avg",
kernel, scope[, kwargs]) or ("fork", [steps]): steps applied to the same input, concatenated."""
from pygrad.contrib.layers import avg_pool2d, conv2d, max_pool2d
from pygrad.ops.manip_ops import concat
from pygrad.ops.variable_scope import variable_scope

__all__ = ["module", "run_layers"]


def _step(net, step, depth):
    kind, *args = step
    if kind == "fork":
        return concat([_step(net, s, depth) for s in args[0]], 3)
    if kind == "conv":
        filters, kernel, scope, *kwargs = args
        return conv2d(net, depth(filters), kernel, scope=scope, **(kwargs[0] if kwargs else {}))
    if kind in ("max", "avg"):
        kernel, scope, *kwargs = args
        pool = max_pool2d if kind == "max" else avg_pool2d
        return pool(net, kernel, scope=scope, **(kwargs[0] if kwargs else {}))
    raise ValueError(f"inception module: unknown step kind {kind!r}")


def module(net, scope, branches, depth=int):
    """The module's output: each branch's steps from net under <scope>/Branch_<i>, concatenated."""
    with variable_scope(scope):
        outputs = []
        for i, steps in enumerate(branches):
            with variable_scope(f"Branch_{i}"):
                branch = net
                for step in steps:
                    branch = _step(branch, step, depth)
                outputs.append(branch)
        return concat(outputs, 3)


def run_layers(net, layers, final_endpoint, depth=int):
    """(net, end_points) of the layers in order, stopping after final_endpoint (ValueError if it is
    not one of them). A layer is (end point, "module", branches), (end point, "conv", depth,
    kernel[, kwargs]) or (end point, "max" or "avg", kernel[, kwargs]), the end point its scope."""
    end_points = {}
    for end_point, kind, *args in layers:
        if kind == "module":
            net = module(net, end_point, args[0], depth)
        elif kind == "conv":
            net = _step(net, ("conv", args[0], args[1], end_point, *args[2:]), depth)
        else:
            net = _step(net, (kind, args[0], end_point, *args[1:]), depth)
        end_points[end_point] = net
        if end_point == final_endpoint:
            return net, end_points
    raise ValueError(f"Unknown final endpoint {final_endpoint}")
