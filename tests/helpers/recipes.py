"""The recipes, imported and run in this process as their ``__main__`` runs them."""

from helpers.paths import ROOT


def recipe_module(name: str):
    """``recipes/<name>.py`` imported as a module (once per session)."""
    import importlib.util
    import sys

    key = f"hf_real3d_recipe_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "recipes" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # before it runs: its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[key]


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
