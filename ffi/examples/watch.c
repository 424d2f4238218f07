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

/* A growable string for building the configuration JSON. */
struct buf {
    char *data;
    size_t len, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *data = realloc(b->data, cap);
        if (data == NULL) {
            return -1;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int buf_str(struct buf *b, const char *s) { return buf_put(b, s, strlen(s)); }

/* Appends s as a JSON string literal. */
static int buf_json(struct buf *b, const char *s) {
    if (buf_str(b, "\"") != 0) {
        return -1;
    }
    for (; *s != '\0'; s++) {
        char esc[8];
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            snprintf(esc, sizeof esc, "\\%c", c);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
        } else {
            esc[0] = (char)c;
            esc[1] = '\0';
        }
        if (buf_str(b, esc) != 0) {
            return -1;
        }
    }
    return buf_str(b, "\"");
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
    default: {
        static const char *const names[] = {"?", "Add", "Update", "Delete", "Snapshot"};
        int c = (int)tattler_entry_change(e);
        size_t len = 0;
        const uint8_t *obj = tattler_entry_object(e, &len);
        /* The JSON bytes are there (not NUL-terminated) unless the delete was inferred. */
        if (obj == NULL && !tattler_entry_inferred(e)) {
            fprintf(stderr, "watch: %s has no object\n", tattler_entry_name(e));
        }
        printf("%s %s%s%s %s%s\n", names[c >= 1 && c <= 4 ? c : 0], ns, *ns ? "/" : "",
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

    struct buf cfg = {NULL, 0, 0};
    int bad = buf_str(&cfg, "{\"server\":") || buf_json(&cfg, argv[i]) || buf_str(&cfg, ",\"resources\":[");
    for (int k = i + 1; k < argc && !bad; k++) {
        bad = (k > i + 1 && buf_str(&cfg, ",")) || buf_json(&cfg, argv[k]);
    }
    bad = bad || buf_str(&cfg, "]");
    if (token_file != NULL) {
        bad = bad || buf_str(&cfg, ",\"token_file\":") || buf_json(&cfg, token_file);
    }
    if (ca_file != NULL) {
        bad = bad || buf_str(&cfg, ",\"ca_file\":") || buf_json(&cfg, ca_file);
    }
    if (namespace != NULL) {
        bad = bad || buf_str(&cfg, ",\"namespace\":") || buf_json(&cfg, namespace);
    }
    bad = bad || buf_str(&cfg, "}");
    if (bad) {
        fprintf(stderr, "watch: out of memory\n");
        free(cfg.data);
        return 1;
    }

    if (tattler_set_log_callback(log_to_stderr, NULL) != TATTLER_OK) {
        fprintf(stderr, "watch: another logger is installed\n");
    }

    tattler_reader *r = NULL;
    char err[512];
    tattler_status st = tattler_open(cfg.data, &r, err, sizeof err);
    free(cfg.data);
    if (st != TATTLER_OK) {
        fprintf(stderr, "watch: %s (%s)\n", err, tattler_status_str(st));
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
