"""The daemons' configuration: every listener on loopback on the harness's ports, the dummy
drivers, the rank scheduler without DRS (7.x) or mm_sched's (6.10), a gate that is not loopback,
and an install that lacks what must change is refused rather than run half configured."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import pytest

from realsite import config
from realsite.conftext import ConfText
from tests.realsite import stock

PORTS = config.Ports(xmlrpc=41001, oneflow=41002, hook_publisher=41003, hook_replier=41004, monitord=41005,
                     grpc=41006, market=41007)


def _oned(text: str, version: tuple[int, ...]) -> ConfText:
    return ConfText(config.oned_conf(text, version, PORTS))


@pytest.mark.parametrize("text,version", [(stock.ONED_6_10, (6, 10, 5)), (stock.ONED_7_0, (7, 0, 2)),
                                          (stock.ONED_7_4, (7, 4, 0))])
def test_oned_listens_on_loopback_with_dummy_drivers(text: str, version: tuple[int, ...]) -> None:
    conf = _oned(text, version)
    assert conf.scalar("LISTEN_ADDRESS") == "127.0.0.1"
    assert conf.scalar("PORT") == "41001"
    assert conf.vectors("HM_MAD")[0].get("ARGUMENTS") == "-p 41003 -l 41004 -b 127.0.0.1"
    dummy = conf.vectors("VM_MAD", lambda e: e.get("NAME") == "dummy")
    assert [e.get("EXECUTABLE") for e in dummy] == ["one_vmm_dummy"]
    assert [e.get("NAME") for e in conf.vectors("VM_MAD")] == ["dummy"]  # only what runs
    datastore = conf.vectors("DATASTORE_MAD")[0].get("ARGUMENTS")
    assert "-d dummy,fs,lvm" in datastore and "dummy" in datastore.split("-s ")[1].split(",")
    assert conf.scalar("MONITORING_INTERVAL_MARKET") == "30"
    assert conf.entries("DB")[0].get("BACKEND") == "sqlite"


@pytest.mark.parametrize("text,version", [(stock.ONED_6_10, (6, 10, 5)), (stock.ONED_7_4, (7, 4, 0))])
def test_the_gate_is_not_loopback_so_the_setup_accepts_it(text: str, version: tuple[int, ...]) -> None:
    gate = _oned(text, version).scalar("ONEGATE_ENDPOINT") or ""
    host = urlsplit(gate).hostname or ""
    assert not ipaddress.ip_address(host).is_loopback  # tui/procedures/setup/status.py gate_step


def test_7x_runs_the_rank_scheduler_without_the_drs_optimiser() -> None:
    conf = _oned(stock.ONED_7_0, (7, 0, 2))
    assert conf.vectors("SCHED_MAD")[0].get("ARGUMENTS") == "-t 15 -p rank"
    assert conf.scalar("DRS_INTERVAL") == "-1"
    assert conf.scalar("SCHED_MAX_WND_TIME") == "2"
    assert conf.scalar("GRPC_PORT") is None  # 7.0 has no gRPC


def test_7_4_grpc_moves_to_loopback_and_its_own_port() -> None:
    conf = _oned(stock.ONED_7_4, (7, 4, 0))
    assert conf.scalar("GRPC_PORT") == "41006"
    assert conf.scalar("GRPC_LISTEN_ADDRESS") == "127.0.0.1"


def test_6_10_gets_dummy_system_datastores_and_no_sched_mad() -> None:
    conf = _oned(stock.ONED_6_10, (6, 10, 5))
    assert conf.vectors("DATASTORE_MAD")[0].get("ARGUMENTS") == "-t 15 -d dummy,fs,lvm -s shared,ssh,dummy"
    assert conf.vectors("SCHED_MAD") == [] and conf.scalar("DRS_INTERVAL") is None


def test_a_7x_file_without_sched_mad_is_refused() -> None:
    with pytest.raises(config.ConfigError, match="SCHED_MAD"):
        config.oned_conf(stock.ONED_6_10, (7, 0, 2), PORTS)


def test_a_file_without_the_hook_manager_is_refused() -> None:
    text = stock.ONED_7_0.replace('HM_MAD = [\n    EXECUTABLE = "one_hm",\n    ARGUMENTS = "-p 2101 -l 2102 -b 127.0.0.1"]\n', "")
    with pytest.raises(config.ConfigError, match="HM_MAD"):
        config.oned_conf(text, (7, 0, 2), PORTS)


def test_rewriting_twice_changes_nothing_more() -> None:
    once = config.oned_conf(stock.ONED_7_0, (7, 0, 2), PORTS)
    assert config.oned_conf(once, (7, 0, 2), PORTS) == once
    monitord = config.monitord_conf(stock.MONITORD, PORTS)
    assert config.monitord_conf(monitord, PORTS) == monitord


def test_monitord_listens_on_loopback_with_the_dummy_driver_and_short_periods() -> None:
    conf = ConfText(config.monitord_conf(stock.MONITORD, PORTS))
    network = conf.vectors("NETWORK")[0]
    assert (network.get("ADDRESS"), network.get("MONITOR_ADDRESS"), network.get("PORT")) == ("127.0.0.1", "127.0.0.1", "41005")
    assert conf.vectors("IM_MAD", lambda e: e.get("NAME") == "dummy")[0].get("ARGUMENTS") == "-r 3 -t 15 -w 90 dummy"
    assert [e.get("NAME") for e in conf.vectors("IM_MAD")] == ["dummy"]
    assert int(conf.vectors("PROBES_PERIOD")[0].get("SYSTEM_HOST")) <= 30


def test_mm_sched_asks_this_frontend() -> None:
    conf = ConfText(config.sched_conf(stock.SCHED, PORTS))
    assert conf.scalar("ONE_XMLRPC") == "http://127.0.0.1:41001/RPC2"
    assert int(conf.scalar("SCHED_INTERVAL") or "0") <= 5


def test_oneflow_listens_on_loopback_and_follows_this_frontend() -> None:
    text = config.oneflow_conf(stock.ONEFLOW, PORTS)
    assert ":one_xmlrpc: http://127.0.0.1:41001/RPC2\n" in text
    assert ":subscriber_endpoint: 'tcp://127.0.0.1:41003'\n" in text
    assert ":host: 127.0.0.1\n" in text and ":port: 41002\n" in text
    assert "# OpenNebula server contact information" in text and ":page_size: 10" in text
    with pytest.raises(config.ConfigError, match=":port:"):
        config.oneflow_conf(stock.ONEFLOW.replace(":port: 2474\n", ""), PORTS)


def test_without_option_drops_only_that_flag() -> None:
    assert config.without_option("-t 15 -p rank -o one_drs", "-o") == "-t 15 -p rank"
    assert config.without_option("-o x -t 15", "-o") == "-t 15"
    assert config.without_option("-t 15 -p rank", "-o") == "-t 15 -p rank"
