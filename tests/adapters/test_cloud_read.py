"""Cloud adapter contract, read-only calls: run against the embedded site, or a real frontend when
ONE_XMLRPC / ONE_AUTH are set. Every list call and every info call returns domain models that
agree with each other; on the embedded site the fresh scenario's content is checked too."""

from __future__ import annotations

import re

from tests.adapters.conftest import SiteUnderTest
from tui.adapters.cloud import CloudClient
from tui.domain.acls import AclRule
from tui.domain.datastores import Datastore
from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT, Document
from tui.domain.groups import Group
from tui.domain.hosts import Host
from tui.domain.images import ImageInfo
from tui.domain.marketapps import MarketApp, Marketplace
from tui.domain.networks import Vnet
from tui.domain.system import SystemConfig
from tui.domain.users import User
from tui.domain.vm_detail import VmDetail
from tui.domain.vm_scan import VmPrefilter
from tui.domain.vms import VmSummary
from tui.domain.vmtemplates import VmTemplate


async def test_version_and_system_config(cloud: CloudClient, site: SiteUnderTest) -> None:
    assert re.fullmatch(r"\d+\.\d+(\.\d+)*", await cloud.version())
    config = await cloud.system_config()
    assert isinstance(config, SystemConfig)
    if site.sim is not None:
        # not in the XSD, so pyone's bindings drop it: read from the raw document
        assert config.onegate_endpoint.startswith("http")


async def test_whoami_is_the_session_user(cloud: CloudClient, site: SiteUnderTest) -> None:
    me = await cloud.whoami()
    assert isinstance(me, User)
    assert me.name == site.user
    assert me == await cloud.user_info(me.id)
    assert site.session.split(":", 1)[1] not in repr(me)


async def test_vm_list_and_info_agree(cloud: CloudClient) -> None:
    vms = await cloud.list_vms()
    assert all(isinstance(vm, VmSummary) for vm in vms)
    if vms:
        detail = await cloud.vm_info(vms[0].id)
        assert isinstance(detail, VmDetail)
        assert (detail.id, detail.name, detail.state_name) == (vms[0].id, vms[0].name, vms[0].state_name)
        assert detail.summary.host == vms[0].host
        assert detail.summary.ips == vms[0].ips


async def test_full_vm_bodies_of_the_whole_pool(cloud: CloudClient) -> None:
    short = await cloud.list_vms()
    full = await cloud.list_vms_detail()
    assert [d.id for d in full] == [vm.id for vm in short]
    assert [(d.name, d.summary.owner, d.summary.host) for d in full] == [(vm.name, vm.owner, vm.host) for vm in short]


async def test_vm_pool_pages_are_row_offsets_and_the_paged_scan_reads_them_all(cloud: CloudClient) -> None:
    """What the database-VM search relies on (tui.domain.vm_scan): `start` with a negative `end`
    is a row offset into the listing and `-end` the page size (RequestManagerPoolInfoFilter.cc
    `dump`, PoolSQL.cc), so pages at offsets 0, 2, 4, ... are the listing cut in twos; the
    scan, asked for every VM by id, gives each VM of the pool once."""
    full = [d.id for d in await cloud.list_vms_detail()]
    for offset in range(0, len(full) + 2, 2):
        page = [d.id for d in await cloud.list_vms_detail(start=offset, end=-2)]
        assert page == full[offset:offset + 2]
    if full:
        scan = await cloud.scan_vms_detail(VmPrefilter(ids=tuple(full)), page_size=2)
        assert [d.id for d in scan.vms] == full and scan.listed == len(full)
    # the same `dump` pages every pool: seen on one that holds objects on any site
    apps = [a.id for a in await cloud.list_marketapps()]
    assert apps, "a site with marketplace apps"
    for offset in range(0, len(apps) + 2, 3):
        assert [a.id for a in await cloud.list_marketapps(start=offset, end=-3)] == apps[offset:offset + 3]
    # start -1 with an end is no id range at all (PoolSQL.cc oid_filter): the whole pool
    assert [a.id for a in await cloud.list_marketapps(start=-1, end=min(apps))] == apps


async def test_vm_pool_filters_and_pages(cloud: CloudClient, site: SiteUnderTest) -> None:
    everything = await cloud.list_vms(state=-2)
    page = await cloud.list_vms(start=0, end=-2)
    assert len(page) <= 2
    assert {vm.id for vm in page} <= {vm.id for vm in everything}
    mine = await cloud.list_vms(filter=-3)
    me = await cloud.whoami()
    assert all(vm.uid == me.id for vm in mine)


async def test_hosts(cloud: CloudClient, site: SiteUnderTest) -> None:
    hosts = await cloud.list_hosts()
    assert all(isinstance(h, Host) for h in hosts)
    if hosts:
        assert await cloud.host_info(hosts[0].id) == hosts[0]
    if site.sim is not None:
        by_arch = {h.arch for h in hosts}
        assert "x86_64" in by_arch and len(by_arch) > 1
        x86 = [h for h in hosts if h.arch == "x86_64" and h.kvm_cpu_features is not None]
        assert any({"avx", "sse4_2"} <= set(h.kvm_cpu_features or ()) for h in x86)
        assert any("avx" not in (h.kvm_cpu_features or ()) for h in x86)
        assert all(h.kvm_cpu_model for h in x86)


async def test_images_templates_datastores(cloud: CloudClient, site: SiteUnderTest) -> None:
    images = await cloud.list_images()
    assert all(isinstance(i, ImageInfo) for i in images)
    if images:
        assert await cloud.image_info(images[0].id) == images[0]
    templates = await cloud.list_templates()
    assert all(isinstance(t, VmTemplate) for t in templates)
    if templates:
        assert await cloud.template_info(templates[0].id) == templates[0]
    stores = await cloud.list_datastores()
    assert all(isinstance(d, Datastore) for d in stores)
    if site.sim is not None:
        assert {d.type_name for d in stores} == {"IMAGE", "SYSTEM", "FILE"}


async def test_users_and_groups(cloud: CloudClient) -> None:
    users = await cloud.list_users()
    groups = await cloud.list_groups()
    assert all(isinstance(u, User) for u in users) and all(isinstance(g, Group) for g in groups)
    assert {u.gid for u in users} <= {g.id for g in groups}
    if groups:
        assert await cloud.group_info(groups[0].id) == groups[0]


async def test_networks(cloud: CloudClient, site: SiteUnderTest) -> None:
    vnets = await cloud.list_vnets()
    assert all(isinstance(v, Vnet) for v in vnets)
    if vnets:
        info = await cloud.vnet_info(vnets[0].id)
        assert (info.id, info.name, info.bridge, info.vn_mad) == (vnets[0].id, vnets[0].name, vnets[0].bridge, vnets[0].vn_mad)
    if site.sim is not None:
        vxlan = [v for v in vnets if v.vn_mad == "vxlan"]
        assert vxlan and vxlan[0].guest_mtu is not None
        assert any(v.vn_mad == "bridge" and v.address_ranges for v in vnets)


async def test_marketplaces_and_apps(cloud: CloudClient, site: SiteUnderTest) -> None:
    markets = await cloud.list_marketplaces()
    apps = await cloud.list_marketapps()
    assert all(isinstance(m, Marketplace) for m in markets) and all(isinstance(a, MarketApp) for a in apps)
    if apps:
        assert await cloud.marketapp_info(apps[0].id) == apps[0]
    if site.sim is not None:
        assert len(markets) >= 2
        kinds = {a.type_name for a in apps}
        assert {"IMAGE", "VMTEMPLATE", "SERVICE_TEMPLATE"} <= kinds
        service = next(a for a in apps if a.type_name == "SERVICE_TEMPLATE" and a.roles)
        assert service.app_template.lstrip().startswith("{")
        assert any(a.disks for a in apps if a.type_name == "VMTEMPLATE")


async def test_documents_and_acls(cloud: CloudClient) -> None:
    for doc_type in (SERVICE_TEMPLATE_DOCUMENT, SERVICE_DOCUMENT):
        docs = await cloud.list_documents(doc_type)
        assert all(isinstance(d, Document) and d.type == doc_type for d in docs)
        if docs:
            assert await cloud.document_info(docs[0].id) == docs[0]
    rules = await cloud.acl_list()
    assert rules and all(isinstance(r, AclRule) for r in rules)
    assert all(r.string for r in rules)
