"""Helpers of the lab journey (tests/journeys/test_journey_lab.py): the scripted model's plan for
any wire format, the presets file of three providers, an Inspect run and an MCP client episode on
the lab's scenes and budgets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCENES = ["Kitchen_01", "Kitchen_02"]   # one catalog version, as the MCP run on the first
V, B, RES = 3, 4, 32
PRICE = {"input_per_mtok": 10.0, "output_per_mtok": 40.0}     # a scripted call: about $0.012


def own_turn(body: dict, fmt: str) -> int:
    """The episode's own turn: the answers its request carries back (episodes interleave across
    workers; a Responses request carries each earlier answer's reasoning item)."""
    if fmt == "responses":
        return sum(1 for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "reasoning")
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


def capture_list_submit_finish(step: int, body: dict, fmt: str) -> list:
    """Capture, list the entities, submit the true centre of ``Chair_1`` (a target of both scenes),
    finish: four model calls an episode (B)."""
    turn = own_turn(body, fmt)
    if turn >= 3:
        return [("finish_mapping", {})]
    if turn == 2:
        return [("submit_positions", {"positions": {"Chair_1": chair_centre(json.dumps(body))}})]
    return [[("capture_image", {})], [("list_entities", {})]][turn]


def chair_centre(text: str) -> list[float]:
    """``Chair_1``'s true centre in the scene whose every target id the text names."""
    from spatialscout_gym.core.scoring import GroundTruth
    from spatialscout_gym.scenes.catalog import scene_by_name
    for scene in SCENES:
        gt = GroundTruth.from_spec(scene_by_name(scene))
        if all(i in text for i in gt.ids):
            return [float(x) for x in gt.centers_task[gt.ids.index("Chair_1")]]
    raise AssertionError("the conversation names no lab scene's inventory")


def presets_text(chat_url: str, responses_url: str, claude_url: str, cache: Path) -> str:
    """Three providers at effort ``high``: chat completions (2 workers, capped from the command
    line), Responses (its request cache kept), Anthropic."""
    price = "price = {{ input_per_mtok = {input_per_mtok}, output_per_mtok = {output_per_mtok} }}".format(**PRICE)
    return f"""
[models.chat]
agent = "openai:chat-x"
base_url = "{chat_url}"
api_key_env = "LAB_CHAT_KEY"
reasoning_effort = "high"
{price}
workers = 2

[models.responses]
agent = "openai-responses:resp-x"
base_url = "{responses_url}"
api_key_env = "LAB_RESPONSES_KEY"
reasoning_effort = "high"
{price}
max_cost_usd = 1.0
request_cache = "{cache}"

[models.claude]
agent = "anthropic:claude-x"
base_url = "{claude_url}"
api_key_env = "LAB_CLAUDE_KEY"
reasoning_effort = "high"
{price}
max_cost_usd = 1.0
"""


def lab_env() -> dict[str, str]:
    from journey_model_helpers import cli_env
    return {**cli_env(), "LAB_CHAT_KEY": "chat-secret", "LAB_RESPONSES_KEY": "resp-secret",
            "LAB_CLAUDE_KEY": "claude-secret"}


def spatialscout(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", *argv], capture_output=True,
                          text=True, timeout=timeout, env=lab_env())


def verify_trimmed(d: Path) -> tuple[int, list[str]]:
    """``spatialscout verify DIR --no-cache`` in a fresh process whose environment holds PATH, HOME and
    the repository's path only (no key, no endpoint, no cache): the exit code and each episode's status."""
    repo = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(repo)}
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "verify", str(d), "--json", "--no-cache",
                        "--no-progress"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert p.stdout.strip(), p.stderr[-2000:]
    out = json.loads(p.stdout)
    return p.returncode, [e["status"] for checks in out["dirs"].values() for e in checks]


def inspect_run(url: str, out: Path, tmp: Path) -> subprocess.CompletedProcess:
    """``inspect eval spatialscout_gym/spatialscout`` at the lab's scenes, budgets and effort."""
    from inspect_and_evaluate_runs import inspect_path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(inspect_path(tmp)), "SCRIPTED_BASE_URL": url,
           "SCRIPTED_API_KEY": "local"}
    return subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "spatialscout_gym/spatialscout",
                           "--model", "openai-api/scripted/inspect-x", "-T", f"scenes={','.join(SCENES)}",
                           "-T", "repeats=1", "-T", f"image_budget={V}", "-T", f"call_budget={B}",
                           "-T", f"resolution={RES}", "-T", "reasoning_effort=high", "-T", f"out={out}",
                           "--log-dir", str(tmp / "inspect_logs"), "--display", "plain", "--max-samples", "1"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp)


def mcp_episode(out: Path) -> None:
    """One MCP client episode over stdio on the lab's first scene at its V and resolution: a
    capture, one submission, finish."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "spatialscout_gym.cli.main", "mcp", "--scene", SCENES[0], "--out", str(out),
        "--resolution", str(RES), "--image-budget", str(V)], env=lab_env())

    async def session():
        async with Client(stdio_client(params, errlog=sys.__stderr__), mode="legacy") as client:
            await client.call_tool("capture_image", {})
            inventory = await client.call_tool("list_entities", {})
            centre = chair_centre(inventory.content[0].text)
            await client.call_tool("submit_positions", {"positions": {"Chair_1": centre}})
            await client.call_tool("finish_mapping", {})
    anyio.run(session)
