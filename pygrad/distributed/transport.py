"""How a worker and a parameter-server shard exchange gradients and weights: two links with one
interface (`start_push` then `finish_push`, `pull`, then `install`).

- `MessageLink`: Dask actor calls; the arrays travel inside the messages (TLS on the local
  cluster). It works between any two hosts.
- `LocalLink`: worker and shard on one host. The shard's variables live in shared memory: its
  session updates them there in place, under a sequence lock (odd while an update runs). Each
  worker has a gradient slot there too; it writes its gradients into its slot and sends a few
  bytes over a Unix socket, the shard feeds them to its update straight from the slot and answers
  with its new version, and a pull is a copy from shared memory into the worker's session, with no
  message. An update waits for a copy under way (at most `READER_WAIT`); a copy an update overlapped
  all the same is taken again. The files live in a
  directory of the shard's under /dev/shm, readable by its user only (mode 0700); a worker
  authenticates with its token when it connects. A worker tries this link first: the directory
  exists only on the shard's host, and elsewhere it falls back to messages.

A shard's sparse variables (whose gradients are `IndexedSlices`) get a slot of their rows' values
and indices; a push sends the rows it touched, deduplicated and summed, with their count, and the
weights carry the version that last changed each row, so that an install copies only the rows
changed since the worker's last one. With compression="bfloat16" a slot holds float32 gradients as
the bits of bfloat16 (`to_bfloat16_bits`, `from_bfloat16_bits`).
"""
import glob
import mmap
import os
import select
import shutil
import socket
import struct
import tempfile
import threading
import time
import weakref

import numpy as np

from pygrad import _C, errors

SHM_ROOT = "/dev/shm"
_ALIGN = 64
_HELLO = struct.Struct("<qq")     # worker index, token length (then the token)
_REQUEST = struct.Struct("<qq")   # step, base version
_REPLY = struct.Struct("<qqqq")   # code, version, staleness, message length (then the message)
STATUSES = ("applied", "scaled", "stale", "late")
# How long a shard's update waits for workers copying its weights before it starts anyway.
READER_WAIT = 0.02
_REFUSED, _TIMEOUT, _FAILED = -1, -2, -3


def layout(specs, compression=None):
    """({name: (offset, shape, dtype)}, bytes) of specs' arrays in one segment, after a header of
    int64 words: the sequence number, the version, and the rows pushed of each sparse spec
    (`.sparse`); in a worker's gradient slot, the first word is set while that worker copies the
    weights. A sparse spec also gets "name:indices", int64 rows (in a gradient slot: the rows
    pushed; its values' first dimension is the variable's rows, at most that many distinct rows
    are pushed at once) and "name:versions", the version that last changed each row (in the
    weights). compression="bfloat16": float32 gradients (a slot's) are the bits of bfloat16."""
    header = 8 * (2 + len(_sparse_names(specs)))
    places, offset = {}, -(-header // _ALIGN) * _ALIGN
    for s in specs:
        dtype = np.dtype(s.dtype)
        entries = [(s.name, tuple(s.shape), np.dtype(np.uint16) if compression and dtype == np.float32 else dtype)]
        if getattr(s, "sparse", False):
            entries += [(s.name + suffix, (s.shape[0],), np.dtype(np.int64)) for suffix in (":indices", ":versions")]
        for name, shape, dtype in entries:
            places[name] = (offset, shape, dtype)
            offset += -(-int(np.prod(shape, dtype=np.int64)) * dtype.itemsize // _ALIGN) * _ALIGN
    return places, offset


def nbytes(g):
    """The bytes of a gradient as it travels: an array, or a sparse one's (values, indices)."""
    return sum(a.nbytes for a in g) if isinstance(g, tuple) else g.nbytes


def scaled(g, factor):
    """A gradient (an array, or (values, indices)) times factor, in its own dtype."""
    if isinstance(g, tuple):
        return g[0] * np.asarray(factor, g[0].dtype), g[1]
    return g * np.asarray(factor, g.dtype)


def non_finite(name, values):
    """Why the gradient of `name` cannot be pushed (its NaN and infinite values), or None."""
    if values.dtype.kind not in "fc" or all_finite(values):
        return None
    return (f"the gradient of '{name}' has {values.size - np.count_nonzero(np.isfinite(values))} non-finite values "
            f"(NaN or infinity) of {values.size}")


def all_finite(values):
    """Whether every value is finite: one native pass (the all_finite kernel) over a float32 or
    float64 array, without NumPy's array of bools."""
    if values.dtype in (np.float32, np.float64) and values.flags.c_contiguous and values.flags.aligned:
        ok = np.zeros((), bool)
        _C.call("all_finite", [values], [ok])
        return bool(ok)
    return bool(np.isfinite(values).all())


def to_bfloat16_bits(a):
    """The bits (uint16) of float32 values rounded to bfloat16, to nearest even. The values must be
    finite (a NaN's bits could carry into the sign)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    return ((u + ((u >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)


def from_bfloat16_bits(bits):
    """float32 values of bfloat16 bits (exact)."""
    return (np.ascontiguousarray(bits).astype(np.uint32) << 16).view(np.float32)


class Shared:
    """A file in shared memory mapped into this process: a header of int64 words and named arrays."""

    def __init__(self, path, sparse, size=None):
        """sparse: the names of the sparse variables (a word each in the header); size: create the
        file (it must not exist) with that many bytes, None: open it."""
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if size else 0)
        fd = os.open(path, flags, 0o600)
        try:
            if size:
                os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size or 0)
        finally:
            os.close(fd)
        self.header = np.ndarray((2,), np.int64, self._map, 0)
        self.rows = np.ndarray((len(sparse),), np.int64, self._map, 16)  # (the map's size fits them: layout)

    def arrays(self, places):
        return {n: np.ndarray(shape, dtype, self._map, offset) for n, (offset, shape, dtype) in places.items()}

    def variables(self, places):
        """({variable: its values}, {sparse variable: the version that last changed each row}) of a
        weights file laid out by places (layout's)."""
        return (self.arrays({n: p for n, p in places.items() if ":" not in n}),
                self.arrays({n[:-9]: p for n, p in places.items() if n.endswith(":versions")}))


def remove_local_files(run_id):
    """Removes the local endpoints' directories of run_id's shards on this host (a shard that died
    could not)."""
    for directory in glob.glob(os.path.join(SHM_ROOT, f"pygrad-{run_id}-*")):
        shutil.rmtree(directory, ignore_errors=True)


def _recv(conn, n):
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the other end of a local parameter-server link closed it")
        data += chunk
    return bytes(data)


def _sparse_names(specs):
    return [s.name for s in specs if getattr(s, "sparse", False)]


class LocalEndpoint:
    """A shard's side of the local links: its weights and the workers' slots in shared memory, and
    a Unix socket served by one thread per connected worker, which calls push(worker, token, step,
    base, grads) -> reply dict (raising InvalidArgumentError for a refused push)."""

    def __init__(self, tag, specs, num_workers, known, push, compression=None):
        self.directory = tempfile.mkdtemp(prefix=f"pygrad-{tag}-", dir=SHM_ROOT)  # mode 0700
        # Removed by close, or when the process exits without it (a killed one's, by the driver).
        self._remove = weakref.finalize(self, shutil.rmtree, self.directory, True)
        self.places, size = layout(specs)
        self._sparse = _sparse_names(specs)
        self.weights = Shared(os.path.join(self.directory, "weights"), self._sparse, size)
        # The shard's session keeps its variables in weight_views (Session.place_variable).
        self.weight_views, self.versions = self.weights.variables(self.places)
        self.slot_places, slot_size = layout(specs, compression)
        self._slots = [Shared(os.path.join(self.directory, f"grads-{w}"), self._sparse, slot_size)
                       for w in range(num_workers)]
        self._known, self._push = known, push
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(os.path.join(self.directory, "socket"))
        self._listener.listen(max(8, num_workers))
        self._connections = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name=f"pygrad-{tag}-accept").start()

    @staticmethod
    def available():
        return os.path.isdir(SHM_ROOT) and hasattr(socket, "AF_UNIX")

    def begin_write(self):
        """The weights are about to change in place (the shard's session updates them in this
        memory): an install that overlaps the change retries. Waits first while a worker copies
        them (a copy takes milliseconds), up to READER_WAIT seconds (a killed worker's mark stays),
        so that the copy is not torn and taken again after this update."""
        deadline = None
        for slot in self._slots:
            while slot.header[0] and (deadline is None or time.monotonic() < deadline):
                deadline = deadline or time.monotonic() + READER_WAIT
                time.sleep(0.0001)
        self.weights.header[0] += 1  # odd: being written

    def end_write(self, version):
        """The change begun by begin_write is done: the weights are those of version."""
        header = self.weights.header
        header[1] = version
        header[0] += 1

    def close(self):
        self._closed = True
        for c in [self._listener] + self._connections:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        self._remove()

    def _accept(self):
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            worker, length = _HELLO.unpack(_recv(conn, _HELLO.size))
            token = _recv(conn, min(length, 1024)).decode(errors="replace")
            if not self._known(worker, token):
                conn.sendall(_REPLY.pack(_REFUSED, 0, 0, 0))
                return
            conn.sendall(_REPLY.pack(0, 0, 0, 0))
            slot = self._slots[worker]
            views = slot.arrays(self.slot_places)
            while True:
                step, base = _REQUEST.unpack(_recv(conn, _REQUEST.size))
                grads = {}
                for n, (_, shape, _) in self.slot_places.items():
                    if ":" in n:
                        continue
                    if n in self._sparse:
                        rows = int(slot.rows[self._sparse.index(n)])
                        rows = min(max(rows, 0), shape[0])
                        grads[n] = (views[n][:rows], views[n + ":indices"][:rows])
                    else:
                        grads[n] = views[n]
                try:
                    reply = self._push(worker, token, step, base, grads)
                    out = _REPLY.pack(STATUSES.index(reply["status"]), reply["version"], reply["staleness"], 0)
                except Exception as e:
                    code = (_REFUSED if isinstance(e, errors.InvalidArgumentError)
                            else _TIMEOUT if isinstance(e, TimeoutError) else _FAILED)
                    text = str(e).encode()
                    out = _REPLY.pack(code, 0, 0, len(text)) + text
                conn.sendall(out)
        except (OSError, ConnectionError):
            pass  # the worker went away, or the endpoint is closing
        finally:
            conn.close()


class LocalLink:
    """A worker's side of a local link to one shard (see the module's docstring)."""

    local = True

    def __init__(self, directory, specs, worker, token, timeout, row_local=(), compression=None):
        """row_local: the sparse variables the shard changes only in the rows pushed, which an
        install copies only where they changed; compression: the run's (the slot's layout)."""
        self.places, _ = layout(specs)
        self._slot_places, _ = layout(specs, compression)
        self._row_local = set(row_local)
        self._sparse = _sparse_names(specs)
        self._directory = directory
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.settimeout(timeout)
        try:
            self._conn.connect(os.path.join(directory, "socket"))
            self.weights = Shared(os.path.join(directory, "weights"), self._sparse)
            self._slot = Shared(os.path.join(directory, f"grads-{worker}"), self._sparse)
            secret = token.encode()
            self._conn.sendall(_HELLO.pack(worker, len(secret)) + secret)
            if _REPLY.unpack(_recv(self._conn, _REPLY.size))[0] != 0:
                raise errors.InvalidArgumentError(None, None, f"the parameter-server shard at {directory} refused "
                                                              f"worker {worker}: unknown worker or wrong token")
        except BaseException:
            self._conn.close()
            raise
        self._views = self._slot.arrays(self._slot_places)
        self._weight_views, self._versions = self.weights.variables(self.places)

    def start_push(self, worker, token, step, base, grads):
        """Writes grads ({name: array, or (values, indices) for a sparse variable}) into the slot and
        sends the request."""
        for n, g in grads.items():
            if n in self._sparse:
                values, indices = g
                rows = len(indices)
                self._views[n][:rows] = values
                self._views[n + ":indices"][:rows] = indices
                self._slot.rows[self._sparse.index(n)] = rows
            else:
                np.copyto(self._views[n], g)
        try:
            self._conn.sendall(_REQUEST.pack(step, base))
        except socket.timeout:
            raise errors.DeadlineExceededError(None, None, "no parameter-server shard took a push in time") from None

    def finish_push(self):
        try:
            code, version, staleness, length = _REPLY.unpack(_recv(self._conn, _REPLY.size))
            text = _recv(self._conn, length).decode(errors="replace") if length else ""
        except socket.timeout:
            raise errors.DeadlineExceededError(None, None, "no reply from a parameter-server shard in time") from None
        if code == _REFUSED:
            raise errors.InvalidArgumentError(None, None, text)
        if code == _TIMEOUT:
            raise TimeoutError(text)
        if code < 0:
            raise errors.InternalError(None, None, text)
        return {"status": STATUSES[code], "version": version, "staleness": staleness}

    def pull(self, since):
        return None  # the weights are always in shared memory: `install` reads them

    def install(self, pulled, write, write_rows, base, patience=None):
        """Copies the shard's weights into the worker's session (write(name, array), write_rows(name,
        indices, rows)): every variable, but of those in row_local only the rows changed after
        version base (all, when base is None). Returns (their version, bytes copied). Waits while
        the shard updates them, before the copy at most `patience` seconds (None: as long as it
        takes), after which it returns None with nothing copied; copies again, however long that
        takes, if an update began under the copy. Raises ConnectionError when the shard died in the
        middle of an update (its socket closed), which no wait would end."""
        header = self.weights.header
        start = time.monotonic()
        deadline = None if patience is None else start + patience
        while True:
            before = int(header[0])
            if before % 2:  # the shard is updating them: an update takes milliseconds
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                if time.monotonic() - start > 0.05 and self._closed_by_shard():
                    raise ConnectionError(f"the shard at {self._directory} closed its link in the middle of an "
                                          f"update (it died): its weights there are torn")
                time.sleep(0)  # (yields the core: a sleep of 0.2 ms made softmax runs less accurate)
                continue
            deadline = None  # copying: a torn copy is taken again, whatever the wait
            moved = 0
            self._slot.header[0] = 1  # copying (the shard's next update waits for it)
            try:
                for n, view in self._weight_views.items():
                    if n in self._row_local and base is not None:
                        changed = np.flatnonzero(self._versions[n] > base)
                        rows = view[changed]
                        write_rows(n, changed, rows)
                        moved += rows.nbytes
                    else:
                        write(n, view)
                        moved += view.nbytes
            finally:
                self._slot.header[0] = 0
            version = int(header[1])
            if int(header[0]) == before:
                return version, moved

    def _closed_by_shard(self):
        """Whether the shard's end of the socket is closed (a dead shard): a poll for the hang-up
        alone, which reads nothing of a reply the courier may be waiting for."""
        poller = select.poll()
        poller.register(self._conn, getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(0))

    def close(self):
        self._conn.close()


class MessageLink:
    """A worker's side of a link to one shard through Dask actor calls (`wait` waits for a call's
    reply, watching for the shard's replacement)."""

    local = False

    def __init__(self, actor, wait):
        self._actor, self._wait, self._call = actor, wait, None

    def start_push(self, worker, token, step, base, grads):
        self._call = self._actor.push(worker, token, step, base, grads)

    def finish_push(self):
        call, self._call = self._call, None
        return self._wait(call)

    def pull(self, since):
        return self._wait(self._actor.pull(since))

    def install(self, pulled, write, write_rows, base, patience=None):
        """Loads a pull's values: arrays, and (rows, indices) of a variable's changed rows."""
        version, values = pulled
        moved = 0
        for n, value in values.items():
            if isinstance(value, tuple):
                rows, indices = (np.require(a, requirements="CA") for a in value)  # off the wire: maybe unaligned
                write_rows(n, indices.astype(np.int64, copy=False), rows)
                moved += rows.nbytes + indices.nbytes
            else:
                write(n, np.require(value, requirements="CA"))
                moved += value.nbytes
        return version, moved

    def close(self):
        pass
