"""Images of the simulated cloud: allocation, the datastore "download" while LOCKED, deletion.

`one.image.allocate` with FROM_APP=<marketplace app id> takes the app's source, size and format,
and records FROM_APP_NAME and FROM_APP_MD5 (`MarketPlaceApp::to_template`, src/market/MarketPlaceApp.cc);
an app id the cloud does not know answers INTERNAL `Cannot determine image SIZE.` (src/rm/api/ImageAPI.cc,
6.10 src/rm/RequestManagerAllocate.cc). The image stays LOCKED for a time that grows with the app's size, then turns READY, or
ERROR with TEMPLATE/ERROR when the app is broken. Other images copy their PATH (or create an
empty datablock of SIZE) in a short LOCKED phase.
"""

from __future__ import annotations

import time

from tui.domain.error_codes import ACTION, ALLOCATE, INTERNAL, XML_RPC_API
from tui.domain.one_states import DatastoreType, ImageState, ImageType, MarketPlaceAppState
from tui.domain.permissions import Permissions
from tui.domain.template_text import Template, scalar
from tui.sim.platform import invalid_name_chars
from tui.sim.rpc_errors import OneError, name_refusal, name_taken, no_exists
from tui.sim.state import SimDatastore, SimImage, SimMarketApp, SimSite

#: simulated seconds: a fixed part plus one second per `_MB_PER_SECOND` of app size
_BASE_COPY_TIME = 4.0
_MB_PER_SECOND = 400.0
_MAX_COPY_TIME = 120.0
_TYPES = {t.name: t for t in (ImageType.OS, ImageType.CDROM, ImageType.DATABLOCK, ImageType.KERNEL, ImageType.RAMDISK,
                              ImageType.CONTEXT)}


def copy_seconds(size_mb: int) -> float:
    return min(_BASE_COPY_TIME + size_mb / _MB_PER_SECOND, _MAX_COPY_TIME)


def _set(image: SimImage, name: str, value: str) -> None:
    image.template = [a for a in image.template if a[0] != name] + [(name, value)]


def _image_datastore(site: SimSite, ds_id: int) -> SimDatastore:
    """The image datastore `ds_id`; raises OneError like the platform for a missing or other one."""
    ds = site.datastores.get(ds_id)
    if ds is None:
        raise no_exists("DATASTORE", ds_id)
    if ds.type != DatastoreType.IMAGE_DS:
        raise OneError(ALLOCATE, "Error allocating a new image. New images cannot be allocated in a "
                                 f"{'system' if ds.type == DatastoreType.SYSTEM_DS else 'file'} datastore.", ds_id)
    return ds


def _free_image_name(site: SimSite, attrs: Template, uid: int) -> str:
    """The new image's NAME; raises OneError for a name the platform refuses or `uid` already has."""
    name = scalar(attrs, "NAME", "").strip()
    refusal = name_refusal(name, invalid_name_chars(site.config.one_version), ALLOCATE, "Error allocating a new image. ")
    if refusal is not None:
        raise refusal
    taken = next((i for i in site.images.values() if i.name == name and i.uid == uid), None)
    if taken is not None:
        # src/image/ImagePool.cc `allocate` (line 156; 7.0.0 159, 6.10.0 232) through src/rm/api/ImageAPI.cc
        # (ALLOCATE, line 957; 6.10.0 and 7.0.0 src/rm/RequestManagerAllocate.cc line 716)
        raise name_taken("IMAGE", taken.id, ALLOCATE, "Error allocating a new image. ")
    return name


def _image_source(site: SimSite, attrs: Template, type_word: str) -> tuple[int, str, str, SimMarketApp | None]:
    """The new image's size (MB), format, path and the marketplace app it comes from (FROM_APP), if
    any; raises OneError like the platform when there is none to read."""
    fmt = scalar(attrs, "FORMAT", "") or scalar(attrs, "DRIVER", "") or "qcow2"
    path = scalar(attrs, "PATH", "")
    from_app = scalar(attrs, "FROM_APP", "")
    if from_app.isdigit():
        app = site.marketapps.get(int(from_app))
        if app is None:
            raise OneError(INTERNAL, "Cannot determine image SIZE.")
        if app.state != MarketPlaceAppState.READY:
            raise OneError(ACTION, f"Marketplace app {app.id} is not in READY state.")
        return app.size_mb, app.format or fmt, app.source or path, app
    size_text = scalar(attrs, "SIZE", "")
    if type_word == "DATABLOCK" and not path:
        if not size_text.isdigit():
            raise OneError(XML_RPC_API, "Error allocating a new image. SIZE is needed for empty DATABLOCK images.")
        return int(size_text), fmt, path, None
    if not path and not scalar(attrs, "SOURCE", ""):
        raise OneError(ALLOCATE, "Error allocating a new image. No PATH nor SOURCE in image template.")
    return (int(size_text) if size_text.isdigit() else 2048), fmt, path, None


def allocate_image(site: SimSite, attrs: Template, ds_id: int, uid: int, gid: int) -> SimImage:
    """Register an image in an image datastore and start its copy; raises OneError like the platform."""
    ds = _image_datastore(site, ds_id)
    name = _free_image_name(site, attrs, uid)
    type_word = scalar(attrs, "TYPE", "OS").upper()
    if type_word not in _TYPES:
        raise OneError(ALLOCATE, f"Error allocating a new image. Unknown image type: {type_word}.")
    persistent = 1 if scalar(attrs, "PERSISTENT", "NO").upper() in ("YES", "1", "TRUE") else 0
    image_id = site.next_id("image")
    size_mb, fmt, path, app = _image_source(site, attrs, type_word)
    if size_mb > ds.free_mb:
        raise OneError(ACTION, f"Not enough space in datastore {ds.id}: {size_mb} MB needed, {ds.free_mb} MB free.")
    kept = [a for a in attrs if a[0] not in ("NAME", "TYPE", "PERSISTENT", "PATH", "SOURCE", "SIZE", "FORMAT")]
    if app is not None:
        kept = [a for a in kept if a[0] not in ("FROM_APP_NAME", "FROM_APP_MD5")]
        kept += [("FROM_APP_NAME", app.name), ("FROM_APP_MD5", app.md5)]
    if not scalar(kept, "DEV_PREFIX", ""):
        kept.append(("DEV_PREFIX", "vd"))
    image = SimImage(
        id=image_id, name=name, uid=uid, gid=gid, datastore_id=ds_id, state=ImageState.LOCKED, size_mb=size_mb,
        template=kept, type=_TYPES[type_word], persistent=persistent, path=path, format=fmt,
        source=f"/var/lib/one//datastores/{ds_id}/{image_id:032x}", perms=Permissions(1, 1, 0, 0, 0, 0, 0, 0, 0),
    )
    image.modtime = image.regtime
    site.images[image_id] = image
    ds.free_mb -= size_mb
    broken = app is not None and app.broken

    def copied() -> None:
        current = site.images.get(image_id)
        if current is not image or image.state != ImageState.LOCKED:
            return
        image.prev_state = ImageState.LOCKED
        image.modtime = int(time.time())
        if broken:
            image.state = ImageState.ERROR
            _set(image, "ERROR", f"{time.strftime('%a %b %d %H:%M:%S %Y')} : Error copying image in the datastore: "
                                 f"the download of {path or 'the appliance'} failed its MD5 check")
            ds.free_mb += size_mb
        else:
            image.state = ImageState.READY

    site.after(copy_seconds(size_mb), copied)
    return image


def delete_image(site: SimSite, image_id: int) -> None:
    image = site.images.get(image_id)
    if image is None:
        raise no_exists("IMAGE", image_id)
    if image.running_vms > 0:
        # ImageManager::delete_image (src/image/ImageManagerActions.cc 536-560 at release-7.0.0, 535-552 at
        # 6.10.0), the request prefixing "Cannot delete image. " (a 7.0.2 frontend answers it so, ACTION)
        raise OneError(ACTION, f"Cannot delete image. There are {image.running_vms} VMs using it.", image_id)
    del site.images[image_id]
    ds = site.datastores.get(image.datastore_id)
    if ds is not None and image.state != ImageState.ERROR:
        ds.free_mb = min(ds.free_mb + image.size_mb, ds.total_mb)
