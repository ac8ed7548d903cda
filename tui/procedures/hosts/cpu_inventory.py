"""Host CPU inventory for the document database: every host with its verdict, every database VM.

Reads only (no preview, no audit). `load_inventory(site)` answers the operator's two questions at
a glance: which hosts can run the document database (monitored, x86_64 with SSE4.2 and AVX; the
verdict comes from `tui.domain.cpu.evaluate_host`: a disabled, offline, failed or unmonitored host
is "unavailable", never "compatible"), and whether every VM that runs it sees a suitable CPU. A VM
is at risk when its verdict says the database cannot run, and also when the verdict is unknown
while the VM is not ready. Each verdict carries what was checked, what was found and the fix
(`HostInventory.fix(row)` names the move and its target).

Document-database VMs are the VMs whose role (ROLE_NAME, or the `<role>_<n>_(service_<id>)` name)
is one of `naming.document_db_roles`, the VMs carrying the attribute `naming.document_db_attribute`
(YES/TRUE/1, in the user template or the template), and the VMs the latest site record of the
toolkit deployment lists for those roles. They are found by reading the whole VM pool in pages
and judging each VM here (`document_db_candidates`): the platform's pool query is refused on
sqlite and matches substrings on MySQL. Only the VMs whose body mentions a database role, the
attribute or a recorded id are built into models, so a site of 50,000 VMs costs the transfer and
an XML parse, not 50,000 models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from tui.domain.cpu import (
    VM_CHECKED,
    HostCpu,
    HostRanking,
    HostVerdict,
    HostVerdictKind,
    VmVerdict,
    VmVerdictKind,
    evaluate_host,
    rank_hosts,
    vm_verdict,
)
from tui.domain.hosts import Host
from tui.domain.naming import NamingProfile
from tui.domain.vm_detail import VmDetail
from tui.domain.vm_scan import VmPrefilter
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.site_record import load_site_record

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings

_TRUE_WORDS = frozenset({"YES", "TRUE", "1"})


@dataclass(frozen=True)
class HostRow:
    """One host with its CPU facts and its verdict for the document database."""

    host: Host
    cpu: HostCpu
    verdict: HostVerdict

    @property
    def id(self) -> int:
        return self.host.id

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def sse4_2(self) -> bool | None:
        return self.cpu.has_sse4_2

    @property
    def avx(self) -> bool | None:
        return self.cpu.has_avx

    @property
    def known_good(self) -> bool:
        return self.verdict.known_good

    @property
    def compatible(self) -> bool:
        return self.verdict.kind is HostVerdictKind.COMPATIBLE

    def as_json(self) -> dict[str, Any]:
        host = self.host
        return {
            "id": host.id,
            "name": host.name,
            "state": host.state_name,
            "arch": host.arch,
            "model_name": host.model_name,
            "kvm_cpu_model": host.kvm_cpu_model,
            "known_good_model": self.known_good,
            "sse4_2": self.sse4_2,
            "avx": self.avx,
            "free_cpu": host.free_cpu,
            "max_cpu": host.max_cpu,
            "free_cpu_percent": round(host.free_cpu_percent, 1),
            "free_memory_mib": host.free_mem_mib,
            "max_memory_mib": host.max_mem_kb // 1024,
            "running_vms": host.running_vms,
            "verdict": self.verdict.kind.value,
            "verdict_word": self.verdict.word,
            "cpu_verdict": (self.verdict.cpu_kind or self.verdict.kind).value,
            "checked": self.verdict.checked,
            "reasons": list(self.verdict.reasons),
            "fix": self.verdict.fix,
        }


@dataclass(frozen=True)
class DbVmRow:
    """A VM that runs the document database, with its CPU model, its host and a verdict."""

    vm: VmDetail
    #: why it counts as a database VM: "role manager", "attribute DOCUMENT_DB", "site record"
    identified_by: str
    host: HostRow | None
    verdict: VmVerdict

    @property
    def id(self) -> int:
        return self.vm.id

    @property
    def name(self) -> str:
        return self.vm.name

    @property
    def cpu_model(self) -> str:
        return self.vm.cpu_model

    @property
    def ready(self) -> bool:
        return self.vm.ready

    @property
    def at_risk(self) -> bool:
        """The database may not run: a model or host that lacks AVX or SSE4.2, host-passthrough, or
        an unknown verdict while the VM is not ready (nothing shows the database runs)."""
        return self.verdict.at_risk or (self.verdict.kind is VmVerdictKind.UNKNOWN and not self.vm.ready)

    @property
    def risk(self) -> str:
        """Why the VM counts as at risk ("" when it does not)."""
        if self.verdict.at_risk:
            return self.verdict.reason
        if self.at_risk:
            return (f"{self.verdict.reason}; and the VM is not ready (application {self.application}): nothing shows "
                    "its database runs, so an unknown verdict counts as at risk")
        return ""

    @property
    def flagged(self) -> bool:
        """Anything but FINE: the move (operation 7) would set a model the database can use."""
        return self.verdict.kind is not VmVerdictKind.FINE

    @property
    def host_id(self) -> int | None:
        return self.vm.summary.host_id

    @property
    def host_name(self) -> str:
        return self.vm.summary.host

    @property
    def application(self) -> str:
        """What the appliance reports: "ready", "not ready" (running) or the VM state."""
        if self.vm.ready:
            return "ready"
        if self.vm.summary.running:
            return "not ready"
        return self.vm.summary.state_name

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "identified_by": self.identified_by,
            "state": self.vm.summary.status,
            "host_id": self.host_id,
            "host": self.host_name,
            "cpu_model": self.cpu_model,
            "ready": self.ready,
            "verdict": self.verdict.kind.value,
            "checked": VM_CHECKED + " and READY=YES",
            "reason": self.verdict.reason,
            "at_risk": self.at_risk,
            "risk": self.risk,
        }


@dataclass(frozen=True)
class HostInventory:
    hosts: tuple[HostRow, ...]
    db_vms: tuple[DbVmRow, ...]
    known_good: tuple[str, ...] = ()
    #: compatible targets above the free-capacity thresholds, best first
    ranking: HostRanking = field(default_factory=lambda: HostRanking((), ()))
    #: things worth knowing that did not stop the inventory (an unreadable site record, ...)
    notes: tuple[str, ...] = ()
    #: VMs read to find the database VMs: the whole pool but DONE ones (each once)
    vms_searched: int = 0

    @property
    def at_risk(self) -> tuple[DbVmRow, ...]:
        return tuple(row for row in self.db_vms if row.at_risk)

    @property
    def flagged(self) -> tuple[DbVmRow, ...]:
        return tuple(row for row in self.db_vms if row.flagged)

    @property
    def compatible_hosts(self) -> tuple[HostRow, ...]:
        return tuple(row for row in self.hosts if row.compatible)

    def host(self, host_id: int | None) -> HostRow | None:
        return next((row for row in self.hosts if row.id == host_id), None)

    def db_vm(self, vm_id: int) -> DbVmRow | None:
        return next((row for row in self.db_vms if row.id == vm_id), None)

    def fix(self, row: DbVmRow) -> str:
        """What to do about a flagged VM: the move, with its target when one exists ("" when FINE)."""
        if not row.flagged:
            return ""
        best = self.ranking.eligible[0].host if self.ranking.eligible else None
        if best is None:
            return (f"no compatible host with enough free capacity: `sitetk hosts move {row.id} --passthrough` "
                    "(key m on the hosts screen) uses host-passthrough, which is discouraged")
        return (f"move it: `sitetk hosts move {row.id}` (key m on the hosts screen) takes it to host {best.id} "
                f"{best.name} with CPU model {best.kvm_cpu_model}")

    def db_vm_json(self, row: DbVmRow) -> dict[str, Any]:
        return {**row.as_json(), "fix": self.fix(row)}

    def as_json(self) -> dict[str, Any]:
        return {
            "hosts": [row.as_json() for row in self.hosts],
            "document_db_vms": [self.db_vm_json(row) for row in self.db_vms],
            "known_good_models": list(self.known_good),
            "targets": [ranked.host.id for ranked in self.ranking.eligible],
            "at_risk": [row.id for row in self.at_risk],
            "notes": list(self.notes),
            "vms_searched": self.vms_searched,
        }


def host_rows(hosts: Iterable[Host], known_good: Sequence[str]) -> tuple[HostRow, ...]:
    rows = []
    for host in sorted(hosts, key=lambda h: h.id):
        rows.append(HostRow(host, HostCpu.from_host(host), evaluate_host(host, known_good)))
    return tuple(rows)


def rank_targets(hosts: Iterable[Host], settings: "Settings", *, exclude_host_id: int | None = None) -> HostRanking:
    """Compatible hosts with enough free CPU (percent of the host's capacity) and memory, best first."""
    return rank_hosts(hosts, min_free_cpu_percent=settings.min_free_cpu_percent,
                      min_free_mem_mib=settings.min_free_memory_mib, known_good=settings.known_good_cpu_models,
                      exclude_host_id=exclude_host_id)


def document_db_reason(vm: VmDetail, naming: NamingProfile, record_ids: Iterable[int] = ()) -> str:
    """Why `vm` runs the document database ("" when it does not)."""
    role = vm.summary.role_name or vm.user_template.get("ROLE_NAME") or vm.template.get("ROLE_NAME")
    if role and role in naming.document_db_roles:
        return f"role {role}"
    attribute = naming.document_db_attribute
    if attribute:
        flag = vm.user_template.get(attribute) or vm.template.get(attribute)
        if flag.strip().upper() in _TRUE_WORDS:
            return f"attribute {attribute}"
    if vm.id in set(record_ids):
        return "site record"
    return ""


def db_vm_rows(vms: Iterable[VmDetail], hosts: Sequence[HostRow], naming: NamingProfile,
               known_good: Sequence[str], record_ids: Iterable[int] = ()) -> tuple[DbVmRow, ...]:
    record_ids = tuple(record_ids)
    by_id = {row.id: row for row in hosts}
    rows = []
    for vm in sorted(vms, key=lambda v: v.id):
        reason = document_db_reason(vm, naming, record_ids)
        if not reason:
            continue
        host = by_id.get(vm.summary.host_id) if vm.summary.host_id is not None else None
        verdict = vm_verdict(vm.cpu_model, host.cpu if host is not None else None, known_good=known_good)
        rows.append(DbVmRow(vm, reason, host, verdict))
    return tuple(rows)


def document_db_prefilter(naming: NamingProfile, record_vm_ids: Iterable[int] = ()) -> VmPrefilter:
    """What a VM body must show to be worth reading as a database VM: a superset of
    `document_db_reason` (a role name inside ROLE_NAME or the VM name, the attribute present, a
    site record's VM id)."""
    return VmPrefilter(texts=tuple(dict.fromkeys(role for role in naming.document_db_roles if role)),
                       attributes=(naming.document_db_attribute,) if naming.document_db_attribute else (),
                       ids=tuple(dict.fromkeys(record_vm_ids)))


async def document_db_candidates(site: "SiteConnection",
                                  record_vm_ids: Iterable[int] = ()) -> tuple[tuple[VmDetail, ...], int]:
    """The VMs that run the document database (`document_db_reason`), from the whole VM pool read
    in pages and judged here with exact equality, and how many VMs were read. The platform's pool
    query is not used: sqlite, its default backend, refuses it, and MySQL matches it as a
    substring of a JSON path (tui.domain.vm_scan). A page that cannot be read raises (SiteError):
    never "none found"."""
    record_vm_ids = tuple(record_vm_ids)
    wanted = document_db_prefilter(site.naming, record_vm_ids)
    if wanted.empty:
        return (), 0
    scan = await site.cloud.scan_vms_detail(wanted)
    return tuple(vm for vm in scan.vms if document_db_reason(vm, site.naming, record_vm_ids)), scan.listed


def record_vm_ids_of(site: "SiteConnection") -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The VM ids the latest site record lists for the database roles, and notes (an unreadable
    record is reported, not fatal: the roles and the attribute still find the VMs)."""
    try:
        record = load_site_record(site.settings)
    except SiteError as error:
        return (), (f"{error.title}: {error.detail}",)
    if record is None:
        return (), ()
    ids: list[int] = []
    for role_name in site.naming.document_db_roles:
        role = record.role(role_name)
        if role is not None:
            ids += role.vm_ids
    return tuple(ids), ()


async def load_inventory(site: "SiteConnection", *, record_vm_ids: Iterable[int] | None = None) -> HostInventory:
    """Every host with its verdict and every document-database VM with its own.

    `record_vm_ids`: VMs a toolkit deployment lists for the database roles; None reads them
    from the latest site record of this endpoint (`tui.procedures.site_record`).
    """
    settings = site.settings
    known_good = settings.known_good_cpu_models
    notes: tuple[str, ...] = ()
    if record_vm_ids is None:
        record_vm_ids, notes = record_vm_ids_of(site)
    record_vm_ids = tuple(record_vm_ids)
    hosts, (vms, searched) = await gather(site.cloud.list_hosts(), document_db_candidates(site, record_vm_ids))
    rows = host_rows(hosts, known_good)
    return HostInventory(
        hosts=rows,
        db_vms=db_vm_rows(vms, rows, site.naming, known_good, record_vm_ids),
        known_good=known_good,
        ranking=rank_targets(hosts, settings),
        notes=notes,
        vms_searched=searched,
    )
