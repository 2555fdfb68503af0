//! A library's integer control variable reached at its own storage: the
//! global the library itself reads (Open MPI's `libnbc_ibcast_algorithm`,
//! exported by `mca_coll_libnbc.so` in 4.1 and by `libmpi.so` in 5.0), so
//! that forcing an algorithm around a call is a load and two stores
//! instead of three `MPI_T` calls (about 670 instructions a call in Open
//! MPI 4.1, callgrind).
//!
//! ```text
//!  find(cvar, symbol): every address `symbol` has (the global scope, then
//!  each loaded object's own), kept only where it is the variable's storage
//!  both ways:
//!    read through MPI_T  == *p        (the value now)
//!    write v1 through MPI_T, *p == v1  (another valid value)
//!    *p = v0, read through MPI_T == v0 (back where it was)
//!  else the variable is left as found and the caller keeps MPI_T.
//! ```
//!
//! The storage found is in a library the program's MPI loaded; the object
//! it lies in is held loaded (a reference never closed), so the address
//! stays valid whatever the library unloads. Nothing else changes: the
//! library reads the same int either way, and the variable's value is the
//! same between calls.

use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr::NonNull;

use crate::transport::mpi::ffi::Cvar;

/// The storage of an int control variable, proven by [`Storage::find`].
#[derive(Clone, Copy, Debug)]
pub struct Storage(NonNull<c_int>);

// SAFETY: the address of a process-wide int of the library's, written only
// under the caller's lock (`forcing::nonblocking`), and valid for the
// process's life (its object is held loaded).
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// The storage of `cvar`, by its `symbol`; `values`: values the variable
    /// accepts (two or more, so one differs from the value now). None where
    /// no address of that name is proven to be the variable's (the symbol
    /// is hidden, as MPICH's are; another library's variable of that name;
    /// `MPI_T` refuses a write): the variable is then as it was found.
    pub fn find(cvar: &Cvar, symbol: &CStr, values: &[c_int]) -> Option<Storage> {
        let now = cvar.read().ok()?;
        let other = *values.iter().find(|&&v| v != now)?;
        let chosen = candidates(symbol).into_iter().find(|&p| {
            let ok = Storage(p).proven(cvar, now, other);
            let _ = cvar.write(now);
            ok && hold(p)
        });
        chosen.map(Storage)
    }

    /// Whether this is `cvar`'s storage both ways (see the module docs).
    fn proven(&self, cvar: &Cvar, now: c_int, other: c_int) -> bool {
        self.read() == now && cvar.write(other).is_ok() && self.read() == other && {
            self.write(now);
            cvar.read().is_ok_and(|v| v == now)
        }
    }

    /// The value now.
    #[inline]
    pub fn read(&self) -> c_int {
        // SAFETY: proven to be the library's int, valid for the process.
        unsafe { self.0.as_ptr().read_volatile() }
    }

    /// Writes `value` (one the variable accepts: the caller's).
    #[inline]
    pub fn write(&self, value: c_int) {
        // SAFETY: as for `read`; the caller serialises writers.
        unsafe { self.0.as_ptr().write_volatile(value) }
    }
}

/// Every address `symbol` has: in the global scope, then in each loaded
/// object, distinct.
fn candidates(symbol: &CStr) -> Vec<NonNull<c_int>> {
    let mut found: Vec<NonNull<c_int>> = Vec::new();
    // SAFETY: dlsym in the global scope with a NUL-terminated name.
    if let Some(p) = NonNull::new(unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) }) {
        found.push(p.cast());
    }
    for name in loaded_objects() {
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD loads nothing, it only
        // returns a counted handle of an object already loaded (closed
        // below: the MPI library holds it while this runs).
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if h.is_null() {
            continue;
        }
        // SAFETY: a live handle and a NUL-terminated name.
        if let Some(p) = NonNull::new(unsafe { libc::dlsym(h, symbol.as_ptr()) }) {
            if !found.contains(&p.cast()) {
                found.push(p.cast());
            }
        }
        // SAFETY: the handle opened above, closed once.
        unsafe { libc::dlclose(h) };
    }
    found
}

/// Holds the object `p` lies in loaded for good (a handle never closed);
/// false where it cannot be held (then `p` is not used).
fn hold(p: NonNull<c_int>) -> bool {
    // SAFETY: dladdr fills `info` for an address of a loaded object; its
    // name is a NUL-terminated string of the loader's.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(p.as_ptr().cast(), &mut info) == 0 || info.dli_fname.is_null() {
            return false;
        }
        !libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD).is_null()
    }
}

/// The names of the objects loaded now (not the main program, not the
/// vDSO: those have no name).
fn loaded_objects() -> Vec<CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr hands a valid entry; `data` is the Vec below.
        let (name, names) = ((*info).dlpi_name, &mut *data.cast::<Vec<CString>>());
        if !name.is_null() && *name != 0 {
            names.push(CStr::from_ptr(name).to_owned());
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: the callback pushes onto the Vec passed through `data`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut names as *mut Vec<CString>).cast()) };
    names
}
