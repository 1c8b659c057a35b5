"""Issue 19: the agent prompt is safe to run and says what the server is. A crafted Host header
cannot put a command or a foreign URL into it, every URL it puts in a command is shell-quoted, its
API table, states and types are generated from the routes and models (so they cannot drift), and
it reads a step timeline's coverage before quoting an error. Real server, real HTTP, real bash."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import typing

import pytest
from pydantic import ValidationError

from cascade_core import models
from cascade_server.api import agent_prompt_routes, agent_prompt_types
from cascade_server.api.agent_prompt import prompt_text
from cascade_server.api.agent_prompt_types import TYPES, UNIONS, type_name
from cascade_server.settings import Settings
from tests.conftest import LiveServer, ready_trace
from tests.server.test_http_edges import exchange


@pytest.fixture
async def core(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    return server


HOSTILE_HOSTS = [
    "x$(touch /tmp/pwned-cascade)",
    "x`touch /tmp/pwned-cascade`",
    "a';touch /tmp/pwned-cascade;'",
    "attacker.example",
    "attacker.example:8000",
    "evil.example/x",
    "bad host.example",
    "h\\x",
    "127.0.0.1:8000@evil.example",
]


def section(prompt: str, title: str) -> str:
    return prompt.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
@pytest.mark.parametrize("path", ["/agent-prompt.md", "/cascade-skill/SKILL.md"])
async def test_a_crafted_host_header_never_reaches_the_prompt(server: LiveServer, host, path):
    status, _, body = await exchange(server, f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    text = body.decode()
    assert status == 200
    assert host not in text and "pwned" not in text and "attacker" not in text and "evil" not in text
    assert f"This app's is `{server.url}`" in text  # the configured address instead


@pytest.mark.parametrize("host", ["localhost:9000", "127.0.0.1:9001", "[::1]:9002"])
async def test_a_loopback_host_is_used_as_the_tunnel_it_is(server: LiveServer, host):
    _, _, body = await exchange(server, f"GET /agent-prompt.md HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert f"This app's is `http://{host}`" in body.decode()


async def test_on_every_address_a_plain_host_is_used_and_a_crafted_one_is_not(make_server):
    server = await make_server(host="0.0.0.0")
    _, _, body = await exchange(server, b"GET /agent-prompt.md HTTP/1.1\r\nHost: gpu-box.lab:8000\r\n\r\n")
    assert "This app's is `http://gpu-box.lab:8000`" in body.decode()
    _, _, body = await exchange(server, b"GET /agent-prompt.md HTTP/1.1\r\nHost: x$(id):1\r\n\r\n")
    assert "$(id)" not in body.decode()


@pytest.mark.parametrize(
    "url",
    [
        "http://h/$(touch /tmp/x)",
        "http://h:1/'x'",
        "javascript:alert(1)",
        "http://h/?a=1",
        "http://user:pw@h/",
        "http://h/a b",
    ],
)
def test_a_public_url_that_is_not_plain_is_refused_at_start(tmp_path, url):
    with pytest.raises(ValidationError, match="public_url"):
        Settings(data_dir=tmp_path, public_url=url)


def test_the_url_is_shell_quoted_in_the_commands_that_hold_it(tmp_path):
    """Even a URL no check would let through runs nothing: the env file command quotes it."""
    url = "http://h:1/a'$(touch pwned)`touch pwned2`"
    prompt = prompt_text(url)
    [block] = [
        b
        for b in re.findall(r"```bash\n(.*?)```", prompt, flags=re.S)
        if "~/.cascade.env" in b and "printf" in b
    ]
    printf = next(line for line in block.splitlines() if "printf" in line).replace("<token>", "tok")
    subprocess.run(["bash", "-c", printf], cwd=tmp_path, env={"HOME": str(tmp_path)}, check=True)
    loaded = subprocess.run(
        ["bash", "-c", '. ~/.cascade.env && printf %s "$CASCADE_URL"'],
        cwd=tmp_path,
        env={"HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert loaded == url
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


# --- generated from the routes and the models ---------------------------------------------------


def table_rows(prompt: str) -> list[tuple[str, str]]:
    return re.findall(r"^\| (GET|POST|PUT|DELETE) \| `([^`]*)` \|", section(prompt, "API"), flags=re.M)


async def test_the_api_table_is_every_api_route_of_the_app(server: LiveServer):
    served = agent_prompt_routes.app_routes(server.app)
    async with server.client() as http:
        prompt = (await http.get("/agent-prompt.md")).text
    assert table_rows(prompt) == served  # every route, in the app's order, nothing else
    assert table_rows(prompt_text("http://x")) == served  # `cascade agent-prompt`: the same table
    assert agent_prompt_routes.NO_NOTE not in prompt  # every route says what it does
    assert agent_prompt_routes.stale_notes(served) == []


def test_the_types_section_is_every_field_of_every_model_with_its_type():
    types = section(prompt_text("http://x"), "Types")
    blocks = dict(re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", types, flags=re.M | re.S))
    assert [name for name in blocks if name not in UNIONS] == [model.__name__ for model in TYPES]
    for model in TYPES:
        listed = dict(re.findall(r"^- `(\w+)` \(`([^`]+)`\)", blocks[model.__name__], flags=re.M))
        inherited = re.search(r"Every field of `(\w+)`", blocks[model.__name__])
        if inherited:
            listed.update(re.findall(r"^- `(\w+)` \(`([^`]+)`\)", blocks[inherited.group(1)], flags=re.M))
        declared = {
            name: type_name(info.annotation)
            for name, info in model.model_fields.items()
            if not info.exclude  # server-side only, never sent
        }
        assert listed == declared, model.__name__
    # The types the API returns are all there: every model a listed type refers to is listed.
    named = {m.__name__ for m in TYPES}
    referred = {
        word
        for model in TYPES
        for info in model.model_fields.values()
        for word in re.findall(r"[A-Z]\w+", type_name(info.annotation))
    }
    assert referred - named - {"Any", "None", "Literal", "TraceState", "SimState", "RunState"} == set()
    assert agent_prompt_types.stale_notes() == []


def test_the_types_follow_a_model_change(monkeypatch):
    """A field added to a model appears in the prompt with no edit to the prompt's source."""
    before = prompt_text("http://x")
    monkeypatch.setitem(
        models.SimSummary.model_fields, "queue_position", models.SimSummary.model_fields["replica"]
    )
    after = prompt_text("http://x")
    assert "`queue_position`" not in before and "- `queue_position` (`int`)" in section(after, "Types")


def test_the_states_section_is_every_state_and_every_move():
    states = section(prompt_text("http://x"), "States")
    for name, literal in (
        ("TraceState", models.TraceState),
        ("SimState", models.SimState),
        ("RunState", models.RunState),
    ):
        block = states.split(f"### {name}\n", 1)[1].split("###", 1)[0]
        assert re.findall(r"^- `(\w+)`", block, flags=re.M) == list(typing.get_args(literal))
    for state, moves in models.SIM_TRANSITIONS.items():
        line = re.search(rf"^- `{state}`.*$", states.split("### SimState\n", 1)[1], flags=re.M).group(0)
        listed = re.findall(r"`(\w+)`", line.split("Next: ", 1)[1])
        assert set(listed) == set(moves), state


# --- the step timeline's error only with its coverage -------------------------------------------

STEP_BLOCK_MARK = '/step-timelines"'


def step_command(prompt: str) -> str:
    [block] = [b for b in re.findall(r"```bash\n(.*?)```", prompt, flags=re.S) if STEP_BLOCK_MARK in b]
    return block


@pytest.mark.parametrize(
    ("coverage", "compared", "says"),
    [
        (
            {"kernels": 40, "simulated_kernels": 0},
            {"count": 0, "mean_abs_error_pct": None},
            "n/a (nothing compared)",
        ),
        ({"kernels": 40, "simulated_kernels": 0}, None, "n/a (nothing compared)"),
        ({}, None, "n/a (nothing compared)"),
        (
            {"kernels": 40, "simulated_kernels": 38},
            {"count": 0, "mean_abs_error_pct": None},
            "n/a (nothing compared)",
        ),
        (
            {"kernels": 40, "simulated_kernels": 38},
            {"count": 3, "mean_abs_error_pct": 12.345},
            "12.35% mean absolute",
        ),
    ],
)
async def test_the_prompt_reads_the_coverage_before_the_step_error(core, tmp_path, coverage, compared, says):
    from tests.helpers import create_run

    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        body = {
            "simulated": {
                "steps": [{"index": 0, "wall_ns": 5.0}],
                "summary": {"per_kind": {}, "simulation": {"coverage": coverage}},
            },
            "compare": None if compared is None else {"steps": [], "summary": {"wall_ns": compared}},
        }
        assert (
            await http.post(f"/api/sims/{run['sims'][0]['id']}/step-timeline", json=body)
        ).status_code == 204
    env = {
        "PATH": "/usr/bin:/bin",
        "CASCADE_URL": core.url,
        "CASCADE_TOKEN": core.settings.token,
        "RUN_ID": run["id"],
        "HOME": str(tmp_path),
    }
    # asyncio's subprocess: the server answering curl runs in this event loop
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        step_command(prompt_text(core.url)),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr
    kernels, simulated = coverage.get("kernels", 0), coverage.get("simulated_kernels", 0)
    steps = (compared or {}).get("count", 0)
    assert stdout.decode().strip() == (
        f"SM7_QV100 #0: {simulated} of {kernels} kernels simulated, {steps} steps "
        f"compared; step wall error {says}"
    ), json.dumps(body)


# --- issue 32: the prompt a spec client reads -----------------------------------------------------


def test_trace_states_say_where_each_goes_next():
    states = section(prompt_text("http://x"), "States")
    block = states.split("### TraceState\n", 1)[1].split("###", 1)[0]
    for state, moves in models.TRACE_TRANSITIONS.items():
        line = re.search(rf"^- `{state}`.*$", block, flags=re.M).group(0)
        listed = re.findall(r"`(\w+)`", line.split("Next: ", 1)[1])
        assert set(listed) == set(moves), state
    assert "- `uploading`" in block and "Next: `processing`, `failed`" in block
    assert re.search(r"^- `ready`.*Next: none \(final\)", block, flags=re.M)


def test_the_run_event_union_is_in_the_types_from_the_model():
    types = section(prompt_text("http://x"), "Types")
    members = typing.get_args(typing.get_args(models.RunEvent)[0])
    names = " | ".join(m.__name__ for m in members)
    block = types.split("### RunEvent\n", 1)[1].split("###", 1)[0]
    assert f"`RunEvent` is `{names}`" in block and "`type`" in block
    # ... before its members, which follow it
    assert types.index("### RunEvent\n") < types.index("### SnapshotEvent\n")


def prompt_routes(prompt: str) -> dict[str, str]:
    """`METHOD path` -> the route's section in the prompt's API part."""
    api = section(prompt, "API")
    return dict(re.findall(r"^### ((?:GET|POST|PUT|DELETE) /\S+)\n(.*?)(?=^### |\Z)", api, flags=re.M | re.S))


def test_every_route_an_agent_may_call_has_its_parameters_returns_and_errors():
    from cascade_server.api.route_docs import PATH_PARAMS, ROUTE_DOCS

    routes = prompt_routes(prompt_text("http://x"))
    for method, path in agent_prompt_routes.table_routes():
        doc = ROUTE_DOCS[(method, path)]
        key = f"{method} {path}"
        if doc.simulator_only:
            assert key not in routes  # the table says never to call it; no more about it
            continue
        text = routes[key]
        assert doc.summary in text, key
        for name in re.findall(r"\{(\w+)\}", path):
            assert f"- Path parameter `{name}` (str): " in text, key
        assert re.search(rf"^- Returns: `{doc.status}`", text, flags=re.M), key
        for status, when in doc.errors:
            assert f"- `{status}`: {when}" in text, key
        if doc.query is not None:
            for name in doc.query.model_fields:
                assert f"`{name}`" in text, key
    run = routes["POST /api/runs"]
    assert "- Body: `RunCreate`, JSON." in run and "- Returns: `201` with a `RunDetail`." in run
    assert "](#" not in section(prompt_text("http://x"), "API")  # no links to the reference's anchors
    assert PATH_PARAMS  # one wording for both


async def test_fields_a_response_leaves_out_say_so_as_the_api_answers(core):
    """A spec client reads the types: each field the API leaves out of a response while it holds
    its default says so, and no other field does; checked against a real run's answer."""
    types = section(prompt_text("http://x"), "Types")

    def omitted(model_name: str) -> set[str]:
        block = types.split(f"### {model_name}\n", 1)[1].split("\n### ", 1)[0]
        return set(re.findall(r"^- `(\w+)`.*Omitted when default", block, flags=re.M))

    async with core.client() as http:
        run = (
            await http.post(
                "/api/runs",
                json={
                    "trace_id": "tinyformer-step-sm70",
                    "entries": [{"gpu_config": "SM7_QV100", "count": 1}],
                },
            )
        ).json()
    entry, sim = run["entries"][0], run["sims"][0]
    assert set(entry) == {"gpu_config", "count"}
    assert omitted("RunEntry") == set(models.RunEntry.model_fields) - set(entry)
    assert omitted("RunEntry") == {
        "shards",
        "warmup_kernels",
        "on_kernel_failure",
        "sampling",
        "power",
        "options",
        "label",
    }
    shown = {name for name, info in models.SimSummary.model_fields.items() if not info.exclude}
    assert omitted("SimSummary") == shown - set(sim)  # kernels_failed, shard, retry_of
    assert {"shards", "label"} & omitted("RunEntry") and "count" not in omitted("RunEntry")
    line = re.search(r"^- `shards` .*$", types, flags=re.M).group(0)
    assert line.endswith("Omitted when default (`1`).")
