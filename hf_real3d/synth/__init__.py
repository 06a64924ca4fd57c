"""The embedded synthetic benchmark: procedural rooms, situated agents, SQA3D-style
questions, and 3DSRBench-style renders. One producer of data among others: nothing
outside ``synth/``, the demo and the CLI imports it."""

from hf_real3d._lazy import lazy_exports
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

# the builder writes dataset folders (datasets, the Hub client): loaded on first use, so
# that the 3DSRBench render workers, which import hf_real3d.synth.srbench_gen, start fast
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
