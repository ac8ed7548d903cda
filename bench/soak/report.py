"""The soak's figures: counted as it runs, printed as a table, written as JSON."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui.cli.exit_codes import EXIT_FINDINGS

if TYPE_CHECKING:  # pragma: no cover
    from bench.soak.checks import Finding
    from bench.soak.operations import Operation
    from bench.soak.run import Step
    from bench.soak.world import Outcome

#: how many examples of each kind of problem the JSON keeps (with the step to reproduce it)
EXAMPLES = 25


@dataclass
class Figures:
    seed: int
    started: float = field(default_factory=time.time)
    operations: int = 0
    commands: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    succeeded: int = 0
    failures: int = 0
    crashes: int = 0
    hangs: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: clean failures by operation and first line of the error title (what the operator read)
    failure_reasons: Counter[str] = field(default_factory=Counter)
    #: why the run ended before its last step ("" when it ran them all): its figures are of the steps before
    stopped: str = ""

    def count_step(self, step: "Step") -> None:
        self.operations += 1
        self.commands += len(step.operations)
        for op in step.operations:
            self.by_operation[op.name] += 1
        if len(step.operations) > 1:
            self.faults["two commands at once"] += 1
        if step.latency_ms:
            self.faults["latency"] += 1
        if step.fail_rate:
            self.faults["failure rate"] += 1
        if step.market:
            self.faults["marketplace faults"] += 1
        if step.lost:
            self.faults["answers lost after the call ran"] += 1
        if step.outage_after >= 0:
            self.faults["site stopped and restarted"] += 1
        if step.expire_at:
            self.faults["session expired mid-run"] += 1
        if step.audit_broken:
            self.faults["audit log unwritable"] += 1
        if step.same_vm:
            self.faults["two moves of one VM"] += 1

    def count_outcome(self, step: "Step", op: "Operation", outcome: "Outcome", documented: frozenset[int],
                      traceback: str) -> str:
        """Count one command's outcome; returns what crashed ("" for none), for the step's log line."""
        if outcome.signal:
            self.faults[f"{outcome.signal} sent"] += 1
        crash = ""
        if outcome.hung:
            crash = "hung (killed after the soak's timeout)"
            self.hangs += 1
        elif traceback in outcome.stderr:
            crash = "Python traceback on stderr"
        elif outcome.code < 0:
            crash = f"died of signal {-outcome.code} (not handled)"
        elif outcome.code not in documented:
            crash = f"exit code {outcome.code} is not documented in tui/cli/exit_codes.py"
        if crash:
            self.crashes += 1
            self._example("crash", step, f"{op.name}: {crash}; stderr: {_tail(outcome.stderr)}")
            return f"{op.name}: {crash}"
        if outcome.code == 0 or (outcome.code == EXIT_FINDINGS and op.name == "site check"):
            self.succeeded += 1  # a check that found problems did its job
        else:
            self.failures += 1
            self.failure_reasons[f"{op.name}: {_reason(outcome)}"] += 1
        return ""

    def add_finding(self, finding: "Finding", step: "Step", seed: int) -> None:
        self.findings[finding.kind] += 1
        self._example(finding.kind, step, finding.text)

    def _example(self, kind: str, step: "Step", text: str) -> None:
        examples = self.examples.setdefault(kind, [])
        if len(examples) < EXAMPLES:
            examples.append({"seed": self.seed, "step": step.index, "what": text, "step_ran": step.describe()})

    def as_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "seconds": round(time.time() - self.started, 1),
            "operations": self.operations,
            "commands": self.commands,
            "by_operation": dict(sorted(self.by_operation.items())),
            "faults_injected": dict(sorted(self.faults.items())),
            "succeeded": self.succeeded,
            "failures_clean": self.failures,
            "crashes": self.crashes,
            "hangs": self.hangs,
            "leftovers": self.findings["leftover"],
            "duplicates": self.findings["duplicate"],
            "lost_changes": self.findings["lost change"],
            "changes_without_a_record": self.findings["change without a record"],
            "failure_reasons": dict(self.failure_reasons.most_common(30)),
            "examples": self.examples,
        } | ({"stopped": self.stopped} if self.stopped else {})

    def clean(self) -> bool:
        return not (self.crashes or self.findings["leftover"] or self.findings["duplicate"] or self.findings["lost change"]
                    or self.findings["change without a record"])

    def table(self) -> str:
        data = self.as_json()
        rows = [("operations (steps)", data["operations"]), ("commands run", data["commands"]),
                ("succeeded (exit 0)", data["succeeded"]), ("failures (clean errors)", data["failures_clean"]),
                ("crashes", data["crashes"]), ("leftovers", data["leftovers"]), ("duplicates", data["duplicates"]),
                ("lost changes", data["lost_changes"]), ("hangs", data["hangs"]),
                ("changes without a record", data["changes_without_a_record"])]
        rows += [(f"fault: {name}", count) for name, count in data["faults_injected"].items()]
        width = max(len(name) for name, _ in rows)
        lines = [f"soak, seed {self.seed}, {data['seconds']} s" + (f"; {self.stopped}" if self.stopped else "")] + [f"  {name:<{width}}  {value:>6}" for name, value in rows]
        for kind in ("crash", "leftover", "duplicate", "lost change", "change without a record"):
            for example in self.examples.get(kind, [])[:8]:
                lines.append(f"  {kind} at step {example['step']} (seed {example['seed']}): {example['what']}\n      ran: {example['step_ran']}")
        return "\n".join(lines)


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])[:600]


def _reason(outcome: "Outcome") -> str:
    import json

    try:
        error = json.loads(outcome.stdout).get("error") or {}
        return str(error.get("title") or "?")[:80]
    except (ValueError, AttributeError):
        last = outcome.stderr.strip().splitlines()[-1:] or ["?"]
        return last[0][:80]
