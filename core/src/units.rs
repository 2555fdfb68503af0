//! How sizes and durations are written for people, in one place.

/// `4 MiB`, `64 KiB`, `7 B`.
pub fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// `1h02m03s`, `2m03s`, `3s`.
pub fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match (s / 3600, (s / 60) % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_bytes(4 << 20), "4 MiB");
        assert_eq!(human_bytes(3000), "3000 B");
        assert_eq!(human_bytes(2 << 30), "2 GiB");
        assert_eq!(human_bytes(64 << 10), "64 KiB");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(hms(3.2), "3s");
        assert_eq!(hms(123.0), "2m03s");
        assert_eq!(hms(3723.0), "1h02m03s");
    }
}
