//! The layering is something Cargo enforces; these tests prove what Cargo
//! alone does not say: which crates each layer links, and where `unsafe`
//! may appear.
//!
//! - `colltune-algorithms` and `colltune-core` link no MPI (no `mpi`,
//!   `mpi-sys`, bindgen): they build on a machine without an MPI library.
//! - The runtime libraries (`libcolltune.so`, the `LD_PRELOAD` library)
//!   link no command-line, plotting or progress-bar crates, and no search
//!   (argmin: colltune-core's `tuner` feature, which they leave off).
//! - `unsafe` appears only in `mpi/` (colltune-mpi) and in the exported C
//!   symbols of `capi/` and `preload/`; every other crate forbids it.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The crates `package` links (normal and build dependencies, every
/// feature as built), one name per entry.
fn linked(package: &str) -> Vec<String> {
    let o = Command::new(env!("CARGO"))
        .current_dir(ROOT)
        .args(["tree", "--offline", "--locked", "-p", package])
        .args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo tree runs");
    assert!(
        o.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn assert_without(package: &str, forbidden: &[&str]) {
    let crates = linked(package);
    assert!(
        crates.iter().any(|c| c == package),
        "cargo tree -p {package} printed no {package}: {crates:?}"
    );
    let found: Vec<_> = crates
        .iter()
        .filter(|c| forbidden.contains(&c.as_str()))
        .collect();
    assert!(found.is_empty(), "{package} links {found:?}");
}

#[test]
fn the_mpi_free_crates_link_no_mpi() {
    let mpi = ["mpi", "mpi-sys", "bindgen", "build-probe-mpi", "libffi"];
    assert_without("colltune-algorithms", &mpi);
    assert_without("colltune-core", &mpi);
}

#[test]
fn the_runtime_libraries_link_no_tools() {
    let tools = ["clap", "plotters", "indicatif", "signal-hook"];
    assert_without("colltune-capi", &tools);
    assert_without("colltune-preload", &tools);
    assert_without("colltune-mpi", &tools);
}

/// What the runtime needs of the core (the table schema, validation, the
/// decision) does not pull in the search: the tuner, the fits and the
/// calibration are colltune-core's feature `tuner`, which the binary turns
/// on and the runtime libraries do not.
#[test]
fn the_runtime_libraries_link_no_search() {
    let search = ["argmin", "argmin-math"];
    assert_without("colltune-capi", &search);
    assert_without("colltune-preload", &search);
    // The binary does search: the check above can see argmin.
    assert!(
        linked("colltune").iter().any(|c| c == "argmin"),
        "cargo tree -p colltune shows no argmin: the check cannot see it"
    );
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Lines using `unsafe` outside comments.
fn unsafe_lines(dir: &str) -> Vec<String> {
    let mut files = Vec::new();
    sources(&Path::new(ROOT).join(dir), &mut files);
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("unsafe") && !code.contains("forbid(unsafe_code)") {
                out.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn unsafe_lives_in_the_mpi_crate_only() {
    for dir in ["algorithms/src", "core/src", "src"] {
        let found = unsafe_lines(dir);
        assert!(
            found.is_empty(),
            "unsafe outside mpi/:\n{}",
            found.join("\n")
        );
    }
    for lib in ["algorithms/src/lib.rs", "core/src/lib.rs", "src/main.rs"] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(lib)).unwrap();
        assert!(
            text.contains("#![forbid(unsafe_code)]"),
            "{lib} does not forbid unsafe code"
        );
    }
    // The C-facing crates hold only their exported symbols, each a call
    // into colltune_mpi::runtime.
    for dir in ["capi/src", "preload/src"] {
        for line in unsafe_lines(dir) {
            assert!(
                line.contains("unsafe extern \"C\" fn") || line.contains("unsafe { runtime::"),
                "{line}: the C shims may only forward to colltune_mpi::runtime"
            );
        }
    }
}
