//! Layering: QoS classes combined with the layers of a layered routing engine (dfsssp, nue).
//!
//! A layered engine breaks credit loops by putting paths on different VLs; QoS keeps traffic
//! classes apart on different VLs. Both fit when every (class, layer) pair gets a VL of its own:
//!
//! - The classes ([`Classes`]) are the distinct VLs that the switch external ports' SL2VL
//!   option (`qos.swe.sl2vl`, else `qos.sl2vl`, else OpenSM's default) gives the SLs in use:
//!   SL 0, every QoS level's and `qos-ulps` line's SL, and the partitions' `sl=`. Two SLs on one
//!   VL are one class; VL 15 (drop) is no class. Classes are numbered by their VL, lowest first.
//! - With C classes and V data VLs, a layered engine gets L = min(V / C, 16 / C) layers
//!   ([`Classes::layers`]; at least 1).
//! - Class c's path on layer k is on SL c × L + k, and every port's SL2VL table maps that SL
//!   to VL c × L + k ([`Classes::layered_options`]): class c owns SLs and VLs c × L up to
//!   c × L + L − 1. An SL past C × L goes to its class's first VL (VL 0 without a class).
//! - A VL arbitration entry of a class's VL is repeated for each of the class's VLs, with its
//!   weight (entries of weight 0 and of VLs that are no class are left out); the table is cut
//!   at 64 entries, and each port's capacity cuts it further as any table.
//!
//! Pure: no fabric, no I/O. The SM decides when the layered tables are in force (QoS on, the
//! chain names a layered engine, L of two or more) and asks [`Classes::sl`] for each path's SL.

use ibsm_mad::attrs::VlArbEntry;

use crate::error::OptionError;
use crate::model::QosPolicy;
use crate::options::{ClassOptions, PortClass, QosOptions};
use crate::values::VLARB_ENTRIES;

/// The QoS classes of a setting: each SL's class and each class's VL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
    /// The class of each SL (`None`: its VL is no class's).
    class_of_sl: [Option<u8>; 16],
    /// The VL of each class, ascending.
    vls: Vec<u8>,
}

impl Classes {
    /// The classes of `policy` under `options`, with `extra_sls` (the partitions' `sl=`) also
    /// in use.
    ///
    /// # Errors
    /// An SL2VL option that cannot be read.
    pub fn of(policy: &QosPolicy, options: &QosOptions, extra_sls: &[u8]) -> Result<Classes, OptionError> {
        let sl2vl = options.config(PortClass::SwitchExternal)?.sl2vl;
        let in_use = std::iter::once(0u8)
            .chain(policy.levels.iter().map(|l| l.sl))
            .chain(policy.ulps.iter().map(|u| u.sl))
            .chain(extra_sls.iter().copied());
        let mut vls: Vec<u8> =
            in_use.filter_map(|sl| sl2vl.get(usize::from(sl)).copied()).filter(|&v| v < 15).collect();
        vls.sort_unstable();
        vls.dedup();
        if vls.is_empty() {
            vls.push(0);
        }
        let mut class_of_sl = [None; 16];
        for (slot, vl) in class_of_sl.iter_mut().zip(sl2vl) {
            *slot = vls.iter().position(|&v| v == vl).and_then(|c| u8::try_from(c).ok());
        }
        Ok(Classes { class_of_sl, vls })
    }

    /// The number of classes (at least 1).
    pub fn count(&self) -> u8 {
        u8::try_from(self.vls.len()).unwrap_or(u8::MAX).max(1)
    }

    /// The class of `sl`, if it has one.
    pub fn class_of(&self, sl: u8) -> Option<u8> {
        self.class_of_sl.get(usize::from(sl)).copied().flatten()
    }

    /// The layers a layered engine gets with `data_vls` data VLs: min(V / C, 16 / C), at least 1.
    pub fn layers(&self, data_vls: u8) -> u8 {
        let c = self.count();
        (data_vls / c).min(16 / c).max(1)
    }

    /// The SL of a path whose QoS level gives `sl`, on `layer` of `layers`: its class's SL for
    /// that layer (`sl` itself when it has no class, or with one layer).
    pub fn sl(&self, sl: u8, layers: u8, layer: u8) -> u8 {
        match self.class_of(sl) {
            Some(c) if layers > 1 => c.saturating_mul(layers).saturating_add(layer.min(layers - 1)),
            _ => sl,
        }
    }

    /// The SLs of the class of `sl` with `layers` layers (`sl` alone without a class).
    pub fn sls(&self, sl: u8, layers: u8) -> std::ops::Range<u8> {
        match self.class_of(sl) {
            Some(c) if layers > 1 => c.saturating_mul(layers)..c.saturating_mul(layers).saturating_add(layers),
            _ => sl..sl.saturating_add(1),
        }
    }

    /// The SL2VL table of the layered setting: SL c × L + k on VL c × L + k, past C × L its
    /// class's first VL.
    pub fn layered_sl2vl(&self, layers: u8) -> [u8; 16] {
        let used = self.count().saturating_mul(layers);
        let mut t = [0u8; 16];
        for (sl, slot) in (0u8..).zip(t.iter_mut()) {
            *slot = if sl < used { sl } else { self.class_of(sl).map_or(0, |c| c.saturating_mul(layers)) };
        }
        t
    }

    /// One arbitration table of the layered setting, from a configured one.
    fn layered_vlarb(&self, table: &[VlArbEntry], layers: u8) -> Vec<VlArbEntry> {
        let mut out = Vec::new();
        for e in table.iter().filter(|e| e.weight > 0) {
            let Some(c) = self.vls.iter().position(|&v| v == e.vl).and_then(|c| u8::try_from(c).ok()) else {
                continue;
            };
            out.extend(
                (0..layers).map(|k| VlArbEntry { vl: c.saturating_mul(layers).saturating_add(k), weight: e.weight }),
            );
        }
        out.truncate(VLARB_ENTRIES);
        out
    }

    /// `options` with every port class's SL2VL and VL arbitration tables layered for `layers`
    /// layers (the other values as configured).
    ///
    /// # Errors
    /// An option that cannot be read.
    pub fn layered_options(&self, options: &QosOptions, layers: u8) -> Result<QosOptions, OptionError> {
        let list = |t: &[VlArbEntry]| t.iter().map(|e| format!("{}:{}", e.vl, e.weight)).collect::<Vec<_>>().join(",");
        let sl2vl = self.layered_sl2vl(layers).map(|v| v.to_string()).join(",");
        let class = |c: PortClass| -> Result<ClassOptions, OptionError> {
            let cfg = options.config(c)?;
            Ok(ClassOptions {
                max_vls: Some(cfg.max_vls),
                high_limit: Some(cfg.high_limit),
                vlarb_high: Some(list(&self.layered_vlarb(&cfg.vlarb_high, layers))),
                vlarb_low: Some(list(&self.layered_vlarb(&cfg.vlarb_low, layers))),
                sl2vl: Some(sl2vl.clone()),
            })
        };
        Ok(QosOptions {
            ca: Some(class(PortClass::Ca)?),
            sw0: Some(class(PortClass::SwitchPort0)?),
            swe: Some(class(PortClass::SwitchExternal)?),
            rtr: Some(class(PortClass::Router)?),
            ..options.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_qos_policy;

    fn two_classes() -> QosPolicy {
        parse_qos_policy("qos-ulps\n    default : 0\n    any, service-id 0x1000 : 1\nend-qos-ulps\n").unwrap()
    }

    #[test]
    fn classes_are_the_distinct_vls_of_the_sls_in_use() {
        let c = Classes::of(&two_classes(), &QosOptions::default(), &[]).unwrap();
        assert_eq!(c.count(), 2);
        assert_eq!((c.class_of(0), c.class_of(1), c.class_of(2)), (Some(0), Some(1), None));
        // SL 15 is on VL 7 by default: no class in use there.
        assert_eq!(c.class_of(15), None);
        // Two SLs on one VL are one class; a partition's sl= adds its own.
        let mut o = QosOptions::default();
        o.set_opensm("qos_swe_sl2vl", "0,0,1,1,2,2,3,3,4,4,5,5,6,6,7,7").unwrap();
        let c = Classes::of(&two_classes(), &o, &[5]).unwrap();
        assert_eq!(c.count(), 2, "SLs 0 and 1 share VL 0; SL 5 is on VL 2");
        assert_eq!((c.class_of(1), c.class_of(5), c.class_of(4)), (Some(0), Some(1), Some(1)));
    }

    #[test]
    fn layers_are_data_vls_over_classes_within_sixteen_sls() {
        let c = Classes::of(&two_classes(), &QosOptions::default(), &[]).unwrap();
        assert_eq!((c.layers(8), c.layers(15), c.layers(4), c.layers(1)), (4, 7, 2, 1));
        let one = Classes::of(&QosPolicy::default(), &QosOptions::default(), &[]).unwrap();
        assert_eq!((one.count(), one.layers(15)), (1, 15));
        let sls: Vec<u8> = (0..16).collect();
        let many = Classes::of(&QosPolicy::default(), &QosOptions::default(), &sls).unwrap();
        assert_eq!((many.count(), many.layers(15)), (15, 1), "VLs 0..=14: one layer each");
    }

    #[test]
    fn a_class_path_on_a_layer_maps_to_the_class_vl_of_that_layer() {
        let c = Classes::of(&two_classes(), &QosOptions::default(), &[]).unwrap();
        let t = c.layered_sl2vl(4);
        assert_eq!(&t[..8], &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(t[9], 0, "SL 9 (on VL 9 as configured: no class) past the classes' SLs: VL 0");
        for (level_sl, class) in [(0u8, 0u8), (1, 1)] {
            for layer in 0..4 {
                let sl = c.sl(level_sl, 4, layer);
                assert_eq!(sl, class * 4 + layer);
                assert_eq!(t[usize::from(sl)] / 4, class, "class {class}'s layer {layer} stays on its VLs");
                assert!(c.sls(level_sl, 4).contains(&sl));
            }
        }
        assert_eq!(c.sl(1, 1, 0), 1, "one layer: the level's SL");
    }

    #[test]
    fn arbitration_weights_of_a_class_apply_to_all_its_vls() {
        let c = Classes::of(&two_classes(), &QosOptions::default(), &[]).unwrap();
        let mut o = QosOptions::default();
        o.set_opensm("qos_vlarb_low", "0:32,1:128,2:64").unwrap();
        let l = c.layered_options(&o, 2).unwrap();
        let cfg = l.config(PortClass::Ca).unwrap();
        let low: Vec<(u8, u8)> = cfg.vlarb_low.iter().take(5).map(|e| (e.vl, e.weight)).collect();
        assert_eq!(low, vec![(0, 32), (1, 32), (2, 128), (3, 128), (0, 0)], "VL 2 is no class: left out");
        assert_eq!(&cfg.sl2vl[..4], &[0, 1, 2, 3]);
        assert_eq!(l.config(PortClass::SwitchExternal).unwrap().sl2vl, cfg.sl2vl);
    }
}
