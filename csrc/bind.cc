// The only file that knows pybind11: NumPy arrays in and out, argument checks, GIL release, and
// the mapping of native errors to Python ones (ShapeError -> ValueError, DTypeError -> TypeError,
// PreconditionError -> _C.UninitializedError, StepError -> _C.StepError with its `step`, DeadlineExceeded
// -> _C.DeadlineError with its `step`, Interrupted -> what SIGINT's Python handler raises). It also
// exports the C entry of the compiled Session.run path (pygrad/_run.pyx): `_C.run_api`, a capsule
// holding the pg_RunApi of pg/run_api.h, which runs a plan on pointers the caller checked, without
// argument parsing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "pg/bfloat16.h"
#include "pg/crc32c.h"
#include "pg/parallel.h"
#include "pg/run_api.h"
#include "pg/signals.h"
#include "runtime/plan.h"

namespace py = pybind11;

namespace pg {
namespace {

DType to_dtype(int code) {
  if (code < 0 || code >= kNumDTypes) throw DTypeError("unknown dtype code " + std::to_string(code));
  return DType(code);
}

py::dtype numpy_dtype(DType dt) {
  switch (dt) {
    case DType::f32: return py::dtype::of<float>();
    case DType::f64: return py::dtype::of<double>();
    case DType::i32: return py::dtype::of<int32_t>();
    case DType::i64: return py::dtype::of<int64_t>();
    case DType::b8: return py::dtype::of<bool>();
    case DType::u8: return py::dtype::of<uint8_t>();
    case DType::i8: return py::dtype::of<int8_t>();
    case DType::i16: return py::dtype::of<int16_t>();
    case DType::u16: return py::dtype::of<uint16_t>();
    case DType::f16: return py::dtype("float16");
    case DType::bf16: return py::dtype::of<uint16_t>();  // the bits (NumPy has no bfloat16)
  }
  throw DTypeError("unknown dtype");
}

DType array_dtype(const py::array& a, const char* what) {
  if (std::string(py::str(a.dtype())) == "bfloat16") return DType::bf16;  // ml_dtypes' NumPy type
  const char kind = a.dtype().kind();
  const auto size = a.itemsize();
  if (kind == 'f') {
    if (size == 4) return DType::f32;
    if (size == 8) return DType::f64;
    if (size == 2) return DType::f16;
  } else if (kind == 'i') {
    if (size == 4) return DType::i32;
    if (size == 8) return DType::i64;
    if (size == 1) return DType::i8;
    if (size == 2) return DType::i16;
  } else if (kind == 'u') {
    if (size == 1) return DType::u8;
    if (size == 2) return DType::u16;
  } else if (kind == 'b') {
    return DType::b8;
  }
  throw DTypeError(std::string(what) + ": unsupported dtype " + std::string(py::str(a.dtype())));
}

Shape to_shape(const std::vector<int64_t>& dims) {
  if (dims.size() > size_t(kMaxDims)) throw ShapeError("rank above 8 is not supported");
  Shape s;
  for (int64_t d : dims) {
    if (d < 0) throw ShapeError("negative dimension in shape");
    s.dim[s.ndim++] = d;
  }
  return s;
}

Shape array_shape(const py::array& a) {
  return to_shape(std::vector<int64_t>(a.shape(), a.shape() + a.ndim()));
}

std::vector<py::ssize_t> dims_of(const Shape& s) { return std::vector<py::ssize_t>(s.dim, s.dim + s.ndim); }

// A C-contiguous, aligned array, checked; `writable` also requires a writable buffer.
py::array checked_array(const py::handle& h, const char* what, bool writable) {
  if (!py::isinstance<py::array>(h)) throw py::type_error(std::string(what) + ": expected a numpy array");
  auto a = py::reinterpret_borrow<py::array>(h);
  if (!(a.flags() & py::array::c_style)) throw ShapeError(std::string(what) + ": array must be C-contiguous");
  if (reinterpret_cast<uintptr_t>(a.data()) % uintptr_t(a.itemsize() ? a.itemsize() : 1) != 0)
    throw ShapeError(std::string(what) + ": array must be aligned");
  if (writable && !a.writeable()) throw ShapeError(std::string(what) + ": array must be writable");
  return a;
}

Attrs to_attrs(const py::dict& d) {
  Attrs attrs;
  for (auto item : d) {
    auto key = py::cast<std::string>(item.first);
    py::handle v = item.second;
    if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v))
      attrs.values[key] = py::cast<int64_t>(v);
    else if (py::isinstance<py::float_>(v))
      attrs.values[key] = py::cast<double>(v);
    else if (py::isinstance<py::str>(v))
      attrs.values[key] = py::cast<std::string>(v);
    else
      attrs.values[key] = py::cast<std::vector<int64_t>>(v);
  }
  return attrs;
}

// Operands arrive from Python as (buffer, dtype code, shape) tuples.
Operand to_operand(const py::handle& h) {
  auto t = py::cast<py::tuple>(h);
  if (t.size() != 3) throw py::value_error("operand must be (buffer, dtype, shape)");
  return {py::cast<int>(t[0]), to_dtype(py::cast<int>(t[1])), to_shape(py::cast<std::vector<int64_t>>(t[2]))};
}

std::vector<Operand> to_operands(const py::list& l) {
  std::vector<Operand> ops;
  for (auto h : l) ops.push_back(to_operand(h));
  return ops;
}

// Copies rows between a variable and an array (VarStore.copy_rows): an embedding's touched rows.
void copy_rows(VarStore& s, int id, const py::handle& indices, const py::handle& rows, bool into_variable) {
  py::array idx = checked_array(indices, "VarStore.copy_rows", false);
  py::array r = checked_array(rows, "VarStore.copy_rows", !into_variable);
  const Shape& shape = s.shape(id);
  if (array_dtype(idx, "VarStore.copy_rows") != DType::i64 || idx.ndim() != 1)
    throw DTypeError("VarStore.copy_rows: indices must be a vector of int64");
  const int64_t n = idx.shape(0);
  if (shape.ndim < 1 || array_dtype(r, "VarStore.copy_rows") != s.dtype(id) || r.ndim() != shape.ndim ||
      r.shape(0) != n)
    throw ShapeError("VarStore.copy_rows: rows must be " + std::string(dtype_name(s.dtype(id))) + " of shape [" +
                     std::to_string(n) + "] + the rows of " + shape.str());
  for (int d = 1; d < shape.ndim; ++d)
    if (r.shape(d) != shape[d]) throw ShapeError("VarStore.copy_rows: rows do not match the variable " + shape.str());
  const int64_t* ix = static_cast<const int64_t*>(idx.data());
  for (int64_t j = 0; j < n; ++j)
    if (ix[j] < 0 || ix[j] >= shape[0])
      throw py::index_error("VarStore.copy_rows: row " + std::to_string(ix[j]) + " is outside [0, " +
                            std::to_string(shape[0]) + ")");
  if (!s.initialized(id)) throw py::value_error("VarStore.copy_rows: the variable is not initialized");
  if (n == 0) return;
  const size_t row = size_t(shape.numel() / shape[0] * dtype_size(s.dtype(id)));
  char* var = static_cast<char*>(s.data(id));
  char* arr = static_cast<char*>(const_cast<void*>(r.data()));
  py::gil_scoped_release release;
  for (int64_t j = 0; j < n; ++j) {
    if (into_variable)
      std::memcpy(var + size_t(ix[j]) * row, arr + size_t(j) * row, row);
    else
      std::memcpy(arr + size_t(j) * row, var + size_t(ix[j]) * row, row);
  }
}

// Runs one kernel on NumPy arrays: inputs and outputs are buffers 0..n-1 of a throwaway frame.
void call_kernel(const std::string& kernel, const py::list& inputs, const py::list& outputs, const py::dict& attrs) {
  KernelCall call{kernel, {}, {}, to_attrs(attrs)};
  Frame frame;
  std::vector<py::array> keep;
  auto add = [&](const py::handle& h, std::vector<Operand>& list, bool writable) {
    py::array a = checked_array(h, kernel.c_str(), writable);
    list.push_back({int(frame.ptr.size()), array_dtype(a, kernel.c_str()), array_shape(a)});
    frame.ptr.push_back(const_cast<void*>(a.data()));
    keep.push_back(a);
  };
  for (auto h : inputs) add(h, call.in, false);
  for (auto h : outputs) add(h, call.out, true);
  Step step = build_step(call);
  use_signal_stack();  // as Plan::execute does (pg/signals.h)
  py::gil_scoped_release release;
  step(frame);
}

py::list run_plan(Plan& plan, const py::list& feeds, int64_t deadline_ns, std::vector<StepTrace>* trace = nullptr) {
  const int n = plan.num_feeds();
  if (int(feeds.size()) != n)
    throw py::value_error("plan expects " + std::to_string(n) + " feeds, got " + std::to_string(feeds.size()));
  std::vector<const void*> feed_ptrs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Operand& want = plan.feed(i);
    py::array a = checked_array(feeds[size_t(i)], "feed", false);
    if (array_dtype(a, "feed") != want.dtype)
      throw DTypeError("feed " + std::to_string(i) + ": expected " + dtype_name(want.dtype));
    if (array_shape(a) != want.shape)
      throw ShapeError("feed " + std::to_string(i) + ": expected shape " + want.shape.str() + ", got " +
                       array_shape(a).str());
    feed_ptrs[size_t(i)] = a.data();
  }
  py::list result;
  std::vector<void*> out_ptrs;
  for (const Operand& o : plan.fetches()) {
    py::array a(numpy_dtype(o.dtype), dims_of(o.shape));
    out_ptrs.push_back(a.mutable_data());
    result.append(a);
  }
  {
    py::gil_scoped_release release;
    plan.execute(feed_ptrs.data(), feed_ptrs.size(), out_ptrs.data(), out_ptrs.size(), deadline_ns, trace);
  }
  return result;
}

// run_plan, and the steps that ran as an int64 array of rows (step, thread, start ns, end ns).
py::tuple run_plan_traced(Plan& plan, const py::list& feeds, int64_t deadline_ns) {
  std::vector<StepTrace> trace;
  trace.reserve(size_t(plan.num_steps()));
  py::list outs = run_plan(plan, feeds, deadline_ns, &trace);
  py::array_t<int64_t> rows({py::ssize_t(trace.size()), py::ssize_t(4)});
  auto r = rows.mutable_unchecked<2>();
  for (size_t k = 0; k < trace.size(); ++k) {
    const StepTrace& t = trace[k];
    r(py::ssize_t(k), 0) = t.step;
    r(py::ssize_t(k), 1) = t.thread;
    r(py::ssize_t(k), 2) = t.start_ns;
    r(py::ssize_t(k), 3) = t.end_ns;
  }
  return py::make_tuple(outs, rows);
}

// The Python exceptions of _C's own classes (set when the module is made).
PyObject* uninitialized_error = nullptr;
PyObject* step_error = nullptr;
PyObject* deadline_error = nullptr;

// Sets the Python error cls(what) with the attribute `step`.
void set_step_error(PyObject* cls, const char* what, int step_index) {
  PyObject* err = PyObject_CallFunction(cls, "s", what);
  if (!err) return;
  PyObject* step = PyLong_FromLong(step_index);
  if (step && PyObject_SetAttrString(err, "step", step) == 0) PyErr_SetObject(cls, err);
  Py_XDECREF(step);
  Py_DECREF(err);
}

// Sets the Python error for the native exception being handled: pygrad's errors as the module
// docstring says, the standard ones as pybind11 maps them. Call it inside a catch block.
void set_python_error() {
  try {
    throw;
  } catch (const DTypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const PreconditionError& e) {
    PyErr_SetString(uninitialized_error, e.what());
  } catch (const StepError& e) {
    set_step_error(step_error, e.what(), e.step);
  } catch (const DeadlineExceeded& e) {
    set_step_error(deadline_error, e.what(), e.step);
  } catch (const Interrupted&) {  // Python runs its SIGINT handler now: KeyboardInterrupt
    if (PyErr_CheckSignals() == 0) PyErr_SetNone(PyExc_KeyboardInterrupt);
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "std::bad_alloc");
  } catch (const std::invalid_argument& e) {  // ShapeError among them
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::out_of_range& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown native error");
  }
}

// run_api's execute (pg/run_api.h).
int execute_plan(void* plan, const void* const* feeds, Py_ssize_t num_feeds, void* const* outs, Py_ssize_t num_outs) {
  PyThreadState* thread = PyEval_SaveThread();
  try {
    static_cast<Plan*>(plan)->execute(feeds, size_t(num_feeds), outs, size_t(num_outs));
  } catch (...) {
    PyEval_RestoreThread(thread);
    set_python_error();
    return -1;
  }
  PyEval_RestoreThread(thread);
  return 0;
}

const pg_RunApi run_api{PG_RUN_API_VERSION, &execute_plan};

}  // namespace
}  // namespace pg

PYBIND11_MODULE(_C, m) {
  using namespace pg;
  m.doc() = "pygrad native kernels and executor";
  static py::exception<PreconditionError> uninitialized(m, "UninitializedError", PyExc_RuntimeError);
  static py::exception<StepError> step(m, "StepError", PyExc_ValueError);
  uninitialized_error = uninitialized.ptr();
  step_error = step.ptr();
  static py::exception<DeadlineExceeded> deadline(m, "DeadlineError", PyExc_RuntimeError);
  deadline_error = deadline.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DTypeError&) {  // pygrad's own; the rest go on to pybind11's translators
      set_python_error();
    } catch (const PreconditionError&) {
      set_python_error();
    } catch (const StepError&) {
      set_python_error();
    } catch (const DeadlineExceeded&) {
      set_python_error();
    } catch (const Interrupted&) {
      set_python_error();
    }
  });
  m.attr("run_api") = py::capsule(&run_api, PG_RUN_API_CAPSULE);

  py::dict dtypes;
  for (int code = 0; code < kNumDTypes; ++code) dtypes[dtype_name(DType(code))] = code;
  m.attr("dtypes") = dtypes;
  m.attr("max_rank") = kMaxDims;
  m.def("kernel_names", &kernel_names, "Every kernel in kernels.def, in order.");
  m.def("cpu_has_bfloat16", &cpu_has_bfloat16, "Whether oneDNN runs bfloat16 products on this CPU's instructions.");
  m.def("elementwise_ops", &elementwise_ops, "The ops of each elementwise kernel, as pg/elementwise.def lists them.");
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "Threads for pygrad's parallel loops and its matrix products together.");
  m.def("get_num_threads", &get_num_threads);
  m.def("watch_sigint", &watch_sigint,
        "Runs on the calling thread stop between steps at a SIGINT, raising what SIGINT's Python handler raises.");
  m.def("crc32c", [](const py::buffer& data, uint32_t crc) {
    py::buffer_info b = data.request();
    if (!PyBuffer_IsContiguous(b.view(), 'C')) throw py::value_error("crc32c: the buffer must be contiguous");
    const size_t n = size_t(b.size) * size_t(b.itemsize);
    py::gil_scoped_release release;
    return crc32c(crc, b.ptr, n);
  }, py::arg("data"), py::arg("crc") = 0, "CRC-32C of a bytes-like object, extending `crc`.");
  m.def("call", &call_kernel, py::arg("kernel"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict(),
        "Run one kernel on C-contiguous NumPy arrays; outputs are written in place.");

  py::class_<VarStore, std::shared_ptr<VarStore>>(m, "VarStore")
      .def(py::init<>())
      .def("add", [](VarStore& s, const std::string& name, int dtype, const std::vector<int64_t>& shape) {
        return s.add(name, to_dtype(dtype), to_shape(shape));
      })
      .def("__len__", &VarStore::size)
      .def("initialized", &VarStore::initialized)
      .def("set_initialized", &VarStore::set_initialized)
      .def("read", [](const VarStore& s, int id) {
        py::array a(numpy_dtype(s.dtype(id)), dims_of(s.shape(id)));
        std::memcpy(a.mutable_data(), s.data(id), size_t(a.nbytes()));
        return a;
      })
      .def("copy_rows", &copy_rows, py::arg("id"), py::arg("indices"), py::arg("rows"), py::arg("into_variable"),
           "Row j of rows (C-contiguous, [n] + the variable's row shape) from or into row indices[j] of the "
           "variable (int64 indices, each checked), with the GIL released.")
      .def("write", [](VarStore& s, int id, const py::handle& value) {
        py::array a = checked_array(value, "VarStore.write", false);
        if (array_dtype(a, "VarStore.write") != s.dtype(id) || array_shape(a) != s.shape(id))
          throw ShapeError("VarStore.write: value must be " + std::string(dtype_name(s.dtype(id))) + " of shape " +
                           s.shape(id).str());
        {
          py::gil_scoped_release release;
          std::memcpy(s.data(id), a.data(), size_t(a.nbytes()));
        }
        s.set_initialized(id, true);
      })
      .def("place", [](VarStore& s, int id, const py::handle& array) {
        py::array a = checked_array(array, "VarStore.place", true);
        if (array_dtype(a, "VarStore.place") != s.dtype(id) || array_shape(a) != s.shape(id))
          throw ShapeError("VarStore.place: variable '" + s.name(id) + "' is " + dtype_name(s.dtype(id)) +
                           " of shape " + s.shape(id).str() + ", the array " + dtype_name(array_dtype(a, "")) +
                           " of shape " + array_shape(a).str());
        // The store keeps the array (and so its memory) alive; it may let go of it without the GIL.
        std::shared_ptr<void> owner(new py::object(a), [](void* p) {
          py::gil_scoped_acquire gil;
          delete static_cast<py::object*>(p);
        });
        s.place(id, a.mutable_data(), a.nbytes(), std::move(owner));
      }, "Moves a variable into the memory of array (its dtype and shape, C-contiguous, 64-byte aligned, "
         "writable), which the store keeps alive: its value is copied there, and plans read and update it "
         "there. Only before a plan has used the variable.");

  py::class_<Arenas, std::shared_ptr<Arenas>>(m, "Arenas")
      .def(py::init<>())
      .def_property_readonly("free_bytes", &Arenas::free_bytes);

  py::class_<Plan>(m, "Plan")
      .def(py::init<std::shared_ptr<VarStore>, std::shared_ptr<Arenas>>())
      .def("add_feed", [](Plan& p, int dtype, const std::vector<int64_t>& shape) {
        return p.add_feed(to_dtype(dtype), to_shape(shape));
      })
      .def("add_const", [](Plan& p, const py::handle& value) {
        py::array a = checked_array(value, "Plan.add_const", false);
        return p.add_const(array_dtype(a, "Plan.add_const"), array_shape(a), a.data());
      }, "Adds a constant without copying it: keep the array alive, unchanged, while the plan exists.")
      .def("add_var", &Plan::add_var)
      .def("add_temp", &Plan::add_temp)
      .def("add_step", [](Plan& p, const std::string& kernel, const py::list& in, const py::list& out,
                          const py::dict& attrs, int initializes_var) {
        p.add_step(KernelCall{kernel, to_operands(in), to_operands(out), to_attrs(attrs)}, initializes_var);
      }, py::arg("kernel"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"), py::arg("initializes_var") = -1)
      .def("add_jump", &Plan::add_jump, py::arg("target"), py::arg("cond_buffer") = -1,
           "A step that continues at `target`: always, or when the bool scalar in cond_buffer is false.")
      .def("set_target", &Plan::set_target)
      .def("require_initialized", &Plan::require_initialized)
      .def("set_fetches", [](Plan& p, const py::list& fetches) { p.set_fetches(to_operands(fetches)); })
      .def_property_readonly("num_steps", &Plan::num_steps)
      .def_property_readonly("num_feeds", &Plan::num_feeds)
      .def_property_readonly("arena_bytes", &Plan::arena_bytes)
      .def_property_readonly("address", [](Plan& p) { return reinterpret_cast<uintptr_t>(&p); },
                             "The plan's address, for run_api's execute (valid while the plan lives).")
      .def_property_readonly("fetch_specs", [](const Plan& p) {
        py::list specs;
        for (const Operand& o : p.fetches()) specs.append(py::make_tuple(int(o.dtype), py::tuple(py::cast(dims_of(o.shape)))));
        return specs;
      }, "(dtype code, shape) of each fetch, in order.")
      .def("run", [](Plan& p, const py::list& feeds, int64_t deadline_ns) { return run_plan(p, feeds, deadline_ns); },
           py::arg("feeds"), py::arg("deadline_ns") = 0,
           "Execute the plan once; returns one new array per fetch. It stops with _C.DeadlineError (its `step`)\n"
           "once monotonic_ns() passes deadline_ns (0: none), and with KeyboardInterrupt at a SIGINT (watch_sigint).")
      .def("run_traced", &run_plan_traced, py::arg("feeds"), py::arg("deadline_ns") = 0,
           "As run, timing each step: (the fetches' arrays, an int64 array with a row (step index, OS thread id,\n"
           "start, end) per step run, in the order they ran; times in monotonic_ns(), Python's time.monotonic_ns()).");
}
