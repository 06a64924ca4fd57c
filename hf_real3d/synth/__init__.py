"""The embedded synthetic benchmark: procedural rooms, situated agents, SQA3D-style
questions, and 3DSRBench-style renders. One producer of data among others: nothing
outside ``synth/``, the demo and the CLI imports it."""

import importlib

from hf_real3d.synth.questions import generate_questions, sample_situation
from hf_real3d.synth.rooms import generate_room

__all__ = [
    "SynthConfig",
    "build_benchmark",
    "generate_scene_records",
    "generate_split",
    "generate_room",
    "generate_questions",
    "sample_situation",
]

_LAZY = {name: "hf_real3d.synth.build" for name in
         ("SynthConfig", "build_benchmark", "generate_scene_records", "generate_split")}


def __getattr__(name: str):
    # the builder writes dataset folders (datasets, the Hub client): loaded on first use, so
    # that the 3DSRBench render workers, which import hf_real3d.synth.srbench_gen, start fast
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
