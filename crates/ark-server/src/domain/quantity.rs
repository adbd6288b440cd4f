//! Kubernetes quantities ("10Gi", "500M", "1.5Gi", "1e3", "1073741824") read as whole units, as
//! `resource.Quantity.Value()` reads them: a fraction is rounded up.

/// The whole units (bytes, for a size) a quantity stands for, rounded up; None for what is not a quantity, a
/// negative one, or one past `i64`.
pub fn bytes(quantity: &str) -> Option<i64> {
    units(quantity, 1)
}

/// Thousandths of a unit (millicores, for a CPU), rounded up, as `Quantity.MilliValue()`.
pub fn milli_units(quantity: &str) -> Option<i64> {
    units(quantity, 1_000)
}

/// `quantity` in units of which `per_unit` make one, rounded up.
fn units(quantity: &str, per_unit: i128) -> Option<i64> {
    let quantity = quantity.trim();
    let end = quantity
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    // The number as a fraction `numerator / 10^scale`, then times the suffix's multiplier.
    let digits = format!("{whole}{fraction}");
    let numerator: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let scale = u32::try_from(fraction.len()).ok()?;
    let (multiplier, divisor): (i128, i128) = match suffix {
        "" => (1, 1),
        "m" => (1, 1_000),
        "u" => (1, 1_000_000),
        "n" => (1, 1_000_000_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        exponent if exponent.starts_with(['e', 'E']) => {
            let power: i32 = exponent[1..].parse().ok()?;
            if power >= 0 {
                (10i128.checked_pow(power.unsigned_abs())?, 1)
            } else {
                (1, 10i128.checked_pow(power.unsigned_abs())?)
            }
        }
        _ => return None,
    };
    let divisor = divisor.checked_mul(10i128.checked_pow(scale)?)?;
    let scaled = numerator.checked_mul(multiplier)?.checked_mul(per_unit)?;
    let units = scaled / divisor + i128::from(scaled % divisor != 0);
    i64::try_from(units).ok()
}

#[cfg(test)]
mod tests {
    use super::{bytes, milli_units};

    #[test]
    fn cpus_in_thousandths() {
        assert_eq!(milli_units("500m"), Some(500));
        assert_eq!(milli_units("2"), Some(2_000));
        assert_eq!(milli_units("1.5"), Some(1_500));
        assert_eq!(milli_units("100u"), Some(1));
        assert_eq!(milli_units("0"), Some(0));
        assert_eq!(milli_units("-1"), None);
    }

    #[test]
    fn sizes_in_every_suffix_a_claim_uses() {
        assert_eq!(bytes("1073741824"), Some(1 << 30));
        assert_eq!(bytes("1Gi"), Some(1 << 30));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("64Ki"), Some(65_536));
        assert_eq!(bytes("99999999999Pi"), None);
        assert_eq!(bytes(""), None);
        assert_eq!(bytes("Gi"), None);
        assert_eq!(bytes("10Gb"), None);
    }

    #[test]
    fn fractions_and_exponents_round_up_as_kubernetes_does() {
        assert_eq!(bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(bytes("100m"), Some(1));
        assert_eq!(bytes("2000m"), Some(2));
        assert_eq!(bytes("1e3"), Some(1_000));
        assert_eq!(bytes("1E"), Some(1_000_000_000_000_000_000));
        assert_eq!(bytes(".5k"), Some(500));
        assert_eq!(bytes("1.1"), Some(2));
        assert_eq!(bytes("0"), Some(0));
    }
}
