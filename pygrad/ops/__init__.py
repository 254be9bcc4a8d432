"""Op families. Each op's shape rule, gradient and lowering sit together in its family file."""
