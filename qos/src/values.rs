//! The value grammar shared by qos-policy.conf and the simple QoS options: numbers (decimal or
//! `0x` hex), ranges (`a-b`), comma lists of names and ranges, VL arbitration `vl:weight` lists
//! and SL2VL lists. Each parser returns the reason as a `String`; the caller adds where.

use ibsm_mad::attrs::VlArbEntry;

use crate::model::Range;

/// Entries a VL arbitration table holds (two blocks of 32).
pub const VLARB_ENTRIES: usize = 64;

/// A number: decimal or `0x` hex, at most 64 bits. A leading `0` before more digits is refused:
/// OpenSM reads it as octal, which is rarely what was meant.
pub fn number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("expected a number (decimal or 0x hex, 64 bits at most), found {t:?}"));
        }
        return u64::from_str_radix(hex, 16).map_err(|_| format!("bad hex number {t:?}"));
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("expected a number (decimal or 0x hex), found {t:?}"));
    }
    if t.len() > 1 && t.starts_with('0') {
        return Err(format!("ambiguous number {t:?}: a leading 0 means octal to OpenSM; write 0x... or drop the 0"));
    }
    t.parse::<u64>().map_err(|_| format!("number {t:?} does not fit in 64 bits"))
}

/// A number in `min..=max`; `what` names it in the message.
pub fn bounded(text: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    let n = number(text)?;
    if (min..=max).contains(&n) { Ok(n) } else { Err(format!("{what} {n} is out of range (expected {min}..={max})")) }
}

/// A comma list of numbers and ranges (`1, 5-9, 0x10`), each value at most `max`. A range
/// written high to low is turned around, as OpenSM does.
pub fn ranges(text: &str, max: u64, what: &str) -> Result<Vec<Range>, String> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("empty entry in the {what} list {text:?}"));
        }
        let (lo, hi) = if let Some((a, b)) = item.split_once('-') {
            (bounded(a, 0, max, what)?, bounded(b, 0, max, what)?)
        } else {
            let n = bounded(item, 0, max, what)?;
            (n, n)
        };
        out.push(Range { lo: lo.min(hi), hi: lo.max(hi) });
    }
    Ok(out)
}

/// A comma list of names (quotes around a name are dropped); none may be empty.
pub fn names(text: &str, what: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = unquote(item.trim());
        if item.is_empty() {
            return Err(format!("empty {what} in {text:?}"));
        }
        out.push(item.to_owned());
    }
    Ok(out)
}

/// `s` without one pair of surrounding double quotes.
pub fn unquote(s: &str) -> &str {
    s.strip_prefix('"').and_then(|r| r.strip_suffix('"')).unwrap_or(s)
}

/// A VL arbitration list `vl:weight, vl:weight, ...`: VLs 0..=14, weights 0..=255, at most 64
/// entries.
pub fn vlarb_list(text: &str) -> Result<Vec<VlArbEntry>, String> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let Some((vl, weight)) = item.split_once(':') else {
            return Err(format!("expected vl:weight, found {item:?}"));
        };
        let vl = bounded(vl, 0, 14, "VL")? as u8;
        let weight = bounded(weight, 0, 255, "weight")? as u8;
        out.push(VlArbEntry { vl, weight });
    }
    if out.len() > VLARB_ENTRIES {
        return Err(format!("{} entries, a VL arbitration table holds {VLARB_ENTRIES}", out.len()));
    }
    Ok(out)
}

/// An SL2VL list: exactly 16 VLs (0..=15; 15 drops the SL), SL 0 first.
pub fn sl2vl_list(text: &str) -> Result<[u8; 16], String> {
    let items: Vec<&str> = text.split(',').collect();
    if items.len() != 16 {
        return Err(format!("expected 16 VLs (one per SL, SL 0 first), found {}", items.len()));
    }
    let mut out = [0u8; 16];
    for (slot, item) in out.iter_mut().zip(items) {
        *slot = bounded(item, 0, 15, "VL")? as u8;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_ranges_and_lists() {
        assert_eq!(number("0x1F"), Ok(31));
        assert_eq!(number("17"), Ok(17));
        assert!(number("017").unwrap_err().contains("octal"));
        assert!(number("0x").is_err() && number("x1").is_err() && number("18446744073709551616").is_err());
        assert_eq!(ranges("9-3, 0x10", 0xffff, "pkey"), Ok(vec![Range { lo: 3, hi: 9 }, Range::one(16)]));
        assert!(ranges("1,,2", 9, "x").unwrap_err().contains("empty entry"));
        assert!(ranges("0x10000", 0xffff, "pkey").unwrap_err().contains("out of range"));
        assert_eq!(names(" a b , \"c\" ", "group"), Ok(vec!["a b".to_owned(), "c".to_owned()]));
        assert_eq!(vlarb_list("0:4, 1:255").map(|v| v.len()), Ok(2));
        assert!(vlarb_list("15:1").unwrap_err().contains("VL 15"));
        assert!(vlarb_list("1").unwrap_err().contains("vl:weight"));
        assert_eq!(sl2vl_list("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7").map(|t| t[15]), Ok(7));
        assert!(sl2vl_list("0,1").unwrap_err().contains("expected 16"));
    }
}
