"""The tests' own tolerances: every rtol/atol written into an assert_allclose / allclose / isclose
call in tests/ is within what gradcheck.py's table allows, or is listed below with its reason.

"Within the table" means: rtol at most the loosest rtol of gradcheck.TOLERANCES (float32 "grad",
3e-5), and atol at most that rtol applied to a value of magnitude 1 (an absolute bound looser than
that is looser than the table for every value up to 1 in size). Float32 comparisons need no more:
the table's float32 rows already allow hundreds of ulps. A tolerance is read from the call's source
(ast): a number, a module-level constant of the file, or c * <expression> (a bound relative to a
scale, counted as c). A tolerance computed from a function's arguments is checked where its caller
passes it, when that is a literal."""
import ast
import pathlib

import pytest

from gradcheck import TOLERANCES

TESTS = pathlib.Path(__file__).resolve().parent
RTOL_LIMIT = max(t.rtol for rows in TOLERANCES.values() for t in rows.values())
ATOL_LIMIT = RTOL_LIMIT * 1.0
CALLS = {"assert_allclose", "allclose", "isclose"}

# (file, test function, "rtol" or "atol"): why the bound must be looser than the table.
LOOSE = {
    ("test_contrib_seq2seq.py", "test_sample_embedding_helper_follows_the_softmax", "atol"):
        "frequencies of sampled ids against the softmax: a statistical bound",
    ("test_contrib_distributions.py", "test_sample_moments", "rtol"):
        "a sample standard deviation of n draws, not a computed value: a statistical bound",
    ("test_sampled_losses.py", "test_log_uniform_sampler", "rtol"):
        "the number of tries is recovered by inverting float32 expected counts (log1p of values near 0)",
    ("test_sampled_losses.py", "test_log_uniform_sampler", "atol"):
        "frequencies of 4000 draws against P(c): a statistical bound (about 3 standard errors)",
    ("test_scatter.py", "test_multinomial_frequencies", "atol"):
        "frequencies of 20000 draws: 3 standard errors",
    ("test_bfloat16.py", "test_a_training_step_shares_one_copy_per_operand", "rtol"):
        "losses of a network whose products take bfloat16 operands (8 significant bits) against float32's",
    ("test_bfloat16.py", "test_a_training_step_shares_one_copy_per_operand", "atol"):
        "weights after 3 Adam steps, which move each weight by about the learning rate whatever the gradient",
    ("test_bfloat16.py", "test_loop_invariant_operands_are_copied_once_before_the_loop", "atol"):
        "an LSTM's loss and gradients with bfloat16 operands (8 significant bits) against float32's",
    ("test_mixed_precision_api.py", "test_a_session_created_after_enable_trains_with_bfloat16_products", "rtol"):
        "losses and weights of a network whose products take bfloat16 operands against float32's",
    ("test_mixed_precision_api.py", "test_a_session_created_after_enable_trains_with_bfloat16_products", "atol"):
        "weights trained with bfloat16 products against float32's: bfloat16's 8 significant bits",
    ("test_slim_nets.py", "test_net_matches_tf_slim", "rtol"):
        "whole nets (VGG, ResNet, Inception) in float32 against TF-Slim: dozens of layers, each summing "
        "in another order than TF's kernels, relative to the largest logit",
    ("test_slim_nets.py", "test_net_matches_tf_slim", "atol"):
        "the same bound as rtol, times the largest logit",
    ("test_storage_arithmetic.py", "test_float16_matches_tensorflow", "rtol"):
        "float16 results: one half-precision step is 9.8e-4",
    ("test_storage_arithmetic.py", "test_float16_matches_tensorflow", "atol"):
        "float16 results: one half-precision step is 9.8e-4",
    ("test_storage_arithmetic.py", "test_float16_gradients", "rtol"):
        "a float16 gradient (three float16 products summed): a few half-precision steps",
    ("test_storage_arithmetic.py", "test_float16_gradients", "atol"):
        "a float16 gradient (three float16 products summed): a few half-precision steps",
}


def _number(node, constants):
    """The value of a tolerance expression, or None when it depends on more than literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _number(node.operand, constants)
        return None if v is None else -v
    if isinstance(node, ast.BinOp):
        a, b = _number(node.left, constants), _number(node.right, constants)
        if isinstance(node.op, ast.Mult) and (a is None) != (b is None):
            return a if b is None else b  # c * scale: relative to the scale, counted as c
        if a is None or b is None:
            return None
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.Div: a / b if b else None,
               ast.Pow: a ** b if abs(b) < 64 else None}
        return ops.get(type(node.op))
    return None


def _module_constants(tree):
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = _number(stmt.value, out)
            if v is not None:
                out[stmt.targets[0].id] = v
    return out


def _calls(node, function=None):
    """(enclosing top-level function name, call) for every tolerance call under node."""
    for child in ast.iter_child_nodes(node):
        inner = child.name if function is None and isinstance(child, (ast.FunctionDef, ast.ClassDef)) else function
        if isinstance(child, ast.Call):
            f = child.func
            if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) in CALLS:
                yield inner, child
        yield from _calls(child, inner)


def tolerances():
    """(file, function, keyword, value) of every literal tolerance in a tolerance call in tests/."""
    found = []
    for path in sorted(TESTS.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        constants = _module_constants(tree)
        for function, call in _calls(tree):
            for kw in call.keywords:
                if kw.arg in ("rtol", "atol"):
                    value = _number(kw.value, constants)
                    if value is not None:
                        found.append((path.name, function, kw.arg, value))
    return found


def test_the_scan_sees_the_tolerances():
    """The scan is alive: it finds the table's own use and many literal ones."""
    found = tolerances()
    assert len(found) > 100
    assert any(f == "test_matmul_onednn.py" and k == "atol" for f, _, k, _ in found)


def test_no_tolerance_is_looser_than_the_table_without_a_reason():
    loose = {}
    for f, function, k, v in tolerances():
        if v > (RTOL_LIMIT if k == "rtol" else ATOL_LIMIT):
            loose[f, function, k] = max(v, loose.get((f, function, k), 0.0))
    unexplained = sorted(set(loose) - set(LOOSE))
    assert not unexplained, "tolerances looser than gradcheck's table, not in LOOSE:\n" + "\n".join(
        f"  {f} {function} {k}={loose[f, function, k]:g}" for f, function, k in unexplained)
    stale = sorted(set(LOOSE) - set(loose))
    assert not stale, f"LOOSE lists calls that are no longer loose (or moved): {stale}"


@pytest.mark.parametrize("source, want", [
    ("f(a, b, rtol=1e-3)", [("rtol", 1e-3)]),
    ("np.testing.assert_allclose(a, b, rtol=2 * 1e-5, atol=1e-4 * np.abs(b).max())", [("rtol", 2e-5), ("atol", 1e-4)]),
    ("np.allclose(a, b, atol=TOL)", [("atol", 0.5)]),
    ("np.isclose(a, b, rtol=r)", []),
])
def test_the_reader_of_tolerances(source, want):
    tree = ast.parse("TOL = 0.5\n" + source.replace("f(", "np.testing.assert_allclose("))
    constants = _module_constants(tree)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") in CALLS)
    got = [(kw.arg, _number(kw.value, constants)) for kw in call.keywords]
    assert [(k, v) for k, v in got if v is not None] == [(k, pytest.approx(v)) for k, v in want]
