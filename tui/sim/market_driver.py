"""What the cloud's `one` market driver makes of a marketplace record (`src/market_mad/remotes/one/monitor`).

The record's JSON VM template as template text, the DISK vector names of a VM-template app, the
app's hypervisor and architecture words, and the VM template 7.0+ stores with SCHED_REQUIREMENTS
and HYPERVISOR added.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tui.domain.template_text import Template, Vector, parse_template, render_template
from tui.sim.platform import driver_adds_requirements


def template_to_str(template: dict[str, Any]) -> str:
    """The market driver's JSON -> template text conversion (empty values dropped)."""
    attrs: Template = []
    for key, value in template.items():
        if isinstance(value, dict):
            vector: Vector = [(str(k).upper(), str(v)) for k, v in value.items() if v not in (None, "")]
            if vector:
                attrs.append((str(key).upper(), vector))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    attrs.append((str(key).upper(), [(str(k).upper(), str(v)) for k, v in item.items()]))
        elif value not in (None, ""):
            attrs.append((str(key).upper(), str(value)))
    return render_template(attrs)


def template_from_json(template: dict[str, Any]) -> Template:
    """An appliance VM template (JSON form) as template attributes."""
    return parse_template(template_to_str(template))


def disk_vector_name(record_id: str, index: int) -> str:
    """The NAME of a VM-template app's DISK vector: the platform's market driver draws ten hex
    digits at random (monitor `render_vmtemplate`); the embedded site derives them from the record."""
    return hashlib.md5(f"{record_id}/{index}".encode()).hexdigest()[:10]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


#: what the market driver merges into OS for an arm64 app (`monitor` ARM_OS_SECTION, 7.0+)
_ARM_OS_SECTION = {"ARCH": "aarch64", "FIRMWARE": "/usr/share/AAVMF/AAVMF_CODE.fd", "FIRMWARE_SECURE": "no",
                   "MACHINE": "virt"}


def driver_hypervisor(record: dict[str, Any]) -> str:
    """`app_hypervisor` of the market driver: `kvm` for ALL or none, else the name in lower case."""
    hypervisor = str(record.get("hypervisor") or "")
    return "kvm" if hypervisor in ("", "ALL") else hypervisor.lower()


def driver_arch(record: dict[str, Any]) -> str:
    """`app_arch` of the market driver: amd64 -> x86_64, arm64 -> aarch64, none -> all."""
    arch = str(record.get("os-arch") or "")
    return {"amd64": "x86_64", "arm64": "aarch64", "": "all"}.get(arch, arch)


def driver_vm_template(record: dict[str, Any], one_version: str) -> dict[str, Any] | None:
    """The VM template the cloud's market driver stores for an app (VMTEMPLATE64 of an image app,
    APPTEMPLATE64 of a VM template app): the record's `opennebula_template`, to which 7.0+ adds
    SCHED_REQUIREMENTS (`HYPERVISOR=<h>`, `& ARCH=aarch64` for arm64) and HYPERVISOR
    (`src/market_mad/remotes/one/monitor` `generate_vm_template64`; 6.10.0 keeps it as it is)."""
    text = record.get("opennebula_template")
    if not text:
        return None
    try:
        template = json.loads(text)
    except ValueError:
        return None
    if not isinstance(template, dict) or not driver_adds_requirements(one_version):
        return template if isinstance(template, dict) else None
    hypervisor, arch = driver_hypervisor(record), driver_arch(record)
    # the monitor tests the converted name against ['amd64', 'aarch64'], so only arm64 adds ARCH
    requirements = f"HYPERVISOR={hypervisor}" + (f" & ARCH={arch}" if arch in ("amd64", "aarch64") else "")
    current = template.get("SCHED_REQUIREMENTS")
    template["SCHED_REQUIREMENTS"] = f"{current} & {requirements}" if current else requirements
    if arch == "aarch64":
        template["OS"] = {**template["OS"], **_ARM_OS_SECTION} if isinstance(template.get("OS"), dict) \
            else dict(_ARM_OS_SECTION)
    template["HYPERVISOR"] = hypervisor
    return template
