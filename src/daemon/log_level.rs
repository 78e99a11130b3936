//! The log filter of a running SM, changed without a restart (`ibsm log-level LEVEL [TARGET]`).
//!
//! Owns the filter in force as a default level and per-target levels, rendered as an
//! `EnvFilter` directive string (`info,ibsm::core=debug`), and the hook through which the
//! binary's logger takes a new one ([`install`]). The library does not set up logging itself
//! (the binary does, in `cli::log`), so without a hook a change is refused.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// The levels `EnvFilter` knows.
pub const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Applies a directive string to the logger; an error says why it was not taken.
pub type Apply = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The filter in force: a default level and levels by target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The default level (`warn`); empty: none given.
    default: String,
    /// Levels by target (`ibsm::core` → `debug`).
    targets: BTreeMap<String, String>,
    /// Starting directives of other forms (span filters), kept as they are, last.
    other: Vec<String>,
}

impl Filter {
    /// The filter the logger started with (`RUST_LOG`, or the built-in default).
    pub fn new(base: &str) -> Filter {
        let mut f = Filter::default();
        for d in base.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match d.split_once('=') {
                None if LEVELS.contains(&d.to_ascii_lowercase().as_str()) => f.default = d.to_ascii_lowercase(),
                Some((t, l)) if is_target(t) && LEVELS.contains(&l.to_ascii_lowercase().as_str()) => {
                    f.targets.insert(t.to_owned(), l.to_ascii_lowercase());
                }
                _ => f.other.push(d.to_owned()),
            }
        }
        f
    }

    /// Sets `level` for `target` (replacing that target's level), or as the default.
    ///
    /// # Errors
    /// An unknown level, or a target that is not a module path.
    pub fn set(&mut self, level: &str, target: Option<&str>) -> Result<(), String> {
        let level = level.to_ascii_lowercase();
        if !LEVELS.contains(&level.as_str()) {
            return Err(format!("unknown level {level:?}; expected one of {}", LEVELS.join(", ")));
        }
        match target {
            None => self.default = level,
            Some(t) if is_target(t) => {
                self.targets.insert(t.to_owned(), level);
            }
            Some(t) => return Err(format!("target {t:?} is not a module path such as ibsm::core")),
        }
        Ok(())
    }

    /// The directive string.
    pub fn directives(&self) -> String {
        let mut parts = vec![self.default.clone()];
        parts.extend(self.targets.iter().map(|(t, l)| format!("{t}={l}")));
        parts.extend(self.other.iter().cloned());
        parts.retain(|p| !p.is_empty());
        parts.join(",")
    }
}

fn is_target(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 128
        && t.split("::").all(|seg| !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

struct Hook {
    filter: Mutex<Filter>,
    apply: Apply,
}

static HOOK: OnceLock<Hook> = OnceLock::new();

/// Called once by the binary's logger set-up: `base` is the filter it started with, `apply`
/// puts a new one in force. A second call is ignored.
pub fn install(base: &str, apply: Apply) {
    let _ = HOOK.set(Hook { filter: Mutex::new(Filter::new(base)), apply });
}

/// Sets `level` (for `target`, or as the default) on the running logger; the directives now
/// in force.
///
/// # Errors
/// A bad level or target, no logger to change, or the logger refusing the directives.
pub fn set(level: &str, target: Option<&str>) -> Result<String, String> {
    let hook = HOOK.get().ok_or("this process has no logger that can be changed")?;
    let mut filter = hook.filter.lock().map_err(|_| "the log filter is poisoned")?;
    let mut next = filter.clone();
    next.set(level, target)?;
    let directives = next.directives();
    (hook.apply)(&directives)?;
    *filter = next;
    tracing::warn!(error_id = "log-level-changed", filter = %directives, "log level changed");
    Ok(directives)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_replace_the_default_or_one_targets_and_the_rest_stays() {
        let mut f = Filter::new("warn,ibsm::summary=info");
        assert_eq!(f.directives(), "warn,ibsm::summary=info");
        f.set("error", Some("ibsm::summary")).unwrap();
        assert_eq!(f.directives(), "warn,ibsm::summary=error");
        f.set("debug", Some("ibsm::core")).unwrap();
        f.set("INFO", None).unwrap();
        assert_eq!(f.directives(), "info,ibsm::core=debug,ibsm::summary=error");
        let mut g = Filter::new("ibsm[sweep]=debug, Trace");
        g.set("warn", Some("ibsm::sa")).unwrap();
        assert_eq!(g.directives(), "trace,ibsm::sa=warn,ibsm[sweep]=debug", "span filters kept as given");
    }

    #[test]
    fn bad_levels_and_targets_are_refused_and_change_nothing() {
        let mut f = Filter::new("warn");
        assert!(f.set("loud", None).unwrap_err().contains("unknown level"));
        for t in ["", "a::", "a b", "x=debug", "a,b"] {
            assert!(f.set("info", Some(t)).is_err(), "{t:?}");
        }
        assert_eq!(f.directives(), "warn");
    }
}
