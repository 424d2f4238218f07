/*
 * header_check.c - tattler.h compiled as C99, C11, C++11 and C++17 (the same
 * file, as C or as C++) with -Wall -Wextra -Wpedantic -Werror; at run time,
 * the header's version macros must be the linked library's version.
 * ffi/tests/c_programs.rs builds and runs it; ffi/ci-consumers.sh builds it
 * against the installed header too.
 */
#include <stdio.h>
#include <string.h>

#include "tattler.h"

#if TATTLER_VERSION_NUMBER != TATTLER_VERSION_MAJOR * 10000 + TATTLER_VERSION_MINOR * 100 + TATTLER_VERSION_PATCH
#error "TATTLER_VERSION_NUMBER is not MAJOR * 10000 + MINOR * 100 + PATCH"
#endif

int main(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TATTLER_VERSION_MAJOR, TATTLER_VERSION_MINOR, TATTLER_VERSION_PATCH);
    if (strcmp(want, tattler_version()) != 0) {
        printf("header %s, library %s\n", want, tattler_version());
        return 1;
    }
    tattler_status st = TATTLER_ERR_REENTRANT;
    tattler_change c = TATTLER_CHANGE_SYNCED;
    printf("header_check: %s (%d %d %s)\n", want, (int)st, (int)c, tattler_in_log_callback() ? "in" : "out");
    return 0;
}
