"""The child's reply as data (grader/wire.py): what is not a reply of this grader is a WireError
whose words are text keys, said in the report's language like every other message."""

from __future__ import annotations

import pytest

from attnprep import texts
from attnprep.grader.result import msg
from attnprep.grader.wire import Observed, Reply, WireError


@pytest.mark.parametrize("data, key", [
    ([1, 2], "wire.reply_not_object"),
    ({"softmax_dims": [[1]], "shapes": {}}, "wire.bad_softmax_dims"),
    ({"shapes": {}}, "wire.missing"),
])
def test_a_reply_that_is_not_this_graders_says_why_in_both_languages(data, key):
    with pytest.raises(WireError) as caught:
        if key == "wire.reply_not_object":
            Reply.decode(data)
        else:
            Observed.decode(data, "config 0.observed")
    error = caught.value
    assert error.key == key
    detail = msg(error.key, **error.params)
    english, chinese = texts.render(detail, "en"), texts.render(detail, "zh")
    assert english and chinese and english != chinese
    if "where" in error.params:
        assert "config 0.observed" in english and "config 0.observed" in chinese
    said = texts.render(msg("error.malformed", detail=detail), "zh")
    assert chinese in said
