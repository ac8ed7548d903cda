"""Images of the simulated cloud: the marketplace download (LOCKED, then READY or ERROR), errors, deletion."""

from __future__ import annotations

import base64

import pyone
import pytest

from tests.sim.one_client import one
from tests.waiting import wait_until
from tui.sim.server import SimServer
from tui.sim.state import SimMarketApp

LOCKED, READY, ERROR = 4, 1, 5


def _image_app(sim: SimServer, broken: bool) -> SimMarketApp:
    return next(a for a in sim.site.marketapps.values() if a.type == 1 and a.broken == broken)


def _export_text(app: SimMarketApp, name: str) -> str:
    """What the platform's CLI sends: the app's image attributes, a NAME and FROM_APP."""
    return base64.b64decode(app.apptemplate64).decode() + f'\nNAME = "{name}"\nFROM_APP = "{app.id}"\n'


def test_an_image_from_a_marketplace_app_is_locked_while_it_downloads_then_ready(sim: SimServer) -> None:
    client = one(sim)
    app = _image_app(sim, broken=False)
    image_id = client.image.allocate(_export_text(app, "downloaded"), 1)
    image = client.image.info(image_id)
    assert image.STATE == LOCKED
    assert (image.SIZE, image.TEMPLATE["FROM_APP"], image.TEMPLATE["FROM_APP_NAME"]) == (app.size_mb, str(app.id), app.name)
    wait_until(lambda: client.image.info(image_id).STATE == READY, timeout=20, what="READY")
    assert "ERROR" not in client.image.info(image_id).TEMPLATE


def test_a_broken_app_ends_in_error_with_the_reason(sim: SimServer) -> None:
    client = one(sim)
    image_id = client.image.allocate(_export_text(_image_app(sim, broken=True), "broken"), 1)
    wait_until(lambda: client.image.info(image_id).STATE == ERROR, timeout=20, what="ERROR")
    assert "Error copying image" in client.image.info(image_id).TEMPLATE["ERROR"]
    client.image.delete(image_id)
    with pytest.raises(pyone.OneNoExistsException):
        client.image.info(image_id)


def test_a_locked_image_cannot_be_used_by_a_new_vm(sim: SimServer) -> None:
    client = one(sim)
    image_id = client.image.allocate(_export_text(_image_app(sim, broken=False), "busy"), 1)
    with pytest.raises(pyone.OneException, match=f"Cannot acquire image {image_id}, it is locked"):
        client.template.instantiate(0, "x", True, f'DISK = [ IMAGE_ID = "{image_id}" ]')


def test_image_allocate_errors(sim: SimServer) -> None:
    client = one(sim)
    with pytest.raises(pyone.OneNoExistsException, match=r"Error getting datastore \[9\]"):
        client.image.allocate('NAME = "a"\nPATH = "/tmp/a.qcow2"', 9)
    with pytest.raises(pyone.OneException, match="system datastore"):
        client.image.allocate('NAME = "a"\nPATH = "/tmp/a.qcow2"', 0)
    with pytest.raises(pyone.OneException, match="NAME is already taken by IMAGE 0"):
        client.image.allocate('NAME = "Ubuntu 22.04"\nPATH = "/tmp/a.qcow2"', 1)
    with pytest.raises(pyone.OneInternalException, match=r"Cannot determine image SIZE\."):
        client.image.allocate('NAME = "a"\nFROM_APP = "999"', 1)
    with pytest.raises(pyone.OneException, match="No PATH nor SOURCE"):
        client.image.allocate('NAME = "a"', 1)


def test_an_image_in_use_cannot_be_deleted_and_a_datablock_needs_a_size(sim: SimServer) -> None:
    client = one(sim)
    client.template.instantiate(0, "user-of-image", True)
    with pytest.raises(pyone.OneActionException, match=r"Cannot delete image\. There are 1 VMs using it\."):
        client.image.delete(0)
    with pytest.raises(pyone.OneApiException, match="SIZE is needed"):
        client.image.allocate('NAME = "blank"\nTYPE = "DATABLOCK"', 1)
    blank = client.image.allocate('NAME = "blank"\nTYPE = "DATABLOCK"\nSIZE = "1024"', 1)
    wait_until(lambda: client.image.info(blank).STATE == READY, what="the datablock READY")
    assert client.image.info(blank).TYPE == 2
