"""Hand-written stand-ins for the installed configuration files (the structure the platform's
share/etc/oned.conf, src/monitor/etc/monitord.conf, src/scheduler/etc/sched.conf and
src/flow/etc/oneflow-server.conf have at release-6.10.5, 7.0.2 and 7.4.0; not copies of them)."""

from __future__ import annotations

ONED_7_0 = '''# oned.conf (stand-in)
LOG = [
  SYSTEM      = "file",
  DEBUG_LEVEL = 3
]
MONITORING_INTERVAL_DATASTORE = 300
MONITORING_INTERVAL_MARKET    = 600
DB = [ BACKEND = "sqlite",
       TIMEOUT = 2500 ]
PORT = 2633
LISTEN_ADDRESS = "0.0.0.0"
IM_MAD = [
      NAME       = "monitord",
      EXECUTABLE = "onemonitord",
      ARGUMENTS  = "-c monitord.conf",
      THREADS    = 8 ]
VM_MAD = [
    NAME           = "kvm",
    EXECUTABLE     = "one_vmm_exec",
    ARGUMENTS      = "-t 15 -r 0 kvm -p",
    TYPE           = "kvm"
]
#VM_MAD = [ NAME="dummy", SUNSTONE_NAME="Testing", EXECUTABLE="one_vmm_dummy",
#  TYPE="xml" ]
TM_MAD = [
    EXECUTABLE = "one_tm",
    ARGUMENTS = "-t 15 -d dummy,lvm,shared,ssh"
]
DATASTORE_MAD = [
    EXECUTABLE = "one_datastore",
    ARGUMENTS  = "-t 15 -d dummy,fs,lvm -s dummy,shared,ssh"
]
SCHED_MAD = [
      EXECUTABLE = "one_sched",
      ARGUMENTS  = "-t 15 -p rank -o one_drs"
]
SCHED_MAX_WND_TIME   = 10
DRS_INTERVAL = 600
HM_MAD = [
    EXECUTABLE = "one_hm",
    ARGUMENTS = "-p 2101 -l 2102 -b 127.0.0.1"]
#ONEGATE_ENDPOINT = "http://169.254.16.9:5030"
VM_ADMIN_OPERATIONS  = "migrate, delete, recover, retry, deploy, resched,
    backup, restore"
'''

ONED_7_4 = ONED_7_0.replace('LISTEN_ADDRESS = "0.0.0.0"\n',
                            'LISTEN_ADDRESS = "0.0.0.0"\nGRPC_PORT = 2634\nGRPC_LISTEN_ADDRESS = "0.0.0.0"\n')

ONED_6_10 = (ONED_7_0.replace('-s dummy,shared,ssh', '-s shared,ssh')
             .replace('SCHED_MAD = [\n      EXECUTABLE = "one_sched",\n      ARGUMENTS  = "-t 15 -p rank -o one_drs"\n]\n'
                      'SCHED_MAX_WND_TIME   = 10\nDRS_INTERVAL = 600\n', ''))

MONITORD = '''DB = [
  CONNECTIONS = 15
]
NETWORK = [
    ADDRESS         = "::",
    MONITOR_ADDRESS = "auto",
    PORT    = 4124,
    THREADS = 8,
    PUBKEY  = "",
    PRIKEY  = ""
]
PROBES_PERIOD = [
    BEACON_HOST    = 30,
    SYSTEM_HOST    = 600,
    MONITOR_HOST   = 120,
    STATE_VM       = 5,
    MONITOR_VM     = 30,
    SYNC_STATE_VM  = 180
]
IM_MAD = [
    NAME          = "kvm",
    EXECUTABLE    = "one_im_ssh",
    ARGUMENTS     = "-r 3 -t 15 -w 90 kvm",
    THREADS       = 0
]
# IM_MAD = [
#     NAME          = "dummy",
#     EXECUTABLE    = "one_im_sh",
# ]
'''

SCHED = '''MESSAGE_SIZE = 1073741824
TIMEOUT      = 60
ONE_XMLRPC = "http://localhost:2633/RPC2"
SCHED_INTERVAL = 15
DEFAULT_SCHED = [
   POLICY = 1
]
'''

ONEFLOW = '''################################################################################
# Server Configuration
################################################################################

# OpenNebula server contact information
#
:one_xmlrpc: http://localhost:2633/RPC2

# OpenNebula subscriber endpoint
:subscriber_endpoint: 'tcp://localhost:2101'

# Host and port where OneFlow server will run
:host: 127.0.0.1
:port: 2474
:page_size: 10
:log:
  :level: 2
  :system: 'file'
'''
