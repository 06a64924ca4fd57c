"""The English floor: the one reader of situations, questions and answers, shared by the
rotation step, the rotate step, the rotation checker, the corrected set and ``synth/``.

* :mod:`.mentions`: where a text puts things relative to the agent (egocentric mentions,
  allocentric relations), words made uniform, singular and plural;
* :mod:`.asks`: what a question asks, what an answer says, a direction answer after a turn.
"""
