"""An installed prefix, and the frontend's own location built over it in the state directory.

The prefix (`install.sh -d <prefix>`) stays untouched, so one install serves several frontends
and a state directory can be thrown away: the frontend's `ONE_LOCATION` is `<state>/one`, where
`bin`, `lib` and each entry of `share` link to the prefix, while `etc` and `var` (the
configuration, the driver scripts the harness changes, the database and logs) are copies.

7.x's Ruby code calls `Gem.use_paths(File.realpath(<ONE_LOCATION>/share/gems))`
(`share/misc/load_opennebula_paths.rb` at release-7.0.2), which replaces the gem path: there the
folder holds links to every system gem (Debian keeps them in several folders). 6.10 must not have
that folder: when it exists, 6.10's Ruby code drops Debian's vendor_ruby from the load path
(`xmlrpc/client` and `sinatra` not found, the hook driver fails and oned exits).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: files an install must hold for the harness to run it
REQUIRED = ("bin/oned", "lib/mads/onemonitord", "etc/oned.conf", "etc/monitord.conf", "etc/oneflow-server.conf",
            "lib/oneflow/oneflow-server.rb", "var/remotes/market/one/monitor",
            "var/remotes/im/dummy-probes.d/host/system/system.rb", "var/remotes/datastore/dummy/monitor")


class LayoutError(RuntimeError):
    """The prefix is not a usable install."""


@dataclass(frozen=True)
class Install:
    prefix: Path
    version: str

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) if p.isdigit() else 0 for p in self.version.split("."))

    @property
    def has_mm_sched(self) -> bool:
        """6.10 schedules with the separate mm_sched daemon; 7.x inside oned."""
        return self.version_tuple < (7, 0)

    @property
    def series(self) -> str:
        return ".".join(self.version.split(".")[:2])


def read_version(text: str) -> str:
    match = re.fullmatch(r"\s*(\d+\.\d+\.\d+)\s*", text)
    if match is None:
        raise LayoutError(f"unreadable platform version {text.strip()[:40]!r}")
    return match.group(1)


def open_install(prefix: Path) -> Install:
    """The install at `prefix`, checked: its version from `var/remotes/VERSION`."""
    prefix = prefix.resolve()
    missing = [name for name in REQUIRED if not (prefix / name).exists()]
    if missing:
        raise LayoutError(f"{prefix} is not an OpenNebula install made with install.sh -d (missing: "
                          f"{', '.join(missing)}); see shared/reference/real-platform.md")
    version_file = prefix / "var/remotes/VERSION"
    if not version_file.exists():
        raise LayoutError(f"{version_file} is missing: cannot tell the platform version")
    install = Install(prefix, read_version(version_file.read_text(encoding="utf-8")))
    if install.has_mm_sched and not (prefix / "bin/mm_sched").exists():
        raise LayoutError(f"{prefix} is {install.version} but has no bin/mm_sched")
    return install


def ruby_gem_roots(env: dict[str, str] | None = None) -> list[Path]:
    """The system ruby's gem folders (`Gem.path`) that exist."""
    out = subprocess.run(["ruby", "-e", "puts Gem.path"], capture_output=True, text=True, check=True,
                         env=env, timeout=60)
    return [Path(line) for line in out.stdout.splitlines() if line.strip() and Path(line).is_dir()]


def link_gems(target: Path, roots: list[Path]) -> int:
    """`target/{specifications,gems,extensions}` as links to every gem of `roots` (the first root
    holding a name wins); returns how many gem specifications were linked."""
    count = 0
    for sub in ("specifications", "gems"):
        (target / sub).mkdir(parents=True, exist_ok=True)
    for root in roots:
        specs = root / "specifications"
        for spec in sorted(specs.glob("*.gemspec")) if specs.is_dir() else []:
            link = target / "specifications" / spec.name
            if not link.exists():
                link.symlink_to(spec)
                count += 1
        gems = root / "gems"
        for gem in sorted(gems.iterdir()) if gems.is_dir() else []:
            link = target / "gems" / gem.name
            if not link.exists():
                link.symlink_to(gem)
        extensions = root / "extensions"
        for platform in sorted(extensions.iterdir()) if extensions.is_dir() else []:
            for api in sorted(platform.iterdir()) if platform.is_dir() else []:
                folder = target / "extensions" / platform.name / api.name
                folder.mkdir(parents=True, exist_ok=True)
                for ext in sorted(api.iterdir()):
                    link = folder / ext.name
                    if not link.exists():
                        link.symlink_to(ext)
    return count


def build_location(install: Install, location: Path, *, gem_roots: list[Path] | None = None) -> None:
    """The frontend's ONE_LOCATION at `location` (which must not exist yet)."""
    if location.exists():
        raise LayoutError(f"{location} exists already")
    location.mkdir(parents=True)
    prefix = install.prefix
    for name in ("bin", "sbin", "lib", "include"):
        if (prefix / name).exists():
            (location / name).symlink_to(prefix / name)
    share = location / "share"
    share.mkdir()
    for entry in sorted((prefix / "share").iterdir()) if (prefix / "share").is_dir() else []:
        if entry.name != "gems":
            (share / entry.name).symlink_to(entry)
    if not install.has_mm_sched:
        link_gems(share / "gems", gem_roots if gem_roots is not None else ruby_gem_roots())
    shutil.copytree(prefix / "etc", location / "etc", symlinks=True)
    shutil.copytree(prefix / "var", location / "var", symlinks=True,
                    ignore=shutil.ignore_patterns("one.db", "*.log", "oned.conf.orig", ".one", "lock"))
    for sub in ("run", "lock", "one_db"):
        (location / "var" / sub).mkdir(exist_ok=True)
    os.chmod(location / "var", 0o700)


def clear_stale_lock(location: Path) -> bool:
    """Remove the lock file a killed oned leaves (`var/lock/.lock`: oned refuses to start while it
    exists, "Cannot start oned, opening lock file"); the caller has checked that no daemon of this
    frontend runs. Whether there was one."""
    lock = location / "var" / "lock" / ".lock"
    if not lock.is_file() or lock.is_symlink():
        return False
    lock.unlink()
    return True
