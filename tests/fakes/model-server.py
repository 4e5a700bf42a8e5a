#!/usr/bin/env python3
"""Stand-in model server for testing real agent CLIs on loopback (stdlib only).

Usage:
    model-server.py [PORT] [--config FILE] [--record FILE] [--host 127.0.0.1]

PORT 0 (default) picks a free port. The first stdout line is always
"PORT=NNNN" (flushed), so a test can read it and then connect.

Endpoints
  OpenAI Responses API     POST /v1/responses           (stream true -> SSE, false -> JSON)
                           POST /v1/responses/compact   (JSON)
  OpenAI Chat Completions  POST /v1/chat/completions    (stream true -> SSE incl. usage chunk)
  Anthropic Messages API   POST /v1/messages            (stream true -> SSE, false -> JSON)
                           POST /v1/messages/count_tokens
  Models lists             GET  /v1/models , /models    (OpenAI + Anthropic shaped union)
  anything else            logged; GET -> 200 {} ; POST -> 200 {}
Paths are also accepted without the /v1 prefix.

Every request is logged to stderr as one line:  REQ <method> <path> <summary>.
With --record FILE (or MODEL_SERVER_RECORD) one JSON line per request is appended:
  {"n":..,"method":..,"path":..,"api":"responses|messages|chat|count_tokens|other",
   "model":..,"stream":..,"response_id":"resp_..|msg_..|chatcmpl-..",
   "usage":{...exactly what was sent (final usage)...},"headers":{...},
   "hint":{"system_head":..,"last_user_tail":..,"n_items":..,"n_tools":..,"tools":[names],
           "tool_result_tail":..(the last tool result the CLI sent back, its last 200 characters)},
   "tool_call":{"name":..,"id":..} (only when the answer was a tool call)}
response_id is what the CLI stores: codex token_usage_record.payload.response_id,
claude transcript message.id. (opencode stores no provider id.)

Configuration (JSON file via --config / MODEL_SERVER_CONFIG, then env overrides):
  {
    "text": "Hello from the stand-in model.",          # reply text (all APIs)
    "openai":    {"input_tokens": 1000, "cached_tokens": 200,
                  "output_tokens": 50, "reasoning_tokens": 10,
                  "total_tokens": null,                   # null -> input+output
                  "cache_write_tokens": null},            # set -> input_tokens_details.cache_write_tokens
    "anthropic": {"input_tokens": 1000, "cache_read_input_tokens": 300,
                  "cache_creation_input_tokens": 40, "output_tokens": 50,
                  "start_output_tokens": null,           # message_start usage.output_tokens; null -> same as output_tokens
                  "delta_full_usage": false,             # also put input/cache counts into message_delta.usage
                  "thinking": null},                     # a string -> emit a thinking block before the text block
    "tool_call": null,                                    # {"name": N, "input": {...}}: answer with that tool
                                                          # call instead of the text (below)
    "script": [ {...}, {...} ]                            # optional: request #i (0-based, per API family
                                                          # "responses"/"messages"/"chat") is deep-merged with script[i]
  }
Env overrides (integers): MS_TEXT, MS_OAI_INPUT, MS_OAI_CACHED, MS_OAI_OUTPUT,
  MS_OAI_REASONING, MS_OAI_TOTAL, MS_OAI_CACHE_WRITE, MS_ANT_INPUT, MS_ANT_CACHE_READ,
  MS_ANT_CACHE_CREATE, MS_ANT_OUTPUT, MS_ANT_START_OUTPUT, MS_ANT_THINKING.

By default the server answers with a plain text message (no tool call): every
CLI tested (codex exec, claude -p, opencode run) finishes its turn on that.
With "tool_call" (usually in one script entry: {"script": [{"tool_call": ...}]})
that request is answered with a call of the tool N, its arguments `input`, in
the API's own shape, and nothing else; the CLI runs the tool and sends its
result in its next request, which the next script entry (or the plain text)
answers:
  Anthropic Messages   a tool_use block (id toolu_..), stop_reason "tool_use";
                       Claude Code's Write takes {"file_path": ABSOLUTE, "content": TEXT}
  OpenAI Responses     a function_call item (call_id call_..), arguments the input as JSON;
                       Codex's exec_command takes {"cmd": SHELL COMMAND} (it offers no
                       file-writing tool of its own to a model it does not know)
  Chat Completions     a tool_calls entry of a function, finish_reason "tool_calls"
The hint's "tools" lists the names a request offers, to pick N from.
"""
import copy
import http.server
import json
import os
import socketserver
import sys
import threading
import time
import uuid

DEFAULTS = {
    "text": "Hello from the stand-in model.",
    "openai": {"input_tokens": 1000, "cached_tokens": 200, "output_tokens": 50,
               "reasoning_tokens": 10, "total_tokens": None, "cache_write_tokens": None},
    "anthropic": {"input_tokens": 1000, "cache_read_input_tokens": 300,
                  "cache_creation_input_tokens": 40, "output_tokens": 50,
                  "start_output_tokens": None, "delta_full_usage": False,
                  "thinking": None},
    "tool_call": None,
    "script": [],
}

ENV_MAP = [
    ("MS_OAI_INPUT", ("openai", "input_tokens")),
    ("MS_OAI_CACHED", ("openai", "cached_tokens")),
    ("MS_OAI_OUTPUT", ("openai", "output_tokens")),
    ("MS_OAI_REASONING", ("openai", "reasoning_tokens")),
    ("MS_OAI_TOTAL", ("openai", "total_tokens")),
    ("MS_OAI_CACHE_WRITE", ("openai", "cache_write_tokens")),
    ("MS_ANT_INPUT", ("anthropic", "input_tokens")),
    ("MS_ANT_CACHE_READ", ("anthropic", "cache_read_input_tokens")),
    ("MS_ANT_CACHE_CREATE", ("anthropic", "cache_creation_input_tokens")),
    ("MS_ANT_OUTPUT", ("anthropic", "output_tokens")),
    ("MS_ANT_START_OUTPUT", ("anthropic", "start_output_tokens")),
]

LOCK = threading.Lock()
COUNTERS = {}
STATE = {"n": 0, "config": None, "record": None}


def deep_merge(base, over):
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def load_config(path):
    cfg = copy.deepcopy(DEFAULTS)
    if path:
        with open(path) as f:
            cfg = deep_merge(cfg, json.load(f))
    if "MS_TEXT" in os.environ:
        cfg["text"] = os.environ["MS_TEXT"]
    if "MS_ANT_THINKING" in os.environ:
        cfg["anthropic"]["thinking"] = os.environ["MS_ANT_THINKING"]
    for env, (sect, key) in ENV_MAP:
        if env in os.environ:
            cfg[sect][key] = int(os.environ[env])
    return cfg


def config_for(family):
    """Config for the next request of an API family (applies script[i])."""
    with LOCK:
        i = COUNTERS.get(family, 0)
        COUNTERS[family] = i + 1
    cfg = STATE["config"]
    script = cfg.get("script") or []
    if i < len(script):
        return deep_merge(cfg, script[i])
    return cfg


def next_reply(family, api, body, default_model):
    """What the next reply of an API family is made of: the whole config (its
    tool_call), the config of its `api` ("openai" or "anthropic"), the text,
    the model and whether to stream."""
    cfg = config_for(family)
    return cfg, cfg[api], cfg["text"], body.get("model", default_model), bool(body.get("stream"))


def log(msg):
    sys.stderr.write(time.strftime("%H:%M:%S ") + msg + "\n")
    sys.stderr.flush()


def record(entry):
    with LOCK:
        STATE["n"] += 1
        entry = dict(n=STATE["n"], **entry)
        if STATE["record"]:
            with open(STATE["record"], "a") as f:
                f.write(json.dumps(entry) + "\n")


def chunks(text, n=8):
    return [text[i:i + n] for i in range(0, len(text), n)] or [""]


def _text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, dict):
                out.append(c.get("text") or c.get("input_text") or "")
            elif isinstance(c, str):
                out.append(c)
        return " ".join(x for x in out if x)
    return ""


def tool_names(body):
    """The names of the tools a request offers (a Responses API tool without one: its type)."""
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            out.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type") or "?")
    return out


def last_tool_result(msgs):
    """The text of the last tool result sent back (Messages tool_result, Responses
    function_call_output, Chat role "tool"), or None."""
    found = None
    for m in msgs if isinstance(msgs, list) else []:
        if not isinstance(m, dict):
            continue
        if m.get("type") == "function_call_output":
            found = _text_of(m.get("output"))
        elif m.get("role") == "tool":
            found = _text_of(m.get("content"))
        elif isinstance(m.get("content"), list):
            for c in m["content"]:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    found = _text_of(c.get("content"))
    return found


def prompt_hint(body):
    """Short hints that let a test tell requests apart (e.g. title generation vs main turn)."""
    if not isinstance(body, dict):
        return {}
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    last_user = ""
    if isinstance(msgs, list):
        for m in msgs:
            if isinstance(m, dict) and m.get("role") == "user":
                last_user = _text_of(m.get("content"))
    system = body.get("system") if "system" in body else body.get("instructions")
    if isinstance(msgs, list) and not system:
        for m in msgs:
            if isinstance(m, dict) and m.get("role") in ("system", "developer"):
                system = _text_of(m.get("content"))
                break
    if not isinstance(system, str):
        system = _text_of(system)
    return {"system_head": (system or "")[:80], "last_user_tail": (last_user or "")[-80:],
            "n_items": len(msgs) if isinstance(msgs, list) else 0,
            "n_tools": len(body.get("tools") or []), "tools": tool_names(body),
            "tool_result_tail": (last_tool_result(msgs) or "")[-200:]}


def tool_call_of(cfg, prefix):
    """The tool call this answer is (config "tool_call"), with a fresh id and its input as JSON; or None."""
    t = cfg.get("tool_call")
    if not t:
        return None
    inp = t.get("input") or {}
    return {"name": t["name"], "input": inp, "arguments": json.dumps(inp), "id": prefix + uuid.uuid4().hex[:24]}


def call_record(call):
    return {"tool_call": {"name": call["name"], "id": call["id"]}} if call else {}


def oai_usage(o):
    total = o.get("total_tokens")
    if total is None:
        total = o["input_tokens"] + o["output_tokens"]
    details = {"cached_tokens": o["cached_tokens"]}
    if o.get("cache_write_tokens") is not None:
        details["cache_write_tokens"] = o["cache_write_tokens"]
    return {
        "input_tokens": o["input_tokens"],
        "input_tokens_details": details,
        "output_tokens": o["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": o["reasoning_tokens"]},
        "total_tokens": total,
    }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model-server/1"

    def log_message(self, fmt, *args):  # silence default access log
        pass

    # ---------- helpers
    def norm_path(self):
        p = self.path
        if p.startswith("http://") or p.startswith("https://"):
            # absolute-form (client talking to us as if we were a proxy)
            p = "/" + p.split("://", 1)[1].split("/", 1)[-1]
        p = p.split("?", 1)[0]
        while p.startswith("/v1/"):  # tolerate base URLs given with or without /v1
            p = p[3:]
        return p

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = b""
        if n:
            raw = self.rfile.read(n)
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        if raw and self.headers.get("Content-Encoding", "").lower() in ("zstd", "gzip", "br", "deflate"):
            enc = self.headers.get("Content-Encoding").lower()
            if enc == "gzip":
                import gzip
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                import zlib
                raw = zlib.decompress(raw)
            else:
                log("WARN body is %s-encoded; cannot decode with stdlib" % enc)
                return {"_undecodable": enc}
        try:
            return json.loads(raw) if raw else {}
        except Exception:
            return {"_raw": raw[:200].decode("latin1")}

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, event, data):
        msg = ""
        if event:
            msg += "event: %s\n" % event
        msg += "data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data))
        self.wfile.write(msg.encode())
        self.wfile.flush()

    def hdr_summary(self):
        keep = {}
        for k in ("Host", "User-Agent", "Authorization", "x-api-key", "anthropic-version",
                  "anthropic-beta", "OpenAI-Beta", "originator", "version", "session_id",
                  "x-app", "Content-Encoding", "Accept-Encoding"):
            v = self.headers.get(k)
            if v is not None:
                if k in ("Authorization", "x-api-key"):
                    v = v[:14] + "..."
                keep[k] = v
        return keep

    def logreq(self, body=None, extra=""):
        s = ""
        if isinstance(body, dict) and body:
            s = "model=%s stream=%s" % (body.get("model"), body.get("stream"))
            if "max_tokens" in body:
                s += " max_tokens=%s" % body.get("max_tokens")
        log("REQ %s %s %s %s ua=%r host=%r" % (self.command, self.path, s, extra,
                                               self.headers.get("User-Agent"),
                                               self.headers.get("Host")))

    # ---------- dispatch
    def do_HEAD(self):
        self.logreq()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        record({"method": "HEAD", "path": self.path, "api": "other", "headers": self.hdr_summary()})

    def do_GET(self):
        p = self.norm_path()
        self.logreq()
        record({"method": "GET", "path": self.path, "api": "other", "headers": self.hdr_summary()})
        if p in ("/models",):
            now = int(time.time())
            ids = ["stand-in-model", "gpt-5.1-codex", "claude-sonnet-4-5", "claude-haiku-4-5"]
            return self.send_json({
                "object": "list",
                "data": [{"id": i, "object": "model", "created": now, "owned_by": "stand-in",
                          "type": "model", "display_name": i, "created_at": "2025-01-01T00:00:00Z"}
                         for i in ids],
                # codex "remote models" shape
                "models": [],
                "has_more": False, "first_id": ids[0], "last_id": ids[-1],
            })
        if p.startswith("/models/"):
            mid = p.split("/", 2)[2]
            return self.send_json({"id": mid, "object": "model", "type": "model",
                                   "display_name": mid, "created_at": "2025-01-01T00:00:00Z"})
        return self.send_json({})

    def do_POST(self):
        p = self.norm_path()
        body = self.read_body()
        if p == "/responses":
            return self.openai_responses(body)
        if p == "/responses/compact":
            self.logreq(body)
            cfg = config_for("responses")
            return self.send_json({"output": [{"type": "message", "role": "user",
                                               "content": [{"type": "input_text", "text": cfg["text"]}]}]})
        if p == "/chat/completions":
            return self.chat_completions(body)
        if p == "/messages":
            return self.anthropic_messages(body)
        if p == "/messages/count_tokens":
            self.logreq(body)
            record({"method": "POST", "path": self.path, "api": "count_tokens",
                    "model": body.get("model"), "headers": self.hdr_summary()})
            return self.send_json({"input_tokens": STATE["config"]["anthropic"]["input_tokens"]})
        self.logreq(body, "(unknown)")
        record({"method": "POST", "path": self.path, "api": "other", "headers": self.hdr_summary(),
                "body_keys": sorted(body.keys()) if isinstance(body, dict) else None})
        return self.send_json({})

    def record_answer(self, api, body, model, stream, response_id, usage, call):
        """One model answer in the record: what was asked, what was answered."""
        record(dict({"method": "POST", "path": self.path, "api": api, "model": model,
                     "stream": stream, "response_id": response_id, "usage": usage,
                     "headers": self.hdr_summary(), "hint": prompt_hint(body)}, **call_record(call)))

    # ---------- OpenAI Responses
    def openai_responses(self, body):
        cfg, o, text, model, stream = next_reply("responses", "openai", body, "stand-in-model")
        usage = oai_usage(o)
        self.logreq(body, "input_items=%d" % len(body.get("input") or []))
        rid = "resp_" + uuid.uuid4().hex
        mid = "msg_" + uuid.uuid4().hex
        call = tool_call_of(cfg, "call_")
        self.record_answer("responses", body, model, stream, rid, usage, call)
        now = int(time.time())
        item_done = {"type": "message", "id": mid, "status": "completed", "role": "assistant",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}
        if call:
            item_done = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex, "status": "completed",
                         "call_id": call["id"], "name": call["name"], "arguments": call["arguments"]}
        base = {"id": rid, "object": "response", "created_at": now, "model": model,
                "status": "in_progress", "output": [], "usage": None}
        if not stream:
            resp = dict(base, status="completed", output=[item_done], usage=usage)
            return self.send_json(resp)
        self.start_sse()
        seq = [0]

        def ev(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self.sse(obj["type"], obj)

        ev({"type": "response.created", "response": base})
        ev({"type": "response.in_progress", "response": base})
        if call:
            fid = item_done["id"]
            ev({"type": "response.output_item.added", "output_index": 0,
                "item": dict(item_done, status="in_progress", arguments="")})
            for c in chunks(call["arguments"], 32):
                ev({"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": 0,
                    "delta": c})
            ev({"type": "response.function_call_arguments.done", "item_id": fid, "output_index": 0,
                "arguments": call["arguments"]})
            ev({"type": "response.output_item.done", "output_index": 0, "item": item_done})
            ev({"type": "response.completed",
                "response": dict(base, status="completed", output=[item_done], usage=usage)})
            return
        ev({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "id": mid, "status": "in_progress", "role": "assistant", "content": []}})
        ev({"type": "response.content_part.added", "item_id": mid, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}})
        for c in chunks(text):
            ev({"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                "content_index": 0, "delta": c})
        ev({"type": "response.output_text.done", "item_id": mid, "output_index": 0,
            "content_index": 0, "text": text})
        ev({"type": "response.content_part.done", "item_id": mid, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": []}})
        ev({"type": "response.output_item.done", "output_index": 0, "item": item_done})
        ev({"type": "response.completed",
            "response": dict(base, status="completed", output=[item_done], usage=usage)})

    # ---------- OpenAI Chat Completions
    def chat_completions(self, body):
        cfg, o, text, model, stream = next_reply("chat", "openai", body, "stand-in-model")
        total = o.get("total_tokens")
        if total is None:
            total = o["input_tokens"] + o["output_tokens"]
        usage = {"prompt_tokens": o["input_tokens"], "completion_tokens": o["output_tokens"],
                 "total_tokens": total,
                 "prompt_tokens_details": {"cached_tokens": o["cached_tokens"]},
                 "completion_tokens_details": {"reasoning_tokens": o["reasoning_tokens"]}}
        self.logreq(body, "messages=%d" % len(body.get("messages") or []))
        cid = "chatcmpl-" + uuid.uuid4().hex
        call = tool_call_of(cfg, "call_")
        self.record_answer("chat", body, model, stream, cid, usage, call)
        now = int(time.time())
        message = {"role": "assistant", "content": text}
        finish = "stop"
        if call:
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                       "function": {"name": call["name"], "arguments": call["arguments"]}}]}
            finish = "tool_calls"
        if not stream:
            return self.send_json({"id": cid, "object": "chat.completion", "created": now, "model": model,
                                   "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                                   "usage": usage})
        self.start_sse()
        base = {"id": cid, "object": "chat.completion.chunk", "created": now, "model": model}
        if call:
            self.sse(None, dict(base, choices=[{"index": 0, "delta": message, "finish_reason": None}]))
        else:
            self.sse(None, dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                "finish_reason": None}]))
            for c in chunks(text):
                self.sse(None, dict(base, choices=[{"index": 0, "delta": {"content": c}, "finish_reason": None}]))
        self.sse(None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        self.sse(None, dict(base, choices=[], usage=usage))
        self.sse(None, "[DONE]")

    # ---------- Anthropic Messages
    def anthropic_messages(self, body):
        cfg, a, text, model, stream = next_reply("messages", "anthropic", body, "claude-stand-in")
        start_out = a.get("start_output_tokens")
        if start_out is None:
            start_out = a["output_tokens"]
        usage_start = {"input_tokens": a["input_tokens"],
                       "cache_creation_input_tokens": a["cache_creation_input_tokens"],
                       "cache_read_input_tokens": a["cache_read_input_tokens"],
                       "output_tokens": start_out}
        usage_final = dict(usage_start, output_tokens=a["output_tokens"])
        self.logreq(body, "messages=%d" % len(body.get("messages") or []))
        mid = "msg_" + uuid.uuid4().hex[:24]
        call = tool_call_of(cfg, "toolu_")
        self.record_answer("messages", body, model, stream, mid, usage_final, call)
        thinking = a.get("thinking")
        content = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking, "signature": "c3RhbmQtaW4="})
        if call:
            content.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["input"]})
        else:
            content.append({"type": "text", "text": text})
        stop = "tool_use" if call else "end_turn"
        if not stream:
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model,
                                   "content": content, "stop_reason": stop,
                                   "stop_sequence": None, "usage": usage_final})
        self.start_sse()
        self.sse("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage_start}})
        idx = 0
        if thinking:
            self.sse("content_block_start", {"type": "content_block_start", "index": idx,
                                             "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for c in chunks(thinking):
                self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "thinking_delta", "thinking": c}})
            self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                             "delta": {"type": "signature_delta", "signature": "c3RhbmQtaW4="}})
            self.sse("content_block_stop", {"type": "content_block_stop", "index": idx})
            idx += 1
        if call:
            self.sse("content_block_start", {"type": "content_block_start", "index": idx,
                                             "content_block": {"type": "tool_use", "id": call["id"],
                                                               "name": call["name"], "input": {}}})
            for c in chunks(call["arguments"], 32):
                self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "input_json_delta", "partial_json": c}})
        else:
            self.sse("content_block_start", {"type": "content_block_start", "index": idx,
                                             "content_block": {"type": "text", "text": ""}})
            self.sse("ping", {"type": "ping"})
            for c in chunks(text):
                self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "text_delta", "text": c}})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": idx})
        delta_usage = {"output_tokens": a["output_tokens"]}
        if a.get("delta_full_usage"):
            delta_usage = dict(usage_final)
        self.sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": delta_usage})
        self.sse("message_stop", {"type": "message_stop"})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main(argv):
    port, cfg_path, host = 0, os.environ.get("MODEL_SERVER_CONFIG"), "127.0.0.1"
    STATE["record"] = os.environ.get("MODEL_SERVER_RECORD")
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--config":
            cfg_path = args.pop(0)
        elif a == "--record":
            STATE["record"] = args.pop(0)
        elif a == "--host":
            host = args.pop(0)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            port = int(a)
    STATE["config"] = load_config(cfg_path)
    srv = Server((host, port), Handler)
    print("PORT=%d" % srv.server_address[1], flush=True)
    log("listening on %s:%d config=%s" % (host, srv.server_address[1], json.dumps(STATE["config"])))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
