"""`onemarketapp export` of the toolkit, as the platform defines it, against the embedded site.

`OcaExport` reimplements, in Python, what the platform's CLI runs for `onemarketapp export <app>
<name> --datastore <id>` (src/cli/onemarketapp lines 268-296 at release-7.0.2:
`MarketPlaceAppExt#export` with :dsid and :name): OpenNebula::MarketPlaceAppExt,
src/oca/ruby/opennebula/marketplaceapp_ext.rb at release-7.0.2 (7.4.0 the same; 6.10.0 also reads
the datastore for its vCenter case, lines 147-155 there). Line numbers below are release-7.0.2's.
It reads only what the site answers over XML-RPC, as the Ruby OCA does (XPath on the XML):
children found by NAME in the whole app pool, TEMPLATE/APPTEMPLATE64 for VM templates and
services. The service template goes in with `one.document.allocate` (type 101) after
`ServiceTemplate.validate`, as the OCA's ServiceTemplate#allocate does (flow/service_template.rb
320-327, document_json.rb 42-48 and 157-174); that validation (and on 7.x its conversion of a
pre-7.0 body, `convert_template` 808-840) is the embedded site's own reimplementation
(`tui.sim.flow_templates.validate`), the one piece not rewritten here.

The test exports the toolkit service app on each emulated version and checks that every role got
a VM template from its own role app (found by name), with its own images from that app's disk
apps, all of the build the cloud holds, and that the service template points at them. A second
test registers the community marketplace, whose older builds share the toolkit's names: the
cloud keeps one app per name, so the export builds one build throughout, never a mix.
"""

from __future__ import annotations

import base64
import json
import xmlrpc.client
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable
from xml.etree import ElementTree

import pytest

from tests.procedure_run import run_procedure
from tests.waiting import wait_until
from tui.domain.template_text import parse_template, scalar
from tui.sim import catalog, flow_templates, market_monitor
from tui.sim.server import SimServer

SimFactory = Callable[..., SimServer]


class ExportError(Exception):
    """What the OCA returns as an OpenNebula::Error (the CLI prints its message, exits -1)."""


@dataclass
class Exported:
    """The rc hash of `export` (lines 54-59): IDs of what it created."""

    image: list[int] = field(default_factory=list)
    image_type: str | None = None
    vmtemplate: list[int] = field(default_factory=list)
    service_template: list[int] = field(default_factory=list)
    #: `export_recursive`'s per-child `:names` (line 465)
    names: list[str] = field(default_factory=list)


class OcaExport:
    """MarketPlaceAppExt over the embedded site's XML-RPC answers (see the module docstring)."""

    def __init__(self, sim: SimServer) -> None:
        self.proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url)
        self.session = sim.session
        self.version = sim.site.config.one_version
        self.calls: list[str] = []

    def call(self, method: str, *params: Any) -> Any:
        self.calls.append(method)
        answer = getattr(self.proxy, method)(self.session, *params)
        if not answer[0]:
            raise ExportError(answer[1])
        return answer[1]

    def xml(self, method: str, *params: Any) -> ElementTree.Element:
        return ElementTree.fromstring(self.call(method, *params))

    # `export` (lines 60-86) ----------------------------------------------------------------
    def export(self, app_id: int, name: str, dsid: int, notemplate: bool = False) -> Exported:
        app = self.xml("one.marketapp.info", app_id)  # `info` (line 62)
        if app.findtext("STATE") != "1":  # state_str READY (line 64)
            raise ExportError("App is not READY")
        kind = {"1": "IMAGE", "2": "VMTEMPLATE", "3": "SERVICE_TEMPLATE"}.get(app.findtext("TYPE", ""), "")
        if kind == "IMAGE":
            return self.export_image(app, name, dsid, notemplate)
        if kind == "VMTEMPLATE":  # :notemplate forced true (line 78)
            return self.export_vm_template(app, name, dsid)
        if kind == "SERVICE_TEMPLATE":
            return self.export_service_template(app, name, dsid)
        raise ExportError(f"App type {kind} not supported")

    # `export_image` (lines 106-216) --------------------------------------------------------------
    def export_image(self, app: ElementTree.Element, name: str, dsid: int, notemplate: bool) -> Exported:
        tmpl = ""
        if app.find("APPTEMPLATE64") is not None:  # the top-level APPTEMPLATE64 (lines 119-121)
            tmpl = base64.b64decode(app.findtext("APPTEMPLATE64", "")).decode()
        tmpl += f'\nNAME     = "{name}"\nFROM_APP = "{app.findtext("ID")}"\n'  # lines 123-126
        if self.version.startswith("6.10."):  # release-6.10.0 147-155: the datastore's DRIVER (vCenter)
            self.xml("one.datastore.info", dsid)
        # KERNEL or CONTEXT images go to a files datastore (lines 133-145): not the toolkit's
        image_id = int(self.call("one.image.allocate", tmpl, dsid))  # lines 150-151
        image = self.xml("one.image.info", image_id)  # line 159
        template = image.find("TEMPLATE")
        assert template is not None
        for gone in ("FORMAT", "DRIVER"):  # lines 161-162
            for element in template.findall(gone):
                template.remove(element)
        self.call("one.image.update", image_id, ElementTree.tostring(template, encoding="unicode"), 0)  # line 164
        types = {"0": "OS", "1": "CDROM", "2": "DATABLOCK", "3": "KERNEL", "4": "RAMDISK", "5": "CONTEXT"}
        done = Exported(image=[image_id], image_type=types.get(image.findtext("TYPE", ""), ""))
        if app.find("TEMPLATE/VMTEMPLATE64") is None or notemplate:  # lines 169-173
            return done
        text = base64.b64decode(app.findtext("TEMPLATE/VMTEMPLATE64", "")).decode()  # line 200
        text += f'\nNAME = "{name}"\nDISK = [ IMAGE_ID = "{image_id}" ]\n'  # lines 201-205
        done.vmtemplate = [int(self.call("one.template.allocate", text))]  # lines 207-212
        return done

    # `export_vm_template` and `export_service_template` (lines 222-268) -----------------------
    def export_vm_template(self, app: ElementTree.Element, name: str, dsid: int) -> Exported:
        template_id, images, _ = self.export_recursive(app, "DISK", name, dsid,
                                                       lambda disks: self.create_vm_template(app, name, disks))
        return Exported(image=images, vmtemplate=[template_id])  # notemplate: no child templates (line 238)

    def export_service_template(self, app: ElementTree.Element, name: str, dsid: int) -> Exported:
        service_id, images, templates = self.export_recursive(
            app, "ROLE", name, dsid, lambda roles: self.create_service_template(app, name, roles))
        return Exported(image=images, vmtemplate=templates, service_template=[service_id])

    # `create_vm_template` (lines 277-339) -----------------------------------------------------------
    def create_vm_template(self, app: ElementTree.Element, name: str, disks: dict[str, Exported]) -> int:
        if app.find("TEMPLATE/APPTEMPLATE64") is None:  # lines 281-285
            raise ExportError(f"Missing APPTEMPLATE64 for App {app.findtext('ID')}")
        tmpl = base64.b64decode(app.findtext("TEMPLATE/APPTEMPLATE64", "")).decode()
        tmpl += f'\nNAME="{name}"\n'  # line 289
        template_id = int(self.call("one.template.allocate", tmpl))  # lines 291-292
        vmtpl = self.xml("one.template.info", template_id)  # line 299
        template = vmtpl.find("TEMPLATE")
        assert template is not None
        for disk in disks.values():  # lines 303-322: OS, DATABLOCK, CDROM disks (no CONTEXT/KERNEL here)
            if disk.image_type in ("IMAGE", "OS", "DATABLOCK", "CDROM"):
                element = ElementTree.SubElement(template, "DISK")
                ElementTree.SubElement(element, "IMAGE_ID").text = str(disk.image[0])
        self.call("one.template.update", template_id, ElementTree.tostring(template, encoding="unicode"), 0)  # 336
        return template_id

    # `create_service_template` (lines 343-379) ------------------------------------------------------
    def create_service_template(self, app: ElementTree.Element, name: str, roles: dict[str, Exported]) -> int:
        if app.find("TEMPLATE/APPTEMPLATE64") is None:  # lines 347-349
            raise ExportError(f"Missing APPTEMPLATE64 for App {app.findtext('ID')}")
        tmpl = json.loads(base64.b64decode(app.findtext("TEMPLATE/APPTEMPLATE64", "")))  # lines 351-352
        tmpl["name"] = name
        for role in tmpl["roles"]:  # lines 359-368
            found = next((v for v in roles.values() if role["name"] in v.names), None)
            if found is None or not found.vmtemplate:
                continue
            role["vm_template"] = found.vmtemplate[0]
        # ServiceTemplate#allocate (flow/service_template.rb 320-327): validate, registration_time,
        # then DocumentJSON#allocate: one.document.allocate(<TEMPLATE><NAME/><BODY/></TEMPLATE>, 101)
        body = flow_templates.validate(self.version, tmpl)
        body["registration_time"] = 1_700_000_000
        text = f"<TEMPLATE><NAME>{name}</NAME><BODY><![CDATA[{json.dumps(body)}]]></BODY></TEMPLATE>"
        return int(self.call("one.document.allocate", text, 101))

    # `export_recursive` (lines 386-481) ------------------------------------------------------------
    def export_recursive(self, app: ElementTree.Element, vector: str, name: str, dsid: int,
                         block: Callable[[dict[str, Exported]], int]) -> tuple[int, list[int], list[int]]:
        pool = self.xml("one.marketapppool.info", -2, -1, -1)  # `pool.info_all` (lines 388-389)
        exported: dict[str, Exported] = {}
        idx = 0
        images: list[int] = []
        templates: list[int] = []
        for obj in app.iter(vector):  # `retrieve_xmlelements('//DISK' | '//ROLE')` (line 410)
            obj_name, app_name = obj.findtext("NAME", ""), obj.findtext("APP", "")
            if app_name in exported:  # lines 416-419
                exported[app_name].names.append(obj_name)
                continue
            child = next((p for p in pool.findall("MARKETPLACEAPP") if p.findtext("NAME") == app_name), None)
            if child is None:  # `pool.find {|p| p['NAME'] == app }` (lines 422-424)
                raise ExportError(f"App `{app_name}` not found")
            img_names = [i.findtext("NAME", "") for i in self.xml("one.imagepool.info", -1, -1, -1).findall("IMAGE")]
            opt_name = name  # lines 435-447
            disk_app = app_name if vector == "DISK" else None
            short = "-".join(p for p in (opt_name, disk_app, obj_name, str(idx)) if p is not None)
            if short in img_names:
                idy = 0
                while "-".join(p for p in (f"{opt_name}_{idy}", disk_app, obj_name, str(idx)) if p is not None) \
                        in img_names:
                    idy += 1
                opt_name = f"{opt_name}_{idy}"
            child_name = "-".join(p for p in (opt_name, disk_app, obj_name, str(idx)) if p is not None)
            # `obj.export(:dsid, :name, :notemplate => options[:notemplate])` (lines 449-453): the
            # service's options carry no :notemplate; a VM template's carry true (line 78)
            rc = self.export(int(child.findtext("ID", "-1")), child_name, dsid, notemplate=vector == "DISK")
            idx += 1  # line 461
            rc.names = [obj_name]  # lines 464-465
            exported[app_name] = rc
            images += rc.image[:1]
            templates += rc.vmtemplate[:1]
        return block(exported), images, templates  # lines 472-474


def _apps(sim: SimServer) -> dict[int, Any]:
    with sim.site.lock:
        return {a.id: a for a in sim.site.marketapps.values()}


def _toolkit_app_id(sim: SimServer) -> int:
    name = sim.site.naming.toolkit_appliance_name
    return next(a.id for a in _apps(sim).values() if a.name == name)


def _check_export(sim: SimServer, result: Exported, version: str) -> None:
    """Every role's VM template comes from its role app, found by name, with its own images from
    that app's disk apps, all of `version`; the service template points at them."""
    site = sim.site
    naming = site.naming
    apps = {a.name: a for a in _apps(sim).values()}
    service_app = apps[naming.toolkit_appliance_name]
    roles = {dict(v)["NAME"]: dict(v)["APP"] for k, v in service_app.template if k == "ROLE"}
    assert set(roles) == set(naming.roles) and len(result.service_template) == 1
    # the rc lists each VM template's FIRST image only (`image = rc[:image].first`, line 455): 4 of
    # the 5 images the export makes (the object store's VM template has two disks)
    assert len(result.vmtemplate) == 4 and len(result.image) == 4
    made: set[int] = set()
    with site.lock:
        document = site.documents[result.service_template[0]]
        body = document.body
        assert document.type == 101 and body["name"] == "toolkit"
        for role in body["roles"]:
            template_id = int(role.get("vm_template", role.get("template_id", -1)))
            assert template_id in result.vmtemplate, role["name"]
            template = site.templates[template_id]
            role_app = apps[roles[role["name"]]]
            assert role_app.version == version
            # the VM template is the role app's APPTEMPLATE64 with the export's NAME and disks
            app_text = parse_template(base64.b64decode(role_app.apptemplate64).decode())
            assert scalar(template.template, "MEMORY") == scalar(app_text, "MEMORY")
            disk_apps = [dict(v)["APP"] for k, v in role_app.template if k == "DISK"]
            image_ids = [int(dict(v)["IMAGE_ID"]) for k, v in template.template if k == "DISK"]
            assert len(image_ids) == len(disk_apps)
            made.update(image_ids)
            for image_id, disk_app in zip(image_ids, disk_apps, strict=True):
                image = site.images[image_id]
                assert scalar(image.template, "FROM_APP") == str(apps[disk_app].id)
                assert scalar(image.template, "FROM_APP_NAME") == disk_app and apps[disk_app].version == version
                assert "FORMAT" not in dict(image.template) and "DRIVER" not in dict(image.template)
                assert image.name.startswith(f"{template.name}-{disk_app}-")
    assert len(made) == 5 and set(result.image) <= made


@pytest.mark.parametrize("one_version", ["6.10.0", "7.0.0", "7.4.0"])
def test_the_platforms_export_builds_the_toolkit_from_the_embedded_site(sim_factory: SimFactory,
                                                                          one_version: str) -> None:
    sim = sim_factory(one_version=one_version)
    oca = OcaExport(sim)
    result = oca.export(_toolkit_app_id(sim), "toolkit", 1)
    _check_export(sim, result, catalog.TOOLKIT_VERSION)
    assert ("one.datastore.info" in oca.calls) == one_version.startswith("6.10.")
    names = {sim.site.templates[t].name for t in result.vmtemplate}
    assert names == {f"toolkit-{role}-{n}" for n, role in enumerate(sim.site.naming.roles)}
    # the images the export made become READY (their app SOURCE is a file this site serves)
    ready = lambda: all(oca.xml("one.image.info", i).findtext("STATE") == "1" for i in result.image)  # noqa: E731
    wait_until(ready, what="the exported images to be READY")


def test_the_consoles_download_makes_what_the_platforms_export_makes(sim: SimServer) -> None:
    """What the console's download creates is what the platform's export creates, apart from names
    and IDs (as seen on the real 7.0.2 frontend): the same VM templates per role, the same images."""
    import asyncio

    from tui.procedures.connection import SiteConnection
    from tui.procedures.market.download import download_appliance, plan_download
    from tui.settings import Settings

    app_id = _toolkit_app_id(sim)
    oca = OcaExport(sim).export(app_id, "by-the-cli", 1)

    async def console() -> Any:
        site = SiteConnection(Settings.for_site(sim.xmlrpc_url, sim.session, sim.flow_url))
        await site.connect()
        try:
            plan = await plan_download(site, app_id, 1, "by-the-console")
            return (await run_procedure(partial(download_appliance, site, plan, poll_interval=0.02)))[1]
        finally:
            await site.close()

    result = asyncio.run(console())

    def shape(template_ids: list[int]) -> list[tuple[Any, ...]]:
        with sim.site.lock:
            out = []
            for template_id in template_ids:
                template = sim.site.templates[template_id]
                kept = sorted((k, str(sorted(v) if isinstance(v, list) else v)) for k, v in template.template
                              if k not in ("DISK", "NAME"))
                disks = [scalar(sim.site.images[int(dict(v)["IMAGE_ID"])].template, "FROM_APP")
                         for k, v in template.template if k == "DISK"]
                out.append((tuple(kept), tuple(disks)))
            return sorted(out)

    assert shape(list(result.template_ids)) == shape(oca.vmtemplate)


def test_with_two_marketplaces_listing_the_toolkit_the_export_builds_one_build(sim: SimServer) -> None:
    """The cloud keeps one app per name (MarketPlaceAppPool::import, src/market/MarketPlaceAppPool.cc
    211-223): with the community marketplace registered and monitored after the site's, every
    toolkit app holds the community's v0.4.0, so the export, finding children by name (line 422),
    builds v0.4.0 throughout. A state with v0.5.0 and v0.4.0 apps of the same names, which made the
    export mix builds, cannot arise."""
    with sim.site.lock:
        catalog.register_marketplace(sim.site, catalog.COMMUNITY_PREFIX)
        market_monitor.monitor_all(sim.site)
    names = [a.name for a in _apps(sim).values()]
    assert len(names) == len(set(names))
    result = OcaExport(sim).export(_toolkit_app_id(sim), "toolkit", 1)
    _check_export(sim, result, catalog.TOOLKIT_OLD_VERSION)


def test_an_app_without_its_template_copy_is_refused_as_the_platform_refuses_it(sim: SimServer) -> None:
    """Without TEMPLATE/APPTEMPLATE64 (what the embedded site served before) the export stops at the
    first role's VM template: `Missing APPTEMPLATE64 for App N` (lines 281-285)."""
    role_app = next(a for a in _apps(sim).values() if a.type == 2)
    with sim.site.lock:
        role_app.template = [attr for attr in role_app.template if attr[0] != "APPTEMPLATE64"]
    with pytest.raises(ExportError, match=f"Missing APPTEMPLATE64 for App {role_app.id}"):
        OcaExport(sim).export(role_app.id, "alone", 1)
