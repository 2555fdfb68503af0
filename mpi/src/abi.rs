//! Which MPI library colltune was built for, which one it runs on, and what
//! to do when they differ.
//!
//! MPI has three binary families: Open MPI's (handles are pointers to the
//! library's objects: `MPI_COMM_WORLD` is `&ompi_mpi_comm_world`), MPICH's
//! (handles are 32-bit integers: MPICH, Intel MPI, MVAPICH, Cray MPICH),
//! and the MPI standard ABI of MPI 5.0 (`mpi_abi.h`, `libmpi_abi.so.1`:
//! handles are pointers to opaque structs, the predefined ones small
//! integer constants, `MPI_COMM_WORLD` is `(MPI_Comm)0x101`; any
//! implementation may provide it, MPICH 5 does beside its own). Code built
//! for one family passes handles another cannot read, so a preload library
//! built for one refuses to act inside a program of another
//! ([`foreign_family`]): it says so once and passes every call through
//! untouched ([`raw`]). Libraries of one family share a soname (Open MPI
//! 4.1 and 5.0 both ship `libmpi.so.40`; every ABI library is
//! `libmpi_abi.so.1`), so a binary can load another version than it was
//! built for: [`mismatch`] names both (for the ABI that is the point: a
//! build runs on any library that provides the same ABI version).
//!
//! The build-time side comes from `build.rs` (the library's `mpi.h`); the
//! run-time side from `MPI_Get_library_version` (the implementation) and
//! `MPI_Abi_get_version` of the same library (the standard ABI, or -1 for
//! an implementation's own interface), both allowed before `MPI_Init`.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use mpi::ffi::{MPI_Comm, MPI_Datatype};

/// The binary families of MPI libraries (and, but for `Abi`, the
/// implementations' lineages).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Family {
    /// Open MPI (handles are pointers).
    OpenMpi,
    /// MPICH and its derivatives: Intel MPI, MVAPICH, Cray MPICH (handles
    /// are 32-bit integers).
    Mpich,
    /// The MPI standard ABI (MPI 5.0; handles are pointers to opaque
    /// structs, predefined ones integer constants), whatever provides it.
    Abi,
    /// Not recognised.
    Unknown,
}

impl Family {
    /// A short name: `Open MPI`, `MPICH`, `MPI standard`.
    pub fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
            Family::Abi => "MPI standard",
            Family::Unknown => "unknown",
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/mpi_build.rs"));

// The bindings mpi-sys generated must be of the family build.rs found: a
// target directory reused with another MPICC keeps mpi-sys's old bindings
// (its build script does not watch MPICC), and handles of the wrong width
// would be passed to the library. Build each MPI in a target directory of
// its own (jobs/build.sh does). For the standard ABI, mpi-sys's bindgen
// must read mpi_abi.h (BINDGEN_EXTRA_CLANG_ARGS=-DMPI_ABI: jobs/mpi-env.sh),
// not MPICH's own mpi.h beside it.
const _: () = assert!(
    match BUILT_FAMILY {
        Family::OpenMpi | Family::Abi => size_of::<MPI_Comm>() == size_of::<usize>(),
        Family::Mpich => size_of::<MPI_Comm>() == 4,
        Family::Unknown => true,
    },
    "mpi-sys's bindings are of another MPI family than the mpi.h build.rs found: \
     build each MPI in a target directory of its own, with its environment \
     (jobs/build.sh --mpi NAME; the standard ABI needs BINDGEN_EXTRA_CLANG_ARGS=-DMPI_ABI)"
);
// The ABI's handles are its own opaque structs, not Open MPI's: the name
// is the proof that bindgen read mpi_abi.h.
#[cfg(colltune_abi)]
const _: usize = size_of::<mpi::ffi::MPI_ABI_Comm>();

/// One library, as its version string names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    /// The implementation's lineage (`OpenMpi`, `Mpich`; never `Abi`): what
    /// a table's choices and the library's own algorithms depend on.
    pub family: Family,
    /// Name and version, short: `Open MPI v4.1.4`, `MPICH 4.0.2`,
    /// `Intel(R) MPI Library 2021.13`; through the standard ABI
    /// `MPICH 5.0.2 (MPI standard ABI 1.0)`.
    pub name: String,
    /// The standard ABI's version (major, minor) when the library is
    /// reached through it (`MPI_Abi_get_version`).
    pub abi: Option<(i32, i32)>,
}

impl Library {
    /// The binary family: which handles the program and the library pass.
    pub fn binary(&self) -> Family {
        if self.abi.is_some() {
            Family::Abi
        } else {
            self.family
        }
    }

    /// The library with its binary interface: `Open MPI v4.1.4 (Open MPI
    /// ABI)`; through the standard ABI the name says it already.
    pub fn described(&self) -> String {
        match self.abi {
            Some(_) => self.name.clone(),
            None => format!("{} ({})", self.name, self.binary_name()),
        }
    }

    /// The binary interface in words: `Open MPI ABI`, `MPI standard ABI 1.0`.
    pub fn binary_name(&self) -> String {
        match self.abi {
            Some((major, minor)) => format!("MPI standard ABI {major}.{minor}"),
            None => format!("{} ABI", self.family.name()),
        }
    }
}

/// Names the library from `MPI_Get_library_version`'s text.
pub fn parse_library_version(text: &str) -> Library {
    let first = text.lines().next().unwrap_or("").trim();
    let head = first.split(',').next().unwrap_or(first).trim();
    let lower = text.to_ascii_lowercase();
    if head.starts_with("Open MPI") {
        return Library {
            family: Family::OpenMpi,
            name: head.to_string(),
            abi: None,
        };
    }
    if let Some(rest) = head.strip_prefix("Intel(R) MPI Library") {
        let v = rest.split_whitespace().next().unwrap_or("");
        return Library {
            family: Family::Mpich,
            name: format!("Intel(R) MPI Library {v}").trim().to_string(),
            abi: None,
        };
    }
    // MPICH: "MPICH Version:\t4.0.2"; MVAPICH2: "MVAPICH2 Version :\t2.3";
    // Cray: "MPI VERSION    : CRAY MPICH version 8.1.27 ...".
    for (prefix, name) in [("MVAPICH", "MVAPICH"), ("MPICH", "MPICH")] {
        if head.starts_with(prefix) {
            let v = head
                .split(':')
                .nth(1)
                .map(str::trim)
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("");
            let n = head.split_whitespace().next().unwrap_or(name);
            return Library {
                family: Family::Mpich,
                name: format!("{n} {v}").trim().to_string(),
                abi: None,
            };
        }
    }
    if lower.contains("cray mpich") || lower.contains("mpich") {
        return Library {
            family: Family::Mpich,
            name: head.to_string(),
            abi: None,
        };
    }
    Library {
        family: Family::Unknown,
        name: if head.is_empty() {
            "unknown".into()
        } else {
            head.to_string()
        },
        abi: None,
    }
}

/// The library this process runs on (callable before `MPI_Init`).
pub fn runtime() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut buf = vec![0u8; 8192];
        let mut len: c_int = 0;
        // SAFETY: buf is larger than MPI_MAX_LIBRARY_VERSION_STRING (8192 in
        // MPICH, 256 in Open MPI); the call is allowed before MPI_Init.
        let rc = unsafe { raw::PMPI_Get_library_version(buf.as_mut_ptr().cast(), &mut len) };
        if rc != 0 {
            return Library {
                family: Family::Unknown,
                name: "unknown".into(),
                abi: None,
            };
        }
        let n = (len.max(0) as usize).min(buf.len());
        let mut lib = parse_library_version(&String::from_utf8_lossy(&buf[..n]));
        lib.abi = program_abi_version();
        if let Some((major, minor)) = lib.abi {
            lib.name = format!("{} (MPI standard ABI {major}.{minor})", lib.name);
        }
        lib
    })
}

/// The standard ABI's version when the program's MPI library is reached
/// through it: `MPI_Abi_get_version` of the library that answers
/// `MPI_Get_library_version` (MPICH 5's own `libmpi.so.12` has the
/// function too and answers -1; a process can hold two libraries, the
/// program's and a preload library's, so the function must be the
/// program's library's: the one the dynamic linker finds first).
fn program_abi_version() -> Option<(i32, i32)> {
    /// The start of the loaded object holding `p`.
    fn object_of(p: *mut c_void) -> Option<usize> {
        // SAFETY: dladdr only reads the loader's tables; info is plain data.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        (unsafe { libc::dladdr(p, &mut info) } != 0).then_some(info.dli_fbase as usize)
    }
    // SAFETY: dlsym with NUL-terminated names in the global scope.
    let (lib, get) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"PMPI_Get_library_version".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"PMPI_Abi_get_version".as_ptr()),
        )
    };
    if lib.is_null() || get.is_null() || object_of(lib)? != object_of(get)? {
        return None;
    }
    // SAFETY: MPI 5.0's `int MPI_Abi_get_version(int *abi_major, int
    // *abi_minor)`, allowed before MPI_Init.
    let f: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int =
        unsafe { std::mem::transmute(get) };
    let (mut major, mut minor): (c_int, c_int) = (-1, -1);
    // SAFETY: two valid out pointers.
    let rc = unsafe { f(&mut major, &mut minor) };
    (rc == 0 && major >= 1).then_some((major, minor))
}

/// What this was built for with its binary interface:
/// `Open MPI v4.1.4 (Open MPI ABI)`; an ABI build's name says it already.
fn built_described() -> String {
    match BUILT_FAMILY {
        Family::Abi => BUILT_FOR.to_string(),
        f => format!("{BUILT_FOR} ({} ABI)", f.name()),
    }
}

/// Whether a library reached through `rt` takes this build's handles: the
/// same binary family and, for the standard ABI, the same major version.
fn same_binary(rt: &Library) -> bool {
    match (BUILT_FAMILY, rt.abi) {
        (Family::Abi, Some((major, _))) => major == BUILT_ABI_VERSION.0,
        (built, _) => built == rt.binary(),
    }
}

/// `colltune --version`'s MPI line: what this was built for and where.
pub fn built_for() -> String {
    let dirs = if BUILT_LIBDIRS.is_empty() {
        String::new()
    } else {
        format!(", run path {}", BUILT_LIBDIRS.join(":"))
    };
    match BUILT_FAMILY {
        // BUILT_FOR names the ABI already.
        Family::Abi if dirs.is_empty() => BUILT_FOR.to_string(),
        Family::Abi => format!("{BUILT_FOR} ({})", &dirs[2..]),
        f => format!("{BUILT_FOR} ({} ABI{dirs})", f.name()),
    }
}

/// A warning when the library this runs on is not the one it was built
/// for (another version of one family: the soname is shared); `None` when
/// they agree or either is unknown.
pub fn mismatch() -> Option<String> {
    let rt = runtime();
    if BUILT_FAMILY == Family::Unknown || rt.binary() == Family::Unknown {
        return None;
    }
    if !same_binary(rt) {
        return Some(format!(
            "colltune was built for {} but runs on {}: rebuild it for this library (jobs/build.sh --mpi NAME)",
            built_described(),
            rt.described()
        ));
    }
    // One standard ABI: any library that provides it is the library built for.
    if BUILT_FAMILY == Family::Abi {
        return None;
    }
    // The header may say more than the run-time string (Intel MPI's
    // 2021.13.0 against 2021.13).
    let same = BUILT_FOR.starts_with(rt.name.as_str()) || rt.name.starts_with(BUILT_FOR);
    (!same).then(|| {
        format!(
            "colltune was built for {BUILT_FOR} but runs on {}: the same ABI family, but check that the library path (LD_LIBRARY_PATH, the launcher) is the one you meant",
            rt.name
        )
    })
}

/// A warning when a table measured on one MPI family (its provenance's
/// `mpi:`) is loaded on the other: its times and choices were those of
/// another library. `None` when the families agree or either is unknown.
pub fn table_mismatch(table_mpi: &str) -> Option<String> {
    let made = parse_library_version(table_mpi);
    let rt = runtime();
    (made.family != Family::Unknown && rt.family != Family::Unknown && made.family != rt.family)
        .then(|| {
            format!(
                "the table was measured on {table_mpi} ({} family) but this runs on {} ({} family): its choices were made for another library; tune on this one",
                made.family.name(),
                rt.name,
                rt.family.name()
            )
        })
}

/// The rank in the job from the launcher's environment, before `MPI_Init`
/// (Open MPI, PMIx, Hydra, Slurm), if any says.
fn launcher_rank() -> Option<u64> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// For the preload library, before `MPI_Init`: whether the program runs on
/// a library of the other family. The first call decides; then (on the
/// job's first rank, or everywhere when no launcher says) one message on
/// stderr says colltune stays out of the way.
pub fn foreign_family() -> bool {
    static FOREIGN: OnceLock<bool> = OnceLock::new();
    *FOREIGN.get_or_init(|| {
        let rt = runtime();
        let foreign =
            BUILT_FAMILY != Family::Unknown && rt.binary() != Family::Unknown && !same_binary(rt);
        if foreign && launcher_rank().unwrap_or(0) == 0 {
            crate::say(&format!(
                "error: libcolltune_preload.so was built for {} but this program runs on {}; their handles differ, so colltune is disabled and the library's own MPI_Bcast runs. Use the preload library built for this MPI (jobs/build.sh --mpi NAME: target/NAME/release/libcolltune_preload.so).",
                built_described(),
                rt.described()
            ));
        }
        foreign
    })
}

/// A handle of the build's family from a whole argument register: the
/// preload library takes `MPI_Bcast`'s handles at register width so that
/// it can pass a foreign library's handles through unchanged (an MPICH
/// integer handle leaves the register's upper half undefined: it is
/// dropped here).
#[inline]
pub fn comm_from_reg(r: usize) -> MPI_Comm {
    from_reg(r)
}

/// See [`comm_from_reg`].
#[inline]
pub fn datatype_from_reg(r: usize) -> MPI_Datatype {
    from_reg(r)
}

/// A handle's register value: the inverse of [`comm_from_reg`] and
/// [`datatype_from_reg`] (a key for caches of handles).
#[inline]
pub fn to_reg<T: Copy>(h: T) -> usize {
    const { assert!(size_of::<T>() == 8 || size_of::<T>() == 4) };
    if size_of::<T>() == 8 {
        // SAFETY: T is a handle of 8 bytes: its bits as an integer.
        unsafe { std::mem::transmute_copy::<T, u64>(&h) as usize }
    } else {
        // SAFETY: T is a handle of 4 bytes: its bits as an integer.
        unsafe { std::mem::transmute_copy::<T, u32>(&h) as usize }
    }
}

#[inline]
fn from_reg<T: Copy>(r: usize) -> T {
    const { assert!(size_of::<T>() == 8 || size_of::<T>() == 4) };
    if size_of::<T>() == 8 {
        // SAFETY: T is a handle of 8 bytes (a pointer): any bits are a value.
        unsafe { std::mem::transmute_copy(&(r as u64)) }
    } else {
        // SAFETY: T is a handle of 4 bytes (an integer).
        unsafe { std::mem::transmute_copy(&(r as u32)) }
    }
}

/// The MPI entry points a foreign program's calls pass through, with
/// handles at register width (whatever the family, the bits go through
/// untouched). They resolve to the program's own library: it comes before
/// the preload library's dependencies in the dynamic linker's order.
#[allow(non_snake_case, clashing_extern_declarations)]
pub mod raw {
    use super::*;

    extern "C" {
        pub fn PMPI_Get_library_version(version: *mut c_char, len: *mut c_int) -> c_int;
        pub fn PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
        pub fn PMPI_Init_thread(
            argc: *mut c_int,
            argv: *mut *mut *mut c_char,
            required: c_int,
            provided: *mut c_int,
        ) -> c_int;
        pub fn PMPI_Finalize() -> c_int;
        pub fn PMPI_Ibcast(
            buffer: *mut c_void,
            count: c_int,
            datatype: usize,
            root: c_int,
            comm: usize,
            request: *mut c_void,
        ) -> c_int;
        pub fn PMPI_Bcast(
            buffer: *mut c_void,
            count: c_int,
            datatype: usize,
            root: c_int,
            comm: usize,
        ) -> c_int;
    }

    /// `MPI_Comm_f2c` of the program's library: Open MPI's function (looked
    /// up at run time: MPICH has no such symbol, and a reference to it
    /// would stop the library loading there), MPICH's cast.
    pub fn comm_f2c(f: c_int) -> usize {
        f2c(c"PMPI_Comm_f2c", f)
    }

    /// `MPI_Type_f2c` of the program's library, as [`comm_f2c`].
    pub fn type_f2c(f: c_int) -> usize {
        f2c(c"PMPI_Type_f2c", f)
    }

    fn f2c(name: &std::ffi::CStr, f: c_int) -> usize {
        if runtime().binary() == Family::Mpich {
            return f as u32 as usize;
        }
        // SAFETY: dlsym with a NUL-terminated name in the global scope.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        if p.is_null() {
            return f as u32 as usize;
        }
        // SAFETY: Open MPI's MPI_*_f2c take a Fortran integer and return a
        // handle (a pointer).
        let fun: unsafe extern "C" fn(c_int) -> usize = unsafe { std::mem::transmute(p) };
        // SAFETY: a conversion; the library checks the handle when used.
        unsafe { fun(f) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_library() {
        let l = parse_library_version(
            "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022\0",
        );
        assert_eq!(l.family, Family::OpenMpi);
        assert_eq!(l.name, "Open MPI v4.1.4");
        let l =
            parse_library_version("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Mar 31 2022\n");
        assert_eq!(l.family, Family::Mpich);
        assert_eq!(l.name, "MPICH 4.0.2");
        let l = parse_library_version("MPICH Version:      5.0.2\nMPICH Release date: ...\n");
        assert_eq!(l.name, "MPICH 5.0.2");
        let l = parse_library_version("Intel(R) MPI Library 2021.13 for Linux* OS\n");
        assert_eq!(l.family, Family::Mpich);
        assert_eq!(l.name, "Intel(R) MPI Library 2021.13");
        let l = parse_library_version(
            "MPI VERSION    : CRAY MPICH version 8.1.27.26 (ANL base 3.4a2)\n",
        );
        assert_eq!(l.family, Family::Mpich);
        assert_eq!(parse_library_version("").family, Family::Unknown);
    }

    #[test]
    fn the_standard_abi_is_a_binary_family_of_its_own() {
        let mut l = parse_library_version("MPICH Version:      5.0.2\n");
        assert_eq!(l.binary(), Family::Mpich);
        assert_eq!(l.binary_name(), "MPICH ABI");
        l.abi = Some((1, 0));
        assert_eq!(l.binary(), Family::Abi);
        // The lineage stays MPICH: MPICH's algorithms, MPICH's tables.
        assert_eq!(l.family, Family::Mpich);
        assert_eq!(l.binary_name(), "MPI standard ABI 1.0");
        l.name = "MPICH 5.0.2 (MPI standard ABI 1.0)".into();
        assert_eq!(l.described(), "MPICH 5.0.2 (MPI standard ABI 1.0)");
        l.abi = None;
        l.name = "MPICH 5.0.2".into();
        assert_eq!(l.described(), "MPICH 5.0.2 (MPICH ABI)");
        // A table measured through the ABI names its implementation first.
        let t = parse_library_version("MPICH 5.0.2 (MPI standard ABI 1.0)");
        assert_eq!(t.family, Family::Mpich);
    }

    #[test]
    fn handles_from_registers_keep_their_bits() {
        let c: MPI_Comm = comm_from_reg(0xdead_beef_4400_0000);
        let back: usize = if size_of::<MPI_Comm>() == 8 {
            // SAFETY: 8-byte handle.
            unsafe { std::mem::transmute_copy::<MPI_Comm, u64>(&c) as usize }
        } else {
            // SAFETY: 4-byte handle.
            unsafe { std::mem::transmute_copy::<MPI_Comm, u32>(&c) as usize }
        };
        let want = if size_of::<MPI_Comm>() == 8 {
            0xdead_beef_4400_0000
        } else {
            0x4400_0000
        };
        assert_eq!(back, want);
    }
}
