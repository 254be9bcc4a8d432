"""``python -m pygrad program.py [args]`` (the ``pygrad`` command): runs a TensorFlow 1 program as
written, with `import tensorflow` giving pygrad (pygrad/tf_alias.py). The program runs as
``python program.py`` would run it: as ``__main__``, with ``sys.argv`` its path and arguments,
``sys.path[0]`` its directory, its exit code (``tf.app.run``'s too) the process's, and a traceback
of its own frames when it raises. ``python -m pygrad -m module [args]`` runs a module the same way."""
import os
import runpy
import sys

USAGE = """usage: python -m pygrad program.py [args ...]
       python -m pygrad -m module [args ...]

Runs a TensorFlow 1 program unchanged on pygrad: in its process `import tensorflow` (and
tensorflow.compat.v1, tensorflow.contrib.*, tensorflow.python.*, tensorflow.examples.tutorials.mnist)
gives pygrad. In a notebook, pygrad.alias_tensorflow() does the same."""


def _program_frames(tb):
    """The traceback from the program's first frame on (the runner's and runpy's frames dropped)."""
    runner = (_program_frames.__code__.co_filename, runpy.run_path.__code__.co_filename)
    while tb is not None and tb.tb_frame.f_code.co_filename in runner:
        tb = tb.tb_next
    return tb


def _run(run):
    try:
        run()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # printed as Python prints an uncaught exception, exit status 1
        tb = _program_frames(e.__traceback__)
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        return 1
    return 0


def main(argv=None):
    """Runs the program or module that argv (default sys.argv[1:]) names; returns the exit status
    (a program's own exit code leaves as its SystemExit)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    from pygrad import tf_alias
    if argv[0] == "-m":
        if len(argv) < 2:
            print("python -m pygrad: -m needs a module name\n\n" + USAGE, file=sys.stderr)
            return 2
        tf_alias.alias_tensorflow()
        sys.argv = argv[1:]
        sys.path[0] = os.getcwd()
        return _run(lambda: runpy.run_module(argv[1], run_name="__main__", alter_sys=True))
    program = argv[0]
    if not os.path.isfile(program):
        print(f"python -m pygrad: can't open file {os.path.abspath(program)!r}: no such file", file=sys.stderr)
        return 2
    tf_alias.alias_tensorflow()
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.realpath(program))
    return _run(lambda: runpy.run_path(program, run_name="__main__"))


if __name__ == "__main__":
    sys.exit(main())
