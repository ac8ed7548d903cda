"""Cloud adapter contract, mutating calls, on the embedded site only: every write call of the
client, the VM state transitions as the adapter reports them, append flags as ints, templates as
escaped text, JSON documents, ACL rules."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.adapters.conftest import eventually
from tui.adapters.cloud import CloudClient, json_document_template
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.hosts import Host
from tui.domain.permissions import Permissions
from tui.domain.vm_detail import VmDetail
from tui.domain.vm_scan import VmPrefilter
from tui.errors import SiteError
from tui.sim.platform import version_key

pytestmark = pytest.mark.usefixtures("sim_only")

WAIT_S = 20.0


async def _state_walk(cloud: CloudClient, vm_id: int, target: str, seen: list[str]) -> VmDetail:
    """Poll the VM until its short state name is `target`, recording every state seen."""

    async def probe() -> VmDetail | None:
        detail = await cloud.vm_info(vm_id)
        if not seen or seen[-1] != detail.state_name:
            seen.append(detail.state_name)
        return detail if detail.state_name == target else None

    return await eventually(probe, WAIT_S, f"VM {vm_id} to reach {target}")


async def _new_vm(cloud: CloudClient, name: str) -> int:
    templates = await cloud.list_templates()
    return await cloud.template_instantiate(templates[0].id, name)


def _compatible_host(hosts: tuple[Host, ...], but_not: int | None = None) -> Host:
    return next(h for h in hosts if h.usable and h.arch == "x86_64" and h.id != but_not
                and {"avx", "sse4_2"} <= set(h.kvm_cpu_features or ()))


async def test_vm_boot_undeploy_move_and_terminate(cloud: CloudClient) -> None:
    vm_id = await _new_vm(cloud, "contract-move")
    seen: list[str] = []
    first = await _state_walk(cloud, vm_id, "runn", seen)
    assert seen[-1] == "runn" and set(seen[:-1]) <= {"pend", "prol", "boot"}
    assert first.summary.host and first.history

    # wrong state: deploy is only for PENDING, HOLD, STOPPED, UNDEPLOYED
    with pytest.raises(SiteError) as info:
        await cloud.vm_deploy(vm_id, first.summary.host_id or 0)
    assert info.value.code == 0x0800

    assert await cloud.vm_action("undeploy", vm_id) == vm_id
    seen.clear()
    await _state_walk(cloud, vm_id, "unde", seen)
    assert "shut" in seen or "epil" in seen

    # updateconf with append=1 (an int on the wire) keeps the other sections
    assert await cloud.vm_updateconf(vm_id, [("CPU_MODEL", [("MODEL", "Broadwell-noTSX")])]) == vm_id
    target = _compatible_host(await cloud.list_hosts(), but_not=first.summary.host_id)
    assert await cloud.vm_deploy(vm_id, target.id) == vm_id
    seen.clear()
    moved = await _state_walk(cloud, vm_id, "runn", seen)
    assert moved.cpu_model == "Broadwell-noTSX"
    assert moved.summary.host == target.name and moved.summary.host_id == target.id
    assert len(moved.history) == len(first.history) + 1
    assert moved.context == first.context

    assert await cloud.vm_action("terminate", vm_id) == vm_id

    async def gone() -> bool:
        return vm_id not in {vm.id for vm in await cloud.list_vms()}

    await eventually(gone, WAIT_S, f"VM {vm_id} to leave the list")
    assert (await cloud.vm_info(vm_id)).state_name == "done"
    assert vm_id in {vm.id for vm in await cloud.list_vms(state=-2)}


async def test_vm_poweroff_resume_and_hard_undeploy(cloud: CloudClient) -> None:
    vm_id = await _new_vm(cloud, "contract-power")
    await _state_walk(cloud, vm_id, "runn", [])
    await cloud.vm_action("poweroff", vm_id)
    await _state_walk(cloud, vm_id, "poff", [])
    with pytest.raises(SiteError) as info:
        await cloud.vm_action("undeploy", 10**6)
    assert info.value.code == 0x0400
    await cloud.vm_action("resume", vm_id)
    await _state_walk(cloud, vm_id, "runn", [])
    await cloud.vm_action("undeploy-hard", vm_id)
    await _state_walk(cloud, vm_id, "unde", [])


async def test_vm_disk_resize_walks_its_states_and_refuses_as_the_platform(cloud: CloudClient, sim: Any,
                                                                          one_version: str) -> None:
    """one.vm.diskresize (tui.sim.disk_resize; RequestManagerVirtualMachine.cc 3522 at release-7.0.2):
    the size text first, then the disk, then the size, then the state; RUNNING -> DISK_RESIZE ->
    RUNNING with the new SIZE, and from POWEROFF through DISK_RESIZE_POWEROFF back to POWEROFF. The
    answer is the disk's ID before 7.4 and the VM's from 7.4 on (recorded: tests/recordings/7.4.0.json)."""
    vm_id = await _new_vm(cloud, "contract-diskresize")
    with pytest.raises(SiteError) as info:  # not yet RUNNING: the size is checked, then the state
        await cloud.vm_disk_resize(vm_id, 0, 10**6)
    # PENDING, or already PROLOG/BOOT when the scheduler was quicker than this call
    assert info.value.code == 0x0800 and re.search(
        rf"Could not resize disk for VM {vm_id}, wrong state (PENDING|PROLOG|BOOT)\.", info.value.detail)
    first = await _state_walk(cloud, vm_id, "runn", [])
    size = first.disks[0].size_mb or 0
    for params, message in (((vm_id, 0, "30G"), "Disk SIZE is not a valid integer"),
                            ((vm_id, 0, " 12x"), "Disk SIZE is not a valid integer"),
                            ((10**6, 0, "x"), "Disk SIZE is not a valid integer"),
                            ((vm_id, 9, str(size + 1)), "VM disk does not exist"),
                            ((vm_id, 0, str(size)), "New disk size has to be greater than current one")):
        with pytest.raises(SiteError) as info:
            await cloud.raw("one.vm.diskresize", *params)
        assert info.value.code == 0x0800 and message in info.value.detail, params
    with pytest.raises(SiteError) as info:
        await cloud.raw("one.vm.diskresize", 10**6, 0, "5")
    assert info.value.code == 0x0400
    sim.site.faults.disk_resize_seconds = 50.0  # one simulated minute: about a second here
    assert await cloud.vm_disk_resize(vm_id, 0, size + 1024) == (vm_id if version_key(one_version) >= (7, 4) else 0)
    resizing = await cloud.vm_info(vm_id)
    assert resizing.summary.status == "DISK_RESIZE" and resizing.disks[0].size_mb == size + 1024
    assert resizing.disks[0].attributes.get("SIZE_PREV") == str(size)
    with pytest.raises(SiteError) as info:  # one at a time
        await cloud.vm_disk_resize(vm_id, 0, size + 2048)
    assert "wrong state DISK_RESIZE." in info.value.detail
    done = await _state_walk(cloud, vm_id, "runn", [])
    assert done.disks[0].size_mb == size + 1024 and "SIZE_PREV" not in done.disks[0].attributes
    await cloud.vm_action("poweroff", vm_id)
    await _state_walk(cloud, vm_id, "poff", [])
    await cloud.vm_disk_resize(vm_id, 0, size + 2048)
    assert (await cloud.vm_info(vm_id)).summary.status == "DISK_RESIZE_POWEROFF"
    off = await _state_walk(cloud, vm_id, "poff", [])
    assert off.disks[0].size_mb == size + 2048


async def test_vm_update_merges_or_replaces_the_user_template(cloud: CloudClient) -> None:
    vm_id = await _new_vm(cloud, "contract-update")
    await cloud.vm_update(vm_id, [("NOTE", 'says "hi" \\ there'), ("KEEP", "1")], append=True)
    detail = await cloud.vm_info(vm_id)
    assert detail.user_template.get("NOTE") == 'says "hi" \\ there'
    await cloud.vm_update(vm_id, 'NOTE = "second"', append=1)
    detail = await cloud.vm_info(vm_id)
    assert (detail.user_template.get("NOTE"), detail.user_template.get("KEEP")) == ("second", "1")
    await cloud.vm_update(vm_id, 'ONLY = "this"', append=False)
    detail = await cloud.vm_info(vm_id)
    assert detail.user_template.get("ONLY") == "this" and "KEEP" not in detail.user_template


async def test_paged_scan_builds_only_the_vms_its_prefilter_passes(cloud: CloudClient) -> None:
    """scan_vms_detail reads every page and builds only the VMs whose body shows the attribute,
    the text in ROLE_NAME or NAME, or the id; the platform's query argument is never sent (on
    the embedded site's default sqlite it would be refused: tests/conformance)."""
    tagged = await _new_vm(cloud, "contract-tagged")
    named = await _new_vm(cloud, "worker_0_(service_9)")
    plain = [await _new_vm(cloud, f"contract-plain-{n}") for n in range(5)]
    await cloud.vm_update(tagged, 'CONTRACT_MARK = "yes"', append=1)
    await cloud.vm_update(plain[0], 'ROLE_NAME = "workers"', append=1)
    scan = await cloud.scan_vms_detail(VmPrefilter(attributes=("CONTRACT_MARK",)), page_size=2)
    assert [d.id for d in scan.vms] == [tagged]
    assert scan.listed == len(await cloud.list_vms()) and scan.pages >= 3
    scan = await cloud.scan_vms_detail(VmPrefilter(texts=("worker",), ids=(plain[3],)), page_size=3)
    assert sorted(d.id for d in scan.vms) == sorted([named, plain[0], plain[3]])


async def test_image_from_a_marketplace_app(cloud: CloudClient) -> None:
    apps = await cloud.list_marketapps()
    # the smallest READY image app (as the recorded scenario picks one): the embedded site's marketplace
    # also serves an appliance whose file is missing (its image ends in ERROR), larger than that
    app = min((a for a in apps if a.type_name == "IMAGE" and a.state_name == "READY" and a.app_template),
              key=lambda a: (a.size_mb, a.id))
    store = next(d for d in await cloud.list_datastores() if d.type_name == "IMAGE")
    text = app.app_template + f'\nNAME = "contract {app.name}"\nFROM_APP = "{app.id}"\n'
    image_id = await cloud.image_allocate(text, store.id)
    image = await cloud.image_info(image_id)
    assert image.datastore_id == store.id and image.state_name in ("lock", "rdy")

    async def ready() -> bool:
        return (await cloud.image_info(image_id)).state_name == "rdy"

    await eventually(ready, WAIT_S, f"image {image_id} to be READY")
    assert image_id in {i.id for i in await cloud.list_images()}

    # attach marketplace attributes: append (merge) keeps what the image had
    before = (await cloud.image_info(image_id)).attributes
    await cloud.image_update(image_id, [("PLATFORM_MARKETPLACE_APPLIANCE_NAME", app.name),
                                        ("PLATFORM_MARKETPLACE_APPLIANCE_VERSION", "20250403-1109")], append=True)
    after = (await cloud.image_info(image_id)).attributes
    assert after.get("PLATFORM_MARKETPLACE_APPLIANCE_NAME") == app.name
    assert set(before.names()) <= set(after.names())

    await cloud.image_chmod(image_id, Permissions.from_octal("644"))
    assert (await cloud.image_info(image_id)).permissions.octal == "644"
    await cloud.image_chmod(image_id, (-1, -1, -1, -1, -1, -1, 0, -1, -1))
    assert (await cloud.image_info(image_id)).permissions.octal == "640"
    other = next(u for u in await cloud.list_users() if u.id != 0)
    await cloud.image_chown(image_id, other.id, -1)
    assert (await cloud.image_info(image_id)).uid == other.id

    await cloud.image_delete(image_id)

    async def deleted() -> bool:
        try:
            await cloud.image_info(image_id)
        except SiteError as error:
            return error.code == 0x0400
        return False

    await eventually(deleted, WAIT_S, f"image {image_id} to be deleted")


async def test_vm_template_lifecycle(cloud: CloudClient) -> None:
    template_id = await cloud.template_allocate([("NAME", "contract-tpl"), ("CPU", "1"), ("MEMORY", "512"),
                                                 ("CONTEXT", [("NETWORK", "YES")])])
    tpl = await cloud.template_info(template_id)
    assert tpl.name == "contract-tpl" and tpl.template.vector("CONTEXT") == {"NETWORK": "YES"}
    await cloud.template_chmod(template_id, Permissions.from_octal("604"))
    assert (await cloud.template_info(template_id)).permissions.octal == "604"
    other = next(u for u in await cloud.list_users() if u.id != 0)
    await cloud.template_chown(template_id, other.id, other.gid)
    assert (await cloud.template_info(template_id)).uid == other.id
    await cloud.template_delete(template_id)
    with pytest.raises(SiteError) as info:
        await cloud.template_info(template_id)
    assert info.value.code == 0x0400


async def test_user_ssh_key(cloud: CloudClient) -> None:
    user = next(u for u in await cloud.list_users() if u.id != 0)
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractKey automation@site"
    await cloud.user_update(user.id, [("SSH_PUBLIC_KEY", key)], append=True)
    updated = await cloud.user_info(user.id)
    assert key in updated.ssh_public_keys
    assert updated.has_key("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIContractKey other-comment")


async def test_json_documents(cloud: CloudClient) -> None:
    body: dict[str, Any] = {"name": "contract", "deployment": "straight", "roles": [],
                            "description": 'quotes " and ]]> survive'}
    doc_id = await cloud.document_allocate(json_document_template(body, "contract"), SERVICE_TEMPLATE_DOCUMENT)
    doc = await cloud.document_info(doc_id)
    assert (doc.name, doc.type, doc.body) == ("contract", SERVICE_TEMPLATE_DOCUMENT, body)
    assert doc_id in {d.id for d in await cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT)}
    changed = {**body, "description": "v2"}
    await cloud.document_update(doc_id, json_document_template(changed))
    assert (await cloud.document_info(doc_id)).body == changed
    await cloud.document_delete(doc_id)
    with pytest.raises(SiteError) as info:
        await cloud.document_info(doc_id)
    assert info.value.code == 0x0400


async def test_acl_rules(cloud: CloudClient) -> None:
    user = next(u for u in await cloud.list_users() if u.id != 0)
    rule_id = await cloud.acl_add(f"#{user.id} IMAGE+TEMPLATE+DOCUMENT/* USE")
    rule = next(r for r in await cloud.acl_list() if r.id == rule_id)
    assert rule.string.startswith(f"#{user.id} IMAGE+TEMPLATE+DOCUMENT/* USE")
    assert set(rule.resources) == {"IMAGE", "TEMPLATE", "DOCUMENT"} and rule.right_names == ("USE",)
    with pytest.raises(SiteError) as info:  # the same rule again, from its hex fields
        await cloud.acl_addrule(f"{rule.user:x}", f"0x{rule.resource:x}", f"{rule.rights:x}")
    assert "already exists" in info.value.detail
    await cloud.acl_delrule(rule_id)
    assert rule_id not in {r.id for r in await cloud.acl_list()}
    with pytest.raises(SiteError) as info:
        await cloud.acl_add("#1 NOSUCHTHING/* USE")
    assert "NOSUCHTHING" in info.value.detail


async def test_broken_app_image_ends_in_error(cloud: CloudClient, sim: Any) -> None:
    with sim.site.lock:
        broken_ids = {a.id for a in sim.site.marketapps.values() if a.broken and a.type == 1}
    app = next(a for a in await cloud.list_marketapps() if a.id in broken_ids)
    store = next(d for d in await cloud.list_datastores() if d.type_name == "IMAGE")
    image_id = await cloud.image_allocate(app.app_template + f'\nNAME = "contract broken"\nFROM_APP = "{app.id}"\n',
                                          store.id)

    async def failed() -> str:
        image = await cloud.image_info(image_id)
        return image.error if image.state_name == "err" else ""

    assert await eventually(failed, WAIT_S, f"image {image_id} to end in ERROR")


async def test_a_taken_name_is_name_taken_and_not_retried(cloud: CloudClient) -> None:
    """Every version's answer to a taken name (INTERNAL for templates, groups, users and, before 7.4,
    marketplaces; ALLOCATE for images and 7.4's marketplaces; tests/conformance/test_xmlrpc_rows.py)
    reaches the caller as 'Name taken', not retryable, and nothing is created twice."""
    template = [("NAME", "taken-tpl"), ("CPU", "1"), ("MEMORY", "128")]
    image = 'NAME = "taken-disk"\nTYPE = "DATABLOCK"\nSIZE = 10'
    market = 'NAME = "taken-market"\nMARKET_MAD = "one"\n'
    first_template = await cloud.template_allocate(template)
    await cloud.image_allocate(image, 1)
    await cloud.group_allocate("taken-group")
    await cloud.user_allocate("taken-user", "secret-one", "core")
    await cloud.market_allocate(market)
    attempts = {
        "template": lambda: cloud.template_allocate(template),
        "image": lambda: cloud.image_allocate(image, 1),
        "group": lambda: cloud.group_allocate("taken-group"),
        "user": lambda: cloud.user_allocate("taken-user", "secret-two", "core"),
        "marketplace": lambda: cloud.market_allocate(market),
    }
    for kind, attempt in attempts.items():
        with pytest.raises(SiteError) as info:
            await attempt()
        assert info.value.title.startswith("Name taken"), (kind, info.value.title, info.value.detail)
        assert info.value.retryable is False and "NAME is already taken by" in info.value.detail, kind
        assert "secret-two" not in info.value.detail
    assert [t.id for t in await cloud.list_templates() if t.name == "taken-tpl"] == [first_template]
