"""VM documents exactly as the platform writes them, plus the XML primitives every renderer shares.

Element names and order follow the platform's XSDs (vm.xsd, vm_pool.xsd); template attributes
come out sorted by name (vector members too) with values in CDATA; responses carry no namespace.
`one.vmpool.info` gets the SHORT body, `one.vm.info` and `one.vmpool.infoextended` the full one.
Each VM's two bodies are cached in `site.render_cache` under a key led by `SimVm.revision`, so a
pool of 50,000 VMs is a join of cached strings.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from tui.domain.one_states import LcmState, VmState
from tui.domain.permissions import PERMISSION_TAGS, Permissions
from tui.domain.template_text import Attr, Template
from tui.sim.platform import version_key
from tui.sim.state import SimHistory, SimSite, SimVm

# primitives -----------------------------------------------------------------------------------


def esc(text: str) -> str:
    """Escape element text (names, paths); template values go to CDATA instead."""
    if "&" in text or "<" in text or ">" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def cdata(value: str) -> str:
    # "]]>" cannot live inside one CDATA section: split it over two
    return "<![CDATA[" + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _attr_xml(name: str, value: str | list[tuple[str, str]]) -> str:
    if isinstance(value, list):
        inner = "".join(f"<{k}>{cdata(v)}</{k}>" for k, v in sorted(value, key=lambda kv: kv[0]))
        return f"<{name}>{inner}</{name}>"
    return f"<{name}>{cdata(value)}</{name}>"


def _order_key(order: dict[str, int]):
    """A sort key placing names known to a schema sequence in its order, others alphabetically."""
    known = sorted(order, key=order.__getitem__)

    def key(attr: Attr) -> tuple[float, str]:
        name = attr[0]
        if name in order:
            return (order[name], name)
        # an unknown name sits just before the first known name that sorts after it
        for known_name in known:
            if known_name > name:
                return (order[known_name] - 0.5, name)
        return (len(order), name)

    return key


def attrs_xml(attrs: Iterable[Attr], order: dict[str, int] | None = None) -> str:
    """Template attributes sorted by name (stable for repeated names), values in CDATA."""
    key = _order_key(order) if order else (lambda attr: attr[0])
    return "".join(_attr_xml(name, value) for name, value in sorted(attrs, key=key))


def template_xml(tag: str, attrs: Iterable[Attr], order: dict[str, int] | None = None) -> str:
    """A template as Template::to_xml writes it: opening tag, attributes, closing tag, so an empty one
    is `<TAG></TAG>` (src/template/Template.cc 353-369 at release-7.4.0, the same at 7.0.2 and
    6.10.5); the few the platform writes `<TAG/>` when empty are written so where they are built."""
    return f"<{tag}>{attrs_xml(attrs, order)}</{tag}>"


#: the PERMISSIONS element with a {} for each bit (one format: every VM and object renders it)
_PERMS_XML = "<PERMISSIONS>" + "".join(f"<{tag}>{{}}</{tag}>" for tag in PERMISSION_TAGS) + "</PERMISSIONS>"


def perms_xml(perms: Permissions) -> str:
    return _PERMS_XML.format(*perms.as_args())


def ids_xml(tag: str, ids: Iterable[int | str]) -> str:
    """A list of IDs as ObjectCollection::to_xml writes it (src/pool/ObjectCollection.cc 86-102 at
    release-7.4.0, the same at 7.0.2 and 6.10.5): `<TAG></TAG>` when empty, never `<TAG/>` (a host's
    VMS, a datastore's IMAGES, a group's USERS and ADMINS, a network's VROUTERS and UPDATED_VMS...)."""
    return f"<{tag}>{''.join(f'<ID>{i}</ID>' for i in ids)}</{tag}>"


def values_xml(pairs: Iterable[tuple[str, object]]) -> str:
    """Elements whose values are written through one_util::escape_xml, which wraps them in CDATA
    (include/NebulaUtil.h 281-295 at release-7.4.0), empty ones too (`<X><![CDATA[]]></X>`)."""
    return "".join(f"<{tag}>{cdata(str(value))}</{tag}>" for tag, value in pairs)


def owner_names(site: SimSite, uid: int, gid: int) -> tuple[str, str]:
    user = site.users.get(uid)
    group = site.groups.get(gid)
    return (user.name if user else "", group.name if group else "")


def pool_xml(root: str, bodies: Iterable[str]) -> str:
    """A pool document as oned writes it: the opening tag, each row's body, the closing tag, so an
    empty pool is `<ROOT></ROOT>`, never `<ROOT/>` (src/pool/PoolSQL.cc `dump` 197-226 at
    release-7.4.0, the same at 6.10.5; src/acl/AclManager.cc 1193-1200 for ACL_POOL; recorded:
    `vm list pages: an ID range past the last VM (empty)`, `user session: hosts`)."""
    return f"<{root}>{''.join(bodies)}</{root}>"


# VM -------------------------------------------------------------------------------------------

#: the VM/TEMPLATE sequence of vm.xsd (CPU_MODEL is written by the platform but absent there)
VM_TEMPLATE_SEQUENCE: tuple[str, ...] = (
    "AUTOMATIC_DS_REQUIREMENTS", "AUTOMATIC_NIC_REQUIREMENTS", "AUTOMATIC_REQUIREMENTS",
    "CLONING_TEMPLATE_ID", "CONTEXT", "CPU", "CPU_COST", "DISK", "DISK_COST", "EMULATOR", "FEATURES",
    "HYPERV_OPTIONS", "GRAPHICS", "VIDEO", "IMPORTED", "INPUT", "MEMORY", "MEMORY_COST", "MEMORY_MAX",
    "MEMORY_SLOTS", "MEMORY_RESIZE_MODE", "NIC", "NIC_ALIAS", "NIC_DEFAULT", "NUMA_NODE", "OS", "PCI",
    "QEMU_GA_EXEC", "RAW", "SECURITY_GROUP_RULE", "SNAPSHOT", "SPICE_OPTIONS", "SUBMIT_ON_HOLD",
    "TEMPLATE_ID", "TM_MAD_SYSTEM", "TOPOLOGY", "TPM", "MEMORY_ENCRYPTION", "VCPU", "VCPU_MAX", "VMGROUP",
    "VMID", "VROUTER_ID", "VROUTER_KEEPALIVED_ID", "VROUTER_KEEPALIVED_PASSWORD", "SCHED_ACTION",
)
_VM_TEMPLATE_ORDER = {name: i for i, name in enumerate(VM_TEMPLATE_SEQUENCE)}
_VM_TEMPLATE_KEY = _order_key(_VM_TEMPLATE_ORDER)
#: attributes that live in VM/TEMPLATE; everything else a template carries goes to USER_TEMPLATE
VM_SYSTEM_ATTRIBUTES = frozenset(VM_TEMPLATE_SEQUENCE) | {"CPU_MODEL"}
_VIDEO_ORDER = {"TYPE": 0, "IOMMU": 1, "ATS": 2, "VRAM": 3, "RESOLUTION": 4}
_BACKUP_CONFIG_KEYS = (
    "BACKUP_JOB_ID", "BACKUP_VOLATILE", "DISK_IDS", "FS_FREEZE", "INCREMENTAL_BACKUP_ID", "INCREMENT_MODE",
    "INTERACTIVE", "KEEP_LAST", "LAST_BACKUP_ID", "LAST_BACKUP_SIZE", "LAST_BRIDGE", "LAST_DATASTORE_ID",
    "LAST_INCREMENT_ID", "MODE",
)
#: a DISK of the short body, every key always, in this order (VirtualMachineDisk::to_xml_short,
#: src/vm/VirtualMachineDisk.cc 666-681 at release-7.0.0; the same list at 6.10.0 and 7.4.0)
_SHORT_DISK_KEYS = ("DISK_ID", "DATASTORE", "DATASTORE_ID", "IMAGE", "IMAGE_ID", "SIZE", "TYPE", "CLONE",
                    "CLONE_TARGET", "LN_TARGET", "DISK_SNAPSHOT_TOTAL_SIZE")
#: a NIC of the short body: these when set, then the last five always (VirtualMachineNic::to_xml_short,
#: src/vm/VirtualMachineNic.cc 192-259 at release-7.0.0)
_SHORT_NIC_OPTIONAL = ("IP", "EXTERNAL_IP", "IP6", "IP6_ULA", "IP6_LINK", "IP6_GLOBAL", "NETWORK_MODE",
                       "SCHED_REQUIREMENTS", "SCHED_RANK")
_SHORT_NIC_KEYS = ("MAC", "NETWORK", "NETWORK_ID", "NIC_ID", "SECURITY_GROUPS")
#: VM states in which a VM holds a place on its host
ON_HOST_STATES = frozenset({VmState.ACTIVE, VmState.SUSPENDED, VmState.POWEROFF})


def _vm_template_xml(vm: SimVm) -> str:
    parts: list[str] = []
    attrs = list(vm.template)
    names = {name for name, _ in attrs}
    # a VM built outside allocate_vm may lack VMID; TM_MAD_SYSTEM comes with the first deploy
    # (VirtualMachine::check_tm_mad_disks, src/vm/VirtualMachine.cc 4086-4102 at release-7.0.0)
    if "VMID" not in names:
        attrs.append(("VMID", str(vm.id)))
    for name, value in sorted(attrs, key=_VM_TEMPLATE_KEY):
        if name == "VIDEO" and isinstance(value, list):
            inner = "".join(
                f"<{k}>{cdata(v)}</{k}>" for k, v in sorted(value, key=lambda kv: _VIDEO_ORDER.get(kv[0], 9))
                if k in _VIDEO_ORDER
            )
            parts.append(f"<VIDEO>{inner}</VIDEO>")
        else:
            parts.append(_attr_xml(name, value))
    return "<TEMPLATE>" + "".join(parts) + "</TEMPLATE>"


def _short_template_xml(vm: SimVm) -> str:
    scalars: dict[str, str] = {}
    disks: list[str] = []
    nics: list[str] = []
    graphics = ""
    for name, value in vm.template:
        if name in ("CPU", "MEMORY", "VCPU") and isinstance(value, str) and name not in scalars:
            scalars[name] = value
        elif name == "DISK" and isinstance(value, list):
            found = dict(value)
            # every value through escape_xml: CDATA (XML_DISK_ATTR, src/vm/VirtualMachineDisk.cc 665-681
            # at release-7.4.0; XML_NIC_ATTR and the optional ones, VirtualMachineNic.cc 191-262)
            disks.append("<DISK>" + values_xml((k, found.get(k, "")) for k in _SHORT_DISK_KEYS) + "</DISK>")
        elif name == "NIC" and isinstance(value, list):
            found = dict(value)
            nics.append("<NIC>" + values_xml((k, found[k]) for k in _SHORT_NIC_OPTIONAL if found.get(k))
                        + values_xml((k, found.get(k, "")) for k in _SHORT_NIC_KEYS) + "</NIC>")
        elif name == "GRAPHICS" and not graphics:
            graphics = _attr_xml(name, value)
    # CPU, MEMORY and VCPU as plain text (VirtualMachine::to_xml_short, src/vm/VirtualMachine.cc 2749-2752
    # at release-7.4.0)
    head = "".join(f"<{k}>{esc(scalars[k])}</{k}>" for k in ("CPU", "MEMORY", "VCPU") if k in scalars)
    return "<TEMPLATE>" + head + "".join(disks) + "".join(nics) + graphics + "</TEMPLATE>"


def _short_user_template_xml(vm: SimVm) -> str:
    """`<USER_TEMPLATE/>` when the VM's user template is empty (VirtualMachineTemplate::to_xml_short,
    src/vm/VirtualMachineTemplate.cc 44-46 at release-7.4.0)."""
    if not vm.user_template:
        return "<USER_TEMPLATE/>"
    kept = [a for a in vm.user_template if a[0] in ("LABELS", "ERROR") or a[0].startswith("SCHED_")]
    return template_xml("USER_TEMPLATE", kept)


def vm_capacity(vm: SimVm) -> tuple[int, int]:
    """(CPU in percent, memory in KiB) the VM takes on its host."""
    cpu = mem = 0
    for name, value in vm.template:
        if name == "CPU" and isinstance(value, str):
            try:
                cpu = int(float(value) * 100)
            except ValueError:
                cpu = 0
        elif name == "MEMORY" and isinstance(value, str):
            try:
                mem = int(float(value)) * 1024
            except ValueError:
                mem = 0
    return cpu, mem


def _monitoring(vm: SimVm, full: bool) -> str:
    """The full body's MONITORING is a template (VirtualMachineMonitorInfo::to_xml, Template::to_xml:
    `<MONITORING></MONITORING>` when empty, values in CDATA); the short body's is `<MONITORING/>`
    when empty, else CPU, MEMORY, STATE through escape_xml (to_xml_short,
    src/vm/VirtualMachineMonitorInfo.cc 26-27, 32-37, 42-64 at release-7.4.0)."""
    if not (vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING):
        return "<MONITORING></MONITORING>" if full else "<MONITORING/>"
    cpu = (vm.id * 7) % 40 / 10.0
    mem = vm_capacity(vm)[1] * 6 // 10
    if full:
        return template_xml("MONITORING", [("CPU", str(cpu)), ("ID", str(vm.id)), ("MEMORY", str(mem)),
                                           ("TIMESTAMP", str(vm.last_poll or vm.stime))])
    return f"<MONITORING>{values_xml((('CPU', cpu), ('MEMORY', mem), ('STATE', 'a')))}</MONITORING>"


def history_parts(site: SimSite, h: SimHistory) -> tuple[int, str, str]:
    host = site.hosts.get(h.host_id)
    ds = site.datastores.get(h.ds_id)
    return (host.cluster_id if host else 0, host.vm_mad if host else "kvm", ds.tm_mad if ds else "shared")


def _history_short(site: SimSite, vm: SimVm) -> str:
    if not vm.history:
        return "<HISTORY_RECORDS/>"
    h = vm.history[-1]
    cid, vm_mad, tm_mad = history_parts(site, h)
    return (
        # HOSTNAME, the drivers and ACTION through escape_xml (History::to_xml_short, src/vm/History.cc
        # 376-394 at release-7.4.0)
        f"<HISTORY_RECORDS><HISTORY><OID>{vm.id}</OID><SEQ>{h.seq}</SEQ><HOSTNAME>{cdata(h.hostname)}</HOSTNAME>"
        f"<HID>{h.host_id}</HID><CID>{cid}</CID><DS_ID>{h.ds_id}</DS_ID><VM_MAD>{cdata(vm_mad)}</VM_MAD>"
        f"<TM_MAD>{cdata(tm_mad)}</TM_MAD><ACTION>{cdata(str(h.action))}</ACTION></HISTORY></HISTORY_RECORDS>"
    )


def _history_full(site: SimSite, vm: SimVm) -> str:
    """Every HISTORY record as History::to_xml writes it (src/vm/History.cc 296-320 at release-7.0.0):
    PLAN_ID and ACTION_ID only from 7.0 (absent from release-6.10.0's); UID, GID and REQUEST_ID -1
    until an action is set on the record; RETIME once the guest stopped running, ESTIME/EETIME for an
    epilog, ETIME when the record closes (a powered-off VM keeps its record open)."""
    if not vm.history:
        return "<HISTORY_RECORDS/>"
    plan = version_key(site.config.one_version) >= (7, 0)
    parts: list[str] = []
    for h in vm.history:
        cid, vm_mad, tm_mad = history_parts(site, h)
        parts.append(
            f"<HISTORY><OID>{vm.id}</OID><SEQ>{h.seq}</SEQ><HOSTNAME>{esc(h.hostname)}</HOSTNAME>"
            f"<HID>{h.host_id}</HID><CID>{cid}</CID><STIME>{h.stime}</STIME><ETIME>{h.etime}</ETIME>"
            f"<VM_MAD>{cdata(vm_mad)}</VM_MAD><TM_MAD>{cdata(tm_mad)}</TM_MAD><DS_ID>{h.ds_id}</DS_ID>"
            + (f"<PLAN_ID>{h.plan_id}</PLAN_ID><ACTION_ID>{h.action_id}</ACTION_ID>" if plan else "")
            + f"<PSTIME>{h.stime if h.prolog else 0}</PSTIME><PETIME>{h.stime if h.prolog else 0}</PETIME><RSTIME>{h.stime}</RSTIME>"
            f"<RETIME>{h.running_end}</RETIME><ESTIME>{h.epilog_start}</ESTIME><EETIME>{h.epilog_end}</EETIME>"
            f"<ACTION>{h.action}</ACTION><UID>{h.uid}</UID><GID>{h.gid}</GID>"
            f"<REQUEST_ID>{h.request_id}</REQUEST_ID></HISTORY>"
        )
    return "<HISTORY_RECORDS>" + "".join(parts) + "</HISTORY_RECORDS>"


def _backups_xml(vm: SimVm) -> str:
    """`<BACKUP_CONFIG/>` when the VM has no backup configuration, else its template; the backups'
    IDs an ObjectCollection, `<BACKUP_IDS></BACKUP_IDS>` when none (Backups::to_xml,
    src/vm/Backups.cc 145-169 at release-7.4.0)."""
    values = {k: v for k, v in vm.backup_config if isinstance(v, str)}
    inner = "".join(f"<{k}>{cdata(values[k])}</{k}>" for k in _BACKUP_CONFIG_KEYS if k in values)
    config = f"<BACKUP_CONFIG>{inner}</BACKUP_CONFIG>" if inner else "<BACKUP_CONFIG/>"
    return f"<BACKUPS>{config}{ids_xml('BACKUP_IDS', ())}</BACKUPS>"


def _head(site: SimSite, vm: SimVm) -> tuple[str, str]:
    uname, gname = owner_names(site, vm.uid, vm.gid)
    return uname, gname


def render_vm_short(site: SimSite, vm: SimVm) -> str:
    uname, gname = _head(site, vm)
    return (
        f"<VM><ID>{vm.id}</ID><UID>{vm.uid}</UID><GID>{vm.gid}</GID><UNAME>{esc(uname)}</UNAME>"
        f"<GNAME>{esc(gname)}</GNAME><NAME>{esc(vm.name)}</NAME><LAST_POLL>{vm.last_poll}</LAST_POLL>"
        f"<STATE>{vm.state}</STATE><LCM_STATE>{vm.lcm_state}</LCM_STATE><RESCHED>{vm.resched}</RESCHED>"
        f"<STIME>{vm.stime}</STIME><ETIME>{vm.etime}</ETIME><DEPLOY_ID>{esc(vm.deploy_id)}</DEPLOY_ID>"
        + _short_template_xml(vm)
        + _monitoring(vm, full=False)
        + _short_user_template_xml(vm)
        + _history_short(site, vm)
        + "</VM>"
    )


def _sched_action_ids_xml(vm: SimVm) -> str:
    """VM/SCHED_ACTIONS: the IDs of the VM's scheduled actions, an ObjectCollection (src/vm/VirtualMachine.cc
    release-7.4.0 line 2606); the actions themselves sit in VM/TEMPLATE (tui.sim.sched_actions)."""
    return ids_xml("SCHED_ACTIONS", (dict(v).get("ID", "") for k, v in vm.template
                                     if k == "SCHED_ACTION" and isinstance(v, list)))


def render_vm_full(site: SimSite, vm: SimVm) -> str:
    uname, gname = _head(site, vm)
    return (
        f"<VM><ID>{vm.id}</ID><UID>{vm.uid}</UID><GID>{vm.gid}</GID><UNAME>{esc(uname)}</UNAME>"
        f"<GNAME>{esc(gname)}</GNAME><NAME>{esc(vm.name)}</NAME>{perms_xml(vm.perms)}"
        f"<LAST_POLL>{vm.last_poll}</LAST_POLL><STATE>{vm.state}</STATE><LCM_STATE>{vm.lcm_state}</LCM_STATE>"
        # every write goes through VirtualMachinePool::update, which sets the previous state to the
        # current one after the state hooks ran (src/vm/VirtualMachinePool.cc 75 at release-7.0.0,
        # 74 at 6.10.0): a VM read back always shows PREV_STATE = STATE
        f"<PREV_STATE>{vm.state}</PREV_STATE><PREV_LCM_STATE>{vm.lcm_state}</PREV_LCM_STATE>"
        f"<RESCHED>{vm.resched}</RESCHED><STIME>{vm.stime}</STIME><ETIME>{vm.etime}</ETIME>"
        f"<DEPLOY_ID>{esc(vm.deploy_id)}</DEPLOY_ID>"
        + _monitoring(vm, full=True)
        + _sched_action_ids_xml(vm)
        + _vm_template_xml(vm)
        + template_xml("USER_TEMPLATE", vm.user_template)
        + _history_full(site, vm)
        + _backups_xml(vm)
        + "</VM>"
    )


def _cache_key(vm: SimVm) -> tuple:
    # revision leads; the rest catches a writer that forgot SimVm.touch()
    return (vm.revision, vm.state, vm.lcm_state, len(vm.history), len(vm.user_template), len(vm.template),
            vm.name, vm.uid, vm.gid, vm.resched)


class _Entry:
    __slots__ = ("key", "short", "full", "capacity")

    def __init__(self, key: tuple) -> None:
        self.key = key
        # bodies are kept XML-escaped, as they travel inside an XML-RPC <string>
        self.short: str | None = None
        self.full: str | None = None
        self.capacity: tuple[int, int] | None = None


def wire_escape(text: str) -> str:
    """Escape a value for an XML-RPC <string>, exactly as xmlrpc.client does."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wire_unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _entry(site: SimSite, vm: SimVm) -> _Entry:
    key = _cache_key(vm)
    entry = site.render_cache.get(vm.id)
    if entry is None or entry.key != key:
        entry = site.render_cache[vm.id] = _Entry(key)
    return entry


def vm_xml_escaped(site: SimSite, vm: SimVm, full: bool) -> str:
    """The VM's body (short for vmpool.info, full otherwise), wire-escaped, cached by revision."""
    entry = _entry(site, vm)
    if full:
        if entry.full is None:
            entry.full = wire_escape(render_vm_full(site, vm))
        return entry.full
    if entry.short is None:
        entry.short = wire_escape(render_vm_short(site, vm))
    return entry.short


def vm_xml(site: SimSite, vm: SimVm, full: bool = True) -> str:
    """The VM's XML document as the platform returns it."""
    return wire_unescape(vm_xml_escaped(site, vm, full))


def cached_capacity(site: SimSite, vm: SimVm) -> tuple[int, int]:
    entry = _entry(site, vm)
    if entry.capacity is None:
        entry.capacity = vm_capacity(vm)
    return entry.capacity


def vm_pool_escaped(site: SimSite, vms: Sequence[SimVm], full: bool) -> str:
    """VM_POOL, wire-escaped: a join of cached bodies, the hot path of a console."""
    if not vms:  # open and close tags, as every pool (`pool_xml`)
        return "&lt;VM_POOL&gt;&lt;/VM_POOL&gt;"
    parts = ["&lt;VM_POOL&gt;"]
    parts.extend([vm_xml_escaped(site, vm, full) for vm in vms])
    parts.append("&lt;/VM_POOL&gt;")
    return "".join(parts)


def forget_vm(site: SimSite, vm_id: int) -> None:
    site.render_cache.pop(vm_id, None)


def split_vm_template(attrs: Template) -> tuple[Template, Template]:
    """Split a template into (VM/TEMPLATE, USER_TEMPLATE) as the platform does at allocation."""
    system = [a for a in attrs if a[0] in VM_SYSTEM_ATTRIBUTES]
    user = [a for a in attrs if a[0] not in VM_SYSTEM_ATTRIBUTES]
    return system, user
