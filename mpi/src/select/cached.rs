//! A validated table kept in compact form beside its text's digest, so that
//! a start does not parse and validate the same YAML again (MPI-free).
//!
//! Every rank of a drop-in job reads the table before `MPI_Init` (the
//! handoff needs it before there is any communication). Parsing YAML is
//! slow: a 1,000-rule table (`benches/startup-table.py`) takes about 5 ms
//! of CPU per rank, a quarter of Open MPI's own `MPI_Init` there, and on a
//! node running a rank per core that is start-up time. The table's compact
//! form (`Table::to_wire`, what rank 0 sends the others) decodes in about a
//! fifth of that. So the first start with a table writes that form to
//! `$TMPDIR/colltune-table-DIGEST.json` (DIGEST: of colltune's version and
//! the table's text), and later starts with the same text read it instead.
//!
//! Only a file this user owns and nobody else may write is used (`/tmp` is
//! shared); one that does not decode is ignored. It is written to a
//! temporary name and renamed, so a start never reads half of one; any
//! failure to write it is ignored (the start parses, as without it).
//! `COLLTUNE_TABLE_CACHE=0` turns it off.

use std::path::PathBuf;

use colltune_core::tables::table::{self, Problem, Table};

/// FNV-1a of colltune's version and the text; never 0.
pub fn digest(text: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in env!("CARGO_PKG_VERSION")
        .bytes()
        .chain([0])
        .chain(text.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h.max(1)
}

fn dir() -> PathBuf {
    std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir)
}

fn wanted() -> bool {
    std::env::var("COLLTUNE_TABLE_CACHE").map_or(true, |v| v.trim() != "0")
}

/// The path of `text`'s compact form (the text's length in it too).
fn path_of(text: &str) -> PathBuf {
    dir().join(format!(
        "colltune-table-{:016x}-{}.json",
        digest(text),
        text.len()
    ))
}

/// A file this user owns that no one else may write.
fn trusted(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: no arguments; always succeeds.
    let me = unsafe { libc::geteuid() };
    meta.is_file() && meta.uid() == me && meta.mode() & 0o022 == 0
}

/// The table `text` holds, validated: from its compact form where an
/// earlier start left one, else parsed and validated (`table::load_str`)
/// and its compact form left for the next start.
pub fn load(text: &str) -> Result<Table, Vec<Problem>> {
    if !wanted() {
        return table::load_str(text);
    }
    let path = path_of(text);
    if let Ok(meta) = std::fs::metadata(&path) {
        if trusted(&meta) {
            if let Some(t) = std::fs::read(&path)
                .ok()
                .and_then(|b| Table::from_wire(&b).ok())
            {
                return Ok(t);
            }
        }
    }
    let t = table::load_str(text)?;
    store(&path, &t.to_wire());
    Ok(t)
}

fn store(path: &std::path::Path, wire: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| f.write_all(wire));
    if written.is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_load_reads_the_compact_form_and_gives_the_same_table() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/c/dropin/library.yaml"
        ))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("colltune-cache-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let parsed = table::load_str(&text).unwrap();
        store(&path, &parsed.to_wire());
        let meta = std::fs::metadata(&path).unwrap();
        assert!(trusted(&meta));
        let back = Table::from_wire(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back.to_wire(), parsed.to_wire());
        // Another text, another file; the version is in the digest.
        assert_ne!(digest(&text), digest(&format!("{text}\n")));
        // Writable by others: not trusted.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!trusted(&std::fs::metadata(&path).unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
