"""What a request may make the server read: nothing of its own files.

The library resolves a model given as a path by reading that config.json (the CLI's ``--model
./config.json``). Over HTTP the same field would let any token holder make the server open a file of its
choosing, so every request runs under :func:`gpufleet.models.registry.model_files_forbidden`, and a job's
process forbids it for its whole life (:mod:`.job_child`). A model sent as a path is answered 404 with the
allowed kinds of name (shipped ids, aliases, Hugging Face repo ids, size classes).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from gpufleet.models.registry import model_files_forbidden


class NoServerFilesMiddleware:
    """Runs every HTTP request with model config paths forbidden (the ASGI call and the threads it starts
    inherit the context)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with model_files_forbidden():
            await self.app(scope, receive, send)
