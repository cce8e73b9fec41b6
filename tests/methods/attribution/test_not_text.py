"""A "sentence" that is not a string (None, a number) is one clear TypeError, before any model is loaded;
bad text (empty, identical) is still scored as skipped (tests/cli/test_cli_bad_input.py)."""
from __future__ import annotations

import pytest

import biascore
from biascore.models.handle import ModelHandle
from biascore.methods.attribution.scorer import score_pair, score_pairs


@pytest.mark.parametrize("more, less, side", [(None, "x", "sent_more"), ("x", None, "sent_less"),
                                              (3, "x", "sent_more"), ("x", ["y"], "sent_less")])
def test_a_sentence_that_is_not_a_string_is_one_type_error(random_mlm, more, less, side):
    with pytest.raises(TypeError, match=f"^{side} must be a string") as err:
        score_pair(random_mlm, more, less)
    assert "\n" not in str(err.value)
    with pytest.raises(TypeError, match=f"{side} must be a string .* in pair 1"):
        score_pairs(random_mlm, [("a b", "a c"), (more, less)])


def test_the_api_refuses_it_before_loading_the_model():
    handle = ModelHandle("./no-such-model-folder")  # loading it would fail: the TypeError must come first
    with pytest.raises(TypeError, match="sent_more must be a string .*NoneType"):
        biascore.score_pair(handle, None, "x")


def test_empty_text_is_still_a_skipped_pair(random_mlm):
    assert score_pair(random_mlm, "", "x")["skipped_reason"]
