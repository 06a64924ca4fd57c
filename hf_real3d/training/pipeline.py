"""What the recipes share beyond the steps of :mod:`hf_real3d.training.recipe`: 3DR-FT's
explicit blind-model stage (:func:`blind_stage`: reuse the saved blind model, refuse a stale
one, or say it must be trained), the recipes themselves as modules (:func:`load_recipe`,
what the demo, the tests and ``3drft.py``'s blind stage call ``main`` of) and their run loop
with one-line errors for a user's input (``run_recipe(main, parse)``: what
``accelerate launch recipes/3drft.py`` runs)."""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import torch

from hf_real3d.errors import InputError, as_flags
from hf_real3d.training.args import ScriptArguments, parse_recipe_args
from hf_real3d.training.data import TrainingData
from hf_real3d.training.recipe import _log, _read_info, _signature_diff, training_signature
from hf_real3d.training.trainer import ReweightedConfig

__all__ = ["StaleModelError", "BlindStage", "blind_stage", "RECIPES", "load_recipe",
           "end_distributed", "run_recipe"]

# the recipes: scripts beside the package in a clone (``recipes/*.py``), not inside it
RECIPES = Path(__file__).resolve().parents[2] / "recipes"


class StaleModelError(InputError):
    """A saved model was trained with other settings than the ones asked for."""


class BlindStage(NamedTuple):
    """Stage 1 of 3DR-FT: the blind model's run (``recipes/blind_ft.py``'s arguments) and
    whether it must be trained now (False: the saved one is used)."""

    script_args: ScriptArguments
    training_args: ReweightedConfig
    train: bool


def blind_stage(script_args: ScriptArguments, training_args: ReweightedConfig,
                data: TrainingData) -> BlindStage:
    """Stage 1 of 3DR-FT, for the modes that read the blind reference: the blind model the
    run asks for, in ``blind_model_path`` or ``<output_dir>/blind``, trained as
    ``blind_ft.py`` trains (``blind``, ``reweighting='none'``, this run's other settings).

    A saved blind model is reused only when its training signature (architecture, data
    fingerprint, training settings) equals the one asked for, or when the config names it
    with ``check_blind_model`` false. A stale model at a path the config names raises
    :class:`StaleModelError`; at the default path it is to be retrained, and the log says
    why.
    """
    named = script_args.blind_model_path is not None
    path = script_args.blind_model_path or str(Path(training_args.output_dir) / "blind")
    # trained without reweighting: the mode's own weight_grad does not apply to it
    blind_args = dataclasses.replace(training_args, output_dir=path, reweighting="none",
                                     weight_grad=False, resume_from_checkpoint=None)
    run = (dataclasses.replace(script_args, blind=True), blind_args)
    if (Path(path) / "config.json").is_file():
        if named and not script_args.check_blind_model:
            _log(f"stage 1/2 (blind model): using {path} as it is (check_blind_model false)")
            return BlindStage(*run, train=False)
        want = training_signature(script_args, blind_args, data, blind=True)
        diff = _signature_diff(want, _read_info(path))
        if not diff:
            _log(f"stage 1/2 (blind model): reusing {path} (same architecture, data "
                 f"{data.fingerprint} and training settings)")
            return BlindStage(*run, train=False)
        if named:
            raise StaleModelError(
                f"blind_model_path {path} was trained with other settings than this run asks "
                f"for ({'; '.join(diff[:4])}); remove it, point blind_model_path elsewhere, "
                "leave blind_model_path unset to train one into <output_dir>/blind, or set "
                "check_blind_model false to use it as it is")
        _log(f"stage 1/2 (blind model): {path} is stale ({'; '.join(diff[:4])}); retraining")
    _log(f"stage 1/2 (blind model): training into {path}")
    return BlindStage(*run, train=True)


def load_recipe(name: str, folder: str | os.PathLike | None = None) -> ModuleType:
    """``recipes/<name>.py`` as a module, loaded once per process (as
    ``hf_real3d_recipe_<name>``): the one training flow, whose ``main`` the demo, the tests
    and ``3drft.py``'s blind stage call. ``folder``: where the recipes are (default
    :data:`RECIPES`, the ``recipes/`` folder of the clone the package runs from)."""
    key = f"hf_real3d_recipe_{name}"
    if key not in sys.modules:
        path = Path(folder if folder is not None else RECIPES) / f"{name}.py"
        if not path.is_file():
            raise InputError(f"recipe {name!r}: {path} not found; the recipes are the scripts "
                             "in the recipes/ folder of a clone of hf_real3d: run from one")
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # before it runs: its dataclasses look their module up
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


def end_distributed() -> None:
    """Tear the process group down before exit (all ranks together): left to interpreter
    shutdown, gloo's threads can abort a finished run ("terminate called without an active
    exception")."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        # free the DDP wrappers now: a reducer left to interpreter shutdown destroys the gloo
        # group while holding the GIL, and joins gloo's loop thread, which waits for the GIL
        # to free a finished all-gather's tensor: a deadlock (seen in 1 of ~5 two-process
        # runs; the native stacks of the hung rank show exactly this)
        gc.collect()
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        gc.collect()


def run_recipe(main, parse=parse_recipe_args, argv=None) -> None:
    """Run a recipe's ``main`` on parsed arguments; configuration errors end the process
    with one line on stderr and exit code 2 (no traceback)."""
    try:
        script_args, training_args = parse(argv)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        main(script_args, training_args)
    except (InputError, FileNotFoundError) as err:  # a user's input: one line, no traceback
        # the library names its arguments; the recipe's user typed them as flags
        flags = [f.name for a in (script_args, training_args) for f in dataclasses.fields(a)]
        print(f"{Path(sys.argv[0]).name}: error: {as_flags(str(err), flags)}", file=sys.stderr)
        raise SystemExit(2) from None
    end_distributed()
