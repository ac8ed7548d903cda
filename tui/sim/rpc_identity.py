"""Identities and marketplaces created over XML-RPC: `one.group.allocate`, `one.user.allocate`,
`one.group.addadmin`, `one.market.allocate`, `one.market.update` and `one.market.enable` (what the
setup's operations call, and what an operator runs to mend a marketplace).

As the platform answers them (OpenNebula/one `src/rm/RequestManagerAllocate.cc`,
`src/rm/RequestManagerGroup.cc`; 7.4 `src/rm/api/`): only administrators create groups, users and
marketplaces; a taken name answers INTERNAL with the pool's text "NAME is already taken by
<KIND> <id>." (GroupAllocate/UserAllocate/MarketPlaceAllocate `pool_allocate`, release-6.10.0 and
7.0.0 RequestManagerAllocate.cc lines 1032, 1007, 1288; 7.4.0 GroupAPI.cc 269, UserAPI.cc 812),
except a marketplace on 7.4, ALLOCATE (MarketPlaceAPI.cc 196,
`tui.sim.platform.market_allocate_refuses_with_allocate`); user-defined groups get
IDs from 100; `user.allocate` takes an optional array of group IDs, the first one the user's
main group and gives the user a TOKEN_PASSWORD (src/um/UserPool.cc 414 at release-7.0.0, 412 at
6.10.0); `group.addadmin` needs the user in the group and adds the group admin's four rules
(`Group::add_admin_rules`, src/group/Group.cc 350-440 at release-7.0.0). A new group joins the
default VDC, whose resource set gives it `@<gid> HOST/* MANAGE #0`, `NET/* USE #0` and
`DATASTORE/* USE #0` (GroupAllocate::pool_allocate, src/rm/RequestManagerAllocate.cc 1035-1039;
`ResourceSet::add_rule`, src/vdc/Vdc.cc 588-625, release-7.0.0; a 7.0.2 frontend lists them).
The CLI's `onegroup create` adds the CREATE rule itself (`src/cli/one_helper/onegroup_helper.rb`
`create_resource` -> `Group#create_default_acls`), over XML-RPC nobody does.
"""

from __future__ import annotations

import secrets

from tui.domain.error_codes import ACTION, ALLOCATE, AUTHORIZATION, INTERNAL
from tui.domain.object_names import USER_EXTRA_CHARS
from tui.domain.one_states import MarketPlaceState
from tui.sim.acl import add_group_admin_rules, add_vdc_rules
from tui.sim.market_monitor import monitor
from tui.sim.platform import market_allocate_refuses_with_allocate
from tui.sim.rpc_context import Call, apply_update, check_update_type, method, parse_text, refuse_name
from tui.sim.rpc_errors import OneError, name_taken, no_exists
from tui.sim.state import OWNER_ONLY, SimGroup, SimMarketplace, SimUser

FIRST_USER_GROUP = 100


def _admin_only(call: Call, kind: str) -> None:
    if not call.admin:
        raise OneError(AUTHORIZATION, f"Not authorized to perform CREATE {kind}.")


@method("one.group.allocate", "s")
def group_allocate(call: Call, name: str) -> int:
    _admin_only(call, "GROUP")
    name = name.strip()
    refuse_name(call, name, INTERNAL)
    taken = next((g for g in call.site.groups.values() if g.name == name), None)
    if taken is not None:
        raise name_taken("GROUP", taken.id, INTERNAL)  # src/group/GroupPool.cc line 123 (6.10.0: 141)
    gid = max(call.site.next_id("group"), FIRST_USER_GROUP)
    call.site.reserve_ids("group", gid)
    call.site.groups[gid] = SimGroup(gid, name)
    add_vdc_rules(call.site, gid)
    return gid


@method("one.user.allocate", "sss", "a")
def user_allocate(call: Call, name: str, password: str, driver: str, group_ids: list | None = None) -> int:
    _admin_only(call, "USER")
    name = name.strip()
    refuse_name(call, name, INTERNAL, extra_chars=USER_EXTRA_CHARS)
    taken = call.site.user_by_name(name)
    if taken is not None:
        raise name_taken("USER", taken.id, INTERNAL)  # src/um/UserPool.cc line 294 (7.0.0: 372, 6.10.0: 473)
    gids = [int(g) for g in (group_ids or [])] or [1]
    for gid in gids:
        if gid not in call.site.groups:
            raise no_exists("GROUP", gid)
    uid = call.site.next_id("user")
    main = call.site.groups[gids[0]]
    call.site.users[uid] = SimUser(uid, name, password, main.id, main.name, gids, auth_driver=driver or "core",
                                   template=[("TOKEN_PASSWORD", secrets.token_hex(32))])
    return uid


@method("one.group.addadmin", "ii")
def group_addadmin(call: Call, group_id: int, user_id: int) -> int:
    _admin_only(call, "GROUP")
    group = call.site.groups.get(group_id)
    if group is None:
        raise no_exists("GROUP", group_id)
    user = call.site.users.get(user_id)
    if user is None:
        raise no_exists("USER", user_id)
    if group_id not in user.groups:
        raise OneError(ACTION, f"User {user_id} is not part of group {group_id}")
    if user_id not in group.admins:
        group.admins.append(user_id)
        add_group_admin_rules(call.site, group_id, user_id)
    return group_id


@method("one.market.allocate", "s")
def market_allocate(call: Call, text: str) -> int:
    _admin_only(call, "MARKETPLACE")
    attrs = dict((k, v) for k, v in parse_text(text) if isinstance(v, str))
    name = attrs.get("NAME", "").strip()
    code, prefix = ((ALLOCATE, "Error allocating a new marketplace. ")
                    if market_allocate_refuses_with_allocate(call.site.config.one_version) else (INTERNAL, ""))
    refuse_name(call, name, code, prefix)
    taken = next((m for m in call.site.marketplaces.values() if m.name == name), None)
    if taken is not None:
        # src/market/MarketPlacePool.cc line 143 (6.10.0: 207), without a final period
        raise name_taken("MARKETPLACE", taken.id, code, prefix, period=False)
    market_id = call.site.next_id("marketplace")
    template = [(k, v) for k, v in parse_text(text) if k != "NAME"]
    # a new object takes the creator's umask, oned.conf DEFAULT_UMASK 177: owner USE and MANAGE only
    # (PoolObjectSQL::set_umask, src/pool/PoolObjectSQL.cc; a 7.0.2 frontend reads back 600)
    call.site.marketplaces[market_id] = SimMarketplace(market_id, name, attrs.get("MARKET_MAD", "one"),
                                                       attrs.get("ENDPOINT", ""), template,
                                                       uid=call.user.id, gid=call.user.gid, perms=OWNER_ONLY)
    return market_id


def _market(call: Call, market_id: int) -> SimMarketplace:
    market = call.site.marketplaces.get(market_id)
    if market is None:
        raise no_exists("MARKETPLACE", market_id)
    call.require("MARKETPLACE", "MANAGE", market)
    return market


@method("one.market.update", "is", "i")
def market_update(call: Call, market_id: int, text: str, append: int = 0) -> int:
    """The template replaced or merged (`RequestManagerUpdateTemplate`), then
    `MarketPlace::post_update_template` (src/market/MarketPlace.cc 401-420 at release-7.0.2): a
    MARKET_MAD given is the new driver, the template keeps MARKET_MAD. The next monitoring reads
    the new ENDPOINT."""
    market = _market(call, market_id)
    check_update_type(append)
    template = apply_update(market.template, text, append)
    new_mad = next((v for k, v in template if k == "MARKET_MAD" and isinstance(v, str) and v), "")
    if new_mad:
        market.market_mad = new_mad
    market.template = [a for a in template if a[0] != "MARKET_MAD"] + [("MARKET_MAD", market.market_mad)]
    market.endpoint = next((v for k, v in market.template if k == "ENDPOINT" and isinstance(v, str)), "")
    return market_id


@method("one.market.enable", "ib")
def market_enable(call: Call, market_id: int, enable: bool) -> int:
    """`MarketPlaceEnable` (src/rm/RequestManagerMarketPlace.cc 39-115 at release-7.0.2; 7.4.0
    src/rm/api/MarketPlaceAPI.cc 27-80): nothing when already so; disabling drops every app of the
    marketplace; enabling monitors it at once."""
    market = _market(call, market_id)
    if bool(enable) == (market.state == MarketPlaceState.ENABLED):
        return market_id
    market.state = MarketPlaceState.ENABLED if enable else MarketPlaceState.DISABLED
    if enable:
        monitor(call.site, market_id)
    else:
        for app_id in [a.id for a in call.site.marketapps.values() if a.marketplace_id == market_id]:
            del call.site.marketapps[app_id]
    return market_id
