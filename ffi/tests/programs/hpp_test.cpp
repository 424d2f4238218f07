// hpp_test.cpp - tattler.hpp against the fake apiserver: the typed config
// and its kept first failure, adopting a C reader, RAII, moves, string_view
// getters, exceptions and their error_code twins saying the same status and
// text, next_for and wake, set_resources, stats, close, the log function's
// reentrancy rule, and under C++20 the reader as an input_range under
// std::views. ffi/tests/c_programs.rs builds it with -Werror under
// AddressSanitizer + UBSan, as C++17 and C++20, and runs it.
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

#if __cplusplus >= 202002L
#include <ranges>
static_assert(std::input_iterator<tattler::reader::iterator>, "the iterator is a C++20 input_iterator");
static_assert(std::ranges::input_range<tattler::reader>, "a reader is a C++20 input_range");
#endif
static_assert(!std::is_copy_constructible_v<tattler::config>, "config is not copyable");
static_assert(std::is_nothrow_move_constructible_v<tattler::config>, "config is movable");
static_assert(noexcept(std::declval<tattler::config &>().server(std::string_view())), "setters never throw");
static_assert(noexcept(std::declval<tattler::reader &>().stats_json(std::declval<std::error_code &>())) &&
                  noexcept(std::declval<tattler::reader &>().metrics_text(std::declval<std::error_code &>())) &&
                  noexcept(std::declval<tattler::reader &>().checkpoint(std::declval<std::error_code &>())) &&
                  noexcept(tattler::set_log_level(TATTLER_LOG_INFO, std::declval<std::error_code &>())),
              "every throwing call has a noexcept error_code twin");

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
static_assert(std::is_same_v<decltype(std::declval<tattler::entry &>().term()), std::optional<std::uint64_t>> &&
                  std::is_same_v<decltype(std::declval<tattler::entry &>().holder()), std::string_view>,
              "term() is an optional, holder() a string_view");
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
                  tattler::to_string(tattler::Change::None) == "None" &&
                  tattler::to_string(tattler::Change::Stale) == "Stale" && tattler::to_string(tattler::Change::Following) == "Following" && tattler::to_string(static_cast<tattler::Change>(10)) == "Unknown" &&
                  tattler::to_string(static_cast<tattler::Change>(99)) == "Unknown",
              "to_string(Change): Unknown for a change newer than the header");
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

// What a throwing call threw: its status and what().
template <class F>
std::pair<tattler_status, std::string> thrown(F &&f) {
    try {
        f();
    } catch (const tattler::error &e) {
        return {e.status(), e.what()};
    }
    return {TATTLER_OK, ""};
}

// Reads until the Synced of `resource`; the Adds before it.
int until_synced(tattler::reader &r, std::string_view resource) {
    int adds = 0;
    while (auto e = r.next_for(std::chrono::seconds(10))) {
        if (e->type() == tattler::Change::Synced && e->resource() == resource) {
            return adds;
        }
        adds += e->type() == tattler::Change::Add;
    }
    return -1;
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
    bool no_election = true;
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
        no_election = no_election && !e->term() && e->holder().empty() && e->identity().empty();
        adds += e->change() == TATTLER_CHANGE_ADD && !e->namespace_().empty() && !e->name().empty() &&
                e->kind() == "Pod" && !e->uid().empty() && e->object().substr(0, 1) == "{" &&
                e->object().find(e->name()) != std::string_view::npos && e->resource_version_number() > 0 && !e->resource_version().empty();
    }
    check(adds == 3, "three Adds with their fields as string_views");
    check(no_election, "no leader election: no term, holder or identity");
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

    // The typed config: setters chain, a reader opens from it.
    {
        tattler::config cfg;
        cfg.server(server).resource("pods").channel_capacity(8).scrub(false).idle_timeout(std::chrono::minutes(2));
        check(cfg.ok() && cfg.status() == TATTLER_OK && cfg.message().empty(), "typed setters chain");
        tattler::reader typed(cfg);
        check(until_synced(typed, "pods") == 3, "a reader opens from a typed config");
        // A spec of its own, and a document merged in.
        tattler::config spec;
        spec.json("{\"server\":\"" + server + "\"}")
            .resource(tattler::resource_spec{"nodes", std::nullopt, std::nullopt, "metadata.name=none", true});
        tattler::reader nodes(spec);
        check(until_synced(nodes, "nodes") == 0 &&
                  nodes.metrics_text().find("field_selector=\"metadata.name=none\",metadata_only=\"true\"") !=
                      std::string::npos,
              "resource_spec and json()");
    }

    // A config keeps its first failure; the open reports it, thrown or as
    // an error_code, with the same status and text.
    {
        tattler::config bad;
        bad.server(server).json(R"({"sever":"x"})").resource("pods!").channel_capacity(1);
        check(!bad.ok() && bad.status() == TATTLER_ERR_INVALID_CONFIG &&
                  bad.message().find("unknown key `sever` (did you mean `server`?)") != std::string::npos,
              "the first failed setter is kept: did you mean");
        auto [st, what] = thrown([&] { tattler::reader r(bad); });
        std::error_code ec;
        std::string message;
        tattler::reader none = tattler::reader::open(bad, ec, &message);
        check(!none && st == bad.status() && what == bad.message() && ec == st && message == what,
              "the open throws, or sets ec and the message, with the config's failure");
        tattler::config bad_resource;
        bad_resource.server(server).resource("pods!");
        check(bad_resource.status() == TATTLER_ERR_INVALID_RESOURCE &&
                  bad_resource.message().find("\"pods!\"") != std::string::npos,
              "a bad resource name is the config's failure");
    }

    // A reader opened with the C builder, adopted.
    {
        tattler_config *c = tattler_config_new();
        tattler_config_set_server(c, server.c_str());
        tattler_config_add_resource(c, "pods", nullptr, 0, nullptr);
        tattler_reader *raw = nullptr;
        tattler_status st = tattler_open_config(c, nullptr, 0, &raw, nullptr, 0, nullptr);
        tattler_config_free(c);
        tattler::reader adopted(raw);
        check(st == TATTLER_OK && bool(adopted) && adopted.get() == raw && until_synced(adopted, "pods") == 3,
              "reader(tattler_reader *) adopts a C reader");
        tattler_reader *back = adopted.release();
        check(!adopted && back == raw && tattler_close(back) == TATTLER_OK, "release() gives it back");
    }

    // Every throwing call has a twin that says the same: status and text.
    {
        tattler::reader r(pods);
        until_synced(r, "pods");
        const std::string_view bad_list = R"([{"resource":"pods","nmespace":"x"}])";
        auto [st, what] = thrown([&] { r.set_resources(bad_list); });
        std::error_code ec;
        std::string message;
        bool changed = r.set_resources(bad_list, false, ec, &message);
        check(!changed && st == TATTLER_ERR_INVALID_RESOURCE && ec == st && message == what &&
                  message.find("`resources[0].nmespace`") != std::string::npos,
              "set_resources(ec, &message) keeps the message the exception carries");
        check(r.set_resources(std::string_view(R"(["pods","nodes"])"), false, ec, &message) && !ec && message.empty(),
              "set_resources(ec) clears them on success");
        check(!r.stats_json(ec).empty() && !ec && !r.metrics_text(ec).empty() && !ec, "stats_json(ec), metrics_text(ec)");
        r.stop();
        while (r.next()) {
        }
        auto stopped = thrown([&] { r.set_resources(R"(["pods"])"); });
        r.set_resources(R"(["pods"])", false, ec, &message);
        check(stopped.first == TATTLER_CLOSED && ec == TATTLER_CLOSED && message == stopped.second,
              "a stopped reader: TATTLER_CLOSED both ways, the same text");
        std::vector<std::uint8_t> cp = r.checkpoint(ec);
        check(!ec && cp == r.checkpoint(), "checkpoint(ec)");
        tattler::reader empty;
        check(empty.stats_json(ec).empty() && ec == TATTLER_ERR_NULL_ARG && empty.metrics_text(ec).empty() &&
                  ec == TATTLER_ERR_NULL_ARG && empty.checkpoint(ec).empty() && ec == TATTLER_ERR_NULL_ARG,
              "the twins on an empty reader: NULL_ARG");
        auto level = thrown([] { tattler::set_log_level(static_cast<tattler_log_level>(9)); });
        tattler::set_log_level(static_cast<tattler_log_level>(9), ec);
        check(level.first == TATTLER_ERR_INVALID_ARG && ec == level.first && ec.message() == level.second,
              "set_log_level: the same status both ways");
        tattler::set_log_level(TATTLER_LOG_INFO, ec);
        check(!ec, "set_log_level(ec)");
    }

    // Leader election on a Lease nobody held: Following (no holder, no
    // term), then Leading in term 0, whose term every entry carries.
    {
        tattler::reader elected("{\"server\":\"" + server + "\",\"resources\":[\"pods\"],"
                                "\"leader_election\":{\"namespace\":\"ns\",\"lease\":\"hpp\",\"identity\":\"me\"}}");
        auto following = elected.next_for(std::chrono::seconds(10));
        check(following && following->type() == tattler::Change::Following && following->identity() == "me" &&
                  following->holder().empty() && !following->term(),
              "Following: this reader's identity, no holder, no term");
        auto leading = elected.next_for(std::chrono::seconds(10));
        check(leading && leading->type() == tattler::Change::Leading && leading->holder() == "me" &&
                  leading->term() == std::optional<std::uint64_t>(0),
              "Leading: this reader holds the Lease, in term 0");
        int in_term = 0;
        while (auto e = elected.next_for(std::chrono::seconds(10))) {
            in_term += e->term() == std::optional<std::uint64_t>(0) && e->holder().empty();
            if (e->type() == tattler::Change::Synced) {
                break;
            }
        }
        check(in_term == 4, "three Adds and Synced carry the term");
    }

#if __cplusplus >= 202002L
    // C++20: views over a reader, e.g. only the Synced entries.
    {
        tattler::reader r(pods);
        int synced = 0;
        auto is_synced = [](const tattler::entry &e) { return e.type() == tattler::Change::Synced; };
        for (tattler::entry &e : r | std::views::filter(is_synced)) {
            synced += e.resource() == "pods";
            r.stop();
        }
        check(synced == 1 && r.closed(), "std::views::filter over a reader");
    }
#endif

    std::error_code off;
    tattler::set_log_function(nullptr, off);
    check(!off, "set_log_function(nullptr, ec)");
    moved.close();
    if (failures != 0) {
        std::printf("hpp_test: %d FAILED\n", failures);
        return 1;
    }
    std::printf("hpp_test: ok\n");
    return 0;
}
