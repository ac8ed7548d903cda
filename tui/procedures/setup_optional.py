"""The setup's optional steps: the DNS and route-manager appliances written into the site configuration.

Both appliances are optional site elements (spec "What the service does" 4); the operator
deploys them from the marketplace, and the setup writes what the site configuration needs from
the running VM, only when asked (`sitetk setup run --only dns|route-manager`, `d` on the step):

- DNS: the DNS VM's address first in `site_dns` (the name servers trial networks get; the
  others stay after it);
- route manager: `http://<VM address>:<port>` and the VM's token into the route-manager keys of
  core.yaml. The spec does not show the appliance's API nor where it keeps its token, so the
  names are settings of the naming profile (`extra`), with these defaults: the token in the VM's
  USER_TEMPLATE (else CONTEXT) attribute `ONEAPP_ROUTEMANAGER_TOKEN`, the port in
  `ONEAPP_ROUTEMANAGER_PORT` (default 8172), written to `site_routemanager.api_endpoint` and
  `site_routemanager.token`.

The token is registered with the redactor as soon as it is read: previews show it masked, the
audit log and progress never hold it, and it never reaches an argument list. The change is
core.yaml edited in memory, re-encrypted, checked and submitted (commit and push), as any edit.
Already written: nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from tui.adapters.vault import VaultPassword
from tui.errors import SiteError
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.git_repo import GitRepo
    from tui.domain.naming import NamingProfile
    from tui.procedures.connection import SiteConnection
    from tui.procedures.site_repo import SiteRef

DNS_KEY = "site_dns"
ROUTE_MANAGER_ENDPOINT_KEY = "site_routemanager.api_endpoint"
ROUTE_MANAGER_TOKEN_KEY = "site_routemanager.token"
ROUTE_MANAGER_TOKEN_ATTRIBUTE = "ONEAPP_ROUTEMANAGER_TOKEN"
ROUTE_MANAGER_PORT_ATTRIBUTE = "ONEAPP_ROUTEMANAGER_PORT"
ROUTE_MANAGER_PORT = "8172"


@dataclass(frozen=True)
class OptionalNames:
    """Where each value comes from and goes to (naming.extra overrides each)."""

    dns_key: str = DNS_KEY
    endpoint_key: str = ROUTE_MANAGER_ENDPOINT_KEY
    token_key: str = ROUTE_MANAGER_TOKEN_KEY
    token_attribute: str = ROUTE_MANAGER_TOKEN_ATTRIBUTE
    port_attribute: str = ROUTE_MANAGER_PORT_ATTRIBUTE
    default_port: str = ROUTE_MANAGER_PORT

    @classmethod
    def of(cls, naming: "NamingProfile") -> "OptionalNames":
        extra = naming.extra
        return cls(extra.get("dns_key", DNS_KEY), extra.get("route_manager_endpoint_key", ROUTE_MANAGER_ENDPOINT_KEY),
                   extra.get("route_manager_token_key", ROUTE_MANAGER_TOKEN_KEY),
                   extra.get("route_manager_token_attribute", ROUTE_MANAGER_TOKEN_ATTRIBUTE),
                   extra.get("route_manager_port_attribute", ROUTE_MANAGER_PORT_ATTRIBUTE),
                   extra.get("route_manager_port", ROUTE_MANAGER_PORT))


def dns_servers(value: Any) -> list[str]:
    return [part.strip() for part in str(value or "").split(",") if part.strip()]


def dns_value(current: Any, address: str) -> str:
    """site_dns with `address` first, the other servers kept after it."""
    return ",".join([address] + [s for s in dns_servers(current) if s != address])


def route_manager_endpoint(address: str, port: str) -> str:
    return f"http://{address}:{port}"


@dataclass(frozen=True)
class OptionalPlan:
    """What writing one optional appliance into core.yaml changes."""

    title: str
    site: "SiteRef"
    vm_label: str
    #: dotted path -> new value (the token among them; never shown)
    changes: tuple[tuple[str, Any], ...]
    preview_changes: tuple[Change, ...]
    sources: tuple[str, ...] = ()
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def is_noop(self) -> bool:
        return all(c.kind == "none" for c in self.preview_changes)

    def preview(self) -> Preview:
        changes = self.preview_changes
        if not self.is_noop:
            changes += (Change(f"commit and push {self.site.site_dir}/core.yaml to {self.site.branch} (checked first)",
                               f"git commit -m ... && git push origin {self.site.branch}", "update"),)
        return Preview(self.title, changes, warnings=self.sources)


async def _vm_address(site: "SiteConnection", vm_id: int) -> tuple[Any, str]:
    vm = await site.cloud.vm_info(vm_id)
    if not vm.summary.ips:
        raise SiteError(f"VM {vm.id} {vm.name} has no address yet", "Wait until it runs on the network, then run again.")
    return vm, vm.summary.ips[0]


async def plan_optional(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                        password: VaultPassword, kind: str, vm_id: int) -> OptionalPlan:
    """Read the appliance's VM and core.yaml; what writing it changes (nothing is changed)."""
    from tui.procedures.audit import REDACTOR
    from tui.procedures.site_config import load_site_config, preview_edit
    from tui.procedures.site_repo import locate_site, open_site

    names = OptionalNames.of(site.naming)
    vm, address = await _vm_address(site, vm_id)
    label = f"VM {vm.id} {vm.name}"
    async for _ in open_site(repo, branch, site_dir):
        pass
    ref = locate_site(repo, branch, site_dir)
    config = (await load_site_config(ref.path, password, site.naming)).config
    secrets: tuple[str, ...] = ()
    if kind == "dns":
        current = config.get(names.dns_key)
        wanted = dns_value(current, address)
        changes: tuple[tuple[str, Any], ...] = ((names.dns_key, wanted),)
        sources = (f"{names.dns_key}: the address of {label}, the DNS appliance",)
        title = f"Name server {address} ({label}) first in {names.dns_key}"
    else:
        values = dict(vm.user_template.scalars())
        context = dict(vm.context)
        token = values.get(names.token_attribute) or context.get(names.token_attribute, "")
        if not token:
            raise SiteError(f"{label} has not published its token",
                            f"Neither its USER_TEMPLATE nor its CONTEXT holds {names.token_attribute}: wait until the "
                            "appliance has started (or name the attribute in the naming profile's "
                            "route_manager_token_attribute), then run again.")
        REDACTOR.register(token)
        secrets = (token,)
        port = values.get(names.port_attribute) or context.get(names.port_attribute) or names.default_port
        endpoint = route_manager_endpoint(address, port)
        changes = ((names.endpoint_key, endpoint), (names.token_key, token))
        sources = (f"{names.endpoint_key}: the address of {label} and its port ({names.port_attribute} or {port}); "
                   f"{names.token_key}: its {names.token_attribute}",)
        title = f"Route manager {endpoint} ({label}) into the site configuration"
    preview = await preview_edit(ref.path, password, list(changes), site.naming)
    return OptionalPlan(title, ref, label, changes, preview.changes, sources, secrets)


async def write_optional(site: "SiteConnection", repo: "GitRepo", plan: OptionalPlan,
                         password: VaultPassword) -> AsyncIterator[Progress]:
    """Write the plan's values into core.yaml, check it and submit it."""
    from tui.procedures.operation_stream import stream_operation
    from tui.procedures.setup_components import submit_checked
    from tui.procedures.site_file_operations import EditSite

    if plan.is_noop:
        yield Progress(plan.title, 1, 1, f"already in {plan.site.site_dir}/core.yaml", "skipped")
        return
    async for event in stream_operation(site, EditSite(plan.site.path, password, list(plan.changes))):
        yield event
    async for event in submit_checked(site, repo, plan.site, password, f"writing {plan.vm_label}"):
        yield event
