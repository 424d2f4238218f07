// hpp_test.cpp - tattler.hpp against the fake apiserver: RAII, moves,
// string_view getters, exceptions with their status, next_for and wake,
// set_resources, stats, close, and the log function's reentrancy rule.
// ffi/tests/c_programs.rs builds it with -Werror under AddressSanitizer +
// UBSan and runs it.
//
// usage: hpp_test SERVER     (a fake apiserver with three pods)
// Prints "hpp_test: ok" and exits 0, or names each failed check and exits 1.
#include <atomic>
#include <chrono>
#include <future>
#include <cstdio>
#include <string>
#include <thread>
#include <type_traits>

#include <tattler.hpp>

static_assert(!std::is_copy_constructible_v<tattler::reader>, "reader is not copyable");
static_assert(!std::is_copy_assignable_v<tattler::reader>, "reader is not copyable");
static_assert(std::is_nothrow_move_constructible_v<tattler::reader>, "reader is movable");
static_assert(std::is_nothrow_move_assignable_v<tattler::reader>, "reader is movable");
static_assert(!std::is_copy_constructible_v<tattler::entry>, "entry is not copyable");
static_assert(std::is_nothrow_move_constructible_v<tattler::entry>, "entry is movable");
static_assert(std::is_same_v<decltype(std::declval<tattler::entry &>().name()), std::string_view>,
              "getters are string_views");

// The dangling view `std::string_view n = r.next()->name();` must not
// compile: a getter's view on a temporary entry, and -> or * on a temporary
// next() result, are deleted.
template <class T, class = void>
struct name_compiles : std::false_type {};
template <class T>
struct name_compiles<T, std::void_t<decltype(std::declval<T>().name())>> : std::true_type {};
template <class T, class = void>
struct arrow_name_compiles : std::false_type {};
template <class T>
struct arrow_name_compiles<T, std::void_t<decltype(std::declval<T>()->name())>> : std::true_type {};
template <class T, class = void>
struct star_name_compiles : std::false_type {};
template <class T>
struct star_name_compiles<T, std::void_t<decltype((*std::declval<T>()).name())>> : std::true_type {};
static_assert(name_compiles<tattler::entry &>::value && name_compiles<const tattler::entry &>::value,
              "getters work on an entry in a variable");
static_assert(!name_compiles<tattler::entry>::value && !name_compiles<tattler::entry &&>::value &&
                  !name_compiles<const tattler::entry &&>::value,
              "getters returning views are deleted on a temporary entry");
static_assert(std::is_same_v<decltype(std::declval<tattler::reader &>().next()), tattler::maybe_entry>,
              "next() returns maybe_entry");
static_assert(arrow_name_compiles<tattler::maybe_entry &>::value, "e->name() on a kept result");
static_assert(!arrow_name_compiles<tattler::maybe_entry>::value && !star_name_compiles<tattler::maybe_entry>::value,
              "r.next()->name() and (*r.next()).name() do not compile");
static_assert(std::is_convertible_v<tattler::maybe_entry, std::optional<tattler::entry>>,
              "a next() result moves into a std::optional<entry>");
static_assert(noexcept(tattler::reader::open(std::declval<const std::string &>(), std::declval<std::error_code &>())),
              "the error_code open is noexcept");
static_assert(noexcept(std::declval<tattler::reader &>().next(std::declval<std::error_code &>())),
              "the error_code next is noexcept");
static_assert(tattler::to_string(tattler::Change::Snapshot) == "Snapshot" &&
                  tattler::to_string(static_cast<tattler::Change>(99)) == "None",
              "to_string(Change)");
static_assert(static_cast<int>(tattler::Change::Error) == TATTLER_CHANGE_ERROR, "Change has tattler_change's numbers");

namespace {

int failures = 0;

void check(bool ok, const char *what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

template <class F>
tattler_status status_of(F &&f) {
    try {
        f();
    } catch (const tattler::error &e) {
        return e.status();
    }
    return TATTLER_OK;
}

// What set_log_function threw inside the log function, once.
std::promise<tattler_status> reentrant;
std::atomic_flag reentrant_tried = ATOMIC_FLAG_INIT;

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: hpp_test SERVER\n");
        return 2;
    }
    const std::string server = argv[1];
    const std::string pods = "{\"server\":\"" + server + "\",\"resources\":[\"pods\"]}";

    check(tattler::version() == tattler_version() && !tattler::version().empty(), "version");
    try {
        tattler::reader bad("{\"server\":\"" + server + "\",\"resources\":[\"pods\"],\"tokn\":1}");
        check(false, "a bad configuration throws");
    } catch (const tattler::error &e) {
        check(e.status() == TATTLER_ERR_INVALID_CONFIG && std::string(e.what()).find("`tokn`") != std::string::npos,
              "a bad configuration throws INVALID_CONFIG naming the key");
    }

    // The log function: set_log_function from inside it throws REENTRANT.
    std::future<tattler_status> reentrant_status = reentrant.get_future();
    tattler::set_log_function([](tattler_log_level, std::string_view, std::string_view msg) {
        if (msg.find("synced") != std::string_view::npos && !reentrant_tried.test_and_set()) {
            reentrant.set_value(status_of([] { tattler::set_log_function(nullptr); }));
        }
    });

    tattler::reader r(pods);
    int adds = 0;
    for (;;) {
        auto e = r.next_for(std::chrono::seconds(10));
        if (!e) {
            check(false, "the first sync arrives");
            break;
        }
        if (e->change() == TATTLER_CHANGE_SYNCED) {
            check(e->resource() == "pods" && e->version() == "v1" && e->group().empty() && e->name().empty() &&
                      e->object().empty(),
                  "the Synced entry");
            break;
        }
        adds += e->change() == TATTLER_CHANGE_ADD && !e->namespace_().empty() && !e->name().empty() &&
                e->kind() == "Pod" && !e->uid().empty() && e->object().substr(0, 1) == "{" &&
                e->object().find(e->name()) != std::string_view::npos && e->resource_version_number() > 0 && !e->resource_version().empty();
    }
    check(adds == 3, "three Adds with their fields as string_views");
    // The "synced" line may come just after the Synced entry: wait for it.
    check(reentrant_status.wait_for(std::chrono::seconds(10)) == std::future_status::ready &&
              reentrant_status.get() == TATTLER_ERR_REENTRANT,
          "set_log_function in the log function throws REENTRANT");

    // Moves: the moved-from reader refuses calls with an exception.
    tattler::reader moved(std::move(r));
    check(status_of([&] { (void)r.next_for(std::chrono::milliseconds(0)); }) == TATTLER_ERR_NULL_ARG,
          "a moved-from reader throws NULL_ARG");
    check(!moved.next_for(std::chrono::milliseconds(0)) && !moved.closed(), "nothing ready; not closed");

    // wake() from another thread ends a next() wait (no timeout), not the reader.
    {
        auto t1 = std::chrono::steady_clock::now();
        std::thread waker1([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            moved.wake();
        });
        auto none = moved.next();
        waker1.join();
        check(!none && !moved.closed() && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(20),
              "wake ends a next() wait: nullopt, not closed");
    }

    // The non-throwing API: open with an error_code and the message.
    {
        std::error_code ec;
        std::string message;
        // A key this long makes a text longer than any first buffer: the
        // whole of it still arrives.
        const std::string long_key(1500, 'k');
        tattler::reader bad = tattler::reader::open(
            "{\"server\":\"" + server + "\",\"resources\":[\"pods\"],\"" + long_key + "\":1}", ec, &message);
        check(!bad && ec == TATTLER_ERR_INVALID_CONFIG && ec.category() == tattler::category() &&
                  std::string(ec.category().name()) == "tattler" && ec.message() == "invalid configuration" &&
                  message.find("`" + long_key + "`") != std::string::npos &&
                  message.find("lists every key)") != std::string::npos,
              "open(json, ec) reports INVALID_CONFIG and the whole message");
        auto none = bad.next(ec);
        check(!none && ec == TATTLER_ERR_NULL_ARG, "next(ec) on an empty reader sets NULL_ARG");
        tattler::reader good = tattler::reader::open(pods, ec);
        check(bool(good) && !ec, "open(json, ec) opens");
        check(good.fd() >= 0 && good.fd() == tattler_fd(good.get()), "fd() is tattler_fd");
        int seen = 0;
        for (tattler::entry &e : good) {
            if (e.type() == tattler::Change::Synced) {
                check(tattler::to_string(e.type()) == "Synced" && seen == 3, "the iterator: three Adds, then Synced");
                good.stop();
            } else {
                seen += e.type() == tattler::Change::Add;
            }
        }
        check(good.closed(), "the range-for ends once the reader is stopped and drained");
        good.close(ec);
        check(!ec && !good, "close(ec)");
        try {
            tattler::reader thrower("{\"resources\":[\"pods\"],\"server\":1}");
            check(false, "a bad server throws");
        } catch (const tattler::error &e) {
            check(e.code() == TATTLER_ERR_INVALID_CONFIG, "error::code() is the status as an error_code");
        }
    }

    // wake() from another thread ends one next_for wait, not the reader.
    auto t0 = std::chrono::steady_clock::now();
    std::thread waker([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        moved.wake();
    });
    auto woken = moved.next_for(std::chrono::seconds(30));
    waker.join();
    check(!woken && !moved.closed() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20),
          "wake ends a next_for wait early");

    check(moved.set_resources("[\"pods\",\"nodes\"]"), "set_resources adds nodes");
    check(status_of([&] { moved.set_resources("[\"pods!\"]"); }) == TATTLER_ERR_INVALID_RESOURCE,
          "a bad resource name throws INVALID_RESOURCE");
    for (;;) {
        auto e = moved.next_for(std::chrono::seconds(10));
        if (!e || (e->change() == TATTLER_CHANGE_SYNCED && e->resource() == "nodes")) {
            check(bool(e), "nodes synced");
            break;
        }
    }
    std::string stats = moved.stats_json();
    check(stats.find("\"v1/nodes\"") != std::string::npos && stats.back() == ']', "stats_json");
    std::string metrics = moved.metrics_text();
    check(metrics.find("\ntattler_synced{resource=\"v1/nodes\"} 1\n") != std::string::npos &&
              metrics.rfind("# HELP tattler_events_total ", 0) == 0 && metrics.back() == '\n',
          "metrics_text");
    // Objects in set_resources: a field-selected node, metadata only.
    check(moved.set_resources(R"(["pods",{"resource":"nodes","field_selector":"metadata.name=none","metadata_only":true}])"),
          "set_resources with an object");
    for (;;) {
        auto e = moved.next_for(std::chrono::seconds(10));
        if (!e || (e->change() == TATTLER_CHANGE_SYNCED && e->resource() == "nodes")) {
            check(bool(e), "the selected nodes synced");
            break;
        }
    }
    check(moved.metrics_text().find("field_selector=\"metadata.name=none\",metadata_only=\"true\"") != std::string::npos,
          "metrics label the scope");
    check(status_of([&] { moved.set_resources(R"([{"resource":"pods","nmespace":"x"}])"); }) ==
              TATTLER_ERR_INVALID_RESOURCE,
          "an unknown key throws INVALID_RESOURCE");

    // An entry outlives its reader; stop then drain says closed().
    tattler::reader other(pods);
    std::optional<tattler::entry> kept = other.next();
    other.stop();
    while (other.next()) {
    }
    check(other.closed(), "after stop, next() drains to nullopt and closed()");
    other.close();
    check(status_of([&] { (void)other.next(); }) == TATTLER_ERR_NULL_ARG, "a closed reader throws NULL_ARG");
    check(kept && kept->change() == TATTLER_CHANGE_ADD && !kept->name().empty(), "an entry outlives its reader");

    // A checkpoint after stop and drain; a reader resumed from it starts
    // with Synced and nothing else (nothing changed).
    {
        tattler::reader first(pods);
        while (auto e = first.next_for(std::chrono::seconds(10))) {
            if (e->change() == TATTLER_CHANGE_SYNCED) {
                break;
            }
        }
        first.stop();
        while (first.next()) {
        }
        std::vector<std::uint8_t> cp = first.checkpoint();
        check(cp.size() > 20 && cp.front() == '{' && cp.back() == '}', "checkpoint bytes");
        tattler::reader again(pods, cp);
        auto e = again.next_for(std::chrono::seconds(10));
        check(e && e->change() == TATTLER_CHANGE_SYNCED && !again.next_for(std::chrono::milliseconds(300)),
              "resumed: Synced at once, nothing else");
        std::vector<std::uint8_t> bad = {'{', 'x'};
        try {
            tattler::reader broken(pods, bad);
            check(false, "a bad checkpoint throws");
        } catch (const tattler::error &err) {
            check(err.status() == TATTLER_ERR_INVALID_CHECKPOINT &&
                      std::string(err.what()).find("checkpoint") != std::string::npos,
                  "a bad checkpoint throws INVALID_CHECKPOINT");
        }
    }

    // Move-assignment closes the target's reader first.
    tattler::reader a(pods), b(pods);
    a = std::move(b);
    check(a.next_for(std::chrono::seconds(10)).has_value(), "the moved-in reader streams");

    tattler::set_log_function(nullptr);
    moved.close();
    if (failures != 0) {
        std::printf("hpp_test: %d FAILED\n", failures);
        return 1;
    }
    std::printf("hpp_test: ok\n");
    return 0;
}
