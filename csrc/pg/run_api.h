// The C entry of a plan run, for Session.run's compiled path (pygrad/_run.pyx): _C exports one
// pg_RunApi in the capsule `_C.run_api` (named PG_RUN_API_CAPSULE). bind.cc defines it and
// _run.pyx reads this declaration (cdef extern from), so the struct is declared once. Plain C, for
// Cython; include Python.h first. A change of the struct, or of what its functions do, takes a new
// PG_RUN_API_VERSION: the reader checks the capsule's against its own when it is imported, so an
// _C and a _run built from different sources refuse to work together.
#pragma once

#define PG_RUN_API_VERSION 2
#define PG_RUN_API_CAPSULE "pygrad._C.run_api"

typedef struct {
  int version;  // the PG_RUN_API_VERSION of the _C that made it
  // Runs the plan at `plan` (_C.Plan.address; valid while the Plan lives) on feeds[i], the data of
  // the plan's feed i (dtype and shape checked by the caller), and copies fetch j to outs[j], with
  // the GIL released. Returns 0, or -1 with the Python error set: ValueError for a wrong count of
  // feeds or outputs, otherwise the errors of _C.Plan.run (KeyboardInterrupt at a SIGINT among them;
  // it takes no deadline).
  int (*execute)(void* plan, const void* const* feeds, Py_ssize_t num_feeds, void* const* outs,
                 Py_ssize_t num_outs);
} pg_RunApi;
