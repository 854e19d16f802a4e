//! A queue's hash slot and this node's hold on it (docs/production.md, "A
//! cluster"): the server's slot of a key, and what `CLUSTER NODES` says of
//! the slots this node serves and the slots it is moving key by key.

/// Hash slots in a cluster.
pub const SLOTS: usize = 16384;

/// The server's slot of `key`: CRC16 (XMODEM) of its hash tag (between the
/// first `{` and the first `}` after it, when not empty) or else of the
/// whole key, modulo 16384.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) & (SLOTS as u16 - 1)
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// What this node may do with a slot's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// It serves the slot (or its primary does, for a replica), and no
    /// key-by-key migration of it is open here.
    Serves,
    /// A key-by-key migration (`CLUSTER SETSLOT … MIGRATING|IMPORTING`) of
    /// the slot is open here: its keys are split between two nodes.
    Moving,
    /// Another node serves it.
    Elsewhere,
}

/// One bit per slot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotSet(Box<[u64]>);

impl SlotSet {
    fn new() -> SlotSet {
        SlotSet(vec![0; SLOTS / 64].into_boxed_slice())
    }

    fn add(&mut self, lo: usize, hi: usize) {
        for slot in lo..=hi.min(SLOTS - 1) {
            self.0[slot / 64] |= 1 << (slot % 64);
        }
    }

    fn has(&self, slot: u16) -> bool {
        let slot = usize::from(slot);
        self.0[slot / 64] & (1 << (slot % 64)) != 0
    }
}

/// This node's slots as `CLUSTER NODES` gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    served: SlotSet,
    moving: SlotSet,
}

impl View {
    /// Reads `CLUSTER NODES`: the slots of the line flagged `myself` (or of
    /// its primary's line, for a replica), and the open migrations the
    /// `myself` line lists (`[slot->-id]`, `[slot-<-id]`). `None` when the
    /// text has no `myself` line.
    pub fn parse(nodes: &str) -> Option<View> {
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split_whitespace().collect())
            .filter(|f: &Vec<&str>| f.len() >= 8)
            .collect();
        let me = lines
            .iter()
            .find(|f| f[2].split(',').any(|flag| flag == "myself"))?;
        let replica = me[2].split(',').any(|flag| flag == "slave" || flag == "replica");
        let owner = if replica {
            lines.iter().find(|f| f[0] == me[3]).unwrap_or(me)
        } else {
            me
        };
        let mut view = View {
            served: SlotSet::new(),
            moving: SlotSet::new(),
        };
        for field in &owner[8..] {
            if !field.starts_with('[') {
                let (lo, hi) = field.split_once('-').unwrap_or((field, field));
                if let (Ok(lo), Ok(hi)) = (lo.parse(), hi.parse()) {
                    view.served.add(lo, hi);
                }
            }
        }
        for field in &me[8..] {
            let open = field.strip_prefix('[').and_then(|f| f.split_once('-'));
            if let Some(slot) = open.and_then(|(slot, _)| slot.parse().ok()) {
                view.moving.add(slot, slot);
            }
        }
        Some(view)
    }

    pub fn hold(&self, slot: u16) -> Hold {
        if self.moving.has(slot) {
            Hold::Moving
        } else if self.served.has(slot) {
            Hold::Serves
        } else {
            Hold::Elsewhere
        }
    }
}

/// Whether `slot` is in one of the inclusive `ranges`.
pub fn in_ranges(slot: u16, ranges: &[(u16, u16)]) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_the_servers() {
        // CLUSTER KEYSLOT on Valkey 9.1, and the CRC16 check value.
        assert_eq!(key_slot(b"emq:{a}:"), 15495);
        assert_eq!(key_slot(b"emq:{b}:"), 3300);
        assert_eq!(key_slot(b"emq:{q1}:"), 7450);
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"123456789"), 0x31C3 & 16383);
        // The first `{` and the first `}` after it; an empty tag hashes all.
        assert_eq!(key_slot(b"x{b}y{c}"), key_slot(b"b"));
        assert_eq!(key_slot(b"{}b"), crc16(b"{}b") & 16383);
        assert_eq!(key_slot(b"emq:{b}:ring"), key_slot(b"emq:{b}:"));
    }

    const NODES: &str = "\
07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected
67ed 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 12000 [5000->-67ed] [16000-<-67ed]
";

    #[test]
    fn a_primary_reads_its_slots_and_its_open_migrations() {
        let v = View::parse(NODES).unwrap();
        assert_eq!(v.hold(0), Hold::Serves);
        assert_eq!(v.hold(5460), Hold::Serves);
        assert_eq!(v.hold(12000), Hold::Serves);
        assert_eq!(v.hold(5000), Hold::Moving);
        assert_eq!(v.hold(16000), Hold::Moving);
        assert_eq!(v.hold(5461), Hold::Elsewhere);
        assert_eq!(v.hold(11999), Hold::Elsewhere);
    }

    #[test]
    fn a_replica_reads_its_primarys_slots() {
        let text = NODES
            .replace("myself,master", "master")
            .replace(" slave e7d1", " myself,slave e7d1");
        let v = View::parse(&text).unwrap();
        assert_eq!(v.hold(100), Hold::Serves);
        assert_eq!(v.hold(6000), Hold::Elsewhere);
        // Open migrations are the primary's own: a replica is not told.
        assert_eq!(v.hold(5000), Hold::Serves);
    }

    #[test]
    fn text_without_myself_is_no_view() {
        assert_eq!(View::parse(""), None);
        assert_eq!(View::parse("garbage line\n"), None);
    }

    #[test]
    fn ranges() {
        assert!(in_ranges(5, &[(0, 5)]));
        assert!(!in_ranges(6, &[(0, 5), (7, 9)]));
        assert!(in_ranges(8, &[(0, 5), (7, 9)]));
    }
}
