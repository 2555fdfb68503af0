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
    let pre = shared_libs().join("libcolltune_preload.so");
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&pre)
        .output()
        .expect("nm (binutils) runs");
    assert!(o.status.success(), "nm {}: {}", pre.display(), text(&o));
    let syms = String::from_utf8_lossy(&o.stdout);
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
}
