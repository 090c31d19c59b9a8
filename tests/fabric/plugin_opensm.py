# SPDX-License-Identifier: MIT
"""OpenSM with the ibqos plugin on a SimFabric, as the end-to-end tests and the apply benchmark
set it up: the policy they change (one pair of ports on a level of its own), the opensm.conf lines
that load the plugin, the start that waits until the plugin is running, and the LIDs the SA is
asked by.

    with simfabric.SimFabric(net) as fabric:
        osm, points = plugin_opensm.start(fabric, work, plugin_options(path), SM_GUID, SM_HOST,
                                          plugin_dir, failpoints=True)
        lid = plugin_opensm.endpoint_lids(fabric, SM_HOST)
"""
import os

import sa_requests

SERVICE = 0x10005


def two_group_policy(source, destination, sl, vlarb_high=None, head=None):
    """The port `source` to the port `destination` (port GUIDs) with ServiceID 0x10005 gets SL
    `sl`, everything else SL 0. With `vlarb_high`, the destination's port gets a VLArb high table
    of its own, VL 0 at that weight (qos-setup, which only the plugin applies); `head` is a line
    written first (a comment that a failpoint looks for, say)."""
    text = "" if head is None else head + "\n"
    text += f"""port-groups
    port-group
        name: first
        port-guid: {source:#x}
    end-port-group
    port-group
        name: second
        port-guid: {destination:#x}
    end-port-group
end-port-groups
"""
    if vlarb_high is not None:
        text += f"""qos-setup
    vlarb-tables
        vlarb-scope
            group: second
            vlarb-high: 0:{vlarb_high}
        end-vlarb-scope
    end-vlarb-tables
end-qos-setup
"""
    return text + f"""qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: chosen
        sl: {sl}
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        source: first
        destination: second
        service-id: {SERVICE:#x}
        qos-level-name: chosen
    end-qos-match-rule
end-qos-match-rules
"""


def plugin_options(policy, status=None, module="ibqos_osm"):
    """The opensm.conf lines that load the plugin (`module`: ibqos_osm, or the test build
    ibqos_osm_failpoints) on the policy file `policy`, writing its status to `status` if given."""
    options = "policy=" + policy + ("" if status is None else ",status=" + status)
    return {"event_plugin_name": module, "event_plugin_options": options}


def start(fabric, work, options, sm_guid, sm_host, plugin_dir, failpoints=False, ready="IBQOS-0100",
          timeout=30, **kwargs):
    """Starts OpenSM with the plugin (`options`: its opensm.conf, plugin_options() included) and
    waits for the log line `ready` (IBQOS-0100: the plugin runs). With `failpoints`, the test
    module's failure injection points are files in WORK/failpoints, made here. Returns the OpenSM
    and that directory (None without failpoints)."""
    points = None
    extra_env = dict(kwargs.pop("extra_env", None) or {})
    if failpoints:
        points = os.path.join(work, "failpoints")
        os.makedirs(points, exist_ok=True)
        extra_env["IBQOS_FAILPOINT_DIR"] = points
    osm = fabric.start_opensm(options, sm_guid, sm_host, plugin_dir=os.path.abspath(plugin_dir),
                              extra_env=extra_env, **kwargs)
    osm.wait_for(ready, 1, timeout)
    return osm, points


def endpoint_lids(fabric, host):
    """{port GUID: base LID} of every endpoint, from ibnetdiscover run at node `host`."""
    ports = sa_requests.Ports(fabric.tool(["ibnetdiscover"], host).stdout)
    return {guid: base for base, (guid, _) in ports.endpoints.items()}
