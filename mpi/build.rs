//! Names the MPI library colltune-mpi is built against, at build time.
//!
//! mpi-sys (rsmpi) finds MPI through `MPI_PKG_CONFIG`, `CRAY_MPICH_DIR`,
//! `MPICC` (or `mpicc` on the PATH), then pkg-config `mpich` / `ompi`; this
//! script follows the same order, reads the library's family and version
//! from its `mpi.h` (`OMPI_*_VERSION`, `I_MPI_VERSION`, `MPICH_VERSION`,
//! `MVAPICH2_VERSION`; the MPI standard ABI's `mpi_abi.h` by
//! `MPI_ABI_VERSION`, with the library's soname and the implementation
//! whose wrapper built it) and the library directories from the wrapper's
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
    let mut built_for = if version.is_empty() {
        name.clone()
    } else {
        format!("{name} {version}")
    };
    // The standard ABI's header names no implementation: the soname the
    // wrapper links, and the implementation its own header names.
    let mut abi_version = (0, 0);
    if let (Some(p), "abi") = (&probe, family) {
        abi_version = (
            define_int(&p.macros, "MPI_ABI_VERSION").unwrap_or(0),
            define_int(&p.macros, "MPI_ABI_SUBVERSION").unwrap_or(0),
        );
        let soname = p
            .libs
            .iter()
            .find(|l| l.contains("mpi"))
            .map(|l| soname(&libdirs, l))
            .unwrap_or_else(|| "no MPI library named".into());
        let implementation = p
            .wrapper
            .as_deref()
            .and_then(abi_implementation)
            .unwrap_or_else(|| "an unnamed implementation".into());
        built_for = format!("{built_for} ({soname}), built with {implementation}");
    }
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
         /// The library's name and version from its header, e.g. `Open MPI v4.1.4`, `MPICH 4.0.2`,\n\
         /// `MPI standard ABI 1.0 (libmpi_abi.so.1), built with MPICH 5.0.2`.\n\
         pub const BUILT_FOR: &str = {:?};\n\
         /// Where the build found it (the wrapper or pkg-config entry).\n\
         pub const BUILT_WITH: &str = {:?};\n\
         /// The library directories recorded as the run path.\n\
         pub const BUILT_LIBDIRS: &[&str] = &{:?};\n\
         /// The standard ABI's version (major, minor) for an ABI build; (0, 0) otherwise.\n\
         pub const BUILT_ABI_VERSION: (i32, i32) = {:?};",
        match family {
            "openmpi" => "OpenMpi",
            "mpich" => "Mpich",
            "abi" => "Abi",
            _ => "Unknown",
        },
        built_for,
        how,
        libdirs,
        abi_version,
    )
    .expect("write OUT_DIR/mpi_build.rs");
    // How the header spells what bindgen turns into differently named
    // items: MPICH's combiners are a named enum (bindgen prefixes them:
    // `MPIR_Combiner_enum_MPI_COMBINER_NAMED`), Open MPI's an anonymous
    // one; MPICH's `MPI_Comm_f2c` / `MPI_Type_f2c` are macros (a cast, no
    // symbol in the library), Open MPI's functions.
    println!("cargo:rustc-check-cfg=cfg(colltune_combiner_enum)");
    println!("cargo:rustc-check-cfg=cfg(colltune_win_model_enum)");
    println!("cargo:rustc-check-cfg=cfg(colltune_f2c_macro)");
    println!("cargo:rustc-check-cfg=cfg(colltune_abi)");
    // The standard ABI has no Fortran handles of its own (no `MPI_Fint`,
    // no f2c): its Fortran bindings are a library above the C interface.
    if family == "abi" {
        println!("cargo:rustc-cfg=colltune_abi");
    }
    if let Some(p) = &probe {
        if p.header.contains("enum MPIR_Combiner_enum") {
            println!("cargo:rustc-cfg=colltune_combiner_enum");
        }
        // MPICH's window models are a named enum too (`MPIR_Win_model`).
        if p.header.contains("enum MPIR_Win_model") {
            println!("cargo:rustc-cfg=colltune_win_model_enum");
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
    println!("cargo:family={family}");
}

struct Probe {
    how: String,
    /// `cc -E -dM`: the macros `mpi.h` defines.
    macros: String,
    /// `cc -E`: the preprocessed header.
    header: String,
    libdirs: Vec<String>,
    /// The libraries linked (`-l`), e.g. `mpi_abi`.
    libs: Vec<String>,
    /// The compiler wrapper, when the probe went through one.
    wrapper: Option<String>,
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

fn libs_of(flags: &str) -> Vec<String> {
    words(flags)
        .iter()
        .filter_map(|w| w.strip_prefix("-l"))
        .map(String::from)
        .collect()
}

fn from_wrapper(mpicc: &str) -> Option<Probe> {
    let show = run(mpicc, &["-show"], None)?;
    let macros = run(mpicc, &["-E", "-dM", "-x", "c", "-"], Some(HEADER))?;
    let header = run(mpicc, &["-E", "-x", "c", "-"], Some(HEADER)).unwrap_or_default();
    Some(Probe {
        how: format!("{mpicc} (-show: {})", show.trim()),
        macros,
        header,
        libdirs: libdirs_of(&show),
        libs: libs_of(&show),
        wrapper: Some(mpicc.to_string()),
    })
}

/// The implementation behind a standard-ABI wrapper, from its own header:
/// MPICH's `mpi.h` is `mpi_abi.h` only when `MPI_ABI` is defined (as
/// `mpicc_abi` does), so with it undefined the same wrapper reads MPICH's
/// native header and its `MPICH_VERSION`. None where that names nothing.
fn abi_implementation(mpicc: &str) -> Option<String> {
    let macros = run(
        mpicc,
        &["-E", "-dM", "-x", "c", "-"],
        Some("#undef MPI_ABI\n#include <mpi.h>\n"),
    )?;
    match identify(&macros) {
        ("abi" | "unknown", ..) => None,
        (_, name, version) => Some(format!("{name} {version}")),
    }
}

/// The soname of `lib<name>.so` in one of `dirs` (its ELF `DT_SONAME`;
/// through a linker script `INPUT(libmpi_abi.so.1)`, as pip's wheels ship
/// the link), else the file name it links to, else `lib<name>.so`.
fn soname(dirs: &[String], name: &str) -> String {
    let file = format!("lib{name}.so");
    for d in dirs {
        let mut path = PathBuf::from(d).join(&file);
        if !path.exists() {
            continue;
        }
        let mut bytes = fs::read(&path).unwrap_or_default();
        if let Some(target) = linker_script_input(&bytes) {
            path = PathBuf::from(d).join(target);
            bytes = fs::read(&path).unwrap_or_default();
        }
        if let Some(s) = elf_soname(&bytes) {
            return s;
        }
        if let Some(n) = fs::canonicalize(&path)
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        {
            return n;
        }
    }
    file
}

/// The first file a small linker script names: `INPUT(libx.so.1)`, `GROUP ( libx.so.1 ... )`.
fn linker_script_input(b: &[u8]) -> Option<String> {
    if b.len() > 4096 || b.starts_with(b"\x7fELF") {
        return None;
    }
    let text = std::str::from_utf8(b).ok()?;
    let inner = text.split_once('(')?.1.split_once(')')?.0;
    let first = inner.split_whitespace().next()?;
    (!first.contains('/')).then(|| first.to_string())
}

/// `DT_SONAME` of a 64-bit little-endian ELF shared object.
fn elf_soname(b: &[u8]) -> Option<String> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    // ELFCLASS64, ELFDATA2LSB.
    if b.get(..4)? != b"\x7fELF" || *b.get(4)? != 2 || *b.get(5)? != 1 {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    // Section headers: find SHT_DYNAMIC (6); its sh_link is the string table.
    let section = |i: usize| {
        let o = shoff + i * shentsize;
        Some((
            u32_at(o + 4)?,
            u64_at(o + 0x18)? as usize,
            u64_at(o + 0x20)? as usize,
            u32_at(o + 0x28)? as usize,
        ))
    };
    let (_, dyn_off, dyn_size, link) = (0..shnum).filter_map(section).find(|s| s.0 == 6)?;
    let (_, str_off, _, _) = section(link)?;
    let mut o = dyn_off;
    while o + 16 <= dyn_off + dyn_size {
        let (tag, val) = (u64_at(o)?, u64_at(o + 8)? as usize);
        if tag == 0 {
            break;
        }
        if tag == 14 {
            let s = b.get(str_off + val..)?;
            let end = s.iter().position(|&c| c == 0)?;
            return Some(String::from_utf8_lossy(&s[..end]).into_owned());
        }
        o += 16;
    }
    None
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
    let libs_l = run("pkg-config", &["--libs-only-l", name], None).unwrap_or_default();
    Some(Probe {
        how: format!("pkg-config {name}"),
        macros,
        header,
        libdirs: libdirs_of(&libs),
        libs: libs_of(&libs_l),
        wrapper: None,
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

fn define_int(macros: &str, name: &str) -> Option<i32> {
    define(macros, name)?.parse().ok()
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
    // The MPI standard ABI (MPI 5.0's mpi_abi.h, the same whichever
    // implementation provides it): the ABI's version and no
    // implementation's macros.
    if let Some(major) = define(macros, "MPI_ABI_VERSION") {
        let minor = define(macros, "MPI_ABI_SUBVERSION").unwrap_or("0");
        return ("abi", "MPI standard ABI".into(), format!("{major}.{minor}"));
    }
    ("unknown", "unknown MPI".into(), String::new())
}
