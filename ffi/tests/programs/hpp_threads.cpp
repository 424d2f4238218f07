// hpp_threads.cpp - tattler.hpp's non-throwing API from several threads:
// two threads in next() while a third calls wake() and the main thread
// stop(), a fourth reading stats_json(ec) and metrics_text(ec); the config
// builder, checkpoint(ec) and the logging setters' error_code twins; under
// C++20 a std::jthread's stop_token ends a waiting next(), and
// std::views::filter runs over a reader.
// ffi/tests/c_programs.rs builds it with -fno-exceptions (only the
// error_code API is declared then) under ThreadSanitizer, as C++17 and
// C++20, and runs it.
//
// usage: hpp_threads SERVER     (a fake apiserver with three pods)
// Prints "hpp_threads: ok" and exits 0, or names each failed check and exits 1.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <tattler.hpp>

#if __cplusplus >= 202002L
#include <ranges>
#endif

#if defined(__cpp_exceptions)
#error "hpp_threads.cpp is built with -fno-exceptions"
#endif

namespace {

std::atomic<int> failures{0};

void check(bool ok, const char *what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: hpp_threads SERVER\n");
        return 2;
    }
    const std::string pods = "{\"server\":\"" + std::string(argv[1]) + "\",\"resources\":[\"pods\"]}";

    // The logging setters' twins: a log function that counts, from the
    // library's threads.
    std::atomic<int> lines{0};
    {
        std::error_code ec;
        tattler::set_log_function([&lines](tattler_log_level, std::string_view, std::string_view) { lines++; }, ec);
        check(!ec, "set_log_function(f, ec)");
        tattler::set_log_level(TATTLER_LOG_INFO, ec);
        check(!ec, "set_log_level(level, ec)");
        tattler::set_log_level(static_cast<tattler_log_level>(9), ec);
        check(ec == TATTLER_ERR_INVALID_ARG, "set_log_level(ec) refuses 9");
    }

    // The config builder without exceptions: its first failure is kept and
    // reader::open reports it.
    {
        tattler::config cfg;
        cfg.server(argv[1]).resource("pods!").resource("pods");
        std::error_code ec;
        std::string message;
        tattler::reader none = tattler::reader::open(cfg, ec, &message);
        check(!none && ec == TATTLER_ERR_INVALID_RESOURCE && message == cfg.message() && !message.empty(),
              "open(config, ec) reports the config's first failure");
    }

    // Two consumers and a waker on one reader; stop() once Synced came.
    {
        std::error_code ec;
        tattler::config cfg;
        cfg.server(argv[1]).resource("pods");
        tattler::reader r = tattler::reader::open(cfg, ec);
        check(bool(r) && !ec, "open(config, ec)");
        std::atomic<bool> reading{true};
        std::atomic<int> stats_ok{0}, stats_failed{0};
        std::thread stats([&] {
            while (reading.load()) {
                std::error_code e;
                std::string json = r.stats_json(e);
                std::string text = r.metrics_text(e);
                (e || json.empty() || text.empty() ? stats_failed : stats_ok)++;
                std::this_thread::yield();
            }
        });
        std::atomic<int> adds{0}, synced{0}, wakes{0}, errors{0}, ended{0};
        std::atomic<bool> done{false};
        auto consume = [&] {
            for (;;) {
                std::error_code e;
                auto got = r.next(e);
                if (got) {
                    adds += got->type() == tattler::Change::Add;
                    synced += got->type() == tattler::Change::Synced;
                } else if (e) {
                    errors++;
                    break;
                } else if (r.closed()) {
                    ended++;
                    break;
                } else {
                    wakes++;
                }
                if (synced.load() == 1 && !done.exchange(true)) {
                    r.stop();
                }
            }
        };
        std::thread a(consume), b(consume);
        std::thread waker([&] {
            while (ended.load() < 2) {
                r.wake();
                std::this_thread::yield();
            }
        });
        a.join();
        b.join();
        waker.join();
        reading = false;
        stats.join();
        check(adds == 3 && synced == 1, "two threads share the entries: three Adds, one Synced");
        check(ended == 2 && errors == 0 && r.closed(), "both see the reader closed after stop()");
        check(stats_ok > 0 && stats_failed == 0, "stats_json(ec) and metrics_text(ec) from another thread");
        std::printf("(woken %d times)\n", wakes.load());
        std::vector<std::uint8_t> cp = r.checkpoint(ec);
        check(!ec && cp.size() > 20, "checkpoint(ec) after stop and drain");
        r.close(ec);
        check(!ec, "close(ec)");
        std::vector<std::uint8_t> gone = r.checkpoint(ec);
        check(gone.empty() && ec == TATTLER_ERR_NULL_ARG, "checkpoint(ec) on a closed reader");
    }

    // A wake() ends a range-for without stopping the reader.
    {
        std::error_code ec;
        tattler::reader r = tattler::reader::open(pods, ec);
        int seen = 0;
        for (tattler::entry &e : r) {
            seen++;
            if (e.type() == tattler::Change::Synced) {
                std::thread([&r] { r.wake(); }).join();
            }
        }
        check(seen == 4 && !r.closed(), "a wake ends the range-for; the reader runs on");
    }

#if __cplusplus >= 202002L
    // std::views over a reader: the Synced entry alone, from a range-for
    // over a filter view.
    {
        std::error_code ec;
        tattler::reader r = tattler::reader::open(pods, ec);
        int synced = 0;
        for (tattler::entry &e : r | std::views::filter([](const tattler::entry &e) {
                                     return e.type() == tattler::Change::Synced;
                                 })) {
            synced += e.resource() == "pods";
            r.stop();
        }
        check(synced == 1 && r.closed(), "std::views::filter over a reader");
        std::printf("hpp_threads: C++20 ranges checked\n");
    }
#endif

#if TATTLER_HPP_STOP_TOKEN
    // A std::jthread's stop_token ends its next() when the jthread is
    // asked to stop; the reader runs on.
    {
        std::error_code ec;
        tattler::reader r = tattler::reader::open(pods, ec);
        std::atomic<int> got{0};
        std::atomic<bool> synced{false};
        std::atomic<bool> stopped_clean{false};
        {
            std::jthread worker([&](std::stop_token stop) {
                for (;;) {
                    std::error_code e;
                    auto entry = r.next(stop, e);
                    if (entry) {
                        got++;
                        synced = synced || entry->type() == tattler::Change::Synced;
                        continue;
                    }
                    stopped_clean = !e && stop.stop_requested() && !r.closed();
                    if (e || stop.stop_requested() || r.closed()) {
                        return;
                    }
                }
            });
            while (!synced.load()) {
                std::this_thread::yield();
            }
            worker.request_stop();
        }  // joins
        check(got == 4 && stopped_clean, "request_stop ends a waiting next(stop_token)");
        std::stop_source already;
        already.request_stop();
        auto none = r.next(already.get_token(), ec);
        check(!none && !ec, "an already stopped token returns at once");
        std::printf("hpp_threads: C++20 stop_token checked\n");
    }
#endif

    std::error_code ec;
    tattler::set_log_function(nullptr, ec);
    check(!ec && lines.load() > 0, "the log function got lines; removed");

    if (failures != 0) {
        std::printf("hpp_threads: %d FAILED\n", failures.load());
        return 1;
    }
    std::printf("hpp_threads: ok\n");
    return 0;
}
