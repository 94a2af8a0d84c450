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


def test_names_the_child_sends_back_as_text_are_said_in_the_language_again():
    """The child writes case names as plain text (where a forward raised, a case whose inputs the
    attempt changed, a named mistake's evidence): the reply gets the kind's Names back, so the
    Chinese report says them in Chinese; text that names nothing stays as it is."""
    from attnprep.grader.cases import PADDED, plus_causal
    from attnprep.grader.wire import ConfigReply, Problem

    case = plus_causal(PADDED)
    asked = []

    def names(ci):
        asked.append(ci)
        return {str(case): case}

    reply = Reply(problem=Problem("exception", "error.raised_no_frame", {"stage": f"forward ({case})", "text": "padded+causal"},
                                  named=[["m", "k", {"case": str(case), "n": 3}]]), problem_config=1)
    reply.say_names(names)
    stage = reply.problem.params["stage"]
    assert stage == "forward (padded+causal)" and texts.say(stage, "zh") == "forward（右 padding+因果）"
    assert texts.say(reply.problem.params["text"], "zh") == "右 padding+因果"  # a case's name whatever the param
    assert texts.say(reply.problem.named[0][2]["case"], "zh") == "右 padding+因果" and reply.problem.named[0][2]["n"] == 3
    assert asked == [1]

    plain = Reply(configs=[ConfigReply(index=0, mutated=[["padded+causal", "x"], ["other", "x"]])])
    plain.say_names(names)
    first, other = plain.configs[0].mutated
    assert texts.say(first[0], "zh") == "右 padding+因果" and first[1] == "x" and texts.say(other[0], "zh") == "other"
    Reply().say_names(lambda ci: pytest.fail("nothing to name: the kind's names are not asked for"))


def test_the_reference_solution_as_a_built_in_is_said_in_the_language():
    from attnprep.grader.result import Names

    reply = Reply(builtins=["F.scaled_dot_product_attention", "attnprep's reference solution"])
    reply.say_names(lambda ci: {})
    used = msg("check.hand_written.bad", names=Names(reply.builtins))
    assert texts.render(used, "en") == "used F.scaled_dot_product_attention, attnprep's reference solution"
    assert "F.scaled_dot_product_attention，attnprep 的参考答案" in texts.render(used, "zh")


@pytest.mark.parametrize("feed", [
    lambda frames: frames.feed(b"x" * (3 << 20)),  # more than the whole reply may be
    lambda frames: frames.feed(frames.token + b"Q" + b"0" * 11 + b"3" + b"[1]" + frames.token),  # not an object
])
def test_how_the_childs_reply_failed_is_said_in_the_language(feed):
    """The sandbox's detail of a malformed or oversized reply is Words: its English for logs and
    tests, its text key for the report, which says it in Chinese too."""
    from attnprep.grader import sandbox

    frames = sandbox._Frames(b"t" * 32, max_reply=1 << 20, max_total=2 << 20)
    with pytest.raises(sandbox._Failure) as failed:
        feed(frames)
    detail = failed.value.detail
    english = texts.render(msg(f"error.{failed.value.failure}", detail=detail), "en")
    chinese = texts.render(msg(f"error.{failed.value.failure}", detail=detail), "zh")
    assert str(detail) in english and str(detail) not in chinese
    assert texts.say(detail, "zh") in chinese and not english_words(texts.say(detail, "zh"))


def english_words(text: str) -> list[str]:
    import re

    return [w for w in re.findall(r"[A-Za-z]{3,}", text) if w not in ("JSON", "MiB", "list")]
