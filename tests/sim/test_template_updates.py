"""Template changes over XML-RPC: updateconf's sections, update append 0/1, on every object that has them."""

from __future__ import annotations

from typing import Any

import pyone
import pytest

from tests.sim.one_client import one, states
from tests.waiting import wait_until
from tui.sim.server import SimServer


def _vm(sim: SimServer, **kw: Any) -> tuple[Any, int]:
    client = one(sim)
    extra = 'OS = [ ARCH = "x86_64", BOOT = "disk0" ]\nFEATURES = [ ACPI = "yes" ]\nLABELS = "web"'
    return client, client.template.instantiate(0, "conf", True, extra)


def test_updateconf_append_0_erases_the_sections_missing_from_the_text(sim: SimServer) -> None:
    """...but CONTEXT, which only a CONTEXT in the text changes (src/vm/VirtualMachine.cc 3126-3140 at
    release-7.0.0; a 7.0.2 frontend keeps it)."""
    client, vm_id = _vm(sim)
    context = client.vm.info(vm_id).TEMPLATE["CONTEXT"]
    client.vm.updateconf(vm_id, 'CPU_MODEL = [ MODEL = "Broadwell-noTSX" ]', 0)
    template = client.vm.info(vm_id).TEMPLATE
    assert template["CPU_MODEL"] == {"MODEL": "Broadwell-noTSX"}
    for erased in ("OS", "FEATURES", "GRAPHICS"):
        assert erased not in template
    for kept in ("DISK", "NIC", "MEMORY", "CPU", "VCPU"):
        assert kept in template
    assert template["CONTEXT"] == context


def test_updateconf_append_1_merges_into_existing_sections(sim: SimServer) -> None:
    client, vm_id = _vm(sim)
    before = client.vm.info(vm_id).TEMPLATE
    client.vm.updateconf(vm_id, 'CONTEXT = [ EXTRA = "1" ]\nOS = [ BOOT = "disk1" ]\nCPU_MODEL = [ MODEL = "x" ]', 1)
    after = client.vm.info(vm_id).TEMPLATE
    assert after["CONTEXT"]["EXTRA"] == "1" and after["CONTEXT"]["ETH0_IP"] == before["CONTEXT"]["ETH0_IP"]
    assert after["OS"] == {"ARCH": "x86_64", "BOOT": "disk1", "UUID": before["OS"]["UUID"]}
    assert after["FEATURES"] == before["FEATURES"] and after["CPU_MODEL"] == {"MODEL": "x"}


def test_updateconf_ignores_attributes_outside_its_sections_and_keeps_backup_config_apart(sim: SimServer) -> None:
    client, vm_id = _vm(sim)
    client.vm.updateconf(vm_id, 'MEMORY = "99999"\nBACKUP_CONFIG = [ KEEP_LAST = "3", MODE = "FULL" ]', 1)
    vm = client.vm.info(vm_id)
    assert vm.TEMPLATE["MEMORY"] == "2048"
    assert "BACKUP_CONFIG" not in vm.TEMPLATE
    assert (vm.BACKUPS.BACKUP_CONFIG.KEEP_LAST, vm.BACKUPS.BACKUP_CONFIG.MODE) == ("3", "FULL")


def test_updateconf_is_refused_in_states_that_cannot_change(sim: SimServer) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "s")
    wait_until(lambda: states(client, vm_id) == (3, 3), what="RUNNING")
    client.vm.action("suspend", vm_id)
    wait_until(lambda: states(client, vm_id) == (5, 0), what="SUSPENDED")
    with pytest.raises(pyone.OneInternalException) as error:
        client.vm.updateconf(vm_id, 'CONTEXT = [ A = "1" ]', 1)
    assert str(error.value) == "[one.vm.updateconf] configuration cannot be updated in state SUSPENDED"


def test_vm_update_replaces_or_merges_the_user_template(sim: SimServer) -> None:
    client, vm_id = _vm(sim)
    client.vm.update(vm_id, 'NOTE = "a"\nLABELS = "db"', 1)
    assert {"NOTE": "a", "LABELS": "db"}.items() <= client.vm.info(vm_id).USER_TEMPLATE.items()
    client.vm.update(vm_id, 'ONLY = "this"', 0)
    assert dict(client.vm.info(vm_id).USER_TEMPLATE) == {"ONLY": "this"}


def test_image_template_user_and_document_updates(sim: SimServer) -> None:
    client = one(sim)
    client.image.update(0, 'PLATFORM_VERSION = "1.2.0"', 1)
    assert client.image.info(0).TEMPLATE["PLATFORM_VERSION"] == "1.2.0"
    assert client.image.info(0).TEMPLATE["DEV_PREFIX"] == "vd"
    client.image.update(0, 'ONLY = "x"', 0)
    assert dict(client.image.info(0).TEMPLATE) == {"ONLY": "x"}
    client.template.update(0, 'DESCRIPTION = "base"', 1)
    assert client.template.info(0).TEMPLATE["DESCRIPTION"] == "base"
    key_a, key_b = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA a@x", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB b@y"
    client.user.update(2, f'SSH_PUBLIC_KEY = "{key_a}\n{key_b}"', 1)
    assert client.user.info(2).TEMPLATE["SSH_PUBLIC_KEY"] == f"{key_a}\n{key_b}"
    doc_id = client.document.allocate('NAME = "svc"\nBODY = "{\\"name\\": \\"svc\\", \\"roles\\": []}"', 101)
    client.document.update(doc_id, 'DESCRIPTION = "d"', 1)
    doc = client.document.info(doc_id)
    assert doc.NAME == "svc" and doc.TYPE == "101"
    assert doc.TEMPLATE["DESCRIPTION"] == "d" and '"roles":[]' in doc.TEMPLATE["BODY"]


def test_a_dict_template_from_pyone_is_read_with_its_root_ignored(sim: SimServer) -> None:
    client = one(sim)
    client.image.update(0, {"TEMPLATE": {"PLATFORM_NAME": "toolkit", "NESTED": {"A": "1"}}}, 1)
    template = client.image.info(0).TEMPLATE
    assert template["PLATFORM_NAME"] == "toolkit" and template["NESTED"] == {"A": "1"}


@pytest.mark.parametrize("text", ['A = "x]]>y"', "1BAD = 2", 'A = "open', "A = [ B = 1"])
def test_bad_template_text_is_a_bad_parameter(sim: SimServer, text: str) -> None:
    with pytest.raises(pyone.OneInternalException, match=r"^\[one.image.update\] Cannot update template\. Parse error"):
        one(sim).image.update(0, text, 1)


def test_update_rejects_an_unknown_append_mode(sim: SimServer) -> None:
    with pytest.raises(pyone.OneApiException, match="Wrong update type"):
        one(sim).image.update(0, 'A = "1"', 2)
