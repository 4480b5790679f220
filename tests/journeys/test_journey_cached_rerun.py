"""Journey: a cached rerun with the endpoint down (README "Evaluate a model", docs/protocol.md
section 7 on the request cache). The model server refuses the reasoning effort, the evaluation
keeps every response in a request cache, the server goes away, and the same command into a new
directory is refused in one line (the endpoint is checked whatever the cache holds) and completes
from the cache alone with ``--offline``; it verifies, and it compares with the live run without
``--force`` (two runs of the same command).

    spatialscout evaluate --agent openai:MODEL --base-url URL --scenes ... --out runs/live --request-cache cache
    spatialscout evaluate --agent openai:MODEL --base-url URL --scenes ... --out runs/offline --request-cache cache --offline
    spatialscout verify runs/offline
    spatialscout compare runs/live runs/offline

Every command is the real CLI in a subprocess; a scripted OpenAI-compatible server on 127.0.0.1
(real ``openai`` client), SAPIEN at 32 px."""

from __future__ import annotations

import json

import pytest

from journey_model_helpers import capture_then_finish, cli, model_args
from vlm_scripted import ScriptedServer

pytestmark = [pytest.mark.render, pytest.mark.slow]

SCENES = ["Kitchen_01", "procedural:11"]


def test_a_cached_rerun_completes_with_the_endpoint_down(tmp_path):
    live, offline, cache = tmp_path / "live", tmp_path / "offline", tmp_path / "cache"
    with ScriptedServer(capture_then_finish, refuse_params={"reasoning_effort"}) as server:
        url = server.openai_url
        first = cli(*model_args(url, live, SCENES, "--request-cache", str(cache)))
        assert first.returncode == 0, first.stdout + first.stderr
        assert len(server.refused_requests) == 1
    # the server is gone; the same command, a new directory
    refused = cli(*model_args(url, offline, SCENES, "--request-cache", str(cache)))
    assert refused.returncode == 2 and "cannot reach" in refused.stderr   # checked whatever the cache holds
    rerun = cli(*model_args(url, offline, SCENES, "--request-cache", str(cache), "--offline"))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "offline: no endpoint check" in rerun.stdout and "2 run now, 0 failed" in rerun.stdout
    for scene in ("Kitchen_01", "procedural_11"):
        a = json.loads((live / scene / "seed_0" / "result.json").read_text())
        b = json.loads((offline / scene / "seed_0" / "result.json").read_text())
        assert b["model"]["request_cache"]["live_calls"] == 0 and b["model"]["cost_incurred_usd"] in (0, 0.0, None)
        assert b["all"] == a["all"] and b["model"]["reasoning_effort_sent"] == a["model"]["reasoning_effort_sent"] == {}
    verified = cli("verify", str(offline))
    assert verified.returncode == 0 and "verified" in verified.stdout, verified.stdout + verified.stderr
    compared = cli("compare", str(live), str(offline))
    assert compared.returncode == 0, compared.stderr
    assert "Forced" not in compared.stdout
    assert "| live |" in compared.stdout and "| offline |" in compared.stdout
