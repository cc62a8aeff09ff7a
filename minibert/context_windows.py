"""The overlapping windows of a long context, for extractive question answering.

    windows = tok(question, context, max_length=384, truncation="only_second", stride=128,
                  return_overflowing_tokens=True, return_offsets_mapping=True)

A context longer than max_length is cut into windows of `room` pieces (what [CLS], the [SEP]s and
the question leave), one every room - stride pieces, the last one ending at the context's end, as
Hugging Face's fast tokenizer cuts them; the question is in every window whole. The tokenizer
encodes the two texts and assembles each window's [CLS] A [SEP] B [SEP]; this module only cuts.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Segment", "cut_into_windows", "window_spans"]


@dataclass(frozen=True)
class Segment:
    """One text, encoded, before [CLS] and [SEP]: a value per piece in each list."""

    tokens: list[str]
    input_ids: list[int]
    word_ids: list[int]  # the index of the word each piece came from
    offsets: list[tuple[int, int]] | None = None  # (start, end) characters, when asked for

    def cut(self, start: int, stop: int) -> Segment:
        """The pieces start:stop, with their ids, words and offsets."""
        offsets = None if self.offsets is None else self.offsets[start:stop]
        return Segment(
            self.tokens[start:stop], self.input_ids[start:stop], self.word_ids[start:stop], offsets
        )


def window_spans(n: int, room: int, stride: int) -> list[tuple[int, int]]:
    """(start, stop) of the windows over n pieces: room pieces each, one every room - stride
    pieces, the last one ending at n (as Hugging Face's Encoding.truncate)."""
    if n <= room:
        return [(0, n)]
    step = room - stride
    return [(start, min(start + room, n)) for start in range(0, n - room + step, step)]


def cut_into_windows(
    a: Segment, b: Segment | None, max_length: int, truncation: str, stride: int
) -> list[tuple[Segment, Segment | None]]:
    """(first, second) segments of each window: the text that truncation cuts ("only_second": b,
    else a) in windows, the other text whole in each."""
    cut_second = truncation == "only_second"
    target, other = (b, a) if cut_second else (a, b)
    n_other = len(other.tokens) if other is not None else 0
    room = max_length - (2 if b is None else 3) - n_other  # pieces of target per window
    if len(target.tokens) > room and stride >= room:
        raise ValueError(
            f"max_length={max_length} leaves {max(room, 0)} positions per window for the "
            f"{'second' if cut_second else 'first'} text ([CLS], [SEP] and the other "
            f"text's {n_other} pieces take the rest); windows need more than stride="
            f"{stride}: use a larger max_length, a smaller stride or a shorter other text"
        )
    windows = [target.cut(i, j) for i, j in window_spans(len(target.tokens), room, stride)]
    return [(a, w) if cut_second else (w, b) for w in windows]
