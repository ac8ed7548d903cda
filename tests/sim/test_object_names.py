"""Object names on the embedded site beyond XML-RPC allocate (tests/conformance has those rows):
OneFlow's rename, the in-process image allocation, and the platform version's character set."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SimFactory
from tests.sim.flow_support import add_service_template, flow_client
from tui.domain.error_codes import ALLOCATE
from tui.sim.images import allocate_image
from tui.sim.rpc_errors import OneError
from tui.sim.server import SimServer


def test_a_service_template_rename_to_a_refused_name_answers_500_with_the_platforms_text(sim: SimServer) -> None:
    """oneflow-server.rb: one.document.rename answers ACTION (500) with name_is_valid's text; the
    name is left as it was."""
    template_id = add_service_template(sim.site, [{"name": "front"}])
    with flow_client(sim) as client:
        path = f"/service_template/{template_id}/action"
        refused = client.post(path, json={"action": {"perform": "rename", "params": {"name": "a|b"}}})
        assert refused.status_code == 500
        assert refused.text.endswith("[one.document.rename] Invalid NAME, char '|' is not allowed")
        names = [d["NAME"] for d in json.loads(client.get("/service_template").text)["DOCUMENT_POOL"]["DOCUMENT"]]
    assert "a|b" not in names


@pytest.mark.parametrize("one_version, refused", [("6.10.0", False), ("7.0.0", True)])
def test_in_process_allocations_follow_the_versions_character_set(sim_factory: SimFactory, one_version: str,
                                                                  refused: bool) -> None:
    sim = sim_factory(one_version=one_version)
    attrs = [("NAME", "line\nbreak"), ("TYPE", "DATABLOCK"), ("SIZE", "10")]
    with sim.site.lock:
        if refused:
            with pytest.raises(OneError) as error:
                allocate_image(sim.site, attrs, 1, 0, 0)
            assert error.value.code == ALLOCATE
            assert error.value.message == "Error allocating a new image. Invalid NAME, char '\n' is not allowed"
        else:
            assert allocate_image(sim.site, attrs, 1, 0, 0).name == "line\nbreak"
