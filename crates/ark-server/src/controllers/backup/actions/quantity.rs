//! Kubernetes quantities of bytes ("10Gi", "500M", "1073741824"), as far as a claim's size needs.

/// The bytes a quantity stands for; None for a form a size is never written in (fractions,
/// exponents, milli) or one that overflows.
pub fn bytes(quantity: &str) -> Option<i64> {
    let quantity = quantity.trim();
    let digits = quantity
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(digits);
    let number: i64 = number.parse().ok()?;
    let multiplier: i64 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn sizes_in_every_suffix_a_claim_uses() {
        assert_eq!(bytes("1073741824"), Some(1 << 30));
        assert_eq!(bytes("1Gi"), Some(1 << 30));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("64Ki"), Some(65_536));
        assert_eq!(bytes("1.5Gi"), None);
        assert_eq!(bytes("100m"), None);
        assert_eq!(bytes("99999999999Pi"), None);
        assert_eq!(bytes(""), None);
    }
}
