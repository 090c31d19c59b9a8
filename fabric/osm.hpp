// SPDX-License-Identifier: MIT
// OpenSM's headers, included the one way that works from C++: osm_config.h first (it changes
// osm_opensm_t's layout), and the headers' own warnings kept out of ours.
#pragma once

#pragma GCC system_header

#include <opensm/osm_config.h>
//
#include <complib/cl_dispatcher.h>
#include <complib/cl_passivelock.h>
#include <iba/ib_types.h>
// The plugin struct has a member named "delete": renamed for C++ while the header is read (the
// layout is unchanged; only plugin_entry.c, in C, defines the struct).
#define delete delete_
#include <opensm/osm_event_plugin.h>
#undef delete
#include <opensm/osm_base.h>
#include <opensm/osm_helper.h>
#include <opensm/osm_log.h>
#include <opensm/osm_madw.h>
#include <opensm/osm_msgdef.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_partition.h>
#include <opensm/osm_pkey.h>
#include <opensm/osm_port.h>
#include <opensm/osm_sa.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>

// OpenSM's SA handlers for PathRecord and MultiPathRecord requests: exported by the opensm
// executable, declared by no header.
extern "C" void osm_pr_rcv_process(void* context, void* data);
extern "C" void osm_mpr_rcv_process(void* context, void* data);
