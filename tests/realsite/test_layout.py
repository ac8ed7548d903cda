"""The frontend's location over an untouched prefix: bin and lib linked, etc and var copied, the
gem folder of links only for 7.x (6.10 breaks when it exists); an install the harness cannot run
is refused with what it lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from realsite import layout


def _prefix(root: Path, version: str, *, mm_sched: bool = False) -> Path:
    prefix = root / "prefix"
    for name in layout.REQUIRED:
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_text("stock\n")
    (prefix / "var/remotes/VERSION").write_text(version + "\n")
    (prefix / "share/schemas").mkdir(parents=True)
    if mm_sched:
        (prefix / "bin/mm_sched").write_text("")
    return prefix


def _gem_root(root: Path) -> Path:
    gems = root / "gems-root"
    (gems / "specifications").mkdir(parents=True)
    (gems / "specifications/treetop-1.6.7.gemspec").write_text("spec")
    (gems / "gems/treetop-1.6.7").mkdir(parents=True)
    (gems / "extensions/x86_64-linux/3.1.0/curb-1.0.5").mkdir(parents=True)
    return gems


def test_a_7x_location_links_the_install_and_copies_what_changes(tmp_path: Path) -> None:
    install = layout.open_install(_prefix(tmp_path, "7.0.2"))
    assert (install.version, install.series, install.has_mm_sched) == ("7.0.2", "7.0", False)
    location = tmp_path / "state/one"
    layout.build_location(install, location, gem_roots=[_gem_root(tmp_path)])
    assert (location / "bin").resolve() == install.prefix / "bin"
    assert (location / "share/schemas").resolve() == install.prefix / "share/schemas"
    assert not (location / "etc").is_symlink() and (location / "etc/oned.conf").read_text() == "stock\n"
    (location / "etc/oned.conf").write_text("mine\n")
    assert (install.prefix / "etc/oned.conf").read_text() == "stock\n"  # the prefix stays untouched
    assert (location / "share/gems/specifications/treetop-1.6.7.gemspec").is_symlink()
    assert (location / "share/gems/gems/treetop-1.6.7").is_dir()
    assert (location / "share/gems/extensions/x86_64-linux/3.1.0/curb-1.0.5").is_dir()
    assert not (install.prefix / "share/gems").exists()
    with pytest.raises(layout.LayoutError, match="exists"):
        layout.build_location(install, location, gem_roots=[])


def test_6_10_gets_no_gem_folder(tmp_path: Path) -> None:
    install = layout.open_install(_prefix(tmp_path, "6.10.5", mm_sched=True))
    assert install.has_mm_sched
    layout.build_location(install, tmp_path / "one", gem_roots=[_gem_root(tmp_path)])
    assert not (tmp_path / "one/share/gems").exists()


def test_an_unusable_prefix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(layout.LayoutError, match="bin/oned"):
        layout.open_install(tmp_path)
    prefix = _prefix(tmp_path, "6.10.5")
    with pytest.raises(layout.LayoutError, match="mm_sched"):
        layout.open_install(prefix)
    (prefix / "var/remotes/VERSION").write_text("garbage")
    with pytest.raises(layout.LayoutError, match="version"):
        layout.open_install(prefix)


def test_a_killed_oneds_lock_file_is_cleared_once(tmp_path: Path) -> None:
    """oned refuses to start while var/lock/.lock exists; a frontend killed without its stop leaves it."""
    lock = tmp_path / "one" / "var" / "lock" / ".lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    assert layout.clear_stale_lock(tmp_path / "one") and not lock.exists()
    assert not layout.clear_stale_lock(tmp_path / "one")
