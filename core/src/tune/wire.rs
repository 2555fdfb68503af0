//! A measurement request as one line of text: how the MPI driver's rank 0
//! tells every rank what to measure next.

use colltune_algorithms::{AlgoSpec, Collective, Execution, Variant};

use super::{Candidate, Request, TuneError};

/// One line of a broadcast plan.
pub fn encode(r: &Request) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
        r.comm, r.cand.collective, r.cand.spec, r.cand.exec, r.bytes, r.run, r.budget_scale
    )
}

pub fn decode(line: &str) -> Result<Request, TuneError> {
    let bad = || TuneError::Other(format!("malformed measurement plan line `{line}`"));
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 7 {
        return Err(bad());
    }
    let collective: Collective = f[1].parse().map_err(|_| bad())?;
    let exec: Execution = f[3].parse().map_err(|_| bad())?;
    Ok(Request {
        comm: f[0].parse().map_err(|_| bad())?,
        cand: Candidate(Variant {
            collective,
            spec: AlgoSpec::parse(f[2])
                .ok()
                .and_then(
                    |s| match crate::libraries::library::is_table_name(&s.name) {
                        true => crate::libraries::library::LibraryChoice::from_spec(&s)
                            .ok()
                            .map(|f| f.spec()),
                        false => colltune_algorithms::resolve(collective, &s).ok(),
                    },
                )
                .ok_or_else(bad)?,
            exec,
        }),
        bytes: f[4].parse().map_err(|_| bad())?,
        run: f[5].parse().map_err(|_| bad())?,
        budget_scale: f[6].parse().map_err(|_| bad())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip() {
        let r = Request {
            comm: 1,
            cand: Candidate::new(
                Collective::Bcast,
                "hierarchical:inter=pipeline(segment=8192),intra=linear",
                Execution::Nonblocking,
            ),
            bytes: 4096,
            run: 3,
            budget_scale: 0.25,
        };
        assert_eq!(decode(&encode(&r)).unwrap(), r);
        assert!(decode("1\tbcast").is_err());
        let lib = Request {
            cand: Candidate::library(crate::libraries::ompi::Forced {
                id: 4,
                segment: 8192,
            }),
            ..r
        };
        assert_eq!(decode(&encode(&lib)).unwrap(), lib);
        for text in [
            "ompi_adapt:algorithm=2,segment=8192",
            "mpich:algorithm=scatter_ring_allgather",
        ] {
            let spec = colltune_algorithms::AlgoSpec::parse(text).unwrap();
            let other = Request {
                cand: Candidate::library(
                    crate::libraries::library::LibraryChoice::from_spec(&spec).unwrap(),
                ),
                ..lib.clone()
            };
            assert_eq!(decode(&encode(&other)).unwrap(), other, "{text}");
        }
    }
}
