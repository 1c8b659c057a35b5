"""A shard's Slurm job array (issue 23): each shard index of a run entry is its own array (a task
per replica), named `cascade.<run>.<config>.shard<N>`, so a restarted server finds each shard's
job by its name and replica as it finds any sim's."""

from __future__ import annotations

import json

from cascade_core.shard_plan import SHARD_VARIABLE

from .base import SimSpec


def array_label(spec: SimSpec) -> str:
    """The config part of the sim's job name: its job group (the config, and a variant's hash),
    with the shard index for a shard."""
    shard = spec.env.get(SHARD_VARIABLE)
    if not shard:
        return spec.job_group
    return f"{spec.job_group}.shard{json.loads(shard)['index']}"
