"""After a successful sim on a trace with a step timeline: predict the trace's steps from this
sim's kernel times (`cascade simulate`), compare them with the measured ones (`cascade compare`)
and send both to the server (spec 002, "Send step timing"). A problem here never fails the sim:
the caller logs it and uploads it as the sim's `step-timeline-error.txt`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import ValidationError

from cascade_core.models import SimResults, StepTimelineUpload
from cascade_core.step_inputs import TimelineFileError, read_step_inputs
from cascade_core.timeline.compare import compare

from .client import ApiRefused, SimClient
from .simulate_cli import simulate_sim

ERROR_FILE = "step-timeline-error.txt"


class StepTimelineError(Exception):
    """Why the step timeline was not sent; one line."""


def build_upload(trace_dir: Path, results: SimResults) -> StepTimelineUpload:
    """simulated_timeline.json and compare.json for this sim (blocking: reads the trace's files)."""
    try:
        timeline, mapping = read_step_inputs(trace_dir)
    except TimelineFileError as exc:
        raise StepTimelineError(str(exc)) from None
    simulated = simulate_sim(timeline, mapping, results)
    return StepTimelineUpload(simulated=simulated, compare=compare(timeline, simulated))


async def send_step_timeline(client: SimClient, trace_dir: Path) -> StepTimelineUpload:
    """Fetch this sim's results, build the step timeline and POST it (retried by the client);
    raises StepTimelineError. ServerUnreachable propagates, as for every other report."""
    try:
        results = await client.sim_results()
    except ApiRefused as exc:
        raise StepTimelineError(f"could not read the sim's results: {exc}") from None
    except ValidationError as exc:
        raise StepTimelineError(f"the sim's results are not SimResults: {exc.errors()[0]['msg']}") from None
    upload = await asyncio.to_thread(build_upload, trace_dir, results)
    try:
        await client.put_step_timeline(upload)
    except ApiRefused as exc:
        raise StepTimelineError(f"the server refused the step timeline: {exc}") from None
    return upload
