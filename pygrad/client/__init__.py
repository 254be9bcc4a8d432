"""TF's tensorflow.python.client helpers that TF1 programs import directly: timeline."""
