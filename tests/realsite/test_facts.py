"""The real frontend's population comes from the embedded site's fresh scenario: the same hosts
in the same order, states and CPU facts (features in libvirt's spelling, as KVM probes report
them), the same networks by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from realsite import facts
from tui.sim.scenarios import seed_fresh
from tui.sim.state import SimConfig, SimSite


def test_hosts_are_the_embedded_sites_in_order(tmp_path: Path) -> None:
    site = SimSite(SimConfig(), tmp_path)
    seed_fresh(site)  # what `sitetk sim` serves
    embedded = [(h.name, h.state) for h in sorted(site.hosts.values(), key=lambda h: h.id)]
    assert [(h.name, h.state) for h in facts.scenario().hosts] == embedded


def test_the_hosts_cover_what_the_checks_must_tell_apart() -> None:
    hosts = {h.name: dict(h.facts) for h in facts.scenario().hosts}
    states = {h.name: h.state for h in facts.scenario().hosts}
    assert facts.HOST_DISABLED in states.values() and facts.HOST_OFFLINE in states.values()
    assert any(f["ARCH"] == "aarch64" for f in hosts.values())
    with_avx = [n for n, f in hosts.items() if "avx" in f.get("KVM_CPU_FEATURES", "").split(",")]
    without_avx = [n for n, f in hosts.items() if f.get("KVM_CPU_FEATURES") and "avx" not in f["KVM_CPU_FEATURES"].split(",")]
    no_features = [n for n, f in hosts.items() if "KVM_CPU_FEATURES" not in f]
    assert with_avx and without_avx and no_features
    assert all(f["HYPERVISOR"] == "kvm" and f.get("KVM_CPU_MODEL") for f in hosts.values())


def test_features_use_libvirts_spelling() -> None:
    for host in facts.scenario().hosts:
        features = dict(host.facts).get("KVM_CPU_FEATURES", "")
        assert "sse4_2" not in features and "pclmulqdq" not in features
    assert facts.libvirt_features("sse4_1, sse4_2,avx,pclmulqdq,avx512vnni") == "sse4.1,sse4.2,avx,pclmuldq,avx512-vnni"


def test_a_fact_file_is_the_probes_template_lines(tmp_path: Path) -> None:
    spec = facts.HostSpec("h1", 2, (("HYPERVISOR", "kvm"), ("MODELNAME", 'Xeon "Gold"')))
    written = facts.write_fact_files(tmp_path / "facts", (spec,))
    lines = written[0].read_text().splitlines()
    assert lines[:2] == ['HYPERVISOR="kvm"', 'MODELNAME="Xeon \\"Gold\\""']
    assert f"DS_LOCATION_FREE_MB={facts.HOST_DS_FREE_MB}" in lines
    with pytest.raises(ValueError):
        facts.write_fact_files(tmp_path / "facts", (facts.HostSpec("../etc", 2, ()),))


def test_networks_keep_their_names_mtu_and_ranges() -> None:
    vnets = {v.name: v for v in facts.scenario().vnets}
    assert set(vnets) == {"oam", "trial-vxlan"}
    oam = facts.vnet_template(vnets["oam"])
    assert 'NAME="oam"' in oam and 'VN_MAD="bridge"' in oam and 'AR=[TYPE="IP4",IP="10.11.28.20",SIZE="200"]' in oam
    vxlan = facts.vnet_template(vnets["trial-vxlan"])
    assert 'VN_MAD="vxlan"' in vxlan and 'GUEST_MTU="1450"' in vxlan and 'PHYDEV="bond0"' in vxlan
    assert '=""' not in oam + vxlan  # empty attributes are left out
