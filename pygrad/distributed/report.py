"""What a parameter-server run measured: throughput, traffic, staleness, the shards' update
latency, and what failures cost."""
import collections
import dataclasses

import numpy as np


@dataclasses.dataclass
class Report:
    mode: str
    workers: int
    ps_shards: int
    steps: int
    batch_size: int
    wall_seconds: float
    examples: int
    pushes: int
    bytes_pushed: int
    bytes_pulled: int
    staleness: dict                     # staleness -> pushes (async: version now - version pulled)
    apply_seconds: list                 # one per update a shard applied (the surviving shards' own)
    counts: dict                        # pushes, applied, dropped_stale, scaled, late, refused (over shards)
    shard_versions: list                # each shard's version at the end
    worker_restarts: int = 0
    resumes: list = dataclasses.field(default_factory=list)          # (worker, step it resumed at)
    shard_failures: list = dataclasses.field(default_factory=list)   # one dict per shard restart
    losses: dict = dataclasses.field(default_factory=dict)           # worker -> [(step, mean loss)]
    final_loss: float = float("nan")
    final_accuracy: float = float("nan")
    checkpoints: list = dataclasses.field(default_factory=list)
    # compute, push, pull (the pushes' and pulls' own time, in a courier thread in async mode), wait (the
    # training loop's time waiting on the parameter server) and loop (the loop's time): summed over workers
    worker_seconds: dict = dataclasses.field(default_factory=dict)
    links: dict = dataclasses.field(default_factory=dict)  # "shared memory" / "messages" -> worker-shard links
    weights: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def steps_done(self):
        return self.examples // self.batch_size if self.batch_size else 0

    @property
    def examples_per_second(self):
        return self.examples / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def pushes_per_second(self):
        return self.pushes / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def bytes_per_step(self):
        """Bytes pushed and pulled per worker step."""
        return (self.bytes_pushed + self.bytes_pulled) / max(1, self.steps_done)

    @property
    def updates_lost(self):
        """Updates applied by shards that died after their last checkpoint, and so undone."""
        return sum(f["updates_lost"] for f in self.shard_failures)

    @property
    def wait_share(self):
        """The share of the workers' training loop spent waiting on the parameter server."""
        loop = self.worker_seconds.get("loop", 0.0)
        return self.worker_seconds.get("wait", 0.0) / loop if loop else float("nan")

    def apply_latency(self):
        """{"mean", "p50", "p99", "max"} of one update on a shard, in seconds."""
        a = np.asarray(self.apply_seconds, dtype=float)
        if not a.size:
            return {"mean": float("nan"), "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
        return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
                "max": float(a.max())}

    def staleness_histogram(self, width=40):
        """The staleness histogram as text, one line per value."""
        if not self.staleness:
            return "  (none)"
        top = max(self.staleness.values())
        return "\n".join(f"  {s:4d} {n:8d} {'#' * max(1, round(width * n / top))}"
                         for s, n in sorted(self.staleness.items()))

    def __str__(self):
        lat = self.apply_latency()
        lines = [
            f"parameter server: {self.mode}, {self.workers} workers x {self.steps} steps x batch {self.batch_size}, "
            f"{self.ps_shards} shard(s)",
            f"  wall time {self.wall_seconds:.2f} s, {self.examples_per_second:.1f} examples/s, "
            f"{self.pushes_per_second:.1f} pushes/s",
            f"  waiting on the parameter server: {100 * self.wait_share:.1f} % of the workers' loop; links: "
            + (", ".join(f"{n} {kind}" for kind, n in sorted(self.links.items())) or "none"),
            f"  bytes moved per step: {self.bytes_per_step / 1e3:.1f} kB (pushed {self.bytes_pushed / 1e6:.2f} MB, "
            f"pulled {self.bytes_pulled / 1e6:.2f} MB in all)",
            f"  shard update latency: mean {lat['mean'] * 1e3:.3f} ms, p50 {lat['p50'] * 1e3:.3f} ms, "
            f"p99 {lat['p99'] * 1e3:.3f} ms, max {lat['max'] * 1e3:.3f} ms",
            f"  updates applied {self.counts.get('applied', 0)}, "
            f"dropped as stale {self.counts.get('dropped_stale', 0)}, scaled {self.counts.get('scaled', 0)}, "
            f"late (sync) {self.counts.get('late', 0)}, "
            f"refused {self.counts.get('refused', 0)}; shard versions {self.shard_versions}",
            f"  worker restarts {self.worker_restarts}"
            + (f" (resumed at {', '.join(f'worker {w} step {s}' for w, s in self.resumes)}; each lost at most "
               f"its step in flight)" if self.resumes else ""),
            f"  shard restarts {len(self.shard_failures)}, updates lost {self.updates_lost}"
            + "".join(f"\n    shard {f['shard']}: version {f['version_at_failure']} -> {f['restored_version']} "
                      f"({f['checkpoint'] or 'no checkpoint: initial values'})" for f in self.shard_failures),
            f"  final loss {self.final_loss:.4f}, accuracy {self.final_accuracy:.4f} (workers' last batches)",
            "  staleness histogram (staleness, pushes):",
            self.staleness_histogram(),
        ]
        return "\n".join(lines)


def merge_counters(dicts):
    out = collections.Counter()
    for d in dicts:
        out.update({k: v for k, v in d.items()})
    return dict(out)
