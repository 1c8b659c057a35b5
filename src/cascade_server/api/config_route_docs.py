"""The route docs of GPU configs of your own (`POST /api/gpu-configs`, `DELETE
/api/gpu-configs/{name}`, `GET /api/gpu-configs/{name}/files`), part of route_docs.ROUTE_DOCS."""

from __future__ import annotations

from cascade_core import models

from .route_doc import RouteDoc

CONFIG_ROUTE_DOCS: dict[tuple[str, str], RouteDoc] = {
    ("POST", "/api/gpu-configs"): RouteDoc(
        "Add a GPU config of your own (body: `GpuConfigAdd`, its files as text): `201` with the `GpuConfig`.",
        response=models.GpuConfig,
        status=201,
        body=models.GpuConfigAdd,
        errors=(
            (
                409,
                "A config of this name exists (the simulator's own, or one added before), or no real "
                "simulator is installed to check it with.",
            ),
            (
                422,
                "The name, a file name or a size breaks the rules; gpgpusim.config is missing, sets no "
                "clock, names a file it does not bring, or has a value with a path; no arch can be found "
                "(give `arch`); or the installed simulator refuses it: `detail` has its own words, such "
                "as `GPGPU-Sim ** ERROR: Unknown Option: '-x'`.",
            ),
        ),
        details="Not in the spec (`cascade configs add DIR` sends it). The config is checked by running "
        "the installed simulator on it (it must take every option), kept in the data directory "
        "(`gpu-configs/<name>/`: it survives restarts and a new simulator build) and listed at once. "
        "Its arch is its compute capability (`-gpgpu_compute_capability_major/minor`) when it sets one, "
        "else `arch`, else its name's `SM<N>_` prefix.",
    ),
    ("DELETE", "/api/gpu-configs/{name}"): RouteDoc(
        "Remove a config added with `POST /api/gpu-configs`: `204`.",
        status=204,
        errors=(
            (404, "No GPU config has this name."),
            (
                409,
                "It is one of the simulator's own configs, or a pending or active sim uses it (cancel "
                "its runs or let them finish first).",
            ),
        ),
        details="Not in the spec (`cascade configs remove NAME`). Finished runs on it keep their results.",
    ),
    ("GET", "/api/gpu-configs/{name}/files"): RouteDoc(
        "A GPU config's files as text (a `GpuConfigFiles`).",
        response=models.GpuConfigFiles,
        errors=((404, "No GPU config has this name."),),
        simulator_only=True,
        agent_note="Workers on nodes that cannot see an added config fetch its files here.",
        details="gpgpusim.config, the files it names and trace.config: what a worker on a host that "
        "cannot see the server's data directory fetches for a config added with `POST /api/gpu-configs`.",
    ),
}
