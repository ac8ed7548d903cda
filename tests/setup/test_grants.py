"""The components step is done only when the input's automation cloud user can USE each enabled
component's objects: a grant revoked (or given to another user) is "to do", naming the object,
and the run grants it to the input's user again; nothing else is downloaded."""

from __future__ import annotations

import pytest

from tests.setup.conftest import run, steps
from tests.setup.inputs import BRANCH
from tests.setup.observe import observe
from tests.setup.test_run import FAST, fresh  # noqa: F401  (the fixture)
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_config import SiteConfig
from tui.sim.acl import rule_of

pytestmark = pytest.mark.timeout(300)
TOKEN = "app_automation_sites_token"


def test_a_revoked_grant_is_not_done_and_is_granted_again(fresh, capsys) -> None:  # noqa: F811
    server, inputs, values = fresh
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    seen = observe(server, BRANCH, values[TOKEN])
    template_id = int(SiteConfig.parse(seen.core_yaml, DEFAULT_NAMING).component_variables("tn_bastion")["template_id"])
    site = server.site
    with site.lock:
        user = next(u for u in site.users.values() if u.name == "tkauto")
        revoked = [i for i, acl in site.acls.items() if rule_of(acl).to_str().startswith(f"#{user.id} TEMPLATE/#{template_id} USE")]
        assert revoked, "the setup granted tn_bastion's template to tkauto"
        for rule in revoked:
            del site.acls[rule]
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["components"]
    assert code == 3 and step["state"] == "to do", step
    assert any(f"tkauto may not USE VM template {template_id}" in e for e in step["evidence"]), step["evidence"]
    assert "tkauto" in step["action"]
    images = len(site.images)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    with site.lock:
        rules = {rule_of(acl).to_str() for acl in site.acls.values()}
    assert any(r.startswith(f"#{user.id} TEMPLATE/#{template_id} USE") for r in rules)
    assert len(site.images) == images  # granted again, nothing downloaded
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 0 and steps(data)["components"]["state"] == "done"
