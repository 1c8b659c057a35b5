from cascade_core.models import LogChunk
from cascade_worker.backoff import Backoff
from cascade_worker.spool import Spool


def test_backoff_ceiling_doubles_up_to_the_cap():
    ceilings = []
    backoff = Backoff(base=0.25, cap=2.0, floor=0.0, uniform=lambda low, high: high)
    for _ in range(6):
        ceilings.append(backoff.next_delay())
    assert ceilings == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    backoff.reset()
    assert backoff.next_delay() == 0.25


def test_backoff_jitter_is_drawn_below_the_ceiling_and_above_the_floor():
    draws = []
    backoff = Backoff(
        base=1.0, cap=8.0, floor=0.05, uniform=lambda low, high: draws.append((low, high)) or low
    )
    assert backoff.next_delay() == 0.05
    assert draws == [(0.0, 1.0)]


def test_real_jitter_stays_in_range():
    backoff = Backoff(base=0.5, cap=4.0)
    for _ in range(50):
        assert 0.05 <= backoff.next_delay() <= 4.0


def test_spool_keeps_chunks_in_order_until_removed(tmp_path):
    spool = Spool(tmp_path / "spool")
    for seq in (0, 1, 2):
        spool.put(LogChunk(seq=seq, lines=[f"line {seq}", ""]))
    assert len(spool) == 3
    assert spool.oldest() == LogChunk(seq=0, lines=["line 0", ""])
    spool.remove(0)
    assert spool.oldest().seq == 1


def test_spool_survives_a_new_instance(tmp_path):
    Spool(tmp_path).put(LogChunk(seq=5, lines=["x"]))
    Spool(tmp_path).put(LogChunk(seq=4, lines=["y"]))
    again = Spool(tmp_path)
    assert again.seqs() == [4, 5]
    assert again.oldest().lines == ["y"]
    again.remove(4)
    again.remove(5)
    assert again.oldest() is None and len(again) == 0
