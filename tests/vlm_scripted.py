"""A scripted model server on 127.0.0.1 speaking the OpenAI chat-completions, the OpenAI Responses
and the Anthropic messages wire formats, for tests with the real SDK clients.

Responses (``POST /v1/responses``): every answer carries a reasoning item, the function calls and
a message; the next request must carry that reasoning item and a ``function_call_output`` for
every call id, or the server answers HTTP 400 naming what is missing (as the real API does for a
missing output); a request carrying no earlier answer starts a new conversation.

``ScriptedServer(policy)``: ``policy(step, body, fmt) -> list[(name, arguments)]`` (an empty list
answers with text only); ``arguments`` is a JSON string (sent verbatim in the OpenAI format) or a
dict. ``fail`` maps request numbers (0-based, over all HTTP requests) to ``"500"``, ``"drop"``,
``"429"`` (no header), ``"429:S"`` (``Retry-After: S``, any text) or ``"429:date:S"`` (``Retry-After``
as the HTTP-date S whole seconds after the next whole second), and the same with ``"503"``. ``arrivals`` holds the arrival time
(``time.time()``) of every POST and ``answered`` ``(arrival time, tokens counted)`` of every request
answered 200 (the tokens its ``usage`` reports). Chat completions after the first report 800 of
their input tokens as cached (``prompt_tokens_details.cached_tokens``), as OpenAI's automatic
prompt cache does for a repeated prefix. Anthropic requests with ``cache_control`` breakpoints (at
most 4, or HTTP 400 as the real API answers) are answered as its prompt cache would: the first
writes 900 input tokens to the cache, each later one reads 800 and writes 100, and
``usage.input_tokens`` counts the rest (the whole input stays 1000 + step, as without breakpoints).
``truncate`` holds the model steps whose reply is cut off at an output limit (OpenAI
``finish_reason: "length"``, Responses ``status: "incomplete"`` with ``incomplete_details.reason:
"max_output_tokens"``, Anthropic ``stop_reason: "max_tokens"``). ``models`` maps model names
to the ``max_tokens`` the Anthropic Models API (``GET /v1/models/{name}``) reports; other GETs
answer 404. Every request body is recorded in ``requests`` (parsed JSON) and ``raw`` (text);
GET paths in ``gets``, POST paths in ``posts``. ``refuse_params`` names top-level request parameters the "model" does not
take (e.g. ``reasoning_effort``): a request carrying one is answered HTTP 400 naming it, in the
wire format's own error shape, and its body is kept in ``refused_requests``.
"""

from __future__ import annotations

import email.utils
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class ScriptedServer:
    def __init__(self, policy: Callable, fail: dict[int, str] | None = None,
                 truncate: set[int] | frozenset[int] = frozenset(), models: dict[str, int] | None = None,
                 refuse_params: set[str] | frozenset[str] = frozenset()) -> None:
        self.policy = policy
        self.fail = dict(fail or {})
        self.truncate = set(truncate)
        self.models = dict(models or {})
        self.gets: list[str] = []
        self.posts: list[str] = []
        self.requests: list[dict] = []
        self.raw: list[str] = []
        self.http_requests = 0
        self.steps = 0
        self.expect: dict | None = None     # Responses: what the next request must carry
        self.refused: list[str] = []
        self.refuse_params = set(refuse_params)
        self.refused_requests: list[dict] = []
        self.arrivals: list[float] = []
        self.answered: list[tuple[float, int]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                outer.gets.append(self.path)
                name = self.path.rstrip("/").rsplit("/", 1)[-1]
                if self.path.startswith("/v1/models/") and name in outer.models:
                    self._send(200, {"type": "model", "id": name, "display_name": name,
                                     "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
                                     "max_tokens": outer.models[name]})
                else:
                    self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                "message": f"no model {name}"}})

            def do_POST(self):
                outer.posts.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8")
                arrived = time.time()
                with outer._lock:
                    n = outer.http_requests
                    outer.http_requests += 1
                    outer.arrivals.append(arrived)
                mode = outer.fail.get(n)
                if mode is not None and mode[:3] in ("429", "503"):
                    _, _, after = mode.partition(":")
                    if after.startswith("date:"):
                        after = email.utils.formatdate(math.ceil(time.time()) + float(after[5:]), usegmt=True)
                    self._send(int(mode[:3]), {"error": {"message": "Rate limit reached" if mode[:3] == "429"
                                                         else "Service unavailable", "type": "rate_limit_error"}},
                               {"retry-after": after} if after else {})
                    return
                if mode == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if mode == "500":
                    self._send(500, {"error": {"message": "scripted failure", "type": "server_error"}})
                    return
                req = json.loads(body)
                fmt = ("openai" if self.path.endswith("/chat/completions") else
                       "responses" if self.path.endswith("/responses") else "anthropic")
                if fmt == "anthropic" and _breakpoints(req) > 4:
                    self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                                     f"A maximum of 4 blocks with cache_control may be provided. Found {_breakpoints(req)}."}})
                    return
                bad = sorted(outer.refuse_params & set(req))
                if bad:
                    outer.refused_requests.append(req)
                    if fmt == "anthropic":
                        self._send(400, {"type": "error", "error": {
                            "type": "invalid_request_error", "message": f"{bad[0]}: Extra inputs are not permitted"}})
                    else:
                        self._send(400, {"error": {"message": f"Unsupported parameter: '{bad[0]}' is not "
                                                   f"supported with this model.", "type": "invalid_request_error",
                                                   "param": bad[0], "code": "unsupported_parameter"}})
                    return
                outer.raw.append(body)
                outer.requests.append(req)
                if fmt == "responses":
                    missing = outer._missing_responses_state(req)
                    if missing:
                        outer.refused.append(missing)
                        self._send(400, {"error": {"message": missing, "type": "invalid_request_error"}})
                        return
                calls = outer.policy(outer.steps, req, fmt)
                step = outer.steps
                outer.steps += 1
                if fmt == "responses":
                    reply = _responses(step, calls, req)
                    outer.expect = {"reasoning": reply["output"][0]["id"],
                                    "calls": [o["call_id"] for o in reply["output"] if o["type"] == "function_call"]}
                else:
                    reply = _openai(step, calls, req) if fmt == "openai" else _anthropic(step, calls, req)
                if step in outer.truncate:
                    if fmt == "openai":
                        reply["choices"][0]["finish_reason"] = "length"
                    elif fmt == "responses":
                        reply["status"] = "incomplete"
                        reply["incomplete_details"] = {"reason": "max_output_tokens"}
                    else:
                        reply["stop_reason"] = "max_tokens"
                usage = reply["usage"]
                with outer._lock:
                    outer.answered.append((arrived, sum(usage.get(k, 0) for k in (
                        "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens"))))
                self._send(200, reply)

            def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _missing_responses_state(self, req: dict) -> str:
        """What the previous answer's state the Responses request lacks ('' when complete)."""
        if self.expect is None:
            return ""
        items = req.get("input", [])
        ids = {i.get("id") for i in items if isinstance(i, dict) and i.get("type") == "reasoning"}
        outputs = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"}
        calls = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call"}
        if not (ids or outputs or calls):   # no earlier answer: a new conversation (the next episode)
            return ""
        missing = [f"reasoning item {self.expect['reasoning']}"] if self.expect["reasoning"] not in ids else []
        missing += [f"function_call {c}" for c in self.expect["calls"] if c not in calls]
        missing += [f"function_call_output for {c}" for c in self.expect["calls"] if c not in outputs]
        return ("missing " + ", ".join(missing)) if missing else ""

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _openai(step: int, calls, req) -> dict:
    tool_calls = [{"id": f"call_{step}_{i}", "type": "function",
                   "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                  for i, (name, args) in enumerate(calls)]
    msg = {"role": "assistant", "content": None if calls else "I am done."}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {"id": f"chatcmpl-{step}", "object": "chat.completion", "created": 0, "model": req["model"],
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1000 + step, "completion_tokens": 50, "total_tokens": 1050 + step,
                      "prompt_tokens_details": {"cached_tokens": 800 if step else 0}}}


def _anthropic(step: int, calls, req) -> dict:
    content = [{"type": "text", "text": f"step {step}"}]
    content += [{"type": "tool_use", "id": f"toolu_{step}_{i}", "name": name,
                 "input": json.loads(args) if isinstance(args, str) else args}
                for i, (name, args) in enumerate(calls)]
    return {"id": f"msg_{step}", "type": "message", "role": "assistant", "model": req["model"],
            "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "usage": ({"input_tokens": 1000 + step, "output_tokens": 50} if not _breakpoints(req) else
                      {"input_tokens": 100 + step, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0,
                       "output_tokens": 50} if step == 0 else
                      {"input_tokens": 100 + step, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 800,
                       "output_tokens": 50})}


def _breakpoints(req: dict) -> int:
    """The blocks of an Anthropic request that carry ``cache_control`` (tools, system, messages)."""
    blocks = [*req.get("tools", []), *(req["system"] if isinstance(req.get("system"), list) else [])]
    for m in req.get("messages", []):
        blocks += m["content"] if isinstance(m.get("content"), list) else []
    return sum(isinstance(b, dict) and "cache_control" in b for b in blocks)


def _responses(step: int, calls, req) -> dict:
    output = [{"type": "reasoning", "id": f"rs_{step}", "summary": [{"type": "summary_text", "text": f"plan {step}"}]}]
    output += [{"type": "function_call", "id": f"fc_{step}_{i}", "call_id": f"call_{step}_{i}", "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args), "status": "completed"}
               for i, (name, args) in enumerate(calls)]
    output.append({"type": "message", "id": f"msg_{step}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": f"step {step}", "annotations": []}]})
    return {"id": f"resp_{step}", "object": "response", "created_at": 0, "model": req["model"], "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 1000 + step, "output_tokens": 50, "total_tokens": 1050 + step,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 20}}}


def replies_by_turn(*turns: list) -> Callable:
    """A policy that answers an episode's k-th request with ``turns[k]`` (the last one repeated), k
    counted from the assistant turns its conversation holds, so concurrent episodes interleave
    (chat completions and Anthropic messages; a Responses request carries no ``messages``, and k is
    the server's request count there: one episode at a time)."""
    def policy(step: int, body: dict, fmt: str) -> list:
        own = step if fmt == "responses" else sum(
            1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")
        return turns[min(own, len(turns) - 1)]
    return policy


CAPTURE = [("capture_image", {})]
SUBMIT_CHAIR = [("submit_positions", {"positions": {"chair_1": [1.0, 1.0, 0.0]}})]
FINISH = [("finish_mapping", {})]
capture_submit_finish = replies_by_turn(CAPTURE, SUBMIT_CHAIR, FINISH)
"""Capture, submit ``chair_1`` (the small scene's first target), finish: three model calls."""
capture_finish = replies_by_turn(CAPTURE, FINISH)
"""Capture, then finish: two model calls."""
