//! infiniband-diags' node name map (`ibnetdiscover --node-name-map`, `ibroute
//! --node-name-map`, OpenSM's `node_name_map_name`): one node per line, its NodeGUID and the
//! name to show instead of its NodeDescription, `0x0002c90300001234 "rack3-leaf2"`; blank
//! lines and `#` comments ignored.
//!
//! Owns [`NameMap`]: parsed with the file and line of a bad line ([`NameMap::parse`]), read
//! only as a regular file of at most 16 MiB ([`NameMap::load`]), and looked up by NodeGUID
//! (offline by `routes` and `topology`; the SM takes it as [`crate::core::NodeNames`]).

use std::collections::HashMap;
use std::path::Path;

use ibsm_mad::Guid;

/// The largest file read.
const LIMIT: u64 = 16 << 20;

/// Names by NodeGUID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    names: HashMap<Guid, String>,
}

impl NameMap {
    /// The map in `text`; `origin` names the file in errors. A later line for the same GUID
    /// wins, as in infiniband-diags.
    ///
    /// # Errors
    /// `ORIGIN:LINE: reason` for the first bad line.
    pub fn parse(text: &str, origin: &str) -> Result<NameMap, String> {
        let mut names = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| format!("{origin}:{}: {why}", i + 1);
            let (guid, rest) = line.split_once(char::is_whitespace).ok_or_else(|| bad("a GUID and a name expected"))?;
            let hex = guid.strip_prefix("0x").or_else(|| guid.strip_prefix("0X")).unwrap_or(guid);
            let guid = (!hex.is_empty() && hex.len() <= 16)
                .then(|| u64::from_str_radix(hex, 16).ok())
                .flatten()
                .ok_or_else(|| bad(&format!("{guid:?} is not a GUID (0x and up to 16 hex digits)")))?;
            let rest = rest.trim();
            let name = match rest.strip_prefix('"') {
                Some(quoted) => {
                    quoted.split_once('"').map(|(n, _)| n).ok_or_else(|| bad("the name's closing quote is missing"))?
                }
                None => rest.split('#').next().unwrap_or_default().trim(),
            };
            if name.is_empty() {
                return Err(bad("an empty name"));
            }
            names.insert(Guid(guid), name.to_owned());
        }
        Ok(NameMap { names })
    }

    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read (not a regular file, over 16 MiB, not UTF-8), or a bad line.
    pub fn load(path: &Path) -> Result<NameMap, String> {
        let origin = path.display().to_string();
        let bytes = ibsm_topology::file::read_bytes(path, LIMIT).map_err(|e| format!("{origin}: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{origin}: not UTF-8 text"))?;
        NameMap::parse(&text, &origin)
    }

    /// The name of the node with `guid`, if the map has one.
    pub fn get(&self, guid: Guid) -> Option<&str> {
        self.names.get(&guid).map(String::as_str)
    }

    /// The names for the SM's configuration (`node-name-map`).
    pub fn into_node_names(self) -> crate::core::NodeNames {
        crate::core::NodeNames::new(self.names)
    }

    /// How many nodes it names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether it names none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_bare_names_comments_and_repeats() {
        let text = "# rack 3\n0x0002c90300001234 \"rack3 leaf2\"  # the quotes keep the space\n\n\
                    2c90300005678\tspine-1 # bare\n0x0002c90300001234 \"r3-l2\"\n";
        let m = NameMap::parse(text, "map").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.get(Guid(0x0002_c903_0000_1234)), Some("r3-l2"), "the later line wins");
        assert_eq!(m.get(Guid(0x2_c903_0000_5678)), Some("spine-1"));
        assert_eq!(m.get(Guid(1)), None);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        for (text, line) in [("0x1 \"a\"\nspine\n", 2), ("zz \"a\"\n", 1), ("0x1 \"open\n", 1), ("0x1 \"\"\n", 1)] {
            let e = NameMap::parse(text, "nnm").unwrap_err();
            assert!(e.starts_with(&format!("nnm:{line}: ")), "{e}");
        }
    }

    #[test]
    fn any_text_is_parsed_or_refused_without_panic() {
        for text in super::super::random_texts(b"0x1aF# \n\t\"gz9", 2000) {
            if let Ok(m) = NameMap::parse(&text, "f") {
                assert!(m.len() <= text.lines().count());
            }
        }
    }
}
