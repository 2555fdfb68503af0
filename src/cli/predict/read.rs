//! Reading measured collectives for `predict --measured`, `calibrate
//! --collectives` and `plan --from`: colltune's raw CSV as it is, anything
//! `import` reads through the importer; a directory is every file in it
//! (pico's per-call files with their `alloc.csv`), an archive
//! (`.tar.gz`, `.tgz`, `.tar`) every file it holds, unpacked by `tar`.

use std::path::{Path, PathBuf};

use super::usage;
use colltune_core::measure::import::{self, Options};
use colltune_core::measure::record::{self, Sample};
use colltune_core::model::placement::Mapping;

/// The samples of every file, directory or archive in `paths`, rows that
/// do not say their mapping taken as `mapping`.
pub fn collectives(
    paths: &[PathBuf],
    columns: Option<&str>,
    labels: Option<&str>,
    mapping: Mapping,
) -> anyhow::Result<Vec<Sample>> {
    let (columns, labels) = import::maps(columns, labels).map_err(usage)?;
    let opts = Options {
        columns,
        labels,
        mapping: Some(mapping),
        ..Options::default()
    };
    let mut samples = Vec::new();
    // Each kind of warning once, with how many files gave it (a folder of
    // pico's files skips every `over` file alike).
    let mut warned: Vec<(String, String, usize)> = Vec::new();
    for p in paths {
        for f in files(p)? {
            let (got, first) = one(&f, &opts, mapping)?;
            samples.extend(got);
            if let Some((place, what)) = first {
                match warned.iter_mut().find(|w| w.1 == what) {
                    Some(w) => w.2 += 1,
                    None => warned.push((place, what, 1)),
                }
            }
        }
    }
    for (place, what, n) in warned {
        let more = if n > 1 {
            format!(" (and {} more files alike)", n - 1)
        } else {
            String::new()
        };
        eprintln!(
            "colltune: warning: {place}: {what}{more}; `colltune import` lists every warning"
        );
    }
    Ok(samples)
}

/// The files `p` stands for, in name order.
fn files(p: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let name = p.to_string_lossy();
    let dir = if p.is_dir() {
        p.to_path_buf()
    } else if [".tar.gz", ".tgz", ".tar"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        unpack(p)?
    } else {
        return Ok(vec![p.to_path_buf()]);
    };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| usage(format!("{}: cannot read: {e}", d.display())))?;
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    // pico's alloc.csv is read beside each per-call file, not on its own.
    out.retain(|f| !f.ends_with("alloc.csv"));
    if out.is_empty() {
        return Err(usage(format!("{}: no files in it", p.display())));
    }
    Ok(out)
}

/// Unpacks an archive into a fresh folder under the temporary directory.
fn unpack(p: &Path) -> anyhow::Result<PathBuf> {
    let stem: String = p
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        })
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("colltune-{}-{stem}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| {
        usage(format!(
            "{}: cannot make {}: {e}",
            p.display(),
            dir.display()
        ))
    })?;
    let st = std::process::Command::new("tar")
        .arg("xf")
        .arg(p)
        .arg("-C")
        .arg(&dir)
        .status()
        .map_err(|e| {
            usage(format!(
                "{}: cannot run tar to unpack it ({e}); unpack it and give the folder",
                p.display()
            ))
        })?;
    if !st.success() {
        return Err(usage(format!(
            "{}: tar could not unpack it; unpack it and give the folder",
            p.display()
        )));
    }
    Ok(dir)
}

/// The samples of one file and its first warning (`file:line`, what):
/// colltune's raw CSV as it is, anything else through the importer.
type OneFile = (Vec<Sample>, Option<(String, String)>);
fn one(p: &Path, opts: &Options, mapping: Mapping) -> anyhow::Result<OneFile> {
    let head = std::fs::read_to_string(p)
        .map_err(|e| usage(format!("{}: cannot read: {e}", p.display())))?;
    if head.starts_with("collective,") {
        return Ok((record::read(p).map_err(usage)?, None));
    }
    let got = import::read(p, opts).map_err(usage)?;
    let first = got
        .warnings
        .first()
        .map(|w| (format!("{}:{}", p.display(), w.line), w.what.clone()));
    let name = p
        .file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into());
    let source = format!("imported:{}:{name}", got.origin);
    let samples = import::to_samples(&got.bcast, None, Some(mapping), "", &source)
        .map_err(|(l, w)| usage(format!("{}:{l}: {w}", p.display())))?;
    Ok((samples, first))
}
