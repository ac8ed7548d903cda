"""Whether a VM can ever report READY=YES: only its guest writes it, and only under conditions the
VM's CONTEXT shows.

READY=YES lands in a VM's USER_TEMPLATE only from inside the guest, through the gate (OneGate's
`PUT /vm`, `src/onegate/onegate-server.rb` line 894 at release-7.0.2, which updates the user
template, `update` line 562). The gate takes no request without the VM's token
(`src/cloud/common/CloudAuth/OneGateCloudAuth.rb` lines 31-36: no `X-ONEGATE-TOKEN` header, no
access; the same on 6.10.0 and 7.4.0), and a VM has a token only when its CONTEXT says `TOKEN =
"YES"`: then the platform writes `token.txt` into the context and adds `ONEGATE_ENDPOINT` and `VMID`
(`src/vm/VirtualMachineContext.cc`, the token block at line 236 and `generate_token_context` at
line 614, release-7.0.2; lines 590 and 677 on 6.10.0 and 7.4.0). Inside the guest the
contextualization packages report READY=YES only when CONTEXT has `REPORT_READY = "YES"` (one-apps
`context-linux/src/etc/one-context.d/net-99-report-ready`: it exits at once otherwise, and sends the
token from the context as `X-ONEGATE-TOKEN`); the service appliances do the same once bootstrapped
(one-apps `appliances/scripts/context_service_net-99.sh`).

So a VM without CONTEXT, or whose CONTEXT lacks `TOKEN = "YES"` or `REPORT_READY = "YES"`, never
becomes READY whatever runs in it, and one whose `ONEGATE_ENDPOINT` is a loopback address reports to
itself. Waiting for READY on such a VM is waiting for ever: a move does not, and says why.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from tui.domain.attributes import Attributes

YES = "YES"


def _yes(value: str) -> bool:
    return value.strip().upper() == YES


def _loopback(endpoint: str) -> bool:
    host = urlsplit(endpoint.strip()).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cannot_report_ready(vm_id: int, template: Attributes) -> str:
    """Why nothing in VM `vm_id` (its `template`) can ever report READY=YES ("" when it can:
    CONTEXT with TOKEN=YES and REPORT_READY=YES, and a gate endpoint, when the context names one,
    that is not loopback)."""
    contexts = template.vectors("CONTEXT")
    if not contexts:
        return (f"VM {vm_id} has no CONTEXT: no contextualization runs in it, and only the guest reports READY "
                "(through the gate)")
    context = contexts[0]
    if not _yes(context.get("TOKEN", "")):
        return (f"VM {vm_id}'s CONTEXT has no TOKEN=YES: the VM has no gate token, and the gate refuses a report "
                "without one")
    if not _yes(context.get("REPORT_READY", "")):
        return (f"VM {vm_id}'s CONTEXT has no REPORT_READY=YES: the contextualization packages report READY only "
                "when it is set")
    endpoint = context.get("ONEGATE_ENDPOINT", "")
    if endpoint and _loopback(endpoint):
        return (f"VM {vm_id}'s CONTEXT names the gate at {endpoint}, a loopback address: the guest would report to "
                "itself")
    return ""


def ready_fix(vm_id: int) -> str:
    """What the operator checks instead, and how the VM would report next time."""
    return (f"Check the application on VM {vm_id} yourself (its service answers, its log shows no error). To have it "
            f"report, give its CONTEXT TOKEN=\"YES\" and REPORT_READY=\"YES\" (onevm updateconf {vm_id}, with the gate "
            "configured: ONEGATE_ENDPOINT in oned.conf, an address the VM reaches); they apply at its next boot.")
