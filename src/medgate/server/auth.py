"""API-key authentication and role checks, as FastAPI dependencies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from medgate.server.state import services
from medgate.store import ApiKey, Role

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key from `medgate keys create`, as 'Authorization: Bearer <key>'.",
)

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def require(*roles: Role) -> Callable[[Request, HTTPAuthorizationCredentials | None], ApiKey]:
    """A dependency admitting keys with one of ``roles``: 401 without a valid key, 403 for
    another role, 429 when the key has used up its rate."""
    allowed = frozenset(roles)
    names = " or ".join(sorted(role.value for role in allowed))

    def dependency(request: Request, credentials: Credentials) -> ApiKey:
        if credentials is None:
            raise HTTPException(
                401,
                "missing API key: send 'Authorization: Bearer <key>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        state = services(request)
        key = state.store.authenticate(credentials.credentials)
        if key is None:
            raise HTTPException(
                401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}
            )
        if key.role not in allowed:
            raise HTTPException(403, f"this endpoint needs a {names} key, not {key.role.value}")
        wait = state.limiter.take(key.id)
        if wait > 0:
            state.metrics.rate_limited.inc()
            raise HTTPException(
                429,
                f"rate limit exceeded for this key; retry in {wait:.1f} s",
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        return key

    return dependency
