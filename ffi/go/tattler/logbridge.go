//go:build cgo

package tattler

/*
#include <stdbool.h>
#include "tattler.h"

extern void tattlerGoLog(void *user, int level, char *target, char *msg);

static void tattler_go_log(void *user, int level, const char *target, const char *msg) {
	tattlerGoLog(user, level, (char *)target, (char *)msg);
}

static tattler_status tattler_go_set_log(bool on) {
	return tattler_set_log_callback(on ? tattler_go_log : NULL, NULL);
}
*/
import "C"

// setLogCallback installs (or removes) the C trampoline into tattlerGoLog.
func setLogCallback(on bool) Status {
	return Status(C.tattler_go_set_log(C.bool(on)))
}
