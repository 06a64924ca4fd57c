"""Real-3DQA: the official release, building it from SQA3D-format data (filter + rotate),
and scoring predictions (EM, refined EM, P_k, VRS).

* :mod:`.release` reads and validates the official release files;
* :mod:`.filtering` removes questions a blind model or a text-only judge answers;
* :mod:`.rotation` turns the agent and recomputes every answer from the scene graph;
* :mod:`.build` writes dataset folders (``import_release``, ``build_real3dqa``);
* :mod:`.evaluate` scores prediction tables against references.
"""

from hf_real3d.real3dqa.build import CITATION, build_real3dqa, import_release
from hf_real3d.real3dqa.evaluate import (
    ModelScores,
    load_folder_references,
    load_references,
    score_predictions,
)
from hf_real3d.real3dqa.filtering import FilterResult, filter_questions, judge_predictions
from hf_real3d.real3dqa.release import (
    DEBIASED_FILE,
    RELEASE_VIEWPOINTS,
    ReleaseData,
    read_release,
)
from hf_real3d.real3dqa.rotation import (
    RotationResult,
    rotate_record,
    rotate_records,
    viewpoint_angles,
)

__all__ = [
    "CITATION",
    "DEBIASED_FILE",
    "RELEASE_VIEWPOINTS",
    "FilterResult",
    "ModelScores",
    "ReleaseData",
    "RotationResult",
    "build_real3dqa",
    "filter_questions",
    "import_release",
    "judge_predictions",
    "load_folder_references",
    "load_references",
    "read_release",
    "rotate_record",
    "rotate_records",
    "score_predictions",
    "viewpoint_angles",
]
