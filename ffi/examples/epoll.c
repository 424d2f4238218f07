/*
 * epoll.c - an agent's event loop: tattler's readiness fd and a signalfd in
 * one epoll set, no thread blocked in tattler_next_entry. Prints what
 * watch.c prints, one line per entry:
 *
 *     Add default/web-1 1234
 *     Synced v1/pods 1240
 *
 * usage: epoll [--until-synced] [--checkpoint FILE] SERVER RESOURCE...
 *
 *   --until-synced     once every resource has printed Synced, call
 *                      tattler_stop and go on until the fd reports the end:
 *                      prints "Closed"
 *   --checkpoint FILE  resume from FILE when it exists; on the way out
 *                      (stopped and drained) write the checkpoint there
 *
 * SIGINT and SIGTERM stop the reader the documented way: they are blocked
 * and read from a signalfd in this loop, a normal thread, which then calls
 * tattler_stop (no tattler call is async-signal-safe); the loop drains,
 * writes the checkpoint, closes and exits 0. They are blocked only after
 * the open, on purpose: tattler's threads block every asynchronous signal
 * themselves, so a SIGTERM never lands on one of them whatever the order
 * (ffi/tests/c_programs.rs sends a real one). The configuration is built
 * with tattler_config_*, without JSON.
 *
 * Build (Linux): cc -std=c11 -Wall -Wextra -Werror -Iinclude ffi/examples/epoll.c \
 *                   -Ltarget/debug -l:libtattler.a -lpthread -ldl -lm -lrt -o epoll
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "tattler.h"

/* The whole file, or NULL when there is none (*len 0). */
static uint8_t *read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    uint8_t *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        data = n > 0 ? malloc((size_t)n) : NULL;
        if (data != NULL && (fseek(f, 0, SEEK_SET) != 0 || fread(data, 1, (size_t)n, f) != (size_t)n)) {
            free(data);
            data = NULL;
        }
        *len = data != NULL ? (size_t)n : 0;
    }
    fclose(f);
    return data;
}

/* Writes the reader's checkpoint to path (through a temporary file and a
 * rename, so a crash leaves the old one whole); 0 on success. */
static int save_checkpoint(tattler_reader *r, const char *path) {
    size_t needed = 0;
    if (tattler_checkpoint(r, NULL, 0, &needed) != TATTLER_ERR_BUFFER_TOO_SMALL) {
        return -1;
    }
    uint8_t *buf = malloc(needed);
    char tmp[4096];
    int ok = buf != NULL && tattler_checkpoint(r, buf, needed, &needed) == TATTLER_OK &&
             snprintf(tmp, sizeof tmp, "%s.tmp", path) < (int)sizeof tmp;
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    ok = f != NULL && fwrite(buf, 1, needed, f) == needed;
    ok = f != NULL && fclose(f) == 0 && ok && rename(tmp, path) == 0;
    free(buf);
    if (ok) {
        fprintf(stderr, "checkpoint: %zu bytes to %s\n", needed, path);
    }
    return ok ? 0 : -1;
}

static void print_entry(tattler_entry *e) {
    tattler_change c = tattler_entry_change(e);
    const char *name = tattler_change_str(c);
    if (c == TATTLER_CHANGE_SYNCED) {
        const char *group = tattler_entry_group(e);
        printf("Synced %s%s%s/%s %s\n", group, *group ? "/" : "", tattler_entry_version(e),
               tattler_entry_resource(e), tattler_entry_resource_version_str(e));
    } else if (c == TATTLER_CHANGE_ERROR || c == TATTLER_CHANGE_STALE) {
        printf("%s %s %u %s: %s\n", name, tattler_entry_resource(e), (unsigned)tattler_entry_error_code(e),
               tattler_entry_error_reason(e), tattler_entry_error_message(e));
    } else {
        const char *ns = tattler_entry_namespace(e);
        printf("%s %s%s%s %s\n", name, ns, *ns ? "/" : "", tattler_entry_name(e), tattler_entry_resource_version_str(e));
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    int argi = 1, until_synced = 0;
    const char *checkpoint = NULL;
    for (; argi < argc && strncmp(argv[argi], "--", 2) == 0; argi++) {
        if (strcmp(argv[argi], "--until-synced") == 0) {
            until_synced = 1;
        } else if (strcmp(argv[argi], "--checkpoint") == 0 && argi + 1 < argc) {
            checkpoint = argv[++argi];
        } else {
            break;
        }
    }
    if (argc - argi < 2) {
        fprintf(stderr, "usage: epoll [--until-synced] [--checkpoint FILE] SERVER RESOURCE...\n");
        return 2;
    }

    char err[1024];
    size_t needed = 0;
    tattler_config *cfg = tattler_config_new();
    tattler_status st = tattler_config_set_string(cfg, "server", argv[argi], err, sizeof err, &needed);
    for (int i = argi + 1; st == TATTLER_OK && i < argc; i++) {
        st = tattler_config_add_resource(cfg, argv[i], err, sizeof err, &needed);
    }
    tattler_reader *r = NULL;
    size_t cp_len = 0;
    uint8_t *cp = checkpoint != NULL ? read_file(checkpoint, &cp_len) : NULL;
    if (st == TATTLER_OK) {
        st = tattler_open_config(cfg, cp, cp_len, &r, err, sizeof err, &needed);
    }
    free(cp);
    tattler_config_free(cfg);
    if (st != TATTLER_OK) {
        fprintf(stderr, "open: %s%s\n", err, needed > sizeof err ? " [cut]" : "");
        return 3;
    }

    /* Signals arrive as reads on a signalfd, in this thread. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
        perror("sigprocmask");
        return 1;
    }
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    int tfd = tattler_fd(r);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (sfd < 0 || tfd < 0 || ep < 0) {
        fprintf(stderr, "setup failed: signalfd %d, tattler_fd %d, epoll %d\n", sfd, tfd, ep);
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = tfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    ev.data.fd = sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

    int resources = argc - argi - 1, synced = 0, failed = 0, closed = 0, stopped = 0;
    while (!closed) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, 30000);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fprintf(stderr, "epoll_wait: %s\n", n == 0 ? "nothing for 30 s" : strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == sfd) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    fprintf(stderr, "signal %u: stopping\n", si.ssi_signo);
                    tattler_stop(r);
                }
                continue;
            }
            /* Readable: take entries until TIMEOUT, which clears the fd. */
            for (;;) {
                tattler_entry *e = NULL;
                st = tattler_next_entry(r, 0, &e);
                if (st == TATTLER_TIMEOUT) {
                    break;
                }
                if (st == TATTLER_CLOSED) {
                    closed = 1;
                    break;
                }
                if (st != TATTLER_OK) {
                    fprintf(stderr, "next: %s\n", tattler_status_str(st));
                    return 1;
                }
                print_entry(e);
                synced += tattler_entry_change(e) == TATTLER_CHANGE_SYNCED;
                failed |= tattler_entry_change(e) == TATTLER_CHANGE_ERROR;
                tattler_entry_free(e);
            }
            if (until_synced && !stopped && (synced >= resources || failed)) {
                stopped = 1;
                tattler_stop(r); /* the fd turns readable; the loop sees CLOSED */
            }
        }
    }
    printf("Closed\n");
    fflush(stdout);
    /* Stopped and drained: the checkpoint holds exactly what was printed. */
    int saved = checkpoint == NULL || save_checkpoint(r, checkpoint) == 0;
    epoll_ctl(ep, EPOLL_CTL_DEL, tfd, NULL);
    close(ep);
    close(sfd);
    st = tattler_close(r);
    return st == TATTLER_OK && saved && !failed ? 0 : 1;
}
