// tattler.hpp - a header-only C++17 wrapper over tattler.h.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
//     #include <tattler.hpp>
//
//     tattler::config cfg;                               // the C builder, typed
//     cfg.server("https://10.0.0.1:6443").ca_file("ca.crt").token_file("token")
//        .resource("pods").channel_capacity(64);
//     tattler::reader r(cfg);                            // throws tattler::error
//     while (auto e = r.next()) {                        // std::nullopt once stopped
//         std::cout << e->name() << " " << e->resource_version() << "\n";
//     }
//     std::vector<std::uint8_t> cp = r.checkpoint();     // after stop(): resume with
//     tattler::reader again(cfg, cp);                    // only what changed since
//
//     for (tattler::entry &e : r) { ... }                // the same loop; under C++20
//     for (tattler::entry &e : r | std::views::filter(is_pod)) { ... }   // an input_range
//
// config, reader and entry own their C object (RAII): movable, not
// copyable; reader(tattler_reader *) adopts a reader opened with the C
// calls. Getters return std::string_view borrowed from the entry (valid
// while it lives); on a temporary entry they are deleted, so that
// `std::string_view n = r.next()->name();` (a view into an entry freed at
// the semicolon) does not compile: keep the entry in a variable.
//
// Failures throw tattler::error, which carries the tattler_status and the
// call's own message (what()). Beside each throwing call is a noexcept one
// taking a std::error_code& (tattler::category(), values tattler_status)
// and, where the call has a message, a std::string* for it: the same status
// and the same text the exception would carry. With -fno-exceptions only
// those are declared. A config's setters never throw: the first one that
// fails is kept (config::status(), config::message()) and the open of a
// reader from that config fails with it.
//
// The threading rules are tattler.h's: a reader's calls may run from
// several threads, stop() and wake() from any thread at any time; destroy
// (or close()) the reader once the other threads' calls have returned.
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
#include <iterator>
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
#if __cplusplus >= 202002L && __has_include(<ranges>)
#include <ranges>
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
// error_code holds as "no error"; next() never stores TATTLER_TIMEOUT or
// TATTLER_CLOSED (it returns std::nullopt instead); set_resources() stores
// TATTLER_CLOSED for a stopped reader.
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
// A failed call: what tattler_status it returned, and its message (the
// call's own text; the status's fixed text when the call has none).
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

// The kind of an entry, tattler_change as a scoped enum (same numbers). A
// newer library may send a number this header does not name: compare, or
// print with to_string, never index an array with it.
enum class Change : int {
    None = TATTLER_CHANGE_NONE,
    Add = TATTLER_CHANGE_ADD,
    Update = TATTLER_CHANGE_UPDATE,
    Delete = TATTLER_CHANGE_DELETE,
    Snapshot = TATTLER_CHANGE_SNAPSHOT,
    Synced = TATTLER_CHANGE_SYNCED,
    Error = TATTLER_CHANGE_ERROR,
    Stale = TATTLER_CHANGE_STALE,
    Leading = TATTLER_CHANGE_LEADING,
    Following = TATTLER_CHANGE_FOLLOWING,
};

// "Add", "Update", ... as watch.c prints them (tattler_change_str's names);
// "None" for None, "Unknown" for a number this header does not know.
constexpr std::string_view to_string(Change c) noexcept {
    switch (c) {
    case Change::None: return "None";
    case Change::Add: return "Add";
    case Change::Update: return "Update";
    case Change::Delete: return "Delete";
    case Change::Snapshot: return "Snapshot";
    case Change::Synced: return "Synced";
    case Change::Error: return "Error";
    case Change::Stale: return "Stale";
    case Change::Leading: return "Leading";
    case Change::Following: return "Following";
    }
    return "Unknown";
}

namespace detail {
inline bool failed(tattler_status st) noexcept { return static_cast<int>(st) >= 100; }

// A call's outcome: its status and its message, kept together so that an
// exception's what() and an error_code twin's message are one text.
struct outcome {
    tattler_status status = TATTLER_OK;
    std::string message;

    // The message, or the status's fixed text when the call gave none.
    std::string text() const { return message.empty() ? std::string(tattler_status_str(status)) : message; }
};

// ec and *message from an outcome: set on a failure (or `also`, a
// non-failure the call reports as one), cleared otherwise.
inline void report(const outcome &o, std::error_code &ec, std::string *message,
                   tattler_status also = TATTLER_OK) noexcept {
    if (failed(o.status) || (also != TATTLER_OK && o.status == also)) {
        ec = make_error_code(o.status);
        if (message != nullptr) {
            *message = o.text();  // a failed allocation ends the process (noexcept)
        }
    } else {
        ec.clear();
        if (message != nullptr) {
            message->clear();
        }
    }
}

#if TATTLER_HPP_EXCEPTIONS
inline void check(tattler_status st, const std::string &message = std::string()) {
    if (failed(st)) {
        throw error(st, message);
    }
}
inline void check(const outcome &o, tattler_status also = TATTLER_OK) {
    if (failed(o.status) || (also != TATTLER_OK && o.status == also)) {
        throw error(o.status, o.text());
    }
}
#endif

// A call that writes its error text into a buffer and its size into
// *err_needed: made again with a buffer that fits when the text was cut
// (the calls it wraps change nothing when they fail).
template <class Call>
outcome with_message(Call call) noexcept {
    char err[512] = {0};
    std::size_t needed = 0;
    outcome o;
    o.status = call(err, sizeof err, &needed);
    if (failed(o.status)) {
        if (needed > sizeof err) {
            std::vector<char> full(needed);
            o.status = call(full.data(), full.size(), &needed);
            if (failed(o.status)) {
                o.message = full.data();
            }
        } else {
            o.message = err;
        }
    }
    return o;
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
    // On Leading and Following, this reader's identity in its Lease; "" otherwise.
    std::string_view identity() const & noexcept { return detail::view(tattler_entry_identity(e_)); }
    std::string_view identity() const && = delete;
    // On Leading and Following, the replica holding the Lease now: this
    // reader on Leading; on Following the other holder, "" when nobody does.
    // "" on every other entry.
    std::string_view holder() const & noexcept { return detail::view(tattler_entry_holder(e_)); }
    std::string_view holder() const && = delete;
    // Under leader election, the term the entry was delivered in (the
    // Lease's leaseTransitions when this reader took it), on every entry a
    // leading reader delivers, Leading too; none without leader election and
    // on Following. Fencing: a store shared by replicas keeps the highest
    // term written and refuses a lower one.
    std::optional<std::uint64_t> term() const noexcept {
        std::uint64_t t = 0;
        return tattler_entry_term(e_, &t) ? std::optional<std::uint64_t>(t) : std::nullopt;
    }
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

// A resource with a scope of its own (tattler_config_add_resource_spec):
// only these, not the configuration's namespace and selectors.
struct resource_spec {
    std::string resource;                       // "pods", "apps/v1/deployments", ...
    std::optional<std::string> namespace_;      // none: every namespace
    std::optional<std::string> label_selector;  // "app=web"
    std::optional<std::string> field_selector;  // "spec.nodeName=n1"
    bool metadata_only = false;                 // PartialObjectMetadata: only `metadata`
};

// A configuration: tattler_config with a typed setter per key. The setters
// return *this to chain and never throw: the first one that fails is kept
// (its status and message), the later ones are skipped, and opening a
// reader from the config fails with it. ok(), status() and message() tell
// it before that. A config may be opened any number of times, changed in
// between, and destroyed while its readers run.
class config {
public:
    // A new, empty configuration. Were tattler_config_new to fail (a caught
    // panic), status() says TATTLER_ERR_PANIC and every open fails with it.
    config() noexcept : c_(tattler_config_new()) {
        if (c_ == nullptr) {
            first_.status = TATTLER_ERR_PANIC;
            first_.message = "tattler_config_new failed";
        }
    }
    config(config &&other) noexcept
        : c_(std::exchange(other.c_, nullptr)), first_(std::move(other.first_)) {}
    config &operator=(config &&other) noexcept {
        if (this != &other) {
            tattler_config_free(c_);
            c_ = std::exchange(other.c_, nullptr);
            first_ = std::move(other.first_);
        }
        return *this;
    }
    config(const config &) = delete;
    config &operator=(const config &) = delete;
    ~config() { tattler_config_free(c_); }

    // Where the cluster is: server, or kubeconfig and context, or in_cluster;
    // none of them: as kubectl finds it.
    config &server(std::string_view url) noexcept { return text(tattler_config_set_server, url); }
    config &kubeconfig(std::string_view path) noexcept { return text(tattler_config_set_kubeconfig, path); }
    config &context(std::string_view name) noexcept { return text(tattler_config_set_context, name); }
    config &in_cluster(bool on = true) noexcept { return flag(tattler_config_set_in_cluster, on); }
    // The server's certificate.
    config &ca_file(std::string_view path) noexcept { return text(tattler_config_set_ca_file, path); }
    config &ca_data(std::string_view pem) noexcept { return text(tattler_config_set_ca_data, pem); }
    config &tls_server_name(std::string_view name) noexcept { return text(tattler_config_set_tls_server_name, name); }
    config &insecure(bool on = true) noexcept { return flag(tattler_config_set_insecure, on); }
    // One way to authenticate.
    config &token(std::string_view token) noexcept { return text(tattler_config_set_token, token); }
    config &token_file(std::string_view path) noexcept { return text(tattler_config_set_token_file, path); }
    config &username(std::string_view user) noexcept { return text(tattler_config_set_username, user); }
    config &password(std::string_view password) noexcept { return text(tattler_config_set_password, password); }
    config &client_cert_file(std::string_view path) noexcept { return text(tattler_config_set_client_cert_file, path); }
    config &client_key_file(std::string_view path) noexcept { return text(tattler_config_set_client_key_file, path); }
    // "env" (the default), "none", or an HTTP CONNECT proxy's URL.
    config &proxy(std::string_view proxy) noexcept { return text(tattler_config_set_proxy, proxy); }

    // What to stream, in the order added; names take the namespace,
    // selectors and metadata_only below, specs only their own.
    config &resource(std::string_view name) noexcept {
        return call([&](char *err, std::size_t len, std::size_t *needed) {
            return tattler_config_add_resource(c_, std::string(name).c_str(), err, len, needed);
        });
    }
    config &resource(const resource_spec &spec) noexcept {
        return call([&](char *err, std::size_t len, std::size_t *needed) {
            auto c_str = [](const std::optional<std::string> &s) { return s ? s->c_str() : nullptr; };
            return tattler_config_add_resource_spec(c_, spec.resource.c_str(), c_str(spec.namespace_),
                                                    c_str(spec.label_selector), c_str(spec.field_selector),
                                                    spec.metadata_only, err, len, needed);
        });
    }
    config &namespace_(std::string_view ns) noexcept { return text(tattler_config_set_namespace, ns); }
    config &label_selector(std::string_view s) noexcept { return text(tattler_config_set_label_selector, s); }
    config &field_selector(std::string_view s) noexcept { return text(tattler_config_set_field_selector, s); }
    config &metadata_only(bool on = true) noexcept { return flag(tattler_config_set_metadata_only, on); }

    // What is done to each object.
    config &scrub(bool on) noexcept { return flag(tattler_config_set_scrub, on); }
    config &scrub_secret_data(bool on) noexcept { return flag(tattler_config_set_scrub_secret_data, on); }
    config &drop_managed_fields(bool on = true) noexcept { return flag(tattler_config_set_drop_managed_fields, on); }
    config &event_kind(std::string_view kind) noexcept {
        std::string k(kind);
        return status_only(tattler_config_add_event_kind(c_, k.c_str()));
    }

    // Bounds and pacing (the library's defaults: tattler_config_keys()).
    config &channel_capacity(std::uint64_t n) noexcept { return number(tattler_config_set_channel_capacity, n); }
    config &page_size(std::uint64_t n) noexcept { return number(tattler_config_set_page_size, n); }
    config &max_frame_bytes(std::uint64_t n) noexcept { return number(tattler_config_set_max_frame_bytes, n); }
    config &max_buffered_bytes(std::uint64_t n) noexcept { return number(tattler_config_set_max_buffered_bytes, n); }
    config &gzip(bool on = true) noexcept { return flag(tattler_config_set_gzip, on); }
    config &idle_timeout(std::chrono::seconds d) noexcept { return seconds(tattler_config_set_idle_timeout_secs, d); }
    config &connect_timeout(std::chrono::seconds d) noexcept {
        return seconds(tattler_config_set_connect_timeout_secs, d);
    }
    config &initial_events_timeout(std::chrono::seconds d) noexcept {
        return seconds(tattler_config_set_initial_events_timeout_secs, d);
    }
    config &discovery_interval(std::chrono::seconds d) noexcept {
        return seconds(tattler_config_set_discovery_interval_secs, d);
    }
    config &relist_interval(std::chrono::seconds d) noexcept {
        return seconds(tattler_config_set_relist_interval_secs, d);
    }

    // Every key of a JSON document (tattler_config_set_json): for a
    // document from a file, and the keys without a setter here (exec, shard).
    config &json(std::string_view document) noexcept {
        return call([&](char *err, std::size_t len, std::size_t *needed) {
            return tattler_config_set_json(c_, std::string(document).c_str(), err, len, needed);
        });
    }

    // Whether every setter so far succeeded; else the first failure's
    // status and message (an unknown key in json() names the key it meant).
    bool ok() const noexcept { return first_.status == TATTLER_OK; }
    tattler_status status() const noexcept { return first_.status; }
    const std::string &message() const noexcept { return first_.message; }

    // The C configuration, still owned by this object.
    tattler_config *get() const noexcept { return c_; }

private:
    template <class Call>
    config &call(Call c) noexcept {
        if (ok()) {
            detail::outcome o = detail::with_message(c);
            if (detail::failed(o.status)) {
                first_ = std::move(o);
            }
        }
        return *this;
    }
    config &status_only(tattler_status st) noexcept {
        if (ok() && detail::failed(st)) {
            first_.status = st;
            first_.message = tattler_status_str(st);
        }
        return *this;
    }
    config &text(tattler_status (*set)(tattler_config *, const char *), std::string_view v) noexcept {
        if (!ok()) {
            return *this;
        }
        std::string s(v);  // NUL-terminated (a failed allocation ends the process: noexcept)
        return status_only(set(c_, s.c_str()));
    }
    config &number(tattler_status (*set)(tattler_config *, std::uint64_t), std::uint64_t n) noexcept {
        return ok() ? status_only(set(c_, n)) : *this;
    }
    config &flag(tattler_status (*set)(tattler_config *, bool), bool on) noexcept {
        return ok() ? status_only(set(c_, on)) : *this;
    }
    config &seconds(tattler_status (*set)(tattler_config *, std::uint64_t), std::chrono::seconds d) noexcept {
        if (ok() && d.count() < 0) {
            first_.status = TATTLER_ERR_INVALID_ARG;
            first_.message = "a negative duration";
            return *this;
        }
        return number(set, static_cast<std::uint64_t>(d.count()));
    }

    tattler_config *c_;
    detail::outcome first_;
};

// A running reader: opened from a config (or adopted from the C calls),
// tattler_close in the destructor.
class reader {
public:
#if TATTLER_HPP_EXCEPTIONS
    // Opens a reader from a configuration (tattler_open_config); with a
    // checkpoint, resumes where an earlier reader's checkpoint() was taken
    // (an empty one: a full sync). Throws tattler::error with the reason:
    // the config's first failed setter, a bad key or file,
    // TATTLER_ERR_INVALID_CHECKPOINT for bytes it cannot read (open without
    // them then).
    explicit reader(const config &cfg) : reader(cfg, nullptr, 0) {}
    reader(const config &cfg, const std::vector<std::uint8_t> &checkpoint)
        : reader(cfg, checkpoint.data(), checkpoint.size()) {}
    reader(const config &cfg, const std::uint8_t *checkpoint, std::size_t len) {
        detail::check(open_into(cfg, checkpoint, len));
    }

    // The same from a JSON document (config().json(document)).
    explicit reader(std::string_view config_json) : reader(config_json, nullptr, 0) {}
    reader(std::string_view config_json, const std::vector<std::uint8_t> &checkpoint)
        : reader(config_json, checkpoint.data(), checkpoint.size()) {}
    reader(std::string_view config_json, const std::uint8_t *checkpoint, std::size_t len)
        : reader(from_json(config_json), checkpoint, len) {}
#endif

    // Adopts a reader opened with the C calls (tattler_open_config): this
    // object closes it. NULL makes an empty reader.
    explicit reader(tattler_reader *adopted) noexcept : r_(adopted) {}

    // An empty reader (as after a move or a failed open): every call on it
    // fails with TATTLER_ERR_NULL_ARG. Assign an opened one to it.
    reader() noexcept = default;

    // The non-throwing opens: a reader, or an empty one with `ec` set (a
    // tattler_status of tattler::category()) and, when `message` is not
    // NULL, the reason in *message (the text the throwing open's what()
    // would be).
    static reader open(const config &cfg, std::error_code &ec, std::string *message = nullptr) noexcept {
        return open(cfg, nullptr, 0, ec, message);
    }
    static reader open(const config &cfg, const std::uint8_t *checkpoint, std::size_t len, std::error_code &ec,
                       std::string *message = nullptr) noexcept {
        reader r;
        detail::report(r.open_into(cfg, checkpoint, len), ec, message);
        return r;
    }
    static reader open(std::string_view config_json, std::error_code &ec, std::string *message = nullptr) noexcept {
        return open(config_json, nullptr, 0, ec, message);
    }
    static reader open(std::string_view config_json, const std::uint8_t *checkpoint, std::size_t len,
                       std::error_code &ec, std::string *message = nullptr) noexcept {
        return open(from_json(config_json), checkpoint, len, ec, message);
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
    maybe_entry next_for(std::chrono::milliseconds timeout) { return next_for_ms(ms(timeout)); }

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
        return next_for_ms(ms(timeout), ec);
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

    // What end() returns: the iterator equals it once next() said there is
    // no more (the reader stopped and drained, or a wake()).
    struct sentinel {};

    // An input iterator over next(): `for (tattler::entry &e : r)` ends
    // where `while (auto e = r.next())` does. Move-only: the entry it holds
    // is freed before the next one is waited for. Under C++20 it is a
    // std::input_iterator and reader a std::ranges::input_range, so views
    // (std::views::filter, take_while, ...) apply. With exceptions, a
    // failure throws from ++ (and begin()); without them it ends the loop
    // (call next(ec) to learn it).
    class iterator {
    public:
        using iterator_concept = std::input_iterator_tag;
        using iterator_category = std::input_iterator_tag;
        using value_type = entry;
        using difference_type = std::ptrdiff_t;
        using pointer = entry *;
        using reference = entry &;

        iterator() noexcept = default;
        explicit iterator(reader *r) : r_(r) { advance(); }
        iterator(iterator &&) noexcept = default;
        iterator &operator=(iterator &&) noexcept = default;
        iterator(const iterator &) = delete;
        iterator &operator=(const iterator &) = delete;

        entry &operator*() const noexcept { return *current_; }
        entry *operator->() const noexcept { return &*current_; }
        iterator &operator++() {
            advance();
            return *this;
        }
        void operator++(int) { advance(); }

        friend bool operator==(const iterator &i, sentinel) noexcept { return !i.current_.has_value(); }
#if __cplusplus < 202002L
        friend bool operator==(sentinel s, const iterator &i) noexcept { return i == s; }
        friend bool operator!=(const iterator &i, sentinel s) noexcept { return !(i == s); }
        friend bool operator!=(sentinel s, const iterator &i) noexcept { return !(i == s); }
#endif

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
        // Mutable: an input iterator's * is const and still hands out the
        // entry to change (move from, release).
        mutable std::optional<entry> current_;
    };
    iterator begin() { return iterator(this); }
    sentinel end() const noexcept { return sentinel{}; }

    // Changes the streamed resources: a JSON array as the configuration's
    // "resources", names and objects, e.g.
    // R"(["configmaps",{"resource":"pods","field_selector":"spec.nodeName=n1"}])"
    // (see tattler_set_resources_ex); true when something changed. A stopped
    // reader is TATTLER_CLOSED. Throws tattler::error (a bad name or key,
    // TATTLER_CLOSED, or from inside the log callback).
#if TATTLER_HPP_EXCEPTIONS
    bool set_resources(std::string_view resources_json, bool force = false) {
        bool changed = false;
        detail::check(set_resources_into(resources_json, force, changed), TATTLER_CLOSED);
        return changed;
    }
#endif
    // The non-throwing set_resources: `ec` set on a failure and on
    // TATTLER_CLOSED, with the same text in *message; false then.
    bool set_resources(std::string_view resources_json, bool force, std::error_code &ec,
                       std::string *message = nullptr) noexcept {
        bool changed = false;
        detail::outcome o = set_resources_into(resources_json, force, changed);
        detail::report(o, ec, message, TATTLER_CLOSED);
        return o.status == TATTLER_OK && changed;
    }

#if TATTLER_HPP_EXCEPTIONS
    // The counters of each stream, as tattler_stats_json's JSON array.
    std::string stats_json() const { return text_or_throw(tattler_stats_json); }

    // The counters in the Prometheus text format, for an agent's /metrics
    // (see tattler_metrics_text).
    std::string metrics_text() const { return text_or_throw(tattler_metrics_text); }

    // A checkpoint for reader(cfg, checkpoint) after a restart (see
    // tattler_checkpoint): exact once stop() was called and next() returned
    // std::nullopt.
    std::vector<std::uint8_t> checkpoint() const {
        std::vector<std::uint8_t> cp;
        detail::check(checkpoint_into(cp));
        return cp;
    }

    // Closes now (the destructor then does nothing): stops, joins the
    // threads, frees. Throws tattler::error if the library reports a failure.
    void close() { detail::check(tattler_close(std::exchange(r_, nullptr))); }
#endif
    // The non-throwing stats_json, metrics_text, checkpoint and close: `ec`
    // set on a failure (and an empty result).
    std::string stats_json(std::error_code &ec) const noexcept { return text_or_ec(tattler_stats_json, ec); }
    std::string metrics_text(std::error_code &ec) const noexcept { return text_or_ec(tattler_metrics_text, ec); }
    std::vector<std::uint8_t> checkpoint(std::error_code &ec) const noexcept {
        std::vector<std::uint8_t> cp;
        detail::report(checkpoint_into(cp), ec, nullptr);
        return cp;
    }
    void close(std::error_code &ec) noexcept {
        detail::outcome o;
        o.status = tattler_close(std::exchange(r_, nullptr));
        detail::report(o, ec, nullptr);
    }

    // The C reader, still owned by this object (for the C calls).
    tattler_reader *get() const noexcept { return r_; }
    // Gives up ownership: the caller closes it with tattler_close.
    tattler_reader *release() noexcept { return std::exchange(r_, nullptr); }

private:
    static config from_json(std::string_view config_json) noexcept {
        config cfg;
        cfg.json(config_json);
        return cfg;
    }

    static std::int64_t ms(std::chrono::milliseconds timeout) noexcept {
        return timeout.count() < 0 ? 0 : static_cast<std::int64_t>(timeout.count());
    }

    // tattler_open_config into r_ (the config's first failed setter, if any,
    // instead).
    detail::outcome open_into(const config &cfg, const std::uint8_t *checkpoint, std::size_t len) noexcept {
        if (!cfg.ok()) {
            return detail::outcome{cfg.status(), cfg.message()};
        }
        return detail::with_message([&](char *err, std::size_t n, std::size_t *needed) {
            return tattler_open_config(cfg.get(), checkpoint, len, &r_, err, n, needed);
        });
    }

    detail::outcome set_resources_into(std::string_view json, bool force, bool &changed) noexcept {
        if (r_ == nullptr) {
            return moved_from();
        }
        std::string s(json);
        return detail::with_message([&](char *err, std::size_t n, std::size_t *needed) {
            return tattler_set_resources_ex(r_, s.c_str(), force, &changed, err, n, needed);
        });
    }

    // What a call on an empty reader says.
    static detail::outcome moved_from() {
        return detail::outcome{TATTLER_ERR_NULL_ARG, "the reader was moved from or closed"};
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
        detail::outcome o;
        o.status = wait(ms, out);
        detail::report(o, ec, nullptr);
        return out;
    }

#if TATTLER_HPP_EXCEPTIONS
    maybe_entry next_for_ms(std::int64_t ms) {
        maybe_entry out;
        tattler_status st = wait(ms, out);
        if (st == TATTLER_ERR_NULL_ARG && r_ == nullptr) {
            detail::check(moved_from());
        }
        detail::check(st);
        return out;
    }
#endif

    using text_call = tattler_status (*)(tattler_reader *, char *, std::size_t, std::size_t *);

    // A NUL-terminated text a call writes into a buffer (stats, metrics).
    detail::outcome text_into(text_call call, std::string &out) const noexcept {
        if (r_ == nullptr) {
            return moved_from();
        }
        std::vector<char> buf(4096);
        for (;;) {
            std::size_t needed = 0;
            detail::outcome o;
            o.status = call(r_, buf.data(), buf.size(), &needed);
            if (o.status == TATTLER_OK) {
                out.assign(buf.data(), needed - 1);
                return o;
            }
            if (o.status != TATTLER_ERR_BUFFER_TOO_SMALL) {
                return o;
            }
            buf.resize(needed + 256);  // counters may grow between two calls
        }
    }

    detail::outcome checkpoint_into(std::vector<std::uint8_t> &cp) const noexcept {
        if (r_ == nullptr) {
            return moved_from();
        }
        for (;;) {
            std::size_t needed = 0;
            detail::outcome o;
            o.status = tattler_checkpoint(r_, cp.data(), cp.size(), &needed);
            if (o.status == TATTLER_OK) {
                cp.resize(needed);
                return o;
            }
            if (o.status != TATTLER_ERR_BUFFER_TOO_SMALL) {
                cp.clear();
                return o;
            }
            cp.resize(needed + needed / 8 + 256);  // it may grow while the reader runs
        }
    }

    std::string text_or_ec(text_call call, std::error_code &ec) const noexcept {
        std::string out;
        detail::report(text_into(call, out), ec, nullptr);
        return out;
    }

#if TATTLER_HPP_EXCEPTIONS
    std::string text_or_throw(text_call call) const {
        std::string out;
        detail::check(text_into(call, out));
        return out;
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

inline outcome set_log_function(log_function f) noexcept {
    if (tattler_in_log_callback()) {
        // Checked before taking the lock: a set_log_function waiting in the
        // library for this very call to return may hold it.
        return outcome{TATTLER_ERR_REENTRANT, "set_log_function cannot run inside the log function"};
    }
    log_state &state = logs();
    std::lock_guard<std::mutex> hold(state.lock);
    std::unique_ptr<log_function> next = f ? std::make_unique<log_function>(std::move(f)) : nullptr;
    outcome o;
    o.status = next ? tattler_set_log_callback(log_trampoline, next.get()) : tattler_set_log_callback(nullptr, nullptr);
    if (!failed(o.status)) {
        state.current = std::move(next);  // the old one is no longer called: free it
    }
    return o;
}
}  // namespace detail

#if TATTLER_HPP_EXCEPTIONS
// Routes tattler's log lines (process-wide) to f; an empty f turns them off.
// Once it returns, the previous function is never called again. Throws
// tattler::error: TATTLER_ERR_LOGGER_IN_USE (another Rust logger), or
// TATTLER_ERR_REENTRANT when called from inside a log function.
inline void set_log_function(log_function f) { detail::check(detail::set_log_function(std::move(f))); }

// The most detailed level passed to the log function (TATTLER_LOG_INFO by
// default). Throws tattler::error (TATTLER_ERR_INVALID_ARG) for a level
// outside TATTLER_LOG_OFF to TATTLER_LOG_TRACE.
inline void set_log_level(tattler_log_level level) { detail::check(tattler_set_log_level(static_cast<int>(level))); }
#endif

// The non-throwing set_log_function and set_log_level: `ec` set on a
// failure, and *message (when not NULL) the text the exception would carry.
inline void set_log_function(log_function f, std::error_code &ec, std::string *message = nullptr) noexcept {
    detail::report(detail::set_log_function(std::move(f)), ec, message);
}
inline void set_log_level(tattler_log_level level, std::error_code &ec) noexcept {
    detail::outcome o;
    o.status = tattler_set_log_level(static_cast<int>(level));
    detail::report(o, ec, nullptr);
}

}  // namespace tattler

namespace std {
// tattler_status is an error code enum: `ec == TATTLER_ERR_INVALID_CONFIG`.
template <>
struct is_error_code_enum<tattler_status> : true_type {};
}  // namespace std

// Found by argument-dependent lookup for the global C enum.
inline std::error_code make_error_code(tattler_status st) noexcept { return tattler::make_error_code(st); }

#endif  // TATTLER_HPP
