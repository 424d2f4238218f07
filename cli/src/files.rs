//! The files a run reads and writes: `--config`, and `--checkpoint` (read
//! at start when it exists, written on exit by rename, so a crash while
//! writing leaves the old one whole).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use kube_tattler::Checkpoint;

/// The largest `--config` or `--checkpoint` file read (a checkpoint holds
/// about 100 bytes per object: a million objects fit).
const MAX_FILE: u64 = 256 << 20;

/// A file of at most [`MAX_FILE`] bytes.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "{}: larger than {} MiB",
            path.display(),
            MAX_FILE >> 20
        ));
    }
    Ok(bytes)
}

/// A UTF-8 text file (`--config`).
pub fn read_text(path: &Path) -> Result<String, String> {
    String::from_utf8(read_bounded(path)?).map_err(|_| format!("{}: not UTF-8", path.display()))
}

/// The checkpoint at `path`, `None` when there is none yet.
pub fn load_checkpoint(path: &Path) -> Result<Option<Checkpoint>, String> {
    match std::fs::metadata(path) {
        Ok(_) => {
            let cp = Checkpoint::from_bytes(&read_bounded(path)?).map_err(|e| {
                format!(
                    "{}: {e}; remove it to start with a full sync",
                    path.display()
                )
            })?;
            log::info!(
                "resuming from {}: {} resources, {} objects",
                path.display(),
                cp.resources(),
                cp.objects()
            );
            Ok(Some(cp))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::info!("{} does not exist yet: a full sync", path.display());
            Ok(None)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes the checkpoint beside `path` and renames it over.
pub fn save_checkpoint(path: &Path, cp: &Checkpoint) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let bytes = cp.to_bytes();
    std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{}: cannot write the checkpoint: {e}", path.display()))?;
    log::info!(
        "wrote {} ({} resources, {} objects, {} bytes)",
        path.display(),
        cp.resources(),
        cp.objects(),
        bytes.len()
    );
    Ok(())
}
