/*
 * watch.c - stream Kubernetes objects through tattler's C API and print one
 * line per entry:
 *
 *     Add default/web-1 1234          (namespace/name, or name when cluster-scoped)
 *     Synced v1/pods 1240             (the resource's full state has been delivered)
 *     Error v1/nodes 403 Forbidden: nodes is forbidden ...
 *
 * usage: watch [--until-synced] [--close-race | --stop-race] [--token-file F]
 *              [--ca-file F] [--namespace NS] SERVER RESOURCE...
 *
 *   --until-synced  exit 0 once every resource has printed Synced (1 on an Error entry)
 *   --close-race    once synced, a second thread calls tattler_close while this
 *                   thread is blocked in tattler_next_entry (the race the reader's
 *                   reference count makes safe); prints "Closed"
 *   --stop-race     the same with tattler_stop, the documented way: this thread
 *                   then closes the reader itself; prints "Closed"
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -Iinclude ffi/examples/watch.c \
 *            -Ltarget/debug -l:libtattler.a -lpthread -ldl -lm -lrt -o watch
 * Log lines from tattler go to stderr through the log callback.
 */
/* POSIX threads and clocks under -std=c11, which alone hides them. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tattler.h"

enum race { RACE_NONE, RACE_CLOSE, RACE_STOP };

/* What the racing thread needs: the reader, and "main has seen every Synced". */
struct racer {
    tattler_reader *reader;
    enum race mode;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int synced;
};

static void log_to_stderr(void *user, int level, const char *target, const char *msg) {
    static const char *const names[] = {"OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    (void)user;
    fprintf(stderr, "%s %s: %s\n", level >= 1 && level <= 5 ? names[level] : "?", target, msg);
}

/* The number of streams: one per object in the stats array. */
static int count_streams(tattler_reader *r) {
    size_t needed = 0;
    if (tattler_stats_json(r, NULL, 0, &needed) != TATTLER_ERR_BUFFER_TOO_SMALL) {
        return -1;
    }
    needed += 256; /* counters may grow between the two calls */
    char *json = malloc(needed);
    if (json == NULL) {
        return -1;
    }
    int n = -1;
    if (tattler_stats_json(r, json, needed, NULL) == TATTLER_OK) {
        n = 0;
        for (const char *p = json; (p = strstr(p, "\"resource\":")) != NULL; p++) {
            n++;
        }
    }
    free(json);
    return n;
}

static void print_entry(const tattler_entry *e) {
    const char *ns = tattler_entry_namespace(e);
    const char *group = tattler_entry_group(e);
    switch (tattler_entry_change(e)) {
    case TATTLER_CHANGE_SYNCED:
        printf("Synced %s%s%s/%s %s\n", group, *group ? "/" : "", tattler_entry_version(e),
               tattler_entry_resource(e), tattler_entry_resource_version_str(e));
        break;
    case TATTLER_CHANGE_ERROR:
        printf("Error %s%s%s/%s %u %s: %s\n", group, *group ? "/" : "", tattler_entry_version(e),
               tattler_entry_resource(e), (unsigned)tattler_entry_error_code(e),
               tattler_entry_error_reason(e), tattler_entry_error_message(e));
        break;
    case TATTLER_CHANGE_STALE: /* not current: why, and which namespace's stream; Synced ends it */
        printf("Stale %s%s%s/%s %s%s%s: %s\n", group, *group ? "/" : "", tattler_entry_version(e),
               tattler_entry_resource(e), ns, *ns ? " " : "", tattler_entry_error_reason(e),
               tattler_entry_error_message(e));
        break;
    default: {
        size_t len = 0;
        const uint8_t *obj = tattler_entry_object(e, &len);
        /* The JSON bytes are there (not NUL-terminated) unless the delete was inferred. */
        if (obj == NULL && !tattler_entry_inferred(e)) {
            fprintf(stderr, "watch: %s has no object\n", tattler_entry_name(e));
        }
        /* "Add", "Update", ...; "Unknown" for a change newer than this header. */
        printf("%s %s%s%s %s%s\n", tattler_change_str(tattler_entry_change(e)), ns, *ns ? "/" : "",
               tattler_entry_name(e), tattler_entry_resource_version_str(e),
               tattler_entry_inferred(e) ? " inferred" : "");
    }
    }
    fflush(stdout);
}

static void *race_thread(void *arg) {
    struct racer *rc = arg;
    pthread_mutex_lock(&rc->lock);
    while (!rc->synced) {
        pthread_cond_wait(&rc->cond, &rc->lock);
    }
    enum race mode = rc->mode;
    pthread_mutex_unlock(&rc->lock);
    /* Give the main thread time to block inside tattler_next_entry: that it is
     * blocked there is the one thing this thread cannot observe. */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (mode == RACE_CLOSE) {
        tattler_close(rc->reader); /* stops, and drops the creator's reference */
    } else {
        tattler_stop(rc->reader);
    }
    return NULL;
}

static int usage(void) {
    fprintf(stderr, "usage: watch [--until-synced] [--close-race | --stop-race] [--token-file F] "
                    "[--ca-file F] [--namespace NS] SERVER RESOURCE...\n");
    return 2;
}

int main(int argc, char **argv) {
    int until_synced = 0;
    enum race race = RACE_NONE;
    const char *token_file = NULL, *ca_file = NULL, *namespace = NULL;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--until-synced") == 0) {
            until_synced = 1;
        } else if (strcmp(argv[i], "--close-race") == 0) {
            race = RACE_CLOSE;
        } else if (strcmp(argv[i], "--stop-race") == 0) {
            race = RACE_STOP;
        } else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc) {
            token_file = argv[++i];
        } else if (strcmp(argv[i], "--ca-file") == 0 && i + 1 < argc) {
            ca_file = argv[++i];
        } else if (strcmp(argv[i], "--namespace") == 0 && i + 1 < argc) {
            namespace = argv[++i];
        } else {
            return usage();
        }
    }
    if (argc - i < 2) {
        return usage();
    }

    /* The configuration, key by key: a mistyped setter does not compile. */
    tattler_config *cfg = tattler_config_new();
    char err[512] = "";
    size_t needed = 0;
    tattler_status st = tattler_config_set_server(cfg, argv[i]);
    if (st == TATTLER_OK && token_file != NULL) {
        st = tattler_config_set_token_file(cfg, token_file);
    }
    if (st == TATTLER_OK && ca_file != NULL) {
        st = tattler_config_set_ca_file(cfg, ca_file);
    }
    if (st == TATTLER_OK && namespace != NULL) {
        st = tattler_config_set_namespace(cfg, namespace);
    }
    for (int k = i + 1; k < argc && st == TATTLER_OK; k++) {
        st = tattler_config_add_resource(cfg, argv[k], err, sizeof err, &needed);
    }

    if (tattler_set_log_callback(log_to_stderr, NULL) != TATTLER_OK) {
        fprintf(stderr, "watch: another logger is installed\n");
    }

    tattler_reader *r = NULL;
    if (st == TATTLER_OK) {
        st = tattler_open_config(cfg, NULL, 0, &r, err, sizeof err, &needed);
    }
    tattler_config_free(cfg); /* the reader does not need it */
    if (st != TATTLER_OK) {
        /* The typed setters fail only in ways their status says. */
        fprintf(stderr, "watch: %s (%s)\n", *err ? err : tattler_status_str(st), tattler_status_str(st));
        return 1;
    }
    int streams = count_streams(r);
    if (streams <= 0) {
        fprintf(stderr, "watch: cannot read the stats\n");
        tattler_close(r);
        return 1;
    }

    struct racer rc = {r, race, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t racer_thread;
    if (race != RACE_NONE && pthread_create(&racer_thread, NULL, race_thread, &rc) != 0) {
        fprintf(stderr, "watch: cannot start a thread\n");
        tattler_close(r);
        return 1;
    }

    int synced = 0, code = 0;
    for (;;) {
        tattler_entry *e = NULL;
        st = tattler_next_entry(r, -1, &e);
        if (st == TATTLER_CLOSED) {
            printf("Closed\n");
            break;
        }
        if (st != TATTLER_OK) {
            /* next_entry's failures are described by the status alone. */
            fprintf(stderr, "watch: next entry: %s\n", tattler_status_str(st));
            code = 1;
            break;
        }
        print_entry(e);
        tattler_change change = tattler_entry_change(e);
        tattler_entry_free(e);
        if (change == TATTLER_CHANGE_ERROR && until_synced) {
            code = 1;
            break;
        }
        /* Counts Synced entries: right for a first sync, where each stream syncs once. */
        if (change == TATTLER_CHANGE_SYNCED && ++synced == streams) {
            if (race != RACE_NONE) {
                pthread_mutex_lock(&rc.lock);
                rc.synced = 1;
                pthread_cond_signal(&rc.cond);
                pthread_mutex_unlock(&rc.lock);
            } else if (until_synced) {
                break;
            }
        }
    }
    fflush(stdout);

    if (race != RACE_NONE) {
        pthread_mutex_lock(&rc.lock);
        if (!rc.synced) {
            /* Failed before the racer was released: release it for a plain stop. */
            rc.mode = RACE_STOP;
            rc.synced = 1;
            pthread_cond_signal(&rc.cond);
        }
        pthread_mutex_unlock(&rc.lock);
        pthread_join(racer_thread, NULL);
        if (rc.mode == RACE_CLOSE) {
            return code; /* the racing thread closed the reader */
        }
    }
    tattler_close(r);
    return code;
}
