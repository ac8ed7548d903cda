"""A real OpenNebula frontend on loopback, from an already installed prefix (issue 19).

The platform is built outside this repository (a workplace rule: no build recipe here; how is in
shared/reference/real-platform.md). This package configures and runs such an install: oned on
sqlite with the dummy drivers and the rank scheduler, the real OneFlow server, the real `one`
market driver importing from the embedded site's marketplace server, hosts, datastores and
networks taken from the embedded site's fresh scenario, and a guest agent standing in for the
guests. Nothing leaves loopback. Modules:

- `conftext`, `config`: the daemons' configuration files, edited as text;
- `patches`: the changes to the install's driver scripts (market fallbacks, monitoring pid files,
  the KVM facts probe, datastore figures);
- `facts`: what the frontend is populated with, from `tui.sim.scenarios`;
- `ports`: free loopback ports (frontends side by side);
- `layout`: the frontend's ONE_LOCATION built over the untouched prefix;
- `processes`: daemons started in sessions of their own and stopped with all they started;
- `populate`, `agent`, `rpc`: the XML-RPC side;
- `site`, `__main__`: `python -m realsite start|stop|status|diff`.
"""
