"""tf.train.Coordinator: stops a group of threads together and re-raises the first error one of
them reported; tf.train.LooperThread, a thread of the coordinator that runs a function on a timer."""
import contextlib
import sys
import threading
import time

from pygrad import errors


class Coordinator:
    """Threads check should_stop() and call request_stop(); join() waits for them and re-raises the
    first exception reported (clean_stop_exception_types, OutOfRangeError by default, only stop)."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        exception = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(exception, self._clean_stop_exception_types) else ex

    def request_stop(self, ex=None):
        """Asks the threads to stop; ex (an exception or a sys.exc_info() tuple), when it is the
        first one reported, is what join() raises. After join(), an exception reported raises here."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else ex
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    self._exc_info_to_raise = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                self._stop_event.set()

    def clear_stop(self):
        """Makes the coordinator usable again after a stop (no stop requested, no exception)."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Reports an exception raised in the block with request_stop (and swallows it)."""
        try:
            yield
        except BaseException:  # noqa: B036 (TF's: any exception stops the threads)
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """True once a stop is requested; False when timeout (seconds) passes first."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits until the threads (and the registered ones) end or a stop is requested, then up to
        stop_grace_period_secs for them to end; raises the reported exception, or RuntimeError
        naming the threads still running (unless ignore_live_threads)."""
        with self._lock:
            threads = list(self._registered_threads if threads is None else
                           self._registered_threads.union(set(threads)))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        end = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]
            if stragglers and not ignore_live_threads:
                raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(stragglers)}")

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Raises the exception reported to request_stop, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]


class LooperThread(threading.Thread):
    """A daemon thread registered with coord: start_loop(), then run_loop() (target(*args,
    **kwargs) by default) every timer_interval_secs (back to back for None) until coord stops,
    then stop_loop(); an exception it raises stops coord."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord, self._timer_interval_secs = coord, timer_interval_secs
        self._loop_target, self._loop_args, self._loop_kwargs = target, args or (), kwargs or {}
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.time()
                while not self._coord.wait_for_stop(next_time - time.time()):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        pass

    def stop_loop(self):
        pass

    def run_loop(self):
        if self._loop_target:
            self._loop_target(*self._loop_args, **self._loop_kwargs)
