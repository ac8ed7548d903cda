"""What the soak runs: `sitetk` commands drawn at random, each with what its success promises.

An operation's `writes` are the core.yaml values a success (exit 0) promises to have written:
they must still be there after every later step (a lost change otherwise), unless a later
success wrote the same key. `submits` marks a `site submit`: after its success the remote site
branch holds every value promised before it started.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from bench.soak.world import DOWNLOADABLE, World, pick

#: the component `site enable` lists (its site variables are plain IDs, no cloud needed)
ENABLED_COMPONENT = "tn_bastion"
SITE_VARIABLES = "site_variables"
#: toolkit VMs of the deployed scenario that moves act on, and the hosts they move between
MOVABLE_VMS = (0, 1, 2, 3)
TARGET_HOSTS = (0, 1)
SERVICE_ID = 1
#: seconds each waiting step of a move may take (the default, 15 minutes, outlasts the soak's patience)
MOVE_TIMEOUT_S = 60


@dataclass(frozen=True)
class Operation:
    name: str
    argv: tuple[str, ...]
    #: dotted core.yaml path -> value a success wrote
    writes: dict[str, Any] = field(default_factory=dict)
    submits: bool = False


def _download(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("market download", ("market", "download", _appliance(rng, world), "--datastore", "1", "--yes", "--json"))


def _attrs(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("market attrs", ("market", "attrs", _appliance(rng, world), "--yes", "--json"))


def _appliance(rng: random.Random, world: World) -> str:
    record = pick(rng, DOWNLOADABLE)
    return str(world.appliance_keys.get(record, record))


def _list(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("market list", ("market", "list", "--json"))


def _deploy(rng: random.Random, world: World, n: str) -> Operation:
    from bench.soak.run import SOAK_TOOLKIT

    return Operation("toolkit deploy", ("toolkit", "deploy", "--input", str(world.inputs), "--another", SOAK_TOOLKIT,
                                        "--yes", "--json"))


def _grant(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("toolkit key --grant", ("toolkit", "key", "--service", str(SERVICE_ID), "--grant", "--yes", "--json"))


def _move(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("hosts move", ("hosts", "move", str(pick(rng, MOVABLE_VMS)), "--host", str(pick(rng, TARGET_HOSTS)),
                                    "--timeout", str(MOVE_TIMEOUT_S), "--yes", "--json"))


def same_vm_moves(rng: random.Random, world: World, n: str) -> list[Operation]:
    """Two operators moving the same VM at once (each to a host of their own choosing): one holds
    the VM's move lock, the other is refused at once naming the holder (issue 22 item 3)."""
    vm = str(pick(rng, MOVABLE_VMS))
    return [Operation("hosts move", ("hosts", "move", vm, "--host", str(pick(rng, TARGET_HOSTS)),
                                     "--timeout", str(MOVE_TIMEOUT_S), "--yes", "--json")) for _ in range(2)]


#: the operations that change the site (each success or cancel is recorded in the audit log)
MUTATING = frozenset({"market download", "market attrs", "toolkit deploy", "toolkit key --grant", "hosts move",
                      "site edit", "site enable", "site submit"})


def _edit(rng: random.Random, world: World, n: str) -> Operation:
    key, value = f"soak_{n}", rng.randrange(1, 10**6)
    return Operation("site edit", ("site", "edit", str(world.core), "--set", f"{key}={value}", "--json"), {key: value})


def _enable(rng: random.Random, world: World, n: str) -> Operation:
    template_id, image_id = rng.randrange(100, 999), rng.randrange(100, 999)
    prefix = f"{SITE_VARIABLES}.{ENABLED_COMPONENT}"
    return Operation("site enable", ("site", "enable", ENABLED_COMPONENT, "--no-cloud", "--set", f"template_id={template_id}",
                                     "--set", f"image_id={image_id}", "--yes", "--json"),
                     {f"{prefix}.template_id": template_id, f"{prefix}.image_id": image_id})


def _submit(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("site submit", ("site", "submit", "--yes", "--override-reason", "soak", "--json"), submits=True)


def _check(rng: random.Random, world: World, n: str) -> Operation:
    return Operation("site check", ("site", "check", str(world.core), "--json"))


Draw = Callable[[random.Random, World, str], Operation]

#: (weight, draw): what a step runs, by how often
CATALOGUE: tuple[tuple[int, Draw], ...] = (
    (20, _download), (8, _attrs), (4, _list), (5, _deploy), (6, _grant), (10, _move),
    (20, _edit), (8, _enable), (8, _submit), (4, _check),
)


def draw(rng: random.Random, world: World, n: str) -> Operation:
    total = sum(weight for weight, _ in CATALOGUE)
    point = rng.uniform(0, total)
    for weight, make in CATALOGUE:
        point -= weight
        if point <= 0:
            return make(rng, world, n)
    return CATALOGUE[-1][1](rng, world, n)


def twin(rng: random.Random, world: World, first: Operation, n: str) -> Operation:
    """The second of two operations at once: half the time the same kind (two downloads of one
    appliance, two edits, two deploys: the races of issue 15), else any."""
    if rng.random() < 0.5:
        if first.name == "site edit":
            return _edit(rng, world, n)
        if first.name == "site enable":
            return _enable(rng, world, n)
        return first
    return draw(rng, world, n)
