"""`sitetk toolkit vms` and `sitetk toolkit key`: the recorded deployment read back live, the
automation VM's public key, and (`key --grant`, operation 5) the `GrantKey` operation through
the CLI runner (its JSON answer nested under `grant`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from functools import partial
from typing import Any

from tui.cli.common import EXIT_OK, UsageError, emit_json, follow
from tui.cli.runner import run_cli
from tui.domain.site_record import SiteRecord, record_to_json
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.operation_stream import stream_run
from tui.procedures.site_record import load_site_record, save_site_record, set_aside_unreadable
from tui.procedures.toolkit.grant_key import GrantKey, KeyGranted
from tui.procedures.toolkit.instantiate import capture_automation_key
from tui.procedures.toolkit.service import (
    platform_version,
    read_automation_key,
    record_for_service,
    refresh_site_record,
    toolkit_service,
    toolkit_vms,
)


async def _record(args: argparse.Namespace, site: SiteConnection) -> SiteRecord:
    """The recorded deployment (latest, or --service), refreshed from the service and saved;
    with --rebuild-record, an unreadable record is set aside first and the deployment is taken
    from the cloud (--service, else the live toolkit service)."""
    service_id = getattr(args, "service", None)
    if getattr(args, "rebuild_record", False):
        aside = set_aside_unreadable(site.settings)
        if aside is not None:
            print(f"note: the unreadable site record was set aside as {aside}", file=sys.stderr)
        if service_id is None and load_site_record(site.settings) is None:
            service = toolkit_service(tuple(await site.flow.list_services()), site.naming)
            if service is None:
                raise SiteError("No toolkit service to record", "OneFlow has no live service with the toolkit's "
                                "roles: deploy it (`sitetk toolkit deploy`) or name one with --service ID.")
            service_id = service.id
    record = load_site_record(site.settings, service_id)
    if record is None:
        if service_id is None:
            raise UsageError("no toolkit deployment recorded for this site: deploy it (`sitetk toolkit deploy`) or "
                             "name an existing service with --service ID")
        service = await site.flow.get_service(service_id)  # a deployment made elsewhere: record it now
        username = service.input_values.get(site.naming.input_name(f"{site.naming.role_automation}_cloud_username"), "")
        record = record_for_service(site, service, -1, "", await platform_version(site), username)
    record = await refresh_site_record(site, record)
    save_site_record(site.settings, record)
    return record


async def vms_command(args: argparse.Namespace, site: SiteConnection) -> int:
    record = await _record(args, site)
    vms = await toolkit_vms(site, record)
    if args.json:
        emit_json({"ok": True, "service_id": record.service_id, "state": record.state,
                   "record": record_to_json(record), "vms": [vm.as_json() for vm in vms]})
        return EXIT_OK
    print(f"service {record.service_id} {record.service_name!r} {record.state}")
    print(f"  {'ROLE':<12} {'VM':>5}  {'NAME':<34} {'STATE':<5} {'READY':<5} {'HOST':<20} IPS")
    for vm in vms:
        print(f"  {vm.role:<12} {vm.vm_id:>5}  {vm.name:<34} {vm.state:<5} {'yes' if vm.ready else 'no':<5} "
              f"{vm.host or '-':<20} {', '.join(vm.ips) or '-'}")
    return EXIT_OK


async def key_command(args: argparse.Namespace, site: SiteConnection) -> int:
    record = await _record(args, site)
    if not record.automation_public_key:
        found = await read_automation_key(site, record)
        if found.problem:
            raise SiteError("The automation VM published an invalid public key", found.problem)
        if found.key is None:
            await follow(stream_run(partial(capture_automation_key, site, record, timeout=args.wait,
                                            poll_interval=args.poll)), args.json)
        else:
            record = _with_key(record, found.key.line)
            save_site_record(site.settings, record)
        record = load_site_record(site.settings, record.service_id) or record
    vm = record.automation_vm
    key = record.automation_public_key
    payload: dict[str, Any] = {"ok": True, "service_id": record.service_id,
                               "vm": {"vm_id": vm.vm_id, "name": vm.name, "ips": list(vm.ips)} if vm else None,
                               "public_key": key, "cloud_username": record.cloud_username}
    if not args.json:
        print(f"automation VM {vm.vm_id if vm else '?'} {vm.name if vm else ''} ({', '.join(vm.ips) if vm else '-'})")
        print(key)
    if not args.grant:
        if args.json:
            emit_json(payload)
        return EXIT_OK
    user = args.user or record.cloud_username
    if not user:
        raise UsageError("no cloud user to give the key to: the deployment records none; pass --user NAME")

    def nest(answer: dict[str, Any]) -> None:  # the grant's answer inside the key's
        payload["grant"] = {k: v for k, v in answer.items() if k not in ("ok", "dry_run")}
        emit_json({**payload, **({"dry_run": True} if answer.get("dry_run") else {})})

    def describe(granted: KeyGranted) -> str:
        return f"user {granted.user_name}: " + ("key added" if granted.changed else "already had the key, unchanged")

    return await run_cli(args, site, GrantKey(key, user, record), answer_to=nest, describe=describe)


def _with_key(record: SiteRecord, line: str) -> SiteRecord:
    return replace(record, automation_public_key=line)

