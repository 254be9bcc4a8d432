"""Tutorial helpers, mirroring tensorflow.examples.tutorials."""
