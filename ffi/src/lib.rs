//! The C ABI of tattler: `libtattler.a`, `libtattler.so` and
//! `include/tattler.h` (generated from this crate by cbindgen; see
//! `ffi/gen-header.sh`).
//!
//! The only crate of the project with `unsafe` code. Every raw-pointer cast is
//! in the private `cast` module; the extern functions check for NULL, run
//! their body under `catch_unwind`, and write out-parameters only on success.
//! Reader and entry pointers are handles, looked up in a registry (`handle`)
//! on every call and never dereferenced: a closed, freed or foreign one is
//! refused with `TATTLER_ERR_INVALID_HANDLE`.
//! One file per C object: `config_builder.rs` (`tattler_config`, the way
//! in: built call by call or from JSON, opened by `tattler_open_config`),
//! `config_options.rs` (its typed setters, one per key), `config_keys.rs`
//! (the keys, their types and defaults), `reader.rs` (`tattler_reader`),
//! `entry.rs` (`tattler_entry`), `status.rs` (`tattler_status`), `error.rs`
//! (failure text), `config.rs` (the JSON document read), `logging.rs` (the
//! log callback), `legacy.rs` (the calls kept for programs that link them,
//! one line each over the documented ones).
//!
//! Layers run one way, each module importing only from the layers below it
//! (`layers_run_one_way` holds it):
//! 1. `cast`: the raw-pointer casts; it imports nothing of the crate.
//! 2. `status`: the numbers and their fixed texts.
//! 3. `error`: a failure's status and text, the panic guard, the caller's
//!    error buffer.
//! 4. `handle`, `readiness`, `logging`: the registry, the eventfd, the log
//!    callback.
//! 5. `entry`, `config`, `config_keys`: an entry's getters; the JSON
//!    document read; its keys.
//! 6. `reader`: open, next, stop, close.
//! 7. `config_builder`: the configuration, opened through `reader`.
//! 8. `config_options`: the typed setters over `config_builder`.
//! 9. `legacy`: one-line wrappers over the documented calls.
//!
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]

// In this order in include/tattler.h (cbindgen follows the modules): the
// way in first, the legacy calls last.
mod status;

mod config_builder;

mod config_options;

mod config_keys;

mod reader;

mod entry;

mod logging;

mod legacy;

// Internal.
mod cast;
mod config;
mod error;
mod handle;
mod readiness;

#[doc(hidden)]
pub mod __for_tests;

pub use config_builder::{
    tattler_config, tattler_config_add_event_kind, tattler_config_add_resource,
    tattler_config_add_resource_spec, tattler_config_free, tattler_config_new,
    tattler_config_set_bool, tattler_config_set_int, tattler_config_set_json,
    tattler_config_set_string, tattler_open_config,
};
pub use config_keys::tattler_config_keys;
pub use config_options::*;
pub use entry::{
    tattler_change, tattler_change_str, tattler_entry, tattler_entry_change,
    tattler_entry_error_code, tattler_entry_error_ended, tattler_entry_error_message,
    tattler_entry_error_reason, tattler_entry_free, tattler_entry_group, tattler_entry_holder,
    tattler_entry_identity, tattler_entry_inferred, tattler_entry_kind, tattler_entry_name,
    tattler_entry_namespace, tattler_entry_object, tattler_entry_resource,
    tattler_entry_resource_version, tattler_entry_resource_version_str, tattler_entry_term,
    tattler_entry_uid, tattler_entry_version,
};
#[allow(deprecated)]
pub use legacy::{tattler_open, tattler_open_ex, tattler_open_resume, tattler_set_resources};
pub use logging::{
    tattler_in_log_callback, tattler_log_fn, tattler_log_level, tattler_set_log_callback,
    tattler_set_log_level,
};
pub use reader::{
    tattler_checkpoint, tattler_close, tattler_fd, tattler_metrics_text, tattler_next_entry,
    tattler_reader, tattler_set_resources_ex, tattler_stats_json, tattler_stop, tattler_wake,
};
pub use status::{
    tattler_status, tattler_status_str, tattler_version, tattler_version_number,
    TATTLER_VERSION_MAJOR, TATTLER_VERSION_MINOR, TATTLER_VERSION_NUMBER, TATTLER_VERSION_PATCH,
};

#[cfg(test)]
mod layers {
    /// The modules by layer, lowest first (see the crate's doc).
    const LAYERS: &[&[&str]] = &[
        &["cast"],
        &["status"],
        &["error"],
        &["handle", "readiness", "logging"],
        &["entry", "config", "config_keys"],
        &["reader"],
        &["config_builder"],
        &["config_options"],
        &["legacy"],
    ];

    fn layer(module: &str) -> usize {
        LAYERS
            .iter()
            .position(|l| l.contains(&module))
            .unwrap_or_else(|| panic!("{module} is in no layer: add it to LAYERS"))
    }

    #[test]
    fn layers_run_one_way() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let module = path.file_stem().unwrap().to_str().unwrap().to_string();
            if ["lib", "__for_tests"].contains(&module.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let own = layer(&module);
            for (at, _) in text.match_indices("crate::") {
                let used: String = text[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    layer(&used) < own,
                    "{module} (layer {own}) uses crate::{used} (layer {}): layers run one way",
                    layer(&used)
                );
            }
        }
    }
}
