"""``hf-real3d demo``: the main job on the embedded benchmark."""

from __future__ import annotations

from typing import Any


def demo_config() -> type:
    """The demo's options dataclass (:class:`hf_real3d.demo.DemoConfig`)."""
    # the demo pulls in torch and the training stack: imported only for this command
    from hf_real3d.demo import DemoConfig

    return DemoConfig


def cmd_demo(cfg: Any) -> None:
    """``hf-real3d demo``."""
    from hf_real3d.demo import run_demo

    print(run_demo(cfg).read_text())
