"""The demo: the Real-3DQA paper's story, measured end to end on the embedded benchmark.

- :mod:`~hf_real3d.demo.config`: its settings (:class:`DemoConfig`) and its cast of models;
- :mod:`~hf_real3d.demo.stages`: the stages one seed runs (data, the filter's pair, the
  scored models, scoring, diagnosis) and the 3DSRBench study;
- :mod:`~hf_real3d.demo.results`: what a run returns and saves (``results.json``);
- :mod:`~hf_real3d.demo.findings`: the claims, each with the models it concerns and
  whether it holds over the seeds (:mod:`hf_real3d.stats`);
- :mod:`~hf_real3d.demo.report`: ``report.md``, its sections and plots, and the README's
  tables;
- :mod:`~hf_real3d.demo.run`: :func:`run_seed` and :func:`run_demo`;
- :mod:`~hf_real3d.demo.flips`: right-to-wrong flips and accuracy per group of questions;
- :mod:`~hf_real3d.demo.srbench_study` and :mod:`~hf_real3d.demo.srbench_vlm`: the
  3DSRBench study (a small VLM trained and scored on synthetic renders).
"""

from hf_real3d.demo.config import ARM_CONTROLS, MODELS, ROLES, DemoConfig
from hf_real3d.demo.results import DemoResults, SeedResult, results_summary
from hf_real3d.demo.run import run_demo, run_seed

__all__ = ["DemoConfig", "SeedResult", "DemoResults", "run_seed", "run_demo", "MODELS",
           "ROLES", "ARM_CONTROLS", "results_summary"]
