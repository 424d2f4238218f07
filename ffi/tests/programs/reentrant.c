/*
 * reentrant.c - every tattler call made from inside the log callback, on a
 * stream thread of the reader it calls: each must work or return its
 * documented status, never deadlock or crash. ffi/tests/c_programs.rs runs
 * it (with -Werror, AddressSanitizer + UBSan, valgrind).
 *
 * usage: reentrant calls|close SERVER
 *
 *   calls  the callback calls everything but tattler_close on the reader
 *          whose configmaps stream is logging; main checks what it saw
 *   close  the callback closes that reader, on that reader's own thread,
 *          while main waits on a condition variable (not inside a call)
 *
 * Prints one line per check ("ok: ..." or "FAILED: ..."), then "reentrant: ok"
 * and exits 0, or exits 1.
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static const char *server;
static tattler_reader *reader;
static enum { IDLE, ARMED, DONE } phase = IDLE; /* under lock */
static int close_mode;
static int plain_http_lines; /* under lock: "talking plain http" lines seen */
static int stolen;           /* under lock: the callback's next_entry took the configmaps Synced */
static int failures;         /* under lock */

static void check(int ok, const char *what) {
    pthread_mutex_lock(&lock);
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    fflush(stdout);
    failures += !ok;
    pthread_mutex_unlock(&lock);
}

static void other_log(void *user, int level, const char *target, const char *msg) {
    (void)user, (void)level, (void)target, (void)msg;
}

/* The calls, from inside the callback on the configmaps stream's thread. */
static void calls_from_the_callback(tattler_reader *r) {
    char buf[16384], err[256];
    size_t needed = 0;
    tattler_entry *e = NULL;
    bool changed = false;

    check(tattler_in_log_callback(), "tattler_in_log_callback is true inside the callback");
    check(tattler_stats_json(r, buf, sizeof buf, &needed) == TATTLER_OK &&
              strstr(buf, "\"v1/configmaps\"") != NULL,
          "stats_json works");
    check(tattler_metrics_text(r, buf, sizeof buf, &needed) == TATTLER_OK &&
              strstr(buf, "tattler_synced{resource=\"v1/configmaps\"}") != NULL,
          "metrics_text works");
    uint8_t cp[16384];
    size_t cp_len = 0;
    tattler_status cst = tattler_checkpoint(r, cp, sizeof cp - 1, &cp_len);
    if (cst == TATTLER_OK) {
        cp[cp_len] = 0; /* the bytes are JSON text, not NUL-terminated */
    }
    check(cst == TATTLER_OK && cp_len > 0 && strstr((const char *)cp, "\"pods\"") != NULL,
          "checkpoint works");
    /* Only the Synced this line announces can be queued (main may have taken it). */
    tattler_status st = tattler_next_entry(r, 0, &e);
    int took_synced = st == TATTLER_OK && tattler_entry_change(e) == TATTLER_CHANGE_SYNCED &&
                      strcmp(tattler_entry_resource(e), "configmaps") == 0;
    check((st == TATTLER_TIMEOUT && e == NULL) || took_synced,
          "next_entry with timeout 0 works (TIMEOUT, or the configmaps Synced)");
    tattler_entry_free(e);
    e = NULL;
    pthread_mutex_lock(&lock);
    stolen = took_synced;
    pthread_mutex_unlock(&lock);
    check(tattler_next_entry(r, 100, &e) == TATTLER_ERR_REENTRANT && e == NULL,
          "next_entry that would wait 100 ms is REENTRANT");
    check(tattler_next_entry(r, -1, &e) == TATTLER_ERR_REENTRANT && e == NULL,
          "next_entry that would wait forever is REENTRANT");
    err[0] = '\0';
    check(tattler_set_resources(r, "[\"pods\"]", false, &changed, err, sizeof err) ==
                  TATTLER_ERR_REENTRANT &&
              strstr(err, "log callback") != NULL && !changed,
          "set_resources is REENTRANT, with its own error text");
    check(tattler_set_log_callback(other_log, NULL) == TATTLER_ERR_REENTRANT,
          "set_log_callback is REENTRANT");
    check(tattler_set_log_level(TATTLER_LOG_INFO) == TATTLER_OK, "set_log_level works");
    check(tattler_set_log_level(9) == TATTLER_ERR_INVALID_ARG, "set_log_level checks its level");
    check(strcmp(tattler_status_str(TATTLER_ERR_REENTRANT),
                 "not allowed from inside the log callback") == 0,
          "status_str works");
    check(strlen(tattler_version()) > 0, "version works");

    /* A second reader, opened, used and closed (its threads joined) here. */
    char config[512];
    snprintf(config, sizeof config, "{\"server\":\"%s\",\"resources\":[\"nodes\"]}", server);
    tattler_reader *r2 = NULL;
    check(tattler_open_resume(config, cp, cp_len, &r2, err, sizeof err) == TATTLER_OK,
          "open_resume works");
    if (r2 != NULL) {
        check(tattler_stats_json(r2, buf, sizeof buf, NULL) == TATTLER_OK, "stats of the new reader");
        tattler_stop(r2);
        check(1, "stop works");
        check(tattler_close(r2) == TATTLER_OK, "close of another reader works");
    }
}

static void on_log(void *user, int level, const char *target, const char *msg) {
    (void)user, (void)level, (void)target;
    pthread_mutex_lock(&lock);
    plain_http_lines += strstr(msg, "talking plain http") != NULL;
    int mine = phase == ARMED && strstr(msg, "v1/configmaps: synced") != NULL;
    tattler_reader *r = reader;
    pthread_mutex_unlock(&lock);
    if (!mine) {
        return;
    }
    if (close_mode) {
        /* The reader whose thread this is: the panic (a thread joining itself). */
        check(tattler_close(r) == TATTLER_OK, "close of the logging thread's own reader works");
    } else {
        calls_from_the_callback(r);
    }
    pthread_mutex_lock(&lock);
    phase = DONE;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    if (!close_mode) {
        /* Last: main, waiting in next_entry(r, -1) (or about to), sees one TIMEOUT. */
        tattler_wake(r);
    }
}

/* Reads until the callback is done and the configmaps Synced was seen (by
 * main or by the callback); counts TIMEOUTs (wakes) in *woken. */
static int until_done(tattler_reader *r, int *woken) {
    int synced = 0;
    for (;;) {
        tattler_entry *e = NULL;
        tattler_status st = tattler_next_entry(r, -1, &e);
        if (st == TATTLER_TIMEOUT) {
            ++*woken;
        } else if (st == TATTLER_OK) {
            synced |= tattler_entry_change(e) == TATTLER_CHANGE_SYNCED &&
                      strcmp(tattler_entry_resource(e), "configmaps") == 0;
            tattler_entry_free(e);
        } else {
            fprintf(stderr, "reentrant: next entry: %s\n", tattler_status_str(st));
            return -1;
        }
        pthread_mutex_lock(&lock);
        int done = phase == DONE && (synced || stolen);
        pthread_mutex_unlock(&lock);
        if (done) {
            return 0;
        }
    }
}

/* Reads until the Synced entry of `resource`; counts TIMEOUTs (wakes) in *woken. */
static int until_synced(tattler_reader *r, const char *resource, int *woken) {
    for (;;) {
        tattler_entry *e = NULL;
        tattler_status st = tattler_next_entry(r, -1, &e);
        if (st == TATTLER_TIMEOUT) {
            ++*woken;
            continue;
        }
        if (st != TATTLER_OK) {
            fprintf(stderr, "reentrant: next entry: %s\n", tattler_status_str(st));
            return -1;
        }
        int done = tattler_entry_change(e) == TATTLER_CHANGE_SYNCED &&
                   strcmp(tattler_entry_resource(e), resource) == 0;
        tattler_entry_free(e);
        if (done) {
            return 0;
        }
    }
}

/* Waits (at most 60 s) until the callback has done its part. */
static int wait_done(void) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    pthread_mutex_lock(&lock);
    int rc = 0;
    while (phase != DONE && rc == 0) {
        rc = pthread_cond_timedwait(&cond, &lock, &deadline);
    }
    int done = phase == DONE;
    pthread_mutex_unlock(&lock);
    return done;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "calls") != 0 && strcmp(argv[1], "close") != 0)) {
        fprintf(stderr, "usage: reentrant calls|close SERVER\n");
        return 2;
    }
    close_mode = strcmp(argv[1], "close") == 0;
    server = argv[2];
    check(!tattler_in_log_callback(), "tattler_in_log_callback is false outside");
    check(tattler_set_log_callback(on_log, NULL) == TATTLER_OK, "install the callback");

    char config[512], err[256];
    snprintf(config, sizeof config, "{\"server\":\"%s\",\"resources\":[\"pods\"]}", server);
    tattler_reader *r = NULL;
    if (tattler_open(config, &r, err, sizeof err) != TATTLER_OK) {
        fprintf(stderr, "reentrant: open: %s\n", err);
        return 1;
    }
    int woken = 0;
    if (until_synced(r, "pods", &woken) != 0) {
        return 1;
    }
    pthread_mutex_lock(&lock);
    reader = r;
    phase = ARMED;
    pthread_mutex_unlock(&lock);
    /* Starts the configmaps stream, whose "synced" line runs the checks. */
    bool changed = false;
    check(tattler_set_resources(r, "[\"pods\",\"configmaps\"]", false, &changed, err, sizeof err) ==
                  TATTLER_OK && changed,
          "set_resources outside the callback");

    if (close_mode) {
        /* The callback closes r: from here on main must not touch it. */
        check(wait_done(), "the callback ran");
    } else {
        /* The callback wakes main last: main's waits end. */
        check(until_done(r, &woken) == 0, "configmaps synced, the callback ran");
        if (woken == 0) {
            /* Main saw the callback done before its wake: the wake is kept,
             * and ends the next wait at once (well before its 10 s). */
            struct timespec t0, t1;
            tattler_entry *e = NULL;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            tattler_status st = tattler_next_entry(r, 10000, &e);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            woken += st == TATTLER_TIMEOUT && t1.tv_sec - t0.tv_sec < 5;
        }
        check(woken == 1, "the wake from the callback ended exactly one wait");
        check(tattler_close(r) == TATTLER_OK, "close outside the callback");

        /* One more open on this thread logs "talking plain http": the
         * callback is still installed (the reentrant replacement was
         * refused), and the nested open's line was dropped. */
        tattler_reader *r3 = NULL;
        check(tattler_open(config, &r3, err, sizeof err) == TATTLER_OK, "open after");
        check(tattler_close(r3) == TATTLER_OK, "close after");
        pthread_mutex_lock(&lock);
        int lines = plain_http_lines;
        pthread_mutex_unlock(&lock);
        check(lines == 2, "plain-http lines: main's two opens, none from the open in the callback");
    }
    check(tattler_set_log_callback(NULL, NULL) == TATTLER_OK, "remove the callback outside");

    pthread_mutex_lock(&lock);
    int failed = failures;
    pthread_mutex_unlock(&lock);
    if (failed != 0) {
        printf("reentrant: %d FAILED\n", failed);
        return 1;
    }
    printf("reentrant: ok\n");
    return 0;
}
