"""JSON request bodies of ``/api/`` read with the input layer's rules
(:func:`gpufleet.fileio.loads_json_strict`) before any route sees them: UTF-8 only, no duplicate keys
(``{"url": a, "url": b}`` kept the last one silently), nesting at most
:data:`gpufleet.fileio.MAX_NESTING_DEPTH` levels, no ``NaN``/``Infinity`` literals. A body that breaks one is
a 400 saying what and where, and how to fix it (it was FastAPI's "There was an error parsing the body", or an
answer built on the last duplicate)."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpufleet.fileio import MAX_NESTING_DEPTH, loads_json_strict

_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media = bytes(value).split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return False


def _content_encoding(scope: Scope) -> str:
    """The request's Content-Encoding ('' when absent or identity)."""
    for name, value in scope.get("headers", []):
        if name == b"content-encoding":
            text = bytes(value).decode("latin-1").strip().lower()
            return "" if text in ("", "identity") else text
    return ""


async def _refuse(send: Send, status: int, kind: str, message: str) -> None:
    payload = json.dumps({"error": {"status": status, "type": kind, "message": message}}).encode()
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": payload})


def body_problem(body: bytes) -> str | None:
    """What is wrong with a JSON body (None: nothing)."""
    if not body.strip():
        return None  # no body: the route says which fields it needs
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"it is not UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start})"
    if text.startswith("\ufeff"):
        return "it starts with a byte-order mark"
    try:
        loads_json_strict(text)
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            return "a number has more than 4,300 digits"
        return str(exc)
    return None


class StrictJsonMiddleware:
    """Reads a JSON body of an ``/api/`` request whole, refuses it with a 422 when :func:`body_problem` finds
    one, else hands it on unchanged (the size limit is the outer :class:`.ops.OpsMiddleware`'s)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        api_body = (
            scope["type"] == "http"
            and scope.get("method") in _METHODS
            and str(scope.get("path", "")).startswith("/api/")
        )
        encoding = _content_encoding(scope) if api_body else ""
        if encoding:  # the body was read as if plain: a gzip body failed as "not UTF-8", a plain one passed
            await _refuse(
                send,
                415,
                "UnsupportedMediaType",
                f"Content-Encoding {encoding[:40]!r} is not accepted: request bodies are read as sent. Send "
                "the body uncompressed, without a Content-Encoding header (or Content-Encoding: identity).",
            )
            return
        if not api_body or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, receive, send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = body_problem(body)
        if problem is not None:
            await _refuse(
                send,
                422,
                "ValidationError",
                f"The request body is not valid JSON: {problem}. Send one JSON object in UTF-8 "
                "(no byte-order mark), each key once, numbers finite, nested at most "
                f"{MAX_NESTING_DEPTH} levels, with Content-Type: application/json.",
            )
            return
        sent = [False]

        async def replay() -> Message:
            if not sent[0]:
                sent[0] = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
