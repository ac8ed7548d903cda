"""Read procedures behind the lists: every VM of the site, one VM in full.

Screens call these (never the adapters); they are reads, so they neither preview nor audit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from tui.domain.vms import VmSummary

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.vm_detail import VmDetail
    from tui.procedures.connection import SiteConnection


async def list_vms(site: "SiteConnection",
                   on_page: Callable[[Sequence[VmSummary]], None] | None = None) -> Sequence[VmSummary]:
    """Every VM the session may see, in any state except DONE; read in pages, `on_page` seeing
    the VMs read so far after each one (the first page can be shown while the rest comes)."""
    return await site.cloud.list_vms(on_page=on_page)


async def vm_detail(site: "SiteConnection", vm_id: int) -> VmDetail:
    """One VM's full record (`vm.info`): CPU model, NICs, disks, context, user template, history."""
    return await site.cloud.vm_info(vm_id)
