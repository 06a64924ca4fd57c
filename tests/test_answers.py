import pytest

from hf_real3d.answers import match, normalize_answer


@pytest.mark.parametrize("raw, norm", [
    ("The Chair.", "chair"), ("  Two  ", "two"), ("2", "two"), ("none", "zero"),
    ("23", "twenty-three"), ("letf", "left"), ("a tv", "TV"), ("Backwards!", "backward"),
    ("mat2", "mat"), ("3 o' clock", "three o'clock"), ("an apple", "apple"),
    ("21", "21"), ("it's", "it's"),
])
def test_normalize_like_leo(raw, norm):
    assert normalize_answer(raw) == norm


def test_em_and_refined():
    assert match("Chair", ["chair"]) == (True, True)
    assert match("the brown chair", ["chair"]) == (False, True)
    assert match("table", ["chair"]) == (False, False)
    assert match(["table", "chair"], ["chair"]) == (True, True)  # best candidate


def test_leo_compatible_differs_on_empty_and_order():
    # an empty prediction is a substring of everything in LEO's rule
    assert match("", ["chair"], leo_compatible=True) == (False, True)
    assert match("", ["chair"]) == (False, False)
    # the first substring hit ends LEO's search before the later exact match
    assert match("chair", ["armchair", "chair"], leo_compatible=True) == (False, True)
    assert match("chair", ["armchair", "chair"]) == (True, True)


def test_non_string_rejected():
    with pytest.raises(TypeError, match="Expected a string"):
        normalize_answer(3)
