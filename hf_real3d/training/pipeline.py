"""The staged training pipeline and the recipes' run loop: the default dataset built when
absent, 3DR-FT's explicit blind-model stage, and one-line errors for configuration mistakes
(``run_recipe(main, parse)``: what ``accelerate launch recipes/3drft.py`` runs)."""

from __future__ import annotations

import dataclasses
import gc
import sys
from pathlib import Path

import torch

from hf_real3d.errors import InputError
from hf_real3d.training.args import ScriptArguments, parse_recipe_args
from hf_real3d.training.data import TrainingData
from hf_real3d.training.modes import mode
from hf_real3d.training.recipe import (
    _log,
    _read_info,
    _signature_diff,
    load_training_data,
    train_model,
    training_signature,
)
from hf_real3d.training.trainer import ReweightedConfig, ReweightedTrainer

__all__ = ["StaleModelError", "ensure_blind_model", "train_3drft",
           "end_distributed", "run_recipe"]


class StaleModelError(InputError):
    """A saved model was trained with other settings than the ones asked for."""


def ensure_blind_model(script_args: ScriptArguments, training_args: ReweightedConfig,
                       data: TrainingData) -> str:
    """Stage 1 of 3DR-FT (``paper``): the blind model the config asks for.

    A saved blind model is reused only when its training signature (architecture, data
    fingerprint, training settings) equals the one asked for. A stale model at a path the
    config names raises :class:`StaleModelError`; at the default path
    (``<output_dir>/blind``) it is retrained, and the log says why.
    """
    named = script_args.blind_model_path is not None
    path = script_args.blind_model_path or str(Path(training_args.output_dir) / "blind")
    blind_args = dataclasses.replace(training_args, output_dir=path, reweighting="none",
                                     resume_from_checkpoint=None)
    want = training_signature(script_args, blind_args, data, blind=True)
    if (Path(path) / "config.json").is_file():
        diff = _signature_diff(want, _read_info(path))
        if not diff:
            _log(f"stage 1/2 (blind model): reusing {path} (same architecture, data "
                 f"{data.fingerprint} and training settings)")
            return path
        if named:
            raise StaleModelError(
                f"blind_model_path {path} was trained with other settings than this run asks "
                f"for ({'; '.join(diff[:4])}); remove it, point blind_model_path elsewhere, or "
                "leave blind_model_path unset to train one into <output_dir>/blind")
        _log(f"stage 1/2 (blind model): {path} is stale ({'; '.join(diff[:4])}); retraining")
    _log(f"stage 1/2 (blind model): training into {path}")
    train_model(script_args, blind_args, data=data, blind=True, stage="stage 1/2 blind")
    return path


def train_3drft(script_args: ScriptArguments, training_args: ReweightedConfig
                ) -> ReweightedTrainer:
    """``recipes/3drft.py``: for the weightings that read the blind reference (``paper``,
    ``prior``, ``excess``, ``paper_normalised``) the blind model first (stage 1, explicit),
    then 3DR-FT (stage 2); ``official``, ``cal`` and ``none`` train directly."""
    with training_args.main_process_first(desc="dataset"):
        data = load_training_data(script_args)
    if mode(training_args.reweighting).needs_blind:
        script_args = dataclasses.replace(
            script_args, blind_model_path=ensure_blind_model(script_args, training_args, data))
        return train_model(script_args, training_args, data=data, blind=False,
                           stage="stage 2/2 3DR-FT")
    return train_model(script_args, training_args, data=data, blind=False)


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
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    end_distributed()
