//! The broadcast algorithms of MPICH-derived libraries as benchmark
//! baselines, and the labels of library algorithms chosen outside the
//! process (Intel MPI's `I_MPI_ADJUST_BCAST`).
//!
//! MPICH (4.0, 5.0) selects its intra-communicator broadcast by the control
//! variable `MPIR_CVAR_BCAST_INTRA_ALGORITHM`, an enumeration it reads at
//! every call (process-wide, not per communicator). Which names a library
//! offers is read from the library itself: from `MPI_T_enum_get_item` where
//! the variable carries an enumeration type, else from the variable's
//! description, which lists one `name - what it does` entry per value in
//! the order of their values (MPICH generates both from one list; MPICH 5.0
//! separates the entries by line breaks, 4.0 joins them with none, so a name
//! there is glued to the end of the text before it and is told apart by the
//! names MPICH documents). The values are checked where it matters: the
//! benchmark reads the variable back after writing it, and
//! `jobs/test-mpi.sh` starts MPICH with the variable set by name and checks
//! that the value read through `MPI_T` is the one this module gives that
//! name.

/// MPICH's broadcast algorithm selector.
pub const BCAST_CVAR: &str = "MPIR_CVAR_BCAST_INTRA_ALGORITHM";

/// What MPICH does when a forced algorithm cannot run with the arguments
/// (`error`, `print`, `silent`).
pub const FALLBACK_CVAR: &str = "MPIR_CVAR_COLLECTIVE_FALLBACK";

/// The `algorithm` column of samples of a forced MPICH algorithm.
pub const TABLE_NAME: &str = "mpich";

/// The names MPICH documents for [`BCAST_CVAR`] (MPICH 3.3 to 5.0): used
/// only to split a description whose entries are joined without line
/// breaks, never as the list of what a library offers.
pub const DOCUMENTED_BCAST: &[&str] = &[
    "auto",
    "binomial",
    "nb",
    "smp",
    "scatter_recursive_doubling_allgather",
    "scatter_ring_allgather",
    "pipelined_tree",
    "tree",
];

/// The names MPICH documents for [`FALLBACK_CVAR`].
pub const DOCUMENTED_FALLBACK: &[&str] = &["error", "print", "silent"];

/// One value of an MPICH enumeration control variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Choice {
    /// The integer `MPI_T_cvar_write` takes.
    pub value: i32,
    /// The name MPICH documents (`scatter_ring_allgather`).
    pub name: String,
}

impl Choice {
    /// The sample's `spec` of this broadcast algorithm forced:
    /// `mpich:algorithm=scatter_ring_allgather`.
    pub fn spec(&self) -> String {
        format!("{TABLE_NAME}:algorithm={}", self.name)
    }
    /// Whether this is the library's own decision (`auto`), which the `mpi`
    /// baseline measures already.
    pub fn is_auto(&self) -> bool {
        self.name == "auto"
    }
}

/// One of MPICH's broadcast algorithms as a table choice (`algorithm:
/// mpich`, `params: {algorithm: <name>}`): [`BCAST_CVAR`] written to its
/// value around each call (MPICH reads it per call, process-wide;
/// `colltune_mpi::select::library`). The name is one MPICH documents
/// ([`DOCUMENTED_BCAST`]); its value is read from the library at run time.
/// `auto` is MPICH's own decision: nothing forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Forced {
    pub name: &'static str,
}

impl Forced {
    /// Whether this is MPICH's own decision (`auto`), nothing forced.
    pub fn is_default(&self) -> bool {
        self.name == "auto"
    }

    /// The table choice of an algorithm the library offers; None for a name
    /// MPICH does not document (a table could not say it).
    pub fn from_choice(c: &Choice) -> Option<Forced> {
        DOCUMENTED_BCAST
            .iter()
            .find(|d| **d == c.name)
            .map(|name| Forced { name })
    }

    /// Reads a table's `mpich` specification: `algorithm`, one of the names
    /// MPICH documents for [`BCAST_CVAR`] (`binomial`, `scatter_ring_allgather`,
    /// ...). The error says what is wrong and what to write.
    pub fn from_spec(spec: &colltune_algorithms::AlgoSpec) -> Result<Forced, String> {
        if spec.name != TABLE_NAME {
            return Err(format!("`{}` is not `{TABLE_NAME}`", spec.name));
        }
        let word = algorithm_word(spec, DOCUMENTED_BCAST, BCAST_CVAR)?;
        let names = || DOCUMENTED_BCAST.join(", ");
        DOCUMENTED_BCAST
            .iter()
            .find(|d| **d == word)
            .map(|name| Forced { name })
            .ok_or_else(|| {
                format!(
                    "{TABLE_NAME}: unknown MPICH broadcast algorithm `{word}`; MPICH's {BCAST_CVAR} takes {}",
                    names()
                )
            })
    }

    /// The canonical specification, as bench records it:
    /// `mpich:algorithm=scatter_ring_allgather`.
    pub fn spec(&self) -> colltune_algorithms::AlgoSpec {
        colltune_algorithms::AlgoSpec::new(TABLE_NAME).with(
            "algorithm",
            colltune_algorithms::ParamValue::Word(self.name.into()),
        )
    }

    /// The name of the algorithm in MPICH's JSON tuning file
    /// (`MPIR_Bcast_intra_binomial`); None for `auto` (MPICH's own rules).
    pub fn json_name(&self) -> Option<&'static str> {
        Some(match self.name {
            "auto" => return None,
            "binomial" => "MPIR_Bcast_intra_binomial",
            "nb" => "MPIR_Bcast_allcomm_nb",
            "smp" => "MPIR_Bcast_intra_smp",
            "scatter_recursive_doubling_allgather" => {
                "MPIR_Bcast_intra_scatter_recursive_doubling_allgather"
            }
            "scatter_ring_allgather" => "MPIR_Bcast_intra_scatter_ring_allgather",
            "circ_graph" => "MPIR_Bcast_intra_circ_graph",
            "pipelined_tree" => "MPIR_Bcast_intra_pipelined_tree",
            "tree" => "MPIR_Bcast_intra_tree",
            _ => return None,
        })
    }

    /// colltune's algorithm of the nearest shape (what another library's
    /// file can say in its place): a spec `core::export` maps.
    pub fn ours(&self) -> &'static str {
        match self.name {
            "scatter_recursive_doubling_allgather" => "scatter_allgather",
            "scatter_ring_allgather" => "scatter_allgather_ring",
            // MPICH 5's circulant graph, its default chunk (131072 bytes).
            "circ_graph" => "circulant:segment=131072",
            // MPICH's trees default to a k-ary tree of k = 2.
            "tree" => "binary",
            "pipelined_tree" => "binary:segment=8192",
            "smp" => "hierarchical",
            _ => "binomial",
        }
    }
}

impl std::fmt::Display for Forced {
    /// `MPICH's scatter_ring_allgather (MPIR_CVAR_BCAST_INTRA_ALGORITHM)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_default() {
            return f.write_str(
                "MPICH's own decision (MPIR_CVAR_BCAST_INTRA_ALGORITHM=auto: nothing forced)",
            );
        }
        write!(f, "MPICH's {} ({BCAST_CVAR})", self.name)
    }
}

/// A table's MPICH specification's one parameter, `algorithm` (a name of
/// `documented`, `cvar`'s), as written; the error says what to write.
pub(crate) fn algorithm_word(
    spec: &colltune_algorithms::AlgoSpec,
    documented: &[&str],
    cvar: &str,
) -> Result<String, String> {
    use colltune_algorithms::ParamValue;
    let table = &spec.name;
    let names = || documented.join(", ");
    if let Some(k) = spec.params.keys().find(|k| k.as_str() != "algorithm") {
        return Err(format!(
            "{table} has no parameter `{k}`; it takes only algorithm (one of {}): MPICH's parameters of its algorithms are its own control variables",
            names()
        ));
    }
    match spec.params.get("algorithm") {
        None => Err(format!(
            "{table} needs `algorithm`: one of {} ({cvar}'s names)",
            names()
        )),
        Some(ParamValue::Word(w)) => Ok(w.clone()),
        Some(o) => Ok(o.to_string()),
    }
}

/// The choices of an enumeration as `MPI_T_enum_get_item` lists them.
pub fn from_enum(items: &[(i32, String)]) -> Result<Vec<Choice>, String> {
    if items.is_empty() {
        return Err("the enumeration has no items".into());
    }
    let mut out: Vec<Choice> = Vec::new();
    for (value, name) in items {
        let name = name.trim();
        if !is_name(name) {
            return Err(format!("item {value} has the name {name:?}, not a word"));
        }
        if out.iter().any(|c| c.name == name) {
            return Err(format!("the name `{name}` appears twice"));
        }
        out.push(Choice {
            value: *value,
            name: name.to_string(),
        });
    }
    Ok(out)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The choices an MPICH enumeration variable's description lists: each
/// entry is `name<spaces>- text`, values counted from 0 in order. Where the
/// description has line breaks (MPICH 5.0), an entry is a line that starts
/// with a lower-case word followed by ` - `, the name taken as written;
/// where it has none (MPICH 4.0 joins the lines), each name is glued to the
/// text before it and is the longest of `documented` that the word before a
/// ` - ` ends with. The error says what could not be read.
pub fn from_description(desc: &str, documented: &[&str]) -> Result<Vec<Choice>, String> {
    let mut names: Vec<String> = Vec::new();
    let mut push = |name: String| -> Result<(), String> {
        if names.contains(&name) {
            return Err(format!("the name `{name}` appears twice"));
        }
        names.push(name);
        Ok(())
    };
    if desc.contains('\n') {
        for line in desc.lines() {
            let line = line.trim_start();
            let word_len = line
                .bytes()
                .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
                .count();
            let rest = &line[word_len..];
            if word_len > 0 && rest.starts_with([' ', '\t']) && rest.trim_start().starts_with("- ")
            {
                push(line[..word_len].to_string())?;
            }
        }
    } else {
        let b = desc.as_bytes();
        let mut i = 1;
        while i < b.len() {
            // A separator: spaces, '-', a space, right after a word.
            if !(b[i] == b' ' || b[i] == b'\t') || b[i - 1].is_ascii_whitespace() {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            if !(j + 1 < b.len() && b[j] == b'-' && b[j + 1] == b' ') {
                i = j.max(i + 1);
                continue;
            }
            let mut s = i;
            while s > 0
                && (b[s - 1].is_ascii_lowercase() || b[s - 1].is_ascii_digit() || b[s - 1] == b'_')
            {
                s -= 1;
            }
            let word = &desc[s..i];
            i = j + 2;
            if word.is_empty() {
                continue;
            }
            match documented
                .iter()
                .filter(|d| word.ends_with(*d))
                .max_by_key(|d| d.len())
            {
                Some(d) => push(d.to_string())?,
                None => {
                    return Err(format!(
                        "cannot tell the name in `{word} -`: the description has no line breaks and the word ends in none of the names MPICH documents ({})",
                        documented.join(", ")
                    ))
                }
            }
        }
    }
    if names.is_empty() {
        return Err("no `name - description` entries found".into());
    }
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(v, name)| Choice {
            value: v as i32,
            name,
        })
        .collect())
}

/// The broadcast algorithms worth forcing as baselines: every choice but
/// `auto` (the library's decision: the `mpi` baseline).
pub fn forced_baselines(all: &[Choice]) -> Vec<Choice> {
    all.iter().filter(|c| !c.is_auto()).cloned().collect()
}

/// Checks a `bench --baseline-label`: the `spec` the library's `MPI_Bcast`
/// is recorded under when something outside the process chose its
/// algorithm (`impi:I_MPI_ADJUST_BCAST=3,name=ring`). It is a family name
/// (lower-case word, not one colltune or the other baselines use), `:`, and
/// `key=value` pairs of printable characters without spaces, commas inside
/// values or quotes. Returns the family (the `algorithm` column).
pub fn check_label(label: &str) -> Result<String, String> {
    let (family, params) = label.split_once(':').ok_or_else(|| {
        format!("`{label}`: write family:key=value,... (e.g. impi:I_MPI_ADJUST_BCAST=3,name=ring)")
    })?;
    if !is_name(family) {
        return Err(format!(
            "`{label}`: the family `{family}` must be a lower-case word (letters, digits, _)"
        ));
    }
    if [
        "mpi",
        crate::libraries::ompi::TABLE_NAME,
        crate::libraries::ompi::adapt::TABLE_NAME,
        crate::libraries::ompi::han::TABLE_NAME,
        TABLE_NAME,
    ]
    .contains(&family)
        || colltune_algorithms::Collective::ALL
            .iter()
            .any(|&c| colltune_algorithms::lookup(c, family).is_ok())
    {
        return Err(format!(
            "`{label}`: `{family}` is already a name colltune uses; pick another family (impi, ...)"
        ));
    }
    if params.is_empty() {
        return Err(format!("`{label}`: no key=value after `{family}:`"));
    }
    for kv in params.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("`{label}`: `{kv}` is not key=value"))?;
        let ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '=' | ',' | ':'))
        };
        if !ok(k) || !ok(v) {
            return Err(format!(
                "`{label}`: `{kv}`: keys and values are printable, without spaces, quotes, `=`, `,` or `:`"
            ));
        }
    }
    Ok(family.to_string())
}

/// The short name of a forced library algorithm's spec, for tables and
/// legends: its `name=` (Open MPI's, Intel MPI's), else its `algorithm=`
/// (MPICH's), else the spec.
pub fn short_name(spec: &str) -> &str {
    let value = |key: &str| {
        spec.split_once(':').and_then(|(_, params)| {
            params
                .split(',')
                .find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        })
    };
    value("name").or_else(|| value("algorithm")).unwrap_or(spec)
}

/// How tables and legends name a forced library algorithm: its
/// [`short_name`], with the Open MPI component before it where that is not
/// coll/tuned (`adapt:binomial`: coll/adapt has a binomial too;
/// `han:intra`).
pub fn forced_label(spec: &str) -> String {
    let short = short_name(spec);
    match crate::libraries::ompi::component_of(spec) {
        Some(component) if short != spec => format!("{component}:{short}"),
        _ => short.to_string(),
    }
}

/// The library a forced algorithm's spec belongs to, as its comparison
/// column says it: `Open MPI`, `MPICH`, `Intel MPI`, else the family.
pub fn library_of(spec: &str) -> &str {
    let family = spec.split(':').next().unwrap_or(spec);
    match family {
        f if f == crate::libraries::ompi::TABLE_NAME
            || f == crate::libraries::ompi::adapt::TABLE_NAME
            || f == crate::libraries::ompi::han::TABLE_NAME =>
        {
            "Open MPI"
        }
        f if f == TABLE_NAME => "MPICH",
        "impi" => "Intel MPI",
        f => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MPICH5: &str = "Variable to select bcast algorithm\n\
auto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)\n\
binomial                                - Force Binomial Tree\n\
nb                                      - Force nonblocking algorithm\n\
smp                                     - Force smp algorithm\n\
scatter_recursive_doubling_allgather    - Force Scatter Recursive-Doubling Allgather\n\
scatter_ring_allgather                  - Force Scatter Ring\n\
pipelined_tree                          - Force tree-based pipelined algorithm\n\
tree                                    - Force tree-based algorithm";

    // MPICH 4.0.2 (Debian) joins the same lines with nothing between them.
    const MPICH4: &str = "Variable to select bcast algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)binomial                                - Force Binomial Treenb                                      - Force nonblocking algorithmsmp                                     - Force smp algorithmscatter_recursive_doubling_allgather    - Force Scatter Recursive-Doubling Allgatherscatter_ring_allgather                  - Force Scatter Ring";

    /// What MPICH 4.0 offers, in its order; MPICH 5 adds the trees.
    const MPICH4_NAMES: [(i32, &str); 6] = [
        (0, "auto"),
        (1, "binomial"),
        (2, "nb"),
        (3, "smp"),
        (4, "scatter_recursive_doubling_allgather"),
        (5, "scatter_ring_allgather"),
    ];

    fn names(c: &[Choice]) -> Vec<(i32, &str)> {
        c.iter().map(|c| (c.value, c.name.as_str())).collect()
    }

    #[test]
    fn reads_mpich5_description_by_lines() {
        let c = from_description(MPICH5, DOCUMENTED_BCAST).unwrap();
        let mut want = MPICH4_NAMES.to_vec();
        want.extend([(6, "pipelined_tree"), (7, "tree")]);
        assert_eq!(names(&c), want);
        // A line-start name need not be documented: a new algorithm is read.
        let more = format!("{MPICH5}\nfancy_new                               - Force it");
        let c = from_description(&more, DOCUMENTED_BCAST).unwrap();
        assert_eq!(
            c.last().unwrap(),
            &Choice {
                value: 8,
                name: "fancy_new".into()
            }
        );
    }

    #[test]
    fn reads_mpich4_joined_description() {
        let c = from_description(MPICH4, DOCUMENTED_BCAST).unwrap();
        assert_eq!(names(&c), MPICH4_NAMES);
        // 4.0 has no tree algorithms: nothing invents them.
        assert!(!c.iter().any(|c| c.name.contains("tree")));
        assert_eq!(
            forced_baselines(&c)
                .iter()
                .map(|c| c.spec())
                .collect::<Vec<_>>()[0],
            "mpich:algorithm=binomial"
        );
        assert_eq!(forced_baselines(&c).len(), 5);
    }

    #[test]
    fn reads_fallback_description() {
        let d = "Use this variable to control what the MPI library should do if the user-specified collective algorithm does not work for the arguments passed in by the user.error   - throw an errorprint   - print an error message and fallback to the internally selected algorithmsilent  - silently fallback to the internally selected algorithm";
        let c = from_description(d, DOCUMENTED_FALLBACK).unwrap();
        assert_eq!(names(&c), vec![(0, "error"), (1, "print"), (2, "silent")]);
    }

    #[test]
    fn unreadable_descriptions_say_why() {
        let e =
            from_description("Variable to select bcast algorithm", DOCUMENTED_BCAST).unwrap_err();
        assert!(e.contains("no `name - description`"), "{e}");
        let e = from_description("Select itwarp - Force warp", DOCUMENTED_BCAST).unwrap_err();
        assert!(e.contains("`itwarp -`") && e.contains("binomial"), "{e}");
        let e = from_description("x\nauto - a\nauto - b", DOCUMENTED_BCAST).unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn enums_are_taken_as_listed() {
        let c = from_enum(&[(0, "auto".into()), (3, "smp".into())]).unwrap();
        assert_eq!(names(&c), vec![(0, "auto"), (3, "smp")]);
        assert!(from_enum(&[]).unwrap_err().contains("no items"));
        assert!(from_enum(&[(0, "Bad Name".into())])
            .unwrap_err()
            .contains("not a word"));
        assert!(from_enum(&[(0, "a".into()), (1, "a".into())])
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn labels_are_checked() {
        assert_eq!(
            check_label("impi:I_MPI_ADJUST_BCAST=3,name=ring").unwrap(),
            "impi"
        );
        for (bad, says) in [
            ("impi", "family:key=value"),
            ("Impi:a=b", "lower-case word"),
            ("mpi:a=b", "already a name"),
            ("mpich:algorithm=smp", "already a name"),
            ("binomial:a=b", "already a name"),
            ("impi:", "no key=value"),
            ("impi:a", "not key=value"),
            ("impi:a=b c", "printable"),
            ("impi:a=\"b\"", "printable"),
            ("impi:a=", "printable"),
        ] {
            let e = check_label(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn short_names_and_libraries() {
        assert_eq!(
            short_name("ompi_tuned:algorithm=6,name=binomial,segment=0"),
            "binomial"
        );
        assert_eq!(short_name("mpich:algorithm=smp"), "smp");
        assert_eq!(short_name("impi:I_MPI_ADJUST_BCAST=3,name=ring"), "ring");
        assert_eq!(short_name("mpi"), "mpi");
        assert_eq!(
            forced_label("ompi_adapt:algorithm=1,name=binomial,segment=0"),
            "adapt:binomial"
        );
        assert_eq!(
            forced_label("ompi_han:algorithm=1,name=intra,up=libnbc,low=tuned,segment=0"),
            "han:intra"
        );
        assert_eq!(library_of("ompi_han:algorithm=2,name=simple"), "Open MPI");
        assert!(check_label("ompi_han:algorithm=2").is_err());
        assert_eq!(
            forced_label("ompi_tuned:algorithm=6,name=binomial,segment=0"),
            "binomial"
        );
        assert_eq!(
            library_of("ompi_adapt:algorithm=6,name=linear,segment=0"),
            "Open MPI"
        );
        assert_eq!(library_of("mpich:algorithm=smp"), "MPICH");
        assert_eq!(library_of("ompi_tuned:algorithm=1"), "Open MPI");
        assert_eq!(
            library_of("impi:I_MPI_ADJUST_BCAST=1,name=binomial"),
            "Intel MPI"
        );
    }
}
