"""The frontend's configuration as `one.system.config` reports it (oned.conf as XML)."""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes


@dataclass(frozen=True)
class SystemConfig:
    #: ONEGATE_ENDPOINT, "" when not configured (pyone's parser drops it; read from the raw node)
    onegate_endpoint: str
    #: every top-level entry of the configuration, vectors included
    attributes: Attributes = EMPTY_ATTRIBUTES

    def get(self, name: str, default: str = "") -> str:
        return self.attributes.get(name, default)
