"""MNIST tutorial data (see input_data)."""
