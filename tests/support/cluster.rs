//! Clusters on loopback, formed by the test (primaries with their slots in
//! equal ranges, and replicas); `cluster_client` follows them.

use std::time::{Duration, Instant};

pub use super::cluster_client::{Client, Met};
use super::resp::Conn;
use super::server::{free_port, slow, Server};

/// One cluster forming at a time: a bus port is picked free, then released.
static FORMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// The slots of primary `i` of `n`.
pub fn slot_range(i: usize, n: usize) -> (u16, u16) {
    let lo = 16384 * i / n;
    let hi = 16384 * (i + 1) / n - 1;
    (lo as u16, hi as u16)
}

impl Cluster {
    /// `primaries` primaries, each with `replicas` replicas (nodes
    /// `primaries..` in order), every node started with `extra`.
    pub fn start(primaries: usize, replicas: usize, extra: &[&str]) -> Cluster {
        let _one_at_a_time = FORMING.lock().unwrap_or_else(|e| e.into_inner());
        let n = primaries * (1 + replicas);
        // A bus port is free when chosen, but another connection may take
        // it as its local port before the node binds it: a node that does
        // not start is started again on a new one.
        let (nodes, buses): (Vec<Server>, Vec<String>) = (0..n)
            .map(|_| {
                (0..5)
                    .find_map(|_| {
                        let bus = free_port().to_string();
                        let mut args = vec![
                            "--cluster-enabled",
                            "yes",
                            "--cluster-port",
                            &bus,
                            "--cluster-node-timeout",
                            "2000",
                        ];
                        args.extend_from_slice(extra);
                        Server::try_start_with(&args).map(|node| (node, bus.clone()))
                    })
                    .expect("a cluster node started on one of five bus ports")
            })
            .unzip();
        for (i, node) in nodes.iter().take(primaries).enumerate() {
            let (lo, hi) = slot_range(i, primaries);
            node.conn()
                .ok(&["CLUSTER", "ADDSLOTSRANGE", &lo.to_string(), &hi.to_string()]);
        }
        let mut first = nodes[0].conn();
        for (node, bus) in nodes.iter().zip(&buses).skip(1) {
            first.ok(&["CLUSTER", "MEET", "127.0.0.1", &node.port.to_string(), bus]);
        }
        let c = Cluster { nodes };
        c.wait_known(n);
        for r in primaries..n {
            let primary = c.id((r - primaries) % primaries);
            let mut conn = c.nodes[r].conn();
            super::wait_for("the replica to know its primary", || {
                conn.cmd(&["CLUSTER", "REPLICATE", &primary]).is_ok()
            });
        }
        for r in primaries..n {
            let mut conn = c.nodes[r].conn();
            super::wait_for("the replica's link", || {
                super::info_field(&mut conn, "replication", "master_link_status").as_deref() == Some("up")
            });
        }
        c.wait_ok();
        c
    }

    fn wait_known(&self, n: usize) {
        for node in &self.nodes {
            let mut c = node.conn();
            let deadline = Instant::now() + Duration::from_secs(30) * slow();
            loop {
                let info = c.ok(&["CLUSTER", "INFO"]).text();
                if info.contains("cluster_state:ok") && info.contains(&format!("cluster_known_nodes:{n}\r")) {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not form: {info}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Waits until every live node says the cluster is ok.
    pub fn wait_ok(&self) {
        for node in &self.nodes {
            let Ok(mut c) = Conn::open(node.port) else {
                continue;
            };
            super::wait_for("cluster_state:ok", || {
                c.ok(&["CLUSTER", "INFO"]).text().contains("cluster_state:ok")
            });
        }
    }

    pub fn id(&self, i: usize) -> String {
        self.nodes[i].conn().ok(&["CLUSTER", "MYID"]).text()
    }

    /// The node (index) that serves `key`'s slot, as node `ask` sees it.
    pub fn owner(&self, ask: usize, key: &str) -> usize {
        let mut c = self.nodes[ask].conn();
        let slot = c.int(&["CLUSTER", "KEYSLOT", key]);
        let slots = c.ok(&["CLUSTER", "SLOTS"]);
        for range in slots.items() {
            let r = range.items();
            if (r[0].int()..=r[1].int()).contains(&slot) {
                let port = r[2].items()[1].int() as u16;
                return self.index(port);
            }
        }
        panic!("slot {slot} of {key} is served by no node")
    }

    pub fn index(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port == port)
            .expect("a node of the cluster")
    }

    pub fn client(&self) -> Client {
        Client::new(self.nodes.iter().map(|n| n.port).collect())
    }
}

/// A hash tag whose slot primary `i` of `n` serves, the `k`-th such.
pub fn tag_on(c: &mut Conn, i: usize, n: usize, k: usize) -> String {
    let (lo, hi) = slot_range(i, n);
    (0..)
        .map(|t| format!("q{t}"))
        .filter(|t| {
            let slot = c.int(&["CLUSTER", "KEYSLOT", t]);
            (lo as i64..=hi as i64).contains(&slot)
        })
        .nth(k)
        .unwrap()
}
