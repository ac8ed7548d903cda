"""Conformance rows of the cloud's XML-RPC API (OpenNebula/one, release-7.4.0 unless a row names
another tag; 6.10 agrees where the row says nothing), on every emulated platform version."""

from __future__ import annotations

import base64

import pytest

from tests.conformance.conftest import failure, ok, rpc, wait_vm
from tests.conftest import SimFactory
from tui.domain.error_codes import ACTION, ALLOCATE, AUTHENTICATION, INTERNAL, NO_EXISTS, XML_RPC_API
from tui.domain.template_text import parse_template
from tui.sim.server import SimServer
from tui.sim.state import SimVm

ACTIVE, HOLD, POWEROFF, UNDEPLOYED, SUSPENDED, DONE = 3, 2, 8, 9, 5, 6
RUNNING, BOOT_FAILURE, BOOT_UNDEPLOY_FAILURE = 3, 36, 47
MODEL = "Cascadelake-Server-noTSX"


def _host_id(sim: SimServer, name: str) -> int:
    return next(h.id for h in sim.site.hosts.values() if h.name == name)


def _held(sim: SimServer, name: str = "held") -> int:
    return int(ok(rpc(sim, "one.template.instantiate", 0, name, True)))


def _running(sim: SimServer, name: str = "running", host: str = "kvm-cascadelake-01") -> int:
    vm_id = _held(sim, name)
    ok(rpc(sim, "one.vm.deploy", vm_id, _host_id(sim, host)))
    wait_vm(sim, vm_id, lambda vm: (vm.state, vm.lcm_state) == (ACTIVE, RUNNING), "RUNNING")
    return vm_id


def _undeployed(sim: SimServer, name: str = "undeployed") -> int:
    vm_id = _running(sim, name)
    ok(rpc(sim, "one.vm.action", "undeploy-hard", vm_id))
    wait_vm(sim, vm_id, lambda vm: vm.state == UNDEPLOYED, "UNDEPLOYED")
    return vm_id


def _vm(sim: SimServer, vm_id: int) -> SimVm:
    with sim.site.lock:
        return sim.site.vms[vm_id]


def _section(vm: SimVm, name: str) -> list[tuple[str, str]] | None:
    return next((v for k, v in vm.template if k == name and isinstance(v, list)), None)


# the failure array -------------------------------------------------------------------------------


def test_failure_array_carries_the_id_only_for_no_exists(site: SimServer) -> None:
    """src/rm/xml-rpc/RequestXRPC.cc `make_response`, include/RequestAttributes.h (resp_id -1,
    replication_idx UINT64_MAX sent as i8, read -1), src/rm/Request.cc `failure_message`:
    `[false, "[method] message", code, resp_id, replication_index]`."""
    missing = failure(rpc(site, "one.vm.info", 987))
    assert (missing.message, missing.code, missing.resp_id, missing.replication_index) == \
        ("[one.vm.info] Error getting virtual machine [987].", NO_EXISTS, 987, -1)
    refused = failure(rpc(site, "one.vm.action", "undeploy", _held(site)))
    assert refused.code == ACTION and refused.resp_id == -1 and refused.replication_index == -1
    anonymous = failure(rpc(site, "one.vm.info", 0, session="oneadmin:wrong"))
    assert (anonymous.code, anonymous.resp_id) == (AUTHENTICATION, -1)
    assert anonymous.message == "[one.vm.info] User couldn't be authenticated, aborting call."


def test_system_version_is_the_code_version(site: SimServer, one_version: str) -> None:
    """include/NebulaService.h `code_version` (6.10: include/Nebula.h) answers one.system.version."""
    assert ok(rpc(site, "one.system.version")) == one_version


# VM actions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["undeploy", "undeploy-hard", "poweroff", "poweroff-hard", "hold", "stop",
                                    "suspend", "resume", "reboot", "resched"])
def test_wrong_state_action_is_not_available_for_the_state(site: SimServer, action: str) -> None:
    """src/dm/DispatchManagerActions.cc (undeploy about 431-440 and every action but terminate):
    ACTION `Error performing action "<a>": This action is not available for state <STATE>`
    (src/rm/api/VirtualMachineAPI.cc `action`, rc -2); "Could not ..., wrong state" is only logged."""
    vm_id = _held(site) if action != "hold" else _undeployed(site)
    state = "HOLD" if action != "hold" else "UNDEPLOYED"
    answer = failure(rpc(site, "one.vm.action", action, vm_id))
    assert answer.code == ACTION
    assert answer.message == f'[one.vm.action] Error performing action "{action}": This action is not ' \
                             f"available for state {state}"


def test_wrong_state_names_the_lcm_state_while_active(site: SimServer) -> None:
    """src/vm/VirtualMachine.cc `state_str`: the LCM state's name while ACTIVE."""
    vm_id = _running(site)
    answer = failure(rpc(site, "one.vm.action", "release", vm_id))
    assert answer.message.endswith("This action is not available for state RUNNING")


def test_terminate_differs(site: SimServer) -> None:
    """src/dm/DispatchManagerActions.cc `DispatchManager::terminate`: a wrong state answers
    `Could not terminate VM <id>, wrong state <STATE>.`; a failed VM is deleted; a DONE VM succeeds."""
    vm_id = _held(site)
    ok(rpc(site, "one.vm.deploy", vm_id, _host_id(site, "kvm-cascadelake-01")))
    wait_vm(site, vm_id, lambda vm: vm.state == ACTIVE and vm.lcm_state == 1, "PROLOG")
    answer = failure(rpc(site, "one.vm.action", "terminate", vm_id))
    assert answer.message == f'[one.vm.action] Error performing action "terminate": Could not terminate VM ' \
                             f"{vm_id}, wrong state PROLOG."
    site.site.faults.fail_role = "objectstore"
    failed = int(ok(rpc(site, "one.template.instantiate", 0, "failing", False, 'ROLE_NAME = "objectstore"')))
    wait_vm(site, failed, lambda vm: vm.lcm_state == BOOT_FAILURE, "BOOT_FAILURE")
    ok(rpc(site, "one.vm.action", "terminate", failed))
    assert _vm(site, failed).state == DONE
    ok(rpc(site, "one.vm.action", "terminate", failed))


def test_unknown_action_is_not_supported(site: SimServer) -> None:
    """src/rm/api/VirtualMachineAPI.cc `action` (rc -3): ACTION `Action "<a>" is not supported`."""
    answer = failure(rpc(site, "one.vm.action", "explode", _held(site)))
    assert (answer.code, answer.message) == (ACTION, '[one.vm.action] Action "explode" is not supported')


# updateconf ---------------------------------------------------------------------------------------


def test_updateconf_refused_by_the_state_is_internal(site: SimServer) -> None:
    """src/rm/api/VirtualMachineAPI.cc `update_conf` (6.10 src/rm/RequestManagerVirtualMachine.cc):
    `VirtualMachine::updateconf` failing answers INTERNAL `configuration cannot be updated in state X`."""
    vm_id = _running(site)
    ok(rpc(site, "one.vm.action", "suspend", vm_id))
    wait_vm(site, vm_id, lambda vm: vm.state == SUSPENDED, "SUSPENDED")
    answer = failure(rpc(site, "one.vm.updateconf", vm_id, 'CPU_MODEL = [ MODEL = "Westmere" ]', 1))
    assert (answer.code, answer.message, answer.resp_id) == \
        (INTERNAL, "[one.vm.updateconf] configuration cannot be updated in state SUSPENDED", -1)


def test_updateconf_allowed_states(site: SimServer) -> None:
    """src/vm/VirtualMachine.cc `updateconf` (about 3166-3219, the same list in 6.10 and 7.0):
    PENDING, HOLD, POWEROFF, UNDEPLOYED and ACTIVE RUNNING, BOOT_UNDEPLOY_FAILURE and others
    change; ACTIVE BOOT does not."""
    text = 'CPU_MODEL = [ MODEL = "Westmere" ]'
    ok(rpc(site, "one.vm.updateconf", _held(site), text, 1))
    running = _running(site)
    ok(rpc(site, "one.vm.updateconf", running, text, 1))
    ok(rpc(site, "one.vm.action", "poweroff-hard", running))
    wait_vm(site, running, lambda vm: vm.state == POWEROFF, "POWEROFF")
    ok(rpc(site, "one.vm.updateconf", running, text, 1))
    ok(rpc(site, "one.vm.updateconf", _undeployed(site), text, 1))
    booting = _held(site, "booting")
    ok(rpc(site, "one.vm.deploy", booting, _host_id(site, "kvm-cascadelake-01")))
    wait_vm(site, booting, lambda vm: vm.lcm_state == 2, "BOOT")
    assert failure(rpc(site, "one.vm.updateconf", booting, text, 1)).message.endswith("in state BOOT")


def test_updateconf_parse_error_and_update_type(site: SimServer) -> None:
    """src/rm/api/VirtualMachineAPI.cc `update_conf`: an update type other than 0 or 1 answers
    RPC_API `Wrong update type` before anything else; a parse error INTERNAL `Parse error...`
    (src/template/Template.cc `parse_str_or_xml`)."""
    vm_id = _held(site)
    assert (failure(rpc(site, "one.vm.updateconf", vm_id, "x", 2)).code,
            failure(rpc(site, "one.vm.updateconf", 424242, "x", 7)).message) == \
        (XML_RPC_API, "[one.vm.updateconf] Wrong update type")
    parse = failure(rpc(site, "one.vm.updateconf", vm_id, 'CPU_MODEL = [ MODEL = "open', 1))
    assert parse.code == INTERNAL and parse.message.startswith("[one.vm.updateconf] Parse error")


def test_updateconf_append_keeps_the_other_sections(site: SimServer) -> None:
    """src/vm/VirtualMachine.cc `replace_vector_values` (6.2+): append=1 leaves sections the text
    does not name; append=0 (the default when left out, src/rm/xml-rpc/VirtualMachineXRPC.cc)
    erases them, except CONTEXT, which only a CONTEXT in the text changes (`updateconf` 3126-3140 at
    release-7.0.0; a 7.0.2 frontend keeps it)."""
    vm_id = _undeployed(site)
    before = _vm(site, vm_id)
    os_section, context = _section(before, "OS"), _section(before, "CONTEXT")
    assert os_section and context
    ok(rpc(site, "one.vm.updateconf", vm_id, f'CPU_MODEL = [ MODEL = "{MODEL}" ]', 1))
    after = _vm(site, vm_id)
    assert _section(after, "OS") == os_section and _section(after, "CONTEXT") == context
    assert _section(after, "CPU_MODEL") == [("MODEL", MODEL)]
    ok(rpc(site, "one.vm.updateconf", vm_id, 'CPU_MODEL = [ MODEL = "Westmere" ]'))
    replaced = _vm(site, vm_id)
    assert _section(replaced, "OS") is None and _section(replaced, "CONTEXT") == context


def test_updateconf_before_6_2_ignores_append(site_factory: SimFactory) -> None:
    """release-6.0.0 src/rm/RequestManagerVirtualMachine.cc: one.vm.updateconf is `A:sis`, no
    append flag (release-6.2.0 reads `paramList.getInt(3)`); 6.0's `replace_vector_values` erases
    every section the text leaves out, whatever a fourth argument says (but CONTEXT, release-6.0.0
    src/vm/VirtualMachine.cc 2918-2927: only a CONTEXT in the text changes it)."""
    sim = site_factory(one_version="6.0.0")
    vm_id = _undeployed(sim)
    context = _section(_vm(sim, vm_id), "CONTEXT")
    assert _section(_vm(sim, vm_id), "OS") and context
    ok(rpc(sim, "one.vm.updateconf", vm_id, f'CPU_MODEL = [ MODEL = "{MODEL}" ]', 1))
    assert _section(_vm(sim, vm_id), "OS") is None and _section(_vm(sim, vm_id), "CONTEXT") == context


# update -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method, oid", [("one.image.update", 0), ("one.template.update", 0),
                                         ("one.user.update", 0), ("one.vm.update", None)])
def test_update_append_is_optional_and_defaults_to_replace(site: SimServer, method: str, oid: int | None) -> None:
    """src/rm/xml-rpc/ImageXRPC.cc, TemplateXRPC.cc, UserXRPC.cc, VirtualMachineXRPC.cc:
    `paramList.size() > 3 ? paramList.getInt(3) : 0`; 6.10 src/rm/RequestManagerUpdateTemplate.cc."""
    target = oid if oid is not None else _held(site)
    ok(rpc(site, method, target, 'FIRST = "1"\nSECOND = "2"', 1))
    ok(rpc(site, method, target, 'ONLY = "this"'))
    kind = method.split(".")[1]
    info = ok(rpc(site, f"one.{kind}.info", target))
    assert "<ONLY><![CDATA[this]]></ONLY>" in info and "<FIRST>" not in info


@pytest.mark.parametrize("method", ["one.image.update", "one.template.update", "one.user.update",
                                    "one.document.update", "one.vm.update"])
def test_unknown_update_type_is_wrong_update_type(site: SimServer, method: str) -> None:
    """src/rm/api/SharedAPI.cc `update`, src/rm/api/VirtualMachineAPI.cc `update`: RPC_API
    `Wrong update type`, after the object is found and authorized."""
    target = _held(site) if method == "one.vm.update" else 0
    if method == "one.document.update":
        target = int(ok(rpc(site, "one.document.allocate", 'NAME = "d"', 1)))
    answer = failure(rpc(site, method, target, 'A = "1"', 5))
    assert (answer.code, answer.message) == (XML_RPC_API, f"[{method}] Wrong update type")
    assert failure(rpc(site, method, 424242, 'A = "1"', 5)).code == NO_EXISTS


def test_update_parse_error_is_internal_cannot_update_template(site: SimServer) -> None:
    """src/rm/api/SharedAPI.cc `update` (6.10 RequestManagerUpdateTemplate.cc): INTERNAL
    `Cannot update template. Parse error...`; one.vm.update parses first for its quota check and
    answers ACTION `Parse error...` (src/rm/api/VirtualMachineAPI.cc `update`)."""
    image = failure(rpc(site, "one.image.update", 0, 'A = "open', 1))
    assert image.code == INTERNAL and image.message.startswith("[one.image.update] Cannot update template. Parse error")
    vm = failure(rpc(site, "one.vm.update", _held(site), 'A = "open', 1))
    assert vm.code == ACTION and vm.message.startswith("[one.vm.update] Parse error")


def test_allocate_parse_error_is_internal(site: SimServer) -> None:
    """src/rm/api/SharedAPI.cc (allocate, about 87-91) and src/rm/api/ImageAPI.cc: INTERNAL `Parse error...`."""
    for method, params in (("one.template.allocate", ()), ("one.image.allocate", (1,))):
        answer = failure(rpc(site, method, 'NAME = "open', *params))
        assert answer.code == INTERNAL and answer.message.startswith(f"[{method}] Parse error")


def test_append_erases_and_adds_every_named_attribute(site: SimServer) -> None:
    """src/template/Template.cc `Template::merge`, src/pool/PoolObjectSQL.cc `append_template`:
    every attribute named is erased, then added again; an empty vector is not added again, so it
    deletes the attribute; repeated attributes are replaced as a whole."""
    ok(rpc(site, "one.image.update", 0, 'KEEP = "k"\nVEC = [ A = "1", B = "2" ]\nREP = [ N = "1" ]\nREP = [ N = "2" ]', 1))
    ok(rpc(site, "one.image.update", 0, 'VEC = [ C = "3" ]\nREP = [ N = "3" ]', 1))
    template = parse_template(_image_template_text(site))
    assert ("VEC", [("C", "3")]) in template and [v for k, v in template if k == "REP"] == [[("N", "3")]]
    assert ("KEEP", "k") in template
    ok(rpc(site, "one.image.update", 0, "VEC = [ ]", 1))
    assert not any(k == "VEC" for k, _ in parse_template(_image_template_text(site)))


def _image_template_text(site: SimServer) -> str:
    with site.site.lock:
        from tui.domain.template_text import render_template

        return render_template(site.site.images[0].template)


# images from marketplace apps ---------------------------------------------------------------------


def test_image_from_an_unknown_app_cannot_determine_its_size(site: SimServer) -> None:
    """src/rm/api/ImageAPI.cc (about 786-803; 6.10 src/rm/RequestManagerAllocate.cc): INTERNAL
    `Cannot determine image SIZE.` when FROM_APP names no app."""
    answer = failure(rpc(site, "one.image.allocate", 'NAME = "from-nothing"\nFROM_APP = "99999"', 1))
    assert (answer.code, answer.message) == (INTERNAL, "[one.image.allocate] Cannot determine image SIZE.")


def test_image_from_an_app_records_its_name_and_md5(site: SimServer) -> None:
    """src/market/MarketPlaceApp.cc `to_template`: the image gets FROM_APP_NAME and FROM_APP_MD5
    (and the app's PATH and FORMAT)."""
    with site.site.lock:
        app = next(a for a in site.site.marketapps.values() if a.type == 1 and a.md5 and not a.broken)
        app_id, name, md5 = app.id, app.name, app.md5
    image_id = int(ok(rpc(site, "one.image.allocate", f'NAME = "from-app"\nFROM_APP = "{app_id}"', 1)))
    with site.site.lock:
        template = dict(a for a in site.site.images[image_id].template if isinstance(a[1], str))
    assert template["FROM_APP_NAME"] == name and template["FROM_APP_MD5"] == md5 and "MD5" not in template


# booting with a CPU model -------------------------------------------------------------------------


def test_a_cpu_model_the_host_cannot_give_fails_the_boot(site: SimServer) -> None:
    """src/vmm/LibVirtDriverKVM.cc (`<model fallback='forbid'>`, about 1073-1094) and
    src/lcm/LifeCycleStates.cc `trigger_deploy_failure`: after an undeploy the VM ends in
    BOOT_UNDEPLOY_FAILURE; host-passthrough is never refused. src/vm/VirtualMachineTemplate.cc
    keeps MODEL (and FEATURES) of CPU_MODEL for updateconf."""
    vm_id = _undeployed(site)
    ok(rpc(site, "one.vm.updateconf", vm_id, f'CPU_MODEL = [ MODEL = "{MODEL}" ]', 1))
    ok(rpc(site, "one.vm.deploy", vm_id, _host_id(site, "kvm-westmere-01")))
    failed = wait_vm(site, vm_id, lambda vm: vm.lcm_state == BOOT_UNDEPLOY_FAILURE, "BOOT_UNDEPLOY_FAILURE")
    error = dict(a for a in failed.user_template if isinstance(a[1], str))["ERROR"]
    assert MODEL in error and "fallback='forbid'" in error
    # the state allows updateconf and recover; a retry with a model the host gives boots
    ok(rpc(site, "one.vm.updateconf", vm_id, 'CPU_MODEL = [ MODEL = "host-passthrough" ]', 1))
    ok(rpc(site, "one.vm.recover", vm_id, 2))
    wait_vm(site, vm_id, lambda vm: (vm.state, vm.lcm_state) == (ACTIVE, RUNNING), "RUNNING after the retry")


def test_marketplace_app_vm_template_is_base64_template_text(site: SimServer) -> None:
    """src/market_mad/remotes/one/monitor `render_image`: VMTEMPLATE64 is base64 of template text."""
    with site.site.lock:
        app = next(a for a in site.site.marketapps.values() if any(k == "VMTEMPLATE64" for k, _ in a.template))
        encoded = next(v for k, v in app.template if k == "VMTEMPLATE64")
    assert isinstance(encoded, str) and parse_template(base64.b64decode(encoded).decode())


# object names ------------------------------------------------------------------------------------


def _refuses_whitespace(version: str) -> bool:
    return tuple(int(p) for p in version.split(".")) >= (6, 10, 4)


@pytest.mark.parametrize("bad", ["a&b", "a|b", "a:b", "a\\b", 'a"b', "a;b", "a/b", "a'b", "a#b", "a{b", "a}b",
                                 "a$b", "a<b", "a>b"])
def test_a_template_name_with_a_refused_character_answers_internal(site: SimServer, bad: str) -> None:
    """src/pool/PoolObjectSQL.cc `name_is_valid` (INVALID_NAME_CHARS, line 27) through
    src/rm/api/TemplateAPI.cc `pool_allocate` (INTERNAL, the bare text; 7.0
    src/rm/RequestManagerAllocate.cc `TemplateAllocate::pool_allocate`)."""
    quoted = bad.replace("\\", "\\\\").replace('"', '\\"')
    refused = failure(rpc(site, "one.template.allocate", f'NAME = "{quoted}"\nCPU = 1'))
    char = next(c for c in bad if c not in "ab")
    assert (refused.message, refused.code) == (f"[one.template.allocate] Invalid NAME, char '{char}' is not allowed",
                                                INTERNAL)
    assert all(t.name != bad for t in site.site.templates.values())


def test_whitespace_controls_in_a_name_are_refused_from_6_10_4(site: SimServer, one_version: str) -> None:
    """src/pool/PoolObjectSQL.cc line 27: release-6.10.4 and 7.x add tab, newline, vertical tab,
    form feed and carriage return to INVALID_NAME_CHARS; release-6.10.0 to 6.10.3 store them."""
    answer = rpc(site, "one.template.allocate", 'NAME = "tab\there"\nCPU = 1')
    if _refuses_whitespace(one_version):
        assert failure(answer).message == "[one.template.allocate] Invalid NAME, char '\t' is not allowed"
    else:
        assert site.site.templates[int(ok(answer))].name == "tab\there"


def test_a_name_longer_than_128_bytes_is_refused(site: SimServer) -> None:
    """src/pool/PoolObjectSQL.cc `name_is_valid` (`obj_name.length() > 128`, bytes of the string):
    128 ASCII characters pass, 65 two-byte characters do not."""
    assert ok(rpc(site, "one.template.allocate", f'NAME = "{"n" * 128}"\nCPU = 1')) >= 0
    for name in ("n" * 129, "é" * 65):
        refused = failure(rpc(site, "one.template.allocate", f'NAME = "{name}"\nCPU = 1'))
        assert refused.message == "[one.template.allocate] Invalid NAME, max length is 128 chars"


def test_image_allocate_and_instantiate_refuse_a_name_with_allocate(site: SimServer) -> None:
    """src/rm/api/ImageAPI.cc (ALLOCATE after `ipool->allocate`, whose src/image/ImagePool.cc checks
    `name_is_valid` first) and src/rm/RequestManagerVMTemplate.cc (ALLOCATE after `vmpool->allocate`,
    src/vm/VirtualMachine.cc `insert` checks the name); src/rm/Request.cc `failure_message` puts
    "Error allocating a new <object>." before the text (the auth object of instantiate is TEMPLATE)."""
    image = failure(rpc(site, "one.image.allocate", 'NAME = "disk#1"\nTYPE = "DATABLOCK"\nSIZE = 10', 1))
    assert (image.message, image.code) == (
        "[one.image.allocate] Error allocating a new image. Invalid NAME, char '#' is not allowed", ALLOCATE)
    vm = failure(rpc(site, "one.template.instantiate", 0, "web{1}", False, "", False))
    assert (vm.message, vm.code) == ("[one.template.instantiate] Error allocating a new virtual machine template. "
                                     "Invalid NAME, char '{' is not allowed", ALLOCATE)
    assert all(v.name != "web{1}" for v in site.site.vms.values())


def test_user_names_refuse_space_and_colon_besides(site: SimServer) -> None:
    """src/um/User.cc `User::INVALID_NAME_CHARS` (" :" and the whitespace controls) added to
    PoolObjectSQL's set by src/um/UserPool.cc `allocate`; INTERNAL (UserAllocate::pool_allocate)."""
    refused = failure(rpc(site, "one.user.allocate", "two words", "secret", "core", []))
    assert (refused.message, refused.code) == ("[one.user.allocate] Invalid NAME, char ' ' is not allowed", INTERNAL)



# taken names -------------------------------------------------------------------------------------


def test_a_taken_template_name_answers_internal_with_the_pool_text(site: SimServer) -> None:
    """src/vm_template/VMTemplatePool.cc `allocate` line 61 (release-6.10.0 line 77) "NAME is already
    taken by TEMPLATE <id>.", relayed by src/rm/api/TemplateAPI.cc `pool_allocate` line 666 as INTERNAL
    (release-6.10.0 and release-7.0.0 src/rm/RequestManagerAllocate.cc line 756): the bare text."""
    first = int(ok(rpc(site, "one.template.allocate", 'NAME = "twice"\nCPU = 1')))
    taken = failure(rpc(site, "one.template.allocate", 'NAME = "twice"\nCPU = 2'))
    assert (taken.message, taken.code) == (f"[one.template.allocate] NAME is already taken by TEMPLATE {first}.",
                                           INTERNAL)


def test_a_taken_image_name_answers_allocate(site: SimServer) -> None:
    """src/image/ImagePool.cc `allocate` line 156 (release-7.0.0 159, release-6.10.0 232), relayed by
    src/rm/api/ImageAPI.cc line 957 as ALLOCATE (release-6.10.0 and release-7.0.0
    src/rm/RequestManagerAllocate.cc line 716); src/rm/Request.cc `failure_message` adds the prefix."""
    text = 'NAME = "disk-twice"\nTYPE = "DATABLOCK"\nSIZE = 10'
    first = int(ok(rpc(site, "one.image.allocate", text, 1)))
    taken = failure(rpc(site, "one.image.allocate", text, 1))
    assert (taken.message, taken.code) == (
        f"[one.image.allocate] Error allocating a new image. NAME is already taken by IMAGE {first}.", ALLOCATE)


def test_a_taken_group_or_user_name_answers_internal(site: SimServer) -> None:
    """src/group/GroupPool.cc line 123 (release-6.10.0 141) and src/um/UserPool.cc line 294
    (release-7.0.0 372, release-6.10.0 473), relayed as INTERNAL by src/rm/api/GroupAPI.cc line 269 and
    src/rm/api/UserAPI.cc line 812 (release-6.10.0 and release-7.0.0 src/rm/RequestManagerAllocate.cc
    lines 1032 and 1007)."""
    group = int(ok(rpc(site, "one.group.allocate", "team")))
    taken = failure(rpc(site, "one.group.allocate", "team"))
    assert (taken.message, taken.code) == (f"[one.group.allocate] NAME is already taken by GROUP {group}.", INTERNAL)
    user = int(ok(rpc(site, "one.user.allocate", "member", "secret", "core", [])))
    taken = failure(rpc(site, "one.user.allocate", "member", "other", "core", []))
    assert (taken.message, taken.code) == (f"[one.user.allocate] NAME is already taken by USER {user}.", INTERNAL)


def test_a_taken_marketplace_name_answers_allocate_from_7_4(site: SimServer, one_version: str) -> None:
    """src/market/MarketPlacePool.cc line 143 (release-6.10.0 207) "NAME is already taken by
    MARKETPLACE <id>" (no final period); src/rm/api/MarketPlaceAPI.cc line 196 answers ALLOCATE,
    release-6.10.0 and release-7.0.0 src/rm/RequestManagerAllocate.cc line 1288 INTERNAL."""
    text = 'NAME = "mirror"\nMARKET_MAD = "http"\nBASE_URL = "http://mirror.example"'
    first = int(ok(rpc(site, "one.market.allocate", text)))
    taken = failure(rpc(site, "one.market.allocate", text))
    if tuple(int(p) for p in one_version.split(".")) >= (7, 4):
        assert (taken.message, taken.code) == (
            f"[one.market.allocate] Error allocating a new marketplace. NAME is already taken by MARKETPLACE {first}",
            ALLOCATE)
    else:
        assert (taken.message, taken.code) == (
            f"[one.market.allocate] NAME is already taken by MARKETPLACE {first}", INTERNAL)


def test_documents_and_vms_may_share_a_name(site: SimServer) -> None:
    """src/document/DocumentPool.cc and src/vm/VirtualMachinePool.cc check no duplicate name (no
    "already taken" there, unlike the pools above): OneFlow service templates and VMs of one name coexist."""
    body = 'NAME = "svc"\nBODY = "{\\"name\\": \\"svc\\", \\"roles\\": []}"'
    first = int(ok(rpc(site, "one.document.allocate", body, 100)))
    assert int(ok(rpc(site, "one.document.allocate", body, 100))) != first
    assert _held(site, "same") != _held(site, "same")


def test_an_allocate_without_a_name_is_refused_by_name_is_valid(site: SimServer, one_version: str) -> None:
    """src/pool/PoolObjectSQL.cc `name_is_valid` ("Invalid NAME, it cannot be empty"), the first check of
    src/vm_template/VMTemplatePool.cc, src/image/ImagePool.cc and src/market/MarketPlacePool.cc
    `allocate`, relayed like a taken name: INTERNAL for a template, ALLOCATE for an image, and for
    a marketplace INTERNAL before 7.4 (src/rm/api/MarketPlaceAPI.cc line 196 answers ALLOCATE)."""
    template = failure(rpc(site, "one.template.allocate", "CPU = 1"))
    assert (template.message, template.code) == ("[one.template.allocate] Invalid NAME, it cannot be empty", INTERNAL)
    image = failure(rpc(site, "one.image.allocate", 'TYPE = "DATABLOCK"\nSIZE = 10', 1))
    assert (image.message, image.code) == (
        "[one.image.allocate] Error allocating a new image. Invalid NAME, it cannot be empty", ALLOCATE)
    market = failure(rpc(site, "one.market.allocate", 'MARKET_MAD = "http"'))
    if tuple(int(p) for p in one_version.split(".")) >= (7, 4):
        assert (market.message, market.code) == (
            "[one.market.allocate] Error allocating a new marketplace. Invalid NAME, it cannot be empty", ALLOCATE)
    else:
        assert (market.message, market.code) == ("[one.market.allocate] Invalid NAME, it cannot be empty", INTERNAL)


# diskresize ---------------------------------------------------------------------------------------


def _disk0(vm: SimVm) -> dict[str, str]:
    return dict(next(v for k, v in vm.template if k == "DISK" and isinstance(v, list) and ("DISK_ID", "0") in v))


def test_diskresize_checks_in_the_platforms_order(site: SimServer) -> None:
    """release-7.0.2 src/rm/RequestManagerVirtualMachine.cc 3522-3711 (7.4.0 src/rm/api/VirtualMachineAPI.cc
    2125 `disk_resize`): the size text is read first (ACTION `Disk SIZE is not a valid integer`, even
    for a VM that does not exist), then the VM (NO_EXISTS), the disk (`VM disk does not exist`), the
    size against the disk's (`New disk size has to be greater than current one`), and last the
    state (src/dm/DispatchManagerActions.cc 2219-2231: `Could not resize disk for VM n, wrong state X.`)."""
    for size in ("30G", "1.5", " ", "", "12 "):
        answer = failure(rpc(site, "one.vm.diskresize", 424242, 0, size))
        assert (answer.code, answer.message, answer.resp_id) == \
            (ACTION, "[one.vm.diskresize] Disk SIZE is not a valid integer", -1), size
    assert failure(rpc(site, "one.vm.diskresize", 424242, 0, "5")).code == NO_EXISTS
    held = _held(site)
    size = int(_disk0(_vm(site, held))["SIZE"])
    assert failure(rpc(site, "one.vm.diskresize", held, 9, str(size + 1))).message == \
        "[one.vm.diskresize] VM disk does not exist"
    assert failure(rpc(site, "one.vm.diskresize", held, 0, str(size))).message == \
        "[one.vm.diskresize] New disk size has to be greater than current one"
    wrong = failure(rpc(site, "one.vm.diskresize", held, 0, str(size + 1)))
    assert (wrong.code, wrong.message) == (ACTION, f"[one.vm.diskresize] Could not resize disk for VM {held}, wrong state HOLD.")


def test_diskresize_passes_through_its_lcm_state_and_back(site: SimServer) -> None:
    """DispatchManager::disk_resize: RUNNING -> DISK_RESIZE (62), POWEROFF -> DISK_RESIZE_POWEROFF
    (63), UNDEPLOYED -> DISK_RESIZE_UNDEPLOYED (64) (include/VirtualMachine.h 137-139 at release-7.0.2);
    SIZE and SIZE_PREV set at once (`VirtualMachineDisks::set_up_resize`, src/vm/VirtualMachineDisk.cc
    1368); the dummy driver's success (src/lcm/LifeCycleStates.cc 2386) goes back, SIZE_PREV dropped.
    The answer is the disk id."""
    running = _running(site)
    size = int(_disk0(_vm(site, running))["SIZE"])
    assert ok(rpc(site, "one.vm.diskresize", running, 0, f"+{size + 10}")) == 0
    vm = _vm(site, running)
    assert (vm.state, vm.lcm_state) == (ACTIVE, 62)
    assert (_disk0(vm)["SIZE"], _disk0(vm)["SIZE_PREV"], _disk0(vm)["RESIZE"]) == (str(size + 10), str(size), "YES")
    vm = wait_vm(site, running, lambda vm: vm.lcm_state != 62, "out of DISK_RESIZE")
    assert (vm.state, vm.lcm_state) == (ACTIVE, RUNNING) and _disk0(vm)["SIZE"] == str(size + 10)
    assert "SIZE_PREV" not in _disk0(vm) and "RESIZE" not in _disk0(vm)
    ok(rpc(site, "one.vm.action", "poweroff-hard", running))
    wait_vm(site, running, lambda vm: vm.state == POWEROFF, "POWEROFF")
    ok(rpc(site, "one.vm.diskresize", running, 0, str(size + 20)))
    assert (_vm(site, running).state, _vm(site, running).lcm_state) == (ACTIVE, 63)
    vm = wait_vm(site, running, lambda vm: vm.state == POWEROFF, "POWEROFF again")
    assert _disk0(vm)["SIZE"] == str(size + 20)
    undeployed = _undeployed(site)
    ok(rpc(site, "one.vm.diskresize", undeployed, 0, str(size + 30)))
    assert _vm(site, undeployed).lcm_state == 64
    assert wait_vm(site, undeployed, lambda vm: vm.state == UNDEPLOYED, "UNDEPLOYED again").lcm_state == 0


def test_a_failed_diskresize_puts_the_old_size_back(site: SimServer) -> None:
    """LifeCycleManager::trigger_disk_resize_failure (src/lcm/LifeCycleStates.cc 2469-2577 at
    release-7.0.2): back to RUNNING with SIZE restored from SIZE_PREV
    (`VirtualMachineDisk::clear_resize(true)`, src/vm/VirtualMachineDisk.cc 617-628)."""
    running = _running(site)
    size = _disk0(_vm(site, running))["SIZE"]
    with site.site.lock:
        site.site.faults.fail_disk_resizes = 1
    ok(rpc(site, "one.vm.diskresize", running, 0, str(int(size) + 100)))
    vm = wait_vm(site, running, lambda vm: vm.lcm_state != 62, "out of DISK_RESIZE")
    assert (vm.lcm_state, _disk0(vm)["SIZE"], "SIZE_PREV" in _disk0(vm)) == (RUNNING, size, False)
