use std::time::Instant;
fn main() {
    let path = std::env::temp_dir().join("colltune-bench-1000-rules.yaml");
    for _ in 0..200 {
        let t0 = Instant::now();
        let text = std::fs::read_to_string(&path).unwrap();
        let t1 = Instant::now();
        let (t, idx) = colltune_core::table::fast::parse(&text).unwrap().unwrap();
        let t2 = Instant::now();
        let p = colltune_core::table::validate::check_with(&t, |c, ci, ri| idx.get(c.name(), ci, ri));
        let t3 = Instant::now();
        println!(
            "read {:?} parse {:?} check {:?} ({})",
            t1 - t0,
            t2 - t1,
            t3 - t2,
            p.len()
        );
    }
}
