"""The read-only XML-RPC methods: system information, every `*.info` and every pool listing."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from tui.domain.error_codes import AUTHORIZATION, XML_RPC_API
from tui.domain.one_states import VmState
from tui.sim.platform import system_config_for_everyone, vm_state_refusal
from tui.sim.rpc_context import Call, WireEscaped, filter_pool, method
from tui.sim.rpc_errors import OneError, no_exists
from tui.sim.state import SimVm
from tui.sim.vm_query import query_matcher
from tui.sim.xml_objects import (
    render_acl_pool,
    render_datastore,
    render_document,
    render_group,
    render_group_pool,
    render_host,
    render_host_pool,
    render_image,
    render_marketapp,
    render_marketplace,
    render_system_config,
    render_user,
    render_user_pool,
    render_vmtemplate,
    render_vnet,
)
from tui.sim.xml_render import pool_xml, vm_pool_escaped, vm_xml_escaped


def _get(call: Call, table: dict[int, Any], kind: str, oid: int) -> Any:
    return call.get(table, kind, oid, "USE")


# system ---------------------------------------------------------------------------------------


@method("one.system.version")
def system_version(call: Call) -> str:
    return call.site.config.one_version


@method("one.system.config")
def system_config(call: Call) -> str:
    # from 6.10 every user is served (RequestManagerSystem.cc release-6.10.0 38-46:
    # get_configuration_xml(is_admin)); up to 6.8 only the oneadmin group (release-6.8.0 38-52)
    if not system_config_for_everyone(call.site.config.one_version) and call.user.gid != 0:
        raise OneError(AUTHORIZATION, "The oned configuration can only be retrieved by users in the oneadmin group")
    return render_system_config(call.site)


# VMs ------------------------------------------------------------------------------------------


def _vm_pool(call: Call, flag: int, start: int, end: int, state: int, query: str) -> list[Any]:
    # the query is looked at first: refused where the backend cannot run it, before the state
    # (6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 298-322; 7.4.0
    # src/rm/api/VirtualMachinePoolAPI.cc 37-52; tui.sim.vm_query)
    matcher = query_matcher(call.site.config.db_backend, query, state_filtered=state != -2) if query else None
    if state < -2 or state > 11:
        raise OneError(XML_RPC_API, vm_state_refusal(call.site.config.one_version, state))
    vms: Iterable[SimVm] = call.site.vms.values()
    if end >= -1 and start != -1 and end != -1 and end - start + 1 < len(call.site.vms):
        # an id range (PoolSQL.cc `oid_filter`, release-7.0.2 412-428): the database reads an index
        # range of the primary key, so only the VMs of those ids are looked at (filter_pool applies
        # the range again, and the order)
        by_id = call.site.vms
        vms = [by_id[i] for i in range(max(start, 0), end + 1) if i in by_id]
    selected: Iterator[SimVm]
    if state == -1:
        selected = (vm for vm in vms if vm.state != VmState.DONE)
    elif state >= 0:
        selected = (vm for vm in vms if vm.state == state)
    else:
        selected = iter(vms)
    if matcher is not None:
        site = call.site
        selected = (vm for vm in selected if matcher(site, vm))
    return filter_pool(call, "VM", selected, flag, start, end)


@method("one.vmpool.info", "iiii", "s")
def vmpool_info(call: Call, flag: int, start: int, end: int, state: int, query: str = "") -> str:
    return WireEscaped(vm_pool_escaped(call.site, _vm_pool(call, flag, start, end, state, query), full=False))


@method("one.vmpool.infoextended", "iiii", "s")
def vmpool_infoextended(call: Call, flag: int, start: int, end: int, state: int, query: str = "") -> str:
    return WireEscaped(vm_pool_escaped(call.site, _vm_pool(call, flag, start, end, state, query), full=True))


@method("one.vm.info", "i", "b")
def vm_info(call: Call, vm_id: int, decrypt: bool = False) -> str:
    return WireEscaped(vm_xml_escaped(call.site, _get(call, call.site.vms, "VM", vm_id), full=True))


# hosts and datastores -------------------------------------------------------------------------


@method("one.hostpool.info")
def hostpool_info(call: Call) -> str:
    if call.admin:
        return render_host_pool(call.site)
    hosts = [h for h in call.site.hosts.values() if call.can_use("HOST", h)]
    ordered = sorted(hosts, key=lambda h: h.id, reverse=call.site.lists_descending())
    return pool_xml("HOST_POOL", (render_host(call.site, h, pool=True) for h in ordered))


@method("one.host.info", "i", "b")
def host_info(call: Call, host_id: int, decrypt: bool = False) -> str:
    return render_host(call.site, _get(call, call.site.hosts, "HOST", host_id))


# every pool lists in API_LIST_ORDER, newest first by default (SimSite.lists_descending)
@method("one.datastorepool.info")
def datastorepool_info(call: Call) -> str:
    stores = sorted((d for d in call.site.datastores.values() if call.can_use("DATASTORE", d)), key=lambda d: d.id,
                    reverse=call.site.lists_descending())
    return pool_xml("DATASTORE_POOL", (render_datastore(call.site, d) for d in stores))


@method("one.datastore.info", "i", "b")
def datastore_info(call: Call, ds_id: int, decrypt: bool = False) -> str:
    return render_datastore(call.site, _get(call, call.site.datastores, "DATASTORE", ds_id))


# images, templates, networks ------------------------------------------------------------------


@method("one.imagepool.info", "iii")
def imagepool_info(call: Call, flag: int, start: int, end: int) -> str:
    images = filter_pool(call, "IMAGE", call.site.images.values(), flag, start, end)
    return pool_xml("IMAGE_POOL", (render_image(call.site, i) for i in images))


@method("one.image.info", "i", "b")
def image_info(call: Call, image_id: int, decrypt: bool = False) -> str:
    return render_image(call.site, _get(call, call.site.images, "IMAGE", image_id))


@method("one.templatepool.info", "iii")
def templatepool_info(call: Call, flag: int, start: int, end: int) -> str:
    templates = filter_pool(call, "TEMPLATE", call.site.templates.values(), flag, start, end)
    return pool_xml("VMTEMPLATE_POOL", (render_vmtemplate(call.site, t) for t in templates))


@method("one.template.info", "i", "bb")
def template_info(call: Call, template_id: int, extended: bool = False, decrypt: bool = False) -> str:
    return render_vmtemplate(call.site, _get(call, call.site.templates, "TEMPLATE", template_id))


@method("one.vnpool.info", "iii")
def vnpool_info(call: Call, flag: int, start: int, end: int) -> str:
    vnets = filter_pool(call, "NET", call.site.vnets.values(), flag, start, end)
    return pool_xml("VNET_POOL", (render_vnet(call.site, v, extended=False) for v in vnets))


@method("one.vn.info", "i", "b")
def vn_info(call: Call, vnet_id: int, decrypt: bool = False) -> str:
    return render_vnet(call.site, _get(call, call.site.vnets, "NET", vnet_id), extended=True)


# users and groups -----------------------------------------------------------------------------


@method("one.userpool.info")
def userpool_info(call: Call) -> str:
    if call.admin:
        return render_user_pool(call.site)
    # a user sees itself and whoever an ACL lets it see
    visible = [u for u in call.site.users.values() if u.id == call.user.id or call.can_use("USER", u)]
    return render_user_pool(call.site, visible)


@method("one.user.info", "i", "b")
def user_info(call: Call, user_id: int, decrypt: bool = False) -> str:
    if user_id == -1:
        return render_user(call.site, call.user)
    user = call.site.users.get(user_id)
    if user is None:
        raise no_exists("USER", user_id)
    if user.id != call.user.id:
        call.require("USER", "USE", user)
    return render_user(call.site, user)


@method("one.grouppool.info")
def grouppool_info(call: Call) -> str:
    if call.admin:
        return render_group_pool(call.site)
    return render_group_pool(call.site, [g for g in call.site.groups.values() if g.id in call.groups])


@method("one.group.info", "i", "b")
def group_info(call: Call, group_id: int, decrypt: bool = False) -> str:
    group = call.site.groups.get(group_id)
    if group is None:
        raise no_exists("GROUP", group_id)
    if group_id not in call.groups and not call.admin:
        call.require("GROUP", "USE", group)
    return render_group(call.site, group)


# marketplaces, documents, ACLs ----------------------------------------------------------------


@method("one.marketpool.info")
def marketpool_info(call: Call) -> str:
    markets = sorted((m for m in call.site.marketplaces.values() if call.can_use("MARKETPLACE", m)),
                     key=lambda m: m.id, reverse=call.site.lists_descending())
    return pool_xml("MARKETPLACE_POOL", (render_marketplace(call.site, m) for m in markets))


@method("one.market.info", "i", "b")
def market_info(call: Call, market_id: int, decrypt: bool = False) -> str:
    return render_marketplace(call.site, _get(call, call.site.marketplaces, "MARKETPLACE", market_id))


@method("one.marketapppool.info", "iii")
def marketapppool_info(call: Call, flag: int, start: int, end: int) -> str:
    apps = filter_pool(call, "MARKETPLACEAPP", call.site.marketapps.values(), flag, start, end)
    return pool_xml("MARKETPLACEAPP_POOL", (render_marketapp(call.site, a) for a in apps))


@method("one.marketapp.info", "i", "b")
def marketapp_info(call: Call, app_id: int, decrypt: bool = False) -> str:
    return render_marketapp(call.site, _get(call, call.site.marketapps, "MARKETPLACEAPP", app_id))


@method("one.documentpool.info", "iiii")
def documentpool_info(call: Call, flag: int, start: int, end: int, doc_type: int) -> str:
    docs = filter_pool(call, "DOCUMENT", (d for d in call.site.documents.values() if d.type == doc_type),
                       flag, start, end)
    return pool_xml("DOCUMENT_POOL", (render_document(call.site, d) for d in docs))


@method("one.document.info", "i", "b")
def document_info(call: Call, doc_id: int, decrypt: bool = False) -> str:
    return render_document(call.site, _get(call, call.site.documents, "DOCUMENT", doc_id))


@method("one.acl.info")
def acl_info(call: Call) -> str:
    call.require("ACL", "MANAGE")
    return render_acl_pool(call.site)
