"""The embedded synthetic benchmark: procedural rooms, situated agents, SQA3D-style questions."""

from hf_real3d.synth.build import (
    SynthConfig,
    build_benchmark,
    generate_scene_records,
    generate_split,
)
from hf_real3d.synth.questions import describe_situation, generate_questions, sample_situation
from hf_real3d.synth.rooms import generate_room

__all__ = [
    "SynthConfig",
    "build_benchmark",
    "generate_scene_records",
    "generate_split",
    "generate_room",
    "describe_situation",
    "generate_questions",
    "sample_situation",
]
