//! The catalog on disk: `schema.json` in the data directory, replaced atomically
//! (write to a temporary file, fsync, rename, fsync the directory).

use super::Catalog;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

const FILE_NAME: &str = "schema.json";

/// Reads the catalog; a data directory without one starts empty.
///
/// # Errors
/// When the file exists but cannot be read or parsed (never silently discarded).
pub fn load_catalog(dir: &Path) -> std::io::Result<Catalog> {
    let path = dir.join(FILE_NAME);
    match fs::read(&path) {
        Ok(bytes) => catalog_from_json(&bytes).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Catalog::default()),
        Err(e) => Err(e),
    }
}

/// Parses a catalog's JSON (`schema.json`, or a replicated schema change). serde_json's
/// default limit of 128 nested levels is lifted: a column type nested as deeply as the CQL
/// parser allows (a tuple 32 deep) takes more, and the depth is bounded by that parser.
///
/// # Errors
/// When the JSON is not a catalog.
pub fn catalog_from_json(bytes: &[u8]) -> serde_json::Result<Catalog> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let catalog = Catalog::deserialize(&mut de)?;
    de.end()?;
    Ok(catalog)
}

/// Writes the catalog durably before returning.
///
/// # Errors
/// Any I/O failure; the previous file is then still intact.
pub fn save_catalog(dir: &Path, catalog: &Catalog) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(catalog).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(FILE_NAME))?;
    File::open(dir)?.sync_all()?;
    Ok(())
}
