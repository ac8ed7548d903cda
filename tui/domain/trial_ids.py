"""The trial network id the toolkit uses and the manager's rule for one: light (the command line
checks `--tn-id` while parsing, before importing the manager's client, tui.procedures.trial.network).
"""

from __future__ import annotations

#: the trial network `sitetk trial` and the setup's trial step create unless told otherwise
DEFAULT_TN_ID = "sitetktest"


def check_tn_id(tn_id: str) -> str | None:
    """What the manager refuses in a trial network id (core/models/trial_network.py 58, 113-116)."""
    if not tn_id or not tn_id[0].isalpha() or not tn_id[0].isascii():
        return "must start with a letter (a-z)"
    if len(tn_id) > 15:
        return f"at most 15 characters ({len(tn_id)} given)"
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in tn_id):
        return "letters, digits, - and _ only"
    return None
