"""The embedded `rclone serve s3`: start/stop, credentials stored 0600 and reused, signature
checks, demo traces, and `cascade upload` finding it through the data dir."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from cascade_core.s3_endpoint import S3Info, credentials_path, make_client, read_credentials_file
from cascade_server.settings import Settings
from cascade_server.traces.embedded_s3 import DEMO_TRACE_IDS, EmbeddedS3Error, embedded_s3, upload_demo_traces
from tests.helpers import free_port

from .test_trace_helpers import SAMPLE_TRACES, raw_dir_for_upload


def settings_for(tmp_path, **kw) -> Settings:
    kw.setdefault("s3_port", free_port())
    return Settings(data_dir=tmp_path / "data", **kw)


async def test_embedded_s3_serves_checks_signatures_and_reuses_its_credentials(tmp_path):
    settings = settings_for(tmp_path)
    async with embedded_s3(settings) as info:
        assert info.endpoint == f"http://127.0.0.1:{settings.s3_port}" and info.bucket == "cascade"
        client = make_client(info)
        client.put_object(Bucket="cascade", Key="accelsim-traces/x/a", Body=b"abc")
        assert (settings.data_dir / "s3" / "cascade" / "accelsim-traces" / "x" / "a").read_bytes() == b"abc"
        wrong = make_client(S3Info(info.endpoint, "cascade", info.access_key, "not-the-secret-0000"))
        with pytest.raises(ClientError, match="SignatureDoesNotMatch"):
            wrong.list_objects_v2(Bucket="cascade")
        path = credentials_path(settings.data_dir)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert read_credentials_file(settings.data_dir) == info
        first = info
    with pytest.raises(EndpointConnectionError):  # stopped: nothing listens any more
        make_client(first).list_objects_v2(Bucket="cascade")
    async with embedded_s3(settings) as info:
        assert (info.access_key, info.secret_key) == (first.access_key, first.secret_key)
        objects = make_client(info).list_objects_v2(Bucket="cascade")["Contents"]
        assert [o["Key"] for o in objects] == ["accelsim-traces/x/a"]  # kept across restarts


async def test_a_busy_port_is_a_one_line_error(tmp_path):
    settings = settings_for(tmp_path)
    async with embedded_s3(settings):
        with pytest.raises(EmbeddedS3Error, match=f"127.0.0.1:{settings.s3_port} is already in use") as exc:
            async with embedded_s3(settings_for(tmp_path / "other", s3_port=settings.s3_port)):
                pass
        assert "\n" not in str(exc.value)


@pytest.mark.slow
async def test_demo_traces_are_uploaded_once_into_an_empty_bucket(tmp_path):
    settings = settings_for(tmp_path, samples=True)
    async with embedded_s3(settings) as info:
        assert await upload_demo_traces(info, settings) == list(DEMO_TRACE_IDS)
        client = make_client(info)
        for trace_id in DEMO_TRACE_IDS:
            keys = {
                o["Key"]
                for o in client.list_objects_v2(Bucket="cascade", Prefix=f"accelsim-traces/{trace_id}/")[
                    "Contents"
                ]
            }
            local = {
                p.relative_to(SAMPLE_TRACES).as_posix()
                for p in (SAMPLE_TRACES / trace_id).rglob("*")
                if p.is_file()
            }
            assert keys == {f"accelsim-traces/{rel}" for rel in local}
        assert await upload_demo_traces(info, settings) == []  # not empty any more
    disabled = settings_for(tmp_path / "nosamples", samples=False)
    async with embedded_s3(disabled) as info:
        assert await upload_demo_traces(info, disabled) == []


async def test_cascade_upload_finds_the_embedded_endpoint_through_the_data_dir(tmp_path):
    settings = settings_for(tmp_path)
    directory = raw_dir_for_upload(tmp_path)
    async with embedded_s3(settings) as info:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("CASCADE_", "AWS_ACCESS", "AWS_SECRET"))
        }
        env["CASCADE_DATA_DIR"] = str(settings.data_dir)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "upload",
            str(directory),
            "--trace-id",
            "via-data-dir",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == "via-data-dir"
        keys = [o["Key"] for o in make_client(info).list_objects_v2(Bucket="cascade")["Contents"]]
        assert "accelsim-traces/via-data-dir/metadata.json" in keys
