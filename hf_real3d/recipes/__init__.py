"""The training flows, each readable top to bottom as trl's ``trl/scripts/sft.py``: ``parse``
(its YAML config in ``configs/``, then ``--config`` and flags over it), ``main`` (data, model,
trainer, train, save) and the launch command in its docstring.

- ``sft`` (:mod:`.sft`): SceneLM with its 3D input, no reweighting;
- ``blind_ft`` (:mod:`.blind_ft`): the same SceneLM without its 3D input (text only);
- ``3drft`` (:mod:`.threedrft`): 3DR-FT, its blind model first for the modes that read one;
- ``3drft_vlm`` (:mod:`.threedrft_vlm`): 3DR-FT of a Hugging Face VLM on rendered views;
- ``predict`` (:mod:`.predict`): predictions of a trained SceneLM at every viewpoint.

They ship in the package, so a wheel runs them as a clone does: ``hf-real3d train 3drft``,
``accelerate launch -m hf_real3d.cli train 3drft`` (several processes), a clone's launcher
``accelerate launch recipes/3drft.py``, or from Python::

    from hf_real3d.recipes import threedrft

    trainer = threedrft.main(*threedrft.parse(["--max_steps", "2"]))

The demo and the tests train through the same ``main`` functions (:func:`load_recipe`).
This module imports no training stack: a recipe's own module does, when it is loaded.
"""

from __future__ import annotations

import difflib
import importlib
from types import ModuleType

from hf_real3d.errors import InputError

__all__ = ["RECIPES", "load_recipe"]

# a recipe's name (what a user types: `hf-real3d train 3drft`) -> its module here
RECIPES = {"sft": "sft", "blind_ft": "blind_ft", "3drft": "threedrft",
           "3drft_vlm": "threedrft_vlm", "predict": "predict"}


def load_recipe(name: str) -> ModuleType:
    """The recipe ``name`` (``"3drft"``, ...): its module, ``hf_real3d.recipes.<module>``."""
    if name not in RECIPES:
        near = difflib.get_close_matches(name, list(RECIPES), n=1)
        raise InputError(f"unknown recipe {name!r}; "
                         + (f"did you mean {near[0]!r}?" if near else f"one of {list(RECIPES)}"))
    return importlib.import_module(f"hf_real3d.recipes.{RECIPES[name]}")
