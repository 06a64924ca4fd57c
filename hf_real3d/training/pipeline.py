"""The recipes' run loop (:func:`run_recipe`: what ``hf-real3d train`` and the clone's
``accelerate launch recipes/3drft.py`` run), with one-line errors for a user's input, and the
end of a distributed run (:func:`end_distributed`)."""

from __future__ import annotations

import dataclasses
import gc
import json
import re
import sys
from pathlib import Path

import torch

from hf_real3d.errors import InputError, as_flags
from hf_real3d.training.args import parse_recipe_args

__all__ = ["end_distributed", "run_recipe"]

_NAMED = re.compile(r"`(\w+)`")  # an argument a message names


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


def run_recipe(main, parse=parse_recipe_args, argv=None, prog: str | None = None) -> None:
    """Run a recipe's ``main`` on the arguments ``parse`` reads from ``argv``; configuration
    errors end the process with one line on stderr, prefixed ``prog`` (default: the
    script's name), and exit code 2 (no traceback). A summary ``main`` returns (the
    predict recipe's) is printed as JSON."""
    prog = prog or Path(sys.argv[0]).name
    try:
        args = parse(argv)
    except (ValueError, TypeError, FileNotFoundError) as err:
        # every argument a recipe's parsing names is one of its flags
        msg = str(err)
        print(f"{prog}: error: {as_flags(msg, _NAMED.findall(msg))}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        result = main(*args)
    except (InputError, FileNotFoundError) as err:  # a user's input: one line, no traceback
        # the library names its arguments; the recipe's user typed them as flags
        flags = [f.name for a in args for f in dataclasses.fields(a)]
        print(f"{prog}: error: {as_flags(str(err), flags)}", file=sys.stderr)
        raise SystemExit(2) from None
    if isinstance(result, dict):
        print(json.dumps(result, indent=2))
    end_distributed()
