"""The guest agent's decisions: READY for a running VM whose context asks for it, the automation
VM's key once, the database VM's READY only on a host with sse4.2 and avx (else DB_ERROR, which a
later good boot removes), the route manager's token once; nothing for a VM that is not running."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from realsite import agent
from tui.domain.naming import DEFAULT_NAMING

GOOD = agent.HostFacts("kvm-cascadelake-01", "x86_64", "sse4.1,sse4.2,avx,avx2", "Broadwell-noTSX Cascadelake-Server-noTSX")
OLD = agent.HostFacts("kvm-westmere-01", "x86_64", "sse4.1,sse4.2,ssse3", "Nehalem Westmere")
VM = agent.VmFacts(id=7, running=True, boot=("0", "0"), report_ready=True, role="", document_db_flag="",
                   cpu_model="", user_template={}, image_ids=(), host_id=0)


def _decide(vm: agent.VmFacts, host: agent.HostFacts | None = GOOD, appliances: set[str] | None = None) -> agent.Decision:
    return agent.decide(vm, host, DEFAULT_NAMING, appliances or set(), lambda comment: f"ssh-ed25519 AAAA {comment}")


def test_ready_only_for_a_running_vm_that_asks() -> None:
    assert _decide(VM).append == {"READY": "YES"}
    assert _decide(replace(VM, report_ready=False)).empty
    assert _decide(replace(VM, running=False)).empty
    assert _decide(replace(VM, user_template={"READY": "YES"})).empty


def test_the_automation_vm_publishes_its_key_once() -> None:
    vm = replace(VM, role=DEFAULT_NAMING.role_automation)
    assert _decide(vm).append == {DEFAULT_NAMING.automation_key_attribute: "ssh-ed25519 AAAA automation@one-7",
                                  "READY": "YES"}
    published = replace(vm, user_template={DEFAULT_NAMING.automation_key_attribute: "ssh-ed25519 X", "READY": "YES"})
    assert _decide(published).empty


def test_the_database_vm_is_ready_only_on_a_host_with_sse42_and_avx() -> None:
    vm = replace(VM, role="manager")
    refused = _decide(vm, OLD)
    assert "READY" not in refused.append
    assert refused.append[agent.DB_ERROR_ATTRIBUTE].endswith("kvm-westmere-01 CPU lacks avx, the database needs sse4_2 and avx")
    moved = replace(vm, user_template={agent.DB_ERROR_ATTRIBUTE: "old"})
    fixed = _decide(moved, GOOD)
    assert fixed.append == {"READY": "YES"} and fixed.drop == {agent.DB_ERROR_ATTRIBUTE}
    assert "aarch64" in _decide(vm, replace(GOOD, arch="aarch64")).append[agent.DB_ERROR_ATTRIBUTE]
    assert "no KVM_CPU_FEATURES" in _decide(vm, replace(GOOD, features="")).append[agent.DB_ERROR_ATTRIBUTE]
    assert "not offered" in _decide(replace(vm, cpu_model="Skylake-Server"), GOOD).append[agent.DB_ERROR_ATTRIBUTE]
    assert _decide(replace(vm, cpu_model="host-passthrough"), GOOD).append == {"READY": "YES"}
    flagged = replace(VM, document_db_flag="YES")
    assert agent.DB_ERROR_ATTRIBUTE in _decide(flagged, OLD).append


def test_either_spelling_of_the_flags_counts() -> None:
    proc = replace(GOOD, features="sse4_2,avx")
    assert _decide(replace(VM, role="manager"), proc).append == {"READY": "YES"}


def test_the_route_manager_publishes_a_token_once() -> None:
    first = _decide(VM, appliances={agent.ROUTE_MANAGER_APPLIANCE})
    assert set(first.append) == {agent.ROUTE_MANAGER_TOKEN_ATTRIBUTE, "READY"}
    again = replace(VM, user_template={agent.ROUTE_MANAGER_TOKEN_ATTRIBUTE: "t", "READY": "YES"})
    assert _decide(again, appliances={agent.ROUTE_MANAGER_APPLIANCE}).empty


VM_XML = """<VM><ID>12</ID><STATE>3</STATE><LCM_STATE>3</LCM_STATE>
<TEMPLATE><CONTEXT><REPORT_READY>YES</REPORT_READY></CONTEXT><CPU_MODEL><MODEL>Westmere</MODEL></CPU_MODEL>
<DISK><IMAGE_ID>4</IMAGE_ID></DISK><DISK><IMAGE_ID>5</IMAGE_ID></DISK></TEMPLATE>
<USER_TEMPLATE><ROLE_NAME>manager</ROLE_NAME><SERVICE_ID>3</SERVICE_ID><SCHED_ACTION><ID>0</ID><ACTION>x"y</ACTION></SCHED_ACTION>
<DB_ERROR>old</DB_ERROR></USER_TEMPLATE>
<HISTORY_RECORDS><HISTORY><SEQ>0</SEQ><HID>1</HID><STIME>10</STIME></HISTORY>
<HISTORY><SEQ>1</SEQ><HID>2</HID><STIME>20</STIME></HISTORY></HISTORY_RECORDS></VM>"""


def test_a_vm_is_read_from_the_platforms_xml() -> None:
    vm = agent.vm_facts(ET.fromstring(VM_XML))
    assert (vm.id, vm.running, vm.boot, vm.report_ready, vm.role, vm.cpu_model, vm.image_ids, vm.host_id) == (
        12, True, ("1", "2"), True, "manager", "Westmere", (4, 5), 2)
    assert vm.user_template["SERVICE_ID"] == "3" and "SCHED_ACTION" not in vm.user_template


def test_removing_an_attribute_keeps_the_rest_of_the_user_template() -> None:
    text = agent.render_user_template(ET.fromstring(VM_XML), {agent.DB_ERROR_ATTRIBUTE})
    assert text == 'ROLE_NAME="manager"\nSERVICE_ID="3"\nSCHED_ACTION=[ID="0",ACTION="x\\"y"]\n'


def test_a_published_key_is_an_openssh_ed25519_line() -> None:
    line = agent.new_public_key("automation@one-3")
    kind, body, comment = line.split(" ")
    assert kind == "ssh-ed25519" and len(body) > 60 and comment == "automation@one-3"


class _FakeRpc:
    """one.vmpool.info / one.vm.info / one.host.info / one.vm.update against one VM."""

    def __init__(self, xml: str) -> None:
        self.vm = xml
        self.updates: list[tuple[int, str, int]] = []

    def xml(self, method: str, *args: object) -> ET.Element:
        if method == "one.vmpool.info":  # 7.x's short bodies: no CONTEXT, no STIME
            short = re.sub(r"<CONTEXT>.*?</CONTEXT>|<STIME>\d+</STIME>", "", self.vm)
            return ET.fromstring(f"<VM_POOL>{short}</VM_POOL>")
        if method == "one.vm.info":
            return ET.fromstring(self.vm)
        if method == "one.host.info":
            return ET.fromstring("<HOST><NAME>h</NAME><TEMPLATE><ARCH>x86_64</ARCH><KVM_CPU_FEATURES>sse4.2,avx"
                                 "</KVM_CPU_FEATURES><KVM_CPU_MODELS>Westmere</KVM_CPU_MODELS></TEMPLATE></HOST>")
        if method == "one.image.info":
            return ET.fromstring("<IMAGE><TEMPLATE><PLATFORM_MARKETPLACE_APPLIANCE_NAME>Site Toolkit manager"
                                 "</PLATFORM_MARKETPLACE_APPLIANCE_NAME></TEMPLATE></IMAGE>")
        raise AssertionError(method)

    def call(self, method: str, *args: object) -> object:
        assert method == "one.vm.update"
        vm_id, body, mode = args
        self.updates.append((int(str(vm_id)), str(body), int(str(mode))))
        return vm_id


def test_the_agent_waits_out_the_boot_then_writes_once_per_boot() -> None:
    rpc = _FakeRpc(VM_XML)
    lines: list[str] = []
    worker = agent.Agent(rpc, boot_delay=3.0, log=lines.append)  # type: ignore[arg-type]
    assert worker.poll_once(100.0) == 0  # just booted
    assert worker.poll_once(102.0) == 0
    assert worker.poll_once(103.5) == 1
    assert rpc.updates[0][2] == 0 and "DB_ERROR" not in rpc.updates[0][1]  # the old error removed
    assert rpc.updates[1] == (12, 'READY="YES"\n', 1)
    assert worker.poll_once(200.0) == 0  # handled for this boot
    rpc.vm = VM_XML.replace("<SEQ>1</SEQ><HID>2</HID><STIME>20</STIME>", "<SEQ>2</SEQ><HID>2</HID><STIME>30</STIME>")
    assert worker.poll_once(201.0) == 0 and worker.poll_once(204.5) == 1  # a new boot is handled again
    assert "READY" in lines[0]
