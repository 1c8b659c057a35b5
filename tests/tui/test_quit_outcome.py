"""What `cascade up` / `cascade tui` print after the UI exits about unfinished sims (pure)."""

from __future__ import annotations

from cascade_tui.views.quit_outcome import QuitOutcome, tui_quit_message, up_quit_message

URL = "http://127.0.0.1:8000"
KEPT = QuitOutcome("kept", ("run-aaaaaaaaaaaa", "run-bbbbbbbbbbbb"), 3)
CANCELLED = QuitOutcome("cancelled", ("run-aaaaaaaaaaaa",), 1)


def test_cascade_up_that_started_the_server_says_what_became_of_the_sims():
    assert up_quit_message(KEPT, url=URL, started_here=True) == (
        "cascade up: stopped the server it started; 3 sims of run-aaaaaaaaaaaa, run-bbbbbbbbbbbb "
        "keep running without it and report their output once a server is back on this data "
        "directory (`cascade up` again; cancel them there with x)"
    )
    assert up_quit_message(CANCELLED, url=URL, started_here=True) == (
        "cascade up: cancelled 1 sim of run-aaaaaaaaaaaa (its worker was told to stop); "
        "stopped the server it started"
    )
    for nothing in (None, QuitOutcome("none")):
        assert (
            up_quit_message(nothing, url=URL, started_here=True)
            == "cascade up: stopped the server it started"
        )
    assert "could not be asked" in up_quit_message(QuitOutcome("unknown"), url=URL, started_here=True)


def test_cascade_up_on_a_server_it_did_not_start_leaves_it_and_says_so():
    assert up_quit_message(KEPT, url=URL, started_here=False) == (
        f"cascade up: the server at {URL} keeps running (`cascade up` did not start it); "
        "3 sims of run-aaaaaaaaaaaa, run-bbbbbbbbbbbb keep running under it"
    )
    assert up_quit_message(CANCELLED, url=URL, started_here=False).startswith(
        "cascade up: cancelled 1 sim of run-aaaaaaaaaaaa; the server at"
    )
    assert up_quit_message(QuitOutcome("none"), url=URL, started_here=False) == (
        f"cascade up: the server at {URL} keeps running (`cascade up` did not start it)"
    )


def test_cascade_tui_speaks_only_of_unfinished_sims():
    assert tui_quit_message(KEPT, url=URL) == (
        f"cascade tui: 3 sims of run-aaaaaaaaaaaa, run-bbbbbbbbbbbb keep running under the server at {URL}"
    )
    assert tui_quit_message(CANCELLED, url=URL) == "cascade tui: cancelled 1 sim of run-aaaaaaaaaaaa"
    assert tui_quit_message(QuitOutcome("none"), url=URL) is None
    assert tui_quit_message(None, url=URL) is None


def test_one_sim_is_spoken_of_in_the_singular():
    one = QuitOutcome("kept", ("run-aaaaaaaaaaaa",), 1)
    assert up_quit_message(one, url=URL, started_here=True) == (
        "cascade up: stopped the server it started; 1 sim of run-aaaaaaaaaaaa keeps running "
        "without it and reports its output once a server is back on this data directory "
        "(`cascade up` again; cancel it there with x)"
    )
    assert up_quit_message(one, url=URL, started_here=False).endswith(
        "1 sim of run-aaaaaaaaaaaa keeps running under it"
    )
    assert tui_quit_message(one, url=URL) == (
        f"cascade tui: 1 sim of run-aaaaaaaaaaaa keeps running under the server at {URL}"
    )
    assert up_quit_message(QuitOutcome("cancelled", ("run-a",), 2), url=URL, started_here=True) == (
        "cascade up: cancelled 2 sims of run-a (their workers were told to stop); stopped the server it started"
    )
