"""A complete toolkit input file in the spec's JSON shape, written before the toolkit is downloaded
(as an operator writes it for `sitetk setup run`): every input of the spec, valid values, secrets
generated and kept in memory (or left out, to be asked)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from tui.domain.naming import DEFAULT_NAMING
from tui.domain.toolkit_inputs import form_fields
from tui.sim.repos import DEMO_ADMIN_KEY
from tui.sim.scenarios import AUTOMATION_PASSWORD

BRANCH = "trial-site"
#: the site's own values for the template's examples core.yaml starts with (public address, domain,
#: the administrators' key): `setup run --set` gives them, else they are asked
SITE_VALUES = {
    "site_public_ip": "192.0.2.44",
    "site_domain": "trials.lab.example",
    "site_admin_ssh_public_key": f"ssh-ed25519 {DEMO_ADMIN_KEY}",
}
SITE_SETS: tuple[str, ...] = tuple(arg for path, value in SITE_VALUES.items() for arg in ("--set", f"{path}={value}"))


def input_values(branch: str = BRANCH) -> dict[str, str]:
    naming = DEFAULT_NAMING
    values = {f.name: f.default for f in form_fields(naming)}
    for f in form_fields(naming):
        if f.secret:
            values[f.name] = "S3cret-" + secrets.token_urlsafe(12)
    o, a, m, t = naming.roles
    values.update({
        naming.input_name(f"{o}_hostname"): "s3.site.example,console.s3.site.example",
        naming.input_name(f"{o}_root_user"): "s3admin",
        naming.input_name(f"{o}_tls_cert"): "",
        naming.input_name(f"{o}_tls_key"): "",
        naming.input_name(f"{a}_username"): "automation",
        naming.input_name(f"{a}_cloud_endpoint"): "http://10.11.28.1:2633/RPC2",
        naming.input_name(f"{a}_cloud_flow_endpoint"): "http://10.11.28.1:2474",
        naming.input_name(f"{a}_cloud_username"): "tkauto",
        naming.input_name(f"{a}_cloud_insecure"): "YES",
        naming.input_name(f"{m}_admin_user"): "admin",
        naming.input_name(f"{m}_sites_branch"): branch,
        naming.input_name(f"{m}_deployment_site"): branch,
        naming.input_name(f"{t}_user"): "tsadmin",
        naming.input_name(f"{t}_org"): "site",
        naming.input_name(f"{t}_bucket"): "trials",
        # the embedded site's tkauto: the setup logs in with it (a wrong one stops the cloud-user step)
        naming.input_name(f"{a}_cloud_password"): AUTOMATION_PASSWORD,
    })
    return values


def write_inputs(path: Path, *, branch: str = BRANCH, leave_out: tuple[str, ...] = (), network: str = "0") -> dict[str, str]:
    """Write the file (mode 0600); returns every value (the secrets too, for the test to compare)."""
    values = input_values(branch)
    kept = {k: v for k, v in values.items() if k not in leave_out}
    path.write_text(json.dumps({"name": "Site Toolkit setup test", "custom_attrs_values": kept,
                                "networks_values": [{"Public": {"id": network}}]}, indent=2))
    path.chmod(0o600)
    return values
