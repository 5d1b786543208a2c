"""Server-Sent Events framing."""

from __future__ import annotations

from medgate.redaction import EventView


def encode_event(event: EventView, sequence: int) -> str:
    """One SSE message: the event kind as the SSE event name, the event as JSON data.

    JSON never contains a raw newline, so a single ``data:`` line is always enough.
    """
    return f"id: {sequence}\nevent: {event.kind.value}\ndata: {event.model_dump_json()}\n\n"


def encode_comment(text: str) -> str:
    """A comment line: ignored by clients, keeps idle proxies from closing the stream."""
    return f": {text}\n\n"
