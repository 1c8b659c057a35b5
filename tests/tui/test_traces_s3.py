"""The Traces screen says so while the server's S3 endpoint fails (a real endpoint killed with
kill -9 and started again), and stops saying it once the endpoint answers."""

from __future__ import annotations

import pytest

from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.views.formatting import s3_problem
from tests.conftest import ready_trace
from tests.helpers import own_endpoint, s3_answers, start_rclone

from .conftest import make_app, on_list, serve
from .helpers import screen_text, wait_for_app, wait_for_text


def test_s3_problem_names_the_endpoint_and_the_error_or_nothing():
    assert s3_problem({"ok": True, "s3_endpoint": "http://h:9020", "s3_error": None}) is None
    assert s3_problem({"ok": True}) is None  # an older server says nothing
    said = s3_problem({"ok": True, "s3_endpoint": "http://h:9020", "s3_error": "EndpointConnectionError: x"})
    assert said == (
        "⚠ S3 endpoint http://h:9020 is failing, so new uploads are not seen until it "
        "answers again: EndpointConnectionError: x"
    )


@pytest.mark.slow
async def test_the_traces_screen_shows_a_failing_endpoint_while_it_fails(make_server, tmp_path, monkeypatch):
    info, port = own_endpoint(tmp_path, monkeypatch, 3)
    rclone = start_rclone(port, tmp_path / "s3", info)
    try:
        server = await serve(
            make_server, [ready_trace()], s3_endpoint=info.endpoint, s3_bucket="cascade", scan_interval_s=0.1
        )
        app = make_app(server, tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await on_list(pilot, RunsScreen, [])
            await pilot.press("t")
            await on_list(pilot, TracesScreen, [])
            await wait_for_text(pilot, "tinyformer-step-sm70")
            await wait_for_app(
                pilot,
                lambda: (
                    s3_answers(info)
                    and app.screen.s3_problem is None
                    and "S3 endpoint failing" not in screen_text(app)
                ),
                "no S3 warning",
            )
            rclone.kill()  # kill -9
            rclone.wait()
            text = await wait_for_text(pilot, "⚠ S3 endpoint failing")  # in the title
            assert f"⚠ S3 endpoint {info.endpoint} is failing" in text, text  # under the table
            rclone = start_rclone(port, tmp_path / "s3", info)
            await wait_for_app(pilot, lambda: "S3 endpoint" not in screen_text(app), "the warning gone")
    finally:
        rclone.kill()
        rclone.wait()
