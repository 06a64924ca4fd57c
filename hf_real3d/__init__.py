"""hf_real3d: honest 3D spatial-reasoning evaluation and training on the Hugging Face stack.

Real-3DQA (de-biased SQA3D + viewpoint rotations + VRS), 3DSRBench (CircularEval and
FlipEval) and 3D-reweighted fine-tuning (3DR-FT).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
