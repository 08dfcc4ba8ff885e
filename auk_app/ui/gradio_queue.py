"""The one place that reads Gradio's queue from the inside.

Gradio has no public way to list the events waiting or running for an endpoint, nor to tell that a
running event's client went away (a stream that closed, a browser whose heartbeat stopped), and the
app needs both: the model queue's cap counts what waits and runs, and a run stops for a client that
is gone. So :func:`events` reads ``Blocks._queue`` and its events here, and nowhere else;
``tests/app/test_gradio_queue.py`` holds every name it reads against the installed Gradio, so an
upgrade that moves one fails there, loudly, not in a user's request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr


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
