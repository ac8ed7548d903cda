"""The embedded site's state: every cloud object, the simulated clock and the fault switches.

One `SimSite` holds the whole cloud in memory behind one re-entrant lock. The protocol servers
(XML-RPC, OneFlow REST, marketplace HTTP) read and change it; time-driven transitions (a VM
booting, an image downloading) are events on a heap that `advance()` runs when they are due, so
the site moves with time without a background thread. Durations are in simulated seconds and
multiplied by `time_scale` (1.0 realistic; tests use a small factor).
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.one_states import DatastoreState, ImageType, MarketPlaceAppState, MarketPlaceState
from tui.domain.permissions import Permissions
from tui.domain.template_text import Template
from tui.timing import Clock

#: a new object's permissions when nobody says otherwise: `um-------` (the platform's default UMASK 177)
OWNER_ONLY = Permissions(owner_u=1, owner_m=1)


@dataclass
class SimUser:
    """A user of the embedded site, as oned keeps it (USER: its groups, auth driver, template)."""

    id: int
    name: str
    password: str
    gid: int
    gname: str
    groups: list[int]
    auth_driver: str = "core"
    enabled: bool = True
    template: Template = field(default_factory=list)


@dataclass
class SimGroup:
    """A group of the embedded site (GROUP: its template and admins)."""

    id: int
    name: str
    template: Template = field(default_factory=list)
    admins: list[int] = field(default_factory=list)


@dataclass
class SimHost:
    """A host of the embedded site: its state, capacity and the template its monitoring reports."""

    id: int
    name: str
    state: int  # tui.domain.one_states.HostState
    total_cpu: int  # percent, 100 per core
    total_mem: int  # KiB
    template: Template = field(default_factory=list)
    im_mad: str = "kvm"
    vm_mad: str = "kvm"
    cluster_id: int = 0
    cluster: str = "default"
    prev_state: int = 2


@dataclass
class SimDatastore:
    """A datastore of the embedded site (DATASTORE)."""

    id: int
    name: str
    type: int  # tui.domain.one_states.DatastoreType
    ds_mad: str
    tm_mad: str
    total_mb: int
    free_mb: int
    template: Template = field(default_factory=list)
    uid: int = 0
    gid: int = 0
    perms: Permissions = Permissions(1, 1, 0, 1, 0, 0, 0, 0, 0)
    state: int = DatastoreState.READY


@dataclass
class SimAddressRange:
    """One address range of a virtual network (AR) and its leases."""

    ar_id: int
    ip: str
    mac: str
    size: int
    type: str = "IP4"
    leases: dict[int, int] = field(default_factory=dict)  # offset -> vm id
    #: a lease was ever taken: the range's stored template then carries ALLOCATED
    ever_leased: bool = False


@dataclass
class SimVnet:
    """A virtual network of the embedded site (VNET) with its address ranges."""

    id: int
    name: str
    bridge: str
    vn_mad: str
    template: Template = field(default_factory=list)
    ars: list[SimAddressRange] = field(default_factory=list)
    phydev: str = ""
    vlan_id: str = ""
    uid: int = 0
    gid: int = 0
    perms: Permissions = Permissions(1, 1, 0, 1, 0, 0, 0, 0, 0)


@dataclass
class SimImage:
    """An image of the embedded site (IMAGE): its state, size and the VMs using it."""

    id: int
    name: str
    uid: int
    gid: int
    datastore_id: int
    state: int  # tui.domain.one_states.ImageState
    size_mb: int
    template: Template = field(default_factory=list)
    type: int = ImageType.OS
    persistent: int = 0
    regtime: int = field(default_factory=lambda: int(time.time()))
    source: str = ""
    path: str = ""
    format: str = "qcow2"
    perms: Permissions = OWNER_ONLY
    running_vms: int = 0
    prev_state: int = 0
    #: ids of the VMs whose disks use this image
    vm_ids: list[int] = field(default_factory=list)
    modtime: int = 0


@dataclass
class SimVmTemplate:
    """A VM template of the embedded site (VMTEMPLATE)."""

    id: int
    name: str
    uid: int
    gid: int
    template: Template = field(default_factory=list)
    regtime: int = field(default_factory=lambda: int(time.time()))
    perms: Permissions = OWNER_ONLY


@dataclass
class SimHistory:
    """One HISTORY record (src/vm/History.cc): who asked the action that ends it (UID, GID and
    REQUEST_ID stay -1 until an action is set on it, `VirtualMachine::set_action`), how the VM came
    to the host (PLAN_ID/ACTION_ID, from 7.0: -2/-1 for one.vm.deploy, -1/0 for the scheduler's plan)
    and when its running and epilog phases ended."""

    seq: int
    host_id: int
    hostname: str
    stime: int
    etime: int = 0
    action: int = 0
    ds_id: int = 0
    uid: int = -1
    gid: int = -1
    request_id: int = -1
    plan_id: int = -1
    action_id: int = 0
    running_end: int = 0
    #: a record copied for an action on the same host (`cp_history`) runs no prolog: PSTIME/PETIME 0
    prolog: bool = True
    epilog_start: int = 0
    epilog_end: int = 0


@dataclass
class SimVm:
    """A VM of the embedded site: its states, templates, history, owner and permissions."""

    id: int
    name: str
    uid: int
    gid: int
    state: int
    lcm_state: int
    template: Template = field(default_factory=list)
    user_template: Template = field(default_factory=list)
    history: list[SimHistory] = field(default_factory=list)
    prev_state: int = 0
    prev_lcm_state: int = 0
    stime: int = field(default_factory=lambda: int(time.time()))
    etime: int = 0
    deploy_id: str = ""
    perms: Permissions = OWNER_ONLY
    #: bumped on every change, so renderers can cache a VM's XML
    revision: int = 0
    #: bumped on every state change; a timed transition scheduled under an older epoch is stale
    epoch: int = 0
    resched: int = 0
    last_poll: int = 0
    #: BACKUPS/BACKUP_CONFIG (kept apart from TEMPLATE, as the platform does)
    backup_config: Template = field(default_factory=list)
    #: the CPU model the hypervisor domain was defined with at the last (re)definition
    deployed_cpu_model: str = ""

    def touch(self) -> None:
        """Mark the VM changed (every writer calls this, so cached XML is re-rendered)."""
        self.revision += 1


@dataclass
class SimMarketplace:
    """A marketplace registered on the embedded site (MARKETPLACE)."""

    id: int
    name: str
    market_mad: str
    endpoint: str
    template: Template = field(default_factory=list)
    uid: int = 0
    gid: int = 0
    perms: Permissions = Permissions(1, 1, 0, 1, 0, 0, 1, 0, 0)
    state: int = MarketPlaceState.ENABLED


@dataclass
class SimMarketApp:
    """An appliance of a marketplace of the embedded site (MARKETPLACEAPP)."""

    id: int
    name: str
    marketplace_id: int
    type: int  # tui.domain.one_states.MarketPlaceAppType
    version: str
    description: str
    apptemplate64: str
    size_mb: int
    template: Template = field(default_factory=list)
    state: int = MarketPlaceAppState.READY
    format: str = "qcow2"
    source: str = ""
    md5: str = ""
    regtime: int = field(default_factory=lambda: int(time.time()))
    #: marketplace record id this app mirrors (e.g. "service_toolkit")
    record_id: str = ""
    #: a broken app makes its image end in ERROR
    broken: bool = False
    uid: int = 0
    gid: int = 0
    perms: Permissions = Permissions(1, 1, 0, 1, 0, 0, 1, 0, 0)


@dataclass
class SimDocument:
    """A document of the embedded site (DOCUMENT: OneFlow's services and templates)."""

    id: int
    name: str
    uid: int
    gid: int
    type: int  # 100 service, 101 service template
    body: dict[str, Any]
    regtime: int = field(default_factory=lambda: int(time.time()))
    perms: Permissions = OWNER_ONLY
    #: template attributes other than BODY (BODY is `body`, rendered as JSON)
    template: Template = field(default_factory=list)


@dataclass
class SimAcl:
    """An ACL rule of the embedded site: user, resource, rights and zone, the numbers oned stores."""

    id: int
    user: int
    resource: int
    rights: int
    zone: int


#: the longest a held call waits for its release (a test that never releases it fails, not hangs)
HOLD_LIMIT_S = 120.0


@dataclass
class Faults:
    """Fault injection switches, read by the protocol servers on every request."""

    latency_ms: int = 0
    #: probability in [0, 1] that a request fails (internal error, HTTP 500 or a dropped connection)
    fail_rate: float = 0.0
    #: every session is rejected as if the credentials had expired
    expired_credentials: bool = False
    #: VMs of this service role fail to boot (BOOT_FAILURE), so their service ends FAILED_DEPLOYING
    fail_role: str = ""
    #: VMs whose disks come from this marketplace appliance (its name) fail to boot (BOOT_FAILURE)
    fail_appliance: str = ""
    #: `one.vm.deploy` calls fail with an internal error while this is > 0 (decremented per call)
    fail_next_deploys: int = 0
    #: the next N `one.vm.diskresize` calls are accepted, then the driver fails them (the disk keeps
    #: its size, the VM goes back to its state: tui.sim.disk_resize)
    fail_disk_resizes: int = 0
    #: simulated seconds a disk resize takes (0: tui.sim.disk_resize.RESIZE_TIME): a slow driver
    disk_resize_seconds: float = 0.0
    #: extra delay per XML-RPC method name, in milliseconds
    method_delay_ms: dict[str, int] = field(default_factory=dict)
    #: calls of these XML-RPC methods wait until their event is set (by the test that holds them; at
    #: most HOLD_LIMIT_S): a known point in an operation, without slowing the site
    hold_methods: dict[str, threading.Event] = field(default_factory=dict)
    #: the next N calls of each named XML-RPC method are refused with an ACTION error (decremented per call)
    fail_methods: dict[str, int] = field(default_factory=dict)
    #: calls of a method named in `fail_methods` answered normally before its refusals start
    #: (decremented per call): a failure in the middle of a series, such as a paged read
    fail_methods_after: dict[str, int] = field(default_factory=dict)
    #: marketplace HTTP faults by record id ("" for the listing): "error" (HTTP 500),
    #: "invalid_json" (a truncated body) or "slow:<ms>" (the answer comes after that delay); a marketplace's
    #: prefix as key ("/" for the site's own, "/community") applies to every request of that one
    market_faults: dict[str, str] = field(default_factory=dict)
    #: answers lost after the call ran (the connection drops before the answer is sent), by XML-RPC
    #: method name or `"<HTTP method> <path>"`, counted down per call: a write whose outcome the
    #: client cannot know
    lost_answers: dict[str, int] = field(default_factory=dict)
    #: the session expires when one of these calls arrives (XML-RPC method name or `"<HTTP method>
    #: <path>"`): that call and every later one are refused as with `expired_credentials` (a
    #: session that expires in the middle of a command, at a known call)
    expire_at: set[str] = field(default_factory=set)
    #: the trial-network manager's deploy pipeline fails with this console text (tui.sim.manager_api)
    manager_fail_activation: str = ""
    #: simulated seconds the manager's deploy pipeline takes on top of its own (a slow activation)
    manager_activation_seconds: float = 0.0
    #: the manager's deploy pipeline waits until this is set (at most HOLD_LIMIT_S): an activation
    #: that a test keeps going without slowing the site, then releases
    manager_hold: threading.Event | None = None


@dataclass
class SimConfig:
    """How an embedded site is made: platform version, scenario, extra VMs, time scale, database."""

    one_version: str = "7.0.0"
    time_scale: float = 1.0
    scenario: str = "fresh"
    extra_vms: int = 0
    seed: int = 7
    #: the database backend oned runs on: "sqlite" (the platform's default) or "mysql"; it decides
    #: how the VM pool's query argument is answered (tui.sim.vm_query) and whether a page at a
    #: negative offset is refused (tui.sim.rpc_context.filter_pool)
    db_backend: str = "sqlite"

    def __post_init__(self) -> None:
        if self.db_backend not in ("sqlite", "mysql"):
            raise ValueError(f"unknown db_backend {self.db_backend!r}: sqlite or mysql")


class SimSite:
    """The whole simulated cloud. Lock `site.lock` around every read or change."""

    def __init__(self, config: SimConfig, state_dir: Path, naming: NamingProfile = DEFAULT_NAMING) -> None:
        self.config = config
        self.state_dir = state_dir
        self.naming = naming
        self.faults = Faults()
        self.lock = threading.RLock()
        self.rng = random.Random(config.seed)
        self.users: dict[int, SimUser] = {}
        self.groups: dict[int, SimGroup] = {}
        self.hosts: dict[int, SimHost] = {}
        self.datastores: dict[int, SimDatastore] = {}
        self.vnets: dict[int, SimVnet] = {}
        self.images: dict[int, SimImage] = {}
        self.templates: dict[int, SimVmTemplate] = {}
        self.vms: dict[int, SimVm] = {}
        self.marketplaces: dict[int, SimMarketplace] = {}
        self.marketapps: dict[int, SimMarketApp] = {}
        self.documents: dict[int, SimDocument] = {}
        self.acls: dict[int, SimAcl] = {}
        #: the route managers' APIs of route-manager VMs, by VM ID (tui.sim.route_manager)
        self.route_managers: dict[int, Any] = {}
        #: marketplace HTTP records by marketplace URL path prefix ("" for the main one)
        self.market_records: dict[str, list[dict[str, Any]]] = {}
        #: monitors each marketplace app was missing from its marketplace's answer
        #: (`MarketPlaceAppPool::map_check`, tui.sim.market_monitor)
        self.market_missing: dict[int, int] = {}
        #: whether the periodic marketplace monitoring is scheduled (tui.sim.market_monitor)
        self.market_monitoring = False
        #: the oned.conf values served by one.system.config
        self.system_config: dict[str, str] = {}
        self._ids: dict[str, itertools.count[int]] = {}
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._event_seq = itertools.count()
        #: the event clock: real time plus what run_next_event and advance_clock skipped; a test
        #: holds it (tui.timing.Clock, the same kind as the procedures' clock)
        self._time = Clock()
        #: set by the server once it listens: base URL such as http://127.0.0.1:PORT
        self.base_url = ""
        #: rendered XML per VM id, owned by tui.sim.xml_render (keyed by the VM's revision)
        self.render_cache: dict[int, Any] = {}
        #: the bare sites repository, the component library and the demo vault password file
        #: (tui.sim.repos.seed_site_repositories fills them while seeding)
        self.sites_repo: Path | None = None
        self.library_repo: Path | None = None
        self.vault_password_file: Path | None = None
        #: set once the repositories exist (at once, unless seeded in the background), or building
        #: them failed (then with the error)
        self.repositories_ready = threading.Event()
        self.repositories_error: BaseException | None = None
        #: the thread building them in the background (None: built inline), perhaps not started
        #: yet (tui.sim.repos.request_repositories starts it)
        self.repositories_build: threading.Thread | None = None
        #: the trial-network manager's own records (tui.sim.manager_api.SimManager), made on first use
        self.manager: Any = None

    # ids and time -------------------------------------------------------------------------
    def next_id(self, kind: str, start: int = 0) -> int:
        counter = self._ids.get(kind)
        if counter is None:
            counter = self._ids[kind] = itertools.count(start)
        return next(counter)

    def reserve_ids(self, kind: str, above: int) -> None:
        """Make the next id of `kind` at least `above + 1` (after seeding objects by hand)."""
        self._ids[kind] = itertools.count(above + 1)

    def after(self, sim_seconds: float, action: Callable[[], None]) -> None:
        """Run `action` (under the lock) once `sim_seconds` of simulated time have passed."""
        due = self._clock() + sim_seconds * self.config.time_scale
        heapq.heappush(self._events, (due, next(self._event_seq), action))

    def advance(self) -> None:
        """Run every event that is due. Called at the start of every request."""
        with self.lock:
            now = self._clock()
            while self._events and self._events[0][0] <= now:
                _, _, action = heapq.heappop(self._events)
                action()

    def pending_events(self) -> int:
        return len(self._events)

    def run_next_event(self) -> bool:
        """Run the earliest event now, however far ahead it is due: a jump of simulated time for
        seeding scenarios. False when nothing is scheduled."""
        with self.lock:
            if not self._events:
                return False
            due, _, action = heapq.heappop(self._events)
            # the site's clock jumps to the event's time, so what it schedules keeps its order
            self._time.advance(max(0.0, due - self._time.monotonic()))
            action()
            return True

    def hold_clock(self) -> None:
        """Stop the site's event clock where it is: nothing time-driven happens (an image stays
        LOCKED, a VM stays in its boot) until `advance_clock`, `run_next_event` or `release_clock`.
        A test's known point, instead of a site slowed down to make the window wide enough."""
        self._time.stop()

    def release_clock(self) -> None:
        """Let a held event clock run again from where it stands (what is due runs at the next request)."""
        self._time.resume()

    def advance_clock(self, sim_seconds: float) -> None:
        """Move the event clock `sim_seconds` of simulated time forward and run what is then due."""
        self._time.advance(sim_seconds * self.config.time_scale)
        self.advance()

    def _clock(self) -> float:
        """The site's event clock (seconds, monotonic)."""
        return self._time.monotonic()

    # authentication ----------------------------------------------------------------------
    def authenticate(self, username: str, password: str) -> SimUser | None:
        if self.faults.expired_credentials:
            return None
        for user in self.users.values():
            if user.name == username and user.password == password and user.enabled:
                return user
        return None

    def user_by_name(self, name: str) -> SimUser | None:
        return next((u for u in self.users.values() if u.name == name), None)

    def lists_descending(self) -> bool:
        """Whether pools list newest first: API_LIST_ORDER DESC, its default when oned.conf does not
        set it (src/template/OpenNebulaTemplate.cc 384 at release-7.0.2; RequestManagerPoolInfoFilter.cc
        228-245 applies it to every pool; a 7.0.2 frontend lists datastores 2, 1, 0)."""
        return self.system_config.get("API_LIST_ORDER", "DESC").strip().upper() == "DESC"

    def should_fail(self) -> bool:
        return self.faults.fail_rate > 0 and self.rng.random() < self.faults.fail_rate
