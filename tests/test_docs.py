"""The documentation: docs/coverage.md is what docs/coverage.py makes of the package as it is now,
its counts are the namespaces' public names, and every relative link in README.md and docs/*.md
leads to a file of the repository and, when it names a heading, to that heading."""
import importlib.util
import pathlib
import re
import types

import pytest

import pygrad as tf

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("docs_coverage", ROOT / "docs" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(text):
    """(paths, counts) of each row of the coverage table; counts empty for a row of names in `tf`."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            counts = [] if cells[1].startswith("(in ") else [int(c) for c in cells[1].split(", ")]
            rows.append((re.findall(r"`([^`]+)`", cells[0]), counts))
    return rows


def _lookup(path):
    obj = tf
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _public(module):
    """A module's public names other than modules, from its namespace (and its own __dir__, as pygrad's has)."""
    names = set(vars(module)) | set(vars(module)["__dir__"]() if "__dir__" in vars(module) else ())
    return [n for n in names if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]


def test_coverage_page_is_current(coverage):
    page = (ROOT / "docs" / "coverage.md").read_text()
    assert page == coverage.render(tf), "docs/coverage.md is stale: run `python docs/coverage.py`"


def test_coverage_counts_are_each_namespace_public_names(coverage):
    text = coverage.render(tf)
    rows, total, seen = _rows(text), 0, set()
    assert rows[0] == (["tf"], [len(_public(tf))])
    for paths, counts in rows:
        modules = [m for m in map(_lookup, paths) if isinstance(m, types.ModuleType)]
        assert len(modules) == len(counts), paths
        for module, count in zip(modules, counts):
            assert id(module) not in seen, f"{module.__name__} counted twice"
            seen.add(id(module))
            assert count == len(_public(module)), module.__name__
            total += count
    assert re.search(r"^([\d,]+) public names", text, re.M).group(1) == f"{total:,}"
    named = {p for paths, _ in rows for p in paths}
    for name in dir(tf.contrib):  # every contrib namespace has a row, or is a module a row counts
        sub = getattr(tf.contrib, name)
        if isinstance(sub, types.ModuleType) and name[0] != "_":
            path = f"tf.contrib.{name}"
            assert path in named or id(sub) in seen or any(p.startswith(path + ".") for p in named), path


def test_coverage_follows_what_the_package_holds(coverage, monkeypatch):
    extra = types.ModuleType("pygrad.contrib.extra")
    extra.one, extra.two, extra.sub = (lambda: 1), (lambda: 2), types.ModuleType("pygrad.contrib.extra.sub")
    monkeypatch.setattr(tf.contrib, "extra", extra, raising=False)
    monkeypatch.setattr(tf.contrib, "crf_alias", tf.contrib.crf, raising=False)
    monkeypatch.delattr(tf.contrib, "distributions")
    text = coverage.render(tf)
    rows = dict((tuple(p), c) for p, c in _rows(text))
    assert rows[("tf.contrib.extra",)] == [2]  # a namespace no row names becomes a row of its own
    assert "`tf.contrib.crf_alias` is `tf.contrib.crf`" in text  # the same module is counted once
    named = [p for paths in rows for p in paths]
    assert "tf.contrib.distributions" not in named and "tf.contrib.crf" in named  # a namespace it lacks: no count


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(page):
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _anchors(page):
    anchors, counts = set(), {}
    for line in _prose(page):
        if m := re.match(r"#+ (.+)", line):
            slug = _slug(m.group(1))
            anchors.add(slug if slug not in counts else f"{slug}-{counts[slug]}")
            counts[slug] = counts.get(slug, 0) + 1
    return anchors


def test_relative_links_resolve():
    broken, checked = [], 0
    for page in PAGES:
        for line in _prose(page):
            for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                checked += 1
                if not dest.exists():
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert checked > 20 and not broken, "\n".join(broken)


def test_slugs_are_githubs():
    assert _slug("Distributed training (parameter server)") == "distributed-training-parameter-server"
    assert _slug("TensorFlow's conventions") == "tensorflows-conventions"
    assert _slug("Estimators, metrics and feature columns") == "estimators-metrics-and-feature-columns"
