"""The one place that reads Gradio's queue from the inside.

Gradio has no public way to list the events waiting or running for an endpoint, nor to tell that a
running event's client went away (a stream that closed, a browser whose heartbeat stopped), and the
app needs both: the model queue's cap counts what waits and runs, and a run stops for a client that
is gone. Nor does it let an app see a call as the client sent it before its components turn the
values into their own types (a Textbox makes a list into the text "[1, 2]"), nor tell that anyone
reads a call's result stream. So :func:`events` reads ``Blocks._queue`` and its events,
:func:`guard_arrivals` puts a gate in front of its ``push``, and :func:`listening` reads a session's
message queue, here and nowhere else; ``tests/app/test_gradio_queue.py`` holds every name they use
against the installed Gradio, so an upgrade that moves one fails there, loudly, not in a user's request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ContextManager

import gradio as gr
from gradio import route_utils


@dataclass(frozen=True)
class QueuedEvent:
    """One event in Gradio's queue, waiting or running."""

    id: str
    api_name: str | None
    session: str | None
    data: list[Any]  # its inputs, in the endpoint's order
    gone: bool  # its stream went away, or its browser's heartbeat stopped: nobody will read the result


def events(blocks: gr.Blocks) -> tuple[list[QueuedEvent], list[QueuedEvent]]:
    """(waiting, running) events of ``blocks``' queue."""
    queue = blocks._queue
    waiting = [event for q in list(queue.event_queue_per_concurrency_id.values()) for event in list(q.queue)]
    running = [event for job in list(queue.active_jobs) if job for event in job]
    return [_view(e) for e in waiting], [_view(e) for e in running]


def _view(event) -> QueuedEvent:
    data = getattr(getattr(event, "data", None), "data", None) or []
    return QueuedEvent(id=event._id, api_name=event.fn.api_name, session=event.session_hash, data=list(data),
                       gone=not event.alive or bool(getattr(event, "closed", False)))


@dataclass(frozen=True)
class Arrival:
    """A call as its client sent it, before Gradio queues it or any component reads its values."""

    api_name: str | None
    data: list[Any]  # the raw JSON values, in the endpoint's input order


# A gate takes an arrival and, while its block runs (Gradio's validator and queueing), holds what the
# call needs; it yields the refusal of each input by its position (empty: let it in).
Gate = Callable[[Arrival], ContextManager[dict[int, str]]]


def guard_arrivals(blocks: gr.Blocks, gate: Gate) -> None:
    """Every call into ``blocks``' queue (the page's, gradio_client's, the raw ``/call`` routes') passes
    ``gate`` first; a refusal is answered as Gradio answers a failed validator (HTTP 422, each
    refused input with its sentence), so gradio_client raises it with those sentences."""
    queue = blocks._queue
    push = queue.push

    async def guarded(body, request, username):
        try:
            fn = route_utils.get_fn(blocks, None, body)
        except Exception:  # noqa: BLE001: an unknown endpoint is Gradio's own to refuse
            return await push(body, request, username)
        with gate(Arrival(fn.api_name, list(body.data or []))) as refused:
            if refused:
                names = _input_names(fn)
                return False, [{"__type__": "validate", "is_valid": False, "message": message,
                                "parameter_name": names[i] if i < len(names) else f"parameter_{i}"}
                               for i, message in sorted(refused.items())], "validator_error"
            return await push(body, request, username)

    queue.push = guarded


def _input_names(fn) -> list[str]:
    """An event function's input names in order, as Gradio names them in its validation replies."""
    names = [name for name in inspect.signature(fn.fn).parameters if name not in ("progress", "request")]
    return list(fn.input_parameter_names or names)


def listening(blocks: gr.Blocks, session: str | None) -> bool:
    """Whether a client is reading ``session``'s result stream now: Gradio's stream for a session waits
    on its message queue, so a queue with a waiter has a reader; one nobody opened has none."""
    messages = blocks._queue.pending_messages_per_session.get(session)
    return messages is not None and bool(messages._getters)
