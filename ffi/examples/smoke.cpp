// smoke.cpp - C++ smoke test of tattler.h: the header compiles as C++
// (extern "C", enums), the static library links, and the API works with RAII.
//
// usage: smoke [SERVER]   (with SERVER: streams pods until synced, adds nodes
//                          with tattler_set_resources_ex, reads the stats, stops)
// Prints "smoke: ok" and exits 0, or names the failed check and exits 1.
//
// Build: c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude ffi/examples/smoke.cpp
//            -Ltarget/debug -l:libtattler.a -lpthread -ldl -lm -lrt -o smoke

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tattler.h"

namespace {

struct ReaderClose {
    void operator()(tattler_reader *r) const { tattler_close(r); }
};
struct EntryFree {
    void operator()(tattler_entry *e) const { tattler_entry_free(e); }
};
using Reader = std::unique_ptr<tattler_reader, ReaderClose>;
using Entry = std::unique_ptr<tattler_entry, EntryFree>;

int failures = 0;

void check(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "smoke: FAILED: %s\n", what);
        failures++;
    }
}

struct ConfigFree {
    void operator()(tattler_config *c) const { tattler_config_free(c); }
};

// Opens a reader from a JSON configuration, or returns null with the error
// text in *err: a tattler_config given the document, then opened.
Reader open(const std::string &config, std::string *err, tattler_status *status) {
    std::unique_ptr<tattler_config, ConfigFree> cfg(tattler_config_new());
    tattler_reader *raw = nullptr;
    char buf[512] = {0};
    *status = tattler_config_set_json(cfg.get(), config.c_str(), buf, sizeof buf, nullptr);
    if (*status == TATTLER_OK) {
        *status = tattler_open_config(cfg.get(), nullptr, 0, &raw, buf, sizeof buf, nullptr);
    }
    *err = buf;
    return Reader(raw);
}

// The next entry, waiting at most 10 s.
Entry next(tattler_reader *r, tattler_status *status) {
    tattler_entry *raw = nullptr;
    *status = tattler_next_entry(r, 10000, &raw);
    return Entry(raw);
}

// Reads until a Synced entry for `resource`; returns the number of Adds before it.
int until_synced(tattler_reader *r, const char *resource) {
    int adds = 0;
    for (;;) {
        tattler_status st;
        Entry e = next(r, &st);
        if (st != TATTLER_OK) {
            std::fprintf(stderr, "smoke: next entry: %s\n", tattler_status_str(st));
            return -1;
        }
        tattler_change c = tattler_entry_change(e.get());
        if (c == TATTLER_CHANGE_ADD) {
            size_t len = 0;
            const uint8_t *obj = tattler_entry_object(e.get(), &len);
            check(obj != nullptr && len > 2 && obj[0] == '{', "an Add carries the object's JSON");
            check(std::strlen(tattler_entry_uid(e.get())) > 0, "an Add has a uid");
            adds++;
        } else if (c == TATTLER_CHANGE_SYNCED && std::strcmp(tattler_entry_resource(e.get()), resource) == 0) {
            return adds;
        } else if (c == TATTLER_CHANGE_ERROR) {
            std::fprintf(stderr, "smoke: error entry: %s\n", tattler_entry_error_message(e.get()));
            return -1;
        }
    }
}

void live(const char *server) {
    std::string err;
    tattler_status st;
    Reader r = open(std::string("{\"server\":\"") + server + "\",\"resources\":[\"pods\"]}", &err, &st);
    check(st == TATTLER_OK && r != nullptr, "open against the server");
    if (!r) {
        std::fprintf(stderr, "smoke: %s\n", err.c_str());
        return;
    }
    int pods = until_synced(r.get(), "pods");
    check(pods >= 1, "pods synced");

    bool changed = false;
    char errbuf[256];
    st = tattler_set_resources_ex(r.get(), "[\"pods\",\"nodes\"]", false, &changed, errbuf, sizeof errbuf, nullptr);
    check(st == TATTLER_OK && changed, "set_resources adds nodes");
    st = tattler_set_resources_ex(r.get(), "[\"pods!\"]", false, &changed, errbuf, sizeof errbuf, nullptr);
    check(st == TATTLER_ERR_INVALID_RESOURCE && std::strstr(errbuf, "pods!") != nullptr,
          "set_resources names the bad resource");
    check(until_synced(r.get(), "nodes") == 0, "nodes synced (none exist)");

    size_t needed = 0;
    check(tattler_stats_json(r.get(), nullptr, 0, &needed) == TATTLER_ERR_BUFFER_TOO_SMALL, "stats size query");
    std::vector<char> stats(needed + 256);
    check(tattler_stats_json(r.get(), stats.data(), stats.size(), &needed) == TATTLER_OK, "stats");
    check(std::strstr(stats.data(), "\"resource\":\"v1/nodes\"") != nullptr, "stats name nodes");

    tattler_stop(r.get());
    for (;;) {
        Entry e = next(r.get(), &st);
        if (st != TATTLER_OK) {
            break;
        }
    }
    check(st == TATTLER_CLOSED, "after stop, next entry says CLOSED");
    std::printf("smoke: %d pods synced\n", pods);
}

}  // namespace

int main(int argc, char **argv) {
    check(std::strlen(tattler_version()) > 0, "version");
    check(std::strcmp(tattler_status_str(TATTLER_CLOSED), "reader closed") == 0, "status text");
    check(std::strcmp(tattler_status_str(12345), "unknown status") == 0, "unknown status text");
    check(tattler_entry_change(nullptr) == TATTLER_CHANGE_NONE, "change of NULL");

    std::string err;
    tattler_status st;
    Reader bad = open("{", &err, &st);
    check(st == TATTLER_ERR_INVALID_CONFIG && bad == nullptr, "bad JSON is INVALID_CONFIG");
    check(err.find("JSON") != std::string::npos, "the error text names JSON");

    if (argc > 1) {
        live(argv[1]);
    }
    if (failures != 0) {
        return 1;
    }
    std::printf("smoke: ok\n");
    return 0;
}
