"""CPU compatibility: host verdicts, VM verdicts, the model table, host ranking, updateconf text."""

from __future__ import annotations

import pytest

from tui.domain.attributes import Attributes
from tui.domain.cpu import (
    CPU_MODEL_TABLE,
    DEFAULT_KNOWN_GOOD_MODELS,
    HostCpu,
    HostVerdictKind,
    VmVerdictKind,
    cpu_model_update_text,
    host_verdict,
    is_known_good,
    model_info,
    parse_features,
    rank_hosts,
    vm_verdict,
)
from tui.domain.template_text import parse_template

from .builders import host

TEMPLATE = Attributes(
    (
        ("ARCH", "x86_64"),
        ("MODELNAME", "Intel(R) Xeon(R) Gold 6230"),
        ("KVM_CPU_MODEL", "Cascadelake-Server-noTSX"),
        ("KVM_CPU_MODELS", "qemu64 Broadwell-noTSX Cascadelake-Server-noTSX"),
        ("KVM_CPU_FEATURES", "vme,ss,sse4.2,avx,avx2"),
        ("KVM_MACHINES", "pc q35"),
    )
)


def test_host_cpu_from_template() -> None:
    cpu = HostCpu.from_template(TEMPLATE)
    assert cpu.arch == "x86_64"
    assert cpu.model_name.startswith("Intel")
    assert cpu.kvm_cpu_model == "Cascadelake-Server-noTSX"
    assert cpu.kvm_cpu_models == ("qemu64", "Broadwell-noTSX", "Cascadelake-Server-noTSX")
    assert cpu.features == {"vme", "ss", "sse4_2", "avx", "avx2"}
    assert cpu.has_avx and cpu.has_sse4_2 and cpu.has("SSE4.2")
    # a plain mapping and the list form work too
    assert HostCpu.from_template(dict(TEMPLATE.scalars())) == cpu
    assert HostCpu.from_template(parse_template(TEMPLATE.to_text())) == cpu


def test_host_cpu_without_features() -> None:
    cpu = HostCpu.from_template({"ARCH": "x86_64", "KVM_CPU_FEATURES": "  "})
    assert cpu.features is None and cpu.has_avx is None and cpu.has_sse4_2 is None
    assert HostCpu.from_template({}) == HostCpu()


def test_host_cpu_from_host_record() -> None:
    cpu = HostCpu.from_host(host(1, features=("SSE4.2", "avx")))
    assert cpu.features == {"sse4_2", "avx"}
    assert HostCpu.from_host(host(1, features=None)).features is None


def test_parse_features() -> None:
    assert parse_features("sse4.2, avx avx2,,") == {"sse4_2", "avx", "avx2"}


def test_compatible_host() -> None:
    verdict = host_verdict(HostCpu.from_template(TEMPLATE))
    assert verdict.kind is HostVerdictKind.COMPATIBLE and verdict.known_good
    assert verdict.text == "compatible"


@pytest.mark.parametrize(
    ("cpu", "reasons"),
    [
        (HostCpu(arch="x86_64", features=frozenset({"sse4_2"})), ("no AVX",)),
        (HostCpu(arch="x86_64", features=frozenset({"avx"})), ("no SSE4.2",)),
        (HostCpu(arch="x86_64", features=frozenset({"sse"})), ("no SSE4.2", "no AVX")),
        (HostCpu(arch="aarch64", features=frozenset({"sse4_2", "avx"})), ("architecture aarch64, not x86_64 (64-bit)",)),
        (HostCpu(arch="i686", features=None), ("architecture i686, not x86_64 (64-bit)",)),
    ],
)
def test_incompatible_hosts_say_why(cpu: HostCpu, reasons: tuple[str, ...]) -> None:
    verdict = host_verdict(cpu)
    assert verdict.kind is HostVerdictKind.INCOMPATIBLE
    assert verdict.reasons == reasons


def test_amd64_is_x86_64() -> None:
    assert host_verdict(HostCpu(arch="amd64", features=frozenset({"sse4_2", "avx"}))).kind is HostVerdictKind.COMPATIBLE


@pytest.mark.parametrize(
    ("model", "hint"),
    [
        ("Broadwell-noTSX", "is one found compatible"),
        ("Haswell", "exposes AVX and SSE4.2"),
        ("Westmere", "lacks AVX"),
        ("qemu64", "lacks SSE4.2 and AVX"),
        ("Mystery", None),
        ("", None),
    ],
)
def test_hosts_without_features_are_unknown_with_a_hint(model: str, hint: str | None) -> None:
    verdict = host_verdict(HostCpu(arch="x86_64", kvm_cpu_model=model))
    assert verdict.kind is HostVerdictKind.UNKNOWN
    assert verdict.reasons[0] == "the host reports no CPU features"
    if hint is None:
        assert len(verdict.reasons) == 1
    else:
        assert hint in verdict.reasons[1]


def test_host_without_architecture_is_unknown() -> None:
    verdict = host_verdict(HostCpu(features=frozenset({"sse4_2", "avx"})))
    assert verdict.kind is HostVerdictKind.UNKNOWN and "architecture" in verdict.reasons[0]


def test_known_good_models_are_data() -> None:
    assert DEFAULT_KNOWN_GOOD_MODELS == ("Cascadelake-Server-noTSX", "Broadwell-IBRS", "Broadwell-noTSX")
    cpu = HostCpu(arch="x86_64", kvm_cpu_model="EPYC-Rome", features=frozenset({"sse4_2", "avx"}))
    assert not host_verdict(cpu).known_good
    assert host_verdict(cpu, known_good=DEFAULT_KNOWN_GOOD_MODELS + ("EPYC-Rome",)).known_good
    assert is_known_good("broadwell-notsx")


@pytest.mark.parametrize(
    ("model", "avx", "sse4_2"),
    [
        ("Westmere", False, True),
        ("Westmere-IBRS", False, True),
        ("Nehalem", False, True),
        ("SandyBridge", True, True),
        ("IvyBridge-IBRS", True, True),
        ("Haswell-noTSX", True, True),
        ("qemu64", False, False),
        ("kvm64", False, False),
        ("Broadwell-noTSX-IBRS", True, True),
        ("Skylake-Server-IBRS", True, True),
        ("Cascadelake-Server", True, True),
        ("Icelake-Server-noTSX", True, True),
        ("EPYC-Milan", True, True),
        ("EPYC", True, True),
        ("Opteron_G3", False, False),
        ("Opteron_G5", True, True),
        ("Snowridge", False, True),
    ],
)
def test_model_table(model: str, avx: bool, sse4_2: bool) -> None:
    info = model_info(model)
    assert info is not None and (info.avx, info.sse4_2) == (avx, sse4_2)


def test_unknown_models_are_not_in_the_table() -> None:
    assert model_info("Zen9000") is None
    assert model_info("host-passthrough") is None
    assert all(entry.pattern for entry in CPU_MODEL_TABLE)


COMPATIBLE = HostCpu(arch="x86_64", kvm_cpu_model="Broadwell-noTSX", features=frozenset({"sse4_2", "avx"}))
NO_AVX = HostCpu(arch="x86_64", kvm_cpu_model="Westmere", features=frozenset({"sse4_2"}))
SILENT = HostCpu(arch="x86_64", kvm_cpu_model="Broadwell-noTSX")


@pytest.mark.parametrize(
    ("model", "cpu", "kind", "reason"),
    [
        ("Broadwell-noTSX", COMPATIBLE, VmVerdictKind.FINE, "found compatible"),
        ("Broadwell-noTSX", None, VmVerdictKind.FINE, "found compatible"),
        ("Haswell", SILENT, VmVerdictKind.FINE, "exposes AVX and SSE4.2"),
        ("host-passthrough", COMPATIBLE, VmVerdictKind.HOST_PASSTHROUGH, "discouraged"),
        ("host-passthrough", None, VmVerdictKind.HOST_PASSTHROUGH, "discouraged"),
        ("host-passthrough", NO_AVX, VmVerdictKind.MODEL_LACKS_FLAGS, "no AVX"),
        ("Westmere", COMPATIBLE, VmVerdictKind.MODEL_LACKS_FLAGS, "hides AVX"),
        ("qemu64", COMPATIBLE, VmVerdictKind.MODEL_LACKS_FLAGS, "hides SSE4.2 and AVX"),
        ("Broadwell-noTSX", NO_AVX, VmVerdictKind.MODEL_LACKS_FLAGS, "its host is incompatible"),
        ("", COMPATIBLE, VmVerdictKind.UNKNOWN, "no CPU model set"),
        (None, None, VmVerdictKind.UNKNOWN, "no CPU model set"),
        ("", NO_AVX, VmVerdictKind.MODEL_LACKS_FLAGS, "no AVX"),
        ("host-model", COMPATIBLE, VmVerdictKind.FINE, "host-model"),
        ("host-model", SILENT, VmVerdictKind.UNKNOWN, "unknown"),
        ("Zen9000", COMPATIBLE, VmVerdictKind.UNKNOWN, "not in the model table"),
    ],
)
def test_vm_verdicts(model: str | None, cpu: HostCpu | None, kind: VmVerdictKind, reason: str) -> None:
    verdict = vm_verdict(model, cpu)
    assert verdict.kind is kind
    assert reason in verdict.reason
    assert verdict.at_risk == (kind in (VmVerdictKind.MODEL_LACKS_FLAGS, VmVerdictKind.HOST_PASSTHROUGH))


def test_vm_verdict_uses_settings_models() -> None:
    assert vm_verdict("Zen9000", None, known_good=("Zen9000",)).kind is VmVerdictKind.FINE


def test_rank_hosts_orders_by_free_capacity_and_excludes_with_reasons() -> None:
    hosts = [
        host(1, used_cpu=600),  # 200 free
        host(2, used_cpu=100),  # 700 free
        host(3, used_cpu=100, used_mem_kb=8 * 1024 * 1024),  # 700 free, less memory
        host(4, features=("sse4_2",)),
        host(5, features=None),
        host(6, arch="aarch64"),
        host(7, state=4),
        host(8, used_cpu=750),  # 50 free: below the CPU threshold
        host(9, used_mem_kb=15 * 1024 * 1024),  # 1 GiB free: below the memory threshold
        host(10),  # the VM's current host
    ]
    ranking = rank_hosts(hosts, min_free_cpu=100, min_free_mem_mib=2048, exclude_host_id=10)
    assert [r.host.id for r in ranking.eligible] == [2, 3, 1]
    reasons = {e.host.id: e.reason for e in ranking.excluded}
    assert set(reasons) == {4, 5, 6, 7, 8, 9, 10}
    assert "no AVX" in reasons[4]
    assert "reports no CPU features" in reasons[5]
    assert "aarch64" in reasons[6]
    assert reasons[7].startswith("host state DISABLED: the scheduler places no VM") and "onehost enable 7" in reasons[7]
    assert reasons[8] == "free CPU 50 below the threshold 100"
    assert reasons[9] == "free memory 1024 MiB below the threshold 2048 MiB"
    assert reasons[10] == "the VM's current host"
    assert not ranking.passthrough_allowed


def test_known_good_breaks_capacity_ties() -> None:
    ranking = rank_hosts([host(1, model="Haswell"), host(2, model="Broadwell-IBRS")])
    assert [r.host.id for r in ranking.eligible] == [2, 1]
    assert ranking.eligible[0].verdict.known_good


def test_passthrough_only_when_no_compatible_host() -> None:
    ranking = rank_hosts([host(1, features=("sse4_2",)), host(2, features=None)])
    assert ranking.eligible == () and ranking.passthrough_allowed
    assert rank_hosts([]).passthrough_allowed


def test_cpu_model_update_text() -> None:
    text = cpu_model_update_text("Broadwell-noTSX")
    assert parse_template(text) == [("CPU_MODEL", [("MODEL", "Broadwell-noTSX")])]
    assert text.startswith("CPU_MODEL = [") and 'MODEL = "Broadwell-noTSX"' in text
    assert parse_template(cpu_model_update_text(' odd"name ')) == [("CPU_MODEL", [("MODEL", 'odd"name')])]
    with pytest.raises(ValueError, match="required"):
        cpu_model_update_text("  ")
