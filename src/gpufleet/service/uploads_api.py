"""``/api/v1/uploads``: each team's simulation input files (request traces, batch job and fleet files), which
``simulate`` and ``sweep`` jobs of the autoscale and batch simulators name by id (:mod:`.uploads`). Another
team's id is 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, Response, UploadFile
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from gpufleet.service import uploads
from gpufleet.service.auth import Principal
from gpufleet.service.db import Upload
from gpufleet.service.deps import State, bearer_principal, state
from gpufleet.service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/api/v1/uploads", responses=ERROR_RESPONSES, tags=["uploads"])
Who = Annotated[Principal, Depends(bearer_principal)]
St = Annotated[State, Depends(state)]


class UploadOut(BaseModel):
    id: int
    kind: str = Field(description="trace, jobs or batch_fleet.")
    name: str = Field(description="The uploaded file name reduced to a safe name (never used as a path).")
    format: str = Field(description="The layout the simulator's reader found (azure, mooncake, ...).")
    size_bytes: int
    sha256: str = Field(description="SHA-256 of the text.")
    summary: str = Field(description="What the reader found, e.g. '800 requests over 3,540 s (azure)'.")
    created_unix_s: float


def upload_out(row: Upload) -> UploadOut:
    return UploadOut(
        id=row.id,
        kind=row.kind,
        name=row.name,
        format=row.format,
        size_bytes=row.size_bytes,
        sha256=row.sha256,
        summary=row.summary,
        created_unix_s=row.created_unix_s,
    )


@router.post("", status_code=201, response_model=UploadOut)
async def upload(
    who: Who,
    st: St,
    file: Annotated[UploadFile, File(description="The file, as `gpufleet simulate` reads it.")],
    kind: Annotated[str, Form(description="trace (autoscale), jobs or batch_fleet (batch).")],
    input_format: Annotated[
        str,
        Form(
            max_length=20,
            description="trace: auto, azure, mooncake, burstgpt, generic; jobs: auto, generic, pai, openb, "
            "helios, philly (as --trace-format, --jobs-format).",
        ),
    ] = "auto",
) -> UploadOut:
    """Keep an input file for the team's simulations (editor): checked by the simulator's reader first
    (400/422 with its message), 413 over the upload limit."""
    who.require("editor")
    limit = st.settings.upload_max_bytes
    data = await file.read(limit + 1)  # one byte past the limit tells "too large" without reading more
    row = await run_in_threadpool(
        lambda: uploads.save(
            st.sm,
            who,
            kind=kind,
            filename=file.filename,
            data=data,
            max_bytes=limit,
            input_format=input_format,
        )
    )
    return upload_out(row)


@router.get("", response_model=list[UploadOut])
def list_uploads(
    who: Who,
    st: St,
    kind: Annotated[str | None, Query(pattern="^(trace|jobs|batch_fleet)$")] = None,
) -> list[UploadOut]:
    """The team's uploads, newest first (viewer)."""
    return [upload_out(r) for r in uploads.team_uploads(st.sm, who.team_id, kind)]


@router.get("/{upload_id}", response_class=Response)
def get_upload(who: Who, st: St, upload_id: int) -> Response:
    """One of the team's uploads, its text (viewer)."""
    row = uploads.get(st.sm, who.team_id, upload_id)
    media = "application/json" if row.name.lower().endswith(".json") else "text/plain"
    return Response(row.text, media_type=f"{media}; charset=utf-8")


@router.delete("/{upload_id}", response_model=UploadOut)
def delete_upload(who: Who, st: St, upload_id: int) -> UploadOut:
    """Delete one of the team's uploads (editor)."""
    return upload_out(uploads.delete(st.sm, who, upload_id))
