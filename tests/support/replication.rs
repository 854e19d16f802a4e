//! Replicas and the AOF: a server made a replica of another, waiting until it
//! applied everything, and the dataset's digest to compare.

use super::resp::Conn;
use super::server::Server;
use super::{info_field, wait_for};

/// `DEBUG DIGEST`: one hash of the whole dataset.
pub fn digest(c: &mut Conn) -> String {
    c.ok(&["DEBUG", "DIGEST"]).text()
}

/// Makes `replica` a replica of `primary` and waits for the link.
pub fn replicate_into(replica: &Server, primary: &Server) -> Conn {
    let mut r = replica.conn();
    r.ok(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    wait_for("the replica link", || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
    });
    r
}

/// Waits until the replica has applied everything the primary sent.
pub fn in_sync(p: &mut Conn, r: &mut Conn) {
    let acked = p.int(&["WAIT", "1", "10000"]);
    assert_eq!(acked, 1, "the replica acknowledged");
    let offset = info_field(p, "replication", "master_repl_offset").unwrap();
    wait_for("the replica offset", || {
        info_field(r, "replication", "slave_repl_offset").as_ref() == Some(&offset)
    });
}

/// Runs `work` on a primary (the module loaded with `module_args` after
/// `--appendonly yes`) with the AOF on and a replica without the module;
/// then the replica and a reload of the AOF must both hold the primary's
/// keyspace. `with_module` loads the module on the replica too (the
/// `emq.replicate command` mode needs it).
pub fn replicated_and_persisted(extra: &[&str], with_module: bool, work: impl FnOnce(&Server, &mut Conn)) {
    let mut args = vec!["--appendonly", "yes", "--appendfsync", "always"];
    args.extend_from_slice(extra);
    let primary = Server::start_with(&args);
    let replica = if with_module {
        Server::start_with(extra)
    } else {
        Server::start_plain(&[])
    };
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    work(&primary, &mut c);
    in_sync(&mut c, &mut r);
    let written = digest(&mut c);
    let keys = c.int(&["DBSIZE"]);
    assert!(keys > 0, "the work wrote something");
    assert_eq!(digest(&mut r), written, "primary and replica diverge");
    drop(r);
    drop(replica);
    let mut restart = vec!["--appendonly", "yes"];
    restart.extend_from_slice(extra);
    let primary = primary.restart(&restart);
    assert_eq!(digest(&mut primary.conn()), written, "replaying the AOF");
}
