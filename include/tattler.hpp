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
//     for (tattler::entry &e : r) { ... }                // the same loop
//
// reader and entry own their C object (RAII): movable, not copyable.
// Getters return std::string_view borrowed from the entry (valid while it
// lives); on a temporary entry they are deleted, so that
// `std::string_view n = r.next()->name();` (a view into an entry freed at
// the semicolon) does not compile: keep the entry in a variable. Failures
// throw tattler::error, which carries the tattler_status and the call's own
// message; beside each throwing call is a noexcept one taking a
// std::error_code& (tattler::category(), values tattler_status), and with
// -fno-exceptions only those are declared. The threading rules are
// tattler.h's: a reader's calls may run from several threads, stop() and
// wake() from any thread at any time; destroy (or close()) the reader once
// the other threads' calls have returned.
#ifndef TATTLER_HPP
#define TATTLER_HPP

#if !defined(__cplusplus) || (__cplusplus < 201703L && !defined(_MSC_VER))
#error "tattler.hpp needs C++17 or later (tattler.h alone works from C++11)"
#endif

#include <atomic>
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
#include <system_error>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<stop_token>)
#include <stop_token>
#endif

#include "tattler.h"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define TATTLER_HPP_EXCEPTIONS 1
#else
#define TATTLER_HPP_EXCEPTIONS 0
#endif

#if __cplusplus >= 202002L && defined(__cpp_lib_jthread)
#define TATTLER_HPP_STOP_TOKEN 1
#else
#define TATTLER_HPP_STOP_TOKEN 0
#endif

namespace tattler {

// The std::error_category of tattler_status values: name() "tattler",
// message() tattler_status_str's text. TATTLER_OK is the only value an
// error_code holds as "no error"; the non-throwing calls never store
// TATTLER_TIMEOUT or TATTLER_CLOSED (they return std::nullopt instead).
class error_category_impl : public std::error_category {
public:
    const char *name() const noexcept override { return "tattler"; }
    std::string message(int status) const override { return tattler_status_str(status); }
};
inline const std::error_category &category() noexcept {
    static const error_category_impl instance;
    return instance;
}
inline std::error_code make_error_code(tattler_status st) noexcept {
    return std::error_code(static_cast<int>(st), category());
}

#if TATTLER_HPP_EXCEPTIONS
// A failed call: what tattler_status it returned, and its message.
class error : public std::runtime_error {
public:
    error(tattler_status status, const std::string &message)
        : std::runtime_error(message.empty() ? std::string(tattler_status_str(status)) : message),
          status_(status) {}
    tattler_status status() const noexcept { return status_; }
    std::error_code code() const noexcept { return make_error_code(status_); }

private:
    tattler_status status_;
};
#endif

// The kind of an entry, tattler_change as a scoped enum (same numbers).
enum class Change : int {
    None = TATTLER_CHANGE_NONE,
    Add = TATTLER_CHANGE_ADD,
    Update = TATTLER_CHANGE_UPDATE,
    Delete = TATTLER_CHANGE_DELETE,
    Snapshot = TATTLER_CHANGE_SNAPSHOT,
    Synced = TATTLER_CHANGE_SYNCED,
    Error = TATTLER_CHANGE_ERROR,
};

// "Add", "Update", ... as watch.c prints them; "None" for None and for a
// number this header does not know.
constexpr std::string_view to_string(Change c) noexcept {
    switch (c) {
    case Change::Add: return "Add";
    case Change::Update: return "Update";
    case Change::Delete: return "Delete";
    case Change::Snapshot: return "Snapshot";
    case Change::Synced: return "Synced";
    case Change::Error: return "Error";
    case Change::None: break;
    }
    return "None";
}

namespace detail {
inline bool failed(tattler_status st) noexcept { return static_cast<int>(st) >= 100; }
#if TATTLER_HPP_EXCEPTIONS
inline void check(tattler_status st, const char *message = "") {
    if (failed(st)) {
        throw error(st, message);
    }
}
#endif
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
    // The same as a scoped enum: e.type() == tattler::Change::Add.
    Change type() const noexcept { return static_cast<Change>(tattler_entry_change(e_)); }
    std::string_view group() const & noexcept { return detail::view(tattler_entry_group(e_)); }
    std::string_view group() const && = delete;
    std::string_view version() const & noexcept { return detail::view(tattler_entry_version(e_)); }
    std::string_view version() const && = delete;
    std::string_view resource() const & noexcept { return detail::view(tattler_entry_resource(e_)); }
    std::string_view resource() const && = delete;
    std::string_view kind() const & noexcept { return detail::view(tattler_entry_kind(e_)); }
    std::string_view kind() const && = delete;
    std::string_view namespace_() const & noexcept { return detail::view(tattler_entry_namespace(e_)); }
    std::string_view namespace_() const && = delete;
    std::string_view name() const & noexcept { return detail::view(tattler_entry_name(e_)); }
    std::string_view name() const && = delete;
    std::string_view uid() const & noexcept { return detail::view(tattler_entry_uid(e_)); }
    std::string_view uid() const && = delete;
    // The resourceVersion as the server sent it (opaque: compare for equality).
    std::string_view resource_version() const & noexcept { return detail::view(tattler_entry_resource_version_str(e_)); }
    std::string_view resource_version() const && = delete;
    // The same as an integer; 0 when it is not one.
    std::uint64_t resource_version_number() const noexcept { return tattler_entry_resource_version(e_); }
    bool inferred() const noexcept { return tattler_entry_inferred(e_); }
    // The object's JSON as the server sent it; empty for inferred deletes,
    // Synced and Error entries.
    std::string_view object() const & noexcept {
        std::size_t len = 0;
        const std::uint8_t *bytes = tattler_entry_object(e_, &len);
        return bytes == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char *>(bytes), len);
    }
    std::string_view object() const && = delete;
    std::uint16_t error_code() const noexcept { return tattler_entry_error_code(e_); }
    // The stream ended with this error; false when one object was skipped.
    bool error_ended() const noexcept { return tattler_entry_error_ended(e_); }
    std::string_view error_reason() const & noexcept { return detail::view(tattler_entry_error_reason(e_)); }
    std::string_view error_reason() const && = delete;
    std::string_view error_message() const & noexcept { return detail::view(tattler_entry_error_message(e_)); }
    std::string_view error_message() const && = delete;

    // The C entry, still owned by this object.
    tattler_entry *get() const noexcept { return e_; }
    // Gives up ownership: the caller frees it with tattler_entry_free.
    tattler_entry *release() noexcept { return std::exchange(e_, nullptr); }

private:
    tattler_entry *e_;
};

// What next() returns: a std::optional<entry> whose -> and * refuse a
// temporary, so that a getter's view cannot outlive the entry it borrows
// from: `r.next()->name()` does not compile, `auto e = r.next(); e->name()`
// does. Converts to std::optional<entry> (a move).
class maybe_entry : public std::optional<entry> {
public:
    using std::optional<entry>::optional;
    maybe_entry(std::optional<entry> &&o) noexcept : std::optional<entry>(std::move(o)) {}

    entry *operator->() & noexcept { return std::optional<entry>::operator->(); }
    const entry *operator->() const & noexcept { return std::optional<entry>::operator->(); }
    const entry *operator->() const && = delete;
    entry &operator*() & noexcept { return std::optional<entry>::operator*(); }
    const entry &operator*() const & noexcept { return std::optional<entry>::operator*(); }
    entry &&operator*() && noexcept { return std::move(std::optional<entry>::operator*()); }
    const entry &&operator*() const && noexcept { return std::move(std::optional<entry>::operator*()); }
};

// A running reader: tattler_open in the constructor (or reader::open),
// tattler_close in the destructor.
class reader {
public:
#if TATTLER_HPP_EXCEPTIONS
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
        std::string message;
        tattler_status st = open_into(config_json.c_str(), checkpoint, len, &message);
        if (st != TATTLER_OK) {
            throw error(st, message);
        }
    }
#endif

    // An empty reader (as after a move or a failed open): every call on it
    // fails with TATTLER_ERR_NULL_ARG. Assign an opened one to it.
    reader() noexcept = default;

    // The non-throwing open: a reader, or an empty one with `ec` set (a
    // tattler_status of tattler::category()) and, when `message` is not
    // NULL, the reason in *message.
    static reader open(const std::string &config_json, std::error_code &ec, std::string *message = nullptr) noexcept {
        return open(config_json, nullptr, 0, ec, message);
    }
    static reader open(const std::string &config_json, const std::uint8_t *checkpoint, std::size_t len,
                       std::error_code &ec, std::string *message = nullptr) noexcept {
        reader r;
        ec = make_error_code(r.open_into(config_json.c_str(), checkpoint, len, message));
        if (ec.value() == TATTLER_OK) {
            ec.clear();
        }
        return r;
    }

    reader(reader &&other) noexcept
        : r_(std::exchange(other.r_, nullptr)), closed_(other.closed_.load()) {}
    reader &operator=(reader &&other) noexcept {
        if (this != &other) {
            (void)tattler_close(r_);
            r_ = std::exchange(other.r_, nullptr);
            closed_ = other.closed_.load();
        }
        return *this;
    }
    reader(const reader &) = delete;
    reader &operator=(const reader &) = delete;
    ~reader() { (void)tattler_close(r_); }

    // True when this object holds a reader (not moved from, closed or a
    // failed open).
    explicit operator bool() const noexcept { return r_ != nullptr; }

#if TATTLER_HPP_EXCEPTIONS
    // Waits until the next entry. std::nullopt when the reader is stopped
    // and drained (closed() is then true: there will be no more), or when a
    // wake() from another thread ended the wait (closed() false: the reader
    // runs on). A wake() made while no call waits ends the next wait.
    // Throws tattler::error on a failure.
    maybe_entry next() { return next_for_ms(-1); }

    // Waits at most `timeout` (0: only an entry that is ready). std::nullopt
    // when none came in time, a wake() ended the wait, or the reader is
    // stopped and drained: closed() tells the last one.
    maybe_entry next_for(std::chrono::milliseconds timeout) {
        return next_for_ms(timeout.count() < 0 ? 0 : static_cast<std::int64_t>(timeout.count()));
    }

#if TATTLER_HPP_STOP_TOKEN
    // next() that also ends (std::nullopt) once `stop` is requested: a
    // std::stop_callback calls wake(). A request made before the call ends
    // it at once. (With several threads waiting, the wake may end another
    // thread's wait; check stop.stop_requested() after a std::nullopt.)
    maybe_entry next(std::stop_token stop) {
        if (stop.stop_requested()) {
            return std::nullopt;
        }
        std::stop_callback on_stop(stop, [this]() noexcept { wake(); });
        return next();
    }
#endif
#endif

    // The non-throwing next(): an entry; or std::nullopt with `ec` clear
    // when woken or stopped and drained (closed() tells which), or with `ec`
    // set on a failure.
    maybe_entry next(std::error_code &ec) noexcept { return next_for_ms(-1, ec); }
    maybe_entry next_for(std::chrono::milliseconds timeout, std::error_code &ec) noexcept {
        return next_for_ms(timeout.count() < 0 ? 0 : static_cast<std::int64_t>(timeout.count()), ec);
    }
#if TATTLER_HPP_STOP_TOKEN
    maybe_entry next(std::stop_token stop, std::error_code &ec) noexcept {
        ec.clear();
        if (stop.stop_requested()) {
            return std::nullopt;
        }
        std::stop_callback on_stop(stop, [this]() noexcept { wake(); });
        return next(ec);
    }
#endif

    // True once next() or next_for() saw that the reader is stopped and
    // drained: there will be no more entries.
    bool closed() const noexcept { return closed_.load(); }

    // Ends every stream; waits in progress return once the queue is drained.
    // Any thread, any time.
    void stop() noexcept { tattler_stop(r_); }

    // tattler_fd: readable while entries wait (Linux; -1 elsewhere), for a
    // poll/epoll loop that calls next_for(0ms) until it returns std::nullopt.
    // The reader owns it: never read or close it.
    int fd() const noexcept { return tattler_fd(r_); }

    // Ends one wait of next() or next_for() (or the next one) early: it
    // returns std::nullopt and the reader runs on. Any thread, any time.
    void wake() noexcept { tattler_wake(r_); }

    // An input iterator over next(): `for (tattler::entry &e : r)` ends
    // where `while (auto e = r.next())` does (the reader stopped and
    // drained, or a wake()). With exceptions, a failure throws from ++;
    // without them it ends the loop (call next(ec) to learn it).
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = entry;
        using difference_type = std::ptrdiff_t;
        using pointer = entry *;
        using reference = entry &;

        iterator() noexcept = default;
        explicit iterator(reader *r) : r_(r) { advance(); }
        entry &operator*() noexcept { return *current_; }
        entry *operator->() noexcept { return &*current_; }
        iterator &operator++() {
            advance();
            return *this;
        }
        void operator++(int) { advance(); }
        friend bool operator==(const iterator &a, const iterator &b) noexcept {
            return a.current_.has_value() == b.current_.has_value() && (!a.current_ || a.r_ == b.r_);
        }
        friend bool operator!=(const iterator &a, const iterator &b) noexcept { return !(a == b); }

    private:
        void advance() {
            current_.reset();  // frees the entry before waiting for the next
#if TATTLER_HPP_EXCEPTIONS
            current_ = r_->next();
#else
            std::error_code ec;
            current_ = r_->next(ec);
#endif
        }
        reader *r_ = nullptr;
        std::optional<entry> current_;
    };
    iterator begin() { return iterator(this); }
    iterator end() noexcept { return iterator(); }

    // Changes the streamed resources: a JSON array as the configuration's
    // "resources", names and objects, e.g.
    // R"(["configmaps",{"resource":"pods","field_selector":"spec.nodeName=n1"}])"
    // (see tattler_set_resources); true when something changed. Throws
    // tattler::error (a bad name or key, or from inside the log callback).
#if TATTLER_HPP_EXCEPTIONS
    bool set_resources(const std::string &resources_json, bool force = false) {
        bool changed = false;
        char err[1024] = {0};
        tattler_status st =
            tattler_set_resources(handle(), resources_json.c_str(), force, &changed, err, sizeof err);
        if (st == TATTLER_CLOSED) {
            throw error(st, "the reader is stopped");
        }
        detail::check(st, err);
        return changed;
    }
#endif
    // The non-throwing set_resources: `ec` set on a failure (TATTLER_CLOSED
    // when the reader is stopped), false then.
    bool set_resources(const std::string &resources_json, bool force, std::error_code &ec) noexcept {
        bool changed = false;
        tattler_status st = tattler_set_resources(r_, resources_json.c_str(), force, &changed, nullptr, 0);
        set(ec, st == TATTLER_CLOSED || detail::failed(st) ? st : TATTLER_OK);
        return st == TATTLER_OK && changed;
    }

#if TATTLER_HPP_EXCEPTIONS

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
#endif
    // The non-throwing close: `ec` set if the library reports a failure.
    void close(std::error_code &ec) noexcept { set(ec, tattler_close(std::exchange(r_, nullptr))); }

    // The C reader, still owned by this object (for the C calls).
    tattler_reader *get() const noexcept { return r_; }

private:
    // tattler_open_resume into r_; the reason into *message on failure.
    tattler_status open_into(const char *json, const std::uint8_t *checkpoint, std::size_t len,
                             std::string *message) noexcept {
        char err[1024] = {0};
        std::size_t needed = 0;
        tattler_status st = tattler_open_ex(json, checkpoint, len, &r_, err, sizeof err, &needed);
        if (st != TATTLER_OK && message != nullptr) {
            // A failed allocation here ends the process (noexcept).
            if (needed > sizeof err) {
                // The text was cut: ask again with room for all of it (a
                // failed open has nothing to undo).
                std::vector<char> full(needed);
                st = tattler_open_ex(json, checkpoint, len, &r_, full.data(), full.size(), &needed);
                *message = full.data();
            } else {
                *message = err;
            }
        }
        return st;
    }

    static void set(std::error_code &ec, tattler_status st) noexcept {
        if (detail::failed(st)) {
            ec = make_error_code(st);
        } else {
            ec.clear();
        }
    }

    // One wait; TATTLER_CLOSED sets closed_ (several threads may see it).
    tattler_status wait(std::int64_t ms, std::optional<entry> &out) noexcept {
        if (r_ == nullptr) {
            return TATTLER_ERR_NULL_ARG;
        }
        tattler_entry *e = nullptr;
        tattler_status st = tattler_next_entry(r_, ms, &e);
        if (st == TATTLER_OK) {
            out.emplace(e);
        } else if (st == TATTLER_CLOSED) {
            closed_.store(true);
        }
        return st;
    }

    maybe_entry next_for_ms(std::int64_t ms, std::error_code &ec) noexcept {
        maybe_entry out;
        set(ec, wait(ms, out));
        return out;
    }

#if TATTLER_HPP_EXCEPTIONS
    maybe_entry next_for_ms(std::int64_t ms) {
        maybe_entry out;
        tattler_status st = wait(ms, out);
        if (st == TATTLER_ERR_NULL_ARG && r_ == nullptr) {
            throw error(st, "the reader was moved from or closed");
        }
        detail::check(st);
        return out;
    }

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
#endif

    tattler_reader *r_ = nullptr;
    // Written by whichever thread's next() sees TATTLER_CLOSED.
    std::atomic<bool> closed_{false};
};

// The log function: level (1 error ... 5 trace), target (e.g.
// "kube_tattler::stream::watch") and message, valid only during the call.
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
#if TATTLER_HPP_EXCEPTIONS
    try {
        (*static_cast<log_function *>(user))(static_cast<tattler_log_level>(level), target, msg);
    } catch (...) {
        // Nothing may unwind into the library.
    }
#else
    (*static_cast<log_function *>(user))(static_cast<tattler_log_level>(level), target, msg);
#endif
}
}  // namespace detail

#if TATTLER_HPP_EXCEPTIONS

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
#endif

}  // namespace tattler

namespace std {
// tattler_status is an error code enum: `ec == TATTLER_ERR_INVALID_CONFIG`.
template <>
struct is_error_code_enum<tattler_status> : true_type {};
}  // namespace std

// Found by argument-dependent lookup for the global C enum.
inline std::error_code make_error_code(tattler_status st) noexcept { return tattler::make_error_code(st); }

#endif  // TATTLER_HPP
