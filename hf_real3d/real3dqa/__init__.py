"""Real-3DQA: the official release, building it from SQA3D-format data (filter + rotate),
checking its rotations and scoring predictions (EM, refined EM, P_k, VRS).

* :mod:`.format` reads and validates the official release files (rotation files);
* :mod:`.build` writes dataset folders (``import_release``, ``build_real3dqa``), with
  :mod:`.filtering` (removes questions a blind model or a text-only judge answers),
  :mod:`.judge` (the text-only language-model judge) and :mod:`.rotation` / :mod:`.rotate`
  (turn the agent: from the scene graph, or by a language model, ``hf-real3d rotate``);
* :mod:`.rotation_set` reads a rotation set; the wing :mod:`.checker` gives each rotated item
  a verdict against its turn, the wing :mod:`.review` holds people's decisions;
  :mod:`.draw` draws a room;
* :mod:`.predictions` reads prediction files;
* :mod:`.references` reads the reference tables (release, built folder, SQA3D folder, and
  their subsets); :mod:`.evaluate` scores prediction tables against them (predictions of a
  trained SceneLM: :mod:`hf_real3d.training.predict`);
* :mod:`.report` writes the report's tables and plots.

The English the checker and the rotate step read is :mod:`hf_real3d.english`. The modules'
old names (``real3dqa.mentions``, ``real3dqa.checks``, ``real3dqa.check_rotations``, ...)
still import, with a warning, for one release (:data:`MOVED`).
"""

from hf_real3d._lazy import lazy_exports, moved_modules

_LAZY = {
    "CITATION": "hf_real3d.real3dqa.format",
    "build_real3dqa": "hf_real3d.real3dqa.build",
    "import_release": "hf_real3d.real3dqa.build",
    "ModelScores": "hf_real3d.real3dqa.evaluate",
    "load_folder_references": "hf_real3d.real3dqa.references",
    "load_references": "hf_real3d.real3dqa.references",
    "score_predictions": "hf_real3d.real3dqa.evaluate",
    "FilterResult": "hf_real3d.real3dqa.filtering",
    "filter_questions": "hf_real3d.real3dqa.filtering",
    "DEBIASED_FILE": "hf_real3d.real3dqa.format",
    "RELEASE_VIEWPOINTS": "hf_real3d.real3dqa.format",
    "ReleaseData": "hf_real3d.real3dqa.format",
    "read_release": "hf_real3d.real3dqa.format",
    "RotationResult": "hf_real3d.real3dqa.rotation",
    "rotate_record": "hf_real3d.real3dqa.rotation",
    "rotate_records": "hf_real3d.real3dqa.rotation",
    "viewpoint_angles": "hf_real3d.real3dqa.rotation",
    "check_rotations": "hf_real3d.real3dqa.checker.run",
    "rotate_dataset": "hf_real3d.real3dqa.rotate",
}

__all__ = ["CITATION", "DEBIASED_FILE", "RELEASE_VIEWPOINTS", "FilterResult", "ModelScores",
           "ReleaseData", "RotationResult", "build_real3dqa", "check_rotations",
           "filter_questions", "import_release", "load_folder_references", "load_references",
           "read_release", "rotate_dataset", "rotate_record", "rotate_records",
           "score_predictions", "viewpoint_angles"]

# build and filtering load datasets and the Hub client: only on use, so that scoring
# (``hf-real3d evaluate``) imports what it needs and no more
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)

#: the modules that moved in 0.2 (issue 61): their old names import the new ones, with a
#: DeprecationWarning, until the next release
MOVED = {"mentions": "hf_real3d.english.mentions", "asks": "hf_real3d.english.asks",
         "rules": "hf_real3d.real3dqa.checker.rules", "checks": "hf_real3d.real3dqa.checker.text",
         "answer_checks": "hf_real3d.real3dqa.checker.answers",
         "scene_checks": "hf_real3d.real3dqa.checker.scene",
         "check_rotations": "hf_real3d.real3dqa.checker.run",
         "check_folder": "hf_real3d.real3dqa.checker.folder",
         "rewrite": "hf_real3d.real3dqa.rotate"}
moved_modules(__name__, MOVED)
