"""``hf-real3d explore``: the local web app."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from hf_real3d._fields import help_field


@dataclass
class ExploreOptions:
    """A local web app (Gradio) over folders this library writes: questions with their four
    viewpoints and 3D scene, models' answers and flips, a leaderboard of results folders and
    3DSRBench items. Serves on 127.0.0.1 only, unless --host or --share says otherwise."""
    dataset: str | None = help_field("A Real-3DQA folder (build-real3dqa, import-real3dqa or "
                                     "synth).", default=None)
    predictions: list[str] = help_field(
        "Models' answers on --dataset, NAME=FILE[,FILE...] as `hf-real3d evaluate` takes them.",
        default_factory=list)
    results: list[str] = help_field("Folders with metrics.json from `hf-real3d evaluate` or "
                                    "`evaluate-3dsrbench` (the leaderboard).",
                                    default_factory=list)
    srbench: str | None = help_field("A 3DSRBench folder (build-3dsrbench).", default=None)
    srbench_predictions: list[str] = help_field(
        "Models' answers on --srbench, NAME=FILE as `evaluate-3dsrbench` takes them.",
        default_factory=list)
    host: str = help_field("Address to bind; anything but 127.0.0.1 exposes the app to your "
                           "network.", default="127.0.0.1")
    port: int | None = help_field("Port (default: Gradio's, 7860 or the next free one).",
                                  default=None)
    share: bool = help_field("Also open a public Gradio share link (off unless asked).",
                             default=False)
    review: str | None = help_field("A review folder: adds the Review tab, where annotators "
                                    "accept, correct or discard the rotated items of --dataset "
                                    "(any rotation set check-rotations reads; a new folder is "
                                    "started for it, an existing one resumes).", default=None)
    scenes: str | None = help_field("With --review: ScanNet-format scenes for the checker's "
                                    "scene rules.", default=None)
    review_repeat: float | None = help_field("With a new --review folder: share of the groups "
                                             "shown a second time, whole and unannounced "
                                             "(default 0.1).", default=None)
    review_gap: int | None = help_field("With a new --review folder: at least how many "
                                        "showings after its first look a second look comes "
                                        "(default 50; the distance beyond it is drawn).",
                                        default=None)
    review_seed: int | None = help_field("With a new --review folder: seed of the order and "
                                         "of the second looks (default 0).", default=None)


def cmd_explore(o: ExploreOptions) -> None:
    """``hf-real3d explore``."""
    # the [app] extra is checked before anything is loaded or printed
    from hf_real3d._extras import require

    require("gradio", "plotly", what="hf-real3d explore")
    from hf_real3d.app import ExplorerData, build_app, launch
    from hf_real3d.real3dqa.review import gap_cost

    data = ExplorerData.load(o.dataset, o.predictions, o.results, o.srbench,
                             o.srbench_predictions, review=o.review, scenes=o.scenes,
                             review_settings={"repeat_share": o.review_repeat,
                                              "repeat_gap": o.review_gap,
                                              "seed": o.review_seed})
    if data.review_warning:
        print(f"hf-real3d explore: warning: {data.review_warning}", file=sys.stderr, flush=True)
    if data.review is not None and (cost := gap_cost(data.review.meta["repeat_gap"])):
        print(cost, flush=True)
    where = f"http://{o.host}:{o.port}" if o.port else \
        f"http://{o.host} (Gradio's port: 7860 or the next free one, printed below)"
    print(f"loaded in {data.load_s:.1f} s; serving on {where} (Ctrl-C stops)", flush=True)
    launch(build_app(data=data), host=o.host, port=o.port, share=o.share)
