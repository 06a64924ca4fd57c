import pytest

from hf_real3d.choices import circular_shifts, swap_left_right

OPTS = ["left of the chair", "right of the chair", "in front", "behind"]


def test_circular_shifts_keep_answer_text():
    shifts = circular_shifts(OPTS, "B")
    assert len(shifts) == 4 and shifts[0] == (OPTS, "B")
    for opts, ans in shifts:
        assert opts["ABCD".index(ans)] == "right of the chair"
        assert sorted(opts) == sorted(OPTS)
    with pytest.raises(ValueError, match="answer letter 'E'"):
        circular_shifts(OPTS, "E")


def test_swap_left_right():
    assert swap_left_right("Is the cup left of the Right box, leftmost?") == \
        "Is the cup right of the Left box, rightmost?"
