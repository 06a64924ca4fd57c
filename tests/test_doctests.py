"""Every docstring example in the package runs and says what its function does. The modules
are found by walking the package (no hand-kept list); the scoring functions must carry one."""

import doctest
import importlib
import inspect
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "hf_real3d"


def _modules_with_examples() -> list[str]:
    out = []
    for f in sorted(PKG.rglob("*.py")):
        if ">>> " in f.read_text():
            parts = f.relative_to(PKG.parent).with_suffix("").parts
            out.append(".".join(parts).removesuffix(".__init__"))
    return out


MODULES = _modules_with_examples()


def test_the_walk_finds_the_scoring_modules():
    assert {"hf_real3d.scoring.exact_match", "hf_real3d.scoring.vrs",
            "hf_real3d.scoring.groups", "hf_real3d.training.modes"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed"


def test_every_public_scoring_function_has_an_example():
    scoring = importlib.import_module("hf_real3d.scoring")
    # the metric families; the array helpers and the interval are plumbing
    families = ("exact_match", "vrs", "groups")
    missing = []
    for fam in families:
        mod = importlib.import_module(f"hf_real3d.scoring.{fam}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and not name.startswith(("check_", "degenerate_")):
                if ">>> " not in (obj.__doc__ or ""):
                    missing.append(f"{fam}.{name}")
    assert not missing, f"scoring functions without an example: {missing}"
    assert set(scoring.__all__) >= {n for fam in families for n in
                                    importlib.import_module(f"hf_real3d.scoring.{fam}").__all__}
