"""Every non-VM document of the simulated cloud, element for element as the platform's XSDs order them.

Hosts, images, datastores, virtual networks, VM templates, users, groups, marketplaces and their
apps, documents, ACLs and the oned configuration. Pool variants follow the *_pool.xsd shapes
(e.g. USER_POOL ends with DEFAULT_USER_QUOTAS, VNET_POOL's address ranges carry no leases).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT
from tui.domain.one_states import DatastoreType, HostState, VirtualNetworkState
from tui.sim.acl import acl_string, rules_in_dump_order
from tui.sim.leases import ip_at, mac_at, used_leases
from tui.sim.platform import version_key
from tui.sim.state import (
    SimDatastore,
    SimDocument,
    SimGroup,
    SimHost,
    SimImage,
    SimMarketApp,
    SimMarketplace,
    SimSite,
    SimUser,
    SimVmTemplate,
    SimVnet,
)
from tui.sim.xml_render import (
    ON_HOST_STATES,
    cached_capacity,
    cdata,
    esc,
    ids_xml,
    owner_names,
    perms_xml,
    pool_xml,
    template_xml,
    values_xml,
)


def _owned_head(site: SimSite, obj: Any) -> str:
    """ID UID GID UNAME GNAME NAME, how most objects with an owner begin."""
    uname, gname = owner_names(site, obj.uid, obj.gid)
    return (f"<ID>{obj.id}</ID><UID>{obj.uid}</UID><GID>{obj.gid}</GID><UNAME>{esc(uname)}</UNAME>"
            f"<GNAME>{esc(gname)}</GNAME><NAME>{esc(obj.name)}</NAME>")


# hosts ----------------------------------------------------------------------------------------


def host_usage(site: SimSite) -> dict[int, tuple[list[int], int, int]]:
    """Per host: (ids of the VMs it holds, CPU used in percent, memory used in KiB)."""
    usage: dict[int, tuple[list[int], int, int]] = {}
    for vm in site.vms.values():
        if vm.state not in ON_HOST_STATES or not vm.history or vm.history[-1].etime:
            continue
        host_id = vm.history[-1].host_id
        cpu, mem = cached_capacity(site, vm)
        ids, used_cpu, used_mem = usage.get(host_id, ([], 0, 0))
        ids.append(vm.id)
        usage[host_id] = (ids, used_cpu + cpu, used_mem + mem)
    return usage


def render_host(site: SimSite, host: SimHost, usage: tuple[list[int], int, int] | None = None,
                pool: bool = False) -> str:
    """One host. In a pool its MONITORING is empty: the pool lists the stored bodies, `one.host.info`
    loads the last monitoring (Host::to_xml, src/host/Host.cc 401-422; Host::load_monitoring 624,
    release-7.0.0; a 7.0.2 frontend's host pool reads `<MONITORING/>`)."""
    if usage is None:
        usage = host_usage(site).get(host.id, ([], 0, 0))
    vm_ids, cpu_usage, mem_usage = usage
    system_ds = [ds for ds in site.datastores.values() if ds.type == DatastoreType.SYSTEM_DS]
    ds_xml = "".join(
        f"<DS><FREE_MB>{ds.free_mb}</FREE_MB><ID>{ds.id}</ID><TOTAL_MB>{ds.total_mb}</TOTAL_MB>"
        f"<USED_MB>{ds.total_mb - ds.free_mb}</USED_MB></DS>"
        for ds in system_ds
    )
    total_disk = sum(ds.total_mb for ds in system_ds)
    free_disk = sum(ds.free_mb for ds in system_ds)
    monitored = host.state in (HostState.MONITORING_MONITORED, HostState.MONITORED) and not pool
    free_cpu = max(host.total_cpu - cpu_usage // 2, 0) if monitored else 0
    used_mem_real = mem_usage * 6 // 10
    # TIMESTAMP and ID as text, CAPACITY and SYSTEM templates (values in CDATA); `<MONITORING/>` when
    # none (HostMonitoringTemplate::to_xml, src/host/HostMonitoringTemplate.cc 26, 260-283 at release-7.4.0)
    monitoring = (
        f"<MONITORING><TIMESTAMP>{site.config.seed + 1_700_000_000}</TIMESTAMP><ID>{host.id}</ID>"
        + template_xml("CAPACITY", [("FREE_CPU", str(free_cpu)),
                                    ("FREE_MEMORY", str(max(host.total_mem - used_mem_real, 0))),
                                    ("USED_CPU", str(host.total_cpu - free_cpu)), ("USED_MEMORY", str(used_mem_real))])
        + template_xml("SYSTEM", [("NETRX", str(host.id * 1_000_003)), ("NETTX", str(host.id * 700_001))])
        + "</MONITORING>"
        if monitored
        else "<MONITORING/>"
    )
    return (
        f"<HOST><ID>{host.id}</ID><NAME>{esc(host.name)}</NAME><STATE>{host.state}</STATE>"
        f"<PREV_STATE>{host.state}</PREV_STATE><IM_MAD>{cdata(host.im_mad)}</IM_MAD>"
        f"<VM_MAD>{cdata(host.vm_mad)}</VM_MAD><CLUSTER_ID>{host.cluster_id}</CLUSTER_ID>"
        f"<CLUSTER>{esc(host.cluster)}</CLUSTER>"
        f"<HOST_SHARE><MEM_USAGE>{mem_usage}</MEM_USAGE><CPU_USAGE>{cpu_usage}</CPU_USAGE>"
        f"<TOTAL_MEM>{host.total_mem}</TOTAL_MEM><TOTAL_CPU>{host.total_cpu}</TOTAL_CPU>"
        f"<MAX_MEM>{host.total_mem}</MAX_MEM><MAX_CPU>{host.total_cpu}</MAX_CPU>"
        f"<RUNNING_VMS>{len(vm_ids)}</RUNNING_VMS><VMS_THREAD>{len(vm_ids)}</VMS_THREAD>"
        f"<DATASTORES><DISK_USAGE>0</DISK_USAGE>{ds_xml}<FREE_DISK>{free_disk}</FREE_DISK>"
        f"<MAX_DISK>{total_disk}</MAX_DISK><USED_DISK>{total_disk - free_disk}</USED_DISK></DATASTORES>"
        # PCI_DEVICES a template, NUMA_NODES HostShareNUMA::to_xml: both `<X></X>` when empty
        # (include/HostSharePCI.h 54, src/host/HostShareNUMA.cc 899-917 at release-7.4.0)
        f"<PCI_DEVICES></PCI_DEVICES><NUMA_NODES></NUMA_NODES></HOST_SHARE>"
        + ids_xml("VMS", sorted(vm_ids))
        + template_xml("TEMPLATE", host.template)
        + monitoring
        + "</HOST>"
    )


def render_host_pool(site: SimSite) -> str:
    usage = host_usage(site)
    return pool_xml(
        "HOST_POOL",
        (render_host(site, h, usage.get(h.id, ([], 0, 0)), pool=True)
         for h in sorted(site.hosts.values(), key=lambda h: h.id, reverse=site.lists_descending())),
    )


# images and datastores ------------------------------------------------------------------------


def render_image(site: SimSite, image: SimImage) -> str:
    ds = site.datastores.get(image.datastore_id)
    return (
        f"<IMAGE>{_owned_head(site, image)}{perms_xml(image.perms)}"
        f"<TYPE>{image.type}</TYPE><DISK_TYPE>0</DISK_TYPE><PERSISTENT>{image.persistent}</PERSISTENT>"
        f"<REGTIME>{image.regtime}</REGTIME>"
        # MODTIME from 7.0 (src/image/Image.cc 420 at release-7.0.0; release-6.10.0 418 has REGTIME only)
        + (f"<MODTIME>{image.modtime or image.regtime}</MODTIME>" if version_key(site.config.one_version) >= (7, 0)
           else "")
        + f"<SOURCE>{cdata(image.source)}</SOURCE><PATH>{cdata(image.path)}</PATH>"
        f"<FORMAT>{cdata(image.format)}</FORMAT><FS>{cdata('')}</FS><SIZE>{image.size_mb}</SIZE>"
        # PREV_STATE: the pools' update sets it to the current state after the state hooks ran
        # (src/image/ImagePool.cc 246, src/host/HostPool.cc 183 at release-7.0.0; 265 and 150 at 6.10.0)
        f"<STATE>{image.state}</STATE><PREV_STATE>{image.state}</PREV_STATE>"
        f"<RUNNING_VMS>{image.running_vms}</RUNNING_VMS><CLONING_OPS>0</CLONING_OPS><CLONING_ID>-1</CLONING_ID>"
        f"<TARGET_SNAPSHOT>-1</TARGET_SNAPSHOT><DATASTORE_ID>{image.datastore_id}</DATASTORE_ID>"
        f"<DATASTORE>{esc(ds.name if ds else '')}</DATASTORE>"
        + ids_xml("VMS", sorted(image.vm_ids))
        + ids_xml("CLONES", ()) + ids_xml("APP_CLONES", ())
        + template_xml("TEMPLATE", image.template)
        # BACKUP_DISK_IDS after the increments (Image::to_xml, src/image/Image.cc 441 at release-7.0.0; 6.10.0 too);
        # SNAPSHOTS a template, its values in CDATA (src/vm/Snapshots.cc 39-43 at release-7.4.0); the
        # increments a template and the disk IDs an ObjectCollection, `<X></X>` when empty
        + template_xml("SNAPSHOTS", [("ALLOW_ORPHANS", "NO"), ("CURRENT_BASE", "-1"), ("NEXT_SNAPSHOT", "0")])
        + template_xml("BACKUP_INCREMENTS", []) + ids_xml("BACKUP_DISK_IDS", ()) + "</IMAGE>"
    )


def render_datastore(site: SimSite, ds: SimDatastore) -> str:
    image_ids = sorted(i.id for i in site.images.values() if i.datastore_id == ds.id)
    return (
        f"<DATASTORE>{_owned_head(site, ds)}{perms_xml(ds.perms)}"
        f"<DS_MAD>{cdata(ds.ds_mad)}</DS_MAD><TM_MAD>{cdata(ds.tm_mad)}</TM_MAD>"
        f"<BASE_PATH>{cdata(f'/var/lib/one//datastores/{ds.id}')}</BASE_PATH><TYPE>{ds.type}</TYPE>"
        f"<DISK_TYPE>0</DISK_TYPE><STATE>{ds.state}</STATE><CLUSTERS><ID>0</ID></CLUSTERS>"
        f"<TOTAL_MB>{ds.total_mb}</TOTAL_MB><FREE_MB>{ds.free_mb}</FREE_MB><USED_MB>{ds.total_mb - ds.free_mb}</USED_MB>"
        + ids_xml("IMAGES", image_ids)
        + template_xml("TEMPLATE", ds.template)
        + "</DATASTORE>"
    )


# networks -------------------------------------------------------------------------------------


#: the VM type bits an address range's ALLOCATED map keeps with each lease (PoolObjectSQL::VM)
_VM_OBJECT_BITS = 0x1000000000


def render_vnet(site: SimSite, vnet: SimVnet, extended: bool) -> str:
    """`extended` (one.vn.info) adds MAC_END, IP_END, USED_LEASES and LEASES to each range; the pool
    lists each range's stored attributes, ALLOCATED among them once a lease was taken
    (AddressRange::allocated_to_attr, src/vnm/AddressRange.cc 1415-1431; one.vn.info leaves it out,
    to_xml 660-668, release-7.0.0). NEXT_INDEX and the top-level TEMPLATE_ID exist from 7.4
    (AddressRange.cc 334, VirtualNetwork.cc 727 at release-7.4.0; absent at 7.0.0), and so does each
    range's SHARED, NO unless the range was created shared (AddressRange.cc 265-270, 666-669 at
    release-7.4.0; the embedded site's ranges never are)."""
    seven_four = version_key(site.config.one_version) >= (7, 4)
    ars: list[str] = []
    for ar in vnet.ars:
        allocated = "".join(f" {off} {_VM_OBJECT_BITS | vm_id}" for off, vm_id in sorted(ar.leases.items()))
        body = (
            (f"<ALLOCATED>{cdata(allocated)}</ALLOCATED>" if ar.ever_leased and not extended else "")
            + f"<AR_ID>{cdata(str(ar.ar_id))}</AR_ID>"
            + (f"<IP>{cdata(ar.ip)}</IP>" if ar.ip else "")
            + f"<MAC>{cdata(ar.mac)}</MAC>"
            # every attribute of a range through escape_xml (AddressRange::to_xml, src/vnm/AddressRange.cc
            # 881-891 at release-7.4.0, 786-796 for the stored range; the pool's stored template the same, Template::to_xml)
            + (values_xml((("NEXT_INDEX", len(ar.leases)), ("SHARED", "NO"))) if seven_four else "")
            + values_xml((("SIZE", ar.size), ("TYPE", ar.type)))
        )
        if extended:
            # each lease a VectorAttribute, its values through escape_xml (AddressRange.cc 963-1037 at
            # release-7.4.0, VectorAttribute::to_xml, src/common/Attribute.cc 64-81)
            leases = "".join(
                f"<LEASE>{f'<IP>{cdata(ip_at(ar, off))}</IP>' if ar.ip else ''}"
                f"<MAC>{cdata(mac_at(ar, off))}</MAC><VM>{cdata(str(vm_id))}</VM></LEASE>"
                for off, vm_id in sorted(ar.leases.items())
            )
            body += (
                f"<MAC_END>{cdata(mac_at(ar, ar.size - 1))}</MAC_END>"
                + (f"<IP_END>{cdata(ip_at(ar, ar.size - 1))}</IP_END>" if ar.ip else "")
                + f"<USED_LEASES>{len(ar.leases)}</USED_LEASES>"
                + (f"<LEASES>{leases}</LEASES>" if leases else "<LEASES/>")
            )
        ars.append(f"<AR>{body}</AR>")
    return (
        f"<VNET>{_owned_head(site, vnet)}{perms_xml(vnet.perms)}<CLUSTERS><ID>0</ID></CLUSTERS>"
        # BRIDGE, BRIDGE_TYPE, STATE and PREV_STATE through escape_xml (CDATA), then PARENT_NETWORK_ID,
        # TEMPLATE_ID (7.4), VN_MAD, PHYDEV, VLAN_ID and OUTER_VLAN_ID `<X/>` when unset
        # (VirtualNetwork::to_xml_extended, src/vnm/VirtualNetwork.cc 711-768 at release-7.4.0; 6.10.5
        # and 7.0.2 the same but for TEMPLATE_ID); PREV_STATE = STATE: VirtualNetworkPool::update sets
        # it (src/vnm/VirtualNetworkPool.cc 208, release-7.0.0)
        + values_xml((("BRIDGE", vnet.bridge), ("BRIDGE_TYPE", "linux"), ("STATE", f"{VirtualNetworkState.READY:d}"),
                      ("PREV_STATE", f"{VirtualNetworkState.READY:d}")))
        + "<PARENT_NETWORK_ID/>"
        # no network template: `<TEMPLATE_ID/>` (VirtualNetwork.cc 725-732 at release-7.4.0; recorded)
        + ("<TEMPLATE_ID/>" if seven_four else "")
        + "".join(f"<{tag}>{cdata(value)}</{tag}>" if value else f"<{tag}/>"
                  for tag, value in (("VN_MAD", vnet.vn_mad), ("PHYDEV", vnet.phydev), ("VLAN_ID", vnet.vlan_id),
                                     ("OUTER_VLAN_ID", "")))
        + f"<VLAN_ID_AUTOMATIC>0</VLAN_ID_AUTOMATIC><OUTER_VLAN_ID_AUTOMATIC>0</OUTER_VLAN_ID_AUTOMATIC>"
        f"<USED_LEASES>{used_leases(vnet)}</USED_LEASES>"
        # ObjectCollections (VirtualNetwork.cc 776-800 at release-7.4.0): the VMs given a NIC of it (VirtualNetwork::nic_attribute,
        # updated.add, src/vnm/VirtualNetwork.cc 1104 at release-7.0.0, 1100 at 6.10.0), until the lease goes back
        + ids_xml("VROUTERS", ())
        + ids_xml("UPDATED_VMS", sorted({vm_id for ar in vnet.ars for vm_id in ar.leases.values()}))
        + ids_xml("OUTDATED_VMS", ()) + ids_xml("UPDATING_VMS", ()) + ids_xml("ERROR_VMS", ())
        + template_xml("TEMPLATE", vnet.template)
        # opening and closing tags around the ranges, so no range is `<AR_POOL></AR_POOL>`
        # (AddressRangePool::to_xml, src/vnm/AddressRangePool.cc 323-330 at release-7.4.0, and the
        # stored template's Template::to_xml, src/template/Template.cc 353-369; recorded: `network:
        # info (no address range)`, `network: info (its only address range removed)`)
        + "<AR_POOL>" + "".join(ars) + "</AR_POOL>"
        + "</VNET>"
    )


# templates, users, groups ---------------------------------------------------------------------


def render_vmtemplate(site: SimSite, tpl: SimVmTemplate) -> str:
    return (
        f"<VMTEMPLATE>{_owned_head(site, tpl)}{perms_xml(tpl.perms)}"
        f"<REGTIME>{tpl.regtime}</REGTIME>"
        + template_xml("TEMPLATE", tpl.template)
        + "</VMTEMPLATE>"
    )


#: a Quota is a Template: `<VM_QUOTA></VM_QUOTA>` when it holds no limits (include/Quota.h 136,
#: Template::to_xml, src/template/Template.cc 353-369 at release-7.4.0)
_EMPTY_QUOTAS = "".join(template_xml(tag, []) for tag in ("DATASTORE_QUOTA", "NETWORK_QUOTA", "VM_QUOTA", "IMAGE_QUOTA"))


def _user_body(site: SimSite, user: SimUser) -> str:
    group = site.groups.get(user.gid)
    groups = "".join(f"<ID>{g}</ID>" for g in sorted(set(user.groups) | {user.gid}))
    password = hashlib.sha256(user.password.encode()).hexdigest() if user.auth_driver == "core" else user.password
    return (
        f"<ID>{user.id}</ID><GID>{user.gid}</GID><GROUPS>{groups}</GROUPS>"
        f"<GNAME>{esc(group.name if group else '')}</GNAME><NAME>{esc(user.name)}</NAME>"
        # PASSWORD and AUTH_DRIVER through escape_xml (User::to_xml, src/um/User.cc 261-262 at release-7.4.0)
        + values_xml((("PASSWORD", password), ("AUTH_DRIVER", user.auth_driver)))
        + f"<ENABLED>{1 if user.enabled else 0}</ENABLED>" + template_xml("TEMPLATE", user.template)
    )


def render_user(site: SimSite, user: SimUser) -> str:
    return f"<USER>{_user_body(site, user)}{_EMPTY_QUOTAS}<DEFAULT_USER_QUOTAS>{_EMPTY_QUOTAS}</DEFAULT_USER_QUOTAS></USER>"


def _quotas(oid: int) -> str:
    """A row's quotas, listed after its object in the user and group pools (QuotasSQL::to_xml_db,
    src/um/QuotasSQL.cc 27-38)."""
    return f"<QUOTAS><ID>{oid}</ID>{_EMPTY_QUOTAS}</QUOTAS>"


def render_user_pool(site: SimSite, users: Iterable[SimUser] | None = None) -> str:
    """Newest first (API_LIST_ORDER DESC), each user followed by its quotas: UserPool::dump joins the
    quotas table (src/um/UserPool.cc 1419-1460 at release-7.0.0, 1430-1470 at 6.10.0)."""
    chosen = site.users.values() if users is None else users
    bodies = "".join(f"<USER>{_user_body(site, u)}</USER>{_quotas(u.id)}"
                     for u in sorted(chosen, key=lambda u: u.id, reverse=site.lists_descending()))
    return f"<USER_POOL>{bodies}<DEFAULT_USER_QUOTAS>{_EMPTY_QUOTAS}</DEFAULT_USER_QUOTAS></USER_POOL>"


def _group_members(site: SimSite, group: SimGroup) -> list[int]:
    return sorted(u.id for u in site.users.values() if u.gid == group.id or group.id in u.groups)


def _group_body(site: SimSite, group: SimGroup) -> str:
    return (
        f"<ID>{group.id}</ID><NAME>{esc(group.name)}</NAME>"
        + template_xml("TEMPLATE", group.template)
        + ids_xml("USERS", _group_members(site, group))
        + ids_xml("ADMINS", sorted(group.admins))
    )


def _vlan_rules(site: SimSite, group: SimGroup) -> str:
    """A group's VLAN rules, from 7.4 only (include/GroupVlans.h, src/group/Group.cc 259-263 at
    release-7.4.0; release-7.0.0's Group has none)."""
    # a template with the group's ID (GroupVlans::to_xml, src/um/GroupVlans.cc 187-190, 204): CDATA
    return template_xml("VLAN_RULES", [("ID", str(group.id))]) if version_key(site.config.one_version) >= (7, 4) else ""


def render_group(site: SimSite, group: SimGroup) -> str:
    return (
        f"<GROUP>{_group_body(site, group)}{_EMPTY_QUOTAS}{_vlan_rules(site, group)}"
        f"<DEFAULT_GROUP_QUOTAS>{_EMPTY_QUOTAS}</DEFAULT_GROUP_QUOTAS></GROUP>"
    )


def render_group_pool(site: SimSite, groups: Iterable[SimGroup] | None = None) -> str:
    """Newest first, each group followed by its quotas (and from 7.4 its VLAN rules): GroupPool::dump
    joins those tables (src/group/GroupPool.cc 226-240 at release-6.10.0, 221-235 at 7.4.0)."""
    chosen = site.groups.values() if groups is None else groups
    bodies = "".join(f"<GROUP>{_group_body(site, g)}</GROUP>{_quotas(g.id)}{_vlan_rules(site, g)}"
                     for g in sorted(chosen, key=lambda g: g.id, reverse=site.lists_descending()))
    return f"<GROUP_POOL>{bodies}<DEFAULT_GROUP_QUOTAS>{_EMPTY_QUOTAS}</DEFAULT_GROUP_QUOTAS></GROUP_POOL>"


# marketplaces and documents -------------------------------------------------------------------


def render_marketplace(site: SimSite, market: SimMarketplace) -> str:
    app_ids = sorted(a.id for a in site.marketapps.values() if a.marketplace_id == market.id)
    attrs = list(market.template)
    names = {name for name, _ in attrs}
    if "ENDPOINT" not in names and market.endpoint:
        attrs.append(("ENDPOINT", market.endpoint))
    if "MARKET_MAD" not in names:
        attrs.append(("MARKET_MAD", market.market_mad))
    return (
        f"<MARKETPLACE>{_owned_head(site, market)}"
        f"<STATE>{market.state}</STATE><MARKET_MAD>{cdata(market.market_mad)}</MARKET_MAD>"
        f"<ZONE_ID>{cdata('0')}</ZONE_ID><TOTAL_MB>0</TOTAL_MB><FREE_MB>0</FREE_MB><USED_MB>0</USED_MB>"
        + ids_xml("MARKETPLACEAPPS", app_ids)
        + perms_xml(market.perms)
        + template_xml("TEMPLATE", attrs)
        + "</MARKETPLACE>"
    )


def render_marketapp(site: SimSite, app: SimMarketApp) -> str:
    uname, gname = owner_names(site, app.uid, app.gid)
    market = site.marketplaces.get(app.marketplace_id)
    return (
        f"<MARKETPLACEAPP><ID>{app.id}</ID><UID>{app.uid}</UID><GID>{app.gid}</GID>"
        f"<UNAME>{esc(uname)}</UNAME><GNAME>{esc(gname)}</GNAME><REGTIME>{app.regtime}</REGTIME>"
        f"<NAME>{esc(app.name)}</NAME><ZONE_ID>{cdata('0')}</ZONE_ID><ORIGIN_ID>{cdata('-1')}</ORIGIN_ID>"
        f"<SOURCE>{cdata(app.source)}</SOURCE><MD5>{cdata(app.md5)}</MD5><SIZE>{app.size_mb}</SIZE>"
        f"<DESCRIPTION>{cdata(app.description)}</DESCRIPTION><VERSION>{cdata(app.version)}</VERSION>"
        f"<FORMAT>{cdata(app.format)}</FORMAT><APPTEMPLATE64>{cdata(app.apptemplate64)}</APPTEMPLATE64>"
        f"<MARKETPLACE_ID>{app.marketplace_id}</MARKETPLACE_ID>"
        f"<MARKETPLACE>{esc(market.name if market else '')}</MARKETPLACE>"
        f"<STATE>{app.state}</STATE><TYPE>{app.type}</TYPE>"
        + perms_xml(app.perms)
        + template_xml("TEMPLATE", app.template)
        + "</MARKETPLACEAPP>"
    )


def document_template(doc: SimDocument) -> list:
    attrs = [a for a in doc.template if a[0] != "BODY"]
    if doc.body or doc.type in (SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT):
        attrs.append(("BODY", json.dumps(doc.body, separators=(",", ":"))))
    else:
        attrs.extend(a for a in doc.template if a[0] == "BODY")
    return attrs


def render_document(site: SimSite, doc: SimDocument) -> str:
    return (
        f"<DOCUMENT>{_owned_head(site, doc)}<TYPE>{doc.type}</TYPE>"
        + perms_xml(doc.perms)
        + template_xml("TEMPLATE", document_template(doc))
        + "</DOCUMENT>"
    )


def render_acl_pool(site: SimSite) -> str:
    rules = (
        f"<ACL><ID>{acl.id}</ID><USER>{acl.user:x}</USER><RESOURCE>{acl.resource:x}</RESOURCE>"
        f"<RIGHTS>{acl.rights:x}</RIGHTS><ZONE>{acl.zone:x}</ZONE><STRING>{esc(acl_string(acl))}</STRING></ACL>"
        for acl in rules_in_dump_order(site)
    )
    return pool_xml("ACL_POOL", rules)


def render_system_config(site: SimSite) -> str:
    """oned.conf as XML: scalar settings, sorted by name like every platform template."""
    inner = "".join(f"<{name}>{cdata(value)}</{name}>" for name, value in sorted(site.system_config.items()))
    return f"<OPENNEBULA_CONFIGURATION>{inner}</OPENNEBULA_CONFIGURATION>"
