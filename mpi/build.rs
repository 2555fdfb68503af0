//! Names the MPI library colltune-mpi is built against, at build time.
//!
//! mpi-sys (rsmpi) finds MPI through `MPI_PKG_CONFIG`, `CRAY_MPICH_DIR`,
//! `MPICC` (or `mpicc` on the PATH), then pkg-config `mpich` / `ompi`; this
//! script follows the same order, reads the library's family and version
//! from its `mpi.h` (`OMPI_*_VERSION`, `I_MPI_VERSION`, `MPICH_VERSION`,
//! `MVAPICH2_VERSION`) and the library directories from the wrapper's
//! `-show` (or pkg-config's `-L`), and writes them to
//! `$OUT_DIR/mpi_build.rs` (`crate::abi` includes it). The directories go
//! to the crates that link a binary (colltune, libcolltune.so, the preload
//! library) as `DEP_COLLTUNE_MPI_LIBDIRS`: their build scripts record them
//! as the run path, so a binary built for one Open MPI does not silently
//! load another one's `libmpi.so.40`.
//!
//! A probe that finds nothing does not fail the build (mpi-sys reports
//! that); the library is then named `unknown`.

use std::env;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    for v in [
        "MPICC",
        "MPI_PKG_CONFIG",
        "CRAY_MPICH_DIR",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let probe = probe();
    let (family, name, version) = match &probe {
        Some(p) => identify(&p.macros),
        None => ("unknown", "unknown".to_string(), String::new()),
    };
    let libdirs: Vec<String> = probe
        .as_ref()
        .map(|p| p.libdirs.clone())
        .unwrap_or_default();
    let how = probe
        .as_ref()
        .map(|p| p.how.clone())
        .unwrap_or_else(|| "no MPI found".into());
    if probe.is_none() {
        println!("cargo:warning=colltune-mpi: could not name the MPI library (no mpicc, MPICC or pkg-config entry answered); it is recorded as `unknown`");
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut f = fs::File::create(out.join("mpi_build.rs")).expect("write OUT_DIR/mpi_build.rs");
    writeln!(
        f,
        "/// The MPI family colltune-mpi was built for.\n\
         pub const BUILT_FAMILY: Family = Family::{};\n\
         /// The library's name and version from its header, e.g. `Open MPI v4.1.4`, `MPICH 4.0.2`.\n\
         pub const BUILT_FOR: &str = {:?};\n\
         /// Where the build found it (the wrapper or pkg-config entry).\n\
         pub const BUILT_WITH: &str = {:?};\n\
         /// The library directories recorded as the run path.\n\
         pub const BUILT_LIBDIRS: &[&str] = &{:?};",
        match family {
            "openmpi" => "OpenMpi",
            "mpich" => "Mpich",
            _ => "Unknown",
        },
        if version.is_empty() { name.clone() } else { format!("{name} {version}") },
        how,
        libdirs,
    )
    .expect("write OUT_DIR/mpi_build.rs");
    // How the header spells what bindgen turns into differently named
    // items: MPICH's combiners are a named enum (bindgen prefixes them:
    // `MPIR_Combiner_enum_MPI_COMBINER_NAMED`), Open MPI's an anonymous
    // one; MPICH's `MPI_Comm_f2c` / `MPI_Type_f2c` are macros (a cast, no
    // symbol in the library), Open MPI's functions.
    println!("cargo:rustc-check-cfg=cfg(colltune_combiner_enum)");
    println!("cargo:rustc-check-cfg=cfg(colltune_f2c_macro)");
    if let Some(p) = &probe {
        if p.header.contains("enum MPIR_Combiner_enum") {
            println!("cargo:rustc-cfg=colltune_combiner_enum");
        }
        if p.macros
            .lines()
            .any(|l| l.starts_with("#define MPI_Comm_f2c("))
        {
            println!("cargo:rustc-cfg=colltune_f2c_macro");
        }
    }
    // For the build scripts of the crates that link binaries.
    println!("cargo:libdirs={}", libdirs.join("\x1f"));
}

struct Probe {
    how: String,
    /// `cc -E -dM`: the macros `mpi.h` defines.
    macros: String,
    /// `cc -E`: the preprocessed header.
    header: String,
    libdirs: Vec<String>,
}

fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> Option<String> {
    let mut c = Command::new(cmd);
    c.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().ok()?;
    if let Some(s) = stdin {
        child.stdin.take()?.write_all(s.as_bytes()).ok()?;
    }
    let o = child.wait_with_output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Whitespace-separated words with surrounding quotes removed (what the
/// wrappers' `-show` prints).
fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
        .collect()
}

fn libdirs_of(flags: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for w in words(flags) {
        if let Some(d) = w.strip_prefix("-L") {
            let d = d.trim_matches(|c| c == '"' || c == '\'');
            if !d.is_empty() && !dirs.iter().any(|x: &String| x == d) {
                dirs.push(d.to_string());
            }
        }
    }
    dirs
}

const HEADER: &str = "#include <mpi.h>\n";

fn from_wrapper(mpicc: &str) -> Option<Probe> {
    let show = run(mpicc, &["-show"], None)?;
    let macros = run(mpicc, &["-E", "-dM", "-x", "c", "-"], Some(HEADER))?;
    let header = run(mpicc, &["-E", "-x", "c", "-"], Some(HEADER)).unwrap_or_default();
    Some(Probe {
        how: format!("{mpicc} (-show: {})", show.trim()),
        macros,
        header,
        libdirs: libdirs_of(&show),
    })
}

fn from_pkg_config(name: &str) -> Option<Probe> {
    let cflags = run("pkg-config", &["--cflags", name], None)?;
    let libs = run("pkg-config", &["--libs-only-L", name], None)?;
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut args: Vec<String> = words(&cflags);
    args.extend(["-E", "-dM", "-x", "c", "-"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let macros = run(&cc, &args, Some(HEADER))?;
    let no_dm: Vec<&str> = args.iter().copied().filter(|a| *a != "-dM").collect();
    let header = run(&cc, &no_dm, Some(HEADER)).unwrap_or_default();
    Some(Probe {
        how: format!("pkg-config {name}"),
        macros,
        header,
        libdirs: libdirs_of(&libs),
    })
}

fn probe() -> Option<Probe> {
    if let Ok(pc) = env::var("MPI_PKG_CONFIG") {
        return from_pkg_config(&pc);
    }
    if let Ok(dir) = env::var("CRAY_MPICH_DIR") {
        if let Some(p) = from_pkg_config(&format!("{dir}/lib/pkgconfig/mpich.pc")) {
            return Some(p);
        }
    }
    let mpicc = env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    from_wrapper(&mpicc)
        .or_else(|| from_pkg_config("mpich"))
        .or_else(|| from_pkg_config("ompi"))
}

fn define<'a>(macros: &'a str, name: &str) -> Option<&'a str> {
    macros.lines().find_map(|l| {
        let mut it = l.splitn(3, ' ');
        (it.next()? == "#define" && it.next()? == name).then(|| it.next().unwrap_or("").trim())
    })
}

fn unquote(s: &str) -> String {
    s.trim_matches('"').to_string()
}

/// (family, name, version) from the header's macros.
fn identify(macros: &str) -> (&'static str, String, String) {
    if let Some(major) = define(macros, "OMPI_MAJOR_VERSION") {
        let minor = define(macros, "OMPI_MINOR_VERSION").unwrap_or("0");
        let release = define(macros, "OMPI_RELEASE_VERSION").unwrap_or("0");
        return (
            "openmpi",
            "Open MPI".into(),
            format!("v{major}.{minor}.{release}"),
        );
    }
    if let Some(v) = define(macros, "I_MPI_VERSION") {
        return ("mpich", "Intel(R) MPI Library".into(), unquote(v));
    }
    if let Some(v) = define(macros, "MVAPICH2_VERSION") {
        return ("mpich", "MVAPICH2".into(), unquote(v));
    }
    if let Some(v) = define(macros, "MPICH_VERSION") {
        return ("mpich", "MPICH".into(), unquote(v));
    }
    ("unknown", "unknown MPI".into(), String::new())
}
