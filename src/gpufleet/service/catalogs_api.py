"""``/api/v1/catalogs``: each team's user catalogs (negotiated prices are confidential: another team's id is
404). The team's recommend, migrate and plan apply them on top of the shipped catalog."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from gpufleet.service import user_catalogs as uc
from gpufleet.service.auth import Principal
from gpufleet.service.db import UserCatalog
from gpufleet.service.deps import State, bearer_principal, state
from gpufleet.service.schemas import ERROR_RESPONSES, UserCatalogOut, UserCatalogRequest

router = APIRouter(prefix="/api/v1/catalogs", responses=ERROR_RESPONSES, tags=["catalog"])
Who = Annotated[Principal, Depends(bearer_principal)]
St = Annotated[State, Depends(state)]


def _out(row: UserCatalog) -> UserCatalogOut:
    return UserCatalogOut(
        id=row.id,
        name=row.name,
        offers=row.offers,
        price_overrides=row.price_overrides,
        created_unix_s=row.created_unix_s,
    )


@router.post("", status_code=201, response_model=UserCatalogOut)
def upload(who: Who, st: St, body: UserCatalogRequest) -> UserCatalogOut:
    """Keep a user catalog for the team (editor); it is checked as the CLI's --catalog first (422 naming the
    entry and field otherwise; 409 when the team already has one of that name)."""
    return _out(uc.save(st.sm, who, body.name, body.text))


@router.get("", response_model=list[UserCatalogOut])
def list_catalogs(who: Who, st: St) -> list[UserCatalogOut]:
    """The team's user catalogs, in the order they are applied (viewer)."""
    with st.sm() as db:
        return [_out(r) for r in uc.team_catalogs(db, who.team_id)]


@router.get("/{catalog_id}", response_class=Response)
def get_catalog(who: Who, st: St, catalog_id: int) -> Response:
    """One of the team's catalogs, its text as uploaded (viewer)."""
    row = uc.get(st.sm, who, catalog_id)
    media = "application/json" if row.name.lower().endswith(".json") else "application/yaml"
    return Response(row.text, media_type=media)


@router.delete("/{catalog_id}", response_model=UserCatalogOut)
def delete_catalog(who: Who, st: St, catalog_id: int) -> UserCatalogOut:
    """Delete one of the team's catalogs (editor)."""
    return _out(uc.delete(st.sm, who, catalog_id))
