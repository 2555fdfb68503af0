//! The MPI tool interface: sessions, control variables (read, written, held open), thread level, processor name.

use super::*;

/// One session of the MPI tool interface: `MPI_T_init_thread` when
/// opened, `MPI_T_finalize` when dropped. On Open MPI colltune opens one
/// around each use, so its initialisations and finalisations come in
/// pairs nested in the application's (MPI_T counts them): an application
/// that finalises its last session finds MPI_T finalised, as without
/// colltune. Elsewhere (MPICH and its derivatives) the first session is
/// held until the process ends, because there finalising MPI_T is not
/// safe to pair: MPICH 4.0 cannot initialise it again (every
/// `MPI_T_cvar_get_index` fails afterwards, and an `MPI_Init` after it
/// crashes), and MPICH up to 5.0.1 frees its control variables at an
/// `MPI_T_finalize` after `MPI_Init` that its later collectives still read
/// (pmodels/mpich#7954). Holding one session keeps the application's own
/// pairs from reaching zero too; all it can see is that MPI_T still
/// answers after its last `MPI_T_finalize`.
#[must_use]
pub struct MpiT {
    /// Finalised when dropped (Open MPI); else the process's held session.
    paired: bool,
}

impl MpiT {
    /// Opens a session at MPI's own thread level: Open MPI takes the level
    /// `MPI_T_init_thread` asks for as MPI's (`MPI_Query_thread` would then
    /// answer it), so colltune asks for the level the program has.
    pub fn open() -> Result<MpiT, MpiError> {
        // The library's lineage as `abi` classifies it (one source of
        // truth), not its name.
        if crate::abi::runtime().family == crate::abi::Family::OpenMpi {
            Self::init()?;
            return Ok(MpiT { paired: true });
        }
        static HELD: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if !*held {
            Self::init()?;
            *held = true;
        }
        Ok(MpiT { paired: false })
    }

    /// Keeps one session open until the process ends, for a process that is
    /// colltune's own program (`bench`, `tune`, `verify`, after its
    /// `MPI_Init`): there is no application's MPI_T to stay paired with, and
    /// on Open MPI each first `MPI_T_init_thread` after the count fell to
    /// zero registers every framework again (it opens every component; 1.5-2
    /// s here, where libpsm2's constructor sleeps), which the benchmark
    /// paid at every forced algorithm and every point that writes a
    /// variable. Later sessions nest in this one. Idempotent; an error is
    /// left to the variables' own reads and writes to report.
    pub fn hold_for_process() {
        static HELD: std::sync::OnceLock<Option<MpiT>> = std::sync::OnceLock::new();
        HELD.get_or_init(|| MpiT::open().ok());
    }

    fn init() -> Result<(), MpiError> {
        let mut level: c_int = 0;
        // SAFETY: valid out pointer; only between MPI_Init and MPI_Finalize.
        let known = initialized()
            && !finalized()
            && unsafe { ffi::PMPI_Query_thread(&mut level) } == ffi::MPI_SUCCESS as c_int;
        if !known {
            // SAFETY: reading a constant of the library's.
            level = unsafe { ffi::RSMPI_THREAD_SINGLE };
        }
        let mut provided: c_int = 0;
        // SAFETY: valid out pointer; MPI_T may be initialised at any time.
        let rc = unsafe { ffi::PMPI_T_init_thread(level, &mut provided) };
        check(rc, "MPI_T_init_thread")
    }
}

/// Whether MPI_T is initialised now (by the application: colltune holds
/// no session between its uses on Open MPI): `MPI_T_cvar_get_num` answers
/// `MPI_T_ERR_NOT_INITIALIZED` otherwise. No side effect; any time.
pub fn mpi_t_initialized() -> bool {
    let mut n: c_int = 0;
    // SAFETY: valid out pointer.
    unsafe { ffi::PMPI_T_cvar_get_num(&mut n) == ffi::MPI_SUCCESS as c_int }
}

impl Drop for MpiT {
    fn drop(&mut self) {
        if self.paired {
            // SAFETY: pairs the MPI_T_init_thread of `open`.
            unsafe { ffi::PMPI_T_finalize() };
        }
    }
}

/// The index of the control variable `name`; an error naming it when the
/// library has none of that name.
fn cvar_index(name: &str) -> Result<c_int, MpiError> {
    let cname = std::ffi::CString::new(name).map_err(|_| MpiError {
        call: "MPI_T_cvar_get_index",
        code: -1,
        message: format!("bad control variable name {name:?}"),
    })?;
    let mut idx: c_int = -1;
    // SAFETY: NUL-terminated name, valid out pointer.
    check(
        unsafe { ffi::PMPI_T_cvar_get_index(cname.as_ptr(), &mut idx) },
        "MPI_T_cvar_get_index",
    )
    .map_err(|e| MpiError {
        message: format!(
            "{name}: {} (this MPI library has no control variable of that name)",
            e.message
        ),
        ..e
    })?;
    Ok(idx)
}

/// A handle on the global control variable `name` (freed by the caller
/// with `PMPI_T_cvar_handle_free`) and how many values it holds.
fn cvar_handle(name: &str) -> Result<(ffi::MPI_T_cvar_handle, c_int), MpiError> {
    let idx = cvar_index(name)?;
    let mut handle: ffi::MPI_T_cvar_handle = ptr::null_mut();
    let mut n: c_int = 0;
    // SAFETY: global (unbound) variable: no object handle.
    check(
        unsafe { ffi::PMPI_T_cvar_handle_alloc(idx, ptr::null_mut(), &mut handle, &mut n) },
        "MPI_T_cvar_handle_alloc",
    )?;
    Ok((handle, n))
}

/// What the MPI tool interface says of a control variable.
#[derive(Clone, Debug)]
pub struct CvarInfo {
    /// Its description (`MPI_T_cvar_get_info`).
    pub description: String,
    /// Its enumeration's items, (value, name), where it has one
    /// (`MPI_T_enum_get_info`, `MPI_T_enum_get_item`); None for a plain
    /// variable (`MPI_T_ENUM_NULL`).
    pub items: Option<Vec<(c_int, String)>>,
}

/// Reads a control variable's description and enumeration; an error when
/// the library has no such variable.
pub fn cvar_info(name: &str) -> Result<CvarInfo, MpiError> {
    let _t = MpiT::open()?;
    let idx = cvar_index(name)?;
    // Lengths first (null buffers), then the strings.
    let (mut name_len, mut desc_len): (c_int, c_int) = (0, 0);
    let (mut verbosity, mut binding, mut scope): (c_int, c_int, c_int) = (0, 0, 0);
    // SAFETY: both handle types are plain data (an integer or a pointer);
    // all-zero is a valid bit pattern, and MPI overwrites them.
    let mut dt: ffi::MPI_Datatype = unsafe { std::mem::zeroed() };
    let mut en: ffi::MPI_T_enum = ptr::null_mut();
    // SAFETY: null string buffers ask only for the lengths; out pointers valid.
    check(
        unsafe {
            ffi::PMPI_T_cvar_get_info(
                idx,
                ptr::null_mut(),
                &mut name_len,
                &mut verbosity,
                &mut dt,
                &mut en,
                ptr::null_mut(),
                &mut desc_len,
                &mut binding,
                &mut scope,
            )
        },
        "MPI_T_cvar_get_info",
    )?;
    let mut name_buf = vec![0u8; name_len.max(1) as usize + 1];
    let mut desc_buf = vec![0u8; desc_len.max(1) as usize + 1];
    let mut nl = name_buf.len() as c_int;
    let mut dl = desc_buf.len() as c_int;
    // SAFETY: buffers of the lengths passed in; out pointers valid.
    check(
        unsafe {
            ffi::PMPI_T_cvar_get_info(
                idx,
                name_buf.as_mut_ptr().cast(),
                &mut nl,
                &mut verbosity,
                &mut dt,
                &mut en,
                desc_buf.as_mut_ptr().cast(),
                &mut dl,
                &mut binding,
                &mut scope,
            )
        },
        "MPI_T_cvar_get_info",
    )?;
    let text = |b: &[u8]| {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let description = text(&desc_buf);
    if en.is_null() {
        return Ok(CvarInfo {
            description,
            items: None,
        });
    }
    let mut num: c_int = 0;
    let mut ename = vec![0u8; 256];
    let mut enl = ename.len() as c_int;
    // SAFETY: a valid enumeration handle from the library; buffer of enl bytes.
    check(
        unsafe { ffi::PMPI_T_enum_get_info(en, &mut num, ename.as_mut_ptr().cast(), &mut enl) },
        "MPI_T_enum_get_info",
    )?;
    let mut items = Vec::with_capacity(num.max(0) as usize);
    for i in 0..num.max(0) {
        let mut value: c_int = 0;
        let mut item = vec![0u8; 256];
        let mut il = item.len() as c_int;
        // SAFETY: index below num; buffer of il bytes.
        check(
            unsafe {
                ffi::PMPI_T_enum_get_item(en, i, &mut value, item.as_mut_ptr().cast(), &mut il)
            },
            "MPI_T_enum_get_item",
        )?;
        items.push((value, text(&item)));
    }
    Ok(CvarInfo {
        description,
        items: Some(items),
    })
}

/// Writes an integer control variable of the MPI library through the MPI
/// tool interface (`MPI_T_cvar_write`), e.g. Open MPI's
/// `coll_tuned_bcast_algorithm` (communicators created afterwards see it)
/// or MPICH's `MPIR_CVAR_BCAST_INTRA_ALGORITHM` (read at every call).
pub fn cvar_write_int(name: &str, value: c_int) -> Result<(), MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, _) = cvar_handle(name)?;
    let r = handle_write(handle, name, value);
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    r
}

/// Reads an integer (or boolean) control variable of the MPI library
/// through the MPI tool interface (`MPI_T_cvar_read`); an error when the
/// library has no such variable.
pub fn cvar_read_int(name: &str) -> Result<c_int, MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, n) = cvar_handle(name)?;
    let r = one_value(name, n).and_then(|()| handle_read(handle));
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    r
}

/// An error unless a handle holds one value (`n`, as `MPI_T_cvar_handle_alloc` said).
fn one_value(name: &str, n: c_int) -> Result<(), MpiError> {
    if n == 1 {
        return Ok(());
    }
    Err(MpiError {
        call: "MPI_T_cvar_handle_alloc",
        code: -1,
        message: format!("{name} holds {n} values, not one"),
    })
}

/// Reads an int through a handle of one value.
fn handle_read(handle: ffi::MPI_T_cvar_handle) -> Result<c_int, MpiError> {
    // Room for any one scalar (a boolean may be a C bool or an int); zeroed,
    // so a narrower type still reads as zero or not.
    let mut value = [0u8; 16];
    // SAFETY: a handle of one element of at most 16 bytes.
    let rc = unsafe { ffi::PMPI_T_cvar_read(handle, value.as_mut_ptr().cast()) };
    check(rc, "MPI_T_cvar_read")?;
    Ok(c_int::from_ne_bytes([
        value[0], value[1], value[2], value[3],
    ]))
}

/// Reads a string control variable (`MPI_CHAR`, as Open MPI's coll/han
/// module names) through the MPI tool interface: up to its first NUL.
pub fn cvar_read_string(name: &str) -> Result<String, MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, n) = cvar_handle(name)?;
    // Open MPI gives a string variable's count as 2048 and copies the
    // whole string (strcpy): room for the count and more.
    let mut buf = vec![0u8; n.max(1) as usize + 4096];
    // SAFETY: a buffer larger than the count the library gave.
    let rc = unsafe { ffi::PMPI_T_cvar_read(handle, buf.as_mut_ptr().cast()) };
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    check(rc, "MPI_T_cvar_read")?;
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Writes an int through a handle of one value; the error names the variable.
fn handle_write(handle: ffi::MPI_T_cvar_handle, name: &str, value: c_int) -> Result<(), MpiError> {
    // SAFETY: the variable holds one int (n == 1 for these variables).
    let rc = unsafe { ffi::PMPI_T_cvar_write(handle, (&value as *const c_int).cast()) };
    check(rc, "MPI_T_cvar_write").map_err(|e| MpiError {
        message: format!("{name} = {value}: {}", e.message),
        ..e
    })
}

/// An integer control variable held open: a handle allocated once (never
/// freed: a process holds a few, for its life), so a read or write is one
/// `MPI_T_cvar_read` / `_write` with no lookup, cheap enough around every
/// call of a forced broadcast (`select::library`: coll/adapt's and MPICH's
/// per-call variables, never Open MPI 4.1's). The first one opened holds
/// an MPI_T session for the rest of the process (its handles need it).
#[derive(Clone, Copy, Debug)]
pub struct Cvar {
    handle: ffi::MPI_T_cvar_handle,
    name: &'static str,
}

// SAFETY: an MPI_T handle is process-wide, and the MPI standard makes MPI_T
// thread-safe; its callers serialise the writes of one variable
// (per-call blocking forcing refuses MPI_THREAD_MULTIPLE; the nonblocking
// forcing writes under its lock).
unsafe impl Send for Cvar {}
unsafe impl Sync for Cvar {}

impl Cvar {
    /// The variable `name`, opened once per process (later calls find the
    /// same handle); an error when the library has no such variable or it
    /// holds more than one value.
    pub fn open(name: &'static str) -> Result<Cvar, MpiError> {
        static OPEN: std::sync::Mutex<Vec<Cvar>> = std::sync::Mutex::new(Vec::new());
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = open.iter().find(|c| c.name == name) {
            return Ok(*c);
        }
        static HELD: std::sync::OnceLock<MpiT> = std::sync::OnceLock::new();
        if HELD.get().is_none() {
            let _ = HELD.set(MpiT::open()?);
        }
        let (mut handle, n) = cvar_handle(name)?;
        if let Err(e) = one_value(name, n) {
            // SAFETY: handle was allocated above.
            unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
            return Err(e);
        }
        let c = Cvar { handle, name };
        open.push(c);
        Ok(c)
    }

    /// Reads the value (an int).
    #[inline]
    pub fn read(&self) -> Result<c_int, MpiError> {
        handle_read(self.handle)
    }

    /// Writes the value (an int).
    #[inline]
    pub fn write(&self, value: c_int) -> Result<(), MpiError> {
        handle_write(self.handle, self.name, value)
    }
}

/// Whether MPI was initialised with `MPI_THREAD_MULTIPLE` (any thread may
/// call at any time); false where it cannot tell.
pub fn thread_multiple() -> bool {
    let mut level: c_int = 0;
    // SAFETY: valid out pointer; called after MPI_Init.
    let rc = unsafe { ffi::PMPI_Query_thread(&mut level) };
    // SAFETY: reading a constant of the library's.
    rc == ffi::MPI_SUCCESS as c_int && level == unsafe { ffi::RSMPI_THREAD_MULTIPLE }
}

/// The name of the node this rank runs on.
pub fn processor_name() -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: buf is larger than MPI_MAX_PROCESSOR_NAME.
    let rc = unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return "unknown".into();
    }
    String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
}
