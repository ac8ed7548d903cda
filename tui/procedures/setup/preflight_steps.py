"""The setup checklist's preflight steps, decided from `setup_facts`: the platform answers, the
services the setup uses answer, the CLI helper change, the gate endpoint, the marketplaces and the
datastores (`tui.procedures.setup.steps` lists every step in order)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from tui.domain.datastores import Datastore
from tui.domain.marketapps import MarketApp, endpoint_slash_fix, endpoint_slash_problem
from tui.domain.setup_steps import (
    UNREADABLE,
    MarketplacesMissing,
    SetupStep,
    StepId,
    StepState,
)
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import run_command as _run
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown

#: the platform version from which the CLI helper change (spec Versioning 6) is included
CLI_HELPER_VERSION = (7, 0)


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


# -- preflight ------------------------------------------------------------------------------------


def platform_step(facts: SetupFacts) -> SetupStep:
    return _step(StepId.PLATFORM, "The platform answers", StepState.DONE,
                 (f"OpenNebula {facts.version} at {facts.endpoint}", f"session user {facts.user} (group {facts.group})"))


def services_step(facts: SetupFacts) -> SetupStep:
    """Every service the setup uses answers now: XML-RPC, OneFlow with the session, the HTTP
    marketplaces, the sites repository (the gate's address is the gate step's). The first that
    does not is the step's failure and its fix (issue 20 item 8: with OneFlow down, preflight was
    all done and "Next" pointed at the automation cloud user)."""
    title = "Services the setup uses answer"
    evidence = [f"XML-RPC {facts.endpoint}: answers (OpenNebula {facts.version}, session user {facts.user})"]
    wrong: list[str] = []
    unread: list[str] = []
    flow = facts.flow_url or "OneFlow"
    if facts.services_known:
        evidence.append(f"OneFlow {flow}: answers with the session (the services' list read)")
    elif facts.flow_error:
        evidence.append(f"OneFlow {flow}: {facts.flow_error}")
        wrong.append(f"OneFlow at {flow} does not answer: start it on the frontend "
                     "(systemctl start opennebula-flow), check ONEFLOW_URL (or ~/.one/oneflow_endpoint) and that "
                     f"it accepts the user {facts.user}'s login; the toolkit is a OneFlow service.")
    else:
        unread.append("OneFlow")
    catalog = facts.catalog
    if catalog is None:
        unread.append("the marketplaces")
    else:
        failures = {f.source.url: f for f in catalog.failures}
        for source in catalog.sources:
            failure = failures.get(source.url)
            if failure is None:
                count = sum(1 for e in catalog.entries if e.source.url == source.url)
                evidence.append(f"marketplace {source.name} {source.url}: answers ({count} appliance record(s))")
            else:
                evidence.append(f"marketplace {source.name} {source.url}: {failure.title} ({failure.detail})")
                wrong.append(f"The marketplace {source.name} at {source.url} does not answer: "
                             "check that it runs and that this frontend reaches it (the cloud exports the toolkit "
                             "from it).")
        if not catalog.sources:
            evidence.append("marketplaces: none registered or configured to ask (the marketplaces step)")
    repo = facts.repo
    if not repo.configured:
        evidence.append("sites repository: not configured (the repository step)")
    elif repo.reachable is None:
        unread.append("the sites repository")
    elif not repo.reachable:
        evidence.append(f"sites repository {repo.configured}: {repo.reach_error}")
        wrong.append(f"The sites repository {repo.configured} does not answer: "
                     "check its URL and token (the repository step).")
    else:
        evidence.append(f"sites repository {repo.configured}: answers")
    evidence.append("the gate: its address is the gate step's; whether OneGate answers there is not checked from "
                    "here (the VMs reach it on the default network)")
    if wrong:
        return _step(StepId.SERVICES, title, StepState.FAILED, evidence, wrong[0])
    if unread:
        return _blocked(StepId.SERVICES, title, UNREADABLE,
                        f"{', '.join(unread)} could not be read: see the notes, then refresh", evidence)
    return _step(StepId.SERVICES, title, StepState.DONE, evidence)


def cli_helper_step(facts: SetupFacts) -> SetupStep:
    title = "CLI helper change (one_helper.rb)"
    if version_tuple(facts.version) >= CLI_HELPER_VERSION:
        return _step(StepId.CLI_HELPER, title, StepState.DONE,
                     (f"platform {facts.version}: 7.0 and later include the one_helper.rb change (spec Versioning 6)",),
                     mandatory=False)
    return _step(
        StepId.CLI_HELPER, title, StepState.OPTIONAL,
        (f"platform {facts.version} is below 7.0, which first includes the change",
         "not checked: the file on the frontend (the console talks XML-RPC and does not use the Ruby CLI)"),
        "The installer and hand-run platform commands of these releases need the modified CLI helper "
        "(one_helper.rb, in the Ruby CLI directory under /usr/lib/one/ruby/cli on the frontend): apply the "
        "toolkit's modification there as root, or upgrade the platform to 7.0 or later. `sitetk setup run` "
        "does not need it.", mandatory=False)


def gate_step(facts: SetupFacts) -> SetupStep:
    title = "Gate endpoint (ONEGATE_ENDPOINT)"
    if facts.system is None:
        return _unknown(StepId.GATE, title, "the platform configuration")
    gate = facts.system.onegate_endpoint.strip()
    if not gate:
        return _step(StepId.GATE, title, StepState.TODO, ("the platform configuration has no ONEGATE_ENDPOINT",),
                     "Set ONEGATE_ENDPOINT in /etc/one/oned.conf to http://<frontend address on the default "
                     "network>:5030 and restart the platform (VMs report READY and their keys through it).")
    host = urlsplit(gate).hostname or ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return _step(StepId.GATE, title, StepState.FAILED, (f"ONEGATE_ENDPOINT = {gate}",),
                     "VMs cannot reach a loopback address: set ONEGATE_ENDPOINT in /etc/one/oned.conf to the "
                     "frontend's address on the default network, then restart the platform.")
    return _step(StepId.GATE, title, StepState.DONE, (f"ONEGATE_ENDPOINT = {gate}",))


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


def toolkit_app(facts: SetupFacts) -> MarketApp | None:
    """The cloud's toolkit app: it keeps one app per name across its marketplaces
    (`domain.marketapps`); of several owners' apps of that name, the first one imported."""
    name = facts.naming.toolkit_appliance_name
    apps = [a for a in facts.marketapps or () if a.name == name]
    return min(apps, key=lambda a: (a.uname != "oneadmin", a.id)) if apps else None


def marketplaces_step(facts: SetupFacts) -> SetupStep:
    title = "Marketplaces registered"
    if facts.marketplaces is None or facts.marketapps is None:
        return _unknown(StepId.MARKETPLACES, title, "the marketplaces")
    # a disabled marketplace is not monitored and holds no app: it does not count as registered
    registered = {_norm(m.endpoint): m for m in facts.marketplaces if m.endpoint and m.enabled}
    disabled = {_norm(m.endpoint): m for m in facts.marketplaces if m.endpoint and not m.enabled}
    evidence = [f"{'registered' if m.enabled else 'disabled'}: {m.name} (ID {m.id}) {m.source_label}"
                for m in facts.marketplaces]
    missing = [url for url in facts.configured_markets if _norm(url) not in registered]
    app = toolkit_app(facts)
    if app is not None:
        home = next((_norm(m.endpoint) for m in facts.marketplaces if m.id == app.marketplace_id), "")
        held = f" (its content from {app.origin_url}, monitored last)" if app.origin_url and app.origin_url != home else ""
        evidence.append(f"{app.name} {app.version} is app {app.id} of marketplace {app.marketplace}{held}")
    broken = [(m, problem) for m in facts.marketplaces if (problem := endpoint_slash_problem(facts.version, m))]
    if broken:
        market, problem = broken[0]
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"marketplace {market.id} ({market.name}): {problem}"],
                     endpoint_slash_fix(market) + " `sitetk setup run --only marketplaces` makes that update.",
                     command=_run(StepId.MARKETPLACES),
                     found=MarketplacesMissing(tuple(missing), mend=tuple((m.id, m.endpoint) for m, _ in broken)))
    if missing:
        off = [disabled[_norm(url)] for url in missing if _norm(url) in disabled]
        fix = ("Register it so the cloud can export its appliances (onemarket create with MARKET_MAD=one "
               "and ENDPOINT=<url>/).")
        if off:
            fix = ("Enable " + ", ".join(f"marketplace {m.id} (`onemarket enable {m.id}`)" for m in off)
                   + ": a disabled marketplace is not monitored and holds no app. "
                   + (fix if len(off) < len(missing) else ""))
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"configured but not registered (enabled) in the cloud: {', '.join(missing)}"],
                     fix.strip(), command=_run(StepId.MARKETPLACES),
                     found=MarketplacesMissing(tuple(missing)))
    if app is None:
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"no registered marketplace lists the {facts.naming.toolkit_appliance_name} appliance"],
                     "Register the marketplace that serves the toolkit (its URL in [marketplace] urls of the config "
                     "file, then `sitetk setup run --only marketplaces`), and let the platform monitor it.",
                     command=_run(StepId.MARKETPLACES))
    return _step(StepId.MARKETPLACES, title, StepState.DONE, evidence)


def _free(ds: Datastore) -> str:
    return f"{ds.free_mb / 1024:.0f} GiB free of {ds.total_mb / 1024:.0f} GiB"


def datastores_step(facts: SetupFacts) -> SetupStep:
    title = "Image and system datastores"
    if facts.datastores is None:
        return _unknown(StepId.DATASTORES, title, "the datastores")
    image = [d for d in facts.datastores if d.type_name == "IMAGE"]
    system = [d for d in facts.datastores if d.type_name == "SYSTEM"]
    evidence = [f"{d.type_name.lower()} datastore {d.id} {d.name}: {_free(d)}" for d in image + system]
    if not image or not system:
        lacking = " and ".join(k for k, v in (("IMAGE", image), ("SYSTEM", system)) if not v)
        return _step(StepId.DATASTORES, title, StepState.FAILED, evidence + [f"no {lacking} datastore"],
                     f"Create the {lacking} datastore (onedatastore create) and add it to the hosts' cluster.")
    return _step(StepId.DATASTORES, title, StepState.DONE, evidence)
