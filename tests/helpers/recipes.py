"""The recipes, imported and run in this process as their ``__main__`` runs them."""

from helpers.paths import ROOT


def recipe_module(name: str):
    """``recipes/<name>.py`` imported as a module (once per session), as the library loads
    it."""
    from hf_real3d.training.pipeline import load_recipe

    return load_recipe(name, ROOT / "recipes")


def run_recipe_here(name: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """A recipe run in this process as its ``__main__`` runs it: (exit code, stdout,
    stderr)."""
    from hf_real3d.training.pipeline import run_recipe

    mod = recipe_module(name)
    capsys.readouterr()
    try:
        run_recipe(mod.main, mod.parse, argv)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
