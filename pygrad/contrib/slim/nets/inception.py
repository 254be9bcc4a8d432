"""The inception nets under one name, as TF-Slim's nets.inception."""
from pygrad.contrib.slim.nets.inception_v1 import (  # noqa: F401
    inception_v1,
    inception_v1_arg_scope,
    inception_v1_base,
)
from pygrad.contrib.slim.nets.inception_v2 import (  # noqa: F401
    inception_v2,
    inception_v2_arg_scope,
    inception_v2_base,
)
from pygrad.contrib.slim.nets.inception_v3 import (  # noqa: F401
    inception_v3,
    inception_v3_arg_scope,
    inception_v3_base,
)
