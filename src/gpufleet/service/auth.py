"""Teams, roles and tokens; who is asking (:class:`Principal`) and what they may do.

A token is ``gpf_`` + 40 random URL-safe characters (240 bits from :mod:`secrets`); the database keeps its
SHA-256 only, so a token is shown once, at creation. A plain hash (no salt, no key stretching) is enough for a
random secret of that size: no dictionary applies, and each request must verify it fast. Sessions of the
dashboard are the same: a random secret in an HttpOnly cookie, its hash in the ``sessions`` table, removed
when its token is revoked.

Bearer tokens are looked up in the database once per :attr:`ServiceSettings.auth_cache_ttl_s` (5 s) per
process (:class:`PrincipalCache`); a revoke in this process (:func:`revoke_token`: the API, the dashboard,
the CLI in process) removes the token from every cache of the same database at once; a revoke made by another
process (``gpufleet serve token revoke`` beside a running service, another replica) takes effect here within
the TTL.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import weakref
from collections.abc import Callable
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


class PrincipalCache:
    """token SHA-256 -> its principal, for ``ttl_s`` seconds after the database said so (per process, one
    database ``db_key``). Unknown and revoked tokens are not kept: each is looked up again. Thread-safe."""

    def __init__(self, db_key: str, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.db_key, self.ttl_s, self._clock = db_key, ttl_s, clock
        self._lock = threading.Lock()
        self._by_hash: dict[str, tuple[Principal, float]] = {}
        _CACHES.add(self)

    def get(self, secret_sha256: str) -> Principal | None:
        hit = self._by_hash.get(secret_sha256)
        if hit is None:
            return None
        if hit[1] <= self._clock():
            with self._lock:
                self._by_hash.pop(secret_sha256, None)
            return None
        return hit[0]

    def put(self, secret_sha256: str, who: Principal) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            if len(self._by_hash) >= 10_000:  # many tokens: start again rather than grow without bound
                self._by_hash.clear()
            self._by_hash[secret_sha256] = (who, self._clock() + self.ttl_s)

    def forget_token(self, token_id: int) -> None:
        with self._lock:
            for h in [h for h, (who, _) in self._by_hash.items() if who.token_id == token_id]:
                del self._by_hash[h]


#: every live cache of this process (a revoke clears its token from those of the same database)
_CACHES: weakref.WeakSet[PrincipalCache] = weakref.WeakSet()


def db_key(db: DbSession) -> str:
    """Which database a session talks to (its URL, password hidden), the key of :class:`PrincipalCache`."""
    return db_key_of_url(db.get_bind().engine.url)


def db_key_of_url(url: Any) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url))


def forget_revoked(db: DbSession, token_id: int) -> None:
    """Drop ``token_id`` from every principal cache of ``db``'s database in this process."""
    key = db_key(db)
    for cache in list(_CACHES):
        if cache.db_key == key:
            cache.forget_token(token_id)


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
    # an id beyond the database's 64-bit integers was an OverflowError traceback (`serve token revoke 1e23`)
    in_range = -(2**63) <= token_id < 2**63
    tok = db.get(Token, token_id) if in_range else None
    if tok is None or (team_id is not None and tok.team_id != team_id):
        raise NotFound(f"No token with id {token_id}. List the tokens to see their ids.")
    if tok.revoked_unix_s is None:
        tok.revoked_unix_s = now_unix_s()
    db.query(Session).filter(Session.token_id == tok.id).delete()
    db.commit()
    forget_revoked(db, tok.id)
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
    return authenticate_token_hash(db, sha256_hex(secret))


def authenticate_token_hash(db: DbSession, secret_sha256: str) -> Principal:
    """:func:`authenticate_token` given the token's SHA-256 (hex)."""
    row = db.execute(
        select(Token, Team).join(Team, Team.id == Token.team_id).where(Token.secret_sha256 == secret_sha256)
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
