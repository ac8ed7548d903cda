"""OneFlow REST on the embedded site, over loopback: auth, envelopes, routes, instantiate validation."""

from __future__ import annotations

import json
from typing import Callable

import httpx
import pytest

from tests.sim.flow_support import add_service_template, flow_client, instantiate_body, values_key
from tui.sim.flow_templates import is_7x
from tui.sim.server import SimServer

VALUES = {"app_greeting": "hello", "app_secret": "s3cr3t"}
MSG_INPUTS_7 = "Verify that every User Input have its corresponding value defined"
MSG_INPUTS_6 = "Verify that every custom attribute have its corresponding value defined"
MSG_NETWORKS = "Every network key must have its value defined at networks_value"


@pytest.fixture
def sim6(site_factory: Callable[..., SimServer]) -> SimServer:
    return site_factory(one_version="6.10.0")


@pytest.fixture
def sim7(sim: SimServer) -> SimServer:
    """A 7.x site for the tests of 7.x-only behaviour (they are marked `since_version("7.0")`)."""
    assert is_7x(sim.site.config.one_version), "a test of 7.x behaviour is marked since_version(\"7.0\")"
    return sim


# authentication --------------------------------------------------------------------------------
def test_missing_credentials_are_refused(sim: SimServer) -> None:
    response = httpx.get(f"{sim.flow_url}/service_template")
    assert response.status_code == 401
    assert response.text == "A username and password must be provided"


def test_wrong_credentials_are_refused(sim: SimServer) -> None:
    with flow_client(sim, password="wrong") as client:
        response = client.get("/service")
    assert response.status_code == 401 and response.text == "Invalid credentials"


def test_expired_credentials_are_refused(sim: SimServer) -> None:
    sim.site.faults.expired_credentials = True
    with flow_client(sim) as client:
        assert client.get("/service").status_code == 401


# pools and envelopes ---------------------------------------------------------------------------
def test_empty_pools_are_empty_objects(sim: SimServer) -> None:
    with flow_client(sim) as client:
        for path in ("/service_template", "/service"):
            response = client.get(path)
            assert response.status_code == 200
            assert json.loads(response.text) == {"DOCUMENT_POOL": {}}


def test_a_single_template_is_a_list_with_string_envelope_values(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    with flow_client(sim) as client:
        pool = json.loads(client.get("/service_template").text)
        one = json.loads(client.get(f"/service_template/{template_id}").text)
    documents = pool["DOCUMENT_POOL"]["DOCUMENT"]
    assert isinstance(documents, list) and len(documents) == 1
    document = documents[0]
    assert document == one["DOCUMENT"]
    assert document["ID"] == str(template_id) and document["TYPE"] == "101"
    assert document["UNAME"] == "oneadmin" and document["PERMISSIONS"]["OWNER_U"] == "1"
    assert all(isinstance(v, str) for k, v in document.items() if k not in ("PERMISSIONS", "TEMPLATE"))
    assert isinstance(document["TEMPLATE"]["BODY"], dict)
    assert document["TEMPLATE"]["BODY"]["roles"][0]["name"] == "front"


def test_unknown_objects_wrong_methods_and_bad_actions(sim: SimServer) -> None:
    """oneflow-server.rb release-7.4.0: NO_EXISTS 404, another document type 500 (document.rb
    92-100), routes it lacks Sinatra's 404, unguarded JSON.parse of actions 500, unknown
    template actions 200 with nothing done (lines 952-959)."""
    template_id = add_service_template(sim.site, [{"name": "front"}])
    with flow_client(sim) as client:
        missing = client.get("/service_template/999")
        assert missing.status_code == 404 and "999" in missing.text
        assert client.get("/service/999").status_code == 404
        other_type = client.get(f"/service/{template_id}")  # a template is not a service
        assert (other_type.status_code, other_type.text) == (500, f"[DocumentInfo] Error getting document [{template_id}].")
        assert client.patch(f"/service_template/{template_id}", content=b"{}").status_code == 404
        assert client.get("/nothing_here").status_code == 404
        bad_json = client.post(f"/service_template/{template_id}/action", content=b"{not json")
        assert bad_json.status_code == 500 and json.loads(bad_json.text)["message"] == "Internal server error"
        no_action = client.post(f"/service_template/{template_id}/action", json={"perform": "instantiate"})
        assert no_action.status_code == 500
        unknown = client.post(f"/service_template/{template_id}/action", json={"action": {"perform": "explode"}})
        assert (unknown.status_code, unknown.text) == (200, "")


def test_other_users_do_not_see_private_templates(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    user = sim.site.users[2]
    with flow_client(sim, user.name, user.password) as client:
        assert json.loads(client.get("/service_template").text) == {"DOCUMENT_POOL": {}}
        refused = client.get(f"/service_template/{template_id}")  # AUTHORIZATION -> 401 (one_error_to_http)
        assert refused.status_code == 401 and "Not authorized to perform USE DOCUMENT" in refused.text
    with flow_client(sim) as admin:
        chmod = admin.post(f"/service_template/{template_id}/action",
                           json={"action": {"perform": "chmod", "params": {"octet": "644"}}})
        assert chmod.status_code == 204
    with flow_client(sim, user.name, user.password) as client:
        assert client.get(f"/service_template/{template_id}").status_code == 200
        rename = client.post(f"/service_template/{template_id}/action",
                             json={"action": {"perform": "rename", "params": {"name": "mine"}}})
        assert rename.status_code == 401


def test_rename_and_clone_a_template(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    with flow_client(sim) as client:
        path = f"/service_template/{template_id}/action"
        assert client.post(path, json={"action": {"perform": "rename", "params": {"name": "renamed"}}}).status_code == 204
        clone = client.post(path, json={"action": {"perform": "clone", "params": {"name": "copy"}}})
        assert clone.status_code == 201
        names = [d["NAME"] for d in json.loads(client.get("/service_template").text)["DOCUMENT_POOL"]["DOCUMENT"]]
    assert sorted(names) == ["copy", "renamed"]


# instantiate validation ------------------------------------------------------------------------
@pytest.mark.since_version("7.0")
def test_7x_requires_every_input(sim7: SimServer) -> None:
    template_id = add_service_template(sim7.site, [{"name": "front"}])
    with flow_client(sim7) as client:
        path = f"/service_template/{template_id}/action"
        none = client.post(path, json=instantiate_body(None))
        partial = client.post(path, json=instantiate_body({"app_greeting": "hi"}))
    assert (none.status_code, none.text) == (400, "The Service template specifies User Inputs but no values have been found")
    assert (partial.status_code, partial.text) == (400, MSG_INPUTS_7)
    assert not [d for d in sim7.site.documents.values() if d.type == 100]  # nothing half-created


def test_networks_need_values(sim: SimServer) -> None:
    """oneflow-server.rb release-7.4.0 794-842: without networks_values the template's defaults
    are taken; a list missing a network, or items that are not objects, answer 400. The same in
    6.10 (oneflow-server.rb release-6.10.0 707-755)."""
    template_id = add_service_template(sim.site, [{"name": "front"}])
    key = values_key(sim)
    missing = instantiate_body(VALUES, key=key)
    del missing["action"]["params"]["merge_template"]["networks_values"]
    other_key = instantiate_body(VALUES, key=key)
    other_key["action"]["params"]["merge_template"]["networks_values"] = [{"Private": {"id": "0"}}]
    empty = instantiate_body(VALUES, key=key)
    empty["action"]["params"]["merge_template"]["networks_values"] = []
    wrong_shape = instantiate_body(VALUES, key=key)
    wrong_shape["action"]["params"]["merge_template"]["networks_values"] = {"Public": {"id": "0"}}
    with flow_client(sim) as client:
        path = f"/service_template/{template_id}/action"
        for body in (other_key, empty):
            response = client.post(path, json=body)
            assert (response.status_code, response.text) == (400, MSG_NETWORKS)
        shape = client.post(path, json=wrong_shape)
        assert (shape.status_code, shape.text) == (400, "Wrong networks_values format")
        defaults = client.post(path, json=missing)
    assert defaults.status_code == 201, defaults.text
    assert json.loads(defaults.text)["DOCUMENT"]["TEMPLATE"]["BODY"]["networks_values"] == [{"Public": {"id": None}}]


@pytest.mark.since_version("7.0")
def test_7x_renames_custom_attrs_values_on_the_way_in(sim7: SimServer) -> None:
    template_id = add_service_template(sim7.site, [{"name": "front"}])
    with flow_client(sim7) as client:
        response = client.post(f"/service_template/{template_id}/action",
                               json=instantiate_body(VALUES, key="custom_attrs_values"))
    assert response.status_code == 201, response.text
    document = json.loads(response.text)["DOCUMENT"]
    body = document["TEMPLATE"]["BODY"]
    assert document["TYPE"] == "100" and document["NAME"] == "svc"
    assert body["user_inputs_values"] == VALUES and "custom_attrs_values" not in body
    assert body["networks_values"] == [{"Public": {"id": "0"}}]
    # Service#allocate adds the state and start_time only (src/flow/lib/models/service.rb 319-332 at
    # release-7.0.2); a role's nodes, the log come when the server first deploys it
    assert isinstance(body["start_time"], int) and "log" not in body
    assert all("state" in role and "nodes" not in role for role in body["roles"])


def test_6x_expects_custom_attrs_values(sim6: SimServer) -> None:
    template_id = add_service_template(sim6.site, [{"name": "front"}], seven=False)
    with flow_client(sim6) as client:
        path = f"/service_template/{template_id}/action"
        new_key = client.post(path, json=instantiate_body(VALUES, key="user_inputs_values"))
        assert (new_key.status_code, new_key.text) == (
            400, "The Service template specifies custom attributes but no values have been found")
        partial = client.post(path, json=instantiate_body({"app_greeting": "hi"}, key="custom_attrs_values"))
        assert (partial.status_code, partial.text) == (400, MSG_INPUTS_6)
        response = client.post(path, json=instantiate_body(VALUES, key="custom_attrs_values"))
    assert response.status_code == 201, response.text
    body = json.loads(response.text)["DOCUMENT"]["TEMPLATE"]["BODY"]
    assert body["custom_attrs_values"] == VALUES and "user_inputs_values" not in body


@pytest.mark.since_version("7.0")
def test_unknown_role_in_merge_template_is_ignored(sim7: SimServer) -> None:
    """7.x `handle_nested_values` (service_template.rb release-7.4.0 759-797) merges roles by
    name and drops the others."""
    template_id = add_service_template(sim7.site, [{"name": "front"}])
    body = instantiate_body(VALUES)
    body["action"]["params"]["merge_template"]["roles"] = [{"name": "ghost", "cardinality": 2},
                                                           {"name": "front", "cardinality": 2}]
    with flow_client(sim7) as client:
        response = client.post(f"/service_template/{template_id}/action", json=body)
    assert response.status_code == 201, response.text
    roles = json.loads(response.text)["DOCUMENT"]["TEMPLATE"]["BODY"]["roles"]
    assert [(r["name"], r["cardinality"]) for r in roles] == [("front", 2)]
