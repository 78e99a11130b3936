//! The small text forms the control socket and the page share: a GUID as operators write it,
//! and the error line of an answer. A leaf: it imports nothing of the daemon, so the page can use
//! it without importing the control socket that dispatches to the page.

/// A GUID as operators write it: `0x` and up to 16 hex digits (the prefix optional).
///
/// # Errors
/// What is wrong with it.
pub fn parse_guid(text: &str) -> Result<ibsm_mad::Guid, String> {
    let t = text.trim();
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    if hex.is_empty() || hex.len() > 16 {
        return Err(format!("GUID {text:?}: expected up to 16 hex digits, such as 0x0002c90300001234"));
    }
    u64::from_str_radix(hex, 16).map(ibsm_mad::Guid).map_err(|e| format!("GUID {text:?}: {e}"))
}

/// `{"error":"..."}`.
pub fn error_line(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}
