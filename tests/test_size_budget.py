"""The size budget of the package's source files: a Python (or Cython) file of pygrad/ holds at most
600 lines, a C++ file of csrc/ at most 650. A file over it is split where its code has a seam."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUDGETS = [("pygrad", ("*.py", "*.pyx"), 600), ("csrc", ("*.cc", "*.h", "*.def"), 650)]
FILES = [(path, limit) for top, patterns, limit in BUDGETS for pattern in patterns
         for path in sorted((ROOT / top).rglob(pattern))]


def test_the_budget_sees_the_sources():
    names = {p.relative_to(ROOT).as_posix() for p, _ in FILES}
    assert {"pygrad/session.py", "pygrad/_run.pyx", "csrc/bind.cc", "csrc/pg/kernels.def"} <= names


def test_every_file_within_budget():
    over = [f"{p.relative_to(ROOT)}: {n} lines, over {limit}" for p, limit in FILES
            if (n := len(p.read_text().splitlines())) > limit]
    assert not over, "split these where the code has a seam:\n" + "\n".join(over)
