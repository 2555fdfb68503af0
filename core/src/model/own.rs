//! colltune's own broadcasts measured beside a library's: the pico
//! benchmark's `*_over` files (its own implementations over point-to-point,
//! the Bine trees among them) read as colltune's algorithm of the same
//! tree, so that they enter the fit (`calibrate --collectives`) and the
//! check (`predict`) beside Open MPI's coll/tuned algorithms.
//!
//! ```text
//!   pico's name (file *_over_*)       colltune's          the same schedule because
//!   bine_lat_reversed, bine_lat_i_new bine  (id 100)      the Bine tree, farthest partner first
//!                                                         (pi(r, s-1-j); all low negabinary digits
//!                                                         flipped), every child's send started at
//!                                                         once, then a wait: as bine.rs builds it
//!   scatter_allgather                 scatter_allgather   Open MPI's binomial scatter + recursive
//!                                     (id 101)            doubling allgather, rewritten over MPI
//!   bine_lat_new                      - (not read)        the same tree, but each send blocking,
//!                                                         one child after the other (3-4x faster
//!                                                         from 1 MiB on Leonardo): not bine's order
//!   bine_lat                          - (not read)        the same pairs nearest first (distance
//!                                                         1, 1, 3, 5, ...): a tree colltune has not
//!   bine_bdw_static, bine_bdw_remap   - (not read)        scatter nearest first, allgather farthest
//!                                                         first; colltune's bine_bdw is the mirror
//! ```
//!
//! Each is a number beside coll/tuned's 0-9 ([`FIRST`] on), so the fit's
//! and the check's tables keep one key type; [`label`] names it. Several
//! pico names of one colltune algorithm are runs of the same algorithm
//! (the median over them counts). Parameters: [`OWN`], [`UNREAD`].

use colltune_algorithms::{resolve, AlgoSpec, Collective};

/// The first id of colltune's own algorithms (coll/tuned's are 0-9).
pub const FIRST: u32 = 100;

/// One of colltune's broadcasts that measured files may hold.
#[derive(Debug)]
pub struct Own {
    pub id: u32,
    /// colltune's spec (the registry's name, its defaults).
    pub spec: &'static str,
    /// The pico benchmark's names of implementations that run this schedule.
    pub pico: &'static [&'static str],
}

/// colltune's own broadcasts read from measured files.
pub const OWN: &[Own] = &[
    Own {
        id: FIRST,
        spec: "bine",
        pico: &["bine_lat_reversed", "bine_lat_i_new"],
    },
    Own {
        id: FIRST + 1,
        spec: "scatter_allgather",
        pico: &["scatter_allgather"],
    },
];

/// pico's names that are not read, and why.
pub const UNREAD: &[(&str, &str)] = &[
    (
        "bine_lat_new",
        "Bine's tree with blocking sends, one child after the other: colltune's bine starts every child's send at once and waits (pico's bine_lat_i_new), and the two differ several times at large messages",
    ),
    (
        "bine_lat",
        "Bine's pairs nearest first (distances 1, 1, 3, 5, ...): colltune's bine sends to the farthest first, and has no tree of this order",
    ),
    (
        "bine_bdw_static",
        "a scatter nearest first and an allgather farthest first: colltune's bine_bdw is the mirror order (farthest first in the scatter)",
    ),
    (
        "bine_bdw_remap",
        "a scatter nearest first and an allgather farthest first: colltune's bine_bdw is the mirror order (farthest first in the scatter)",
    ),
];

/// The algorithm with id `id`, if it is one of colltune's own.
pub fn of(id: u32) -> Option<&'static Own> {
    OWN.iter().find(|o| o.id == id)
}

/// Whether `id` is one of colltune's own (not coll/tuned's).
pub fn is_own(id: u32) -> bool {
    id >= FIRST
}

/// pico's `name` (of an `*_over` file): colltune's algorithm, or why it
/// is not read.
pub fn by_pico(name: &str) -> Result<&'static Own, String> {
    if let Some(o) = OWN.iter().find(|o| o.pico.contains(&name)) {
        return Ok(o);
    }
    Err(match UNREAD.iter().find(|(n, _)| *n == name) {
        Some((_, why)) => format!("pico's `{name}`: {why}"),
        None => format!(
            "pico's `{name}`: not one colltune reads (it reads {})",
            OWN.iter()
                .flat_map(|o| o.pico.iter().map(move |p| format!("{p} as {}", o.spec)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// colltune's algorithm named `name` (its spec, defaults or not given).
pub fn by_name(name: &str) -> Option<&'static Own> {
    let r = resolved(name)?;
    OWN.iter().find(|o| resolved(o.spec).as_ref() == Some(&r))
}

/// `text` as the registry resolves it (defaults filled in).
fn resolved(text: &str) -> Option<AlgoSpec> {
    let spec = AlgoSpec::parse(text).ok()?;
    resolve(Collective::Bcast, &spec).ok()
}

impl Own {
    /// Its spec as the registry resolves it (what samples record).
    pub fn resolved(&self) -> AlgoSpec {
        resolved(self.spec).unwrap_or_else(|| AlgoSpec::new(self.spec))
    }

    /// The registry's name (`bine`).
    pub fn name(&self) -> &'static str {
        self.spec.split(':').next().unwrap_or(self.spec)
    }
}

/// An algorithm's name in reports: coll/tuned's id, or colltune's name.
pub fn label(id: u32) -> String {
    of(id).map_or_else(|| id.to_string(), |o| o.name().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pico_names_map_to_colltunes_trees_or_say_why_not() {
        assert_eq!(by_pico("bine_lat_i_new").unwrap().spec, "bine");
        assert!(by_pico("bine_lat_new")
            .unwrap_err()
            .contains("one child after the other"));
        assert_eq!(by_pico("bine_lat_reversed").unwrap().id, FIRST);
        assert_eq!(
            by_pico("scatter_allgather").unwrap().spec,
            "scatter_allgather"
        );
        let e = by_pico("bine_lat").unwrap_err();
        assert!(e.contains("nearest first"), "{e}");
        assert!(by_pico("bine_bdw_remap").unwrap_err().contains("mirror"));
        assert!(by_pico("ring")
            .unwrap_err()
            .contains("bine_lat_i_new as bine"));
        // A sample's spec names its algorithm, defaults given or not.
        assert_eq!(by_name("bine").map(|o| o.id), Some(FIRST));
        let full = OWN[0].resolved().to_string();
        assert_eq!(by_name(&full).map(|o| o.id), Some(FIRST));
        assert!(by_name("bine:segment=8192").is_none());
        assert!(by_name("binomial").is_none());
        assert_eq!(
            (label(FIRST), label(6)),
            ("bine".to_string(), "6".to_string())
        );
        assert!(OWN.iter().all(|o| is_own(o.id) && of(o.id).is_some()));
    }
}
