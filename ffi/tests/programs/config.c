/* config.c - the configuration builder and the error-text sizes from C:
 * the typed setters, the string setters and tattler_config_set_json against
 * the JSON form's messages ("did you mean" for a mistyped key), err_needed
 * on every error-text call, tattler_change_str, tattler_version_number, and
 * a reader opened from a built configuration. ffi/tests/c_programs.rs builds it with -Werror
 * under AddressSanitizer + UBSan and runs it.
 *
 * usage: config SERVER     (a fake apiserver with three pods)
 * Prints "config: ok" and exits 0, or names each failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tattler.h"

static int failures;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: config SERVER\n");
        return 2;
    }
    check(tattler_version_number() == TATTLER_VERSION_NUMBER &&
              TATTLER_VERSION_NUMBER == TATTLER_VERSION_MAJOR * 10000 + TATTLER_VERSION_MINOR * 100 + TATTLER_VERSION_PATCH,
          "tattler_version_number matches the header's macros");

    /* An unknown key's text names the key, so a long one makes a text longer
     * than a 512-byte buffer: err_needed says how long, and a buffer of that
     * size holds it all. */
    char key[601];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    char json[1024];
    snprintf(json, sizeof json, "{\"server\":\"%s\",\"resources\":[\"pods\"],\"%s\":\"x\"}", argv[1], key);
    char small[16];
    size_t needed = 0;
    tattler_reader *r = NULL;
    tattler_status st = tattler_open_ex(json, NULL, 0, &r, small, sizeof small, &needed);
    check(st == TATTLER_ERR_INVALID_CONFIG && r == NULL && needed > 512 && strlen(small) == sizeof small - 1,
          "tattler_open_ex: the text is cut and err_needed is its whole size");
    char *full = malloc(needed);
    size_t again = 0;
    st = tattler_open_ex(json, NULL, 0, &r, full, needed, &again);
    check(st == TATTLER_ERR_INVALID_CONFIG && again == needed && strlen(full) + 1 == needed &&
              strstr(full, key) != NULL,
          "a buffer of err_needed bytes holds the whole text");

    /* The builder refuses the same key with the same text. */
    tattler_config *cfg = tattler_config_new();
    check(cfg != NULL, "tattler_config_new");
    char err[1024];
    size_t cfg_needed = 0;
    st = tattler_config_set_string(cfg, key, "x", err, sizeof err, &cfg_needed);
    check(st == TATTLER_ERR_INVALID_CONFIG && strcmp(err, full) == 0 && cfg_needed == needed,
          "set_string refuses an unknown key with tattler_open's text");
    free(full);

    /* A mistyped key: the key it meant, not a list of every key. */
    st = tattler_config_set_string(cfg, "sever", "x", err, sizeof err, &cfg_needed);
    check(st == TATTLER_ERR_INVALID_CONFIG && strstr(err, "unknown key `sever` (did you mean `server`?)") != NULL &&
              cfg_needed == strlen(err) + 1 && cfg_needed < 100,
          "set_string says which key a mistyped one meant");
    st = tattler_config_set_json(cfg, "{\"namespce\":\"a\"}", err, sizeof err, NULL);
    check(st == TATTLER_ERR_INVALID_CONFIG && strstr(err, "did you mean `namespace`?") != NULL,
          "set_json says which key a mistyped one meant");

    /* The typed setters: the compiler checks the key and the type. */
    check(tattler_config_set_channel_capacity(cfg, 16) == TATTLER_OK && tattler_config_set_scrub(cfg, false) == TATTLER_OK &&
              tattler_config_set_label_selector(cfg, "") == TATTLER_OK &&
              tattler_config_set_label_selector(cfg, NULL) == TATTLER_ERR_NULL_ARG,
          "typed setters");
    check(tattler_config_set_json(cfg, "{\"drop_managed_fields\":true,\"event_kinds\":[\"Pod\"]}", err, sizeof err, NULL) ==
              TATTLER_OK,
          "set_json merges a document");
    check(strstr(tattler_config_keys(), "\"channel_capacity\":{\"type\":\"integer\",\"default\":64}") != NULL,
          "tattler_config_keys lists the keys with their defaults");

    /* Change names; a change newer than this header is "Unknown". */
    check(strcmp(tattler_change_str(TATTLER_CHANGE_ADD), "Add") == 0 &&
              strcmp(tattler_change_str(TATTLER_CHANGE_SYNCED), "Synced") == 0 &&
              strcmp(tattler_change_str(TATTLER_CHANGE_NONE), "None") == 0 && strcmp(tattler_change_str(TATTLER_CHANGE_STALE), "Stale") == 0 && strcmp(tattler_change_str(TATTLER_CHANGE_FOLLOWING), "Following") == 0 && strcmp(tattler_change_str(10), "Unknown") == 0 &&
              strcmp(tattler_change_str(-1), "Unknown") == 0,
          "tattler_change_str");
    check(tattler_config_set_bool(cfg, "insecure", 1, err, sizeof err, NULL) == TATTLER_OK,
          "set_bool insecure");
    check(tattler_config_set_int(cfg, "channel_capacity", -1, err, sizeof err, NULL) == TATTLER_ERR_INVALID_CONFIG &&
              strstr(err, "`channel_capacity`") != NULL,
          "set_int refuses a negative capacity, naming the key");
    check(tattler_config_set_string(cfg, "insecure", "yes", err, sizeof err, NULL) == TATTLER_ERR_INVALID_CONFIG &&
              strstr(err, "`insecure`") != NULL,
          "set_string refuses a string for a boolean key");
    check(tattler_config_set_string(cfg, "resources", "pods", err, sizeof err, NULL) == TATTLER_ERR_INVALID_CONFIG,
          "resources has its own calls");
    check(tattler_config_add_resource(cfg, "pods!", err, sizeof err, NULL) == TATTLER_ERR_INVALID_RESOURCE,
          "add_resource refuses a bad name");

    /* No resources yet: the open fails as the JSON form's would. */
    check(tattler_config_set_server(cfg, argv[1]) == TATTLER_OK, "set_server");
    st = tattler_open_config(cfg, NULL, 0, &r, err, sizeof err, &needed);
    check(st == TATTLER_ERR_INVALID_CONFIG && r == NULL && needed == strlen(err) + 1,
          "tattler_open_config without resources fails with the text's size");

    check(tattler_config_add_resource(cfg, "pods", err, sizeof err, NULL) == TATTLER_OK, "add_resource pods");
    check(tattler_config_add_resource_spec(cfg, "nodes", NULL, NULL, "metadata.name=none", 1, err, sizeof err, NULL) ==
              TATTLER_OK,
          "add_resource_spec nodes with a field selector, metadata only");
    st = tattler_open_config(cfg, NULL, 0, &r, err, sizeof err, NULL);
    check(st == TATTLER_OK && r != NULL, "tattler_open_config opens");
    tattler_config_free(cfg);
    tattler_config_free(cfg); /* refused: a logged warning */
    check(tattler_config_set_bool(cfg, "gzip", 1, err, sizeof err, NULL) == TATTLER_ERR_INVALID_HANDLE &&
              tattler_config_set_gzip(cfg, true) == TATTLER_ERR_INVALID_HANDLE,
          "a freed configuration is refused");

    int adds = 0, synced = 0;
    while (st == TATTLER_OK && synced < 2) {
        tattler_entry *e = NULL;
        if (tattler_next_entry(r, 10000, &e) != TATTLER_OK) {
            break;
        }
        adds += tattler_entry_change(e) == TATTLER_CHANGE_ADD;
        synced += tattler_entry_change(e) == TATTLER_CHANGE_SYNCED;
        tattler_entry_free(e);
    }
    check(adds == 3 && synced == 2, "the built configuration streams three pods, then both Synced");
    char metrics[8192];
    size_t mlen = 0;
    check(tattler_metrics_text(r, metrics, sizeof metrics, &mlen) == TATTLER_OK &&
              strstr(metrics, "field_selector=\"metadata.name=none\",metadata_only=\"true\"") != NULL,
          "the resource spec's scope is the stream's");

    /* tattler_set_resources_ex reports the size too. */
    bool changed = false;
    needed = 0;
    st = tattler_set_resources_ex(r, "[{\"resource\":\"pods\",\"nmespace\":\"x\"}]", false, &changed, small, sizeof small,
                                  &needed);
    check(st == TATTLER_ERR_INVALID_RESOURCE && needed > sizeof small, "tattler_set_resources_ex: err_needed");
    check(tattler_close(r) == TATTLER_OK, "close");

    if (failures != 0) {
        printf("config: %d FAILED\n", failures);
        return 1;
    }
    printf("config: ok\n");
    return 0;
}
