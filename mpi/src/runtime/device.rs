//! Device (GPU) buffers: never touched by colltune's host code.
//!
//! A GPU-aware MPI library broadcasts device memory itself; colltune's own
//! routes do not (`shm` copies with `memcpy`, derived datatypes are packed
//! into host memory, the executors read and write the buffer), so a call
//! whose buffer is device memory and whose route is one of colltune's goes
//! to the library's `MPI_Bcast` instead, unchanged, and the trace says so.
//! A call the library runs anyway (handed off, the library's own decision
//! or one of its algorithms forced) is not looked at: the library is the
//! one that touches the buffer, so those paths pay nothing.
//!
//! Finding out, without linking a GPU runtime:
//!
//! ```text
//!  colltune's own route ──> runtime known? ──no──> libraries loaded since the last look?
//!                              │ yes                  │ no: host memory (one call, ~tens of ns)
//!                              ▼                      │ yes: dlopen(RTLD_NOLOAD) the runtimes' names
//!                     ask it: device memory?  <───────┘
//! ```
//!
//! - The runtimes: CUDA's driver library (`libcuda.so.1`, asked with
//!   `cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)`: device or
//!   array memory is the device's; unregistered host memory is an error,
//!   pinned host memory is host) and ROCm's HIP runtime (`libamdhip64.so`,
//!   `hipPointerGetAttribute(HIP_POINTER_ATTRIBUTE_MEMORY_TYPE)`: any
//!   memory HIP knows counts as the device's, since the enum's values moved
//!   between ROCm 5 and 6; a host buffer HIP registered then goes to the
//!   library too, which is always correct).
//! - Only a runtime already loaded in the process is used (`RTLD_NOLOAD`:
//!   colltune loads nothing, so a program without a GPU runtime sees no
//!   library it did not load). Programs commonly initialise their GPU after
//!   `MPI_Init` (the device is chosen by the node-local rank), so the look
//!   is repeated whenever the process has loaded a library since the last
//!   one. Telling that costs one load a call: the dynamic loader appends
//!   every library it loads to the list of loaded objects (`struct
//!   link_map`, `<link.h>`), so the last entry seen at a look has its
//!   `l_next` set once another was loaded. That entry is held loaded (a
//!   reference colltune never closes: a program's `dlclose` of it leaves it
//!   mapped) so that reading it is always safe. Where the entry cannot be
//!   held, `dl_iterate_phdr`'s count of loads (read from its first entry)
//!   tells it instead, at about 180 instructions and the loader's lock a
//!   call (measured: 512 B through `shm`'s small ring 961 -> 1,215
//!   instructions on the root, IMB 1.14x).
//! - The decision is each rank's own: a program whose buffer is device
//!   memory on some ranks and host memory on others, in one call, under a
//!   route of colltune's own, would run the library's broadcast on some
//!   ranks and colltune's on others. GPU programs broadcast device memory
//!   on every rank; the limitation is documented in docs/runtime.md.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// `cuPointerGetAttribute(void *data, CUpointer_attribute, CUdeviceptr)`.
type CuPointerGetAttribute = unsafe extern "C" fn(*mut c_void, c_int, u64) -> c_int;
/// `hipPointerGetAttribute(void *data, hipPointer_attribute, hipDeviceptr_t)`.
type HipPointerGetAttribute = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> c_int;

/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`, `HIP_POINTER_ATTRIBUTE_MEMORY_TYPE`.
const MEMORY_TYPE: c_int = 2;
/// `CU_MEMORYTYPE_DEVICE`, `CU_MEMORYTYPE_ARRAY`.
const CU_DEVICE: c_uint = 2;
const CU_ARRAY: c_uint = 3;

/// The runtimes looked for, by the name their libraries are loaded under.
const CUDA_NAMES: &[&CStr] = &[c"libcuda.so.1", c"libcuda.so"];
const HIP_NAMES: &[&CStr] = &[c"libamdhip64.so.6", c"libamdhip64.so.5", c"libamdhip64.so"];

/// The runtime found: 0 none yet; else the address of its query, tagged in
/// its lowest bit (0: CUDA's, 1: HIP's; functions are at least 2-aligned).
static QUERY: AtomicUsize = AtomicUsize::new(0);

/// The process's count of library loads at the last look (`u64::MAX`:
/// never looked), where [`TAIL`] holds no entry.
static LOADS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The last entry of the loaded objects at the last look, held loaded;
/// null: none held (never looked, or it could not be held).
static TAIL: AtomicPtr<LinkMap> = AtomicPtr::new(std::ptr::null_mut());

/// The public head of glibc's `struct link_map` (`<link.h>`, the layout
/// debuggers read).
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const std::ffi::c_char,
    l_ld: *const c_void,
    l_next: *mut LinkMap,
    l_prev: *mut LinkMap,
}

/// Whether `buffer` is a GPU's memory, as far as a GPU runtime loaded in
/// this process says (no runtime: never).
///
/// # Safety
/// Any pointer value; it is only passed to the runtime's query.
#[inline]
pub unsafe fn is_device(buffer: *const c_void) -> bool {
    let mut q = QUERY.load(Ordering::Acquire);
    if q == 0 {
        q = look();
        if q == 0 {
            return false;
        }
    }
    if q & 1 == 0 {
        // SAFETY: stored by `look` from the runtime's symbol of this type;
        // the runtime stays loaded (it was loaded by the program, and the
        // handle colltune opened holds a reference).
        let f: CuPointerGetAttribute = std::mem::transmute(q);
        let mut kind: c_uint = 0;
        f(
            (&mut kind as *mut c_uint).cast(),
            MEMORY_TYPE,
            buffer as u64,
        ) == 0
            && (kind == CU_DEVICE || kind == CU_ARRAY)
    } else {
        // SAFETY: as above, HIP's symbol of this type.
        let f: HipPointerGetAttribute = std::mem::transmute(q & !1);
        let mut kind: c_uint = 0;
        f(
            (&mut kind as *mut c_uint).cast(),
            MEMORY_TYPE,
            buffer as *mut c_void,
        ) == 0
    }
}

/// Looks for a loaded GPU runtime where the process has loaded libraries
/// since the last look; its query's tagged address, or 0.
#[cold]
fn look() -> usize {
    let tail = TAIL.load(Ordering::Acquire);
    if tail.is_null() {
        let loads = loads();
        if LOADS.swap(loads, Ordering::AcqRel) == loads {
            return 0;
        }
    } else {
        // SAFETY: a held entry stays mapped; the loader sets `l_next`
        // (once, under its lock) when it appends a library.
        let next = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*tail).l_next)) };
        if next.is_null() {
            return 0;
        }
    }
    // Held before the runtimes are looked for: a library loaded from here
    // on comes after it, and is seen at the next call.
    TAIL.store(hold_tail(), Ordering::Release);
    let found = find(CUDA_NAMES, c"cuPointerGetAttribute")
        .or_else(|| find(HIP_NAMES, c"hipPointerGetAttribute").map(|a| a | 1))
        .unwrap_or(0);
    if found != 0 {
        QUERY.store(found, Ordering::Release);
    }
    found
}

/// The address of `symbol` in the first of `names` already loaded.
fn find(names: &[&CStr], symbol: &CStr) -> Option<usize> {
    names.iter().find_map(|name| {
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD loads nothing, it
        // only returns a (counted) handle of a library already loaded.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if h.is_null() {
            return None;
        }
        // SAFETY: a live handle and a NUL-terminated name.
        let f = unsafe { libc::dlsym(h, symbol.as_ptr()) };
        (!f.is_null() && f as usize & 1 == 0).then_some(f as usize)
    })
}

/// The last entry of the main program's list of loaded objects, held
/// loaded by a reference never closed; null where it cannot be (then the
/// count of loads tells what was loaded since).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn hold_tail() -> *mut LinkMap {
    // SAFETY: dlopen(NULL) is the main program's handle; dlinfo writes its
    // entry; entries are only appended (under the loader's lock), so the
    // walk reads entries that stay valid while it runs, and the one it
    // ends on is then held by dlopen(RTLD_NOLOAD), which loads nothing.
    unsafe {
        let main = libc::dlopen(std::ptr::null(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if main.is_null() {
            return std::ptr::null_mut();
        }
        let mut lm: *mut LinkMap = std::ptr::null_mut();
        if libc::dlinfo(
            main,
            libc::RTLD_DI_LINKMAP,
            (&mut lm as *mut *mut LinkMap).cast(),
        ) != 0
            || lm.is_null()
        {
            return std::ptr::null_mut();
        }
        let first = lm;
        while !(*lm).l_next.is_null() {
            lm = (*lm).l_next;
        }
        if lm == first {
            // The main program: never unloaded.
            return lm;
        }
        let name = (*lm).l_name;
        if name.is_null() || *name == 0 {
            return std::ptr::null_mut();
        }
        let h = libc::dlopen(name, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            // Not a library dlopen finds by its name (the vDSO): not held.
            return std::ptr::null_mut();
        }
        let mut held: *mut LinkMap = std::ptr::null_mut();
        if libc::dlinfo(
            h,
            libc::RTLD_DI_LINKMAP,
            (&mut held as *mut *mut LinkMap).cast(),
        ) != 0
            || held != lm
        {
            return std::ptr::null_mut();
        }
        lm
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn hold_tail() -> *mut LinkMap {
    std::ptr::null_mut()
}

/// The process's count of library loads so far (`dlpi_adds`, the same in
/// every entry: read from the first, then stop).
fn loads() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr hands a valid entry; `data` is the u64 below.
        *data.cast::<u64>() = (*info).dlpi_adds;
        1
    }
    let mut adds = 0u64;
    // SAFETY: the callback writes one u64 through `data`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut adds as *mut u64).cast()) };
    adds
}

/// The runtime found so far, for the trace (`CUDA`, `HIP`, None).
pub fn runtime() -> Option<&'static str> {
    match QUERY.load(Ordering::Acquire) {
        0 => None,
        q if q & 1 == 0 => Some("CUDA"),
        _ => Some("HIP"),
    }
}
