//! The C-facing side of the runtime selector, shared by the C ABI
//! (`capi/`: `libcolltune.so`, `colltune.h`) and the interposition library
//! (`preload/`).
//!
//! Per-communicator state hangs off the communicator itself as an MPI
//! attribute (`MPI_Comm_create_keyval`): created at the first call on that
//! communicator (collective, as the call is), freed by MPI when the
//! communicator is freed, never copied by `MPI_Comm_dup`. So a freed and
//! recycled handle never finds stale state, and nothing is rebuilt per call.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, Once};

use crate::select::{CommSelector, Selector};
use crate::transport::mpi::{ffi as cffi, Comm, Control, TransportError};
use colltune_algorithms::{swap, Collective};
use mpi::ffi;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

const SUCCESS: c_int = ffi::MPI_SUCCESS as c_int;
const ERR_OTHER: c_int = ffi::MPI_ERR_OTHER as c_int;

struct Global {
    selector: Arc<Selector>,
    keyval: c_int,
}

static GLOBAL: Mutex<Option<Global>> = Mutex::new(None);

type Slot = Mutex<CommSelector>;

unsafe extern "C" fn copy_attr(
    _old: MPI_Comm,
    _key: c_int,
    _extra: *mut c_void,
    _val_in: *mut c_void,
    _val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // A duplicate gets its own state at its first call.
    *flag = 0;
    SUCCESS
}

unsafe extern "C" fn delete_attr(
    _comm: MPI_Comm,
    _key: c_int,
    val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    if !val.is_null() {
        drop(Box::from_raw(val as *mut Slot));
    }
    SUCCESS
}

fn report(msg: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| eprintln!("colltune: {msg}"));
}

/// Loads the table (`COLLTUNE_TABLE`) and settings; collective over
/// `MPI_COMM_WORLD`. Idempotent. With `COLLTUNE_STRICT=1` a bad table
/// aborts the job with its message; otherwise it is a warning and the
/// library's own collectives run.
pub fn init() -> c_int {
    let mut g = match GLOBAL.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if g.is_some() {
        return SUCCESS;
    }
    if !cffi::initialized() || cffi::finalized() {
        report("colltune_init: MPI is not initialised: call it after MPI_Init");
        return ERR_OTHER;
    }
    let world = match Comm::world() {
        Ok(w) => w,
        Err(e) => {
            report(&format!("colltune_init: {e}"));
            return ERR_OTHER;
        }
    };
    let selector = match crate::select::load(&world) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // COLLTUNE_STRICT=1: a bad table is fatal, on every rank alike.
            if world.rank() == 0 {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "colltune: error: {e}\ncolltune: COLLTUNE_STRICT=1, so the job stops"
                );
                let _ = std::io::stderr().flush();
            }
            // Every rank fails alike; wait until rank 0 has said why, since
            // the first abort kills the others.
            let _ = world.barrier();
            // SAFETY: aborting the job is always allowed.
            unsafe { ffi::MPI_Abort(cffi::comm_world(), 3) };
            return ERR_OTHER;
        }
    };
    let mut keyval: c_int = 0;
    // SAFETY: valid callbacks and out pointer.
    let rc = unsafe {
        ffi::MPI_Comm_create_keyval(
            Some(copy_attr),
            Some(delete_attr),
            &mut keyval,
            std::ptr::null_mut(),
        )
    };
    if rc != SUCCESS {
        return rc;
    }
    let slot = Box::new(Mutex::new(crate::select::for_comm(&selector, world)));
    // SAFETY: the attribute owns the box until MPI deletes it.
    let rc =
        unsafe { ffi::MPI_Comm_set_attr(cffi::comm_world(), keyval, Box::into_raw(slot).cast()) };
    if rc != SUCCESS {
        return rc;
    }
    *g = Some(Global { selector, keyval });
    SUCCESS
}

/// Frees colltune's state (before `MPI_Finalize`).
pub fn finalize() -> c_int {
    let mut g = match GLOBAL.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(mut gl) = g.take() {
        if !cffi::finalized() {
            // SAFETY: deleting our own attribute runs delete_attr.
            unsafe {
                ffi::MPI_Comm_delete_attr(cffi::comm_world(), gl.keyval);
                ffi::MPI_Comm_free_keyval(&mut gl.keyval);
            }
        }
    }
    SUCCESS
}

/// The communicator's selector, created at its first call.
unsafe fn slot(comm: MPI_Comm) -> Result<Option<*mut Slot>, c_int> {
    let (selector, keyval) = {
        let g = match GLOBAL.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        match g.as_ref() {
            Some(g) => (Arc::clone(&g.selector), g.keyval),
            None => return Ok(None),
        }
    };
    let mut val: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    let rc = ffi::MPI_Comm_get_attr(
        comm,
        keyval,
        (&mut val as *mut *mut c_void).cast(),
        &mut flag,
    );
    if rc != SUCCESS {
        return Err(rc);
    }
    if flag != 0 && !val.is_null() {
        return Ok(Some(val as *mut Slot));
    }
    let mut inter: c_int = 0;
    ffi::MPI_Comm_test_inter(comm, &mut inter);
    if inter != 0 {
        return Ok(None);
    }
    let c = Comm::from_raw(comm).map_err(|e| {
        report(&format!(
            "setting up a communicator: {e}; using the MPI library's collectives on it"
        ));
        ERR_OTHER
    })?;
    let raw = Box::into_raw(Box::new(Mutex::new(crate::select::for_comm(&selector, c))));
    let rc = ffi::MPI_Comm_set_attr(comm, keyval, raw.cast());
    if rc != SUCCESS {
        drop(Box::from_raw(raw));
        return Err(rc);
    }
    Ok(Some(raw))
}

/// Bytes of `count` elements of `dt` if they are one contiguous run
/// starting at the buffer (no holes, no offset), else None.
unsafe fn contiguous_bytes(dt: MPI_Datatype, count: c_int) -> Option<u64> {
    if count < 0 {
        return None;
    }
    let mut size: c_int = 0;
    let (mut tlb, mut text, mut lb, mut ext): (
        ffi::MPI_Aint,
        ffi::MPI_Aint,
        ffi::MPI_Aint,
        ffi::MPI_Aint,
    ) = (0, 0, 0, 0);
    if ffi::MPI_Type_size(dt, &mut size) != SUCCESS
        || ffi::MPI_Type_get_true_extent(dt, &mut tlb, &mut text) != SUCCESS
        || ffi::MPI_Type_get_extent(dt, &mut lb, &mut ext) != SUCCESS
    {
        return None;
    }
    let size = size as ffi::MPI_Aint;
    (tlb == 0 && lb == 0 && text == size && ext == size).then(|| size as u64 * count as u64)
}

fn error_code(comm: MPI_Comm, e: &TransportError) -> c_int {
    report(&format!("error: {e}"));
    let code = match e {
        TransportError::Mpi(m) if m.code > 0 => m.code,
        _ => ERR_OTHER,
    };
    // The application's error handler decides (by default: abort).
    // SAFETY: comm is the caller's valid communicator.
    unsafe { ffi::MPI_Comm_call_errhandler(comm, code) };
    code
}

/// `MPI_Bcast` through colltune (library fallback for non-contiguous
/// datatypes, intercommunicators, uninitialised colltune, bad roots).
/// # Safety
/// As for `MPI_Bcast`: `buffer` holds `count` elements of `datatype`.
pub unsafe fn bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let lib = || ffi::PMPI_Bcast(buffer, count, datatype, root, comm);
    let Some(bytes) = contiguous_bytes(datatype, count) else {
        return lib();
    };
    let s = match slot(comm) {
        Ok(Some(s)) => s,
        Ok(None) => return lib(),
        Err(rc) => return rc,
    };
    let guard = match (*s).lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if root < 0 || root as usize >= guard.comm().size() {
        drop(guard);
        return lib();
    }
    let buf: &mut [u8] = if bytes == 0 || buffer.is_null() {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(buffer as *mut u8, bytes as usize)
    };
    match guard.bcast(buf, root as usize) {
        Ok(_) => SUCCESS,
        Err(e) => error_code(comm, &e),
    }
}

/// Pairwise swap; `pairing` 0: neighbours, 1: halves.
/// # Safety
/// `sendbuf` and `recvbuf` each hold `count` elements of `datatype`.
pub unsafe fn swap_call(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    pairing: c_int,
    comm: MPI_Comm,
) -> c_int {
    let pairing = if pairing == 1 { "halves" } else { "neighbors" };
    let (mut rank, mut size) = (0, 0);
    ffi::MPI_Comm_rank(comm, &mut rank);
    ffi::MPI_Comm_size(comm, &mut size);
    let lib = || match swap::partner(rank as usize, size as usize, pairing) {
        Some(q) => ffi::PMPI_Sendrecv(
            sendbuf,
            count,
            datatype,
            q as c_int,
            0x5A,
            recvbuf,
            count,
            datatype,
            q as c_int,
            0x5A,
            comm,
            ffi::RSMPI_STATUS_IGNORE,
        ),
        None => SUCCESS,
    };
    let Some(bytes) = contiguous_bytes(datatype, count) else {
        return lib();
    };
    let s = match slot(comm) {
        Ok(Some(s)) => s,
        Ok(None) => return lib(),
        Err(rc) => return rc,
    };
    let guard = match (*s).lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let n = bytes as usize;
    let (out, inn): (&mut [u8], &mut [u8]) = if n == 0 {
        (&mut [], &mut [])
    } else {
        (
            // The schedule only reads the outgoing buffer.
            std::slice::from_raw_parts_mut(sendbuf as *mut u8, n),
            std::slice::from_raw_parts_mut(recvbuf as *mut u8, n),
        )
    };
    match guard.swap(out, inn, pairing) {
        Ok(_) => SUCCESS,
        Err(e) => error_code(comm, &e),
    }
}

/// What colltune would run for `bytes` on `comm`.
/// # Safety
/// `comm` is a valid communicator.
pub unsafe fn explain(comm: MPI_Comm, bytes: u64) -> Result<String, c_int> {
    match slot(comm)? {
        Some(s) => {
            let g = match (*s).lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            Ok(format!(
                "bcast: {}; swap: {}",
                g.choose(Collective::Bcast, bytes),
                g.choose(Collective::Swap, bytes)
            ))
        }
        None => Ok("colltune is not initialised or this is an intercommunicator: the MPI library's own collectives".into()),
    }
}
