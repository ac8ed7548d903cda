"""The lxml builders and the state tables: shapes the sim may not produce (unknown codes, missing
elements, several NICs, role VMs named by OneFlow), read without raising; a malformed number is a MalformedResponse."""

from __future__ import annotations

import base64

import pytest
from lxml import etree

from tui.adapters import cloud_parse as parse
from tui.adapters.cloud_transport import MalformedResponse
from tui.adapters.vm_summary_page import vm_summary_page
from tui.domain.vms import LCM_STATES, VM_STATES, service_from_name, state_kind, state_names


def xml(text: str) -> etree._Element:
    return etree.fromstring(text.encode())


@pytest.mark.parametrize(
    "state, lcm, short",
    [(3, 3, "runn"), (1, 0, "pend"), (8, 0, "poff"), (9, 0, "unde"), (3, 32, "boot"), (3, 29, "shut"),
     (3, 36, "fail"), (3, 69, "back"), (3, 70, "back"), (3, 71, "rest"), (3, 62, "drsz"), (2, 0, "hold"),
     (6, 0, "done"), (3, 16, "unkn")],
)
def test_cli_short_state_names(state: int, lcm: int, short: str) -> None:
    assert state_names(state, lcm)[1] == short


def test_unknown_codes_never_raise() -> None:
    assert state_names(3, 99) == ("LCM_STATE_99", "?99")
    assert state_names(42, 0) == ("STATE_42", "?42")
    assert state_kind(3, 99) == "unknown"
    assert state_kind(3, 3) == "running"
    assert state_kind(3, 36) == "failed"
    assert state_kind(8, 0) == "off"
    assert state_kind(3, 2) == "transient"
    assert set(range(72)) <= set(LCM_STATES)
    assert set(range(12)) <= set(VM_STATES)


def test_service_from_role_vm_name() -> None:
    assert service_from_name("manager_0_(service_12)") == (12, "manager")
    assert service_from_name("my_role_3_(service_4)") == (4, "my_role")
    assert service_from_name("plain-vm") == (None, "")


def test_short_vm_body_to_summary() -> None:
    vm = parse.vm_summary(xml("""
<VM><ID>7</ID><UID>2</UID><GID>1</GID><UNAME>alice</UNAME><GNAME>users</GNAME><NAME>a[/]b</NAME>
<LAST_POLL>0</LAST_POLL><STATE>3</STATE><LCM_STATE>3</LCM_STATE><RESCHED>0</RESCHED><STIME>100</STIME>
<ETIME>0</ETIME><DEPLOY_ID>one-7</DEPLOY_ID>
<TEMPLATE><CPU><![CDATA[0.5]]></CPU><MEMORY><![CDATA[2048]]></MEMORY><VCPU><![CDATA[2]]></VCPU>
<NIC><IP><![CDATA[10.0.0.5]]></IP><NIC_ID>0</NIC_ID></NIC><NIC><IP6_GLOBAL>2001:db8::5</IP6_GLOBAL><NIC_ID>1</NIC_ID></NIC></TEMPLATE>
<MONITORING><CPU>12.5</CPU><MEMORY>1024</MEMORY></MONITORING>
<USER_TEMPLATE><SERVICE_ID>3</SERVICE_ID><ROLE_NAME>manager</ROLE_NAME></USER_TEMPLATE>
<HISTORY_RECORDS><HISTORY><OID>7</OID><SEQ>1</SEQ><HOSTNAME>kvm-2</HOSTNAME><HID>2</HID></HISTORY></HISTORY_RECORDS>
</VM>"""))
    assert (vm.id, vm.name, vm.owner, vm.group) == (7, "a[/]b", "alice", "users")
    assert (vm.state_name, vm.status, vm.running) == ("runn", "RUNNING", True)
    assert (vm.host, vm.host_id) == ("kvm-2", 2)
    assert vm.ips == ("10.0.0.5", "2001:db8::5")
    assert (vm.cpu, vm.vcpu, vm.memory_mb) == (0.5, 2, 2048)
    assert (vm.cpu_usage, vm.memory_usage_kb) == (12.5, 1024)
    assert (vm.service_id, vm.role_name) == (3, "manager")


def test_summary_tolerates_a_bare_vm_and_reads_the_role_from_the_name() -> None:
    vm = parse.vm_summary(xml("<VM><ID>1</ID><NAME>automation_0_(service_9)</NAME><STATE>3</STATE>"
                              "<LCM_STATE>71</LCM_STATE></VM>"))
    assert (vm.state_name, vm.host, vm.ips, vm.memory_mb) == ("rest", "", (), 0)
    assert (vm.service_id, vm.role_name) == (9, "automation")


def test_full_vm_to_detail() -> None:
    detail = parse.vm_detail(xml("""
<VM><ID>4</ID><NAME>m</NAME><STATE>9</STATE><LCM_STATE>0</LCM_STATE><PREV_STATE>3</PREV_STATE>
<PERMISSIONS><OWNER_U>1</OWNER_U><OWNER_M>1</OWNER_M><OWNER_A>0</OWNER_A><GROUP_U>1</GROUP_U><GROUP_M>0</GROUP_M>
<GROUP_A>0</GROUP_A><OTHER_U>0</OTHER_U><OTHER_M>0</OTHER_M><OTHER_A>0</OTHER_A></PERMISSIONS>
<TEMPLATE><CONTEXT><NETWORK>YES</NETWORK><SSH_PUBLIC_KEY>ssh-ed25519 AAA</SSH_PUBLIC_KEY></CONTEXT>
<CPU_MODEL><MODEL>Broadwell-noTSX</MODEL></CPU_MODEL>
<DISK><DISK_ID>0</DISK_ID><IMAGE>img</IMAGE><IMAGE_ID>3</IMAGE_ID><SIZE>10240</SIZE><TARGET>vda</TARGET></DISK>
<DISK><DISK_ID>1</DISK_ID><IMAGE>data</IMAGE><IMAGE_ID>5</IMAGE_ID></DISK>
<NIC><NIC_ID>0</NIC_ID><NETWORK>oam</NETWORK><NETWORK_ID>0</NETWORK_ID><IP>10.0.0.9</IP><MAC>02:00</MAC></NIC></TEMPLATE>
<USER_TEMPLATE><READY>YES</READY></USER_TEMPLATE>
<HISTORY_RECORDS><HISTORY><SEQ>0</SEQ><HOSTNAME>h0</HOSTNAME><HID>0</HID><STIME>1</STIME><ETIME>2</ETIME></HISTORY>
<HISTORY><SEQ>1</SEQ><HOSTNAME>h1</HOSTNAME><HID>1</HID><STIME>3</STIME><ETIME>0</ETIME></HISTORY></HISTORY_RECORDS></VM>"""))
    assert detail.cpu_model == "Broadwell-noTSX"
    assert [d.image_id for d in detail.disks] == [3, 5]
    assert detail.disks[0].size_mb == 10240 and detail.disks[1].size_mb is None
    assert detail.nics[0].network == "oam" and detail.nics[0].ip == "10.0.0.9"
    assert detail.context == (("NETWORK", "YES"), ("SSH_PUBLIC_KEY", "ssh-ed25519 AAA"))
    assert [h.hostname for h in detail.history] == ["h0", "h1"]
    assert detail.last_host is not None and detail.last_host.host_id == 1
    assert detail.summary.host == "h1"
    assert detail.permissions.octal == "640"
    assert detail.state_name == "unde"
    assert not detail.ready  # READY=YES only counts while running


def test_host_cpu_facts() -> None:
    host = parse.host(xml("""
<HOST><ID>1</ID><NAME>kvm-1</NAME><STATE>2</STATE><IM_MAD>kvm</IM_MAD><VM_MAD>kvm</VM_MAD><CLUSTER_ID>0</CLUSTER_ID>
<CLUSTER>default</CLUSTER><HOST_SHARE><MEM_USAGE>1048576</MEM_USAGE><CPU_USAGE>100</CPU_USAGE>
<TOTAL_MEM>8388608</TOTAL_MEM><TOTAL_CPU>800</TOTAL_CPU><MAX_MEM>8388608</MAX_MEM><MAX_CPU>800</MAX_CPU>
<RUNNING_VMS>1</RUNNING_VMS></HOST_SHARE><VMS><ID>4</ID></VMS>
<TEMPLATE><ARCH>x86_64</ARCH><KVM_CPU_FEATURES>sse4.2,avx, avx2</KVM_CPU_FEATURES>
<KVM_CPU_MODEL>Broadwell-noTSX</KVM_CPU_MODEL><KVM_CPU_MODELS>Broadwell-noTSX Haswell qemu64</KVM_CPU_MODELS>
<MODELNAME>Intel Xeon</MODELNAME></TEMPLATE></HOST>"""))
    assert (host.name, host.state_name, host.arch) == ("kvm-1", "on", "x86_64")
    assert host.kvm_cpu_models == ("Broadwell-noTSX", "Haswell", "qemu64")
    assert host.kvm_cpu_features == ("sse4.2", "avx", "avx2")
    assert host.free_cpu_percent == 87.5
    assert host.free_mem_mib == 7168
    assert host.vm_ids == (4,)
    bare = parse.host(xml("<HOST><ID>2</ID><NAME>arm</NAME><STATE>8</STATE></HOST>"))
    assert bare.kvm_cpu_features is None and bare.state_name == "off" and not bare.usable


def test_image_marketapp_acl_document_system() -> None:
    image = parse.image(xml("<IMAGE><ID>3</ID><NAME>i</NAME><STATE>5</STATE><DATASTORE_ID>1</DATASTORE_ID>"
                            "<TEMPLATE><ERROR>download failed</ERROR><PLATFORM_MARKETPLACE_APPLIANCE_NAME>X"
                            "</PLATFORM_MARKETPLACE_APPLIANCE_NAME></TEMPLATE></IMAGE>"))
    assert (image.state_name, image.error) == ("err", "download failed")
    assert image.attributes.get("PLATFORM_MARKETPLACE_APPLIANCE_NAME") == "X"
    encoded = base64.b64encode(b'NAME="x"\nPATH="http://m/x"').decode()
    app = parse.marketapp(xml(f"<MARKETPLACEAPP><ID>5</ID><NAME>svc</NAME><TYPE>3</TYPE><STATE>1</STATE>"
                              f"<APPTEMPLATE64>{encoded}</APPTEMPLATE64><TEMPLATE><ROLE><NAME>manager</NAME>"
                              f"<APP>mgr</APP></ROLE><ROLE><NAME>automation</NAME><APP>auto</APP></ROLE>"
                              f"</TEMPLATE></MARKETPLACEAPP>"))
    assert app.type_name == "SERVICE_TEMPLATE" and app.state_name == "READY"
    assert app.roles == (("manager", "mgr"), ("automation", "auto"))
    assert app.app_template.startswith('NAME="x"')
    rule = parse.acl(xml("<ACL><ID>2</ID><USER>200000001</USER><RESOURCE>4000400000000</RESOURCE><RIGHTS>1</RIGHTS>"
                         "<ZONE>400000000</ZONE><STRING>@1 NET/* USE *</STRING></ACL>"))
    assert (rule.user, rule.rights, rule.string) == (0x200000001, 1, "@1 NET/* USE *")
    with pytest.raises(MalformedResponse):
        parse.acl(xml("<ACL><ID>2</ID><USER>zz</USER></ACL>"))
    doc = parse.document(xml('<DOCUMENT><ID>1</ID><NAME>t</NAME><TYPE>101</TYPE><TEMPLATE><BODY><![CDATA[{"name": "t"}]]>'
                             "</BODY></TEMPLATE></DOCUMENT>"))
    assert doc.body == {"name": "t"}
    conf = parse.system_config(xml("<OPENNEBULA_CONFIGURATION><ONEGATE_ENDPOINT>http://gate:5030</ONEGATE_ENDPOINT>"
                                   "<DB><BACKEND>sqlite</BACKEND></DB></OPENNEBULA_CONFIGURATION>"))
    assert conf.onegate_endpoint == "http://gate:5030"
    assert conf.attributes.vector("DB") == {"BACKEND": "sqlite"}


def test_wrong_root_is_malformed() -> None:
    with pytest.raises(MalformedResponse):
        parse.vm_detail(xml("<HOST><ID>1</ID></HOST>"))
    with pytest.raises(MalformedResponse):
        parse.pool(xml("<VM_POOL/>"), "HOST_POOL", "HOST", parse.host)


@pytest.mark.parametrize("bad", ["abc", "12abc", "nan", "inf", "1" * 41])
def test_a_malformed_number_is_a_malformed_answer_not_a_silent_zero(bad: str) -> None:
    """A state, ID or count the platform sends as garbage is never read as 0 (state 0 is INIT,
    ID 0 oneadmin's), nor a missing optional number as None (issue 22 review)."""
    with pytest.raises(MalformedResponse, match="number"):
        parse.vm_summary(xml(f"<VM><ID>7</ID><STATE>{bad}</STATE><LCM_STATE>3</LCM_STATE></VM>"))
    with pytest.raises(MalformedResponse, match="number"):
        parse.vm_summary(xml(f"<VM><ID>7</ID><STATE>3</STATE><HISTORY_RECORDS><HISTORY><HID>{bad}</HID>"
                             "</HISTORY></HISTORY_RECORDS></VM>"))
    with pytest.raises(MalformedResponse, match="number"):
        parse.vm_summary(xml(f"<VM><ID>7</ID><MONITORING><CPU>{bad}</CPU></MONITORING></VM>"))


def test_a_number_an_owner_wrote_in_a_template_is_unknown_when_it_is_not_one() -> None:
    """SERVICE_ID in a VM's USER_TEMPLATE and a network's MTU are text any owner can update: a typo
    there makes that value unknown, never the whole VM list or network list a malformed answer."""
    vm = parse.vm_summary(xml("<VM><ID>7</ID><STATE>3</STATE><USER_TEMPLATE><SERVICE_ID>twelve</SERVICE_ID>"
                              "<ROLE_NAME>manager</ROLE_NAME></USER_TEMPLATE></VM>"))
    assert (vm.id, vm.service_id, vm.role_name) == (7, None, "manager")
    net = parse.vnet(xml("<VNET><ID>3</ID><NAME>oam</NAME><TEMPLATE><MTU>big</MTU><GUEST_MTU>1450</GUEST_MTU>"
                         "</TEMPLATE></VNET>"))
    assert (net.id, net.mtu, net.guest_mtu) == (3, None, 1450)


def test_missing_or_empty_numbers_still_read_as_their_defaults() -> None:
    vm = parse.vm_summary(xml("<VM><ID>7</ID><STATE></STATE><TEMPLATE><CPU>0.5</CPU><MEMORY>512.0</MEMORY></TEMPLATE>"
                              "<HISTORY_RECORDS><HISTORY><HID></HID></HISTORY></HISTORY_RECORDS></VM>"))
    assert (vm.id, vm.state, vm.host_id, vm.cpu, vm.memory_mb, vm.cpu_usage) == (7, 0, None, 0.5, 512, None)


# the VM list's pages read ahead: the stylesheet's texts give what `vm_summary` gives ----------
_TRICKY_VMS = (
    # the platform's short body
    "<VM><ID>7</ID><UID>2</UID><GID>1</GID><UNAME>alice</UNAME><GNAME>users</GNAME><NAME>a[/]b &amp; c</NAME>"
    "<STATE>3</STATE><LCM_STATE>3</LCM_STATE><STIME>100</STIME><TEMPLATE><CPU><![CDATA[0.5]]></CPU>"
    "<MEMORY><![CDATA[2048]]></MEMORY><VCPU><![CDATA[2]]></VCPU><NIC><IP><![CDATA[10.0.0.5]]></IP></NIC>"
    "<NIC_ALIAS><IP6>fe80::1</IP6><IP6_GLOBAL>2001:db8::5</IP6_GLOBAL></NIC_ALIAS></TEMPLATE>"
    "<MONITORING><CPU>12.5</CPU><MEMORY>1024</MEMORY></MONITORING>"
    "<USER_TEMPLATE><SERVICE_ID>3</SERVICE_ID><ROLE_NAME>manager</ROLE_NAME></USER_TEMPLATE>"
    "<HISTORY_RECORDS><HISTORY><HOSTNAME>kvm-1</HOSTNAME><HID>1</HID></HISTORY>"
    "<HISTORY><HOSTNAME>kvm-2</HOSTNAME><HID>2</HID></HISTORY></HISTORY_RECORDS></VM>",
    # bare; a role VM named by OneFlow; a service id an owner mistyped
    "<VM><ID>1</ID></VM>",
    "<VM><ID>2</ID><NAME>automation_0_(service_9)</NAME><STATE>3</STATE><LCM_STATE>71</LCM_STATE></VM>",
    "<VM><ID>3</ID><USER_TEMPLATE><SERVICE_ID>twelve</SERVICE_ID><ROLE_NAME>r</ROLE_NAME></USER_TEMPLATE></VM>",
    # repeated tags (the last wins), an empty and a missing address, empty monitored values
    "<VM><ID>4</ID><NAME>first</NAME><NAME>second</NAME><TEMPLATE><CPU>1</CPU></TEMPLATE><TEMPLATE><CPU>2</CPU>"
    "<CPU>3</CPU><NIC><IP></IP><MAC>m</MAC></NIC><NIC><IP>10.0.0.1</IP><IP>10.0.0.2</IP></NIC></TEMPLATE>"
    "<MONITORING><CPU></CPU><MEMORY/></MONITORING><HISTORY_RECORDS><HISTORY><HID>5</HID><HID></HID>"
    "</HISTORY></HISTORY_RECORDS></VM>",
    # texts beside elements and comments: an element's text is what comes before its first child
    "<VM><ID>5</ID><NAME>x<B>y</B>z</NAME><UNAME><!--c-->u</UNAME><GNAME><B/>g</GNAME>"
    "<HISTORY_RECORDS><HISTORY><HOSTNAME>h</HOSTNAME><HID>1</HID></HISTORY><!-- last --></HISTORY_RECORDS>"
    "<TEMPLATE><NIC><IP><B/>10.1.1.1</IP></NIC></TEMPLATE></VM>",
    # what other elements hold, under names the summary reads, is not read
    "<VM><ID>6</ID><DISK><NAME>d</NAME><IP>1.2.3.4</IP></DISK><TEMPLATE><DISK><IP>1.2.3.5</IP></DISK>"
    "<CONTEXT><ETH0_IP>1.2.3.6</ETH0_IP></CONTEXT></TEMPLATE><USER_TEMPLATE><VM><ID>99</ID></VM></USER_TEMPLATE>"
    "</VM>",
    # addresses in document order, whatever the order of the NICs, aliases and address kinds
    "<VM><ID>9</ID><TEMPLATE><NIC_ALIAS><IP>10.9.0.1</IP></NIC_ALIAS><NIC><IP6>fe80::9</IP6><IP>10.9.0.2</IP>"
    "<IP6_GLOBAL>2001:db8::9</IP6_GLOBAL></NIC><NIC_ALIAS><IP6_GLOBAL>2001:db8::a</IP6_GLOBAL><IP>10.9.0.3</IP>"
    "</NIC_ALIAS></TEMPLATE></VM>",
    # white space and line ends kept as they are; text the whole world writes
    "<VM><ID> 8 </ID><NAME> tab\there\nline </NAME><UNAME>Ω ✓ 名前 😀</UNAME><STIME></STIME></VM>",
)


def _page(*vms: str) -> etree._Element:
    return xml("<VM_POOL>" + "".join(vms) + "<!-- c --><HOST><ID>1</ID></HOST></VM_POOL>")


def test_a_page_read_by_the_stylesheet_gives_what_each_vm_read_alone_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """`vm_summary_page` (the VM list's pages parsed ahead) against `vm_summary` on every shape
    above: the same rows, without ever falling back to the element reader."""
    expected = [parse.vm_summary(xml(vm)) for vm in _TRICKY_VMS]
    page = _page(*_TRICKY_VMS)

    def no_fallback(vm: etree._Element) -> None:
        raise AssertionError("the page was read element by element")
    monkeypatch.setattr(parse, "vm_summary", no_fallback)
    assert vm_summary_page(page) == expected
    assert expected[4].name == "second" and expected[4].ips == ("10.0.0.1", "10.0.0.2")
    assert (expected[4].cpu, expected[4].cpu_usage, expected[4].memory_usage_kb) == (3.0, 0.0, 0)
    assert (expected[5].name, expected[5].owner, expected[5].group, expected[5].host) == ("x", "", "", "")
    assert expected[7].ips == ("10.9.0.1", "fe80::9", "10.9.0.2", "2001:db8::9", "2001:db8::a", "10.9.0.3")
    assert vm_summary_page(_page()) == []


@pytest.mark.parametrize("text", ["\ue000", "\ue001", "a\ue000b\ue001c", "\ue001\ue001", "0\ue0000"])
@pytest.mark.parametrize("where", ["NAME", "UNAME", "IP", "ROLE_NAME", "HOSTNAME"])
def test_a_text_holding_a_separator_is_read_element_by_element(text: str, where: str) -> None:
    """The stylesheet separates fields and records with two private-use characters, which a name
    may hold: the records then do not split as the page's VMs do, and the page is read by
    `vm_summary` instead (never a shifted field)."""
    vm = (f"<VM><ID>9</ID><NAME>{text if where == 'NAME' else 'n'}</NAME><UNAME>{text if where == 'UNAME' else 'u'}"
          f"</UNAME><TEMPLATE><NIC><IP>{text if where == 'IP' else '1.1.1.1'}</IP></NIC></TEMPLATE>"
          f"<USER_TEMPLATE><ROLE_NAME>{text if where == 'ROLE_NAME' else '1'}</ROLE_NAME></USER_TEMPLATE>"
          f"<HISTORY_RECORDS><HISTORY><HOSTNAME>{text if where == 'HOSTNAME' else 'h'}</HOSTNAME></HISTORY>"
          "</HISTORY_RECORDS></VM>")
    vms = (_TRICKY_VMS[0], vm, _TRICKY_VMS[2])
    assert vm_summary_page(_page(*vms)) == [parse.vm_summary(xml(v)) for v in vms]


@pytest.mark.parametrize("bad", ["abc", "12abc", "nan", "inf", "1" * 41])
@pytest.mark.parametrize("where", ["<STATE>{}</STATE>", "<ID>{}</ID>", "<TEMPLATE><MEMORY>{}</MEMORY></TEMPLATE>",
                                   "<HISTORY_RECORDS><HISTORY><HID>{}</HID></HISTORY></HISTORY_RECORDS>",
                                   "<MONITORING><CPU>{}</CPU></MONITORING>", "<MONITORING><MEMORY>{}</MEMORY></MONITORING>"])
def test_a_malformed_number_in_a_page_read_by_the_stylesheet_is_a_malformed_answer(bad: str, where: str) -> None:
    page = _page(_TRICKY_VMS[1], "<VM>" + where.format(bad) + "</VM>")
    with pytest.raises(MalformedResponse, match="number"):
        vm_summary_page(page)
