from hypothesis import given
from hypothesis import strategies as st

from cascade_worker.chunks import Chunker, LineSplitter


def test_splitter_holds_back_partial_lines():
    splitter = LineSplitter()
    assert splitter.feed(b"a\nb") == ["a"]
    assert splitter.feed(b"c\n\n") == ["bc", ""]
    assert splitter.feed(b"tail") == []
    assert splitter.finish() == ["tail"]
    assert splitter.finish() == []


def test_splitter_keeps_carriage_returns():
    assert LineSplitter().feed(b"a\rb\r\n") == ["a\rb\r"]


@given(st.binary(max_size=300), st.lists(st.integers(min_value=1, max_value=40), max_size=20))
def test_splitting_any_way_rejoins_to_the_same_text(data, cuts):
    splitter = LineSplitter()
    lines, start = [], 0
    for size in cuts:
        lines += splitter.feed(data[start : start + size])
        start += size
    lines += splitter.feed(data[start:])
    lines += splitter.finish()
    expected = data.decode("utf-8", errors="replace")
    joined = "\n".join(lines) + ("\n" if data.endswith(b"\n") else "")
    # Decoding per line may differ from decoding at once only inside invalid sequences.
    if "\ufffd" not in expected:
        assert joined == expected


def test_chunks_cut_by_count_with_increasing_seq():
    chunker = Chunker(max_lines=3, max_age=10)
    full = chunker.add([str(i) for i in range(7)], now=0.0)
    assert [(c.seq, c.lines) for c in full] == [(0, ["0", "1", "2"]), (1, ["3", "4", "5"])]
    last = chunker.flush()
    assert (last.seq, last.lines) == (2, ["6"])
    assert chunker.flush() is None


def test_chunks_cut_by_age_of_the_oldest_line():
    chunker = Chunker(max_age=0.5)
    assert chunker.add(["a"], now=10.0) == []
    assert chunker.due(10.4) is None
    chunker.add(["b"], now=10.4)
    assert abs(chunker.seconds_until_due(10.4) - 0.1) < 1e-9
    chunk = chunker.due(10.5)
    assert chunk.lines == ["a", "b"] and chunk.seq == 0
    assert chunker.due(100.0) is None
    assert chunker.seconds_until_due(100.0) is None


def test_chunks_cut_by_bytes():
    chunker = Chunker(max_bytes=10, max_age=10)
    full = chunker.add(["12345", "6789", "x"], now=0.0)
    assert [c.lines for c in full] == [["12345", "6789"]]


@given(st.lists(st.text(max_size=5), max_size=60), st.integers(min_value=1, max_value=7))
def test_no_line_lost_or_reordered(lines, max_lines):
    chunker = Chunker(max_lines=max_lines, max_age=10)
    chunks = chunker.add(lines, now=0.0)
    last = chunker.flush()
    chunks += [last] if last else []
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert [line for c in chunks for line in c.lines] == lines
