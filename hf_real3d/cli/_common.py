"""What the command families share: the synthetic defaults, the publishing and SQA3D-input
options, the command record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hf_real3d._fields import help_field
from hf_real3d.synth.config import SynthConfig

_SYNTH = SynthConfig()  # the one definition of the synthetic benchmark's default sizes


def _push_to_hub() -> Any:
    return help_field("Also publish the folder as this dataset repo (ORG/NAME).", default=None)


@dataclass(kw_only=True)
class _Publishing:
    license: str = help_field("License identifier for the dataset card; it depends on your data "
                         "(SQA3D is apache-2.0, ScanNet scans follow the ScanNet Terms of Use, "
                         "3DSRBench is cc-by-4.0).", default="other")
    push_to_hub: str | None = _push_to_hub()


@dataclass
class _SQA3DInputs:
    sqa3d: str = help_field("Folder with SQA3D question/annotation files.")
    scenes: str = help_field("Folder of ScanNet-format scene folders.")


def _print_summary(summary: dict) -> None:
    print(f"{'split':<6} {'questions':>9} {'scenes':>6} {'guessable':>9}  "
          "types (what/is/how/can/which/other)")
    for split, s in summary.items():
        t = "/".join(str(v) for v in s["question_types"].values())
        print(f"{split:<6} {s['questions']:>9} {s['scenes']:>6} {s['guessable_share']:>9.1%}  {t}")


@dataclass(frozen=True)
class Command:
    """One ``hf-real3d`` command: its one-line help, its options dataclass (a callable, so heavy
    options load lazily) and the function that runs it."""
    help: str
    options: Callable[[], type]  # the options dataclass (a callable so demo imports lazily)
    run: Callable[[Any], None]
