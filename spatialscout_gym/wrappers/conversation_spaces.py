"""Moved to :mod:`spatialscout_gym.conversation.spaces`. This import path works for one release and warns
(``DeprecationWarning``); import from the new path."""

import importlib
import sys
import warnings

_MOVED_TO = "spatialscout_gym.conversation.spaces"
warnings.warn(f"{__name__} moved to {_MOVED_TO}; import it from there (the old path goes in the next "
              "release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module(_MOVED_TO)
