"""The hosts feature: CPU inventory for the document database and moving its VMs (plan, lock, journal, move)."""
