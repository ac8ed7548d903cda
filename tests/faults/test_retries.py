"""Reads are retried, writes reconciled (issue 15, item 2): `tui.adapters.retry` in the three adapters.

Faults come from the embedded site's switches: `fail_rate` (an internal error / HTTP 500 or a dropped
connection, from the site's seeded random generator) and `lost_answers` (the call runs, then the
connection drops before the answer: a write whose outcome the client cannot know).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.faults.conftest import PointAt, run_json
from tui.adapters.cloud import CloudClient
from tui.adapters.flow import FlowClient
from tui.adapters.marketplace import MarketplaceClient
from tui.adapters.retry import RetryPolicy, reconciled_write, retry_read
from tui.cli.common import EXIT_OK
from tui.domain.one_states import ImageState
from tui.errors import SiteError
from tui.sim.runner import start_sim
from tui.sim.server import SimServer
from tui.sim.state import SimConfig

TIMEOUT = 10.0


@pytest.fixture
async def cloud(sim: SimServer) -> AsyncIterator[CloudClient]:
    client = CloudClient(sim.xmlrpc_url, sim.session, TIMEOUT)
    yield client
    await client.close()


# -- the policy on its own -------------------------------------------------------------------------
async def test_a_refusal_is_tried_once_a_transient_failure_until_it_succeeds() -> None:
    calls: list[float] = []

    async def refused(deadline: float) -> int:
        calls.append(deadline)
        raise SiteError("Authentication failed", retryable=False)

    with pytest.raises(SiteError, match="Authentication"):
        await retry_read(refused, timeout=TIMEOUT)
    assert len(calls) == 1

    async def flaky(deadline: float) -> int:
        calls.append(deadline)
        if len(calls) < 4:
            raise SiteError("Connection dropped", retryable=True)
        return 42

    calls.clear()
    assert await retry_read(flaky, timeout=TIMEOUT, rng=random.Random(1)) == 42
    assert len(calls) == 4 and len(set(calls)) == 1  # one deadline for every attempt


async def test_tries_are_bounded_by_the_policy_and_by_the_deadline() -> None:
    calls = 0

    async def down(deadline: float) -> int:
        nonlocal calls
        calls += 1
        raise SiteError("Nothing listening", retryable=True)

    with pytest.raises(SiteError, match="Nothing listening"):
        await retry_read(down, timeout=TIMEOUT, policy=RetryPolicy(attempts=3, first_pause=0.001))
    assert calls == 3
    calls = 0
    with pytest.raises(SiteError):
        await retry_read(down, timeout=0.0)  # no time left for a second try
    assert calls == 1


async def test_a_write_is_read_back_before_it_is_sent_again() -> None:
    sent: list[str] = []

    async def write(deadline: float) -> int:
        sent.append("write")
        raise SiteError("Connection dropped", retryable=True)

    async def found() -> int | None:
        return 7

    assert await reconciled_write(write, found, timeout=TIMEOUT, what="x") == 7
    assert sent == ["write"]

    async def check_fails() -> int | None:
        raise SiteError("No answer", retryable=True)

    with pytest.raises(SiteError) as info:
        await reconciled_write(write, check_fails, timeout=TIMEOUT, what="an image named 'x'")
    assert "Whether it was done is unknown" in info.value.detail and "an image named 'x'" in info.value.detail
    assert sent == ["write", "write"]


# -- the adapters against the embedded site --------------------------------------------------------
async def test_a_read_whose_answers_are_lost_is_retried(sim: SimServer, cloud: CloudClient) -> None:
    sim.site.faults.lost_answers["one.imagepool.info"] = 2
    images = await cloud.list_images()
    assert {i.id for i in images} == set(sim.site.images)
    assert sim.site.faults.lost_answers["one.imagepool.info"] == 0


async def test_an_allocate_whose_answer_was_lost_is_found_not_repeated(sim: SimServer, cloud: CloudClient) -> None:
    before = set(sim.site.images)
    sim.site.faults.lost_answers["one.image.allocate"] = 1
    image_id = await cloud.image_allocate('NAME = "lost-answer"\nTYPE = "DATABLOCK"\nSIZE = "1"\n', 1)
    new = set(sim.site.images) - before
    assert new == {image_id} and sim.site.images[image_id].name == "lost-answer"


async def test_users_groups_and_marketplaces_whose_answers_were_lost_are_found(sim: SimServer,
                                                                               cloud: CloudClient) -> None:
    users, groups = set(sim.site.users), set(sim.site.groups)
    sim.site.faults.lost_answers.update({"one.user.allocate": 1, "one.group.allocate": 1})
    user_id = await cloud.user_allocate("lost-answer-user", "Lost-pw-1x")
    group_id = await cloud.group_allocate("lost-answer-group")
    assert set(sim.site.users) - users == {user_id} and set(sim.site.groups) - groups == {group_id}
    markets = {m.id for m in await cloud.list_marketplaces()}
    sim.site.faults.lost_answers["one.market.allocate"] = 1
    market_id = await cloud.market_allocate('NAME = "lost-answer-market"\nMARKET_MAD = "one"\n')
    assert {m.id for m in await cloud.list_marketplaces()} - markets == {market_id}


async def test_an_acl_rule_whose_answer_was_lost_is_found_not_added_twice(sim: SimServer,
                                                                        cloud: CloudClient) -> None:
    rules = set(sim.site.acls)
    sim.site.faults.lost_answers["one.acl.addrule"] = 1
    rule_id = await cloud.acl_add("#7 IMAGE/#99 USE")
    assert set(sim.site.acls) - rules == {rule_id}


async def test_a_delete_whose_answer_was_lost_is_done(sim: SimServer, cloud: CloudClient) -> None:
    image_id = await cloud.image_allocate('NAME = "to-delete"\nTYPE = "DATABLOCK"\nSIZE = "1"\n', 1)
    sim.site.faults.lost_answers["one.image.delete"] = 1
    assert await cloud.image_delete(image_id) == image_id
    assert image_id not in sim.site.images


async def test_a_write_that_cannot_be_read_back_is_never_sent_twice(sim: SimServer, cloud: CloudClient) -> None:
    template_id = next(t.id for t in await cloud.list_templates())
    before = set(sim.site.vms)
    sim.site.faults.lost_answers["one.template.instantiate"] = 1
    with pytest.raises(SiteError, match="dropped"):
        await cloud.template_instantiate(template_id, "once-only")
    assert len(set(sim.site.vms) - before) == 1  # made once, and not again


async def test_a_service_template_whose_answer_was_lost_is_found(sim: SimServer) -> None:
    user, _, password = sim.session.partition(":")
    cloud = CloudClient(sim.xmlrpc_url, sim.session, TIMEOUT)
    flow = FlowClient(sim.flow_url, user, password, TIMEOUT)
    try:
        template_id = next(t.id for t in await cloud.list_templates())
        body = {"name": "lost-answer-service", "deployment": "straight",
                "roles": [{"name": "one", "cardinality": 1, "vm_template": template_id}]}
        sim.site.faults.lost_answers["POST /service_template"] = 1
        created = await flow.create_service_template(body)
        named = [t for t in await flow.list_service_templates() if t.name == "lost-answer-service"]
        assert [t.id for t in named] == [created.id]
        sim.site.faults.lost_answers["DELETE /service_template/%d" % created.id] = 1
        await flow.delete_service_template(created.id)
        assert not [t for t in await flow.list_service_templates() if t.name == "lost-answer-service"]
    finally:
        await flow.close()
        await cloud.close()


async def test_marketplace_reads_ride_out_lost_answers(sim: SimServer) -> None:
    market = MarketplaceClient(TIMEOUT)
    try:
        sim.site.faults.lost_answers["GET /appliance"] = 2
        listing = await market.list_appliances(sim.market_url)
        assert listing.records
        record = listing.records[0]
        sim.site.faults.lost_answers[f"GET /appliance/{record.id}"] = 1
        assert (await market.get_appliance(sim.market_url, record.id)).id == record.id
    finally:
        await market.close()


# -- the measurement: downloads under a 10-20 % failure rate ---------------------------------
@pytest.mark.parametrize("fail_rate", [0.1, 0.2])
def test_download_of_the_demo_appliance_completes_under_random_failures(
        fail_rate: float, tmp_path: Path, env: PointAt, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 0 of 26 downloads completed at 10-20 %. The site's fault generator is seeded."""
    server = start_sim(SimConfig(time_scale=0.02, seed=15), tmp_path / "site")
    try:
        env(server)
        key = f"{server.market_url}#service_toolkit"
        server.site.faults.fail_rate = fail_rate
        try:
            code, answer = run_json(capsys, "market", "download", key, "--datastore", "1", "--name", "TK", "--yes",
                                    "--json", "--poll", "0.02")
        finally:
            server.site.faults.fail_rate = 0.0
        assert code == EXIT_OK and answer["ok"], answer
        result = answer["events"][-1]["data"]["download"]
        images = [server.site.images[i] for i in result["image_ids"]]
        assert images and all(i.state == ImageState.READY for i in images)
        names = [i.name for i in server.site.images.values()]
        assert len(names) == len(set(names))  # nothing made twice
    finally:
        server.stop()
