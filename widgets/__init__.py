"""Reusable Textual widgets with no knowledge of the cloud."""
