"""``hf-real3d explore``: a local Gradio app to browse a benchmark before trusting a number;
its tabs (Questions, Models, Leaderboard, 3DSRBench) are described in ``docs/explore.md``,
the Review tab (with a review folder: annotators judge rotated items) in ``docs/rotations.md``.

The app reads only the folders it is given. It binds to 127.0.0.1 unless another host or a
share link is asked for. Gradio may serve only the reports of the given results folders (its
``allowed_paths``) and its own cache, and it writes only under the system temporary folder.
``build_app(...)`` returns the ``gr.Blocks``, so a Space can serve the same app.

Modules: :mod:`~hf_real3d.app.data` (what is loaded), :mod:`~hf_real3d.app.render` (HTML
and figures), :mod:`~hf_real3d.app.review_page` and :mod:`~hf_real3d.app.review_tab` (the
Review tab's page, and its controls and handlers), :mod:`~hf_real3d.app.layout` (the Gradio
tabs and serving).
"""

from hf_real3d.app.data import (
    CHECK_SUBSETS,
    MAX_POINTS,
    PRUNED,
    RULES,
    SUBSETS,
    ExplorerData,
    ExplorerInputError,
    Leaderboard,
    ModelAnswers,
    QuestionData,
    SRBenchData,
    export_csv,
    filtered_ids,
    load_leaderboard,
    load_predictions_for,
    load_questions,
    load_srbench,
    scene_of,
    srbench_items,
)
from hf_real3d.app.layout import CSS, HEAD, build_app, launch, launch_kwargs
from hf_real3d.app.render import (
    leaderboard_html,
    leaderboard_markdown,
    pk_figure,
    question_html,
    scene_figure,
    srbench_item,
    topdown_image,
)

__all__ = ["build_app", "launch", "launch_kwargs", "load_questions", "load_predictions_for",
           "load_leaderboard", "load_srbench", "ExplorerData", "ExplorerInputError", "RULES",
           "SUBSETS", "PRUNED", "CHECK_SUBSETS", "MAX_POINTS", "question_html", "scene_figure",
           "topdown_image", "pk_figure", "leaderboard_html", "leaderboard_markdown", "srbench_item",
           "srbench_items", "export_csv", "filtered_ids", "scene_of", "QuestionData",
           "ModelAnswers", "Leaderboard", "SRBenchData", "CSS", "HEAD"]
