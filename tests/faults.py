"""The fault-injection suite's report: tests that inject faults (SIGKILL during a save or an event
file's write, SIGINT into training runs, runaway loops, killed workers, shards and schedulers,
rogue clients) record what happened with `record(scenario, **counts)`; at the end of the run,
conftest.py prints one line per scenario (the counts docs/reliability.md quotes)."""
import json
import os

_ENV = "PYGRAD_FAULT_REPORT"


def record(scenario, **counts):
    """Adds counts (ints) to the report of this test run."""
    path = os.environ.get(_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"scenario": scenario, **counts}) + "\n")


def report(path):
    """Lines "scenario: key value, ..." of the counts recorded, summed per scenario (times, keys
    ending in _ms, their largest)."""
    totals = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                entry = json.loads(line)
                counts = totals.setdefault(entry.pop("scenario"), {})
                for k, v in entry.items():
                    counts[k] = max(counts.get(k, 0), v) if k.endswith("_ms") else counts.get(k, 0) + v
    return [f"{s}: " + ", ".join(f"{k} {v}" for k, v in c.items()) for s, c in sorted(totals.items())]
