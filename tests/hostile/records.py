"""A marketplace record whose text is hostile: terminal escapes, Rich markup, bidirectional
overrides and Markdown, served by the embedded site like any other record."""

from __future__ import annotations

import copy

from tui.sim import catalog
from tui.sim.server import SimServer

#: OSC 0 retitles the window, CSI 2 J clears the screen, CSI 8 m conceals what follows
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[8m"
MARKUP = "[bold red]not markup[/] [link=http://evil.example]click[/link]"
HOSTILE_ID = "hostile_record"
HOSTILE_NAME = f"Evil {ESCAPES}{MARKUP}\u202eexe.txt\rOVERWRITE"


def add_hostile_record(server: SimServer) -> str:
    """Serve a copy of the DNS record with a hostile name, publisher and description; its id."""
    site = server.site
    with site.lock:
        records = site.market_records[catalog.MAIN_PREFIX]
        base = next(r for r in records if r["_id"]["$oid"] == "service_dns")
        record = copy.deepcopy(base)
        record["_id"] = {"$oid": HOSTILE_ID}
        record["links"] = {"download": {"href": f"/appliance/{HOSTILE_ID}/download"}}
        record["name"] = HOSTILE_NAME
        record["publisher"] = f"Publisher {MARKUP}{ESCAPES}"
        record["version"] = f"v1.0.0-20250101-0000{ESCAPES}"
        record["description"] = f"# Title {MARKUP}\n\nBody {ESCAPES} [red]x[/red]\n"
        records.append(record)
    return HOSTILE_ID
