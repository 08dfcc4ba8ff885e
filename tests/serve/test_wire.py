"""A replica rebuilds the plan a body describes on its own checkpoint and limits: the recipe from the
knobs, the frame budget held to what a plan under its limits can ask, whatever the body says."""

import json

import numpy as np
import pytest

from auk_app.auk.checkpoint import read_auk_checkpoint
from auk_app.auk.plan import plan_edit
from auk_app.auk.request import EditRequest
from auk_app.config import Limits
from auk_app.demo import DEMO_DIR
from auk_app.errors import InputError
from auk_app.serve.wire import plan_body, read_plan, window_plan


@pytest.fixture(scope="module")
def checkpoint():
    return read_auk_checkpoint(DEMO_DIR)


@pytest.fixture(scope="module")
def body(checkpoint):
    wav = (0.1 * np.sin(np.arange(48_000) * 2 * np.pi * 220 / 24_000)).astype(np.float32)
    request = EditRequest("Decrease the volume by 6 dB.", audio=(wav, 24_000), nfe=8, seed=3)
    plan = plan_edit(request, checkpoint, Limits())
    return json.loads(json.dumps(plan_body(window_plan(plan), request_id="r")))


def test_a_body_reads_back_as_the_plan_it_was_made_from(body, checkpoint):
    plan = read_plan(body, checkpoint, Limits())
    assert (plan.gen_frames, plan.ref_frames, plan.recipe.nfe, plan.request.seed) == (
        body["gen_frames"], body["ref_frames"], 8, 3)
    assert "recipe" not in body  # the replica derives it from the knobs and its own checkpoint


@pytest.mark.parametrize(("field", "value"), [("gen_frames", 10**6), ("gen_frames", 0), ("ref_frames", 7)])
def test_a_frame_budget_no_plan_could_ask_is_refused(body, checkpoint, field, value):
    with pytest.raises(InputError, match="This replica runs 1 to \\d+ target frames with the clip's own"):
        read_plan({**body, field: value}, checkpoint, Limits())


def test_the_replica_s_own_limits_hold_not_the_client_s(body, checkpoint):
    wide = {**body, "request": {**body["request"], "seconds": 40.0}, "gen_frames": 2000}
    with pytest.raises(InputError, match="40"):
        read_plan(wide, checkpoint, Limits())
    long_region = {**body, "gen_frames": 1700}  # a 28 s target with its window's context: a client may ask it
    assert read_plan(long_region, checkpoint, Limits()).gen_frames == 1700
    with pytest.raises(InputError, match="This replica runs 1 to 800 target frames"):
        read_plan(long_region, checkpoint, Limits(max_target_seconds=10.0))
