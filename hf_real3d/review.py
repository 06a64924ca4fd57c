"""The rotation review now lives in :mod:`hf_real3d.real3dqa.review` (``queue``,
``agreement``, ``export``); this module keeps ``from hf_real3d.review import ...`` working."""

from hf_real3d.real3dqa.review import *  # noqa: F403 - the old import path
from hf_real3d.real3dqa.review import __all__  # noqa: F401
