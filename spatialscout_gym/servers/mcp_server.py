"""An MCP server exposing one episode's ten tools, so any MCP client can take the benchmark.

``spatialscout mcp --scene SCENE --out DIR [--transport stdio|http] [--port P]`` serves one
:class:`~spatialscout_gym.episode.Episode` (docs/protocol.md section 4) over stdio or streamable HTTP bound
to 127.0.0.1 (path ``/mcp``). Tool input schemas are those of
:func:`spatialscout_gym.conversation.schemas.tool_schemas`; results are a JSON text
``{"ok": ..., "result" | "error": ...}`` (``is_error`` set on refusals), and ``capture_image``
adds the frame as MCP image content (JPEG, at most 384 px) with the pixel conversion stated
(docs/protocol.md section 3). The texts come from the same formatter as the VLM wrapper's
(:mod:`spatialscout_gym.conversation.replies`), so a tool result reads the same over MCP and there
(numbers rounded to 3 decimals by ``model_json``). The first tool result of the session opens with
the initial image (frame 0), before the call's own result. The task prompt of :mod:`spatialscout_gym.conversation.prompt`,
worded for a tool server (the episode ends at ``finish_mapping`` or the budget, not at a reply
without a tool call), is served twice: as the server's ``instructions`` and as the MCP prompt
:data:`PROMPT_NAME` (many clients ignore ``instructions`` but let the user pick a prompt).

HTTP access: the transport binds 127.0.0.1 only. With a token (``spatialscout mcp --transport http``
and ``SPATIALSCOUT_MCP_TOKEN``, ``--token-file`` or ``--generate-token``) every HTTP request must
carry ``Authorization: Bearer <token>``; others get 401, so a second local client cannot drive the
first one's episode.

Liveness: tool calls run off the event loop (on the episode's worker thread), so a ping or another
request is answered while a call waits for the renderer; a stdio line that is no JSON-RPC message
(not JSON, or a batch) is answered with the JSON-RPC error the HTTP transport gives (``id`` null;
:func:`unreadable_error`), never left unanswered.

Budgets: a client's model calls are invisible to the server, so B counts **tool calls** here
(``tool_call_budget``, default 100); V = ``image_budget`` images as usual.

The run directory (trace, result, predictions, frames; :func:`spatialscout_gym.eval.running.runner.write_run`)
(with ``harness.json`` and ``prompt.txt``, as every run) is written when the episode ends (``finish_mapping`` or the budget; before that call's reply is
sent) or, if it has not ended, when the server stops (``end_reason="server_stopped"``). An episode
whose client never called a tool is recorded **failed** (:class:`NoToolCall`), not scored: there is
nothing of the client's to score. Later calls are refused with a reason. Nothing a client receives
carries a score or private scene data.

The run's harness record (``harness.json``'s ``harness``, which ``result.json`` derives) names this
server (:data:`HARNESS_NAME`) and what B counts here, so pages show an MCP run as one, and compare
it by its tool-call budget, not as a reference agent's run.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.core.types import UNLIMITED
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import TOOL_NAMES
from spatialscout_gym.conversation.messages import parse_arguments
from spatialscout_gym.conversation.prompt import DEFAULT_PROMPT_STYLE, check_prompt_style, task_prompt
from spatialscout_gym.conversation.replies import (clip_error, frame_parts, refusal_text, result_text,
                                               unknown_tool_error)
from spatialscout_gym.conversation.schemas import tool_schemas

if TYPE_CHECKING:
    from mcp.server import Server
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["McpEpisode", "build_server", "serve_stdio", "serve_http", "HOST", "stdout_to_stderr",
           "PROMPT_NAME", "BearerAuth", "AnswerUnreadable", "unreadable_error", "HARNESS_NAME", "NoToolCall"]

HOST = "127.0.0.1"
"""The only interface the HTTP transport binds."""
PROMPT_NAME = "spatialscout_task"
"""The MCP prompt holding the task (protocol, inventory, budgets) for this episode."""
HARNESS_NAME = "mcp"
"""``result.json`` ``"harness"`` ``"name"`` of an MCP client's run (the settings check's ``mcp`` kind)."""


class NoToolCall(SpatialScoutError):
    """The server stopped before its client called any tool: the run is recorded failed."""


class McpEpisode:
    """One episode behind the MCP tools, and its run directory.

    Everything that touches the renderer (building it, frame 0, every tool call, writing the run
    directory, closing) runs on one worker thread of this object, so a server can answer the
    client's handshake at once while the renderer warms up (``background=True``): the first tool
    call waits for the warm-up instead.

    Parameters
    ----------
    spec : SceneSpec
    out_dir : path
        The run directory to write (must not exist or be empty unless ``overwrite``).
    renderer : Renderer, optional
        Default: a SAPIEN renderer at ``resolution`` (closed by :meth:`close`).
    resolution, image_budget, tool_call_budget, seed :
        As for :func:`spatialscout_gym.eval.running.runner.run_episode`; ``tool_call_budget`` counts tool calls.
    prompt_style : str
        The task prompt's wording (``--prompt``; docs/protocol.md section 10.1).
    background : bool
        Return before the scene is loaded and frame 0 rendered (a failure then surfaces at the first
        tool call); default False: the constructor waits and raises any failure itself.
    """

    name = "mcp"

    def __init__(self, spec: SceneSpec, out_dir: str | os.PathLike, *, renderer: Any = None,
                 resolution: int = 512, image_budget: int = 100, tool_call_budget: int | None = 100,
                 seed: int = 0, overwrite: bool = False, prompt_style: str = DEFAULT_PROMPT_STYLE,
                 background: bool = False) -> None:
        from concurrent.futures import ThreadPoolExecutor
        out = Path(out_dir)
        if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
            raise FileExistsError(f"run directory {out} already exists and is not empty")
        self.spec, self.out_dir = spec, out
        self.session = EpisodeSession(resolution=resolution, image_budget=image_budget,
                                      tool_call_budget=tool_call_budget, renderer=renderer)   # no render yet
        self.resolution, self.image_budget, self.tool_call_budget, self.seed = (
            self.session.resolution, self.session.image_budget, self.session.tool_call_budget, int(seed))
        self.result: dict | None = None
        self._sent_initial = False
        self.prompt_style = check_prompt_style(prompt_style)
        # the prompt needs the calibration, not a render: the spec's intrinsics on the render grid
        K = spec.public.intrinsics.scaled(self.resolution, self.resolution)
        self.instructions = task_prompt(spec.public, K, model_call_budget=tool_call_budget or UNLIMITED,
                                        image_budget=image_budget, budget_counts_tool_calls=True, style=prompt_style)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spatialscout-mcp-episode")
        self._episode: Episode | None = None
        self._ready = self._thread.submit(self._start)
        if not background:
            self._ready.result()

    def _start(self) -> None:
        self.session.load(self.spec)
        self._episode = self.session.new_episode()

    @property
    def episode(self) -> Episode:
        """The :class:`~spatialscout_gym.episode.Episode` (waits for the warm-up)."""
        self._ready.result()            # re-raises when the warm-up failed
        assert self._episode is not None   # else _start() has set it
        return self._episode

    # ---- one tool call ---------------------------------------------------------------------------
    def call(self, name: str, arguments: Any) -> tuple[list[dict], bool]:
        """Run one tool; returns MCP content blocks (``{"type": "text"|"image", ...}``) and
        whether it is an error. Never raises for bad input. Every call reaches the episode, so an
        unknown tool or unreadable arguments are counted against B and traced like any refusal
        (docs/protocol.md section 4)."""
        try:
            self._ready.result()
        except Exception as exc:   # the scene or renderer could not start: the client hears why
            return [_text(refusal_text(clip_error(f"the episode could not start: {type(exc).__name__}: {exc}")))], True
        return self._thread.submit(self._call, name, arguments).result()

    def _call(self, name: str, arguments: Any) -> tuple[list[dict], bool]:
        ep = self.episode
        ended = ep.done
        args, reason = parse_arguments(arguments)
        # the episode counts and traces every call, an unknown tool or unreadable arguments included
        res = ep.call(str(name), args if args is not None else arguments)
        if not ended and (reason is not None or name not in TOOL_NAMES):   # the reply says why, as the wrapper's
            why = f"{name}: {reason}" if name in TOOL_NAMES else unknown_tool_error(name)
            blocks, err = [_text(refusal_text(clip_error(why)))], True
        else:
            blocks, err = [_text(result_text(res.to_dict()))], not res.ok
            if res.ok and name == "capture_image" and res.frame_id is not None:
                blocks += self._image_blocks(res.frame_id)
        if not self._sent_initial:   # the initial image comes first, before this call's own result
            self._sent_initial = True
            blocks = [{"type": "text", "text": "Initial image of this episode:"}, *self._image_blocks(0), *blocks]
        if ep.done and self.result is None:
            self._write()
        return blocks, err

    def _image_blocks(self, fid: int) -> list[dict]:
        caption, img = frame_parts(self.episode, fid)
        return [{"type": "text", "text": caption},
                {"type": "image", "data": base64.b64encode(img.jpeg).decode("ascii"), "mime_type": "image/jpeg"}]

    # ---- records ---------------------------------------------------------------------------------
    def run_records(self) -> dict[str, Any]:
        """``harness.json`` and ``prompt.txt`` for the run directory, as every run has: the task
        prompt as served (instructions and the MCP prompt), the tool schema, budgets and images."""
        from spatialscout_gym import __version__
        from spatialscout_gym.core.run_files import HARNESS_FILE, PROMPT_FILE
        from spatialscout_gym.conversation.images import JPEG_QUALITY, MAX_SIDE_PX, delivered_size
        K = self.spec.public.intrinsics.scaled(self.resolution, self.resolution)
        harness = {
            "agent": self.name, "prompt_style": self.prompt_style,
            "prompt_role": "MCP server instructions and the MCP prompt " + PROMPT_NAME,
            "task_prompt": self.instructions, "system_prompt": None,
            "first_message": "the initial image (frame 0) comes with the first tool result, before it",
            "budgets": {"tool_call_budget": self.tool_call_budget, "image_budget": self.image_budget,
                        "budget_counts": "tool calls (the server cannot see a client's model calls)"},
            "images": {"max_side_px": MAX_SIDE_PX, "jpeg_quality": JPEG_QUALITY,
                       "delivered_size": list(delivered_size(K.width, K.height, MAX_SIDE_PX)),
                       "render_size": [K.width, K.height]},
            "tool_names": list(TOOL_NAMES), "tool_schema": tool_schemas(),
            "harness": {"name": HARNESS_NAME, "version": __version__, "budget_counts": "tool calls"},
        }
        text = (f"# task prompt ({self.prompt_style} wording, served as the MCP instructions and the MCP "
                f"prompt {PROMPT_NAME})\n\n{self.instructions}\n\n# first tool result\n\nThe initial "
                f"image (frame 0) and its caption come first, then the call's own result.\n")
        return {HARNESS_FILE: harness, PROMPT_FILE: text}

    # ---- ending ----------------------------------------------------------------------------------
    def write(self) -> dict:
        """Score and write the run directory once (ending the episode as ``server_stopped`` if it
        is still running; failed, :class:`NoToolCall`, if no tool was called); returns
        ``result.json``'s contents."""
        self._ready.result()
        return self._thread.submit(self._write).result()

    def _write(self) -> dict:
        if self.result is not None:
            return self.result
        failure = None
        if not self.episode.done:
            if self.episode.tool_calls == 0:     # nothing of the client's to score
                failure = NoToolCall("the MCP client called no tool before the server stopped")
            self.episode.end("server_stopped")
        self.result = self.session.write_run(self.out_dir, self, seed=self.seed, failure=failure)
        return self.result

    def close(self) -> dict | None:
        """Write the run directory if needed and release the renderer (the session's rule); None
        when the episode never started (nothing to write)."""
        try:
            try:
                self._ready.result()
            except Exception:   # never started: nothing to write
                return None
            return self._thread.submit(self._write).result()
        finally:
            try:
                self._thread.submit(self.session.close).result()
            finally:
                self._thread.shutdown(wait=True)


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def build_server(session: McpEpisode) -> Server:
    """A low-level :class:`mcp.server.Server` whose ``tools/list`` and ``tools/call`` serve
    ``session``."""
    import mcp.types as types
    from mcp.server import Server

    tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["parameters"])
             for t in tool_schemas()]
    prompt = types.Prompt(name=PROMPT_NAME, title="SpatialScout task",
                          description=f"The task for scene {session.spec.scene_id}: map the 3D centres "
                                      "of the targets with the ten tools (budgets, task axes, the centre "
                                      "convention; list_entities gives the inventory). Use it as the first "
                                      "user message.")

    async def on_list_prompts(ctx, params) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def on_get_prompt(ctx, params) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise ValueError(f"unknown prompt {params.name!r}; this server has {PROMPT_NAME!r}")
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=session.instructions))])

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx, params) -> types.CallToolResult:
        import anyio
        # off the event loop: a call waits for the renderer (its warm-up, a capture), and the server
        # must keep answering meanwhile (a ping, another request, the client's cancellation)
        blocks, err = await anyio.to_thread.run_sync(session.call, params.name, params.arguments)
        content: list[types.ContentBlock] = [
            types.TextContent(type="text", text=b["text"]) if b["type"] == "text" else
            types.ImageContent(type="image", data=b["data"], mime_type=b["mime_type"])
            for b in blocks]
        return types.CallToolResult(content=content, is_error=err)

    from spatialscout_gym import __version__
    return Server("spatialscout", version=__version__, instructions=session.instructions,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                  on_list_prompts=on_list_prompts, on_get_prompt=on_get_prompt)


def serve_stdio(session: McpEpisode) -> None:
    """Serve over stdin/stdout until the client closes the connection, then write and close."""
    import anyio
    from mcp.server.stdio import stdio_server
    server = build_server(session)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(AnswerUnreadable(read, write), write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        session.close()


def unreadable_error(exc: Exception) -> dict:
    """The JSON-RPC error the streamable HTTP transport answers for a body it cannot read, for a
    stdio line ``exc`` (the transport's parse failure) was raised on: ``-32700`` "Parse error" for
    text that is not JSON, ``-32602`` "Validation error" for JSON that is no JSON-RPC message (a
    batch, an array, is one: MCP has no batches); ``id`` null, as no request id could be read."""
    from mcp.types import INVALID_PARAMS, PARSE_ERROR
    read_errors = getattr(exc, "errors", None)   # a pydantic ValidationError's list of what failed
    errors: list = read_errors() if callable(read_errors) else []
    if any(e.get("type") == "json_invalid" for e in errors):
        code, message = PARSE_ERROR, f"Parse error: {errors[0].get('msg', exc)}"
    else:
        code, message = INVALID_PARAMS, f"Validation error: {exc}"
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class AnswerUnreadable:
    """The stdio transport's read stream, answering each line it could not read (its items that
    are exceptions, which the server would only log, leaving the client waiting for ever) with
    :func:`unreadable_error` on ``write``, as the HTTP transport does; messages pass through."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage
        from mcp.types import JSONRPCError
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(JSONRPCError.model_validate(unreadable_error(item))))

    def __aiter__(self) -> AnswerUnreadable:
        return self

    async def __anext__(self) -> Any:
        import anyio
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerUnreadable:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class BearerAuth:
    """ASGI middleware: HTTP requests without exactly one ``Authorization: Bearer <token>`` header
    get 401 (two, even a wrong one and the right one, are refused: what reads the headers next may
    pick either).

    The comparison is constant-time; lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token or len(token) < 16:
            raise ValueError("the MCP bearer token must have at least 16 characters "
                             "(use --generate-token for a random one)")
        self.app, self._expected = app, f"Bearer {token}".encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            import hmac
            given = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            if len(given) != 1 or not hmac.compare_digest(given[0], self._expected):
                body = json.dumps({"error": "unauthorized: this SpatialScout MCP server needs the header "
                                            "'Authorization: Bearer <token>' (the token the server was "
                                            "started with), once" + (f"; this request has {len(given)}"
                                                                     if len(given) > 1 else "")}).encode("utf-8")
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()),
                                        (b"www-authenticate", b'Bearer realm="spatialscout"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(session: McpEpisode, port: int = 8765, *, ready: Any = None, token: str | None = None,
               stop: Any = None) -> None:
    """Serve streamable HTTP on ``http://127.0.0.1:PORT/mcp`` until stopped (Ctrl-C / SIGTERM, or
    ``stop.set()`` for a ``threading.Event`` ``stop``), then write and close. ``ready`` (a
    ``threading.Event``) is set once the socket listens. With ``token``, requests need
    ``Authorization: Bearer <token>`` (:class:`BearerAuth`)."""
    import uvicorn
    server = build_server(session)
    app: ASGIApp = server.streamable_http_app(host=HOST)
    if token is not None:
        app = BearerAuth(app, token)
    config = uvicorn.Config(app, host=HOST, port=int(port), log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)
    if ready is not None:
        orig = userver.startup

        async def startup(*a, **k):
            await orig(*a, **k)
            ready.set()
        userver.startup = startup  # type: ignore[method-assign]
    if stop is not None:
        import threading

        def watch() -> None:
            stop.wait()
            userver.should_exit = True
        threading.Thread(target=watch, daemon=True).start()
    try:
        userver.run()
    finally:
        session.close()


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr (e.g. while a renderer starts) so that no stray output
    reaches a stdio MCP client; restored on exit."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
