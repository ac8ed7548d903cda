"""The soak: hundreds of randomised `sitetk` operations against the embedded site, under faults.

    python -m bench.soak --ops 500 --seed 1 [--json]       (or: make soak)

Every operation is a real `sitetk` subprocess (market download/attrs/list, toolkit deploy and key
grant, hosts move, site edit/enable/submit/check) against the embedded site started in this
process (tui.sim), with faults drawn at random: latency, a failure rate (internal errors and
dropped connections), marketplace faults, the site stopped and started again during an
operation, SIGINT/SIGTERM/SIGHUP sent to the command's process group at a random moment, and two
commands at once. After each step the cloud and the repositories are checked for leftovers,
duplicates and lost changes, and every command for a crash (a traceback, or an exit code that
tui.cli.exit_codes does not document). The same seed draws the same operations and faults
(timings, and so outcomes, still vary with the machine's load).

Modules: `world` (the site, the client environment, the fault switches), `operations` (what can
be run, and what a success promises), `checks` (the invariants), `run` (the loop), `report`
(the table and the figures).
"""
