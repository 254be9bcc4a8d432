"""tf.app: run(main) is absl's app.run (--help, --helpfull, --flagfile, the exit code of main) with
TF1's flag parser, which leaves unknown flags in the argv main receives."""
import sys

from pygrad.platform import flags


def _parse_flags_tolerate_undef(argv):
    return flags.FLAGS(sys.argv if argv is None else argv, known_only=True)


def run(main=None, argv=None):
    from absl import app  # (its import sets up absl's logging; only a program that runs it pays)
    main = main or sys.modules["__main__"].main
    app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)
