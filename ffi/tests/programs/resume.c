/*
 * resume.c - an agent that keeps its place across restarts: tattler_checkpoint
 * on the way out, tattler_open_config with it on the way in, tattler_metrics_text for
 * its /metrics. ffi/tests/c_programs.rs runs it (with -Werror, AddressSanitizer
 * + UBSan, valgrind) against the fake apiserver, changing the cluster between
 * two runs.
 *
 * usage: resume SERVER FILE COUNT
 *
 *   Reads the checkpoint in FILE when it exists, opens with it (or without),
 *   prints COUNT entries, one line each:
 *
 *     Add shop/web-1 12            (namespace/name resourceVersion)
 *     Delete shop/db-0 17 inferred
 *     Synced v1/pods 17
 *
 *   then one "metrics: objects N synced S" line from tattler_metrics_text,
 *   then stops, drains (printing what it takes, if anything), writes the
 *   checkpoint to FILE and prints "saved N bytes". On a refused checkpoint
 *   it prints "open: STATUS: MESSAGE" and exits 3; other failures exit 1.
 */
/* POSIX threads and clocks under -std=c11, which alone hides them. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tattler.h"

/* The whole file, or NULL when there is none (*len 0); exits on a read error. */
static uint8_t *read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t *data = malloc(cap);
    for (;;) {
        if (data == NULL) {
            fprintf(stderr, "resume: out of memory\n");
            exit(1);
        }
        n += fread(data + n, 1, cap - n, f);
        if (n < cap) {
            break;
        }
        cap *= 2;
        uint8_t *more = realloc(data, cap);
        if (more == NULL) {
            free(data);
        }
        data = more;
    }
    if (ferror(f)) {
        fprintf(stderr, "resume: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = n;
    return data;
}

static void print_entry(tattler_entry *e) {
    if (tattler_entry_change(e) == TATTLER_CHANGE_SYNCED) {
        printf("Synced %s/%s %s\n", tattler_entry_version(e), tattler_entry_resource(e),
               tattler_entry_resource_version_str(e));
        return;
    }
    static const char *const names[] = {"None", "Add", "Update", "Delete", "Snapshot", "Synced", "Error"};
    int c = (int)tattler_entry_change(e);
    printf("%s %s/%s %s%s\n", c >= 0 && c <= 6 ? names[c] : "?", tattler_entry_namespace(e),
           tattler_entry_name(e), tattler_entry_resource_version_str(e),
           tattler_entry_inferred(e) ? " inferred" : "");
}

/* The value of one sample in the metrics text, or -1. */
static long sample(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += n) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') {
            return strtol(p + n + 1, NULL, 10);
        }
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: resume SERVER FILE COUNT\n");
        return 2;
    }
    const char *file = argv[2];
    long count = strtol(argv[3], NULL, 10);
    char err[512] = "";
    tattler_config *cfg = tattler_config_new();
    tattler_status st = tattler_config_set_server(cfg, argv[1]);
    if (st == TATTLER_OK) {
        st = tattler_config_add_resource(cfg, "pods", err, sizeof err, NULL);
    }

    size_t cp_len = 0;
    uint8_t *cp = read_file(file, &cp_len);
    tattler_reader *r = NULL;
    if (st == TATTLER_OK) {
        st = tattler_open_config(cfg, cp, cp_len, &r, err, sizeof err, NULL);
    }
    free(cp);
    tattler_config_free(cfg);
    if (st != TATTLER_OK) {
        printf("open: %s: %s\n", tattler_status_str(st), err);
        return st == TATTLER_ERR_INVALID_CHECKPOINT ? 3 : 1;
    }

    for (long i = 0; i < count; i++) {
        tattler_entry *e = NULL;
        st = tattler_next_entry(r, 30000, &e);
        if (st != TATTLER_OK) {
            fprintf(stderr, "resume: next entry: %s\n", tattler_status_str(st));
            tattler_close(r);
            return 1;
        }
        print_entry(e);
        tattler_entry_free(e);
    }

    /* The agent's /metrics, with a buffer that may be too small at first. */
    size_t needed = 0, size = 64;
    char *text = NULL;
    do {
        free(text);
        size = needed > size ? needed : size;
        text = malloc(size);
        if (text == NULL) {
            return 1;
        }
        st = tattler_metrics_text(r, text, size, &needed);
    } while (st == TATTLER_ERR_BUFFER_TOO_SMALL);
    if (st != TATTLER_OK) {
        fprintf(stderr, "resume: metrics: %s\n", tattler_status_str(st));
        return 1;
    }
    printf("metrics: objects %ld synced %ld\n", sample(text, "tattler_objects{resource=\"v1/pods\"}"),
           sample(text, "tattler_synced{resource=\"v1/pods\"}"));
    free(text);

    /* Shutting down: stop, take what is left, then the checkpoint is exact. */
    tattler_stop(r);
    for (;;) {
        tattler_entry *e = NULL;
        st = tattler_next_entry(r, 30000, &e);
        if (st != TATTLER_OK) {
            break;
        }
        print_entry(e);
        tattler_entry_free(e);
    }
    if (st != TATTLER_CLOSED) {
        fprintf(stderr, "resume: drain: %s\n", tattler_status_str(st));
        return 1;
    }
    st = tattler_checkpoint(r, NULL, 0, &needed);
    uint8_t *bytes = st == TATTLER_ERR_BUFFER_TOO_SMALL ? malloc(needed) : NULL;
    if (bytes == NULL || tattler_checkpoint(r, bytes, needed, &needed) != TATTLER_OK) {
        fprintf(stderr, "resume: checkpoint: %s\n", tattler_status_str(st));
        return 1;
    }
    FILE *f = fopen(file, "wb");
    if (f == NULL || fwrite(bytes, 1, needed, f) != needed || fclose(f) != 0) {
        fprintf(stderr, "resume: cannot write %s\n", file);
        return 1;
    }
    free(bytes);
    printf("saved %zu bytes\n", needed);
    return tattler_close(r) == TATTLER_OK ? 0 : 1;
}
