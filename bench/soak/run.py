"""The soak's loop: draw a step (one or two commands, faults, a signal, an outage), run it, check.

`soak(ops, seed)` returns the figures (`report.Figures`). A step's draws all come from one
`random.Random(seed)`, before anything runs, so a seed names the same sequence of steps.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench.soak.checks import change_state, cloud_findings, config_findings, remote_findings, unrecorded_findings
from bench.soak.operations import Operation, draw, same_vm_moves, twin
from bench.soak.report import Figures
from bench.soak.world import DOWNLOADABLE, Command, Outcome, World, end_group, finish, pick, signal_group
from tui.cli import exit_codes
from tui.sim.scenarios import AUTOMATION_PASSWORD

SITE_BRANCH = SITE_DIR = "demo-site"
TOOLKIT_MARKETPLACE = "Site Toolkit Marketplace"
SIGNALS = (("SIGINT", signal.SIGINT), ("SIGTERM", signal.SIGTERM), ("SIGHUP", signal.SIGHUP))
#: calls whose answer the site may lose after running them (the client cannot know their outcome)
LOST_ANSWERS = ("one.image.allocate", "one.template.allocate", "one.image.delete", "one.template.delete",
                "one.vm.action", "one.vm.deploy", "one.vm.updateconf", "one.user.update", "one.acl.addrule", "POST /service_template",
                "one.imagepool.info")
MARKET_FAULTS = ("error", "invalid_json", "slow:3000")
#: calls at which the session may expire mid-command: the reads every verb starts with, the reads a
#: download, a deploy and a move poll, and the writes of a move and a download
EXPIRING_CALLS = ("one.user.info", "one.vm.info", "one.vmpool.info", "one.hostpool.info", "one.imagepool.info",
                  "one.image.info", "one.templatepool.info", "one.marketapppool.info", "one.documentpool.info",
                  "one.vm.action", "one.vm.deploy", "one.vm.updateconf", "one.image.allocate", "one.template.allocate",
                  "GET /service", "GET /service_template")
#: how the audit log is made unwritable for a step (tui.procedures.audit refuses both)
AUDIT_BREAKS = ("directory", "dangling symlink")
#: seconds a command may take to reach sitetk's entry point (Python starting on a busy machine)
STARTUP_TIMEOUT_S = 60.0
TRACEBACK = "Traceback (most recent call last)"
#: the soak's own toolkit service name (beside the scenario's: deployed by name, then re-runs follow it)
SOAK_TOOLKIT = "Site Toolkit soak"
#: the toolkit inputs that are secrets (the skeleton leaves them empty; the deploy would ask)
SECRETS = ("app_objectstore_root_password", "app_automation_password", "app_automation_sites_token",
           "app_automation_cloud_password", "app_manager_admin_password", "app_timeseries_password", "app_timeseries_token")


def documented_exit_codes() -> frozenset[int]:
    """Every exit code tui.cli.exit_codes documents (read at run time: new ones count too)."""
    return frozenset(v for k, v in vars(exit_codes).items() if k.startswith("EXIT_") and isinstance(v, int))


@dataclass
class Step:
    index: int
    operations: list[Operation]
    latency_ms: int = 0
    fail_rate: float = 0.0
    market: dict[str, str] = field(default_factory=dict)
    #: writes whose answer is lost after they ran (tui.sim.state.Faults.lost_answers)
    lost: dict[str, int] = field(default_factory=dict)
    signal: str = ""
    signal_after: float = 0.0
    outage_after: float = -1.0
    outage_for: float = 0.0
    #: the session expires when this call arrives ("": it does not)
    expire_at: str = ""
    #: the audit log is unwritable during the step ("directory", "dangling symlink"; "": it is not)
    audit_broken: str = ""
    #: two operators move the same VM at once
    same_vm: bool = False

    def describe(self) -> str:
        parts = [" & ".join("sitetk " + " ".join(_short(a) for a in op.argv) for op in self.operations)]
        if self.latency_ms:
            parts.append(f"latency {self.latency_ms} ms")
        if self.fail_rate:
            parts.append(f"fail rate {self.fail_rate:.2f}")
        if self.market:
            parts.append(f"market faults {self.market}")
        if self.lost:
            parts.append(f"answers lost {self.lost}")
        if self.signal:
            parts.append(f"{self.signal} {self.signal_after:.1f} s after sitetk started")
        if self.outage_after >= 0:
            parts.append(f"site down after {self.outage_after:.1f} s for {self.outage_for:.1f} s")
        if self.expire_at:
            parts.append(f"session expires at {self.expire_at}")
        if self.audit_broken:
            parts.append(f"audit log a {self.audit_broken}")
        return "; ".join(parts)


def _short(arg: str) -> str:
    """A path of the soak's own directory by its file name (core.yaml, inputs.json)."""
    return Path(arg).name if arg.startswith("/") else arg


def draw_step(rng: random.Random, world: World, index: int) -> Step:
    first = draw(rng, world, f"{index}a")
    operations = [first]
    if rng.random() < 0.18:
        operations.append(twin(rng, world, first, f"{index}b"))
    same_vm = rng.random() < 0.05
    if same_vm:  # two operators, one VM (drawn after the above: a seed keeps its other draws)
        operations = same_vm_moves(rng, world, f"{index}m")
    step = Step(index, operations, same_vm=same_vm)
    if rng.random() < 0.25:
        step.latency_ms = rng.randrange(20, 250)
    if rng.random() < 0.25:
        step.fail_rate = round(rng.uniform(0.05, 0.15), 2)
    if rng.random() < 0.10:
        step.market = {pick(rng, ("", "service_bastion", "service_dns", "service_vm_kvm")): pick(rng, MARKET_FAULTS)}
    if rng.random() < 0.08:
        step.lost = {pick(rng, LOST_ANSWERS): 1}
    if rng.random() < 0.12:
        step.signal, _ = pick(rng, SIGNALS)
        step.signal_after = round(rng.uniform(0.0, 5.0), 2)
    if rng.random() < 0.06:
        step.outage_after = round(rng.uniform(0.3, 4.0), 2)
        step.outage_for = round(rng.uniform(0.3, 2.5), 2)
    if rng.random() < 0.06:
        step.expire_at = pick(rng, EXPIRING_CALLS)
    if rng.random() < 0.05:
        step.audit_broken = pick(rng, AUDIT_BREAKS)
    return step


def prepare(world: World, run: Callable[..., Outcome] | None = None) -> None:
    """Open the demo site in the working clone and write a toolkit input file (secrets in it,
    mode 0600, as an operator who saved them would). `run` runs a `sitetk` command to its end
    (default `world.run`, a process of its own; the tests pass one that runs it in their process)."""
    run = run or world.run
    opened = run("site", "open", SITE_BRANCH, "--json")
    if opened.code != 0:
        raise RuntimeError(f"site open failed: {opened.stderr or opened.stdout}")
    world.core = Path(json.loads(opened.stdout)["site"]["path"])
    listed = run("market", "list", "--json")
    if listed.code != 0:
        raise RuntimeError(f"market list failed: {listed.stderr or listed.stdout}")
    for appliance in json.loads(listed.stdout)["appliances"]:
        # the Site Toolkit marketplace's build, by key: an id both marketplaces hold is ambiguous
        if appliance["id"] in DOWNLOADABLE and appliance["marketplace"] == TOOLKIT_MARKETPLACE:
            world.appliance_keys[appliance["id"]] = appliance["key"]
    skeleton = run("toolkit", "inputs", "--json")
    if skeleton.code != 0:
        raise RuntimeError(f"toolkit inputs failed: {skeleton.stderr or skeleton.stdout}")
    file = json.loads(skeleton.stdout)["file"]
    values = file.get("user_inputs_values") or file.get("custom_attrs_values")
    for name in SECRETS:
        values[name] = f"Soak-{name.removeprefix('app_')[:12]}-7x"
    password_file = world.server.site.vault_password_file
    if password_file is not None and "app_automation_sites_token" in values:
        values["app_automation_sites_token"] = Path(password_file).read_text().strip()
    values.update({"app_objectstore_hostname": "s3.site.org", "app_manager_sites_branch": SITE_BRANCH,
                   "app_manager_deployment_site": SITE_DIR, "app_automation_cloud_username": "tkauto",
                   # the embedded site's tkauto: deploy logs in with it (a wrong one is refused)
                   "app_automation_cloud_password": AUTOMATION_PASSWORD})
    # a toolkit of its own beside the scenario's, asked for by its name (toolkit deploy --another)
    file["name"] = SOAK_TOOLKIT
    world.inputs = world.root / "inputs.json"
    world.inputs.write_text(json.dumps(file, indent=2))
    world.inputs.chmod(0o600)
    with world.server.site.lock:
        world.baseline = world.ids()


def _count_injected(world: World, figures: Figures) -> None:
    site = world.server.site
    original = site.should_fail

    def counting() -> bool:
        failed = original()
        if failed:
            figures.faults["request failures injected"] += 1
        return failed

    site.should_fail = counting  # type: ignore[method-assign]


def run_step(world: World, step: Step) -> list[Outcome]:
    world.set_faults(step.latency_ms, step.fail_rate, step.market, step.lost, step.expire_at)
    if step.audit_broken:
        world.break_audit_log(step.audit_broken)
    try:
        return _run_commands(world, step)
    finally:
        if step.audit_broken:
            world.mend_audit_log()


def _run_commands(world: World, step: Step) -> list[Outcome]:
    commands = [world.spawn(op.argv) for op in step.operations]
    processes = [c.process for c in commands]
    try:
        return _follow_commands(world, step, commands, processes)
    except BaseException:  # the soak is stopped: its commands (each in a session of its own) go too
        for process in processes:
            end_group(process)
        raise


def _follow_commands(world: World, step: Step, commands: list[Command], processes: list[subprocess.Popen[str]]
                     ) -> list[Outcome]:
    outage: threading.Thread | None = None
    if step.outage_after >= 0:
        def down() -> None:
            time.sleep(step.outage_after)
            world.outage(step.outage_for)
        outage = threading.Thread(target=down, name="soak-outage")
        outage.start()
    delivered = ""
    if step.signal:
        for command in commands:
            command.wait_started(STARTUP_TIMEOUT_S)
        deadline = time.monotonic() + step.signal_after
        while time.monotonic() < deadline and any(p.poll() is None for p in processes):
            time.sleep(0.05)
        number = dict(SIGNALS)[step.signal]
        for process in processes:
            if process.poll() is None and signal_group(process, number):
                delivered = step.signal
    outcomes = [finish(c, op.argv, delivered) for c, op in zip(commands, step.operations, strict=True)]
    if outage is not None:
        outage.join()
    world.clear_faults()
    return outcomes


def soak(ops: int, seed: int, *, progress: Callable[[str], None] | None = None, root: Path | None = None,
         keep: bool = False, prepare_run: Callable[[World], Callable[..., Outcome]] | None = None) -> Figures:
    """`ops` steps drawn from `seed`; `prepare_run(world)`, when given, runs the preparing reads
    (`prepare`'s `run`)."""
    rng = random.Random(seed)
    world = World.start(root=root)
    figures = Figures(seed=seed)
    documented = documented_exit_codes()
    promised: dict[str, Any] = {}
    seen: set[str] = set()
    try:
        prepare(world, prepare_run(world) if prepare_run is not None else None)
        _count_injected(world, figures)
        index = 0
        try:
            for index in range(ops):
                step = draw_step(rng, world, index)
                before = dict(promised)
                state_before, records_before = change_state(world), world.audit_lines()
                outcomes = run_step(world, step)  # a step stopped while its commands run is not counted
                figures.count_step(step)
                touched: set[str] = set()
                crashes: list[str] = []
                for op, outcome in zip(step.operations, outcomes, strict=True):
                    crash = figures.count_outcome(step, op, outcome, documented, TRACEBACK)
                    crashes += [crash] if crash else []
                    touched |= set(op.writes)
                written = [op for op, out in zip(step.operations, outcomes, strict=True) if out.code == 0 and op.writes]
                together = len(step.operations) > 1 and len({k for op in step.operations for k in op.writes}) < sum(len(op.writes) for op in step.operations)
                for op, outcome in zip(step.operations, outcomes, strict=True):
                    if op.writes and (outcome.code != 0 or together):
                        for key in op.writes:  # written or not, in an order nobody knows: no promise
                            promised.pop(key, None)
                for op in written:
                    if not together:
                        promised.update(op.writes)
                findings = cloud_findings(world) + config_findings(world, promised)
                findings += unrecorded_findings(world, step.index, state_before, records_before)
                if any(op.submits and out.code == 0 for op, out in zip(step.operations, outcomes, strict=True)):
                    settled = {k: v for k, v in before.items() if k not in touched}
                    findings += remote_findings(world, settled, SITE_BRANCH, SITE_DIR)
                new = [f for f in findings if f.key not in seen]
                for finding in new:
                    seen.add(finding.key)
                    figures.add_finding(finding, step, seed)
                    if finding.kind == "lost change" and finding.key.startswith("core "):
                        promised.pop(finding.key.removeprefix("core "), None)
                if progress is not None:
                    codes = ",".join(f"{o.code}{'/' + o.signal if o.signal else ''}" for o in outcomes)
                    progress(f"[{index + 1}/{ops}] exit {codes}  {step.describe()}"
                             + "".join(f"\n    ! crash: {c}" for c in crashes)
                             + "".join(f"\n    ! {f.kind}: {f.text}" for f in new))
        except KeyboardInterrupt:  # SIGINT or SIGTERM (bench.soak's main): the steps run so far are counted
            # stopped while a step's commands ran: that step is not counted; during its checks: it is, unchecked
            figures.stopped = f"stopped during step {index + 1} of {ops}; {figures.operations} steps counted"
    finally:
        world.stop(remove=not keep)
    return figures


def main_progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
