# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Session.run, compiled: BaseSession.run is `run` below, an accelerator of the session's
run_general that uses only the session's documented attributes (BaseSession's docstring).

It takes the common run in C: fetches that are one Tensor, or a flat list or tuple of Tensors and
Operations, of the session's graph; a feed_dict (a dict) whose keys are Tensors of that graph and
whose values are arrays of the tensor's dtype (C-contiguous and aligned: bound without a copy),
Python floats and ints that a float32, float64, int32 or int64 tensor holds (converted in place,
no array made), or anything else the session's convert_feed turns into an array; a graph without
host ops; and a plan already built for that signature that has an `entry` (below). The plan is
looked up with the session's PlanCache's get, by its key (PlanCache.key) built here in C, and
runs through _C's C entry (pg/run_api.h) on the feeds' data pointers; the fetched values come
back as new arrays, and as NumPy scalars for 0-d ones.

Everything else goes to the session's run_general, which defines what a run does: other fetch
or feed structures, the first run of a signature (which builds and caches its plan), plans with
values held in Python, and the errors (a refused value, key or fetch raises there, and a plan
that fails maps to TF's error through the session's run_error). This file only recognises the
common case and does the same work in fewer instructions.
"""
from libc.math cimport fabs, isfinite
from libc.stdint cimport int32_t, int64_t, uintptr_t
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
cimport numpy as cnp

import numpy as np

from pygrad import _C
from pygrad.graph import Operation, Tensor

cdef extern from "numpy/arrayobject.h":
    object PyArray_Scalar(void* data, cnp.dtype descr, object base)

cnp.import_array()

cdef extern from "pg/run_api.h":
    int PG_RUN_API_VERSION
    const char* PG_RUN_API_CAPSULE
    ctypedef struct pg_RunApi:
        int version
        int (*execute)(void* plan, const void* const* feeds, Py_ssize_t num_feeds, void* const* outs,
                       Py_ssize_t num_outs) except -1

cdef const pg_RunApi* api = <const pg_RunApi*>PyCapsule_GetPointer(_C.run_api, PG_RUN_API_CAPSULE)
if api.version != PG_RUN_API_VERSION:
    raise ImportError(f"pygrad._run expects version {PG_RUN_API_VERSION} of _C.run_api, got {api.version}: "
                      f"rebuild pygrad")

cdef enum:
    MAX_VALUES = 16  # at most this many feeds and 0-d fetches on this path (their values live on the C stack)
cdef double FLOAT32_MAX = float(np.finfo(np.float32).max)
cdef int64_t EXACT_IN_DOUBLE = 2 ** 53
cdef tuple SCALAR_SHAPE = ()


cdef class _Fetch:
    """One fetch of a plan: its dtype and shape, to make the array (or scalar) it is copied to."""
    cdef int typenum
    cdef int ndim
    cdef cnp.npy_intp dims[8]
    cdef cnp.dtype descr


cdef class _Entry:
    """What this path needs of a CompiledRun, in C: the native plan's address (the CompiledRun
    keeps the plan alive and holds this entry), its feed count and fetches, and where each
    element's value is among the fetches (None for an op)."""
    cdef void* plan
    cdef Py_ssize_t num_feeds
    cdef list fetches
    cdef tuple fetch_index


def entry(compiled):
    """This path's record of compiled (a lowering.CompiledRun of an all-native plan), from the data
    lowering computed: the `fast` factory the session gives compile_run. None when the plan has
    more 0-d fetches or fetches than this path holds (the Python path then runs it)."""
    cdef _Entry e = _Entry()
    cdef _Fetch f
    cdef Py_ssize_t i
    if compiled.num_scalars > MAX_VALUES or len(compiled.fetch_shapes) > MAX_VALUES * 4:
        return None
    e.plan = <void*><uintptr_t>compiled.address
    e.num_feeds = compiled.num_feeds
    e.fetches = []
    for dtype, shape in zip(compiled.fetch_dtypes, compiled.fetch_shapes):
        f = _Fetch()
        f.descr = dtype
        f.typenum = f.descr.num
        f.ndim = len(shape)
        for i in range(f.ndim):
            f.dims[i] = shape[i]
        e.fetches.append(f)
    e.fetch_index = tuple(compiled.fetch_index)
    return e


cdef inline bint _scalar_feed(object value, int typenum, char* out):
    """Writes a Python float or int fed to a scalar of typenum (float32, float64, int32, int64) to
    out as NumPy's conversion would; False when this path does not take it (the Python path then
    converts it, or refuses it with TF's error)."""
    cdef double d
    cdef long long i
    cdef int overflow = 0
    kind = type(value)
    if kind is float:
        d = value
        if typenum == cnp.NPY_FLOAT:
            if isfinite(d) and fabs(d) > FLOAT32_MAX:
                return False
            (<float*>out)[0] = <float>d
            return True
        if typenum == cnp.NPY_DOUBLE:
            (<double*>out)[0] = d
            return True
        return False
    if kind is int:
        i = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow:
            return False
        if typenum == cnp.NPY_INT32 and -2147483648 <= i <= 2147483647:
            (<int32_t*>out)[0] = <int32_t>i
        elif typenum == cnp.NPY_INT64:
            (<int64_t*>out)[0] = <int64_t>i
        elif (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE) and -EXACT_IN_DOUBLE <= i <= EXACT_IN_DOUBLE:
            if typenum == cnp.NPY_FLOAT:
                (<float*>out)[0] = <float><double>i
            else:
                (<double*>out)[0] = <double>i
        else:
            return False
        return True
    return False


def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    """Runs what fetches need once; returns their values in the structure of fetches."""
    cdef const void* feed_ptrs[MAX_VALUES]
    cdef double feed_values[MAX_VALUES]  # Python numbers converted to the fed dtype
    cdef void* out_ptrs[MAX_VALUES * 4]
    cdef double out_values[MAX_VALUES]  # 0-d fetches, before they become NumPy scalars
    cdef Py_ssize_t n, i, j, k
    cdef cnp.ndarray arr
    cdef cnp.npy_intp* dims
    cdef _Entry entry
    cdef _Fetch f
    cdef object d, shape
    if self.closed:
        raise RuntimeError("Attempted to use a closed Session.")
    graph = self.graph
    if graph.host_ops or options is not None:
        return self.run_general(fetches, feed_dict, options, run_metadata)
    kind = type(fetches)
    # (A Tensor's graph is its op's: read through the slot, not the property.)
    if kind is Tensor:
        if fetches.op.graph is not graph:
            return self.run_general(fetches, feed_dict)
        elements = (fetches,)
    elif kind is list or kind is tuple:
        for e in fetches:
            if type(e) is Tensor:
                if e.op.graph is not graph:
                    return self.run_general(fetches, feed_dict)
            elif type(e) is not Operation or e.graph is not graph:
                return self.run_general(fetches, feed_dict)
        elements = tuple(fetches)
    else:
        return self.run_general(fetches, feed_dict)

    # The feeds: their tensors, shapes (of the plan cache's key) and data pointers; keep holds the
    # arrays (the feed_dict's or converted ones) until the run ends.
    if feed_dict is None or (type(feed_dict) is dict and len(<dict>feed_dict) == 0):
        n = 0
    elif type(feed_dict) is dict and len(<dict>feed_dict) <= MAX_VALUES:
        n = len(<dict>feed_dict)
    else:
        return self.run_general(fetches, feed_dict)
    tensors = PyTuple_New(n)
    shapes = PyTuple_New(n)
    keep = []
    i = 0
    if n:
        for key, value in (<dict>feed_dict).items():
            if type(key) is not Tensor or key.op.graph is not graph:
                return self.run_general(fetches, feed_dict)
            want = key.dtype.np
            if (<cnp.dtype>want).kind == c'O':  # strings: held in Python
                return self.run_general(fetches, feed_dict)
            if type(value) is not cnp.ndarray:
                if _scalar_feed(value, (<cnp.dtype>want).num, <char*>&feed_values[i]):
                    feed_ptrs[i] = &feed_values[i]
                    Py_INCREF(key)
                    PyTuple_SET_ITEM(tensors, i, key)
                    Py_INCREF(SCALAR_SHAPE)
                    PyTuple_SET_ITEM(shapes, i, SCALAR_SHAPE)
                    i += 1
                    continue
                value = self.convert_feed(key, value)
            elif not (<object>cnp.PyArray_DESCR(<cnp.ndarray>value) is want or
                      <object>cnp.PyArray_DESCR(<cnp.ndarray>value) == want) \
                    or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>value) \
                    or not cnp.PyArray_ISALIGNED(<cnp.ndarray>value):
                value = self.convert_feed(key, value)  # another dtype, or strided: converted or copied
            if type(value) is not cnp.ndarray:
                return self.run_general(fetches, feed_dict)
            arr = <cnp.ndarray>value
            keep.append(value)
            feed_ptrs[i] = cnp.PyArray_DATA(arr)
            dims = cnp.PyArray_DIMS(arr)
            shape = PyTuple_New(cnp.PyArray_NDIM(arr))
            for k in range(cnp.PyArray_NDIM(arr)):
                d = dims[k]
                Py_INCREF(d)
                PyTuple_SET_ITEM(shape, k, d)
            Py_INCREF(key)
            PyTuple_SET_ITEM(tensors, i, key)
            Py_INCREF(shape)
            PyTuple_SET_ITEM(shapes, i, shape)
            i += 1

    compiled = self.plans.get((elements, tensors, shapes))  # PlanCache.key(elements, tensors, shapes)
    if compiled is None:
        return self.run_general(fetches, feed_dict)  # (builds and caches the plan)
    fast = compiled.fast
    if fast is None:  # (values held in Python, or more than this path holds)
        return self.run_general(fetches, feed_dict)
    entry = <_Entry>fast
    if entry.num_feeds != n:
        return self.run_general(fetches, feed_dict)

    outs = []
    k = 0
    for j in range(len(entry.fetches)):
        f = <_Fetch>entry.fetches[j]
        if f.ndim == 0:
            out_ptrs[j] = &out_values[k]
            k += 1
            outs.append(None)
        else:
            arr = cnp.PyArray_EMPTY(f.ndim, f.dims, f.typenum, 0)
            out_ptrs[j] = cnp.PyArray_DATA(arr)
            outs.append(arr)
    try:
        api.execute(entry.plan, feed_ptrs, n, out_ptrs, len(entry.fetches))
    except (_C.UninitializedError, MemoryError, _C.StepError) as e:
        raise self.run_error(compiled, e) from None
    k = 0
    for j in range(len(entry.fetches)):
        f = <_Fetch>entry.fetches[j]
        if f.ndim == 0:
            outs[j] = PyArray_Scalar(&out_values[k], f.descr, None)
            k += 1

    if kind is Tensor:
        return outs[<Py_ssize_t>entry.fetch_index[0]]
    values = [outs[<Py_ssize_t>i_] if i_ is not None else None for i_ in entry.fetch_index]
    return values if kind is list else tuple(values)
