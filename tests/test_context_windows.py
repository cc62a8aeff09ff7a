"""minibert.context_windows: where a long context is cut into overlapping windows."""

import pytest

from minibert.context_windows import Segment, cut_into_windows, window_spans


def test_windows_share_stride_pieces_and_the_last_ends_at_the_end():
    assert window_spans(5, 8, 2) == [(0, 5)]  # it fits: one window
    assert window_spans(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]  # each starts 3 after the last
    assert window_spans(9, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 9)]  # the last one is short
    for start, stop in window_spans(100, 16, 5):
        assert stop - start <= 16


def test_the_question_is_in_every_window_whole():
    question = Segment(["what", "?"], [5, 6], [0, 1])
    context = Segment([f"w{i}" for i in range(10)], list(range(10, 20)), list(range(10)))
    pairs = cut_into_windows(question, context, max_length=9, truncation="only_second", stride=2)
    assert all(first is question for first, _ in pairs)  # 9 - 3 special - 2 question: 4 a window
    assert [second.input_ids for _, second in pairs] == [
        [10, 11, 12, 13],
        [12, 13, 14, 15],
        [14, 15, 16, 17],
        [16, 17, 18, 19],
    ]
    assert [second.word_ids[0] for _, second in pairs] == [0, 2, 4, 6]  # each list cut alike
    assert all(second.offsets is None for _, second in pairs)  # none asked for, none made
    with pytest.raises(ValueError, match="windows need more than stride=4"):
        cut_into_windows(question, context, max_length=9, truncation="only_second", stride=4)
