//! Log lines on stderr at the level `-v` asks for: none by default (the
//! command reports what matters in its own words), as kubectl's `-v` adds
//! detail.

/// The `log` crate's sink: `LEVEL target: message` on stderr.
struct Stderr;

/// Installs the logger for `-v verbosity`: 0 nothing, 1 warnings, 2 and 3
/// info, 4 and 5 debug, 6 and more trace.
pub fn install(verbosity: u8) {
    let level = match verbosity {
        0 => log::LevelFilter::Off,
        1 => log::LevelFilter::Warn,
        2 | 3 => log::LevelFilter::Info,
        4 | 5 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    if log::set_logger(&Stderr).is_ok() {
        log::set_max_level(level);
    }
}

impl log::Log for Stderr {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let line = format!("{} {}: {}", r.level(), r.target(), r.args());
            crate::stderr_line(&line);
        }
    }

    fn flush(&self) {}
}
