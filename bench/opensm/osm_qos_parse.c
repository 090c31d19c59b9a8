/* SPDX-License-Identifier: MIT */
/* OpenSM's own QoS-policy reading, timed: the parser (osm_qos_parse_policy_file: flex, bison and
 * the parser's actions) and the validation OpenSM runs on the result, as an OpenSM 3.3.23 does at
 * each heavy sweep. Built by bench/opensm_parse.py against the objects of an OpenSM built from
 * its sources; the subnet is empty (no fabric: port-group members are looked up in an empty
 * table, as on a fabric none of the policy's GUIDs are on).
 *
 *   osm-qos-parse POLICY
 *
 * Prints one line: "status=S seconds=T", S 0 when OpenSM puts the policy in force, T the CPU
 * time of the call alone (CLOCK_PROCESS_CPUTIME_ID). Exit status 0 when it is read, 2 on a
 * usage or setup error. */
#include <stdio.h>
#include <time.h>

#include <opensm/osm_opensm.h>
#include <opensm/osm_qos_policy.h>
#include <opensm/osm_subnet.h>

int osm_qos_parse_policy_file(osm_subn_t* p_subn);

/* Defined by OpenSM's main.c, which this program replaces. */
volatile unsigned int osm_exit_flag = 0;

static osm_opensm_t osm;

static double cpu_seconds(void) {
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    double start, seconds;
    int status;

    if (argc != 2) {
        fprintf(stderr, "usage: osm-qos-parse POLICY\n");
        return 2;
    }
    osm_log_construct(&osm.log);
    if (osm_log_init_v2(&osm.log, FALSE, OSM_LOG_NONE, "/dev/null", 0, TRUE) != IB_SUCCESS) {
        fprintf(stderr, "osm-qos-parse: the log cannot be opened\n");
        return 2;
    }
    osm_subn_construct(&osm.subn);
    osm_subn_set_default_opt(&osm.subn.opt);
    osm.subn.p_osm = &osm;
    osm.subn.opt.qos_policy_file = argv[1];

    start = cpu_seconds();
    status = osm_qos_parse_policy_file(&osm.subn);
    seconds = cpu_seconds() - start;
    printf("status=%d seconds=%.9f\n", status, seconds);
    return 0;
}
