"""What the cloud's `one` market driver makes of a marketplace record (`src/market_mad/remotes/one/monitor`).

`monitor_app` is the APP template the driver prints for one record (`fetch_appliances`, lines
176-219 at release-7.0.2, 168-211 at release-6.10.0): NAME, SOURCE, IMPORT_ID, ORIGIN_ID, TYPE,
PUBLISHER, FORMAT, DESCRIPTION, VERSION, TAGS, REGTIME, LINK, from 6.10.4 ARCHITECTURE (line 182
at release-6.10.4: the record's `os-arch`; from 7.0 `app_arch`, line 200 at release-7.0.0), from 7.0
HYPERVISOR (line 201), then per type SIZE, MD5, APPTEMPLATE64, VMTEMPLATE64 (images), DISK vectors
(VM templates), ROLE vectors (services); empty values are left out (`print_var`). Its links are
`<url>appliance/<id>`: from 6.10.3 the driver adds a missing slash to the ENDPOINT (`@url += '/'
unless @url.end_with?('/')`, line 42 at release-6.10.3, 67 at release-7.0.2); 6.10.0-6.10.2 use
the ENDPOINT as it is (line 170 at release-6.10.0), so an ENDPOINT without a trailing slash gives
`http://host:portappliance/<id>` for every app (`driver_url`).
Also: the record's JSON VM template as template text (`template_to_str`: arrays only from 7.0; a
value that is not a string, an object or a list makes the driver store no VM template at all),
the DISK vector names of a VM-template app, the app's hypervisor and architecture words, and the
VM template each version stores (`generate_vm_template64`: 6.10.4+ and 7.0+ add
SCHED_REQUIREMENTS, 7.0+ HYPERVISOR).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tui.domain.template_text import Template, Vector, parse_template, render_template
from tui.sim.platform import driver_adds_architecture, driver_adds_endpoint_slash, driver_adds_requirements


class Unconvertible(ValueError):
    """A JSON value the driver's `template_to_str` cannot test for emptiness: `value.empty?` on a
    number, true or false raises NoMethodError, which `generate_vm_template64` (and before 6.10.4
    `render_image`/`render_vmtemplate`) rescue by storing no VM template."""


def _empty(value: Any) -> bool:
    """`value.nil? || value.empty?` of the driver, raising where Ruby would."""
    if value is None:
        return True
    if isinstance(value, (str, dict, list)):
        return len(value) == 0
    raise Unconvertible(f"{type(value).__name__} value {value!r} has no empty?")


def _vector(value: dict[str, Any]) -> Vector:
    return [(str(k).upper(), str(v)) for k, v in value.items() if not _empty(v)]


def template_to_str(template: dict[str, Any], one_version: str = "7.0.0") -> str:
    """The market driver's JSON -> template text conversion (`template_to_str`, lines 216-235 at
    release-6.10.4, 235-272 at release-7.0.0): empty values dropped, objects as vectors; a list
    only from 7.0 (each object in it a vector; up to 6.10 the `case` has no Array branch and drops
    it); raises `Unconvertible` where the driver fails (a number, true or false)."""
    arrays = driver_adds_requirements(one_version)
    attrs: Template = []
    for key, value in template.items():
        if _empty(value):
            continue
        name = str(key).upper()
        if isinstance(value, dict):
            attrs.append((name, _vector(value)))
        elif isinstance(value, list):
            if not arrays:
                continue
            for item in value:
                if _empty(item):
                    continue
                # a string item becomes `KEY = [ "item" ]`, which no template parser reads: left out
                if isinstance(item, dict):
                    attrs.append((name, _vector(item)))
        else:
            attrs.append((name, str(value)))
    return render_template(attrs)


def template_from_json(template: dict[str, Any], one_version: str = "7.0.0") -> Template:
    """An appliance VM template (JSON form) as template attributes."""
    return parse_template(template_to_str(template, one_version))


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


def _os_with_arm_section(template: dict[str, Any]) -> dict[str, Any]:
    """`ot['OS'].merge!(ARM_OS_SECTION)`: an OS that is not an object raises NoMethodError."""
    current = template.get("OS")
    if current is None:
        return dict(_ARM_OS_SECTION)
    if not isinstance(current, dict):
        raise Unconvertible("OS is not an object")
    return {**current, **_ARM_OS_SECTION}


def driver_vm_template(record: dict[str, Any], one_version: str) -> dict[str, Any] | None:
    """The VM template the cloud's market driver stores for an app (VMTEMPLATE64 of an image app,
    APPTEMPLATE64 of a VM template app), None when it stores none
    (`src/market_mad/remotes/one/monitor`):
    - up to 6.10.3 the record's `opennebula_template` as it is (`render_image`/`render_vmtemplate`,
      lines 98-134 at release-6.10.0);
    - 6.10.4-6.10.x: a record with an `os-arch` gets SCHED_REQUIREMENTS `HYPERVISOR=kvm &
      ARCH=<os-arch>` (the record's word, any one it had replaced) and, for `aarch64`, the ARM OS
      section merged into its OS (no OS: the driver fails and stores none) (`generate_vm_template64`,
      lines 237-258 at release-6.10.4; the same at 6.10.5);
    - 7.0+: every template's SCHED_REQUIREMENTS gains `HYPERVISOR=<h>` (after ` & ` when it had
      one), `& ARCH=aarch64` for arm64, the ARM OS section for arm64, and HYPERVISOR (lines
      274-311 at release-7.0.0; the same at 7.0.2 and 7.4.0).
    Whatever the driver's `template_to_str` cannot convert makes it store none (`Unconvertible`)."""
    text = record.get("opennebula_template")
    if not text:
        return None
    try:
        template = json.loads(text)
    except ValueError:
        return None
    if not isinstance(template, dict):
        return None
    try:
        if driver_adds_requirements(one_version):
            hypervisor, arch = driver_hypervisor(record), driver_arch(record)
            # the monitor tests the converted name against ['amd64', 'aarch64'], so only arm64 adds ARCH
            requirements = f"HYPERVISOR={hypervisor}" + (f" & ARCH={arch}" if arch in ("amd64", "aarch64") else "")
            current = template.get("SCHED_REQUIREMENTS")
            # Ruby's `if ot['SCHED_REQUIREMENTS']`: an empty string is true, so it gains " & ..."
            template["SCHED_REQUIREMENTS"] = requirements if current is None else f"{current} & {requirements}"
            if arch == "aarch64":
                template["OS"] = _os_with_arm_section(template)
            template["HYPERVISOR"] = hypervisor
        elif driver_adds_architecture(one_version):
            arch = str(record.get("os-arch") or "")
            if arch:
                template["SCHED_REQUIREMENTS"] = f"HYPERVISOR=kvm & ARCH={arch}"
                if arch == "aarch64":
                    if not isinstance(template.get("OS"), dict):  # nil.merge! raises NoMethodError
                        raise Unconvertible("no OS to merge the ARM section into")
                    template["OS"] = {**template["OS"], **_ARM_OS_SECTION}
        template_to_str(template, one_version)
    except Unconvertible:
        return None
    return template


def driver_url(endpoint: str, one_version: str) -> str:
    """The base the driver builds LINK and SOURCE from: the ENDPOINT, with a slash added when it
    lacks one from 6.10.3 on (`monitor` `initialize`; 6.10.0-6.10.2 keep it as it is)."""
    if driver_adds_endpoint_slash(one_version) and not endpoint.endswith("/"):
        return endpoint + "/"
    return endpoint


def listing_path(endpoint: str, one_version: str) -> str:
    """The URL the driver lists: `URI(@url + '/appliance')` (`get('/appliance')`, line 93 at
    release-7.0.2, 67 at release-6.10.0), so `<endpoint>//appliance` when the URL ends in a slash."""
    return driver_url(endpoint, one_version) + "/appliance"


def _put(attrs: Template, name: str, value: Any) -> None:
    """`print_var`: nothing for nil or an empty string."""
    if value is None or (isinstance(value, str) and value == ""):
        return
    attrs.append((name, str(value)))


def monitor_app(record: dict[str, Any], url: str, one_version: str, *, disk_names: list[str] | None = None) -> Template:
    """The APP template the driver prints for `record` (before its base64 encoding), `url` being
    `driver_url(ENDPOINT)`. `disk_names` are the DISK vectors' NAMEs (the driver draws ten random
    hex digits each, `render_vmtemplate`; default: `disk_vector_name`)."""
    record_id = str(record["_id"]["$oid"])
    link = f"{url}appliance/{record_id}"
    kind = str(record.get("type") or "IMAGE")
    attrs: Template = []
    _put(attrs, "NAME", record.get("name"))
    _put(attrs, "SOURCE", f"{link}/download/0")
    _put(attrs, "IMPORT_ID", record_id)
    _put(attrs, "ORIGIN_ID", "-1")
    _put(attrs, "TYPE", kind)
    _put(attrs, "PUBLISHER", record.get("publisher"))
    _put(attrs, "FORMAT", record.get("format"))
    _put(attrs, "DESCRIPTION", record.get("short_description"))
    _put(attrs, "VERSION", record.get("version"))
    if record.get("tags"):
        _put(attrs, "TAGS", ", ".join(str(t) for t in record["tags"]))
    _put(attrs, "REGTIME", record.get("creation_time"))
    _put(attrs, "LINK", link)
    if driver_adds_requirements(one_version):
        _put(attrs, "ARCHITECTURE", driver_arch(record))
        _put(attrs, "HYPERVISOR", driver_hypervisor(record))
    elif driver_adds_architecture(one_version):
        _put(attrs, "ARCHITECTURE", record.get("os-arch"))  # the record's word (line 182 at release-6.10.4)
    vm_template = driver_vm_template(record, one_version)
    if kind == "IMAGE":
        files = record.get("files") or []
        if not files:
            return attrs
        first_file = files[0]
        size = int(first_file.get("size") or 0)
        _put(attrs, "SIZE", -(-size // 2**20) if size else 0)
        _put(attrs, "MD5", first_file.get("md5"))
        lines = "".join(f'{key}="{first_file[field]}"\n' for key, field in (("DEV_PREFIX", "dev_prefix"), ("TYPE", "type"))
                        if first_file.get(field))
        if lines:
            _put(attrs, "APPTEMPLATE64", b64(lines))
        if vm_template is not None:
            _put(attrs, "VMTEMPLATE64", b64(template_to_str(vm_template, one_version)))
    elif kind == "VMTEMPLATE":
        _put(attrs, "SIZE", 0)
        disks = [str(d) for d in record.get("disks") or []]
        names = disk_names or [disk_vector_name(record_id, n) for n in range(len(disks))]
        for name, disk in zip(names, disks, strict=True):
            attrs.append(("DISK", [("NAME", name), ("APP", disk)]))
        if vm_template is not None:
            _put(attrs, "APPTEMPLATE64", b64(template_to_str(vm_template, one_version)))
    elif kind == "SERVICE_TEMPLATE":
        _put(attrs, "SIZE", 0)
        for role, app_name in (record.get("roles") or {}).items():
            attrs.append(("ROLE", [("NAME", str(role)), ("APP", str(app_name))]))
        # the record's string as it is (`render_service_template`, lines 145-165 at release-7.0.2)
        _put(attrs, "APPTEMPLATE64", b64(str(record["opennebula_template"])) if record.get("opennebula_template") else None)
    return attrs
