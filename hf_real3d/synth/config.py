"""The synthetic benchmarks' settings (no heavy imports: the CLI reads their defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hf_real3d.geometry import MARGIN_DEG
from hf_real3d.srbench.format import CATEGORIES

__all__ = ["SPLITS", "SynthConfig", "SRBenchConfig"]

SPLITS = ("train", "val", "test")


@dataclass
class SynthConfig:
    """Sizes and knobs of the synthetic benchmark (defaults: about SQA3D's test size)."""

    seed: int = 0
    scenes: dict[str, int] = field(default_factory=lambda: {"train": 200, "val": 20, "test": 40})
    questions_per_scene: dict[str, int] = field(
        default_factory=lambda: {"train": 100, "val": 100, "test": 88})
    questions_per_situation: int = 5
    guessable_fraction: float = 0.5
    # share of usual-colour categories (whiteboard, refrigerator, ...) given another colour:
    # their colour questions become counter-prior
    counter_prior_rate: float = 0.3
    # share of question slots asking about such an object (counter-prior questions), taken
    # from the slots left after the guessable ones
    counter_prior_fraction: float = 0.1
    n_objects: tuple[int, int] = (10, 30)
    margin_deg: float = MARGIN_DEG
    point_spacing: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 <= self.counter_prior_rate <= 1.0:
            raise ValueError(
                f"Expected counter_prior_rate in [0, 1] but got {self.counter_prior_rate}")
        if not 0.0 <= self.counter_prior_fraction <= 1.0:
            raise ValueError(
                f"Expected counter_prior_fraction in [0, 1] but got "
                f"{self.counter_prior_fraction}")
        if not 0.0 <= self.guessable_fraction <= 1.0:
            raise ValueError(
                f"Expected guessable_fraction in [0, 1] but got {self.guessable_fraction}")
        for split in self.scenes:
            if split not in SPLITS:
                raise ValueError(f"Expected splits among {SPLITS} but got {split!r}")
            if self.scenes[split] < 0 or self.questions_per_scene.get(split, 0) < 0:
                raise ValueError(f"split {split!r}: sizes must be non-negative")
        lo, hi = self.n_objects
        if not 1 <= lo <= hi:
            raise ValueError(f"Expected 1 <= n_objects[0] <= n_objects[1] but got {self.n_objects}")
        self.n_objects = (int(lo), int(hi))

    def scene_ids(self) -> dict[str, list[str]]:
        """Scene ids per split, numbered consecutively across train, val, test."""
        out, k = {}, 0
        for split in SPLITS:
            n = self.scenes.get(split, 0)
            out[split] = [f"synth{k + i:04d}_00" for i in range(n)]
            k += n
        return out


@dataclass
class SRBenchConfig:
    """Settings of the synthetic 3DSRBench: seed, rooms, questions and views per room, image size
    and camera ranges."""
    seed: int = 0
    scenes: int = 150
    questions_per_scene: int = 10
    views_per_scene: int = 2
    width: int = 512
    height: int = 512
    height_margin: float = 0.2  # m between tops for height_higher
    distance_margin: float = 0.4  # m for closer/farther comparisons
    angle_margin: float = 20.0  # degrees from any decision boundary
    categories: tuple[str, ...] = tuple(CATEGORIES)
