"""The rotation checker: is a rotated item consistent with its turn?

* :mod:`.rules`: the rules' names and meanings, the hit, item and verdict types;
* :mod:`.text`, :mod:`.answers`, :mod:`.scene`: the rules over the situation, the answers and
  the scene, and :func:`~.text.verdict_for`, the verdict they give;
* :mod:`.evidence`: SQA3D's texts as evidence (the other questions at each pose, the names a
  scene holds several of) and where they are found;
* :mod:`.check`: the one door, a rotation set checked (:func:`~.check.check_set`);
  :mod:`.outputs`: the check folder and configs its callers write; :mod:`.run`: ``hf-real3d
  check-rotations``; :mod:`.folder` reads a check folder back.
"""
