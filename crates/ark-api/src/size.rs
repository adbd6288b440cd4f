//! Sizes as people read them, as ark prints them everywhere: `1.5 GiB`.

/// `bytes` in the largest binary unit it reaches, to one decimal; plain bytes below 1 KiB.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_take_the_largest_unit_they_reach() {
        assert_eq!(super::human(1023), "1023 B");
        assert_eq!(super::human(1536), "1.5 KiB");
        assert_eq!(super::human(26 << 20), "26.0 MiB");
    }
}
