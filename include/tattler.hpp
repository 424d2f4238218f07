// tattler.hpp - a header-only C++17 wrapper over tattler.h.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
//     #include <tattler.hpp>
//
//     tattler::reader r(R"({"resources":["pods"]})");    // throws tattler::error
//     while (auto e = r.next()) {                       // std::nullopt once stopped
//         std::cout << e->name() << " " << e->resource_version() << "\n";
//     }
//     std::vector<std::uint8_t> cp = r.checkpoint();    // after stop(): resume with
//     tattler::reader again(config, cp);                // only what changed since
//
// reader and entry own their C object (RAII): movable, not copyable.
// Getters return std::string_view borrowed from the entry (valid while it
// lives). Failures throw tattler::error, which carries the tattler_status
// and the call's own message. The threading rules are tattler.h's: a
// reader's calls may run from several threads, stop() and wake() from any
// thread at any time; destroy (or close()) the reader once the other
// threads' calls have returned.
#ifndef TATTLER_HPP
#define TATTLER_HPP

#if !defined(__cplusplus) || (__cplusplus < 201703L && !defined(_MSC_VER))
#error "tattler.hpp needs C++17 or later (tattler.h alone works from C++11)"
#endif

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tattler.h"

namespace tattler {

// A failed call: what tattler_status it returned, and its message.
class error : public std::runtime_error {
public:
    error(tattler_status status, const std::string &message)
        : std::runtime_error(message.empty() ? std::string(tattler_status_str(status)) : message),
          status_(status) {}
    tattler_status status() const noexcept { return status_; }

private:
    tattler_status status_;
};

namespace detail {
inline void check(tattler_status st, const char *message = "") {
    if (static_cast<int>(st) >= 100) {
        throw error(st, message);
    }
}
inline std::string_view view(const char *s) noexcept { return std::string_view(s); }
}  // namespace detail

// The version of the linked library, e.g. "0.1.0" (TATTLER_VERSION_* are
// the header's).
inline std::string_view version() noexcept { return tattler_version(); }

// One change to one object, or a resource's Synced or Error marker.
// Independent of its reader: it may outlive it.
class entry {
public:
    explicit entry(tattler_entry *e) noexcept : e_(e) {}
    entry(entry &&other) noexcept : e_(std::exchange(other.e_, nullptr)) {}
    entry &operator=(entry &&other) noexcept {
        if (this != &other) {
            tattler_entry_free(e_);
            e_ = std::exchange(other.e_, nullptr);
        }
        return *this;
    }
    entry(const entry &) = delete;
    entry &operator=(const entry &) = delete;
    ~entry() { tattler_entry_free(e_); }

    tattler_change change() const noexcept { return tattler_entry_change(e_); }
    std::string_view group() const noexcept { return detail::view(tattler_entry_group(e_)); }
    std::string_view version() const noexcept { return detail::view(tattler_entry_version(e_)); }
    std::string_view resource() const noexcept { return detail::view(tattler_entry_resource(e_)); }
    std::string_view kind() const noexcept { return detail::view(tattler_entry_kind(e_)); }
    std::string_view namespace_() const noexcept { return detail::view(tattler_entry_namespace(e_)); }
    std::string_view name() const noexcept { return detail::view(tattler_entry_name(e_)); }
    std::string_view uid() const noexcept { return detail::view(tattler_entry_uid(e_)); }
    // The resourceVersion as the server sent it (opaque: compare for equality).
    std::string_view resource_version() const noexcept { return detail::view(tattler_entry_resource_version_str(e_)); }
    // The same as an integer; 0 when it is not one.
    std::uint64_t resource_version_number() const noexcept { return tattler_entry_resource_version(e_); }
    bool inferred() const noexcept { return tattler_entry_inferred(e_); }
    // The object's JSON as the server sent it; empty for inferred deletes,
    // Synced and Error entries.
    std::string_view object() const noexcept {
        std::size_t len = 0;
        const std::uint8_t *bytes = tattler_entry_object(e_, &len);
        return bytes == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char *>(bytes), len);
    }
    std::uint16_t error_code() const noexcept { return tattler_entry_error_code(e_); }
    // The stream ended with this error; false when one object was skipped.
    bool error_ended() const noexcept { return tattler_entry_error_ended(e_); }
    std::string_view error_reason() const noexcept { return detail::view(tattler_entry_error_reason(e_)); }
    std::string_view error_message() const noexcept { return detail::view(tattler_entry_error_message(e_)); }

    // The C entry, still owned by this object.
    tattler_entry *get() const noexcept { return e_; }
    // Gives up ownership: the caller frees it with tattler_entry_free.
    tattler_entry *release() noexcept { return std::exchange(e_, nullptr); }

private:
    tattler_entry *e_;
};

// A running reader: tattler_open in the constructor, tattler_close in the
// destructor.
class reader {
public:
    // Opens a reader from the JSON configuration (see tattler_open).
    // Throws tattler::error with the reason (the bad key, the unreadable file).
    explicit reader(const std::string &config_json) : reader(config_json, nullptr, 0) {}

    // Opens a reader that resumes from checkpoint() bytes of an earlier one
    // (see tattler_open_resume); an empty checkpoint is a plain open. Throws
    // tattler::error, TATTLER_ERR_INVALID_CHECKPOINT for bytes it cannot
    // read (open without them then).
    reader(const std::string &config_json, const std::vector<std::uint8_t> &checkpoint)
        : reader(config_json, checkpoint.data(), checkpoint.size()) {}

    reader(const std::string &config_json, const std::uint8_t *checkpoint, std::size_t len) {
        char err[512] = {0};
        tattler_status st = tattler_open_resume(config_json.c_str(), checkpoint, len, &r_, err, sizeof err);
        if (st != TATTLER_OK) {
            throw error(st, err);
        }
    }
    reader(reader &&other) noexcept
        : r_(std::exchange(other.r_, nullptr)), closed_(other.closed_) {}
    reader &operator=(reader &&other) noexcept {
        if (this != &other) {
            (void)tattler_close(r_);
            r_ = std::exchange(other.r_, nullptr);
            closed_ = other.closed_;
        }
        return *this;
    }
    reader(const reader &) = delete;
    reader &operator=(const reader &) = delete;
    ~reader() { (void)tattler_close(r_); }

    // Waits until the next entry, or until the reader is stopped and
    // drained (then std::nullopt). A wake() does not end this wait; it ends
    // next_for's.
    std::optional<entry> next() {
        for (;;) {
            tattler_entry *e = nullptr;
            tattler_status st = tattler_next_entry(handle(), -1, &e);
            if (st == TATTLER_OK) {
                return entry(e);
            }
            if (st == TATTLER_CLOSED) {
                closed_ = true;
                return std::nullopt;
            }
            detail::check(st);  // TATTLER_TIMEOUT (a wake) loops
        }
    }

    // Waits at most `timeout` (0: only an entry that is ready). std::nullopt
    // when none came in time, a wake() ended the wait, or the reader is
    // stopped and drained: closed() tells the last one.
    std::optional<entry> next_for(std::chrono::milliseconds timeout) {
        tattler_entry *e = nullptr;
        std::int64_t ms = timeout.count() < 0 ? 0 : static_cast<std::int64_t>(timeout.count());
        tattler_status st = tattler_next_entry(handle(), ms, &e);
        if (st == TATTLER_OK) {
            return entry(e);
        }
        if (st == TATTLER_CLOSED) {
            closed_ = true;
        } else {
            detail::check(st);
        }
        return std::nullopt;
    }

    // True once next() or next_for() saw that the reader is stopped and
    // drained: there will be no more entries.
    bool closed() const noexcept { return closed_; }

    // Ends every stream; waits in progress return once the queue is drained.
    // Any thread, any time.
    void stop() noexcept { tattler_stop(r_); }

    // Ends one wait of next_for() (or the next one) early; the reader runs
    // on. Any thread, any time.
    void wake() noexcept { tattler_wake(r_); }

    // Changes the streamed resources: a JSON array as the configuration's
    // "resources", names and objects, e.g.
    // R"(["configmaps",{"resource":"pods","field_selector":"spec.nodeName=n1"}])"
    // (see tattler_set_resources); true when something changed. Throws
    // tattler::error (a bad name or key, or from inside the log callback).
    bool set_resources(const std::string &resources_json, bool force = false) {
        bool changed = false;
        char err[512] = {0};
        tattler_status st =
            tattler_set_resources(handle(), resources_json.c_str(), force, &changed, err, sizeof err);
        if (st == TATTLER_CLOSED) {
            throw error(st, "the reader is stopped");
        }
        detail::check(st, err);
        return changed;
    }

    // The counters of each stream, as tattler_stats_json's JSON array.
    std::string stats_json() const { return text_of(tattler_stats_json); }

    // The counters in the Prometheus text format, for an agent's /metrics
    // (see tattler_metrics_text).
    std::string metrics_text() const { return text_of(tattler_metrics_text); }

    // A checkpoint for reader(config, checkpoint) after a restart (see
    // tattler_checkpoint): exact once stop() was called and next() returned
    // std::nullopt.
    std::vector<std::uint8_t> checkpoint() const {
        std::vector<std::uint8_t> buf;
        for (;;) {
            std::size_t needed = 0;
            tattler_status st = tattler_checkpoint(handle(), buf.data(), buf.size(), &needed);
            if (st == TATTLER_OK) {
                buf.resize(needed);
                return buf;
            }
            if (st != TATTLER_ERR_BUFFER_TOO_SMALL) {
                detail::check(st);
            }
            buf.resize(needed + needed / 8 + 256);  // it may grow while the reader runs
        }
    }

    // Closes now (the destructor then does nothing): stops, joins the
    // threads, frees. Throws tattler::error if the library reports a failure.
    void close() {
        tattler_status st = tattler_close(std::exchange(r_, nullptr));
        detail::check(st);
    }

    // The C reader, still owned by this object (for the C calls).
    tattler_reader *get() const noexcept { return r_; }

private:
    // A NUL-terminated text a call writes into a buffer (stats, metrics).
    std::string text_of(tattler_status (*call)(tattler_reader *, char *, std::size_t, std::size_t *)) const {
        std::vector<char> buf(4096);
        for (;;) {
            std::size_t needed = 0;
            tattler_status st = call(handle(), buf.data(), buf.size(), &needed);
            if (st == TATTLER_OK) {
                return std::string(buf.data(), needed - 1);
            }
            if (st != TATTLER_ERR_BUFFER_TOO_SMALL) {
                detail::check(st);
            }
            buf.resize(needed + 256);  // counters may grow between two calls
        }
    }

    tattler_reader *handle() const {
        if (r_ == nullptr) {
            throw error(TATTLER_ERR_NULL_ARG, "the reader was moved from or closed");
        }
        return r_;
    }

    tattler_reader *r_ = nullptr;
    bool closed_ = false;
};

// The log function: level (1 error ... 5 trace), target (e.g.
// "tattler::watch") and message, valid only during the call.
using log_function = std::function<void(tattler_log_level, std::string_view, std::string_view)>;

namespace detail {
struct log_state {
    std::mutex lock;  // orders set_log_function calls made outside the callback
    std::unique_ptr<log_function> current;
};
inline log_state &logs() {
    // Never destroyed: a library thread may still log during exit.
    static log_state *state = new log_state;
    return *state;
}
inline void log_trampoline(void *user, int level, const char *target, const char *msg) noexcept {
    try {
        (*static_cast<log_function *>(user))(static_cast<tattler_log_level>(level), target, msg);
    } catch (...) {
        // Nothing may unwind into the library.
    }
}
}  // namespace detail

// Routes tattler's log lines (process-wide) to f; an empty f turns them off.
// Once it returns, the previous function is never called again. Throws
// tattler::error: TATTLER_ERR_LOGGER_IN_USE (another Rust logger), or
// TATTLER_ERR_REENTRANT when called from inside a log function.
inline void set_log_function(log_function f) {
    if (tattler_in_log_callback()) {
        // Checked before taking the lock: a set_log_function waiting in the
        // library for this very call to return may hold it.
        throw error(TATTLER_ERR_REENTRANT, "set_log_function cannot run inside the log function");
    }
    detail::log_state &state = detail::logs();
    std::lock_guard<std::mutex> hold(state.lock);
    std::unique_ptr<log_function> next = f ? std::make_unique<log_function>(std::move(f)) : nullptr;
    tattler_status st = next ? tattler_set_log_callback(detail::log_trampoline, next.get())
                             : tattler_set_log_callback(nullptr, nullptr);
    detail::check(st);
    state.current = std::move(next);  // the old one is no longer called: free it
}

// The most detailed level passed to the log function (TATTLER_LOG_INFO by default).
inline void set_log_level(tattler_log_level level) { detail::check(tattler_set_log_level(static_cast<int>(level))); }

}  // namespace tattler

#endif  // TATTLER_HPP
