/*
 * misuse.c - every misuse of a handle a buggy host can commit, each of which
 * must be refused (TATTLER_ERR_INVALID_HANDLE, a getter's "no entry" value,
 * a free that frees nothing) rather than be undefined behaviour: a second
 * tattler_close, calls after close (a waiting tattler_next_entry among
 * them: refused at once, not waited out), calls after close from another
 * thread, a second tattler_entry_free (also after a newer entry came),
 * getters on a freed entry, foreign pointers (stack memory, freed heap
 * memory, the other type's handle). ffi/tests/c_programs.rs runs it under
 * AddressSanitizer + UBSan, which would report any free or read of memory
 * that is not a live handle's, and under valgrind.
 *
 * usage: misuse SERVER      (a fake apiserver with at least two pods)
 *
 * Prints "ok: CHECK" per check, "FAILED: CHECK" for one that fails, and
 * "misuse: ok" at the end when none did.
 */
/* POSIX threads and clocks under -std=c11, which alone hides them. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tattler.h"

static int failures;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) {
        failures++;
    }
}

/* Warnings the library logged about handles it refused. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int refused_logged;

static void on_log(void *user, int level, const char *target, const char *msg) {
    (void)user;
    (void)target;
    if (level == TATTLER_LOG_WARN && (strstr(msg, "not a live entry") || strstr(msg, "not an open reader"))) {
        pthread_mutex_lock(&log_lock);
        refused_logged++;
        pthread_mutex_unlock(&log_lock);
    }
}

static int logged(void) {
    pthread_mutex_lock(&log_lock);
    int n = refused_logged;
    pthread_mutex_unlock(&log_lock);
    return n;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static tattler_reader *open_pods(const char *server) {
    char config[512], err[256];
    snprintf(config, sizeof config, "{\"server\":\"%s\",\"resources\":[\"pods\"]}", server);
    tattler_reader *r = NULL;
    if (tattler_open(config, &r, err, sizeof err) != TATTLER_OK) {
        printf("FAILED: open: %s\n", err);
        exit(1);
    }
    return r;
}

static tattler_entry *next(tattler_reader *r) {
    tattler_entry *e = NULL;
    tattler_status st = tattler_next_entry(r, 10000, &e);
    if (st != TATTLER_OK) {
        printf("FAILED: next entry: %s\n", tattler_status_str((int)st));
        exit(1);
    }
    return e;
}

/* Whether every call on r that returns a status refuses it, leaving every
 * out-parameter and buffer alone; tattler_stop and tattler_wake must do
 * nothing. */
static int reader_refused(tattler_reader *r) {
    tattler_status want = TATTLER_ERR_INVALID_HANDLE;
    tattler_entry *sentinel = (tattler_entry *)(void *)&failures, *e = sentinel;
    char buf[64];
    memset(buf, 0x5a, sizeof buf);
    size_t needed = 7;
    bool changed = true;
    char err[128] = "";
    int ok = tattler_next_entry(r, 0, &e) == want;
    double t = now();
    ok = ok && tattler_next_entry(r, -1, &e) == want && now() - t < 2.0;
    ok = ok && tattler_stats_json(r, buf, sizeof buf, &needed) == want;
    ok = ok && tattler_metrics_text(r, buf, sizeof buf, &needed) == want;
    ok = ok && tattler_checkpoint(r, (uint8_t *)buf, sizeof buf, &needed) == want;
    ok = ok && tattler_set_resources(r, "[\"pods\"]", false, &changed, err, sizeof err) == want;
    ok = ok && strstr(err, "not an open reader") != NULL;
    ok = ok && e == sentinel && needed == 7 && changed && buf[0] == 0x5a && buf[63] == 0x5a;
    tattler_stop(r);
    tattler_wake(r);
    return ok;
}

/* Whether every getter gives its "no entry" value for e. */
static int no_entry(tattler_entry *e) {
    const char *strings[] = {
        tattler_entry_group(e), tattler_entry_version(e), tattler_entry_resource(e),
        tattler_entry_kind(e), tattler_entry_namespace(e), tattler_entry_name(e),
        tattler_entry_uid(e), tattler_entry_identity(e), tattler_entry_holder(e), tattler_entry_resource_version_str(e),
        tattler_entry_error_reason(e), tattler_entry_error_message(e),
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (strings[i] == NULL || strings[i][0] != '\0') {
            return 0;
        }
    }
    size_t len = 99;
    uint64_t term = 99;
    return tattler_entry_change(e) == TATTLER_CHANGE_NONE && tattler_entry_resource_version(e) == 0 &&
           !tattler_entry_inferred(e) && !tattler_entry_error_ended(e) && tattler_entry_error_code(e) == 0 &&
           tattler_entry_object(e, &len) == NULL && len == 0 && !tattler_entry_term(e, &term) && term == 99 &&
           !tattler_entry_term(e, NULL);
}

/* A thread calling on a reader another thread closes, until refused. */
struct caller {
    tattler_reader *r;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    int bad; /* statuses other than TIMEOUT, CLOSED, OK, INVALID_HANDLE */
    tattler_status last;
};

static void *call_until_refused(void *arg) {
    struct caller *c = arg;
    double deadline = now() + 20.0;
    for (;;) {
        tattler_entry *e = NULL;
        tattler_status st = tattler_next_entry(c->r, 5, &e);
        tattler_entry_free(e);
        size_t needed = 0;
        tattler_status stats = tattler_stats_json(c->r, NULL, 0, &needed);
        pthread_mutex_lock(&c->lock);
        c->calls++;
        c->last = st;
        if ((st != TATTLER_TIMEOUT && st != TATTLER_CLOSED && st != TATTLER_OK &&
             st != TATTLER_ERR_INVALID_HANDLE) ||
            (stats != TATTLER_ERR_BUFFER_TOO_SMALL && stats != TATTLER_ERR_INVALID_HANDLE)) {
            c->bad++;
        }
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
        if (st == TATTLER_ERR_INVALID_HANDLE || now() > deadline) {
            return NULL;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: misuse SERVER\n");
        return 2;
    }
    const char *server = argv[1];
    check(tattler_set_log_callback(on_log, NULL) == TATTLER_OK, "install the log callback");
    tattler_reader *r = open_pods(server);

    /* Entries: a second free frees nothing, getters on a freed one see none. */
    tattler_entry *first = next(r), *second = next(r);
    check(tattler_entry_change(first) == TATTLER_CHANGE_ADD && tattler_entry_name(first)[0] != '\0',
          "a live entry reads");
    int warnings = logged();
    tattler_entry_free(first);
    tattler_entry_free(first);
    check(logged() == warnings + 1, "a second tattler_entry_free frees nothing and logs a warning");
    check(no_entry(first), "getters on a freed entry give their no-entry values");
    check(tattler_entry_change(second) == TATTLER_CHANGE_ADD && tattler_entry_name(second)[0] != '\0',
          "another entry is untouched by the second free");
    /* The allocator may put the newest entry where the freed one was: its
     * handle is still not the freed one's. */
    tattler_entry *newest = next(r);
    check(newest != first, "a freed entry's handle is not handed out again at once");
    tattler_entry_free(first);
    check(tattler_entry_change(newest) != TATTLER_CHANGE_NONE, "a late second free leaves the newest entry alone");
    tattler_entry_free(newest);
    tattler_entry_free(newest);
    tattler_entry_free(NULL);

    /* Foreign pointers: stack memory, freed heap memory (kept as a number:
     * a freed pointer's value is indeterminate in C), the other type's. */
    char junk[64];
    memset(junk, 0xa5, sizeof junk);
    char *heap = malloc(64);
    /* volatile: gcc follows the number otherwise, and -Wuse-after-free says so. */
    volatile uintptr_t freed = (uintptr_t)heap;
    free(heap);
    void *foreign[] = {junk, (void *)freed, (void *)(uintptr_t)8, second, r};
    int readers_refused = 1, entries_refused = 1;
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        if (foreign[i] != (void *)r) {
            readers_refused = readers_refused && reader_refused(foreign[i]) &&
                              tattler_close(foreign[i]) == TATTLER_ERR_INVALID_HANDLE;
        }
        if (foreign[i] != (void *)second) {
            entries_refused = entries_refused && no_entry(foreign[i]);
            tattler_entry_free(foreign[i]);
        }
    }
    check(readers_refused, "every reader call refuses foreign pointers and an entry");
    check(entries_refused, "every getter refuses foreign pointers and a reader");
    check(junk[0] == (char)0xa5 && junk[63] == (char)0xa5, "foreign memory is not written");
    check(tattler_entry_name(second)[0] != '\0', "the entry works on after the foreign frees");
    tattler_entry_free(second);

    /* Close: a second close and every later call are refused at once. */
    check(tattler_close(r) == TATTLER_OK, "close");
    check(tattler_close(r) == TATTLER_ERR_INVALID_HANDLE, "a second close is refused");
    check(reader_refused(r), "every call after close is refused, a waiting next at once");
    check(tattler_close(NULL) == TATTLER_OK, "close(NULL) is still fine");

    /* Calls on another thread while this one closes: memory-safe, then refused. */
    tattler_reader *r2 = open_pods(server);
    struct caller c = {.r = r2, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    if (pthread_create(&t, NULL, call_until_refused, &c) != 0) {
        printf("FAILED: pthread_create\n");
        return 1;
    }
    pthread_mutex_lock(&c.lock);
    while (c.calls < 3) {
        pthread_cond_wait(&c.cond, &c.lock);
    }
    pthread_mutex_unlock(&c.lock);
    check(tattler_close(r2) == TATTLER_OK, "close while another thread calls");
    pthread_join(t, NULL);
    check(c.bad == 0 && c.last == TATTLER_ERR_INVALID_HANDLE,
          "the other thread's calls return the reader's statuses, then INVALID_HANDLE");
    check(tattler_close(r2) == TATTLER_ERR_INVALID_HANDLE, "and its second close is refused");

    check(tattler_set_log_callback(NULL, NULL) == TATTLER_OK, "remove the log callback");
    if (failures != 0) {
        printf("misuse: %d FAILED\n", failures);
        return 1;
    }
    printf("misuse: ok\n");
    return 0;
}
