"""Operation 5 against the embedded site: the automation key appended to the cloud user's
SSH_PUBLIC_KEY in merge mode, keys already there kept, a second grant changing nothing, the
read-back, the audit log (no secrets in it) and the site record."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.operating import operate
from tests.procedure_run import collect
from tests.toolkit.conftest import FAST, ToolkitSite, filled, settings_for
from tui.domain.ssh_keys import parse_public_key
from tui.domain.template_text import render_template
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.site_record import load_site_record
from tui.procedures.toolkit.grant_key import GrantKey, grant_ssh_key, plan_grant
from tui.procedures.toolkit.instantiate import DeployToolkit
from tui.procedures.toolkit.service import load_form
from tui.sim.server import SimServer


def new_key(comment: str) -> str:
    public = Ed25519PrivateKey.generate().public_key()
    text = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return f"{text} {comment}"


async def test_grant_keeps_existing_keys_and_a_second_grant_adds_nothing(sim: SimServer) -> None:
    site = SiteConnection(settings_for(sim))
    try:
        tkauto = next(u for u in await site.cloud.list_users() if u.name == "tkauto")
        # an operator's key whose comment has quotes and a backslash, set as the platform CLI would
        existing = new_key('operator "laptop" C:\\keys')
        await site.cloud.user_update(tkauto.id, render_template([("SSH_PUBLIC_KEY", existing)]), 1)
        key = parse_public_key(new_key("automation@one-7"))

        plan = await plan_grant(site, key, "tkauto")
        assert not plan.already and plan.existing == (existing,)
        change = plan.preview().changes[0]
        assert change.kind == "update" and change.cli == "oneuser update tkauto <key file> --append"
        assert plan.text.startswith("SSH_PUBLIC_KEY = ") and plan.text.count("SSH_PUBLIC_KEY") == 1
        events: list = []
        await operate(site, GrantKey(key.line, "tkauto"), plan, events=events)
        assert events[-1].state == "done" and events[-1].data["changed"] is True

        user = await site.cloud.user_info(tkauto.id)
        assert user.template.get("SSH_PUBLIC_KEY") == f"{existing}\n{key.line}"
        assert user.template.get("DESCRIPTION") == "cloud account of the site toolkit's automation"

        # the same key again (even with another comment): nothing to change, nothing sent
        again = await plan_grant(site, f"{key.body} other-comment", "tkauto")
        assert again.already and again.preview().is_noop
        events = []
        await operate(site, GrantKey(key.line, "tkauto"), again, events=events)
        assert [e.state for e in events[-2:]] == ["skipped", "skipped"]
        assert (await site.cloud.user_info(tkauto.id)).template.get("SSH_PUBLIC_KEY") == f"{existing}\n{key.line}"

        # one record, from the pipeline, for the grant that changed something; none for the second
        grants = [e for e in site.audit.entries() if e["action"] == "user.ssh_key.grant"]
        assert len(grants) == 1 and grants[0]["outcome"] == "ok" and grants[0]["target"] == f"user {tkauto.id} 'tkauto'"
        assert grants[0]["details"]["fingerprint"] == key.fingerprint and grants[0]["details"]["keys_after"] == 2
        assert grants[0]["details"]["keys_before"] == 1 and grants[0]["details"]["append"] == 1
    finally:
        await site.close()


async def test_the_procedure_records_nothing_itself_but_counts_the_change(sim: SimServer) -> None:
    """The run's record is the pipeline's: the procedure writes none, and counts its change (the
    screens that show derived state reload on it)."""
    site = SiteConnection(settings_for(sim))
    try:
        plan = await plan_grant(site, new_key("automation@one-5"), "tkauto")
        await collect(partial(grant_ssh_key, site, plan))
        assert site.audit.entries() == [] and site.changes == 1
    finally:
        await site.close()


async def test_a_failed_grant_leaves_one_record_saying_what_the_user_has(sim: SimServer) -> None:
    """The planned user is gone when the run reads it: one failed record from the pipeline says
    no update was sent, how to check, and holds no secret."""
    site = SiteConnection(settings_for(sim))
    try:
        key = parse_public_key(new_key("automation@one-8"))
        plan = replace(await plan_grant(site, key, "tkauto"), user_id=9999)
        before = len(site.audit.entries())
        with pytest.raises(SiteError):
            await operate(site, GrantKey(key.line, "tkauto"), plan)
        entries = site.audit.entries()[before:]
        assert len(entries) == 1
        entry = entries[0]
        assert (entry["action"], entry["target"], entry["outcome"]) == \
            ("user.ssh_key.grant", f"user {plan.user_id} 'tkauto'", "failed")
        assert entry["details"]["fingerprint"] == key.fingerprint and entry["details"]["steps_done"] == []
        assert entry["details"]["user_keys"] == "unchanged (no update was sent)"
        assert "oneuser show tkauto" in entry["details"]["fix"]
        assert site.settings.one_password not in site.audit.path.read_text()
    finally:
        await site.close()


async def test_grant_to_a_user_without_keys_and_failures(sim: SimServer) -> None:
    site = SiteConnection(settings_for(sim))
    try:
        key = parse_public_key(new_key("automation@one-3"))
        plan = await plan_grant(site, key, "tkauto")
        assert plan.existing == () and plan.new_value == key.line
        await collect(partial(grant_ssh_key, site, plan))
        tkauto = next(u for u in await site.cloud.list_users() if u.name == "tkauto")
        assert (await site.cloud.user_info(tkauto.id)).ssh_public_keys == (key.line,)

        with pytest.raises(SiteError, match="No cloud user 'nobody'") as caught:
            await plan_grant(site, key, "nobody")
        assert "oneuser create nobody" in caught.value.detail
        with pytest.raises(SiteError, match="Not an SSH public key"):
            await plan_grant(site, "ssh-ed25519 not-base64!", "tkauto")
    finally:
        await site.close()


async def test_deploy_then_grant_records_it_and_the_audit_log_holds_no_secret(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, secret_values = filled(form)
    await operate(site, DeployToolkit(form, file, **FAST))
    record = load_site_record(site.settings)
    plan = await plan_grant(site, record.automation_public_key, record.cloud_username)
    await operate(site, GrantKey(record.automation_public_key, record.cloud_username, record), plan)
    assert load_site_record(site.settings).key_granted_to == ("tkauto",)

    log_text = site.audit.path.read_text()
    actions = [e["action"] for e in site.audit.entries()]
    assert "toolkit.instantiate" in actions and "user.ssh_key.grant" in actions
    assert not any(secret in log_text for secret in secret_values.values())
    assert site.settings.one_password not in log_text
    instantiate = next(e for e in site.audit.entries() if e["action"] == "toolkit.instantiate")
    assert "app_automation_password" in instantiate["details"]["inputs"]  # names only, never values
