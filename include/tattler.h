/*
 * tattler.h - the C API of tattler: stream the full state of Kubernetes
 * objects, then every change, from a kube-apiserver.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * LANGUAGE
 *
 *   C99 or later, or C++11 or later (checked below). Compiles cleanly with
 *   -Wall -Wextra -Wpedantic -Werror as C99, C11, C++11 and C++17.
 *   tattler.hpp is a header-only C++17 wrapper over this header.
 *
 * OPENING A READER
 *
 *   One way in: make a tattler_config, set its keys, open it.
 *
 *     tattler_config *cfg = tattler_config_new();
 *     tattler_config_set_server(cfg, "https://10.0.0.1:6443");
 *     tattler_config_set_ca_file(cfg, "/etc/k8s/ca.crt");
 *     tattler_config_set_token_file(cfg, "/var/run/token");
 *     tattler_config_add_resource(cfg, "pods", NULL, 0, NULL);
 *     tattler_reader *r;
 *     char err[256];
 *     if (tattler_open_config(cfg, NULL, 0, &r, err, sizeof err, NULL) != TATTLER_OK)
 *         fprintf(stderr, "%s\n", err);
 *     tattler_config_free(cfg);       (the reader does not need it)
 *
 *   Every key has a typed setter, tattler_config_set_<key>, so the
 *   compiler checks its name and its value's type. Bindings that hold keys
 *   as strings use tattler_config_set_string/_int/_bool, or pass a whole
 *   JSON document to tattler_config_set_json; a mistyped key is refused when
 *   set, naming the key it most likely meant ("did you mean `server`?").
 *   tattler_config_keys() lists the keys with their types and defaults.
 *   tattler_open_config makes the reader, with or without a checkpoint.
 *   The calls of the LEGACY section at the end (tattler_open,
 *   tattler_open_resume, tattler_open_ex, tattler_set_resources) are one
 *   line each over these; define TATTLER_WARN_LEGACY to find their uses.
 *
 * THREADING RULES
 *
 *   - tattler_stop(r) and tattler_wake(r) may be called from any thread at
 *     any time, concurrently with any other call on r (after
 *     tattler_close(r) they do nothing). tattler_stop ends the reader: a thread blocked in
 *     tattler_next_entry(r) returns TATTLER_CLOSED once the queued entries
 *     are drained. tattler_wake ends one wait only: a blocked
 *     tattler_next_entry(r) returns TATTLER_TIMEOUT and the reader runs on
 *     (how a Go context or a C++ stop_token cancels one wait).
 *   - tattler_next_entry, tattler_set_resources_ex, tattler_stats_json,
 *     tattler_metrics_text, tattler_checkpoint and tattler_fd on one reader
 *     may run concurrently from several threads.
 *   - The tattler_config_* calls on one configuration take turns (a lock);
 *     free it once, when no other call on it runs. A reader opened from it
 *     does not need it.
 *   - tattler_close(r) is meant to be called once, when no other thread is
 *     inside a call on r and none will start one: call tattler_stop from the
 *     other threads first, let their calls return, then close. Breaking
 *     this rule is refused, not undefined behaviour (see HANDLES): a close
 *     racing a call already inside the library keeps r alive until that
 *     call returns; a call that starts after tattler_close, and a second
 *     close, return TATTLER_ERR_INVALID_HANDLE.
 *   - Entries are independent of their reader and of each other: an entry may
 *     be read from any thread, and freed (once) after its reader is closed.
 *   - The log callback is process-global and is called from tattler's own
 *     threads (and from the thread of a call that logs). From inside it,
 *     every function works except tattler_set_log_callback,
 *     tattler_set_resources_ex and a waiting tattler_next_entry, which return
 *     TATTLER_ERR_REENTRANT and do nothing; tattler_close works there, also
 *     on the reader whose thread is logging. Lines logged by calls the
 *     callback makes are dropped (the callback is never called inside
 *     itself). tattler_in_log_callback() tells a wrapper where it is.
 *
 * HANDLES
 *
 *   tattler_reader, tattler_entry and tattler_config pointers are handles: every call looks
 *   its handle up in the library's registry of live ones before anything
 *   else and never follows a pointer that is not there. A closed reader, a
 *   freed entry, a pointer of the other type, or any pointer tattler did not
 *   hand out gets TATTLER_ERR_INVALID_HANDLE from calls that return a status;
 *   entry getters return their "no entry" value ("", 0, false, NULL), and
 *   tattler_stop, tattler_wake and tattler_entry_free do nothing but log a
 *   warning. A handle's address is not handed out again until 64 readers or
 *   4096 entries more have been closed or freed, so a late second free does
 *   not hit a newer entry. What a getter lent out (strings, bytes) is still
 *   the caller's to stop using when the entry is freed: tattler cannot check
 *   a pointer the caller follows itself.
 *
 * ERRORS
 *
 *   Error text belongs to the call that failed, never to a reader or a
 *   thread: tattler_open_config, tattler_set_resources_ex and the
 *   tattler_config_* calls with an err_buf write theirs into the caller's
 *   buffer, cut to fit, and into *err_needed (when not NULL) the whole
 *   text's size with its NUL, more than err_len when the text was cut. The
 *   other calls fail only in ways their status says completely
 *   (tattler_status_str), and a caught panic's text is logged.
 *
 * OWNERSHIP
 *
 *   Every function says who owns what. In short: tattler_config_new gives a
 *   configuration the caller frees with tattler_config_free;
 *   tattler_open_config gives a reader the caller frees with tattler_close;
 *   tattler_next_entry gives an entry the caller frees with
 *   tattler_entry_free; strings and bytes returned by the tattler_entry_*
 *   getters are borrowed from the entry, valid until it is freed, and never
 *   NULL (strings) unless documented. The free functions accept NULL.
 *
 * STATUS
 *
 *   Fallible functions return a tattler_status. 0 is TATTLER_OK; 1
 *   (TATTLER_TIMEOUT) and 2 (TATTLER_CLOSED) are not failures; failures are
 *   100 and above. Out-parameters are written only on success. No function
 *   lets a Rust panic unwind into the caller: it becomes TATTLER_ERR_PANIC.
 *
 * EVENT LOOPS
 *
 *   tattler_fd(r) (Linux) is an eventfd the reader owns, readable while at
 *   least one entry is queued and from the stop on: add it to poll/epoll,
 *   and when it is readable call tattler_next_entry(r, 0, &e) until
 *   TATTLER_TIMEOUT. Never read or close it: a TATTLER_TIMEOUT, or taking
 *   the last queued entry, clears it and re-arms it if an entry arrived
 *   meanwhile, so no wake-up is lost; it may be readable with nothing
 *   queued (the next call says TATTLER_TIMEOUT and clears it).
 *   ffi/examples/epoll.c is such a loop.
 *
 * SIGNALS AND FORK
 *
 *   Every thread tattler starts blocks every asynchronous signal (SIGTERM,
 *   SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, real-time signals, ...)
 *   before it runs, so a process-directed signal always goes to one of the
 *   host's threads, whatever the order of the host's sigprocmask (or
 *   pthread_sigmask) and its first tattler_open_config: block SIGTERM for a
 *   signalfd or sigwait before or after opening, either works. The
 *   synchronous ones (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS)
 *   stay deliverable on tattler's threads. Processes tattler starts (an exec
 *   credential plugin) begin with an empty mask.
 *
 *   No tattler function is async-signal-safe, tattler_stop and tattler_wake
 *   included: they take the handle registry's lock and the reader's, and
 *   may log (allocating); called from a signal handler that interrupted a
 *   thread holding one of those locks, they deadlock. To stop on SIGTERM,
 *   let the handler write a byte to a self-pipe (write(2) is
 *   async-signal-safe) or use sigwait/signalfd in a thread of its own, and
 *   call tattler_stop from that normal thread: then drain, checkpoint and
 *   close (ffi/examples/epoll.c).
 *
 *   fork(): only the forking thread survives in the child, so tattler's
 *   stream threads do not, and a lock one of them held stays locked. A
 *   child must not use (nor close) a reader or an entry the parent opened;
 *   it may exec, or open readers of its own only if the parent had none
 *   open when it forked (prefer forking before the first tattler_open_config).
 *   The parent's readers are unaffected.
 *
 * VERSIONS
 *
 *   TATTLER_VERSION_MAJOR, _MINOR, _PATCH and _NUMBER are this header's;
 *   tattler_version() and tattler_version_number() are the linked
 *   library's. Before 1.0 a new minor
 *   version may change the ABI, so the shared library's SONAME is
 *   libtattler.so.0.MINOR.
 *
 * LINKING
 *
 *   `make install PREFIX=DIR` (in the tattler repository) installs the shared
 *   library, libtattler.a, this header, tattler.hpp, lib/pkgconfig/tattler.pc
 *   and a CMake package:
 *     cc app.c $(pkg-config --cflags --libs tattler)            shared
 *     cc app.c $(pkg-config --cflags --libs --static tattler)   static: install
 *         the archive alone (make install LIBRARY=static), or add -static
 *     find_package(tattler) and target_link_libraries(app tattler::tattler),
 *         with TATTLER_STATIC=ON for the archive
 *   The archive needs -lpthread -ldl -lm -lrt (its Libs.private) and defines
 *   only tattler_* globally, so it links next to other Rust static libraries.
 */

#ifndef TATTLER_H
#define TATTLER_H

/* Generated by cbindgen from ffi/src (see ffi/gen-header.sh). Do not edit by hand. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__cplusplus)
#  if __cplusplus < 201103L && !defined(_MSC_VER)
#    error "tattler.h needs C++11 or later"
#  endif
#elif !defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L
#  error "tattler.h needs C99 or later"
#endif

/* The LEGACY calls at the end of this header are kept for programs that
 * link them; each is one line over a documented call. Define
 * TATTLER_WARN_LEGACY before including this header to have the compiler
 * point at every use (GCC, Clang). */
#if defined(TATTLER_WARN_LEGACY) && (defined(__GNUC__) || defined(__clang__))
#  define TATTLER_LEGACY(note) __attribute__((deprecated(note)))
#else
#  define TATTLER_LEGACY(note)
#endif

/**
 * The major version of this header (tattler's, from Cargo.toml).
 * `tattler_version()` is the library's at run time.
 */
#define TATTLER_VERSION_MAJOR 0

/**
 * The minor version of this header.
 */
#define TATTLER_VERSION_MINOR 1

/**
 * The patch version of this header.
 */
#define TATTLER_VERSION_PATCH 0

/**
 * The version of this header as one number, MAJOR * 10000 + MINOR * 100 +
 * PATCH (0.1.0 is 100), for `#if TATTLER_VERSION_NUMBER >= ...`.
 */
#define TATTLER_VERSION_NUMBER (((TATTLER_VERSION_MAJOR * 10000) + (TATTLER_VERSION_MINOR * 100)) + TATTLER_VERSION_PATCH)

/**
 * What a call did. The numbers are part of the ABI and never change; new
 * statuses get new numbers.
 *
 * `TATTLER_OK`, `TATTLER_TIMEOUT` and `TATTLER_CLOSED` are not failures;
 * every failure is 100 or above, so `status >= 100` tests for one.
 */
typedef enum tattler_status {
    /**
     * Success.
     */
    TATTLER_OK = 0,
    /**
     * `tattler_next_entry`: no entry arrived within the timeout; the reader
     * runs on.
     */
    TATTLER_TIMEOUT = 1,
    /**
     * `tattler_next_entry`: the reader was stopped or closed and every entry
     * it had queued has been handed out; there will be no more.
     * `tattler_set_resources`: the reader is stopped.
     */
    TATTLER_CLOSED = 2,
    /**
     * A pointer argument that must not be NULL was NULL.
     */
    TATTLER_ERR_NULL_ARG = 100,
    /**
     * The configuration is unusable: not JSON, an unknown key, a value of the
     * wrong type, a bad server URL, nothing to watch. The error text names
     * the key.
     */
    TATTLER_ERR_INVALID_CONFIG = 101,
    /**
     * A string argument is not UTF-8.
     */
    TATTLER_ERR_INVALID_UTF8 = 102,
    /**
     * A file named in the configuration could not be read, or a thread could
     * not be started.
     */
    TATTLER_ERR_IO = 103,
    /**
     * tattler panicked inside the call (a bug: please report it). The panic
     * was caught; it never unwinds into the caller.
     */
    TATTLER_ERR_PANIC = 104,
    /**
     * The caller's buffer is too small; `*needed` tells the size required.
     */
    TATTLER_ERR_BUFFER_TOO_SMALL = 105,
    /**
     * A resource name could not be understood, or the resource list is not a
     * JSON array of names and objects (an object's key unknown or of the
     * wrong type).
     */
    TATTLER_ERR_INVALID_RESOURCE = 106,
    /**
     * The TLS setup failed (a CA bundle without a PEM certificate).
     */
    TATTLER_ERR_TLS = 107,
    /**
     * An integer argument is out of range.
     */
    TATTLER_ERR_INVALID_ARG = 108,
    /**
     * `tattler_set_log_callback`: the process already has a different Rust
     * logger installed, so tattler's log lines go there instead.
     */
    TATTLER_ERR_LOGGER_IN_USE = 109,
    /**
     * A failure of a kind this version of the header does not name.
     */
    TATTLER_ERR_OTHER = 110,
    /**
     * The call was made from inside the log callback, where it cannot work:
     * it would wait for the very thread that is logging (see
     * `tattler_set_log_callback` for what the callback may call). Nothing
     * was done; make the call after the callback returned.
     */
    TATTLER_ERR_REENTRANT = 111,
    /**
     * `tattler_open_resume`: the checkpoint is not one this library can
     * read (not a checkpoint, another format version, cut short, out of
     * bounds); the error text says where. Nothing was opened: open without
     * it (a full sync) and drop the stored one.
     */
    TATTLER_ERR_INVALID_CHECKPOINT = 112,
    /**
     * The reader or entry pointer is not a live one: closed or freed
     * already, or never handed out by tattler (another object's pointer,
     * garbage). Nothing was done and the pointer was not followed: every
     * call checks its handle against the library's registry first. A bug
     * in the caller; the handle stays invalid.
     */
    TATTLER_ERR_INVALID_HANDLE = 113,
} tattler_status;

/**
 * What an entry reports; the same numbers as the Rust `kube_tattler::Change`.
 */
typedef enum tattler_change {
    /**
     * Only returned by `tattler_entry_change(NULL)`.
     */
    TATTLER_CHANGE_NONE = 0,
    /**
     * An object the consumer has not seen before.
     */
    TATTLER_CHANGE_ADD = 1,
    /**
     * A newer version of an object the consumer has seen.
     */
    TATTLER_CHANGE_UPDATE = 2,
    /**
     * An object is gone; `tattler_entry_inferred` tells a delete the server
     * reported from one found by comparing a re-sync with what was delivered.
     */
    TATTLER_CHANGE_DELETE = 3,
    /**
     * During a re-sync: an object the consumer already has, unchanged.
     */
    TATTLER_CHANGE_SNAPSHOT = 4,
    /**
     * This resource's full state has been delivered (after the first sync and
     * after every re-sync), or it is current again after a
     * `TATTLER_CHANGE_STALE`; every later entry is a live change.
     */
    TATTLER_CHANGE_SYNCED = 5,
    /**
     * A failure (see `tattler_entry_error_code` and
     * `tattler_entry_error_message`): with `tattler_entry_error_ended`, this
     * resource failed for good and stops streaming, the others go on;
     * without, one object or frame was skipped and the stream goes on.
     */
    TATTLER_CHANGE_ERROR = 6,
    /**
     * This resource's view is not current: the server is unreachable or
     * refusing, the stream was silent past the idle timeout, or a new full
     * state is under way. `tattler_entry_error_reason` says why
     * (`Unreachable`, `Refused`, `Throttled`, `Silent`, `Resyncing`,
     * `Credentials`),
     * `tattler_entry_error_code` the HTTP status when the server answered,
     * `tattler_entry_namespace` which namespace's stream. The stream goes
     * on; `TATTLER_CHANGE_SYNCED` says when the view is current again.
     */
    TATTLER_CHANGE_STALE = 7,
    /**
     * With leader election: this reader now holds its Lease and starts its
     * streams. `tattler_entry_namespace` and `tattler_entry_name` are the
     * Lease's, `tattler_entry_identity` and `tattler_entry_holder` this
     * reader's, `tattler_entry_term` the term its entries carry until the
     * next `TATTLER_CHANGE_FOLLOWING`.
     */
    TATTLER_CHANGE_LEADING = 8,
    /**
     * With leader election: this reader does not stream. Once at the start
     * (`tattler_entry_error_reason` `Standby`), and when it held the Lease
     * and stopped its streams (`LeaseLost`: another holder took it;
     * `RenewFailed`: it could not renew in time); nothing of the term that
     * ended comes after it (entries still queued are dropped: the next
     * leader delivers them). Namespace, name and identity as on
     * `TATTLER_CHANGE_LEADING`; `tattler_entry_holder` who holds the Lease
     * now (a new `TATTLER_CHANGE_FOLLOWING` when that changes while it
     * waits); no term. Values above this one may come in later versions:
     * treat them as unknown, not as errors.
     */
    TATTLER_CHANGE_FOLLOWING = 9,
} tattler_change;

/**
 * The level of a log line, as passed to the log callback's `level`.
 */
typedef enum tattler_log_level {
    /**
     * No log lines (only for `tattler_set_log_level`).
     */
    TATTLER_LOG_OFF = 0,
    /**
     * A stream failed for good, a thread panicked.
     */
    TATTLER_LOG_ERROR = 1,
    /**
     * Something the operator should know: a retry, TLS verification off.
     */
    TATTLER_LOG_WARN = 2,
    /**
     * Streams starting, syncing, re-syncing.
     */
    TATTLER_LOG_INFO = 3,
    /**
     * Detail for debugging: requests, reconnect reasons.
     */
    TATTLER_LOG_DEBUG = 4,
    /**
     * Very detailed; costly.
     */
    TATTLER_LOG_TRACE = 5,
} tattler_log_level;

/**
 * A configuration being built. Opaque; made by `tattler_config_new`, freed
 * by `tattler_config_free`, opened by `tattler_open_config` (any number of
 * times).
 *
 * The pointer is a handle, checked on every call: a freed or foreign
 * pointer gets `TATTLER_ERR_INVALID_HANDLE` and is not followed.
 */
typedef struct tattler_config tattler_config;

/**
 * One entry handed out by `tattler_next_entry`. Opaque; read it with the
 * `tattler_entry_*` getters and free it with `tattler_entry_free`.
 *
 * The pointer is a handle, checked on every call: a getter on an entry
 * freed already (or on any pointer `tattler_next_entry` did not hand out)
 * returns its "no entry" value, a second `tattler_entry_free` does nothing.
 */
typedef struct tattler_entry tattler_entry;

/**
 * A running reader. Opaque; made by `tattler_open_config`, freed by
 * `tattler_close`.
 *
 * The pointer is a handle, checked on every call: a call on a reader closed
 * already, or on any pointer `tattler_open_config` did not hand out, returns
 * `TATTLER_ERR_INVALID_HANDLE` at once and does nothing.
 */
typedef struct tattler_reader tattler_reader;

/**
 * The log callback: `user` as given to `tattler_set_log_callback`, `level` a
 * `tattler_log_level` (1 error ... 5 trace), `target` the module that logged
 * (e.g. `"kube_tattler::stream::watch"`), `msg` the line. Both strings are valid only
 * during the call.
 */
typedef void (*tattler_log_fn)(void *user, int level, const char *target, const char *msg);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The fixed text of a status, e.g. `"reader closed"`.
 *
 * Parameters: `status`, a `tattler_status` value (any int is accepted).
 *
 * Returns: a static NUL-terminated string; `"unknown status"` for a number
 * that is no status. Never NULL.
 *
 * Ownership: the string is static; do not free it.
 *
 * Thread safety: callable from any thread at any time.
 */
const char *tattler_status_str(int status);

/**
 * The version of the tattler library, e.g. `"0.1.0"`.
 *
 * Returns: a static NUL-terminated string. Never NULL.
 *
 * Ownership: the string is static; do not free it.
 *
 * Thread safety: callable from any thread at any time.
 */
const char *tattler_version(void);

/**
 * The version of the tattler library as one number, MAJOR * 10000 +
 * MINOR * 100 + PATCH (0.1.0 is 100): the run-time counterpart of the
 * header's `TATTLER_VERSION_NUMBER`, to check at start-up that the library
 * loaded is at least the one compiled against
 * (`tattler_version_number() >= TATTLER_VERSION_NUMBER`).
 *
 * Returns: the number.
 *
 * Thread safety: callable from any thread at any time.
 */
uint32_t tattler_version_number(void);

/**
 * Makes an empty configuration: set its keys and add its resources, then
 * open it with `tattler_open_config`.
 *
 * Returns: the new configuration; NULL only if tattler failed internally
 * (a caught panic, logged).
 *
 * Ownership: the caller owns it and must free it with
 * `tattler_config_free`; a reader opened from it does not need it.
 *
 * Thread safety: any thread. Calls on one configuration take turns (a
 * lock); calls on different ones are independent.
 */
struct tattler_config *tattler_config_new(void);

/**
 * Frees a configuration. Readers opened from it run on.
 *
 * Parameters: `cfg`, or NULL (then nothing happens). A configuration freed
 * already, or a pointer not from `tattler_config_new`, is not followed:
 * nothing happens but a logged warning.
 *
 * Ownership: `cfg` is invalid afterwards. The values set in it (a token,
 * a password) are dropped with it.
 *
 * Thread safety: any thread, once no other call on `cfg` runs.
 */
void tattler_config_free(struct tattler_config *cfg);

/**
 * Sets a string key by its name, as the JSON form's `"key":"value"`: for
 * bindings that have the key as a string. C and C++ code has a typed
 * setter per key instead (`tattler_config_set_server`, ...), which the
 * compiler checks. Setting a key again replaces its value.
 *
 * Parameters:
 * - `cfg`: the configuration.
 * - `key`, `value`: NUL-terminated UTF-8.
 * - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
 *   and 0. The text is NUL-terminated and cut to fit.
 * - `err_needed`: NULL, or where to store, on failure, the size of the
 *   whole error text with its NUL.
 *
 * Returns: `TATTLER_OK`; or `TATTLER_ERR_INVALID_CONFIG` for an unknown
 * key, with the known key it most likely meant ("unknown key `sever`
 * (did you mean `server`?)"), for a key that does not take a string (the
 * JSON reader's text), or for `resources`, `exec` and `event_kinds`, which
 * have their own calls; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE`. A refused key changes nothing.
 *
 * Ownership: `key` and `value` are copied; they are only read during the
 * call. Files named are read by `tattler_open_config`, not here.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `key` and `value` are NULL or NUL-terminated; `err_buf` is NULL or has
 * `err_len` writable bytes; `err_needed` is NULL or writable (`cfg` may be
 * any pointer: it is checked).
 */
enum tattler_status tattler_config_set_string(struct tattler_config *cfg, const char *key, const char *value, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Sets an integer key by its name, as the JSON form's `"key":123`, for
 * bindings (C has `tattler_config_set_channel_capacity`, ...).
 *
 * Parameters, Returns, Ownership, Thread safety: as
 * `tattler_config_set_string` (a negative value is refused as the JSON
 * reader refuses it).
 *
 * # Safety
 * As `tattler_config_set_string`.
 */
enum tattler_status tattler_config_set_int(struct tattler_config *cfg, const char *key, int64_t value, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Sets a boolean key by its name, as the JSON form's `"key":true`, for
 * bindings (C has `tattler_config_set_insecure`, ...).
 *
 * Parameters, Returns, Ownership, Thread safety: as
 * `tattler_config_set_string`.
 *
 * # Safety
 * As `tattler_config_set_string`.
 */
enum tattler_status tattler_config_set_bool(struct tattler_config *cfg, const char *key, bool value, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Adds a resource by name, as an item `"pods"` of the JSON form's
 * `resources`: `pods`, `nodes`, `rbac`, `v1/pods`, `apps/v1/deployments`,
 * `example.com/v1/widgets`, ... It takes the configuration's
 * `namespace`, `label_selector`, `field_selector` and `metadata_only`.
 * Resources stream in the order added.
 *
 * Parameters: `cfg`; `name`, NUL-terminated UTF-8; `err_buf`, `err_len`,
 * `err_needed` as for `tattler_config_set_string`.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_RESOURCE` for a name that
 * cannot be one (the text says why); `TATTLER_ERR_NULL_ARG`,
 * `TATTLER_ERR_INVALID_UTF8`, `TATTLER_ERR_INVALID_HANDLE`.
 *
 * Ownership: `name` is copied.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `name` is NULL or NUL-terminated; `err_buf` is NULL or has `err_len`
 * writable bytes; `err_needed` is NULL or writable.
 */
enum tattler_status tattler_config_add_resource(struct tattler_config *cfg, const char *name, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Adds a resource with a scope of its own, as an object
 * `{"resource":"pods","namespace":"a","label_selector":"app=web","field_selector":"spec.nodeName=n1","metadata_only":true}`
 * of the JSON form's `resources`: it takes only these, not the
 * configuration's.
 *
 * Parameters:
 * - `cfg`: the configuration.
 * - `resource`: the name, as for `tattler_config_add_resource`.
 * - `namespace`, `label_selector`, `field_selector`: NULL to leave out
 *   (all namespaces, no selector).
 * - `metadata_only`: the objects as `PartialObjectMetadata` (only their
 *   `metadata`).
 * - `err_buf`, `err_len`, `err_needed`: as for `tattler_config_set_string`.
 *
 * Returns: as `tattler_config_add_resource`.
 *
 * Ownership: the strings are copied.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * The strings are NULL or NUL-terminated; `err_buf` is NULL or has
 * `err_len` writable bytes; `err_needed` is NULL or writable.
 */
enum tattler_status tattler_config_add_resource_spec(struct tattler_config *cfg, const char *resource, const char *namespace_, const char *label_selector, const char *field_selector, bool metadata_only, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Sets every key of a JSON document, the configuration `tattler_open` used
 * to take, e.g.
 * `{"server":"https://10.0.0.1:6443","ca_file":"/etc/k8s/ca.crt","token_file":"/var/run/token","resources":["pods","apps/v1/deployments"]}`:
 * its keys replace those set before, its `resources` and `event_kinds`
 * are added after those added before. For bindings that hold a document
 * (the Go `Config`, a file), and for the keys without a setter (`exec`, `shard`).
 * `tattler_config_keys()` lists the keys; `resources` takes names and
 * objects as `tattler_set_resources_ex` does.
 *
 * Parameters:
 * - `cfg`: the configuration.
 * - `json`: NUL-terminated UTF-8, a JSON object.
 * - `err_buf`, `err_len`, `err_needed`: as for `tattler_config_set_string`.
 *
 * Returns: `TATTLER_OK`; or, with nothing changed, what `tattler_open`
 * returned for the same document: `TATTLER_ERR_INVALID_CONFIG` (not JSON,
 * not an object, an unknown key with the one it most likely meant, a value
 * of the wrong type), `TATTLER_ERR_INVALID_RESOURCE` (a resource name that
 * cannot be one), `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE`. What needs the files or the whole
 * configuration (a token file to read, two ways to authenticate) is
 * checked by `tattler_open_config`.
 *
 * Ownership: `json` is only read during the call.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `json` is NULL or NUL-terminated; `err_buf` is NULL or has `err_len`
 * writable bytes; `err_needed` is NULL or writable (`cfg` may be any
 * pointer: it is checked).
 */
enum tattler_status tattler_config_set_json(struct tattler_config *cfg, const char *json, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Adds a kind to `event_kinds`, as an item of the JSON form's
 * `"event_kinds":["Pod"]`: Event resources then deliver only the events
 * about objects of the kinds added (`"Pod"`, `"Node"`, ...). None added:
 * every event.
 *
 * Parameters: `cfg`; `kind`, NUL-terminated UTF-8.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything: no error text).
 *
 * Ownership: `kind` is copied.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `kind` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_add_event_kind(struct tattler_config *cfg, const char *kind);

/**
 * Opens a reader from a configuration: checks it and starts one thread per
 * resource; entries start arriving at once. The one way to open a reader
 * (the `tattler_open*` calls of the LEGACY section are this one on a JSON
 * document).
 *
 * With a checkpoint (`tattler_checkpoint`'s bytes from an earlier reader,
 * typically kept in a file across a restart), each resource of the
 * configuration that the checkpoint holds (the same group, version,
 * resource, namespace, selectors and `metadata_only`) starts from it
 * instead of a full sync: its Synced entry comes at once, at the
 * checkpoint's resourceVersion, then only what changed while no reader ran
 * (deletes included). When the server no longer has that resourceVersion
 * (compacted), the resource re-syncs against what the checkpoint says the
 * consumer holds: unchanged objects as Snapshot, changed ones as Update,
 * new ones as Add, vanished ones as inferred Delete, then Synced. Resources
 * the checkpoint lacks sync in full; what it holds for resources no longer
 * configured is ignored.
 *
 * Parameters:
 * - `cfg`: the configuration; it stays the caller's and may be changed,
 *   opened again or freed afterwards.
 * - `checkpoint`, `checkpoint_len`: the checkpoint's bytes; NULL and 0 for
 *   none (a full sync).
 * - `out`: where to store the new reader.
 * - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
 *   and 0. The text is NUL-terminated and cut to fit.
 * - `err_needed`: NULL, or where to store, on failure, the size of the
 *   whole error text with its NUL (more than `err_len` when the text in
 *   `err_buf` was cut).
 *
 * Returns: `TATTLER_OK` and `*out` set; or a failure with the reason in
 * `err_buf` and `*out` untouched: `TATTLER_ERR_INVALID_CONFIG` (nothing to
 * watch, two ways to authenticate, a bad server URL, ...),
 * `TATTLER_ERR_INVALID_RESOURCE`, `TATTLER_ERR_IO` (a file named could not
 * be read, a thread not started), `TATTLER_ERR_TLS`,
 * `TATTLER_ERR_INVALID_CHECKPOINT` (bytes that are not a checkpoint this
 * library reads; the text says where and never quotes them: open without
 * it, a full sync, and drop the stored one), `TATTLER_ERR_NULL_ARG` (also
 * for a NULL `checkpoint` with a length), `TATTLER_ERR_INVALID_HANDLE` when
 * `cfg` is not a live configuration. Only what can be judged without the
 * network fails here; an unreachable or refusing server shows up later as
 * retries (logged) and as Error entries.
 *
 * Ownership: the caller owns `*out` and must free it with `tattler_close`.
 * `checkpoint` is only read during the call; files named are read now.
 *
 * Thread safety: any thread; readers are independent of each other. Works
 * from inside the log callback too.
 *
 * # Safety
 * `checkpoint` is NULL or has `checkpoint_len` readable bytes; `out` is
 * NULL or writable; `err_buf` is NULL or has `err_len` writable bytes;
 * `err_needed` is NULL or writable (`cfg` may be any pointer: it is
 * checked).
 */
enum tattler_status tattler_open_config(struct tattler_config *cfg, const uint8_t *checkpoint, size_t checkpoint_len, struct tattler_reader **out, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Sets `server`: the apiserver's URL, `https://host:port` (not with
 * `kubeconfig`, `context` or `in_cluster`). None of the four set: the
 * cluster is found as kubectl finds it.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_server(struct tattler_config *cfg, const char *value);

/**
 * Sets `ca_file`: a PEM file of the CA certificates the server's certificate
 * must chain to (not with `ca_data`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_ca_file(struct tattler_config *cfg, const char *value);

/**
 * Sets `ca_data`: the PEM text of those CA certificates (not with
 * `ca_file`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_ca_data(struct tattler_config *cfg, const char *value);

/**
 * Sets `token`: a bearer token (not with `token_file`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_token(struct tattler_config *cfg, const char *value);

/**
 * Sets `token_file`: a file holding the bearer token, read again as it
 * rotates.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_token_file(struct tattler_config *cfg, const char *value);

/**
 * Sets `namespace`: the namespace of the resources added by name; none:
 * every namespace.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_namespace(struct tattler_config *cfg, const char *value);

/**
 * Sets `label_selector`: a label selector for the resources added by name
 * (`app=web`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_label_selector(struct tattler_config *cfg, const char *value);

/**
 * Sets `field_selector`: a field selector for the resources added by name
 * (`spec.nodeName=n1`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_field_selector(struct tattler_config *cfg, const char *value);

/**
 * Sets `kubeconfig`: a kubeconfig file to take the cluster and the
 * credentials from (not with `server`).
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_kubeconfig(struct tattler_config *cfg, const char *value);

/**
 * Sets `context`: the kubeconfig's context to use; none: its current one.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_context(struct tattler_config *cfg, const char *value);

/**
 * Sets `tls_server_name`: the name the server's certificate must carry,
 * instead of the URL's host.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_tls_server_name(struct tattler_config *cfg, const char *value);

/**
 * Sets `proxy`: `env` (the default: `HTTPS_PROXY`, `HTTP_PROXY`,
 * `ALL_PROXY`, `NO_PROXY`), `none`, or an HTTP CONNECT proxy's URL,
 * `http://[user:password@]host:port`.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_proxy(struct tattler_config *cfg, const char *value);

/**
 * Sets `client_cert_file`: a PEM client certificate to authenticate with,
 * beside `client_key_file`.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_client_cert_file(struct tattler_config *cfg, const char *value);

/**
 * Sets `client_key_file`: the client certificate's PEM private key.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_client_key_file(struct tattler_config *cfg, const char *value);

/**
 * Sets `username`: the user of basic authentication, beside `password`.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_username(struct tattler_config *cfg, const char *value);

/**
 * Sets `password`: the password of basic authentication.
 *
 * Parameters: `cfg`; `value`, NUL-terminated UTF-8 (copied). Setting it
 * again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_UTF8`,
 * `TATTLER_ERR_INVALID_HANDLE` (the status says everything). Whether it
 * fits the rest of the configuration is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 *
 * # Safety
 * `value` is NULL or NUL-terminated (`cfg` may be any pointer: it is checked).
 */
enum tattler_status tattler_config_set_password(struct tattler_config *cfg, const char *value);

/**
 * Sets `channel_capacity`: the entries the output channel holds before the
 * streams wait (none is dropped). Default 64.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_channel_capacity(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `idle_timeout_secs`: a stream that receives no byte for this many
 * seconds (bookmarks included) is reconnected. Default 150.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_idle_timeout_secs(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `connect_timeout_secs`: the limit on reaching the server, in total
 * (not per read): the TCP connect, over the host's addresses as Go's dialer
 * tries them, and a proxy's answer (CONNECT, or the SOCKS5 negotiation)
 * within the same time; the TLS handshake then has as long again.
 * Default 5. `0`: no limit of tattler's own on the TCP connect, which lasts until
 * the server answers, the system gives up (about two minutes on Linux) or
 * `tattler_close`; 10 s for a proxy's answer and for the handshake.
 * `tattler_close` ends every phase at once (a TCP connect within 0.1 s on
 * Linux; elsewhere it runs to its end, bounded by this).
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_connect_timeout_secs(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `page_size`: the objects a page asks for when the server has no
 * watch-list and paged LIST + WATCH is used. Default 500.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_page_size(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `max_frame_bytes`: an object larger than this many bytes is reported
 * as an Error entry and skipped. Default 67108864 (64 MiB).
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_max_frame_bytes(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `initial_events_timeout_secs`: the seconds of silence during a
 * watch-list's initial state after which a stream falls back to LIST +
 * WATCH. Default 30.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_initial_events_timeout_secs(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `discovery_interval_secs`: how often, in seconds, wildcards (`*`,
 * `*.apps`) look again for resources established or deleted. Default 300.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_discovery_interval_secs(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `max_buffered_bytes`: the bytes of objects queued for the consumer
 * before the streams wait. Default 67108864 (64 MiB).
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_max_buffered_bytes(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `relist_interval_secs`: a fresh sync this often, in seconds (60 to
 * 604800), unchanged objects as Snapshot, vanished ones as inferred Delete.
 * Default 0: never.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything). Its range is checked by `tattler_open_config`.
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_relist_interval_secs(struct tattler_config *cfg, uint64_t value);

/**
 * Sets `insecure`: check nothing of the server's certificate (never beside a
 * CA). Default false.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_insecure(struct tattler_config *cfg, bool value);

/**
 * Sets `gzip`: ask the server for gzip-compressed bodies (it costs the
 * apiserver CPU, saves bandwidth only off-host). Default false.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_gzip(struct tattler_config *cfg, bool value);

/**
 * Sets `in_cluster`: reach the cluster as the pod's service account (not
 * with `server`, `kubeconfig` or `context`). Default false.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_in_cluster(struct tattler_config *cfg, bool value);

/**
 * Sets `scrub`: replace container env values with `REDACTED` in pods and
 * everything that embeds a pod spec. Default true.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_scrub(struct tattler_config *cfg, bool value);

/**
 * Sets `scrub_secret_data`: replace the values of Secrets' `data` and
 * `stringData` with `REDACTED`. Default true.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_scrub_secret_data(struct tattler_config *cfg, bool value);

/**
 * Sets `metadata_only`: stream the resources added by name as
 * `PartialObjectMetadata` (only their `metadata`). Default false.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_metadata_only(struct tattler_config *cfg, bool value);

/**
 * Sets `drop_managed_fields`: remove `metadata.managedFields` from every
 * object. Default false.
 *
 * Parameters: `cfg`; `value`. Setting it again replaces it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_INVALID_HANDLE` (the status says
 * everything).
 *
 * Thread safety: as `tattler_config_new`.
 */
enum tattler_status tattler_config_set_drop_managed_fields(struct tattler_config *cfg, bool value);

/**
 * Every key of the configuration document, with its JSON type and the
 * library's default, as one JSON object:
 * `{"server":{"type":"string"},...,"channel_capacity":{"type":"integer","default":64},...}`.
 * `type` is `"string"`, `"integer"`, `"boolean"`, `"array"` (`resources`,
 * `event_kinds`) or `"object"` (`exec`, `shard`, `leader_election`,
 * `checkpoint_in_cluster`); `default` is there for the keys
 * whose absence means a value (`channel_capacity`, `scrub`, ...), in the
 * key's own unit (`idle_timeout_secs` in seconds); `alias_of` names the key
 * another one stands for. For bindings that check keys or generate setters,
 * and for a test that a binding's documented defaults are the library's.
 *
 * Returns: a static NUL-terminated string, never NULL (`"{}"` only if
 * tattler failed internally, a caught panic).
 *
 * Ownership: static; do not free it.
 *
 * Thread safety: any thread, any time.
 */
const char *tattler_config_keys(void);

/**
 * Waits for the next entry.
 *
 * Parameters:
 * - `r`: the reader.
 * - `timeout_ms`: how long to wait at most: negative waits until an entry
 *   comes, the reader stops or `tattler_wake` is called; 0 only takes an
 *   entry that is ready.
 * - `out`: where to store the entry.
 *
 * Returns:
 * - `TATTLER_OK`: `*out` holds the next entry.
 * - `TATTLER_TIMEOUT`: no entry within `timeout_ms`, or `tattler_wake(r)`
 *   ended the wait early; the reader runs on.
 * - `TATTLER_CLOSED`: the reader was stopped (`tattler_stop`,
 *   `tattler_close`) and every entry it had queued has been handed out;
 *   every later call returns `TATTLER_CLOSED` too.
 * - `TATTLER_ERR_NULL_ARG`: `r` or `out` is NULL.
 * - `TATTLER_ERR_INVALID_HANDLE`: `r` is not an open reader (closed
 *   already, or not from `tattler_open_config`); returned at once, without waiting.
 * - `TATTLER_ERR_REENTRANT`: called from inside the log callback with a
 *   timeout other than 0 (waiting there would stall the stream that is
 *   logging); a timeout of 0 works there.
 *
 * Every failure is described by its status alone (`tattler_status_str`);
 * this call has no error text. `*out` is written only with `TATTLER_OK`. Entries of one resource come in
 * order; a consumer that falls behind slows the streams down, no entry is
 * ever dropped.
 *
 * Ownership: the caller owns `*out` and must free it with
 * `tattler_entry_free`; it stays valid after `tattler_close(r)`.
 *
 * Thread safety: may run while another thread calls `tattler_stop(r)`
 * (which wakes it with `TATTLER_CLOSED`), `tattler_wake(r)` (which wakes it
 * with `TATTLER_TIMEOUT`), `tattler_stats_json(r)` or
 * `tattler_set_resources(r)`. Several threads may wait on one reader; each
 * entry goes to one of them, and a `tattler_wake` wakes one of them.
 *
 * # Safety
 * `out` is NULL or writable (`r` may be any pointer: it is checked).
 */
enum tattler_status tattler_next_entry(struct tattler_reader *r, int64_t timeout_ms, struct tattler_entry **out);

/**
 * A file descriptor that is readable while entries are waiting, so that a
 * poll/epoll/select loop can drive `tattler_next_entry(r, 0, ...)`
 * instead of a thread blocking in it. Linux only (an eventfd).
 *
 * The protocol (level-triggered):
 * - Watch the fd for readability (`POLLIN`, `EPOLLIN`); never read,
 *   write or close it: tattler keeps its level.
 * - It is readable while at least one entry is queued, and from the
 *   moment the reader is stopped (`tattler_stop`, `tattler_close`) on, so
 *   that the loop sees `TATTLER_CLOSED`.
 * - When it is readable, call `tattler_next_entry(r, 0, &e)` until it
 *   returns `TATTLER_TIMEOUT` (or stop earlier: the fd stays readable
 *   while entries remain). A `TATTLER_TIMEOUT`, and a call that takes
 *   the last queued entry, clear the fd, and re-arm it at once when an
 *   entry arrived meanwhile: no wake-up is lost between the two.
 * - It may be readable with nothing queued (another thread took the
 *   entry, or just after this call): the `TATTLER_TIMEOUT` that follows
 *   clears it. With `EPOLLET` (edge-triggered), always go on until
 *   `TATTLER_TIMEOUT`.
 * - `tattler_wake` does not touch it.
 *
 * Parameters: `r`, the reader.
 *
 * Returns: the fd (0 or more; the same one on every call); -1 when `r`
 * is NULL or not an open reader, on systems without eventfd (not Linux),
 * or when the eventfd could not be made (the file descriptor limit;
 * later calls return -1 too).
 *
 * Ownership: the reader owns the fd; it is closed by `tattler_close(r)`
 * (remove it from an epoll set first). It is close-on-exec.
 *
 * Thread safety: any thread, concurrently with any other call on `r`.
 * Not async-signal-safe. Other threads may still call
 * `tattler_next_entry` on `r`; each entry goes to one caller.
 */
int tattler_fd(struct tattler_reader *r);

/**
 * Stops the reader: every stream ends, and a thread blocked in
 * `tattler_next_entry(r)` wakes up. Entries already queued are still handed
 * out; after them `tattler_next_entry` returns `TATTLER_CLOSED`. Does not
 * wait for the stream threads (`tattler_close` joins them).
 *
 * Parameters: `r`, the reader, or NULL (then nothing happens). A reader
 * closed already, or a pointer not from `tattler_open_config`, is not followed:
 * nothing happens but a logged warning (there is no status to return).
 *
 * Ownership: `r` stays the caller's; it must still be closed.
 *
 * Thread safety: safe from any thread, at any time, any number of times,
 * concurrently with any other call on `r`, also from inside the log
 * callback. This is how another thread (a signal handler's helper thread)
 * ends a blocked `tattler_next_entry` for good; `tattler_wake` ends one
 * wait only. Not async-signal-safe (it takes locks and may log): never
 * call it from a signal handler; have the handler write to a self-pipe
 * and call it from the thread that reads the pipe.
 */
void tattler_stop(struct tattler_reader *r);

/**
 * Ends one wait: a thread blocked in `tattler_next_entry(r)` returns
 * `TATTLER_TIMEOUT` at once, and the reader runs on. With no thread
 * waiting, the next `tattler_next_entry(r)` that would wait returns
 * `TATTLER_TIMEOUT` at once instead (one wake is kept, not more: waking
 * twice with nobody waiting ends one wait). A `tattler_next_entry` with
 * timeout 0 neither waits nor uses up the kept wake.
 *
 * This is how a caller cancels one wait without stopping the stream: a Go
 * context, a C++ `std::stop_token`, an event loop shutting a worker down.
 * With several threads waiting on `r`, one of them wakes (any one).
 *
 * Parameters: `r`, the reader, or NULL (then nothing happens). A reader
 * closed already, or a pointer not from `tattler_open_config`, is not followed:
 * nothing happens but a logged warning.
 *
 * Thread safety: safe from any thread, at any time, concurrently with any
 * other call on `r`, also from inside the log callback. Not
 * async-signal-safe, as `tattler_stop`.
 */
void tattler_wake(struct tattler_reader *r);

/**
 * Stops the reader, joins its threads and frees it.
 *
 * Returns within about a second whatever the streams are doing (a TCP
 * connect under way ends within 0.1 s on Linux, elsewhere it finishes
 * first, bounded by `connect_timeout_secs`; a thread in a DNS lookup
 * finishes it first, bounded by the system resolver's own timeout).
 * Entries already handed out stay valid.
 *
 * Parameters: `r`, the reader, or NULL (then nothing happens).
 *
 * Returns: `TATTLER_OK` (also for NULL); `TATTLER_ERR_INVALID_HANDLE` when
 * `r` is not an open reader (a second close, or a pointer not from
 * `tattler_open_config`: nothing is done, nothing is followed);
 * `TATTLER_ERR_PANIC` if stopping or joining panicked (a bug: the panic's
 * text is logged). Either way `r` is invalid afterwards: there is nothing
 * to retry.
 *
 * From inside the log callback: works, also on the reader whose stream
 * thread is logging; that thread is not joined (it cannot join itself): it
 * ends on its own once the callback returns.
 *
 * Ownership: takes `r`; it is invalid afterwards.
 *
 * Thread safety: meant to be called once, when no other thread is inside a
 * call on `r` and none will start one; use `tattler_stop` to wake a thread
 * blocked in `tattler_next_entry` first. Misuse is refused, never undefined
 * behaviour: a call on `r` that starts after the close (on any thread)
 * returns `TATTLER_ERR_INVALID_HANDLE`, and so does a second close (of two
 * racing closes, one closes). A call still running on another thread
 * (a close racing with a blocked `tattler_next_entry`) keeps the reader
 * alive and returns as after `tattler_stop`: an entry still queued, else
 * `TATTLER_CLOSED`; the threads are joined and the memory freed when it
 * returns, on its thread.
 */
enum tattler_status tattler_close(struct tattler_reader *r);

/**
 * Changes the resources streamed, while entries flow.
 *
 * Streams for added resources start with a full initial sync (their entries
 * then Synced), streams for removed ones stop, the others run on without a
 * reconnect. With `force`, every stream restarts. A resource is the same
 * stream when its group, version, resource, namespace, selectors and
 * `metadata_only` are.
 *
 * Parameters:
 * - `r`: the reader.
 * - `resources_json`: a JSON array, the same as the configuration's
 *   `resources`: names, which take the `namespace`, `label_selector` and
 *   `field_selector` of the open configuration as its own names did, and
 *   objects, which take only their own keys:
 *   `["configmaps",{"resource":"pods","field_selector":"spec.nodeName=n1","metadata_only":true},{"resource":"nodes","field_selector":"metadata.name=n1"}]`.
 *   An object's keys: `resource` (required; a name as above), `namespace`
 *   or `namespaces` (a list: one stream each, entries of one resource),
 *   `label_selector`, `field_selector`, `metadata_only` (the objects as
 *   `PartialObjectMetadata`: only their `metadata`), `encoding`, `shard`
 *   (`{"count":N,"index":i}`; without it, the configuration's).
 * - `force`: restart every stream even if the set is unchanged.
 * - `changed`: where to store whether anything changed, or NULL.
 * - `err_buf`, `err_len`: a buffer for the error text on failure, or NULL
 *   and 0. The text is NUL-terminated and cut to fit; it is this call's
 *   own (nothing is kept in the reader).
 * - `err_needed`: NULL, or where to store, on failure, the size of the
 *   whole error text with its NUL (more than `err_len` when the text in
 *   `err_buf` was cut).
 *
 * Returns: `TATTLER_OK` and `*changed` set; `TATTLER_CLOSED` if the reader
 * is stopped; or a failure with its reason in `err_buf`
 * (`TATTLER_ERR_INVALID_RESOURCE` for a bad name, an unknown or mistyped
 * key of an object or not a JSON array of names and objects, the text
 * naming the item and key (`resources[1].nmespace`);
 * `TATTLER_ERR_INVALID_CONFIG` for an empty list;
 * `TATTLER_ERR_INVALID_UTF8`, `TATTLER_ERR_IO` when a thread cannot start,
 * `TATTLER_ERR_NULL_ARG`, `TATTLER_ERR_INVALID_HANDLE` when `r` is not an
 * open reader, `TATTLER_ERR_REENTRANT` from inside the log callback, where
 * the streams it stops could include the one logging).
 * A bad list changes nothing. `*err_needed` is written only on failure (a
 * status of 100 or more), `*changed` only with `TATTLER_OK`.
 *
 * Ownership: `resources_json` is only read during the call.
 *
 * Thread safety: may run while other threads are in `tattler_next_entry`,
 * `tattler_stop`, `tattler_stats_json` or `tattler_metrics_text` on `r`;
 * two `tattler_set_resources_ex` on one reader take turns.
 *
 * (The name keeps its `_ex`: `tattler_set_resources`, the same call without
 * `err_needed`, is a legacy wrapper kept for the programs that link it.)
 *
 * # Safety
 * `resources_json` is NULL or NUL-terminated; `changed` is NULL or writable;
 * `err_buf` is NULL or has `err_len` writable bytes; `err_needed` is NULL or
 * writable (`r` may be any pointer: it is checked).
 */
enum tattler_status tattler_set_resources_ex(struct tattler_reader *r, const char *resources_json, bool force, bool *changed, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * The counters of each stream as a JSON array, in the configured order:
 * `[{"resource":"v1/pods","events":12,"bytes":40960,"reconnects":0,"resyncs":0,"relists":0,"stale_drops":0,"skipped":0,"other_shard_drops":0,"resource_version":"1234","objects":10,"synced":true,"list_fallback":false,"failed":false,"last_error":null}]`
 * (`last_error`: why the stream last retried or gave up, `null` once synced).
 *
 * `resource_version` is the last one seen, as the server sent it (a string:
 * the API calls resourceVersions opaque).
 *
 * Parameters:
 * - `r`: the reader.
 * - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
 * - `needed`: where to store the bytes required, NUL included, or NULL.
 *
 * Returns: `TATTLER_OK` with the NUL-terminated JSON in `buf`;
 * `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (the JSON is never
 * cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a NULL `buf` with a
 * non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r` is not an open
 * reader. `*needed` is set with `TATTLER_OK` and with
 * `TATTLER_ERR_BUFFER_TOO_SMALL`. Counters move: the size may grow between
 * two calls, so leave some room (or retry). Every failure is described by
 * its status alone; this call has no error text.
 *
 * Ownership: the caller owns `buf`.
 *
 * Thread safety: any thread, concurrently with any call on `r` but
 * `tattler_close`, also from inside the log callback.
 *
 * # Safety
 * `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
 * (`r` may be any pointer: it is checked).
 */
enum tattler_status tattler_stats_json(struct tattler_reader *r, char *buf, size_t len, size_t *needed);

/**
 * The reader's counters in the Prometheus text exposition format (0.0.4),
 * ready to serve as an agent's `/metrics` (`Content-Type: text/plain;
 * version=0.0.4`): `# HELP` and `# TYPE` lines, then one sample per stream,
 * labelled by `resource` (`group/version/resource`, `v1/pods` for the core
 * group) and, where set, `namespace`, `label_selector`, `field_selector`,
 * `metadata_only`:
 *
 * ```text
 * # HELP tattler_events_total Watch events and LIST items received.
 * # TYPE tattler_events_total counter
 * tattler_events_total{resource="v1/pods"} 12
 * ```
 *
 * The series: `tattler_events_total`, `tattler_received_bytes_total`,
 * `tattler_reconnects_total`, `tattler_resyncs_total`,
 * `tattler_relists_total`, `tattler_stale_drops_total`,
 * `tattler_skipped_total`, `tattler_other_shard_drops_total` (counters);
 * `tattler_objects` (objects tracked),
 * `tattler_synced`, `tattler_current`, `tattler_failed`, `tattler_list_fallback`
 * (0 or 1), `tattler_seconds_since_heard` and `tattler_seconds_since_sync`
 * (absent until the server answered, the first full state completed) per
 * stream; `tattler_channel_entries` and `tattler_channel_bytes` (what waits
 * for the consumer) for the reader. The text is the Rust
 * `kube_tattler::Reader::metrics_text`.
 *
 * Parameters:
 * - `r`: the reader.
 * - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
 * - `needed`: where to store the bytes required, NUL included, or NULL.
 *
 * Returns: `TATTLER_OK` with the NUL-terminated text in `buf`;
 * `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (the text is never
 * cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a NULL `buf` with a
 * non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r` is not an open
 * reader. `*needed` is set with `TATTLER_OK` and with
 * `TATTLER_ERR_BUFFER_TOO_SMALL`. Values move (bytes, seconds since the
 * sync): the size may grow between two calls, so leave some room (or
 * retry). Every failure is described by its status alone; this call has no
 * error text.
 *
 * Ownership: the caller owns `buf`.
 *
 * Thread safety: any thread, concurrently with any call on `r` but
 * `tattler_close`, also from inside the log callback.
 *
 * # Safety
 * `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
 * (`r` may be any pointer: it is checked).
 */
enum tattler_status tattler_metrics_text(struct tattler_reader *r, char *buf, size_t len, size_t *needed);

/**
 * A checkpoint of the reader, for `tattler_open_config` after a restart:
 * per resource whose full state is complete, where its watch can resume and
 * the objects the consumer holds (namespace, name, uid and resourceVersion
 * each; about 100 bytes an object, never the objects themselves).
 *
 * It matches what the consumer got exactly when taken after
 * `tattler_stop(r)` and once `tattler_next_entry(r)` has returned
 * `TATTLER_CLOSED` (every entry taken). Taken while the reader runs, it may
 * hold changes still waiting in the channel, which a resumed reader would
 * then not deliver. So, on shutdown: stop, drain, checkpoint, close.
 *
 * The bytes are a versioned JSON document, not NUL-terminated. They hold
 * names, uids and resourceVersions (no object contents, no credentials);
 * keep them where the agent keeps its own state.
 *
 * Parameters:
 * - `r`: the reader.
 * - `buf`, `len`: the caller's buffer. NULL and 0 ask for the size only.
 * - `needed`: where to store the byte count of the checkpoint, or NULL.
 *
 * Returns: `TATTLER_OK` with the checkpoint in the first `*needed` bytes
 * of `buf`; `TATTLER_ERR_BUFFER_TOO_SMALL` with `buf` untouched (a
 * checkpoint is never cut); `TATTLER_ERR_NULL_ARG` for a NULL `r`, or a
 * NULL `buf` with a non-zero `len`; `TATTLER_ERR_INVALID_HANDLE` when `r`
 * is not an open reader. `*needed` is set with `TATTLER_OK` and
 * with `TATTLER_ERR_BUFFER_TOO_SMALL`. While the reader runs the size may
 * grow between two calls (retry with the new `*needed`); once it is stopped
 * and drained it does not change. Every failure is described by its status
 * alone; this call has no error text.
 *
 * Ownership: the caller owns `buf`.
 *
 * Thread safety: any thread, concurrently with any call on `r` but
 * `tattler_close`, also from inside the log callback.
 *
 * # Safety
 * `buf` is NULL or has `len` writable bytes; `needed` is NULL or writable
 * (`r` may be any pointer: it is checked).
 */
enum tattler_status tattler_checkpoint(struct tattler_reader *r, uint8_t *buf, size_t len, size_t *needed);

/**
 * The name of a change, as the examples print it: `"Add"`, `"Update"`,
 * `"Delete"`, `"Snapshot"`, `"Synced"`, `"Error"`, `"Stale"`, `"Leading"`,
 * `"Following"`, `"None"` for
 * `TATTLER_CHANGE_NONE`.
 *
 * Parameters: `change`, a `tattler_change` value (any int is accepted).
 *
 * Returns: a static NUL-terminated string, never NULL; `"Unknown"` for a
 * number this library does not know (a newer library's change, seen
 * through an older header: print it, do not index an array with it).
 *
 * Ownership: static; do not free it.
 *
 * Thread safety: any thread, any time.
 */
const char *tattler_change_str(int change);

/**
 * What happened: Add, Update, Delete, Snapshot, Synced or Error.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: the change; `TATTLER_CHANGE_NONE` (0) for no entry.
 *
 * Thread safety: an entry may be read from several threads at once. A
 * getter racing `tattler_entry_free(e)` on another thread is safe (it sees
 * the entry or no entry), but what a getter lent out dies with the entry:
 * free it only once every thread is done with its strings and bytes.
 */
enum tattler_change tattler_entry_change(const struct tattler_entry *e);

/**
 * The API group of the entry's resource; `""` for the core group.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Do not
 * free it.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_group(const struct tattler_entry *e);

/**
 * The API version of the entry's resource, e.g. `"v1"`.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_version(const struct tattler_entry *e);

/**
 * The plural resource name, e.g. `"pods"`.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_resource(const struct tattler_entry *e);

/**
 * The kind, e.g. `"Pod"`; `""` only before the server has sent an object of
 * a resource whose kind tattler does not know.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_kind(const struct tattler_entry *e);

/**
 * The object's namespace; `""` for cluster-scoped objects and for Synced and
 * Error entries.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_namespace(const struct tattler_entry *e);

/**
 * The object's name; `""` for Synced and Error entries.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_name(const struct tattler_entry *e);

/**
 * The object's uid; `""` for Synced and Error entries.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_uid(const struct tattler_entry *e);

/**
 * On `TATTLER_CHANGE_LEADING` and `TATTLER_CHANGE_FOLLOWING`, this reader's
 * identity in its Lease; `""` on every other entry.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for no entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_identity(const struct tattler_entry *e);

/**
 * On `TATTLER_CHANGE_LEADING` and `TATTLER_CHANGE_FOLLOWING`, the replica
 * that holds the Lease now (client-go's `OnNewLeader`): this reader's
 * identity on Leading; on Following, the other holder, or `""` when nobody
 * holds it. `""` on every other entry. A Lease's holder is never `""`, so
 * `""` always means none.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL (`""` for none and for no
 * entry).
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_holder(const struct tattler_entry *e);

/**
 * Under leader election, the term the entry was delivered in: the Lease's
 * `leaseTransitions` when this replica took it (0 for the Lease's first
 * holder). Every entry a leading replica delivers carries it,
 * `TATTLER_CHANGE_LEADING` too; there is none without leader election and
 * on `TATTLER_CHANGE_FOLLOWING`. Fencing: a consumer writing to a store
 * shared by replicas keeps the highest term it has written and refuses a
 * lower one, so a late writer whose term ended is turned away. With
 * shards, each shard's Lease counts its own terms.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry); `out`, where to write the term, or NULL to ask
 * only whether there is one.
 *
 * Returns: true when the entry has a term (written to `*out`); false when
 * it has none and for no entry (`*out` is then left as it was).
 *
 * Thread safety: as `tattler_entry_change`.
 *
 * # Safety
 * `out` is NULL or writable.
 */
bool tattler_entry_term(const struct tattler_entry *e, uint64_t *out);

/**
 * `tattler_entry_resource_version_str` as an integer: 0 when it is not one
 * (aggregated and non-etcd servers may send any string), on Error, and
 * for no entry.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: the resourceVersion; 0 when it is not an integer.
 *
 * Thread safety: as `tattler_entry_change`.
 */
uint64_t tattler_entry_resource_version(const struct tattler_entry *e);

/**
 * The object's resourceVersion as the server sent it. On a Delete: the
 * version of the deletion when the server reported it, the last version
 * delivered when inferred. On Synced: the version the state is complete at.
 * `""` on Error. The API calls resourceVersions opaque: compare them only
 * for equality, unless both are integers of one etcd-backed resource.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL; `""` for no entry.
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_resource_version_str(const struct tattler_entry *e);

/**
 * The object's JSON exactly as the server sent it (re-serialised only when
 * scrubbing changed it). Not NUL-terminated: use `*len`.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry); `len`, where to write the byte count, or NULL.
 *
 * Returns: the bytes; NULL (and `*len = 0`) for inferred deletes, Synced and
 * Error entries, and for no entry.
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`. Copy
 * the bytes to keep them longer.
 *
 * Thread safety: as `tattler_entry_change`.
 *
 * # Safety
 * `len` is NULL or writable.
 */
const uint8_t *tattler_entry_object(const struct tattler_entry *e, size_t *len);

/**
 * Whether a Delete was inferred (the object was missing from a re-sync)
 * rather than reported by the server.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: true on an inferred Delete; false otherwise and for no entry.
 *
 * Thread safety: as `tattler_entry_change`.
 */
bool tattler_entry_inferred(const struct tattler_entry *e);

/**
 * On an Error entry, whether the resource's stream ended with it (it failed
 * for good). False when one object or frame was skipped (an object over a
 * limit, not JSON, nested too deep) and the stream goes on: the skipped
 * object's namespace and name, when readable, are the entry's.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: the flag; false on other entries and for no entry.
 *
 * Thread safety: as `tattler_entry_change`.
 */
bool tattler_entry_error_ended(const struct tattler_entry *e);

/**
 * On an Error entry, the HTTP status that ended the stream (401, 403, 404,
 * ...), or 0 when the failure was not an HTTP answer (an object over
 * `max_frame_bytes`, a panic caught in the stream); on a Stale entry, the
 * status the server answered with (429, 503, ...), or 0.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: the code; 0 on other entries and for no entry.
 *
 * Thread safety: as `tattler_entry_change`.
 */
uint16_t tattler_entry_error_code(const struct tattler_entry *e);

/**
 * On an Error entry, the server's `reason` (e.g. `"Forbidden"`) or a short
 * word of tattler's own; on a Stale entry, why the view is not current
 * (`"Unreachable"`, `"Refused"`, `"Throttled"`, `"Silent"`, `"Resyncing"`).
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL; `""` on other entries and
 * for no entry.
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_error_reason(const struct tattler_entry *e);

/**
 * On an Error or Stale entry, the server's message or tattler's
 * description of the failure.
 *
 * Parameters: `e`, an entry from `tattler_next_entry` (NULL or any other
 * pointer is no entry).
 *
 * Returns: a NUL-terminated string, never NULL; `""` on other entries and
 * for no entry.
 *
 * Ownership: borrowed from `e`; valid until `tattler_entry_free(e)`.
 *
 * Thread safety: as `tattler_entry_change`.
 */
const char *tattler_entry_error_message(const struct tattler_entry *e);

/**
 * Frees an entry and every string and byte it lent out.
 *
 * Parameters: `e`, an entry from `tattler_next_entry`, or NULL (then
 * nothing happens).
 *
 * An `e` that is not a live entry (freed already, or never handed out by
 * `tattler_next_entry`) is left alone and not followed: a second free does
 * nothing but log a warning (there is no status to return it in). The
 * handle of a freed entry is not reused for the next 4096 entries freed,
 * so a late second free cannot free a newer entry that came since.
 *
 * Ownership: takes `e`; it and its borrowed strings are invalid afterwards.
 * Entries do not depend on their reader: freeing one before or after
 * `tattler_close` is fine.
 *
 * Thread safety: any thread. A getter on `e` running on another thread
 * finishes first; what getters lent out must not be used after this.
 */
void tattler_entry_free(struct tattler_entry *e);

/**
 * Routes tattler's log lines to `cb`. Without a callback tattler logs
 * nothing.
 *
 * Parameters:
 * - `cb`: called once per log line, from whichever thread logs (mostly
 *   tattler's stream threads, named `tattler-watch-<resource>`); NULL
 *   removes the callback.
 * - `user`: passed back to `cb` untouched; tattler never reads it.
 *
 * Returns: `TATTLER_OK`; `TATTLER_ERR_LOGGER_IN_USE` when the process
 * already has another Rust `log` logger (a Rust host program's own): tattler
 * logs through that one and `cb` is not installed;
 * `TATTLER_ERR_REENTRANT` when called from inside the callback (it would
 * have to wait for its own caller to return), with nothing changed.
 *
 * Ownership: `user` stays the caller's. Once this call returns, the
 * previous callback is never called again, so its `user` may be freed.
 *
 * Thread safety: process-global; one callback serves every reader. May be
 * called at any time from any thread, also to replace or remove the
 * callback. `cb` must be callable from any thread and must not unwind.
 *
 * What the callback may call: every tattler function works from inside it
 * except three, which return `TATTLER_ERR_REENTRANT` there and do nothing:
 * `tattler_set_log_callback`, `tattler_set_resources` (it may have to join
 * the very stream thread that is logging) and a `tattler_next_entry` that
 * would wait (a timeout other than 0: it would stall the stream that is
 * logging). `tattler_close` works there too, also on the reader whose
 * thread is logging. Lines logged by the calls the callback makes are
 * dropped, so the callback is never called inside itself.
 *
 * # Safety
 * `cb` is NULL or a function with this signature that stays callable, with
 * this `user`, until it is replaced or removed.
 */
enum tattler_status tattler_set_log_callback(tattler_log_fn cb, void *user);

/**
 * Sets the most detailed level passed to the log callback; `TATTLER_LOG_INFO`
 * by default. Lines below it are not even formatted.
 *
 * Parameters: `level`, a `tattler_log_level` (0 off ... 5 trace).
 *
 * Returns: `TATTLER_OK`, or `TATTLER_ERR_INVALID_ARG` for a number outside
 * 0 to 5.
 *
 * Thread safety: process-global, like the callback; any thread, any time,
 * also from inside the callback.
 */
enum tattler_status tattler_set_log_level(int level);

/**
 * Whether the calling thread is inside the log callback right now.
 *
 * For wrappers over this API (the Go package, `tattler.hpp`) that hold a
 * lock of their own around tattler calls: from inside the callback they
 * must not wait for that lock, since the call that logged may hold it.
 *
 * Returns: true on a thread that is running the log callback.
 *
 * Thread safety: any thread, any time.
 */
bool tattler_in_log_callback(void);

/**
 * Legacy: opens a reader from a JSON configuration. The same as
 * `tattler_config_new`, `tattler_config_set_json(cfg, config_json, ...)`,
 * `tattler_open_config(cfg, NULL, 0, out, ...)`, `tattler_config_free`,
 * with the failures of those calls (`config_json` NULL is
 * `TATTLER_ERR_NULL_ARG`).
 *
 * Ownership: the caller owns `*out` and must free it with `tattler_close`.
 *
 * Thread safety: as `tattler_open_config`.
 *
 * # Safety
 * `config_json` is NULL or a NUL-terminated string; `out` is NULL or
 * writable; `err_buf` is NULL or has `err_len` writable bytes.
 */
TATTLER_LEGACY("use tattler_config_set_json and tattler_open_config") enum tattler_status tattler_open(const char *config_json, struct tattler_reader **out, char *err_buf, size_t err_len);

/**
 * Legacy: `tattler_open` that resumes from a checkpoint. The same as
 * `tattler_config_set_json` on a new configuration, then
 * `tattler_open_config(cfg, checkpoint, checkpoint_len, out, ...)`.
 *
 * Ownership: the caller owns `*out` and must free it with `tattler_close`.
 *
 * Thread safety: as `tattler_open_config`.
 *
 * # Safety
 * `config_json` is NULL or a NUL-terminated string; `checkpoint` is NULL
 * or has `checkpoint_len` readable bytes; `out` is NULL or writable;
 * `err_buf` is NULL or has `err_len` writable bytes.
 */
TATTLER_LEGACY("use tattler_config_set_json and tattler_open_config") enum tattler_status tattler_open_resume(const char *config_json, const uint8_t *checkpoint, size_t checkpoint_len, struct tattler_reader **out, char *err_buf, size_t err_len);

/**
 * Legacy: `tattler_open_resume` with `err_needed`. The same as
 * `tattler_config_set_json` on a new configuration, then
 * `tattler_open_config(cfg, checkpoint, checkpoint_len, out, err_buf,
 * err_len, err_needed)`.
 *
 * Ownership: the caller owns `*out` and must free it with `tattler_close`.
 *
 * Thread safety: as `tattler_open_config`.
 *
 * # Safety
 * As `tattler_open_resume`; `err_needed` is NULL or writable.
 */
TATTLER_LEGACY("use tattler_config_set_json and tattler_open_config") enum tattler_status tattler_open_ex(const char *config_json, const uint8_t *checkpoint, size_t checkpoint_len, struct tattler_reader **out, char *err_buf, size_t err_len, size_t *err_needed);

/**
 * Legacy: `tattler_set_resources_ex(r, resources_json, force, changed,
 * err_buf, err_len, NULL)`, with its statuses.
 *
 * Ownership: `resources_json` is only read during the call.
 *
 * Thread safety: as `tattler_set_resources_ex`.
 *
 * # Safety
 * `resources_json` is NULL or NUL-terminated; `changed` is NULL or writable;
 * `err_buf` is NULL or has `err_len` writable bytes (`r` may be any
 * pointer: it is checked).
 */
TATTLER_LEGACY("use tattler_set_resources_ex") enum tattler_status tattler_set_resources(struct tattler_reader *r, const char *resources_json, bool force, bool *changed, char *err_buf, size_t err_len);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* TATTLER_H */
