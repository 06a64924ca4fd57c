"""``hf-real3d train RECIPE [--config x.yaml] [flags]`` and ``hf-real3d predict [flags]``: the
packaged recipes (:mod:`hf_real3d.recipes`), as a clone's ``recipes/RECIPE.py`` launches
them. The recipe parses its own flags (its YAML config, then ``--config`` and flags over
it); ``accelerate launch -m hf_real3d.cli train 3drft`` runs it on several processes."""

from __future__ import annotations

import difflib

TRAINED = ("sft", "blind_ft", "3drft", "3drft_vlm")  # `hf-real3d train RECIPE`
USAGE = (f"usage: hf-real3d train RECIPE [--config FILE.yaml] [flags]\n\n"
         f"RECIPE: one of {', '.join(TRAINED)}; `hf-real3d train RECIPE --help` lists its "
         "flags, with its YAML config's settings as defaults.")


def cmd_train(argv: list[str]) -> None:
    """``hf-real3d train RECIPE ...``: the recipe's ``main`` on its flags."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        if not argv:
            raise SystemExit(2)
        return
    if argv[0] not in TRAINED:
        near = difflib.get_close_matches(argv[0], TRAINED, n=1)
        raise ValueError(f"unknown recipe {argv[0]!r}" + (f" (did you mean {near[0]!r}?)" if near
                                                          else "")
                         + f"; one of {list(TRAINED)} (predictions: hf-real3d predict)")
    run(argv[0], argv[1:], prog=f"hf-real3d train {argv[0]}")


def run(recipe: str, argv: list[str], prog: str) -> None:
    """The recipe ``recipe`` on ``argv``: its errors in one line prefixed ``prog``."""
    # the recipes import torch and the training stack (the [train] extra): only here, so
    # that a missing extra is the dispatcher's one line naming it
    from hf_real3d.recipes import load_recipe
    from hf_real3d.training.pipeline import run_recipe

    module = load_recipe(recipe)
    run_recipe(module.main, module.parse, argv, prog=prog)


def cmd_predict(argv: list[str]) -> None:
    """``hf-real3d predict ...``: the predict recipe (predictions of a trained SceneLM at every
    viewpoint) on its flags."""
    run("predict", argv, prog="hf-real3d predict")
