"""`sitetk toolkit disk`: the object store's data disk (disk0 of its VM), shown, and with `--apply`
grown to `--size` (default 30G, the existing installer's) by the `ResizeObjectstoreDisk`
operation through the CLI runner (preview with `onevm disk-resize`, `--dry-run`, `--yes`,
`--json`, read-only refusal, audit record). A disk already at the size is left alone (exit 0).
"""

from __future__ import annotations

import argparse

from tui.cli.common import EXIT_OK, emit_json
from tui.cli.runner import run_cli
from tui.domain.disk_size import human_mb
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.toolkit.objectstore_disk import DiskPlan, DiskResized, ResizeObjectstoreDisk


def _show(plan: DiskPlan) -> None:
    room = plan.room
    print(f"object store VM {plan.vm_id} {plan.vm_name!r} ({plan.vm_state}), service {plan.service_id}")
    print(f"  disk {plan.disk_id}: {human_mb(plan.current_mb)}; wanted {human_mb(plan.wanted_mb)}")
    if room is not None:
        print(f"  lives in {room.kind} datastore {room.datastore_id} {room.name!r}: {human_mb(room.free_mb)} free")
    else:
        print(f"  datastore: not checked ({plan.room_note})")
    if plan.already:
        print("  nothing to do: the disk is at the size or more")
    elif plan.resizing:
        print("  a resize is under way: `--apply` waits for it")
    else:
        for problem in plan.problems:
            print(f"  cannot resize now: {problem}")
        print(f"  to resize: sitetk toolkit disk --size {plan.cli().rsplit(' ', 1)[-1]} --apply   ({plan.cli()})")


async def disk_command(args: argparse.Namespace, site: SiteConnection) -> int:
    operation = ResizeObjectstoreDisk(args.size, args.service, wait_timeout=args.timeout, poll_interval=args.poll)
    plan = await operation.plan(site)
    if not args.apply and not args.dry_run:
        if args.json:
            emit_json({"ok": True, "plan": plan.as_json()})
        else:
            _show(plan)
        return EXIT_OK

    async def check(ready: DiskPlan) -> DiskPlan:
        if ready.problems:  # refused here, after the preview, before any question
            raise SiteError(f"Disk {ready.disk_id} of VM {ready.vm_id} cannot be resized now",
                            "\n".join(ready.problems) + "\nNothing was sent.")
        return ready

    def describe(result: DiskResized) -> str:
        if not result.changed:
            return f"VM {result.vm_id} disk {result.disk_id}: already {human_mb(result.size_mb)}, unchanged"
        return (f"VM {result.vm_id} disk {result.disk_id}: {human_mb(result.size_before_mb)} -> {human_mb(result.size_mb)} "
                f"in {result.seconds:.0f} s")

    def idle(ready: DiskPlan) -> str | None:
        return (f"VM {ready.vm_id} disk {ready.disk_id} is already {human_mb(ready.current_mb)}: nothing to do"
                if ready.already else None)

    return await run_cli(args, site, operation, plan=plan, prepare=check, describe=describe, nothing_to_do=idle,
                         timeout=None)
