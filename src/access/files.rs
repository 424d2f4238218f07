//! Files named in a configuration, read with a bound: a kubeconfig, a CA
//! bundle or a token file can be anything, and none is read whole if larger.

use std::io::Read;
use std::path::Path;

/// Reads at most `limit` bytes of `path`; a larger file is an error.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut data)?;
    if data.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(data)
}
