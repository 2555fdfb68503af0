//! The interposition library's handed-off path as built (issue 28): its
//! `MPI_Bcast` starts a cache line, so the path's straight run of code
//! spans the fewest instruction lines an application's cold call touches
//! (`benches/callcost.sh` counts them; preload/src/lib.rs places it).

mod common;
use common::*;

use std::process::Command;

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn mpi_bcast_starts_a_cache_line() {
    let (pre, syms) = defined_symbols();
    let addr = |name: &str| {
        syms.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).unwrap())
            })
            .unwrap_or_else(|| panic!("no {name} in {}:\n{syms}", pre.display()))
    };
    // (before the section was aligned it sat at 0x63b70: 48 bytes in)
    let bcast = addr("MPI_Bcast");
    assert_eq!(
        bcast % 64,
        0,
        "MPI_Bcast at {bcast:#x}: not at the start of a cache line"
    );
    handed_off_path_fits_two_lines(&pre, bcast);
}

/// The handed-off path as built: from the entry, a straight run to its
/// tail call through the address the line holds (`jmp *%reg`: no global
/// offset table entry), with no stack frame (no push, no call before it),
/// ending within the first 128 bytes, two instruction lines. Before the
/// ranges were compared as `last - count < len` it ended 4 bytes past them;
/// before the cold path was a tail call it pushed a register.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn handed_off_path_fits_two_lines(pre: &std::path::Path, at: u64) {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={at:#x}"))
        .arg(format!("--stop-address={:#x}", at + 192))
        .arg(pre)
        .output()
        .expect("objdump (binutils) runs");
    assert!(
        o.status.success(),
        "objdump {}: {}",
        pre.display(),
        text(&o)
    );
    let dis = String::from_utf8_lossy(&o.stdout);
    // "   5fc7c:\tjmp    *%rax": (address, mnemonic and operands)
    let code: Vec<(u64, String)> = dis
        .lines()
        .filter_map(|l| {
            let (a, rest) = l.trim_start().split_once(":\t")?;
            Some((u64::from_str_radix(a, 16).ok()?, rest.trim().to_string()))
        })
        .collect();
    let tail = code
        .iter()
        .position(|(_, i)| i.starts_with("jmp") && i.contains("*%r") && !i.contains("(%rip)"))
        .unwrap_or_else(|| panic!("no tail call through a register in MPI_Bcast:\n{dis}"));
    let frame = code[..tail]
        .iter()
        .find(|(_, i)| i.starts_with("push") || i.starts_with("call"));
    assert!(
        frame.is_none(),
        "a stack frame on the handed-off path: {frame:?}\n{dis}"
    );
    let end = code[tail + 1].0;
    assert!(
        end - at <= 128,
        "the handed-off path ends {} bytes into MPI_Bcast: a third instruction line\n{dis}",
        end - at
    );
}

/// The interposition library and `nm -D --defined-only`'s listing of it.
fn defined_symbols() -> (std::path::PathBuf, String) {
    let pre = shared_libs().join("libcolltune_preload.so");
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&pre)
        .output()
        .expect("nm (binutils) runs");
    assert!(o.status.success(), "nm {}: {}", pre.display(), text(&o));
    let syms = String::from_utf8_lossy(&o.stdout).into_owned();
    (pre, syms)
}

/// A persistent broadcast is decided once, at `MPI_Bcast_init`: the
/// interposition library defines no entry of the calls that start and
/// complete requests (`MPI_Start`, `MPI_Wait`, `MPI_Test` and their
/// families), so theirs are the library's own, with not one instruction
/// added; and it defines the nonblocking and persistent broadcasts it
/// routes.
#[test]
fn requests_start_and_complete_in_the_library_alone() {
    let (_, syms) = defined_symbols();
    let defined: Vec<&str> = syms
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    for routed in [
        "MPI_Ibcast",
        "MPI_Bcast_init",
        "MPIX_Bcast_init",
        "mpi_ibcast_",
    ] {
        assert!(defined.contains(&routed), "{routed} not defined:\n{syms}");
    }
    let untouched = ["start", "wait", "test", "request_free", "grequest"];
    for s in &defined {
        let lower = s.to_ascii_lowercase();
        assert!(
            !untouched
                .iter()
                .any(|u| lower.starts_with(&format!("mpi_{u}")) || lower.starts_with(&format!("pmpi_{u}"))),
            "the preload library defines {s}: a request's start or completion would pass through colltune"
        );
    }
}
