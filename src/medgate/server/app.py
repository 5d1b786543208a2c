"""The FastAPI application factory.

Everything the app needs (configuration, gate, store, limits, metrics) is built here and hung on
``app.state``; nothing lives at module level, so tests and processes can build as many apps as
they like.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from medgate.case_record import CaseRecord, RunInfo
from medgate.config import MedgateConfig
from medgate.errors import InputError, MedgateError
from medgate.events import DecisionEvent, ErrorEvent, Event, Failure, Gate
from medgate.records import Case
from medgate.redaction import EventView
from medgate.server.auth import require
from medgate.server.limits import BodySizeLimit, RateLimiter
from medgate.server.metrics import Metrics
from medgate.server.runner import GateOutcome, GateRunner
from medgate.server.schemas import (
    CheckResponse,
    Colleague,
    EscalationList,
    Health,
    KeyCreated,
    KeyCreateRequest,
    ReassignRequest,
    ResolveRequest,
    VerdictStatusResponse,
)
from medgate.server.sse import encode_comment, encode_event
from medgate.server.state import Services, services
from medgate.server.views import (
    decision_event,
    escalation_for,
    event_for,
    released_answer,
    unrecorded_decision,
    verdict_for,
)
from medgate.store import (
    ApiKey,
    ConflictError,
    Escalation,
    EscalationState,
    NotFoundError,
    Resolution,
    Role,
    Store,
    StoredVerdict,
)

STATIC_DIR = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)

Client = Annotated[ApiKey, Depends(require(Role.CLIENT))]
Clinician = Annotated[ApiKey, Depends(require(Role.CLINICIAN))]
Admin = Annotated[ApiKey, Depends(require(Role.ADMIN))]
AnyRole = Annotated[ApiKey, Depends(require(Role.CLIENT, Role.CLINICIAN, Role.ADMIN))]
Reviewer = Annotated[ApiKey, Depends(require(Role.CLINICIAN, Role.ADMIN))]

AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing, invalid or revoked API key."},
    403: {"description": "The key's role may not use this endpoint."},
    429: {"description": "Rate limit exceeded for this key."},
}


def create_app(
    gate: Gate,
    *,
    config: MedgateConfig | None = None,
    store: Store | None = None,
    run: RunInfo | None = None,
    fresh: Callable[[], None] | None = None,
) -> FastAPI:
    """Build the service around ``gate``. ``store`` defaults to the one the config names;
    ``run`` (how the gate was assembled, recorded with each verdict) to the config's profile
    with no models named; ``fresh`` (the gate's models forgetting their cached prompts) is
    called before a check that runs alone (:class:`~medgate.server.runner.GateRunner`)."""
    config = config or MedgateConfig()
    owns_store = store is None
    store = store or Store.open(config)
    state = Services(
        config=config,
        store=store,
        runner=GateRunner(
            gate,
            timeout_s=config.server.gate_timeout_s,
            max_concurrent=config.server.max_concurrent_checks,
            fresh=fresh,
        ),
        limiter=RateLimiter(config.server.rate_per_minute, config.server.rate_burst),
        metrics=Metrics(),
        run=run or RunInfo.of("serve", config),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # A store passed in belongs to the caller; one opened here is closed here.
        if owns_store:
            state.store.close()

    # The API pages load Swagger UI / ReDoc from the installed package, never from a CDN:
    # a hospital network is often offline.
    app = FastAPIOffline(
        lifespan=lifespan,
        title="medgate",
        summary="An inference-time safety gate for medical LLMs, with a clinician review queue.",
        version="0.1.0",
    )
    app.state.services = state
    app.add_middleware(BodySizeLimit, max_bytes=config.server.max_body_bytes)
    app.add_middleware(_RequestMetrics, metrics=state.metrics)
    _add_error_handlers(app)
    _add_case_routes(app)
    _add_queue_routes(app)
    _add_admin_routes(app)
    _add_ops_routes(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


# -- cases ---------------------------------------------------------------------------------


def _add_case_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/check",
        response_model=CheckResponse,
        responses={**AUTH_RESPONSES, 503: {"description": "The verdict could not be recorded."}},
        tags=["cases"],
    )
    async def check(case: Case, key: Client, request: Request) -> CheckResponse:
        """Check a case and return the verdict once it is committed (and queued if escalated)."""
        state = services(request)
        outcome = await state.runner.run(case)
        stored = await _record(state, outcome, key)
        return _check_response(stored, key.role)

    @app.post(
        "/v1/ask/stream",
        responses={
            **AUTH_RESPONSES,
            200: {
                "description": "Server-Sent Events, one per gate event; the last is 'decision'.",
                "content": {"text/event-stream": {}},
            },
        },
        response_class=StreamingResponse,
        tags=["cases"],
    )
    async def ask_stream(case: Case, key: Client, request: Request) -> StreamingResponse:
        """Check a case with its events streamed as they happen (triage, answer, signals,
        safety, ...). The final ``decision`` event is sent only after the verdict is committed."""
        state = services(request)
        return StreamingResponse(
            _event_stream(state, case, key),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @app.get(
        "/v1/verdicts/{verdict_id}",
        response_model=VerdictStatusResponse,
        responses={**AUTH_RESPONSES, 404: {"description": "No such verdict for this key."}},
        tags=["cases"],
    )
    def get_verdict(verdict_id: str, key: AnyRole, request: Request) -> VerdictStatusResponse:
        """A verdict with the clinician's resolution once there is one. A client key reads the
        verdicts it submitted, as the person who asked may see them; clinician and admin keys
        read any verdict whole, held-back answer included."""
        stored = services(request).store.get_verdict(verdict_id)
        if key.role is Role.CLIENT and stored.key_id != key.id:
            raise NotFoundError(f"no verdict {verdict_id!r}")
        esc = stored.escalation
        return VerdictStatusResponse(
            verdict_id=stored.id,
            created_at=stored.created_at,
            status=stored.status,
            verdict=verdict_for(key.role, stored.verdict),
            released_answer=released_answer(stored),
            escalation_state=None if esc is None else esc.state,
            resolution=None if esc is None else esc.resolution,
            clinician_answer=(
                esc.answer if esc is not None and esc.resolution is Resolution.ANSWER else None
            ),
            clinician_note=None if esc is None else esc.note,
        )

    @app.get(
        "/v1/verdicts/{verdict_id}/record",
        response_model=CaseRecord,
        responses={
            **AUTH_RESPONSES,
            404: {"description": "No such verdict, or it was recorded without its run."},
        },
        tags=["cases"],
    )
    def get_record(verdict_id: str, key: Reviewer, request: Request) -> CaseRecord:
        """A case's whole record: the verdict with each stage's typed report, the gate's events,
        how it was decided (profile, settings digest, the model behind each role), and usage
        and timings by role. For clinician and admin keys."""
        return services(request).store.get_record(verdict_id)


async def _record(state: Services, outcome: GateOutcome, key: ApiKey) -> StoredVerdict:
    """Commit the verdict; if that fails nothing is released (503)."""
    state.metrics.gate_seconds.observe(outcome.seconds)
    if outcome.failure is not None:
        state.metrics.gate_failures.inc()
    try:
        stored = await run_in_threadpool(
            state.store.record_verdict,
            outcome.verdict,
            key_id=key.id,
            events=outcome.events,
            run=state.run,
        )
    except Exception as exc:
        raise HTTPException(
            503, "the verdict could not be recorded, so nothing is released; try again"
        ) from exc
    state.metrics.verdicts.labels(stored.status.value).inc()
    return stored


def _check_response(stored: StoredVerdict, role: Role) -> CheckResponse:
    return CheckResponse(
        verdict_id=stored.id,
        status=stored.status,
        escalation_id=None if stored.escalation is None else stored.escalation.id,
        verdict=verdict_for(role, stored.verdict),
    )


async def _event_stream(state: Services, case: Case, key: ApiKey) -> AsyncIterator[str]:
    queue: asyncio.Queue[EventView | None] = asyncio.Queue()
    gate_decision: list[DecisionEvent] = []

    def on_event(event: Event) -> None:
        # The gate's own decision is held back and merged into the service's, which is sent
        # only once the verdict is committed: the stream never announces an unrecorded verdict.
        if isinstance(event, DecisionEvent):
            gate_decision.append(event)
            return
        shown = event_for(key.role, event)
        if shown is not None:
            queue.put_nowait(shown)

    async def produce() -> None:
        try:
            outcome = await state.runner.run(case, on_event)
            if outcome.failure is not None:
                on_event(ErrorEvent(stage="service", data=Failure(error=outcome.failure)))
            try:
                stored = await _record(state, outcome, key)
            except HTTPException as exc:
                queue.put_nowait(unrecorded_decision(str(exc.detail)))
                return
            gate_event = gate_decision[-1] if gate_decision else None
            queue.put_nowait(decision_event(stored, gate_event, key.role))
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(produce())
    state.background.add(task)
    task.add_done_callback(state.background.discard)
    sequence = 0
    while True:
        try:
            event = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
        except TimeoutError:
            yield encode_comment("waiting for the gate")
            continue
        if event is None:
            return
        sequence += 1
        yield encode_event(event, sequence)


# -- escalation queue ------------------------------------------------------------------------


def _add_queue_routes(app: FastAPI) -> None:
    not_found: dict[int | str, dict[str, Any]] = {404: {"description": "No such escalation."}}
    conflict: dict[int | str, dict[str, Any]] = {
        409: {"description": "The case is not in a state that allows this."}
    }

    @app.get(
        "/v1/escalations", response_model=EscalationList, responses=AUTH_RESPONSES, tags=["queue"]
    )
    def list_escalations(
        key: Clinician,
        request: Request,
        state: Annotated[
            EscalationState | None,
            Query(description="Only cases in this state; all when omitted."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> EscalationList:
        """The queue, oldest first."""
        items = services(request).store.list_escalations(state, limit=limit, offset=offset)
        return EscalationList(items=[escalation_for(key.role, e) for e in items], state=state)

    @app.get(
        "/v1/escalations/{escalation_id}",
        response_model=Escalation,
        responses={**AUTH_RESPONSES, **not_found},
        tags=["queue"],
    )
    def get_escalation(escalation_id: str, key: Clinician, request: Request) -> Escalation:
        """One case with its verdict, held-back answer and the gate's events."""
        return escalation_for(key.role, services(request).store.get_escalation(escalation_id))

    @app.post(
        "/v1/escalations/{escalation_id}/claim",
        response_model=Escalation,
        responses={**AUTH_RESPONSES, **not_found, **conflict},
        tags=["queue"],
    )
    def claim(escalation_id: str, key: Clinician, request: Request) -> Escalation:
        """Take an open case; 409 if another clinician already has it."""
        return escalation_for(
            key.role, services(request).store.claim(escalation_id, clinician=key.id)
        )

    @app.post(
        "/v1/escalations/{escalation_id}/release",
        response_model=Escalation,
        responses={**AUTH_RESPONSES, **not_found, **conflict},
        tags=["queue"],
    )
    def release(escalation_id: str, key: Reviewer, request: Request) -> Escalation:
        """Put a case you hold back in the queue (an admin key may free anyone's)."""
        released = services(request).store.release(
            escalation_id, by=key.id, override=key.role is Role.ADMIN
        )
        return escalation_for(key.role, released)

    @app.post(
        "/v1/escalations/{escalation_id}/reassign",
        response_model=Escalation,
        responses={
            **AUTH_RESPONSES,
            **not_found,
            **conflict,
            400: {"description": "`to` is not an active clinician key."},
        },
        tags=["queue"],
    )
    def reassign(
        escalation_id: str, body: ReassignRequest, key: Reviewer, request: Request
    ) -> Escalation:
        """Hand a case you hold to another clinician (an admin key may move anyone's)."""
        moved = services(request).store.reassign(
            escalation_id, to=body.to, by=key.id, override=key.role is Role.ADMIN
        )
        return escalation_for(key.role, moved)

    @app.get(
        "/v1/clinicians",
        response_model=list[Colleague],
        responses=AUTH_RESPONSES,
        tags=["queue"],
    )
    def clinicians(key: Reviewer, request: Request) -> list[Colleague]:
        """Active clinician keys, to reassign a case to."""
        return [
            Colleague(id=k.id, name=k.name)
            for k in services(request).store.list_keys()
            if k.role is Role.CLINICIAN and k.active
        ]

    @app.post(
        "/v1/escalations/{escalation_id}/resolve",
        response_model=Escalation,
        responses={**AUTH_RESPONSES, **not_found, **conflict},
        tags=["queue"],
    )
    def resolve(
        escalation_id: str, body: ResolveRequest, key: Clinician, request: Request
    ) -> Escalation:
        """Answer, approve or reject a case you have claimed, with a note for the record.
        Approving releases the model's held-back answer as it is (409 if there is none)."""
        resolved = services(request).store.resolve(
            escalation_id,
            clinician=key.id,
            resolution=body.action,
            note=body.note,
            answer=body.answer,
        )
        return escalation_for(key.role, resolved)


# -- administration ------------------------------------------------------------------------


def _add_admin_routes(app: FastAPI) -> None:
    @app.get(
        "/v1/admin/keys", response_model=list[ApiKey], responses=AUTH_RESPONSES, tags=["admin"]
    )
    def list_keys(key: Admin, request: Request) -> list[ApiKey]:
        return services(request).store.list_keys()

    @app.post(
        "/v1/admin/keys",
        response_model=KeyCreated,
        status_code=201,
        responses=AUTH_RESPONSES,
        tags=["admin"],
    )
    def create_key(body: KeyCreateRequest, key: Admin, request: Request) -> KeyCreated:
        created, token = services(request).store.create_key(body.name, body.role, actor=key.id)
        return KeyCreated(key=created, token=token)

    @app.post(
        "/v1/admin/keys/{key_id}/revoke",
        response_model=ApiKey,
        responses={**AUTH_RESPONSES, 404: {"description": "No such key."}},
        tags=["admin"],
    )
    def revoke_key(key_id: str, key: Admin, request: Request) -> ApiKey:
        return services(request).store.revoke_key(key_id, actor=key.id)

    @app.get("/v1/admin/audit/verify", responses=AUTH_RESPONSES, tags=["admin"])
    def verify_audit(key: Admin, request: Request) -> dict[str, Any]:
        """Walk the audit chain; ``ok`` is false if any entry was edited or deleted."""
        return services(request).store.verify_audit().model_dump()

    @app.get(
        "/metrics",
        response_class=Response,
        responses={**AUTH_RESPONSES, 200: {"content": {"text/plain": {}}}},
        tags=["admin"],
    )
    def metrics(key: Admin, request: Request) -> Response:
        """Prometheus metrics (scrape with an admin key as a bearer token)."""
        state = services(request)
        state.metrics.escalations_open.set(state.store.count_escalations(EscalationState.OPEN))
        return Response(state.metrics.render(), media_type="text/plain; version=0.0.4")


# -- health and the page -------------------------------------------------------------------


def _add_ops_routes(app: FastAPI) -> None:
    @app.get("/healthz", response_model=Health, tags=["ops"])
    def healthz() -> Health:
        """The process is up."""
        return Health(status="ok")

    @app.get(
        "/readyz",
        response_model=Health,
        responses={503: {"description": "The store cannot be reached."}},
        tags=["ops"],
    )
    def readyz(request: Request) -> Response:
        """The store answers; otherwise 503 so a load balancer sends traffic elsewhere."""
        try:
            services(request).store.ping()
        except Exception as exc:
            body = {"status": "unavailable", "detail": f"store: {type(exc).__name__}"}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(
            STATIC_DIR / "index.html",
            headers={"Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-cache"},
        )


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # Where and what, without echoing the refused input (it may be large or sensitive).
        detail = [
            {"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type")}
            for err in exc.errors()
        ]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(ConflictError)
    async def _conflict(_: Request, exc: ConflictError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(InputError)
    async def _bad_input(_: Request, exc: InputError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(MedgateError)
    async def _internal(_: Request, exc: MedgateError) -> JSONResponse:
        return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=500)


#: Methods counted under their own name; anything else a client sends is counted as "other",
#: so that made-up methods cannot grow the metrics without bound.
COUNTED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    return method if method in COUNTED_METHODS else "other"


class _RequestMetrics:
    """Counts requests by route template (not raw path, which would explode the labels) and by
    method (a fixed set)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def observing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                route = scope.get("route")
                name = getattr(route, "path", None) or "unmatched"
                method = method_label(scope["method"])
                self.metrics.requests.labels(method, name, str(message["status"])).inc()
                self.metrics.latency.labels(name).observe(time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, observing_send)
