"""Teams, roles and tokens; who is asking (:class:`Principal`) and what they may do.

A token is ``gpf_`` + 40 random URL-safe characters (240 bits from :mod:`secrets`); the database keeps its
SHA-256 only, so a token is shown once, at creation. A plain hash (no salt, no key stretching) is enough for a
random secret of that size: no dictionary applies, and each request must verify it fast. Sessions of the
dashboard are the same: a random secret in an HttpOnly cookie, its hash in the ``sessions`` table, removed
when its token is revoked.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from gpufleet.errors import InputError
from gpufleet.service.db import ROLES, Session, Team, Token, now_unix_s
from gpufleet.service.errors import Forbidden, NotAuthenticated, NotFound

TOKEN_PREFIX = "gpf_"
_RANK = {role: i for i, role in enumerate(ROLES)}


def sha256_hex(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret(prefix: str = TOKEN_PREFIX) -> str:
    return prefix + secrets.token_urlsafe(30)  # 30 bytes -> 40 characters, 240 bits


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who is asking: a token of a team with a role."""

    token_id: int
    token_name: str
    team_id: int
    team_name: str
    role: str

    def require(self, role: str) -> None:
        """Raise :class:`Forbidden` unless this principal's role is ``role`` or above."""
        if _RANK[self.role] < _RANK[role]:
            raise Forbidden(
                f"This needs the {role} role; your token {self.token_name!r} has the {self.role} role. "
                f"Ask an admin of team {self.team_name!r} for a token with the {role} role."
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenInfo:
    """A token as listed (never its secret)."""

    id: int
    team: str
    name: str
    role: str
    prefix: str
    created_unix_s: float
    revoked_unix_s: float | None


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InputError(f"Unknown role {role!r}. Allowed: {', '.join(ROLES)}.")
    return role


def check_team_name(name: str) -> str:
    if not name or len(name) > 100 or not all(c.isalnum() or c in "-_." for c in name):
        raise InputError(f"Team name {name!r} is not allowed: use 1-100 letters, digits, '-', '_' or '.'.")
    return name


def get_or_create_team(db: DbSession, name: str) -> Team:
    team = db.scalar(select(Team).where(Team.name == check_team_name(name)))
    if team is None:
        team = Team(name=name)
        db.add(team)
        db.flush()
    return team


def create_token(db: DbSession, *, team: str, name: str, role: str) -> tuple[str, TokenInfo]:
    """A new token for ``team`` (created if new): (the secret, shown once; its listing). Commits."""
    check_role(role)
    if not name or len(name) > 100 or not name.isprintable():
        raise InputError(f"Token name {name!r} is not allowed: use 1-100 printable characters.")
    t = get_or_create_team(db, team)
    secret = new_secret()
    tok = Token(team_id=t.id, name=name, role=role, secret_sha256=sha256_hex(secret), prefix=secret[:10])
    db.add(tok)
    db.commit()
    return secret, _info(tok, t.name)


def _info(tok: Token, team: str) -> TokenInfo:
    return TokenInfo(
        id=tok.id,
        team=team,
        name=tok.name,
        role=tok.role,
        prefix=tok.prefix,
        created_unix_s=tok.created_unix_s,
        revoked_unix_s=tok.revoked_unix_s,
    )


def list_tokens(db: DbSession, team_id: int | None = None) -> list[TokenInfo]:
    """Every token (of ``team_id`` when given), oldest first."""
    q: Any = select(Token, Team.name).join(Team, Team.id == Token.team_id).order_by(Token.id)
    if team_id is not None:
        q = q.where(Token.team_id == team_id)
    return [_info(tok, team) for tok, team in db.execute(q).all()]


def revoke_token(db: DbSession, token_id: int, team_id: int | None = None) -> TokenInfo:
    """Revoke a token (of ``team_id`` when given: another team's id is not found) and end its sessions."""
    tok = db.get(Token, token_id)
    if tok is None or (team_id is not None and tok.team_id != team_id):
        raise NotFound(f"No token with id {token_id}. List the tokens to see their ids.")
    if tok.revoked_unix_s is None:
        tok.revoked_unix_s = now_unix_s()
    db.query(Session).filter(Session.token_id == tok.id).delete()
    db.commit()
    team = db.get(Team, tok.team_id)
    return _info(tok, team.name if team else "?")


def has_tokens(db: DbSession) -> bool:
    return db.scalar(select(Token.id).limit(1)) is not None


def _principal(tok: Token, team: Team) -> Principal:
    return Principal(
        token_id=tok.id, token_name=tok.name, team_id=team.id, team_name=team.name, role=tok.role
    )


def authenticate_token(db: DbSession, secret: str) -> Principal:
    """The principal of a bearer token; :class:`NotAuthenticated` for an unknown or revoked one."""
    row = db.execute(
        select(Token, Team)
        .join(Team, Team.id == Token.team_id)
        .where(Token.secret_sha256 == sha256_hex(secret))
    ).first()
    if row is None or row[0].revoked_unix_s is not None:
        raise NotAuthenticated(
            "The token is unknown or revoked. Send 'Authorization: Bearer <token>' with a live token "
            "(`gpufleet serve token create` makes one)."
        )
    return _principal(row[0], row[1])


def open_session(db: DbSession, token_secret: str, ttl_s: float) -> tuple[str, str, Principal]:
    """Sign in with a token: (session secret for the cookie, CSRF token for forms, principal). Commits."""
    who = authenticate_token(db, token_secret)
    secret, csrf = new_secret("gps_"), secrets.token_urlsafe(24)
    db.add(
        Session(
            token_id=who.token_id,
            secret_sha256=sha256_hex(secret),
            csrf=csrf,
            expires_unix_s=now_unix_s() + ttl_s,
        )
    )
    db.commit()
    return secret, csrf, who


def session_principal(db: DbSession, secret: str) -> tuple[Principal, str] | None:
    """(principal, CSRF token) of a live session, else None (unknown, expired, or its token revoked)."""
    row = db.execute(
        select(Session, Token, Team)
        .join(Token, Token.id == Session.token_id)
        .join(Team, Team.id == Token.team_id)
        .where(Session.secret_sha256 == sha256_hex(secret))
    ).first()
    if row is None:
        return None
    sess, tok, team = row
    if tok.revoked_unix_s is not None or sess.expires_unix_s < now_unix_s():
        return None
    return _principal(tok, team), sess.csrf


def close_session(db: DbSession, secret: str) -> None:
    db.query(Session).filter(Session.secret_sha256 == sha256_hex(secret)).delete()
    db.commit()


def bootstrap_admin(db: DbSession) -> str | None:
    """On an empty database: create team ``default`` with an admin token and return its secret (printed once
    by ``gpufleet serve``); None when any token exists."""
    if has_tokens(db):
        return None
    secret, _ = create_token(db, team="default", name="bootstrap-admin", role="admin")
    return secret
