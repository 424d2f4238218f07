// watch.cpp - watch.c in C++17 through tattler.hpp: one line per entry,
//
//     Add default/web-1 1234
//     Synced v1/pods 1240
//     Error v1/nodes 403 Forbidden: nodes is forbidden ...
//
// usage: watch-cpp [--until-synced] [--token-file F] [--ca-file F]
//                  [--namespace NS] SERVER RESOURCE...
//
// Build against an installed tattler (make install PREFIX=DIR):
//     c++ -std=c++17 watch.cpp $(pkg-config --cflags --libs tattler) -o watch-cpp
// or with CMake: find_package(tattler) and target_link_libraries(... tattler::tattler).
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <tattler.hpp>

namespace {

std::string gvr(const tattler::entry &e) {
    std::string out(e.group());
    if (!out.empty()) {
        out += '/';
    }
    return out.append(e.version()).append("/").append(e.resource());
}

int usage() {
    std::cerr << "usage: watch-cpp [--until-synced] [--token-file F] [--ca-file F] [--namespace NS] "
                 "SERVER RESOURCE...\n";
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    bool until_synced = false;
    tattler::config cfg;  // typed setters: a misspelt key does not compile
    int i = 1;
    for (; i < argc && std::string_view(argv[i]).substr(0, 2) == "--"; i++) {
        std::string_view flag = argv[i];
        if (flag == "--until-synced") {
            until_synced = true;
        } else if (flag == "--token-file" && i + 1 < argc) {
            cfg.token_file(argv[++i]);
        } else if (flag == "--ca-file" && i + 1 < argc) {
            cfg.ca_file(argv[++i]);
        } else if (flag == "--namespace" && i + 1 < argc) {
            cfg.namespace_(argv[++i]);
        } else {
            return usage();
        }
    }
    if (argc - i < 2) {
        return usage();
    }
    cfg.server(argv[i]);
    std::set<std::string> pending;
    for (int k = i + 1; k < argc; k++) {
        cfg.resource(argv[k]);
        pending.insert(argv[k]);
    }

    try {
        tattler::set_log_function([](tattler_log_level level, std::string_view target, std::string_view msg) {
            static const char *const names[] = {"OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
            std::cerr << (level >= 1 && level <= 5 ? names[level] : "?") << " " << target << ": " << msg << "\n";
        });
        tattler::reader r(cfg);  // throws the first setter's failure, or the open's
        std::size_t streams = pending.size(), synced = 0;
        while (auto e = r.next()) {
            switch (e->change()) {
            case TATTLER_CHANGE_SYNCED:
                std::cout << "Synced " << gvr(*e) << " " << e->resource_version() << std::endl;
                if (until_synced && ++synced == streams) {
                    r.close();
                    return 0;
                }
                break;
            case TATTLER_CHANGE_ERROR:
                std::cout << "Error " << gvr(*e) << " " << e->error_code() << " " << e->error_reason() << ": "
                          << e->error_message() << std::endl;
                if (until_synced) {
                    return 1;
                }
                break;
            case TATTLER_CHANGE_STALE:  // not current: why; a Synced ends it
                std::cout << "Stale " << gvr(*e) << " " << e->namespace_() << (e->namespace_().empty() ? "" : " ")
                          << e->error_reason() << ": " << e->error_message() << std::endl;
                break;
            default:
                std::cout << tattler::to_string(e->type()) << " " << e->namespace_() << (e->namespace_().empty() ? "" : "/")
                          << e->name() << " " << e->resource_version() << (e->inferred() ? " inferred" : "")
                          << std::endl;
            }
        }
        std::cout << "Closed" << std::endl;
        r.close();
    } catch (const tattler::error &e) {
        std::cerr << "watch-cpp: " << e.what() << " (" << tattler_status_str(e.status()) << ")\n";
        return 1;
    }
    return 0;
}
