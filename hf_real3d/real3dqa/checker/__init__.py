"""The rotation checker: is a rotated item consistent with its turn?

* :mod:`.rules`: the rules' names and meanings, the hit, item and verdict types;
* :mod:`.text`, :mod:`.answers`, :mod:`.scene`: the rules over the situation, the answers and
  the scene, and :func:`~.text.verdict_for`, the verdict they give;
* :mod:`.run`: a rotation set checked (:func:`~.run.check_set`, ``hf-real3d
  check-rotations``); :mod:`.folder` reads a check folder back.
"""
