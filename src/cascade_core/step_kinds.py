"""What a measured or simulated step is: a whole training `step`, or a serving `prefill` or
`decode`. Its own leaf, so the models and the step-timeline files (timeline/formats, which use
the models) share it without a cycle."""

from __future__ import annotations

from typing import Literal

StepKind = Literal["step", "prefill", "decode"]
