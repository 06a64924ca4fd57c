"""The embedded synthetic benchmark: procedural rooms, situated agents, SQA3D-style
questions, and 3DSRBench-style renders. One producer of data among others: nothing
outside ``synth/``, the demo, the CLI and the recipes imports it."""

from hf_real3d._lazy import lazy_exports

__all__ = ["SynthConfig", "build_benchmark", "ensure_benchmark", "generate_scene_records",
           "generate_split", "generate_room", "generate_questions", "sample_situation"]

_LAZY = {"SynthConfig": "hf_real3d.synth.config",
         "generate_room": "hf_real3d.synth.rooms",
         "generate_questions": "hf_real3d.synth.questions",
         "sample_situation": "hf_real3d.synth.questions",
         **{name: "hf_real3d.synth.build" for name in
            ("build_benchmark", "ensure_benchmark", "generate_scene_records",
             "generate_split")}}

# the builder writes dataset folders (datasets, the Hub client) and the generators need
# SciPy: loaded on first use, so that the 3DSRBench render workers, which import
# hf_real3d.synth.srbench_gen, and the CLI, which reads SynthConfig's defaults, start fast
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
