//! Rules a model predicted: where the samples are simulated (`predict
//! --csv`, `simulate`, `tune --model`: source `simulated:<model>`), each
//! rule's evidence (basis `model`, [`crate::tables::table::evidence::Basis::Model`])
//! names the model and its fit error, so that `show` and `explain` present
//! it as a prediction, never as a measurement. The runtime reads the rule
//! as any other: the choice and its size range are all it uses.
//!
//! ```text
//! samples (source simulated:M) -> gains, interval = ln(1 + fit error)
//!     -> rules -> mark: evidence.model = M, evidence.fit_error = e
//! ```

use super::super::Table;

/// The model named by a provenance's source (`simulated:<model>`, several
/// joined by `, `, an import's `:map-by-<m>` dropped), None where no
/// sample was simulated.
pub fn model_of(source: &str) -> Option<String> {
    let names: Vec<&str> = source
        .split(", ")
        .filter_map(|s| s.trim().strip_prefix("simulated:"))
        // an import's mapping suffix (`:map-by-node`) is the shape's, not the model's
        .map(|s| s.split(":map-by-").next().unwrap_or(s))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// Names the model and its fit error on every rule whose evidence is a
/// prediction.
pub(super) fn mark(table: &mut Table, fit_error: Option<f64>) {
    let Some(model) = model_of(&table.provenance.source) else {
        return;
    };
    let fit_error = fit_error.map(|e| (e * 10_000.0).round() / 10_000.0);
    for cr in table.bcast.iter_mut().chain(table.swap.iter_mut()) {
        for e in cr.rules.iter_mut().filter_map(|r| r.evidence.as_mut()) {
            if e.predicted() {
                e.model = Some(model.clone());
                e.fit_error = fit_error;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_the_simulated_source() {
        assert_eq!(model_of("simulated:leo"), Some("leo".into()));
        assert_eq!(model_of("imported, simulated:a"), Some("a".into()));
        assert_eq!(model_of("measured"), None);
        let two = "simulated:leo:map-by-core, simulated:leo:map-by-node";
        assert_eq!(model_of(two), Some("leo".into()));
    }
}
