"""The verbs of `sitetk hosts` (registered in tui.cli.hosts, which imports this module only when
one of them runs).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tui.cli.common import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, emit_json, table_console, usage
from tui.cli.runner import run_cli
from tui.domain.cpu import VM_CHECKED
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.cpu_inventory import DbVmRow, HostInventory, HostRow, load_inventory
from tui.procedures.hosts.move_operation import MoveOperation, MoveSet, MoveVms, RedeployVm
from tui.procedures.hosts.move_plan import MoveTimeouts

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table


def _flag(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "NO")


def _mib(mib: int) -> str:
    return f"{mib / 1024:.1f}G" if mib >= 1024 else f"{mib}M"


def hosts_table(inventory: HostInventory) -> Table:
    from rich.table import Table  # imported when a table is printed: ~50 ms of CPU (issue 23)
    from rich.text import Text

    table = Table(title="Hosts", title_justify="left", box=None, header_style="bold", pad_edge=False)
    for name, justify in (("ID", "right"), ("NAME", "left"), ("STATE", "left"), ("ARCH", "left"),
                          ("KVM_CPU_MODEL", "left"), ("SSE4.2", "left"), ("AVX", "left"), ("FREE CPU", "right"),
                          ("FREE MEM", "right"), ("VMS", "right"), ("VERDICT", "left"), ("MODEL NAME", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in inventory.hosts:
        host = row.host
        model = host.kvm_cpu_model + (" *" if row.known_good else "")
        table.add_row(str(host.id), Text(host.name), host.state_name, Text(host.arch or "?"), Text(model or "?"),
                      _flag(row.sse4_2), _flag(row.avx), f"{host.free_cpu / 100:g}/{host.max_cpu / 100:g}",
                      _mib(host.free_mem_mib), str(host.running_vms), Text(_host_verdict(row)), Text(host.model_name))
    return table


def _host_verdict(row: HostRow) -> str:
    verdict = row.verdict
    text = verdict.word + (f": {'; '.join(verdict.reasons)}" if verdict.reasons else "")
    return text + (f" (fix: {verdict.fix})" if verdict.fix else "")


def db_vms_table(inventory: HostInventory) -> Table:
    from rich.table import Table  # imported when a table is printed: ~50 ms of CPU (issue 23)
    from rich.text import Text

    table = Table(title="Document-database VMs", title_justify="left", box=None, header_style="bold", pad_edge=False)
    for name in ("ID", "NAME", "WHY", "STATE", "HOST", "CPU MODEL", "APP", "VERDICT"):
        table.add_column(name, justify="right" if name == "ID" else "left")
    for row in inventory.db_vms:
        verdict = ("AT RISK, " if row.at_risk else "") + row.verdict.kind.value + (
            f": {row.verdict.reason}" if row.verdict.reason else "")
        host = f"{row.host_id} {row.host_name}" if row.host_id is not None else "-"
        table.add_row(str(row.id), Text(row.name), row.identified_by, row.vm.summary.state_name, Text(host),
                      Text(row.cpu_model or "(none)"), row.application, Text(verdict))
    return table


def _print(*renderables: Any) -> None:
    console = table_console()
    for renderable in renderables:
        console.print(renderable)


# list and check ---------------------------------------------------------------------------------


def _notes(inventory: HostInventory, as_json: bool) -> None:
    if not as_json:
        for note in inventory.notes:
            print(f"warning: {note}", file=sys.stderr)


async def list_command(args: argparse.Namespace, site: SiteConnection) -> int:
    inventory = await load_inventory(site)
    _notes(inventory, args.json)
    if args.json:
        emit_json({"ok": True, **inventory.as_json()})
    else:
        _print(hosts_table(inventory), "", db_vms_table(inventory))
        known = ", ".join(inventory.known_good)
        print(f"\n* known-good model ({known}); ? the host does not report it")
    return EXIT_OK


def _risk_lines(row: DbVmRow, inventory: HostInventory) -> list[str]:
    lines = [f"VM {row.id} {row.name}: {row.verdict.kind.value}: {row.risk}"]
    fix = inventory.fix(row)
    if fix:
        lines.append(f"    fix: {fix}")
    return lines


async def check_command(args: argparse.Namespace, site: SiteConnection) -> int:
    inventory = await load_inventory(site)
    _notes(inventory, args.json)
    at_risk = inventory.at_risk
    if args.json:
        emit_json({"ok": not at_risk, "document_db_vms": [inventory.db_vm_json(row) for row in inventory.db_vms],
                   "at_risk": [row.id for row in at_risk], "notes": list(inventory.notes),
                   "targets": [ranked.host.id for ranked in inventory.ranking.eligible],
                   "vms_searched": inventory.vms_searched})
    else:
        if not inventory.db_vms:
            print(f"No document-database VM among the {inventory.vms_searched} VMs listed (all but DONE; by ROLE_NAME "
                  f"or role in the VM name: {', '.join(site.naming.document_db_roles)}; attribute "
                  f"{site.naming.document_db_attribute}=YES; VMs of the site record).")
        else:
            _print(db_vms_table(inventory))
            print(f"\nChecked: {VM_CHECKED}, and READY=YES (an unknown verdict on a VM that is not ready counts "
                  "as at risk).")
        if at_risk:
            print("\nAt risk:")
            for row in at_risk:
                for line in _risk_lines(row, inventory):
                    print(f"  {line}")
            targets = ", ".join(f"{r.host.id} {r.host.name}" for r in inventory.ranking.eligible) or "none"
            print(f"Targets (monitored, compatible, enough free capacity): {targets}.")
    return EXIT_FINDINGS if at_risk else EXIT_OK


# move and redeploy ------------------------------------------------------------------------------


def _timeouts(args: argparse.Namespace) -> MoveTimeouts:
    base = MoveTimeouts()
    if args.timeout is None:
        return base
    return MoveTimeouts(undeploy=args.timeout, running=args.timeout, ready=args.timeout,
                        poll_interval=base.poll_interval)


async def _run_moves(args: argparse.Namespace, site: SiteConnection, operation: MoveOperation,
                     plan: MoveSet | None = None) -> int:
    if plan is None:
        plan = await operation.plan(site)
    return await run_cli(args, site, operation, plan=plan, extra=plan.as_json(),
                         describe=lambda moved: "\n".join(moved.lines()))


async def move_command(args: argparse.Namespace, site: SiteConnection) -> int:
    if args.all_flagged == (args.vm_id is not None):
        return usage("give either a VM_ID or --all-flagged", args.json)
    if not args.all_flagged:
        return await _run_moves(args, site, MoveVms((args.vm_id,), args.host, args.passthrough, args.hard,
                                                    _timeouts(args)))
    if args.host is not None or args.passthrough:
        return usage("--host and --passthrough apply to one VM, not to --all-flagged", args.json)
    operation = MoveVms(None, hard=args.hard, timeouts=_timeouts(args))
    plan = await operation.plan(site)
    skipped = plan.skipped_json()
    if not args.json:
        for item in skipped:
            print(f"skipping VM {item['vm_id']} {item['name']}: {item['reason']}", file=sys.stderr)
    if not plan.plans:
        if args.json:
            emit_json({"ok": not skipped, "plans": [], "skipped": skipped})
        else:
            print("No flagged document-database VM to move." if not skipped else "Nothing can be moved.")
        return EXIT_OK if not skipped else EXIT_FAILED
    return await _run_moves(args, site, operation, plan)


async def redeploy_command(args: argparse.Namespace, site: SiteConnection) -> int:
    return await _run_moves(args, site, RedeployVm(args.vm_id, args.host, args.cpu_model, _timeouts(args)))
