/*
 * legacy.c - a program that still calls the legacy tattler_open: it compiles
 * cleanly (-Werror) as it always did, and with TATTLER_WARN_LEGACY defined
 * the compiler points at the call and names the documented one.
 * ffi/tests/c_programs.rs compiles it both ways.
 */
#include <stddef.h>

#include "tattler.h"

int main(void) {
    tattler_reader *r = NULL;
    char err[64];
    tattler_status st = tattler_open("{", &r, err, sizeof err);
    return st == TATTLER_ERR_INVALID_CONFIG ? 0 : 1;
}
