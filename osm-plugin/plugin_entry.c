/* SPDX-License-Identifier: MIT */
/* The one symbol OpenSM looks for in an event plugin (its member named "delete" rules out C++). */
#include <opensm/osm_config.h>
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_version.h>

void* ibqos_osm_create(struct osm_opensm* osm);
void ibqos_osm_delete(void* plugin);
void ibqos_osm_report(void* plugin, osm_epi_event_id_t event, void* data);

osm_event_plugin_t osm_event_plugin = {
    .osm_version = OSM_VERSION,
    .create = ibqos_osm_create,
    .delete = ibqos_osm_delete,
    .report = ibqos_osm_report,
};
