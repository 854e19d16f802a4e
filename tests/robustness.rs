//! A module that panics takes the whole server down unless the panic is
//! caught: every command runs inside one boundary that turns a panic into an
//! error reply. This forces one and shows the server lives on.

mod common;

use common::*;

#[test]
fn a_panic_in_a_command_is_an_error_reply_and_the_server_lives_on() {
    let mut server = Server::start_module_args(&["debug-panic"]);
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "a", "1", "job"]);
    let before = digest(&mut c);
    for _ in 0..3 {
        let r = cmd(&mut c, &["EMQ.DEBUG-PANIC"]);
        assert_eq!(
            r.err(),
            Some("ERR internal error in the emq module (a bug: please report it)")
        );
    }
    assert!(server.alive(), "the server survived");
    assert_eq!(
        cmd(&mut c, &["PING"]),
        Reply::Ok(Value::SimpleString("PONG".into()))
    );
    assert_eq!(digest(&mut c), before, "nothing changed");
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", "q:", "1000"])
        .claim()
        .expect("still serving");
    assert_eq!((lane.as_str(), jobs.len()), ("a", 1));
}

#[test]
fn the_panic_hook_is_absent_from_an_ordinary_load() {
    let server = Server::start();
    let mut c = server.conn();
    let r = cmd(&mut c, &["EMQ.DEBUG-PANIC"]);
    assert!(r.err().is_some_and(|e| e.contains("unknown command")), "{r:?}");
}

/// Junk for any argument position.
fn junk(rng: &mut rng::Rng) -> Vec<u8> {
    let pool: [&[u8]; 22] = [
        b"",
        b"0",
        b"-1",
        b"1",
        b"7",
        b"nan",
        b"inf",
        b"-inf",
        b"1e400",
        b"9223372036854775808",
        b"-9223372036854775809",
        b"1099511627777",
        b"1.5",
        b"a\0b",
        b"\r\n",
        b"BLOCK",
        b"COUNT",
        b"NONE",
        b"h{q}:",
        b"lane",
        b"job",
        b"\xff\xfe",
    ];
    match rng.below(40) {
        0 => vec![b'x'; 1 << 20],
        _ => pool[rng.below(pool.len() as u64) as usize].to_vec(),
    }
}

#[test]
fn thousands_of_hostile_calls_change_nothing_when_refused_and_never_kill_the_server() {
    let mut server = Server::start();
    let mut c = server.conn();
    let mut rng = rng::Rng::new(2026);
    let names = [
        "CLAIM", "WCLAIM", "WEIGHT", "ENQUEUE", "ACK", "NACK", "EXTEND", "REAP", "LIMIT", "PAUSE", "RESUME",
        "REASSIGN", "LANE",
    ];
    let (mut refused, mut accepted) = (0, 0);
    for round in 0..3_000 {
        if round % 50 == 0 {
            // A live queue, sometimes with corrupt stored values or wrong types.
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            cmd(&mut c, &["EMQ.ENQUEUE", "h{q}:", "lane", "1", "job", "2", "job2"]);
            cmd(&mut c, &["EMQ.WCLAIM", "h{q}:", "60000"]);
            match rng.below(6) {
                0 => drop(cmd(&mut c, &["HSET", "h{q}:gweight", "lane", "x"])),
                1 => drop(cmd(&mut c, &["HSET", "h{q}:glimit", "lane", "-"])),
                2 => drop(cmd(&mut c, &["HSET", "h{q}:gactive", "lane", "1.5"])),
                3 => drop(cmd(&mut c, &["HSET", "h{q}:jlease", "job", "junk"])),
                4 => drop(cmd(&mut c, &["SET", "h{q}:gpaused", "x"])),
                _ => {}
            }
        }
        let name = format!("EMQ.{}", names[rng.below(names.len() as u64) as usize]);
        let mut argv: Vec<Vec<u8>> = vec![name.clone().into_bytes()];
        for _ in 0..rng.below(7) {
            argv.push(junk(&mut rng));
        }
        let before = digest(&mut c);
        let reply = call(&mut c, &refs(&argv));
        match reply.err() {
            Some(e) => {
                refused += 1;
                assert!(
                    e.starts_with("ERR ") || e.starts_with("WRONGTYPE "),
                    "{name}: {}",
                    e.chars().take(200).collect::<String>()
                );
                assert_eq!(
                    digest(&mut c),
                    before,
                    "{name} was refused but changed the dataset"
                );
            }
            None => accepted += 1,
        }
    }
    assert!(server.alive());
    assert!(
        refused > 1_000 && accepted > 50,
        "refused {refused}, accepted {accepted}"
    );
    eprintln!("hostile calls: {refused} refused unchanged, {accepted} accepted");
}

#[test]
fn acl_key_patterns_apply_to_the_prefix() {
    let server = Server::start();
    let mut c = server.conn();
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "w",
            "on",
            ">pw",
            "~emq:{a}:*",
            "+emq.enqueue",
            "+emq.wclaim",
            "+emq.ack",
            "+emq.lane",
        ])
        .query(&mut c)
        .unwrap();
    let mut w = redis::Client::open(format!("redis://w:pw@127.0.0.1:{}/", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(
        cmd(&mut w, &["EMQ.ENQUEUE", "emq:{a}:", "l", "1", "j"]),
        Reply::Ok(Value::Int(1))
    );
    let (_, token, _) = cmd(&mut w, &["EMQ.WCLAIM", "emq:{a}:", "1000"]).claim().unwrap();
    assert_eq!(
        cmd(&mut w, &["EMQ.ACK", "emq:{a}:", &token.to_string(), "j"]),
        Reply::Ok(Value::Int(1))
    );
    for args in [
        &["EMQ.ENQUEUE", "emq:{b}:", "l", "1", "j"][..],
        &["EMQ.WCLAIM", "emq:{b}:", "1000"],
        &["EMQ.LANE", "emq:{b}:", "l"],
    ] {
        let r = cmd(&mut w, args);
        assert!(
            r.err().is_some_and(|e| e.starts_with("NOPERM")),
            "{args:?}: {r:?}"
        );
    }
    assert!(
        snapshot(&mut c, "emq:{b}:").is_empty(),
        "nothing written under the other prefix"
    );
}
