"""What the site holds after a setup run, read back through the real clients and git: the
toolkit's service templates, images, services, the cloud user's keys, the database VMs' verdicts
and the site branch's commits and core.yaml. Tests compare two readings to prove nothing doubled."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tui.adapters.vault import VaultPassword, decrypt_text, is_vault_text
from tui.domain.services import SERVICE_DONE
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.toolkit.service import list_toolkit_templates
from tui.settings import Settings
from tui.sim.server import SimServer


@dataclass(frozen=True)
class Observed:
    toolkit_templates: int
    toolkit_images: int
    tagged_images: int
    services: tuple[tuple[int, str], ...]
    user_keys: int
    db_vms: tuple[tuple[int, str, bool], ...]
    branch_commits: int
    core_yaml: str
    #: every image and ACL rule of the cloud (component appliances and their grants included)
    images: int = 0
    acl_rules: int = 0
    #: disk0 of the live toolkit's object store VM, MB (0: no such VM)
    objectstore_disk_mb: int = 0

    @property
    def live_services(self) -> tuple[tuple[int, str], ...]:
        return tuple(s for s in self.services if s[1] != "DONE")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def observe(server: SimServer, branch: str, password: str) -> Observed:
    async def read() -> Observed:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            naming = site.naming
            templates, images, services, users, rules = await asyncio.gather(
                list_toolkit_templates(site), site.cloud.list_images(), site.flow.list_services(),
                site.cloud.list_users(), site.cloud.acl_list())
            toolkit = [i for i in images if i.name.startswith(naming.toolkit_appliance_name)]
            tagged = [i for i in toolkit if i.attributes.get(naming.appliance_name_attribute)]
            live = [s for s in services if s.state != SERVICE_DONE]
            ids = tuple(vm for s in live for r in s.roles if r.name in naming.document_db_roles for vm in r.vm_ids)
            inventory = await load_inventory(site, record_vm_ids=ids)
            user = next(u for u in users if u.name == "tkauto")
            store = [vm for s in live for r in s.roles if r.name == naming.role_objectstore for vm in r.vm_ids]
            disk_mb = 0
            if store:
                disk = next(d for d in (await site.cloud.vm_info(store[0])).disks if d.disk_id == 0)
                disk_mb = disk.size_mb or 0
        finally:
            await site.close()
        repo = server.site.sites_repo
        count = _git(repo, "rev-list", "--count", branch)
        text = _git(repo, "show", f"{branch}:{branch}/core.yaml")
        plain = ""
        if text.returncode == 0 and is_vault_text(text.stdout):
            plain = decrypt_text(text.stdout, VaultPassword.from_text(password, "test"))
        return Observed(len(templates), len(toolkit), len(tagged),
                        tuple((s.id, s.state_name) for s in services), len(user.ssh_public_keys),
                        tuple((r.id, r.host_name, r.flagged) for r in inventory.db_vms if r.id in ids),
                        int(count.stdout.strip() or 0) if count.returncode == 0 else 0,
                        plain if text.returncode == 0 else "", len(images), len(rules), disk_mb)
    return asyncio.run(read())
