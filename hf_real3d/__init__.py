"""hf_real3d: honest 3D spatial-reasoning evaluation and training on the Hugging Face stack.

Real-3DQA (de-biased SQA3D + viewpoint rotations + VRS), 3DSRBench (CircularEval and
FlipEval) and 3D-reweighted fine-tuning (3DR-FT).
"""

from pathlib import Path as _Path

from hf_real3d._threads import bound_openmp_spinning as _bound_openmp_spinning

# every entry point (the command line, the recipes, a user's own script) imports this package
# before torch: OpenMP's idle spinning is bounded here, once
_bound_openmp_spinning()

__version__ = "0.1.0"

__all__ = ["__version__", "metric_path", "METRICS"]

METRICS = ("vrs", "circular_eval", "flip_eval")


def metric_path(name: str) -> str:
    """Folder of one of this package's `evaluate` modules, for ``evaluate.load(path)``.

    >>> import evaluate, hf_real3d
    >>> vrs = evaluate.load(hf_real3d.metric_path("vrs"))  # doctest: +SKIP
    """
    if name not in METRICS:
        raise ValueError(f"Expected a metric in {METRICS} but got {name!r}")
    # package data (setup.cfg), so an installed package has them; the repository's top-level
    # metrics/ is a link to this folder
    folder = _Path(__file__).resolve().parent / "_metrics" / name
    if not (folder / f"{name}.py").is_file():
        raise FileNotFoundError(
            f"metric module {name!r} not found at {folder}; reinstall hf-real3d")
    return str(folder)
