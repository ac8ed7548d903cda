"""Read procedures behind the lists: every VM of the site, one VM in full.

Screens call these (never the adapters); they are reads, so they neither preview nor audit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from tui.domain.vms import VmDetail, VmSummary

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


async def list_vms(site: "SiteConnection") -> Sequence[VmSummary]:
    """Every VM the session may see, in any state except DONE."""
    return await site.cloud.list_vms()


async def vm_detail(site: "SiteConnection", vm_id: int) -> VmDetail:
    """One VM's full record (`vm.info`): CPU model, NICs, disks, context, user template, history."""
    return await site.cloud.vm_info(vm_id)
