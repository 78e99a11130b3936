//! OpenSM's simple QoS options (`qos_max_vls`, `qos_high_limit`, `qos_vlarb_high`,
//! `qos_vlarb_low`, `qos_sl2vl`, and the same per port class with `_ca_`, `_sw0_`, `_swe_`,
//! `_rtr_`) as plain structs, with their TOML form (`[qos]` and `[qos.ca]` etc. in ibsm's
//! config), and [`ClassConfig`], the values in force for one port class: the class's own value,
//! else the subnet-wide one, else OpenSM's built-in default.

use ibsm_mad::attrs::VlArbEntry;
use serde::{Deserialize, Serialize};

use crate::error::OptionError;
use crate::values::{VLARB_ENTRIES, bounded, sl2vl_list, vlarb_list};

/// OpenSM's default `qos_max_vls`.
pub const DEFAULT_MAX_VLS: u8 = 15;
/// OpenSM's default `qos_high_limit`.
pub const DEFAULT_HIGH_LIMIT: u8 = 0;
/// OpenSM's default high-priority table: VL 0 weight 4, the other VLs listed with weight 0.
pub const DEFAULT_VLARB_HIGH: &str = "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
/// OpenSM's default low-priority table: VL 0 weight 0, VLs 1..=14 weight 4.
pub const DEFAULT_VLARB_LOW: &str = "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
/// OpenSM's default SL2VL: SL n on VL n, SL 15 on VL 7.
pub const DEFAULT_SL2VL: &str = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

/// The five options of one class (or the subnet-wide set); each unset falls back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClassOptions {
    /// Data VLs the subnet uses, 1..=15 (`qos_*max_vls`): checked, bounds nothing (as in OpenSM).
    pub max_vls: Option<u8>,
    /// VLHighLimit 0..=255 (`qos_*high_limit`): 4 KB units of high-priority data before a
    /// low-priority packet may go; 255 = unbounded.
    pub high_limit: Option<u8>,
    /// High-priority VL arbitration table, `"vl:weight,..."` (`qos_*vlarb_high`).
    pub vlarb_high: Option<String>,
    /// Low-priority VL arbitration table, `"vl:weight,..."` (`qos_*vlarb_low`).
    pub vlarb_low: Option<String>,
    /// SL2VL, 16 VLs, SL 0 first (`qos_*sl2vl`).
    pub sl2vl: Option<String>,
}

/// The port classes OpenSM configures separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortClass {
    /// Channel adapter ports (`qos_ca_`).
    Ca,
    /// Switch port 0, when enhanced (`qos_sw0_`).
    SwitchPort0,
    /// Switch external ports (`qos_swe_`).
    SwitchExternal,
    /// Router ports (`qos_rtr_`).
    Router,
}

/// All simple QoS options: the subnet-wide set and one per class (`[qos]`, `[qos.ca]`,
/// `[qos.sw0]`, `[qos.swe]`, `[qos.rtr]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct QosOptions {
    /// `qos_max_vls`.
    pub max_vls: Option<u8>,
    /// `qos_high_limit`.
    pub high_limit: Option<u8>,
    /// `qos_vlarb_high`.
    pub vlarb_high: Option<String>,
    /// `qos_vlarb_low`.
    pub vlarb_low: Option<String>,
    /// `qos_sl2vl`.
    pub sl2vl: Option<String>,
    /// `qos_ca_*`.
    pub ca: Option<ClassOptions>,
    /// `qos_sw0_*`.
    pub sw0: Option<ClassOptions>,
    /// `qos_swe_*`.
    pub swe: Option<ClassOptions>,
    /// `qos_rtr_*`.
    pub rtr: Option<ClassOptions>,
}

/// The values in force for one port class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassConfig {
    /// Data VLs at most, 1..=15.
    pub max_vls: u8,
    /// VLHighLimit.
    pub high_limit: u8,
    /// The 64 high-priority entries (entries the option leaves out are VL 0 weight 0).
    pub vlarb_high: [VlArbEntry; VLARB_ENTRIES],
    /// The 64 low-priority entries.
    pub vlarb_low: [VlArbEntry; VLARB_ENTRIES],
    /// VL of each SL.
    pub sl2vl: [u8; 16],
}

fn table(list: &[VlArbEntry]) -> [VlArbEntry; VLARB_ENTRIES] {
    let mut t = [VlArbEntry::default(); VLARB_ENTRIES];
    for (slot, e) in t.iter_mut().zip(list) {
        *slot = *e;
    }
    t
}

impl QosOptions {
    /// The class-specific set of `class`.
    pub fn class(&self, class: PortClass) -> Option<&ClassOptions> {
        match class {
            PortClass::Ca => self.ca.as_ref(),
            PortClass::SwitchPort0 => self.sw0.as_ref(),
            PortClass::SwitchExternal => self.swe.as_ref(),
            PortClass::Router => self.rtr.as_ref(),
        }
    }

    /// The values in force for `class`.
    ///
    /// # Errors
    /// The first option in the chain whose value cannot be read, named as in the TOML.
    pub fn config(&self, class: PortClass) -> Result<ClassConfig, OptionError> {
        let own = self.class(class);
        let prefix = match class {
            PortClass::Ca => "qos.ca",
            PortClass::SwitchPort0 => "qos.sw0",
            PortClass::SwitchExternal => "qos.swe",
            PortClass::Router => "qos.rtr",
        };
        let err = |key: &str, from_class: bool, reason: String| OptionError {
            option: if from_class { format!("{prefix}.{key}") } else { format!("qos.{key}") },
            reason,
        };
        let pick = |c: Option<&Option<String>>, g: &Option<String>| match c.and_then(Option::as_ref) {
            Some(v) => Some((v.clone(), true)),
            None => g.clone().map(|v| (v, false)),
        };
        let max_vls = match own.and_then(|c| c.max_vls).map(|v| (v, true)).or(self.max_vls.map(|v| (v, false))) {
            Some((v, from)) if !(1..=15).contains(&v) => {
                return Err(err("max-vls", from, format!("{v} is out of range (expected 1..=15)")));
            }
            Some((v, _)) => v,
            None => DEFAULT_MAX_VLS,
        };
        let high_limit = own.and_then(|c| c.high_limit).or(self.high_limit).unwrap_or(DEFAULT_HIGH_LIMIT);
        let (text, from) =
            pick(own.map(|c| &c.vlarb_high), &self.vlarb_high).unwrap_or((DEFAULT_VLARB_HIGH.to_owned(), false));
        let vlarb_high = table(&vlarb_list(&text).map_err(|r| err("vlarb-high", from, r))?);
        let (text, from) =
            pick(own.map(|c| &c.vlarb_low), &self.vlarb_low).unwrap_or((DEFAULT_VLARB_LOW.to_owned(), false));
        let vlarb_low = table(&vlarb_list(&text).map_err(|r| err("vlarb-low", from, r))?);
        let (text, from) = pick(own.map(|c| &c.sl2vl), &self.sl2vl).unwrap_or((DEFAULT_SL2VL.to_owned(), false));
        let sl2vl = sl2vl_list(&text).map_err(|r| err("sl2vl", from, r))?;
        Ok(ClassConfig { max_vls, high_limit, vlarb_high, vlarb_low, sl2vl })
    }

    /// Checks every class's values.
    ///
    /// # Errors
    /// The first value that cannot be read.
    pub fn validate(&self) -> Result<(), OptionError> {
        for c in [PortClass::Ca, PortClass::SwitchPort0, PortClass::SwitchExternal, PortClass::Router] {
            self.config(c)?;
        }
        Ok(())
    }

    /// Sets the option OpenSM calls `name` (e.g. `qos_ca_sl2vl`) to `value` as OpenSM would read
    /// it; `Ok(false)` when `name` is not a simple QoS option.
    ///
    /// # Errors
    /// A value that is not valid for the option.
    pub fn set_opensm(&mut self, name: &str, value: &str) -> Result<bool, String> {
        let Some(rest) = name.strip_prefix("qos_") else { return Ok(false) };
        let (set, key) = match rest.split_once('_') {
            Some(("ca", k)) => (self.ca.get_or_insert_with(ClassOptions::default), k),
            Some(("sw0", k)) => (self.sw0.get_or_insert_with(ClassOptions::default), k),
            Some(("swe", k)) => (self.swe.get_or_insert_with(ClassOptions::default), k),
            Some(("rtr", k)) => (self.rtr.get_or_insert_with(ClassOptions::default), k),
            _ => return self.set_global(rest, value),
        };
        set_one(set, key, value)
    }

    fn set_global(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let mut c = ClassOptions {
            max_vls: self.max_vls,
            high_limit: self.high_limit,
            vlarb_high: self.vlarb_high.take(),
            vlarb_low: self.vlarb_low.take(),
            sl2vl: self.sl2vl.take(),
        };
        let r = set_one(&mut c, key, value);
        self.max_vls = c.max_vls;
        self.high_limit = c.high_limit;
        self.vlarb_high = c.vlarb_high;
        self.vlarb_low = c.vlarb_low;
        self.sl2vl = c.sl2vl;
        r
    }
}

/// OpenSM writes an unset option as `(null)` or, for numbers, 0 / -1.
fn unset(value: &str) -> bool {
    value.is_empty() || value == "(null)"
}

fn set_one(c: &mut ClassOptions, key: &str, value: &str) -> Result<bool, String> {
    let v = value.trim();
    match key {
        // OpenSM: 0 means "unset" for max_vls, -1 for high_limit.
        "max_vls" if unset(v) || v == "0" => Ok(true),
        "max_vls" => {
            c.max_vls = Some(bounded(v, 1, 15, "max VLs")? as u8);
            Ok(true)
        }
        "high_limit" if unset(v) || v == "-1" => Ok(true),
        "high_limit" => {
            c.high_limit = Some(bounded(v, 0, 255, "high limit")? as u8);
            Ok(true)
        }
        "vlarb_high" | "vlarb_low" | "sl2vl" if unset(v) => Ok(true),
        "vlarb_high" => {
            vlarb_list(v)?;
            c.vlarb_high = Some(v.to_owned());
            Ok(true)
        }
        "vlarb_low" => {
            vlarb_list(v)?;
            c.vlarb_low = Some(v.to_owned());
            Ok(true)
        }
        "sl2vl" => {
            sl2vl_list(v)?;
            c.sl2vl = Some(v.to_owned());
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_value_beats_the_subnet_value_which_beats_the_default() {
        let mut o = QosOptions::default();
        assert!(o.set_opensm("qos_sl2vl", "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7").unwrap());
        assert!(o.set_opensm("qos_ca_sl2vl", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,15").unwrap());
        assert!(o.set_opensm("qos_swe_high_limit", "6").unwrap());
        assert!(o.set_opensm("qos_max_vls", "8").unwrap());
        assert!(!o.set_opensm("qos_policy_file", "/x").unwrap());
        assert!(!o.set_opensm("qos", "TRUE").unwrap());
        let ca = o.config(PortClass::Ca).unwrap();
        assert_eq!((ca.sl2vl[0], ca.sl2vl[15], ca.max_vls, ca.high_limit), (1, 15, 8, 0));
        let swe = o.config(PortClass::SwitchExternal).unwrap();
        assert_eq!((swe.sl2vl[8], swe.high_limit), (0, 6));
        let rtr = o.config(PortClass::Router).unwrap();
        assert_eq!(rtr.vlarb_high[0], VlArbEntry { vl: 0, weight: 4 });
        assert_eq!(rtr.vlarb_low[1], VlArbEntry { vl: 1, weight: 4 });
        assert_eq!(rtr.vlarb_low[20], VlArbEntry::default(), "entries past the list are VL 0 weight 0");
        let d = QosOptions::default().config(PortClass::Ca).unwrap();
        assert_eq!((d.max_vls, d.sl2vl[15]), (15, 7));
    }

    #[test]
    fn bad_values_are_refused_with_the_option_name() {
        let mut o = QosOptions::default();
        assert!(o.set_opensm("qos_ca_sl2vl", "0,1").unwrap_err().contains("expected 16"));
        assert!(o.set_opensm("qos_max_vls", "16").unwrap_err().contains("out of range"));
        assert!(o.set_opensm("qos_max_vls", "0").unwrap(), "0 is OpenSM's unset");
        assert_eq!(o.max_vls, None);
        let bad = QosOptions {
            swe: Some(ClassOptions { vlarb_low: Some("0:300".to_owned()), ..ClassOptions::default() }),
            ..QosOptions::default()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!(e.option, "qos.swe.vlarb-low");
        assert!(e.reason.contains("weight 300"), "{e}");
    }
}
