"""vLLM's v1 scheduler, made to keep each CFG pair step-locked.

``--scheduler-cls auk_app.audex_vllm.scheduler.AudexPairScheduler``. Blending needs both members
of a pair to decode the same position in the same step. The two arrive as separate HTTP requests,
so without help the first one could prefill a step early and the pair would stay one token apart.
Before each ``schedule()`` this class takes out of the waiting queue (and puts back afterwards, in
order) every pair member whose partner has not arrived, and every pair that would not fit whole
into this step's token budget or free batch slots, so a pair is always admitted in one step and
then decodes one token per step together. Pairs never read the prefix cache (an asymmetric hit
would put one member ahead). vLLM has no public API for admitting two requests together, so this
class reads the scheduler's own state (vLLM 0.32), every name of it listed below and checked by
:func:`check_hooks` when the server starts and when a pair member arrives: a vLLM that renamed
one refuses to serve with a sentence naming it, instead of letting pairs drift apart.
"""

from __future__ import annotations

from typing import Any

from vllm.v1.core.sched.scheduler import Scheduler

from auk_app.audex import xargs

# What this class uses of vLLM's scheduler besides its constructor: the methods it overrides, the
# state it reads, the waiting queue's methods and a request's fields.
BASE_METHODS = ("add_request", "schedule")
SCHEDULER_STATE = ("requests", "running", "waiting", "max_num_scheduled_tokens", "max_num_running_reqs")
QUEUE_METHODS = ("remove_requests", "prepend_requests")
REQUEST_FIELDS = ("request_id", "sampling_params", "num_tokens", "num_computed_tokens", "skip_reading_prefix_cache")


def check_hooks(what: str, target: Any, names: tuple[str, ...]) -> None:
    """RuntimeError naming every one of ``names`` that ``target`` (vLLM's ``what``) lacks."""
    missing = [name for name in names if not hasattr(target, name)]
    if missing:
        raise RuntimeError(f"vLLM's {what} has no {', '.join(missing)}, which the Audex pair scheduler relies on "
                           "(written for vLLM 0.32); install vllm 0.32.0 or port auk_app/audex_vllm/scheduler.py.")


class AudexPairScheduler(Scheduler):
    """The stock scheduler plus pair admission; requests outside a CFG pair are unaffected."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_hooks("Scheduler class", Scheduler, BASE_METHODS)
        check_hooks("Scheduler", self, SCHEDULER_STATE)
        check_hooks("waiting queue", self.waiting, QUEUE_METHODS)
        self._pair_of: dict[str, str] = {}  # request id -> pair id
        self._pairs: dict[str, set[str]] = {}  # pair id -> member request ids

    def add_request(self, request: Any) -> None:
        super().add_request(request)
        member = xargs.pair_role(getattr(request.sampling_params, "extra_args", None))
        if member is not None:
            check_hooks("Request", request, REQUEST_FIELDS)
            self._pair_of[request.request_id] = member[0]
            self._pairs.setdefault(member[0], set()).add(request.request_id)
            request.skip_reading_prefix_cache = True

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        self._forget_finished()
        held = self._pairs_to_hold()
        if held:
            self.waiting.remove_requests(held)
        try:
            return super().schedule(*args, **kwargs)
        finally:
            if held:
                self.waiting.prepend_requests(held)

    def _forget_finished(self) -> None:
        for request_id in [r for r in self._pair_of if r not in self.requests]:
            pair_id = self._pair_of.pop(request_id)
            members = self._pairs.get(pair_id, set())
            members.discard(request_id)
            if not members:
                self._pairs.pop(pair_id, None)

    def _pairs_to_hold(self) -> list[Any]:
        """Waiting pair members that must not be admitted this step, in queue order.

        A member waits for its partner to arrive (or for its client to go away, which aborts it);
        a waiting pair waits until it fits whole. A pair
        split by preemption is not held (that would hang it): the CFG processor stops blending a
        split pair, and the app refuses the unequal streams.
        """
        tokens_left = self.max_num_scheduled_tokens - sum(_pending(r) for r in self.running)
        slots_left = self.max_num_running_reqs - len(self.running)
        waiting = list(self.waiting)
        by_pair: dict[str, list[Any]] = {}
        for request in waiting:
            pair_id = self._pair_of.get(request.request_id)
            if pair_id is not None:
                by_pair.setdefault(pair_id, []).append(request)
        held: list[Any] = []
        for request in waiting:
            pair_id = self._pair_of.get(request.request_id)
            group = by_pair[pair_id] if pair_id is not None else [request]
            if request is not group[0]:
                continue  # a group is judged once, at its first member
            need = sum(_pending(r) for r in group)
            arrived = pair_id is None or len(self._pairs[pair_id]) == 2
            if not arrived or (len(group) == 2 and (need > tokens_left or len(group) > slots_left)):
                held.extend(group)
            else:
                tokens_left -= need
                slots_left -= len(group)
        return [r for r in waiting if any(r is h for h in held)]


def _pending(request: Any) -> int:
    """Tokens the request still has to run through the model (its prompt, for a new one)."""
    return request.num_tokens - request.num_computed_tokens
