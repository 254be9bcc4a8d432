"""A session's plans (lowering's CompiledRuns), one per run signature: the one definition of the
key a run is looked up by, and of when plans are dropped."""

PLAN_CACHE_ENTRIES = 256
PLAN_CACHE_BYTES = 64 << 20


class PlanCache:
    """CompiledRuns by run signature (`key`), at most PLAN_CACHE_ENTRIES of them owning at most
    PLAN_CACHE_BYTES (a graph that keeps growing, or ever new feed shapes): past either limit the
    oldest go. A plan holds no scratch (runs take it from the session store's arenas) and no copy
    of the graph's constants; what it owns (constants made while lowering, such as shapes) is its
    `owned_bytes`.

    `get(key)` is the cached CompiledRun or None. It is the entries dict's own `get`, bound once:
    Session.run's compiled path (pygrad/_run.pyx) calls it on every run."""

    __slots__ = ("get", "_entries", "_bytes")

    def __init__(self):
        self._entries = {}
        self._bytes = 0
        self.get = self._entries.get

    @staticmethod
    def key(elements, feed_tensors, feed_shapes):
        """The key of a run: the tuple of elements (the Tensors and Operations fetched, in fetch
        order), feed_tensors (the fed Tensors, in feed_dict order) and feed_shapes (the fed
        arrays' shapes, tuples of ints, in the same order). The compiled path builds this tuple in
        C, with the same items."""
        return elements, feed_tensors, feed_shapes

    def put(self, key, compiled):
        """Caches compiled under key (a key get has no entry for), dropping the oldest plans
        while the cache is full or owns too much."""
        self._bytes += compiled.owned_bytes
        entries = self._entries
        while entries and (len(entries) >= PLAN_CACHE_ENTRIES or self._bytes > PLAN_CACHE_BYTES):
            self._bytes -= entries.pop(next(iter(entries))).owned_bytes
        entries[key] = compiled

    def clear(self):
        self._entries.clear()  # (the same dict: `get` stays bound to it)
        self._bytes = 0

    def __len__(self):
        return len(self._entries)

    def values(self):
        """The cached CompiledRuns, oldest first."""
        return self._entries.values()
