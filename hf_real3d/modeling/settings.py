"""SceneLM's settings, defined once (as trl's ``ModelConfig``): the language model's size,
the 3D input's shape and how the 3D input is read.

:class:`SceneModelArguments` is the one set of defaults. :class:`~hf_real3d.modeling.
SceneLMConfig` takes its defaults from it, the recipes' ``ScriptArguments`` and the demo's
``DemoConfig`` inherit its fields (so ``--hidden_size``, ``--object_tokens`` ... are options
of both), and :meth:`SceneLMConfig.from_settings` builds a model's config from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hf_real3d._fields import help_field
from hf_real3d.errors import InputError

__all__ = ["SceneModelArguments", "DEFAULTS", "check_counts"]


def check_counts(options: Any, **least: int) -> None:
    """Each named count of ``options`` (when set) at least its minimum, else one line naming
    it: a zero would build an empty model, train on nothing or reach a division."""
    for name, low in least.items():
        value = getattr(options, name)
        if value is not None and value < low:
            raise InputError(f"`{name}` {value}: expected at least {low}")


@dataclass
class SceneModelArguments:
    """What a SceneLM is. Defaults: the design that uses the scene on the embedded benchmark
    (README, "SceneLM": scored with its 3D input and with it shuffled)."""

    hidden_size: int = help_field("Language model width.", default=128)
    num_layers: int = help_field("Language model layers.", default=2)
    max_objects: int = help_field("3D tokens per scene.", default=24)
    points_per_object: int = help_field("Points per object.", default=8)
    max_length: int = help_field("Text tokens per example.", default=64)
    object_labels: bool = help_field(
        "Object tokens also carry the word embedding of their label (oracle labels, as "
        "3D-LLMs reading detected objects get them).", default=True)
    direction_features: bool = help_field(
        "Object boxes also carry the egocentric angle, distance and direction bin (measured "
        "with object_labels: no gain; off by default).", default=False)
    direction_words: bool = help_field(
        "Object tokens also carry the word embedding of their egocentric direction (front / "
        "right / behind / left), shared with the question's words.", default=True)
    color_words: bool = help_field(
        "Object tokens also carry the word embedding of their colour name (the named colour "
        "nearest to the mean of their points' colours).", default=True)
    question_reader: bool = help_field(
        "Question-guided reader tokens (needs object_labels): attention pools over the "
        "objects whose label / direction word the question's words match, plus soft "
        "counts.", default=True)
    object_tokens: bool = help_field(
        "Also give the language model the object tokens themselves (default: the question "
        "reader's tokens only, a shorter sequence per example).", default=False)

    def __post_init__(self) -> None:
        check_counts(self, hidden_size=1, num_layers=1, max_objects=1, points_per_object=1,
                     max_length=2)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(SceneModelArguments))

    def settings(self) -> dict[str, Any]:
        """These settings as ``{name: value}`` (also of a subclass: only this class's
        fields)."""
        return {name: getattr(self, name) for name in self.names()}


DEFAULTS = SceneModelArguments()
