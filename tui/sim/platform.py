"""The platform versions the embedded site emulates, and what differs between them in the source.

Each difference names the file of OpenNebula/one that shows it (tags release-6.10.0,
release-7.0.0, release-7.4.0; 6.0.x only for `updateconf`'s missing append flag):

- `one.system.version` answers the code version (`include/NebulaService.h` `code_version`;
  6.10 `include/Nebula.h`).
- `one.vm.updateconf` takes an append flag from 6.2 on (6.2 `RequestManagerVirtualMachine.cc`
  reads `paramList.getInt(3)`); 6.0 registers it as `A:sis` and replaces every section the text
  leaves out (6.0 `src/vm/VirtualMachine.cc` `replace_vector_values` without `append`).
- The cloud's market driver (`src/market_mad/remotes/one/monitor`, the same file at 6.10.0-6.10.2,
  at 6.10.4-6.10.5 and at 7.0.0-7.0.2) converts the record's JSON VM template as it is up to
  6.10.3; from 6.10.4 it gives the app ARCHITECTURE (the record's `os-arch`, line 182) and, for a
  record with an `os-arch`, sets the template's SCHED_REQUIREMENTS to `HYPERVISOR=kvm &
  ARCH=<os-arch>` (`generate_vm_template64`, lines 237-258 at release-6.10.4); from 7.0 it adds
  HYPERVISOR to the app and the template and appends `HYPERVISOR=<h>[ & ARCH=aarch64]` to every
  template's SCHED_REQUIREMENTS (lines 274-311 at release-7.0.0), and converts arrays (up to 6.10
  `template_to_str` drops them).
- The market driver adds a missing trailing slash to the marketplace's ENDPOINT from 6.10.3 on
  (`src/market_mad/remotes/one/monitor` line 42 at release-6.10.3); 6.10.0-6.10.2 build app
  links as `"#{@url}appliance/#{id}"` from the ENDPOINT as it is (line 170 at release-6.10.0).
- `one.system.config` serves every user from 6.10 (`src/rm/RequestManagerSystem.cc`
  `SystemConfig::request_execute`, release-6.10.0 38-46); up to 6.8 only the oneadmin group
  (release-6.8.0 38-52).
- Object names refuse tab, newline, vertical tab, form feed and carriage return from 6.10.4 on
  (`invalid_name_chars`, src/pool/PoolObjectSQL.cc line 27).
- `one.market.allocate` answers a refused or taken name ALLOCATE ("Error allocating a new
  marketplace. ...") from 7.4 on (src/rm/api/MarketPlaceAPI.cc line 196); INTERNAL with the
  bare text before (src/rm/RequestManagerAllocate.cc line 1288 of 6.10.0 and 7.0.0).
- `one.vmpool.info[extended]` names a bad state filter "Incorrect state filter <n>" from 7.4
  (src/rm/api/VirtualMachinePoolAPI.cc line 49), "Incorrect filter_flag, state" before.
- OneFlow's input keys and states differ too (`tui.sim.flow_engine`).
"""

from __future__ import annotations

from tui.domain.object_names import INVALID_NAME_CHARS, INVALID_NAME_CHARS_BEFORE_6_10_4

#: the versions `sitetk sim --one-version` accepts and the test suite runs against
EMULATED_VERSIONS: tuple[str, ...] = ("6.10.0", "7.0.0", "7.4.0")
DEFAULT_VERSION = "7.0.0"
#: older versions only the tests start in-process (to show what the console refuses on them)
TEST_ONLY_VERSIONS: tuple[str, ...] = ("6.0.0",)


def version_key(version: str) -> tuple[int, ...]:
    """`7.3.80` -> (7, 3, 80); parts that are not numbers count as 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def series(version: str) -> str:
    """`7.4.0` -> `7.4`."""
    return ".".join(version.split(".")[:2])


def updateconf_has_append(version: str) -> bool:
    """Whether `one.vm.updateconf` reads its fourth (append) argument: from 6.2 on."""
    return version_key(version) >= (6, 2)


def system_config_for_everyone(version: str) -> bool:
    """Whether `one.system.config` answers users outside the oneadmin group: from 6.10 on."""
    return version_key(version) >= (6, 10)


def driver_adds_architecture(version: str) -> bool:
    """Whether the `one` market driver gives apps ARCHITECTURE and the VM templates of records with
    an `os-arch` SCHED_REQUIREMENTS: from 6.10.4 on (`src/market_mad/remotes/one/monitor` lines
    182 and 237-258 at release-6.10.4; absent at release-6.10.3)."""
    return version_key(version) >= (6, 10, 4)


def driver_adds_requirements(version: str) -> bool:
    """Whether the market driver adds HYPERVISOR to apps and VM templates and appends
    `HYPERVISOR=<h>` to every VM template's SCHED_REQUIREMENTS: from 7.0 on (`monitor`
    `generate_vm_template64`, `app_hypervisor`, `app_arch`, lines 274-332 at release-7.0.0)."""
    return version_key(version) >= (7, 0)


def driver_adds_endpoint_slash(version: str) -> bool:
    """Whether the `one` market driver adds a missing slash to the ENDPOINT: from 6.10.3 on."""
    return version_key(version) >= (6, 10, 3)


def market_driver_user_agent(version: str, edition: str = "") -> str:
    """`OpenNebula 7.4.0 (Market Driver)`, or with the edition `OpenNebula 7.4.0 EE (Market Driver)`:
    the monitor reads the full version from its VERSION file (`monitor` `initialize`)."""
    return f"OpenNebula {version} {edition} (Market Driver)" if edition else f"OpenNebula {version} (Market Driver)"


def market_allocate_refuses_with_allocate(version: str) -> bool:
    """Whether `one.market.allocate` answers a failure of `MarketPlacePool::allocate` (a refused or
    taken name) ALLOCATE: from 7.4 on (src/rm/api/MarketPlaceAPI.cc line 196); 6.10 and 7.0 answer
    INTERNAL (src/rm/RequestManagerAllocate.cc line 1288)."""
    return version_key(version) >= (7, 4)


def disk_resize_answers_vm_id(version: str) -> bool:
    """Whether `one.vm.diskresize` answers the VM's ID: from 7.4 on (`VirtualMachineDiskResizeXRPC`,
    src/rm/xml-rpc/VirtualMachineXRPC.cc line 316, `response(ec, oid, att)`); 6.10 and 7.0 answer
    the disk's ID (src/rm/RequestManagerVirtualMachine.cc line 3708 at release-7.0.2,
    `success_response(did, att)`). Recorded: 7.4.0 answered 10 for disk 0 of VM 10."""
    return version_key(version) >= (7, 4)


def invalid_name_chars(version: str) -> str:
    """The characters `PoolObjectSQL::name_is_valid` refuses in object names: tab, newline,
    vertical tab, form feed and carriage return join the set in release-6.10.4
    (src/pool/PoolObjectSQL.cc line 27; release-6.10.3 has only `&|:\\";/'#{}$<>`)."""
    return INVALID_NAME_CHARS if version_key(version) >= (6, 10, 4) else INVALID_NAME_CHARS_BEFORE_6_10_4


def vm_state_refusal(version: str, state: int) -> str:
    """What `one.vmpool.info[extended]` answers (XML_RPC_API) to a state filter outside -2..11:
    "Incorrect state filter <n>" from 7.4 (src/rm/api/VirtualMachinePoolAPI.cc release-7.4.0
    line 49), "Incorrect filter_flag, state" before (src/rm/RequestManagerPoolInfoFilter.cc
    release-6.10.0 and release-7.0.0 line 318)."""
    if version_key(version) >= (7, 4):
        return f"Incorrect state filter {state}"
    return "Incorrect filter_flag, state"


#: what a VM's NIC copies from its network's template (oned.conf INHERIT_VNET_ATTR at release-6.10.0
#: 1057-1087, 7.0.0 1038-1068, 7.4.0 1055-1085, without the vCenter ones)
INHERIT_VNET_ATTR: tuple[str, ...] = (
    "VLAN_TAGGED_ID", "FILTER", "FILTER_IP_SPOOFING", "FILTER_MAC_SPOOFING", "MTU", "METRIC", "IP6_METRIC", "METHOD",
    "IP6_METHOD", "INBOUND_AVG_BW", "INBOUND_PEAK_BW", "INBOUND_PEAK_KB", "OUTBOUND_AVG_BW", "OUTBOUND_PEAK_BW",
    "OUTBOUND_PEAK_KB", "CONF", "BRIDGE_CONF", "OVS_BRIDGE_CONF", "IP_LINK_CONF", "EXTERNAL_IP", "AWS_ALLOCATION_ID",
    "VULTR_IP_ID", "GATEWAY", "DNS", "VXLAN_MODE", "VXLAN_TEP", "VXLAN_MC", "CVLANS", "QINQ_TYPE", "TRUST", "SPOOFCHK",
)


def inherit_datastore_attr(version: str) -> tuple[str, ...]:
    """What a VM's DISK copies from its image datastore's template (oned.conf INHERIT_DATASTORE_ATTR,
    release-6.10.0 1020-1044; LVM_THIN_ENABLE and PERSISTENT_SNAPSHOTS join at 7.0.0 1032-1033)."""
    names = ("CEPH_HOST", "CEPH_SECRET", "CEPH_KEY", "CEPH_USER", "CEPH_CONF", "CEPH_TRASH", "POOL_NAME", "ISCSI_USER",
             "ISCSI_USAGE", "ISCSI_HOST", "GLUSTER_HOST", "GLUSTER_VOLUME", "DISK_TYPE", "ALLOW_ORPHANS",
             "QCOW2_STANDALONE", "SPARSE")
    return names + (("LVM_THIN_ENABLE", "PERSISTENT_SNAPSHOTS") if version_key(version) >= (7, 0) else ())


def context_network_variables(version: str) -> tuple[str, ...]:
    """The CONTEXT variables every NIC gets, `ETH<n>_<name>`, empty when nothing sets them
    (NETWORK_CONTEXT then NETWORK6_CONTEXT, src/vm/VirtualMachineContext.cc 44-72 at release-7.0.0,
    the same at 6.10.0; ROUTES joins at 7.4.0)."""
    ipv4: tuple[str, ...] = ("IP", "MAC", "MASK", "NETWORK", "GATEWAY", "DNS", "SEARCH_DOMAIN", "MTU", "METRIC",
                             "METHOD", "VLAN_ID", "VROUTER_IP", "VROUTER_MANAGEMENT", "EXTERNAL")
    if version_key(version) >= (7, 4):
        ipv4 += ("ROUTES",)
    return ipv4 + ("IP6", "IP6_ULA", "IP6_GATEWAY", "IP6_METRIC", "IP6_METHOD", "IP6_PREFIX_LENGTH", "VROUTER_IP6")
