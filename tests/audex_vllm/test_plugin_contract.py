"""What the plugin relies on in vLLM, checked against the installed vLLM without starting a server.

The pair stays token-identical through public request parameters only: both members carry one
seed, and vLLM's sampler draws a seeded row's token from that row's logits and its own generator,
whatever the row's place in the batch. The pair scheduler reads vLLM's own scheduler state (no
public API admits two requests together); each name it reads is checked here, so a vLLM that
changes either fails these tests by name, not as pairs that drift apart on a server.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.audex_vllm.conftest import VLLM_PYTHON
from tests.conftest import REPO

SEEDED_ROWS = """
import torch
import vllm._C  # noqa: F401 (the sampler's kernels, which the engine loads at start)
from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler

torch.manual_seed(0)
pair = torch.randn(4096)
logits = torch.stack([torch.randn(4096), pair, torch.randn(4096), pair.clone(), torch.randn(4096)])
k = torch.full((5,), 80)
made = set()
for seed in range(8):
    generators = {i: torch.Generator().manual_seed(seed) for i in (1, 3)}  # the two members, rows 1 and 3
    tokens, _ = TopKTopPSampler()(logits.clone(), generators, k, None)
    assert tokens[1] == tokens[3], (seed, tokens)
    made.add(int(tokens[1]))
assert len(made) > 1, made  # the seed matters: the rows do not merely agree on an argmax
print("seeded rows agree")
"""

SCHEDULER_HOOKS = """
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.request_queue import SchedulingPolicy, create_request_queue
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.request import Request

from auk_app.audex_vllm import scheduler as pairs

pairs.check_hooks("Scheduler class", Scheduler, pairs.BASE_METHODS)
for policy in SchedulingPolicy:
    pairs.check_hooks("waiting queue", create_request_queue(policy), pairs.QUEUE_METHODS)
pairs.check_hooks("Request", Request("r", [1, 2, 3], SamplingParams(seed=1), None), pairs.REQUEST_FIELDS)
# A scheduler needs a whole engine to build; its state is what its constructor assigns.
assigned = Scheduler.__init__.__code__.co_names
missing = [name for name in pairs.SCHEDULER_STATE if name not in assigned]
assert not missing, f"Scheduler.__init__ no longer sets {missing}"
try:
    pairs.check_hooks("waiting queue", object(), pairs.QUEUE_METHODS)
except RuntimeError as exc:
    print(exc)
"""


def _run(script: str) -> str:
    if not VLLM_PYTHON.is_file():
        reason = f"no vLLM virtualenv at {VLLM_PYTHON}; build it with `.ci/vllm_venv` (or set AUDEX_VLLM_PYTHON)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run([str(VLLM_PYTHON), "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_two_rows_with_one_seed_and_the_same_logits_draw_the_same_token():
    assert "seeded rows agree" in _run(SEEDED_ROWS)


def test_every_scheduler_name_the_pair_scheduler_reads_is_there_and_a_missing_one_is_named():
    out = _run(SCHEDULER_HOOKS)
    assert ("vLLM's waiting queue has no remove_requests, prepend_requests, which the Audex pair scheduler relies on "
            "(written for vLLM 0.32)") in out
