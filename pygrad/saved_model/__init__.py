"""tf.saved_model (TF1's API): SavedModel directories written with SavedModelBuilder or
simple_save and read with loader.load, their signatures (signature_def_utils, utils) and the
standard tags, keys and file names."""
from pygrad.saved_model import (builder, constants, loader, signature_constants, signature_def_utils,  # noqa: F401
                                tag_constants, utils)
from pygrad.saved_model.builder import SavedModelBuilder
from pygrad.saved_model.loader import contains_saved_model, load, maybe_saved_model_directory  # noqa: F401
from pygrad.saved_model.signature_constants import *  # noqa: F401,F403
from pygrad.saved_model.signature_def_utils import (build_signature_def, classification_signature_def,  # noqa: F401
                                                    is_valid_signature, predict_signature_def,
                                                    regression_signature_def)
from pygrad.saved_model.tag_constants import *  # noqa: F401,F403
from pygrad.saved_model.utils import build_tensor_info, get_tensor_from_tensor_info  # noqa: F401

Builder = SavedModelBuilder


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """A SavedModel of session's graph and variables for serving: tag "serve", one predict
    signature "serving_default" of {name: tensor} inputs and outputs, devices cleared."""
    from pygrad.graph import get_default_graph
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session, tags=[tag_constants.SERVING],
        signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                           predict_signature_def(inputs, outputs)},
        assets_collection=get_default_graph().get_collection("asset_filepaths"), main_op=legacy_init_op,
        clear_devices=True)
    b.save()
