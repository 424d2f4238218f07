/*
 * bench.c - tattler's C ABI on the replay server: sync pods, touching each
 * entry's namespace, name, resourceVersion and object, and print one JSON line.
 *
 * usage: tattler-c URL|CONFIG.json [--noscrub]
 *
 * URL is the replay server's; CONFIG.json a tattler_open configuration (a
 * real apiserver: bench/real.sh writes them; --noscrub is then ignored).
 *
 * Build (bench/run.sh does this):
 *   cc -O2 -Wall -Wextra -Werror -I include bench/clients/c/bench.c \
 *      bench/target/release/libtattler.a -lpthread -ldl -lm -lrt -o tattler-c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tattler.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A number after "key": in the stats JSON, or 0. */
static unsigned long long stat_field(const char *json, const char *key) {
    const char *p = strstr(json, key);
    return p == NULL ? 0 : strtoull(p + strlen(key), NULL, 10);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: tattler-c URL|CONFIG.json [--noscrub]\n");
        return 2;
    }
    int noscrub = argc > 2 && strcmp(argv[2], "--noscrub") == 0;
    static char config[65536];
    if (strncmp(argv[1], "http://", 7) == 0 || strncmp(argv[1], "https://", 8) == 0) {
        snprintf(config, sizeof config, "{\"server\":\"%s\",\"resources\":[\"pods\"]%s}", argv[1],
                 noscrub ? ",\"scrub\":false" : "");
    } else {
        FILE *f = fopen(argv[1], "r");
        size_t n = f == NULL ? 0 : fread(config, 1, sizeof config - 1, f);
        if (f == NULL || ferror(f) || n == sizeof config - 1) {
            fprintf(stderr, "tattler-c: cannot read the config file %s\n", argv[1]);
            return 2;
        }
        fclose(f);
        config[n] = 0;
    }

    double t0 = now();
    tattler_reader *r = NULL;
    char err[512];
    tattler_status st = tattler_open(config, &r, err, sizeof err);
    if (st != TATTLER_OK) {
        fprintf(stderr, "tattler-c: open: %s (%s)\n", err, tattler_status_str(st));
        return 1;
    }
    unsigned long long objects = 0, touched = 0;
    for (;;) {
        tattler_entry *e = NULL;
        st = tattler_next_entry(r, -1, &e);
        if (st != TATTLER_OK) {
            fprintf(stderr, "tattler-c: next entry: %s\n", tattler_status_str(st));
            tattler_close(r);
            return 1;
        }
        tattler_change c = tattler_entry_change(e);
        if (c == TATTLER_CHANGE_SYNCED) {
            tattler_entry_free(e);
            break;
        }
        if (c == TATTLER_CHANGE_ERROR) {
            fprintf(stderr, "tattler-c: error entry: %s\n", tattler_entry_error_message(e));
            tattler_entry_free(e);
            tattler_close(r);
            return 1;
        }
        size_t len = 0;
        const uint8_t *obj = tattler_entry_object(e, &len);
        touched += strlen(tattler_entry_name(e)) + strlen(tattler_entry_namespace(e)) + len +
                   (tattler_entry_resource_version(e) & 1) + (obj != NULL);
        objects++;
        tattler_entry_free(e);
    }
    double secs = now() - t0;
    char stats[4096];
    unsigned long long bytes = 0;
    if (tattler_stats_json(r, stats, sizeof stats, NULL) == TATTLER_OK) {
        bytes = stat_field(stats, "\"bytes\":");
    }
    printf("{\"client\":\"%s\",\"objects\":%llu,\"bytes\":%llu,\"seconds_to_synced\":%.6f,"
           "\"touched\":%llu}\n",
           noscrub ? "tattler-c-noscrub" : "tattler-c", objects, bytes, secs, touched);
    tattler_close(r);
    return 0;
}
