/* SPDX-License-Identifier: MIT */
/* The entry of the plugin's test module: the plugin's own calls, and after each event where
   OpenSM does not hold its lock, a check that the plugin did not leave it held either. */
#define _GNU_SOURCE /* pthread_rwlock_t in OpenSM's lock */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <opensm/osm_config.h>
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_version.h>

void* ibqos_osm_create(struct osm_opensm* osm);
void ibqos_osm_delete(void* plugin);
void ibqos_osm_report(void* plugin, osm_epi_event_id_t event, void* data);

static osm_opensm_t* opensm;

static void* create(osm_opensm_t* osm) {
    opensm = osm;
    return ibqos_osm_create(osm);
}

static void report(void* plugin, osm_epi_event_id_t event, void* data) {
    ibqos_osm_report(plugin, event, data);
    if (event != OSM_EVENT_ID_HEAVY_SWEEP_DONE && event != OSM_EVENT_ID_UCAST_ROUTING_DONE &&
        event != OSM_EVENT_ID_SUBNET_UP)
        return;
    /* glibc refuses a write lock to the thread that holds it (EDEADLK, which OpenSM's
       cl_plock_excl_acquire ignores: its release would then free the plugin's lock, and the
       region it meant to protect would run unprotected); the deadline already past, any other
       holder (the SA's threads, reading) gives ETIMEDOUT at once. */
    const struct timespec past = {0, 0};
    int rc = pthread_rwlock_timedwrlock(&opensm->lock.lock, &past);
    if (rc == 0) {
        pthread_rwlock_unlock(&opensm->lock.lock);
    } else if (rc == EDEADLK) {
        osm_log(&opensm->log, OSM_LOG_ERROR,
                "IBQOS-TEST: the plugin returned from event %d with OpenSM's lock held\n",
                (int)event);
    }
}

osm_event_plugin_t osm_event_plugin = {
    .osm_version = OSM_VERSION,
    .create = create,
    .delete = ibqos_osm_delete,
    .report = report,
};
