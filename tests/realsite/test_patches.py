"""The driver-script changes: the market drivers' internet fallbacks go to a dead loopback port,
each install's monitoring keeps its own pid files and kills only its own clients, the dummy
probe prints a host's fact file, the dummy datastore has room; a script that does not hold what
is changed is refused (a new release fails loudly instead of running unpatched)."""

from __future__ import annotations

import pytest

from realsite import patches
from realsite.ports import DEAD_URL

ONE_MONITOR = """#!/usr/bin/env ruby
# see https://docs.opennebula.io/ for details
require 'net/http'
class OneMarket
    ONE_MARKET_URL = 'https://marketplace.opennebula.io/'
    def initialize(url)
        @url    = url || ONE_MARKET_URL
        @url   += '/' unless @url.end_with?('/')
    end
    def fetch
        link = "#{@url}appliance/#{id}"
    end
end
"""

LXC_MONITOR = """    DEFAULTS = {
        :url           => 'https://images.linuxcontainers.org/',
        :sizemb        => 5120,
    }
"""

SHEPHERD = """HID=$2
HNAME=$3
CLIENT_PID_FILE=/tmp/one-monitord-$HID.pid
pids=$(ps axuwww | grep "/monitord-client.rb [^\\s]* ${HID} ${HNAME}" | grep -v grep | awk '{ print $2 }')
"""

SYSTEM_RB = """def system
    unindent(<<-EOS)
        ARCH=x86_64
        HYPERVISOR=dummy
    EOS
end

def hostname
    "HOSTNAME=#{ARGV[2]}\\n"
end

result = ''

result << system
result << hostname
puts result
"""

DS_MONITOR = """#!/bin/sh
STDIN=`cat -`

echo "USED_MB=9720"
echo "TOTAL_MB=20480"
echo "FREE_MB=20480"
"""


def test_the_one_driver_falls_back_to_a_dead_loopback_port() -> None:
    assert patches.public_urls(ONE_MONITOR) == ["https://marketplace.opennebula.io/"]
    patched = patches.market_fallback(ONE_MONITOR, DEAD_URL, "one")
    assert f"ONE_MARKET_URL = '{DEAD_URL}'" in patched
    assert patches.public_urls(patched) == []  # the stock URL is left only in a comment
    assert "@url   += '/'" in patched


def test_the_linuxcontainers_driver_too() -> None:
    patched = patches.market_fallback(LXC_MONITOR, DEAD_URL, "linuxcontainers")
    assert patches.public_urls(patched) == [] and f":url           => '{DEAD_URL}'," in patched


def test_a_driver_without_the_fallback_is_refused() -> None:
    with pytest.raises(patches.PatchError):
        patches.market_fallback("puts 'nothing here'\n", DEAD_URL, "one")
    with pytest.raises(patches.PatchError):
        patches.market_fallback(ONE_MONITOR, DEAD_URL, "s3")


def test_public_urls_ignores_loopback_comments_and_interpolation() -> None:
    text = "a = 'http://127.0.0.1:1/'\n# http://example.org/\nb = \"#{@url}appliance\"\nc = 'http://10.0.0.1/x'\n"
    assert patches.public_urls(text) == ["http://10.0.0.1/x"]


def test_each_install_its_own_monitoring_pid_files_and_clients() -> None:
    text = patches.monitord_pid_files(SHEPHERD, "/st/one/var/run")
    text = patches.shepherd_match(text, "/st/one/var/remotes/im/dummy.d")
    assert "/tmp/" not in text
    assert "CLIENT_PID_FILE=/st/one/var/run/one-monitord-$HID.pid" in text
    assert 'grep "/st/one/var/remotes/im/dummy.d/monitord-client.rb [^\\s]* ${HID} ${HNAME}"' in text
    with pytest.raises(patches.PatchError):
        patches.shepherd_match("no grep here\n", "/x")
    assert patches.monitord_pid_files("unrelated\n", "/x") == "unrelated\n"


def test_the_client_db_folder_moves_where_the_client_has_one() -> None:
    text = "DB_PATH   = '/var/tmp/one_db'\nETC_PATH = \"#{DB_PATH}/etc\"\n"
    assert patches.client_db_path(text, "/st/one/var/one_db").startswith("DB_PATH = '/st/one/var/one_db'")
    assert patches.client_db_path("no db here (6.10)\n", "/x") == "no db here (6.10)\n"


def test_the_system_probe_prints_the_hosts_fact_file_else_its_stock_figures() -> None:
    patched = patches.system_probe(SYSTEM_RB, "/st/facts")
    head, tail = patched.split("result = ''", 1)
    assert "alias realsite_stock_system system" in head and "File.join('/st/facts', ARGV[2].to_s)" in head
    assert head.index("def system\n    unindent") < head.index("alias realsite_stock_system")
    assert "result << system" in tail
    with pytest.raises(patches.PatchError):
        patches.system_probe("puts 1\n", "/st/facts")


def test_the_dummy_datastore_reports_room_for_the_toolkit() -> None:
    patched = patches.datastore_monitor(DS_MONITOR, total_mb=4_000_000, free_mb=3_500_000)
    assert 'echo "USED_MB=500000"' in patched and 'echo "TOTAL_MB=4000000"' in patched
    assert 'echo "FREE_MB=3500000"' in patched
    with pytest.raises(patches.PatchError):
        patches.datastore_monitor("echo hi\n", total_mb=1, free_mb=1)
