"""Every XML-RPC method of the simulated cloud through pyone: results, pool filters and pagination."""

from __future__ import annotations

import xmlrpc.client

import pyone
import pytest
import requests

from tests.sim.one_client import call, one
from tests.waiting import wait_until
from tui.sim.scenarios import AUTOMATION_USER, ONEGATE_ENDPOINT
from tui.sim.server import SimServer


def _user_session(sim: SimServer) -> str:
    user = sim.site.user_by_name(AUTOMATION_USER)
    assert user is not None
    return f"{user.name}:{user.password}"


def test_system_config_carries_the_onegate_endpoint_in_the_raw_node(sim: SimServer) -> None:
    config = one(sim).system.config()
    raw = config.gds_elementtree_node_
    assert raw.findtext("ONEGATE_ENDPOINT") == ONEGATE_ENDPOINT
    assert raw.findtext("API_LIST_ORDER") == "DESC"


def test_hosts_report_their_cpu_facts(sim: SimServer) -> None:
    hosts = {h.NAME: h for h in one(sim).hostpool.info().HOST}
    cascade = hosts["kvm-cascadelake-01"].TEMPLATE
    assert cascade["ARCH"] == "x86_64" and cascade["KVM_CPU_MODEL"] == "Cascadelake-Server-noTSX"
    assert {"sse4_2", "avx", "avx2"} <= set(cascade["KVM_CPU_FEATURES"].split(","))
    westmere = hosts["kvm-westmere-01"].TEMPLATE["KVM_CPU_FEATURES"].split(",")
    assert "sse4_2" in westmere and "avx" not in westmere
    assert "KVM_CPU_FEATURES" not in hosts["kvm-legacy-01"].TEMPLATE
    assert hosts["arm-ampere-01"].TEMPLATE["ARCH"] == "aarch64"
    assert {h.STATE for h in hosts.values()} >= {2, 4, 8}
    host = one(sim).host.info(0)
    assert host.ID == 0 and host.HOST_SHARE.TOTAL_CPU == 4000


def test_host_share_counts_the_vms_it_holds(sim: SimServer) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "h", False, 'SCHED_REQUIREMENTS = "ID = 1"')
    wait_until(lambda: client.vm.info(vm_id).LCM_STATE == 3, what="RUNNING")
    host = client.host.info(1)
    assert vm_id in host.VMS.ID and host.HOST_SHARE.RUNNING_VMS == 1
    assert (host.HOST_SHARE.CPU_USAGE, host.HOST_SHARE.MEM_USAGE) == (100, 2048 * 1024)


def test_datastores_networks_users_groups(sim: SimServer) -> None:
    client = one(sim)
    assert sorted(d.TYPE for d in client.datastorepool.info().DATASTORE) == [0, 1, 2]
    assert client.datastore.info(1).TYPE == 0
    nets = {n.NAME: n for n in client.vnpool.info(-2, -1, -1).VNET}
    assert nets["oam"].BRIDGE == "br-mgmt" and nets["oam"].TEMPLATE["NETWORK_ADDRESS"] == "10.11.28.0"
    assert nets["trial-vxlan"].VN_MAD == "vxlan" and nets["trial-vxlan"].TEMPLATE["GUEST_MTU"] == "1450"
    assert client.vn.info(0).AR_POOL.AR[0].IP == "10.11.28.20"
    users = {u.NAME: u for u in client.userpool.info().USER}
    assert {"oneadmin", AUTOMATION_USER} <= set(users)
    assert users[AUTOMATION_USER].GNAME == "users"
    assert client.user.info(-1).NAME == "oneadmin"
    assert [g.NAME for g in client.grouppool.info().GROUP] == ["users", "oneadmin"]  # newest first (DESC)
    assert 2 in client.group.info(1).USERS.ID


def test_a_regular_user_sees_itself_and_its_groups(sim: SimServer) -> None:
    client = one(sim, _user_session(sim))
    assert [u.NAME for u in client.userpool.info().USER] == [AUTOMATION_USER]
    assert [g.NAME for g in client.grouppool.info().GROUP] == ["users"]
    assert client.user.info(-1).NAME == AUTOMATION_USER
    with pytest.raises(pyone.OneAuthorizationException):
        client.user.info(0)
    assert client.system.config().gds_elementtree_node_.findtext("ONEGATE_ENDPOINT") == ONEGATE_ENDPOINT


def test_before_6_10_only_the_oneadmin_group_reads_the_configuration(site_factory) -> None:
    """RequestManagerSystem.cc: release-6.8.0 38-52 refuses users outside the oneadmin group;
    release-6.10.0 38-46 serves everyone (`get_configuration_xml(is_admin)`)."""
    old = site_factory(one_version="6.0.0")
    with pytest.raises(pyone.OneAuthorizationException, match="only be retrieved by users in the oneadmin group"):
        one(old, _user_session(old)).system.config()
    assert one(old).system.config().gds_elementtree_node_.findtext("API_LIST_ORDER") == "DESC"
    sim = site_factory(one_version="6.10.0")
    assert one(sim, _user_session(sim)).system.config().gds_elementtree_node_.findtext(
        "ONEGATE_ENDPOINT") == ONEGATE_ENDPOINT


def test_marketplaces_and_apps(sim: SimServer) -> None:
    client = one(sim)
    markets = sorted(client.marketpool.info().MARKETPLACE, key=lambda m: m.ID)  # listed newest first
    # the bootstrap marketplaces (src/market/MarketPlacePool.cc 36-103), disabled, and the site's own
    assert [(m.ID, m.NAME, m.MARKET_MAD, m.STATE) for m in markets] == [
        (0, "OpenNebula Public", "one", 1), (1, "Linux Containers", "linuxcontainers", 1),
        (100, f"{sim.site.naming.toolkit_appliance_name} Marketplace", "one", 0)]
    assert markets[2].TEMPLATE["ENDPOINT"] == sim.market_url + "/"
    assert "ENDPOINT" not in markets[0].TEMPLATE
    apps = client.marketapppool.info(-2, -1, -1).MARKETPLACEAPP
    assert {a.TYPE for a in apps} == {1, 2, 3} and {a.MARKETPLACE_ID for a in apps} == {100}
    assert sorted(a.ID for a in apps) == list(markets[2].MARKETPLACEAPPS.ID)
    app = client.marketapp.info(apps[-1].ID)
    assert app.NAME == apps[-1].NAME and app.APPTEMPLATE64
    # DESCRIPTION, VERSION and APPTEMPLATE64 stay in TEMPLATE too (MarketPlaceApp.cc 434-487)
    assert app.TEMPLATE["APPTEMPLATE64"] == app.APPTEMPLATE64 and app.TEMPLATE["VERSION"] == app.VERSION


def test_template_allocate_chmod_chown_instantiate_delete(sim: SimServer) -> None:
    client = one(sim)
    tpl = client.template.allocate('NAME = "small"\nCPU = "0.5"\nMEMORY = "512"\nDISK = [ IMAGE_ID = "0" ]')
    client.template.chmod(tpl, -1, -1, -1, 1, -1, -1, 1, -1, -1)
    client.template.chown(tpl, 2, 1)
    info = client.template.info(tpl)
    assert (info.UNAME, info.GNAME, info.PERMISSIONS.GROUP_U, info.PERMISSIONS.OTHER_U) == (AUTOMATION_USER, "users", 1, 1)
    vm_id = client.template.instantiate(tpl, "")
    assert client.vm.info(vm_id).NAME == f"small-{vm_id}"
    with pytest.raises(pyone.OneNoExistsException, match=r"Error getting user \[55\]"):
        client.template.chown(tpl, 55, -1)
    with pytest.raises(pyone.OneApiException, match="Wrong permissions"):
        client.template.chmod(tpl, 2, -1, -1, -1, -1, -1, -1, -1, -1)
    assert client.template.delete(tpl) == tpl
    with pytest.raises(pyone.OneNoExistsException):
        client.template.info(tpl)


def test_documents_allocate_list_by_type_and_delete(sim: SimServer) -> None:
    client = one(sim)
    service_template = client.document.allocate('NAME = "t"\nBODY = "{\\"name\\": \\"t\\"}"', 101)
    other = client.document.allocate('NAME = "o"\nBODY = "free text"', 400)
    assert [d.ID for d in client.documentpool.info(-2, -1, -1, 101).DOCUMENT] == [service_template]
    assert client.document.info(other).TEMPLATE["BODY"] == "free text"
    with pytest.raises(pyone.OneApiException, match="BODY is not valid JSON"):
        client.document.allocate('NAME = "bad"\nBODY = "{"', 101)
    client.document.delete(other)
    with pytest.raises(pyone.OneNoExistsException, match=r"Error getting document"):
        client.document.info(other)


def test_vm_pool_state_filter_owner_filter_and_pagination(sim: SimServer) -> None:
    admin = one(sim)
    mine = [admin.template.instantiate(0, f"a{i}", True) for i in range(4)]
    admin.vm.action("terminate", mine[0])
    user = one(sim, _user_session(sim))
    theirs = user.template.instantiate(0, "u0", True)
    ids = lambda pool: [vm.ID for vm in (pool.VM or [])]  # noqa: E731
    assert ids(admin.vmpool.info(-2, -1, -1, -1)) == [theirs, *reversed(mine[1:])]
    assert ids(admin.vmpool.info(-2, -1, -1, -2)) == [theirs, *reversed(mine)]
    assert ids(admin.vmpool.info(-2, -1, -1, 6)) == [mine[0]]
    assert ids(admin.vmpool.info(-3, -1, -1, -1)) == list(reversed(mine[1:]))
    assert ids(admin.vmpool.info(2, -1, -1, -1)) == [theirs]
    assert ids(admin.vmpool.info(-4, -1, -1, -1)) == list(reversed(mine[1:]))  # primary group oneadmin
    assert ids(admin.vmpool.info(-1, -1, -1, -1)) == list(reversed(mine[1:]))  # mine + my groups
    assert ids(user.vmpool.info(-1, -1, -1, -1)) == [theirs]
    assert ids(user.vmpool.info(-2, -1, -1, -1)) == [theirs]
    assert ids(admin.vmpool.info(-2, 1, -2, -2)) == [mine[3], mine[2]]  # offset 1, page of 2
    assert ids(admin.vmpool.info(-2, mine[1], mine[2], -2)) == [mine[2], mine[1]]  # id range
    assert ids(admin.vmpool.info(-2, -1, mine[2], -2)) == [theirs, *reversed(mine)]  # start -1: no id range
    # the query argument on sqlite, the default backend (tests/conformance: both backends)
    with pytest.raises(pyone.OneInternalException, match="JSON query search is not supported by the SQL backend"):
        admin.vmpool.info(-2, -1, -1, -1, "VM.NAME=a2")
    with pytest.raises(pyone.OneApiException, match="Incorrect filter_flag"):
        admin.vmpool.info(-5, -1, -1, -1)
    with pytest.raises(pyone.OneApiException, match="Incorrect filter_flag, state|Incorrect state filter 42"):
        admin.vmpool.info(-2, -1, -1, 42)


def test_an_empty_pool_is_still_a_document(sim: SimServer) -> None:
    answer = call(sim, "one.vmpool.info", -2, -1, -1, -1)
    # oned writes the root's opening and closing tags around the rows (src/pool/PoolSQL.cc `dump`),
    # as the real 7.4.0 answered an ID range past the last VM (tests/recordings)
    assert answer == [True, "<VM_POOL></VM_POOL>", 0]
    assert one(sim).vmpool.info(-2, -1, -1, -1).VM == []


def test_a_network_without_address_ranges_writes_an_empty_ar_pool_with_both_tags(sim: SimServer) -> None:
    # byte for byte as oned writes it (AddressRangePool::to_xml, src/vnm/AddressRangePool.cc 323-330
    # at release-7.4.0; Template::to_xml for the pool's stored body); the recordings compare
    # elements, not bytes, so only this test sees `<AR_POOL/>` come back
    template = 'NAME = "bare"\nVN_MAD = "bridge"\nBRIDGE = "br-bare"'
    bare = call(sim, "one.vn.allocate", template, -1)[1]
    ranged = call(sim, "one.vn.allocate", template.replace("bare", "ranged")
                  + '\nAR = [ TYPE = "IP4", IP = "10.99.0.1", SIZE = "4" ]', -1)[1]
    assert "<AR_POOL><AR><AR_ID><![CDATA[0]]></AR_ID>" in call(sim, "one.vn.info", ranged)[1]
    assert call(sim, "one.vn.rm_ar", ranged, 0) == [True, ranged, 0]
    for vnet_id in (bare, ranged):
        info = call(sim, "one.vn.info", vnet_id)[1]
        assert info.endswith("</TEMPLATE><AR_POOL></AR_POOL></VNET>") and "<AR_POOL/>" not in info
        listed = call(sim, "one.vnpool.info", -2, vnet_id, vnet_id)[1]
        assert listed.startswith("<VNET_POOL><VNET>") and listed.endswith("</TEMPLATE><AR_POOL></AR_POOL></VNET></VNET_POOL>")
    # and on the wire, escaped inside the answer's string, as the real 7.4.0, 7.0.2 and 6.10.5 sent it
    body = xmlrpc.client.dumps((sim.session, bare), "one.vn.info").encode()
    answer = requests.post(sim.xmlrpc_url, data=body, headers={"Content-Type": "text/xml"}, timeout=10).content
    assert b"&lt;AR_POOL&gt;&lt;/AR_POOL&gt;&lt;/VNET&gt;</string>" in answer
    assert call(sim, "one.vn.delete", bare) == [True, bare, 0]
    assert call(sim, "one.vn.info", bare)[:3] == [False, f"[one.vn.info] Error getting virtual network [{bare}].", 0x400]


def test_short_and_full_vm_bodies(sim: SimServer) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "b", False, 'ROLE_NAME = "x"\nLABELS = "l"')
    short = client.vmpool.info(-2, -1, -1, -1).VM[0]
    assert set(short.TEMPLATE) <= {"CPU", "MEMORY", "VCPU", "DISK", "NIC", "GRAPHICS"}
    assert dict(short.USER_TEMPLATE) == {"LABELS": "l"}
    full = client.vm.info(vm_id)
    assert full.USER_TEMPLATE["ROLE_NAME"] == "x" and "CONTEXT" in full.TEMPLATE
    assert full.TEMPLATE["VMID"] == str(vm_id) and full.TEMPLATE["TEMPLATE_ID"] == "0"
    extended = client.vmpool.infoextended(-2, -1, -1, -1).VM[0]
    assert extended.USER_TEMPLATE["ROLE_NAME"] == "x"


def test_image_chmod_chown(sim: SimServer) -> None:
    client = one(sim)
    client.image.chmod(0, 1, 1, 1, 1, 1, -1, 0, 0, 0)
    client.image.chown(0, -1, 1)
    image = client.image.info(0)
    assert (image.PERMISSIONS.OWNER_A, image.PERMISSIONS.GROUP_M, image.GID) == (1, 1, 1)
    assert [i.ID for i in client.imagepool.info(-2, -1, -1).IMAGE] == [0]
