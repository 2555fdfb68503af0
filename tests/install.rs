//! `jobs/install.sh` into a temporary prefix, then what a user does with
//! it: `man colltune` found through the PATH, `colltune <TAB>` completed by
//! bash-completion's own loader, and `module load colltune` (Lmod) putting
//! colltune on the PATH and making a plain `mpirun` of an unmodified MPI
//! program go through the drop-in with the installed table.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TABLE: &str = "tuning-tables/vm-2core.yaml";

/// `jobs/install.sh` with `PREFIX=prefix` from this build, the shipped
/// table installed beside it.
fn install(prefix: &Path) -> Output {
    let release = shared_libs();
    let mut c = Command::new("bash");
    c.arg(format!("{ROOT}/jobs/install.sh"))
        .env("PREFIX", prefix)
        .env("BUILD_DIR", &release)
        .env("TABLE", format!("{ROOT}/{TABLE}"));
    run(c)
}

/// A bash script's output, with `PATH` starting at `prefix/bin`, no
/// `MANPATH` and the other variables `env` gives.
fn bash(script: &str, prefix: &Path, env: &[(&str, String)]) -> Output {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(script)
        .env(
            "PATH",
            format!(
                "{}/bin:{}",
                prefix.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("MANPATH")
        .env_remove("LD_PRELOAD")
        .env_remove("COLLTUNE_TABLE")
        .env_remove("OMPI_MCA_mca_base_env_list");
    for (k, v) in env {
        c.env(k, v);
    }
    run(c)
}

fn installed(prefix: &Path) -> PathBuf {
    let o = install(prefix);
    assert!(o.status.success(), "jobs/install.sh failed:\n{}", text(&o));
    prefix.to_path_buf()
}

#[test]
fn install_writes_binary_libraries_pages_completions_and_module() {
    let prefix = installed(&scratch("install-files"));
    let version = env!("CARGO_PKG_VERSION");
    for f in [
        "bin/colltune".to_string(),
        "lib/libcolltune.so".into(),
        "lib/libcolltune_preload.so".into(),
        "include/colltune.h".into(),
        "share/man/man1/colltune.1".into(),
        "share/man/man1/colltune-tune.1".into(),
        "share/man/man1/colltune-generate.1".into(),
        "share/bash-completion/completions/colltune".into(),
        "share/zsh/site-functions/_colltune".into(),
        "share/fish/vendor_completions.d/colltune.fish".into(),
        "share/colltune/tables/vm-2core.yaml".into(),
        format!("share/modulefiles/colltune/{version}.lua"),
    ] {
        assert!(prefix.join(&f).is_file(), "{f} not installed");
    }
    let module =
        std::fs::read_to_string(prefix.join(format!("share/modulefiles/colltune/{version}.lua")))
            .unwrap();
    assert!(
        !module.contains('@'),
        "a placeholder left in the modulefile:\n{module}"
    );
    assert!(
        module.contains(&format!("local prefix = \"{}\"", prefix.display())),
        "{module}"
    );

    // A table that does not validate is refused before anything is written.
    let bad = prefix.join("bad.yaml");
    std::fs::write(&bad, "schema: 1\nbcast: nonsense\n").unwrap();
    let mut c = Command::new("bash");
    c.arg(format!("{ROOT}/jobs/install.sh"))
        .env("PREFIX", prefix.join("other"))
        .env("BUILD_DIR", release_dir())
        .env("TABLE", &bad);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("does not validate"), "{}", text(&o));
    assert!(!prefix.join("other/bin/colltune").exists());
    std::fs::remove_dir_all(&prefix).unwrap();
}

#[test]
fn man_finds_the_pages_through_the_path() {
    if Command::new("man").arg("-w").arg("man").output().is_err() {
        return skip("man", "no `man` here (apt-get install man-db)");
    }
    let prefix = installed(&scratch("install-man"));
    let o = bash("man -w colltune && man -w colltune-explain", &prefix, &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let page = prefix.join("share/man/man1/colltune.1");
    assert!(out.contains(&page.display().to_string()), "{out}");
    let o = bash(
        "man -P cat colltune-explain",
        &prefix,
        &[("MANWIDTH", "100".into())],
    );
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && page.contains("--bytes"),
        "{}",
        text(&o)
    );
    std::fs::remove_dir_all(&prefix).unwrap();
}

#[test]
fn bash_completes_the_commands() {
    let loader = Path::new("/usr/share/bash-completion/bash_completion");
    if !loader.exists() {
        return skip(
            "bash-completion",
            "no bash-completion here (apt-get install bash-completion)",
        );
    }
    let prefix = installed(&scratch("install-completion"));
    // bash-completion loads a command's completion on first use, from
    // XDG_DATA_DIRS/bash-completion/completions: where the prefix is a
    // system one (/usr/local/share) it is there already.
    let script = format!(
        ". {}\n_completion_loader colltune\n\
         f=$(complete -p colltune | sed -E 's/.*-F ([^ ]+).*/\\1/')\n\
         COMP_WORDS=(colltune ex); COMP_CWORD=1; COMP_LINE='colltune ex'; COMP_POINT=${{#COMP_LINE}}\n\
         \"$f\" colltune ex colltune\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n\
         COMP_WORDS=(colltune explain --by); COMP_CWORD=2; COMP_LINE='colltune explain --by'; COMP_POINT=${{#COMP_LINE}}\n\
         \"$f\" colltune --by explain\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        loader.display()
    );
    let o = bash(
        &script,
        &prefix,
        &[(
            "XDG_DATA_DIRS",
            format!("{}/share:/usr/share", prefix.display()),
        )],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let words: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(
        words.contains(&"explain") && words.contains(&"export") && words.contains(&"--bytes"),
        "completion of `colltune ex` and `colltune explain --by`:\n{}",
        text(&o)
    );
    assert!(
        !words.contains(&"show"),
        "`ex` completes to ex... only:\n{out}"
    );
    std::fs::remove_dir_all(&prefix).unwrap();
}

#[test]
fn lmod_module_sets_up_the_drop_in_for_mpirun() {
    let init = Path::new("/usr/share/lmod/lmod/init/bash");
    if !init.exists() {
        return skip("lmod", "no Lmod here (apt-get install lmod)");
    }
    let prefix = installed(&scratch("install-lmod"));
    let app = prefix.join("plain_bcast");
    mpicc(&format!("{ROOT}/tests/c/plain_bcast.c"), &app, &[]);
    let script = format!(
        ". {init}\nmodule use {modules}\nmodule load colltune\n\
         echo \"colltune=$(command -v colltune)\"\necho \"table=$COLLTUNE_TABLE\"\n\
         echo \"man=$(man -w colltune-tune)\"\necho \"shell LD_PRELOAD=[$LD_PRELOAD]\"\n\
         . {ROOT}/jobs/mpirun-flags.sh\n\
         COLLTUNE_TRACE=1 mpirun -n 4 \"${{MPIRUN_FLAGS[@]}}\" --timeout 120 {app} 1 4096 65536\n\
         module unload colltune\n\
         echo \"after unload: [$OMPI_MCA_mca_base_env_list] [$(command -v colltune)]\"\n",
        init = init.display(),
        modules = prefix.join("share/modulefiles").display(),
        app = app.display()
    );
    let o = bash(&script, Path::new("/nonexistent"), &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let bin = prefix.join("bin/colltune");
    assert!(
        out.contains(&format!("colltune={}", bin.display())),
        "{out}"
    );
    let table = prefix.join("share/colltune/tables/vm-2core.yaml");
    assert!(out.contains(&format!("table={}", table.display())), "{out}");
    let page = prefix.join("share/man/man1/colltune-tune.1");
    assert!(out.contains(&format!("man={}", page.display())), "{out}");
    // The shell does not preload the drop-in; the ranks mpirun starts do,
    // check every byte, and run the installed table's rules (the shipped
    // table has 4 ranks).
    assert!(out.contains("shell LD_PRELOAD=[]"), "{out}");
    assert!(out.contains("plain_bcast: all bytes correct"), "{out}");
    assert!(
        out.contains("colltune trace: rank 0 (rank 0 of 4 ranks"),
        "{out}"
    );
    assert!(
        out.contains("bcast 65536 B root 3: ") && out.contains("(table rule "),
        "{out}"
    );
    assert!(
        out.contains("after unload: [] []"),
        "unload undoes it:\n{out}"
    );
    std::fs::remove_dir_all(&prefix).unwrap();
}
