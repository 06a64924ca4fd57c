"""The packaged recipes, run in this process as `hf-real3d train` runs them."""


def recipe_module(name: str):
    """The recipe ``name`` (``"3drft"``, ...): its module in ``hf_real3d.recipes``."""
    from hf_real3d.recipes import load_recipe

    return load_recipe(name)


def run_recipe_here(name: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """A recipe run in this process as `hf-real3d train` runs it: (exit code, stdout,
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
