import gzip
from pathlib import Path

from cascade_worker import uploads


def test_only_new_or_changed_files(tmp_path):
    (tmp_path / "gpgpusim.config").write_text("-x 1\n")
    before = uploads.snapshot(tmp_path)
    (tmp_path / "gpgpu_inst_stats.txt").write_text("kernel line :\n")
    (tmp_path / "checkpoint_files").mkdir()
    (tmp_path / "checkpoint_files" / "a b.bin").write_bytes(b"\0\1")
    after = uploads.snapshot(tmp_path)
    assert uploads.written_since(before, after) == [
        Path("checkpoint_files/a b.bin"),
        Path("gpgpu_inst_stats.txt"),
    ]


def test_names_are_flattened_and_sanitised():
    assert uploads.upload_name(Path("checkpoint_files/a b.bin"), False) == "checkpoint_files_a_b.bin"
    assert uploads.upload_name(Path("big.log"), True) == "big.log.gz"
    assert uploads.upload_name(Path(".."), False) is None
    assert uploads.upload_name(Path("accelsim.log.gz"), False) is None  # the worker's own
    assert len(uploads.upload_name(Path("x" * 300), False)) == 128


def test_large_text_is_gzipped_small_and_binary_are_not(tmp_path):
    (tmp_path / "small.txt").write_text("hello\n")
    (tmp_path / "large.txt").write_text("stat = 1\n" * 200_000)
    (tmp_path / "large.bin").write_bytes(b"\0" * (2 * 1024 * 1024))
    small = uploads.prepare(tmp_path, Path("small.txt"))
    assert (small.name, small.data) == ("small.txt", b"hello\n")
    large = uploads.prepare(tmp_path, Path("large.txt"))
    assert large.name == "large.txt.gz"
    assert gzip.decompress(large.data) == (tmp_path / "large.txt").read_bytes()
    assert uploads.prepare(tmp_path, Path("large.bin")).name == "large.bin"


def test_text_detection():
    assert uploads.looks_like_text("héllo".encode())
    assert uploads.looks_like_text("ab€".encode()[:-1])  # cut inside a character
    assert not uploads.looks_like_text(b"a\0b")
    assert not uploads.looks_like_text(b"\xff\xfe" + b"x" * 20)
