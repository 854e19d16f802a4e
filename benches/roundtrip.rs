//! A live-server round trip: claim one job, complete it and enqueue it
//! again, native commands vs the Lua twins called as EchoMQ's host calls
//! them, on one server this bench starts. The state is the same after every
//! iteration (the ring rotated by one), so the two stay comparable.

#[path = "../tests/support/mod.rs"]
mod support;

use criterion::{criterion_group, criterion_main, Criterion};
use support::twins::{native_command, Twins};
use support::{Conn, Server, Value};

/// Runs `EMQ.<name> args…` natively or as the twin.
fn run(c: &mut Conn, twins: &Twins, native: bool, name: &str, args: &[&[u8]]) -> Value {
    let reply = if native {
        let cmd = native_command(name, args);
        c.call(&cmd.iter().map(Vec::as_slice).collect::<Vec<_>>())
    } else {
        twins.like_native(c, name, args)
    };
    reply.unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn claim_and_give_back(c: &mut Conn, twins: &Twins, native: bool, p: &[u8], verb: &str) {
    let reply = run(c, twins, native, verb, &[p, b"60000"]);
    let job = match verb {
        "claim" => reply.items().to_vec(),
        _ => reply.items()[0].items().to_vec(),
    };
    let (id, payload, attempts, lane) = (
        job[0].text(),
        job[1].text(),
        job[2].int().to_string(),
        job[3].text(),
    );
    assert_eq!(
        run(
            c,
            twins,
            native,
            "complete",
            &[p, id.as_bytes(), attempts.as_bytes()]
        )
        .int(),
        1
    );
    let again = [p, lane.as_bytes(), id.as_bytes(), payload.as_bytes()];
    assert_eq!(run(c, twins, native, "enqueue", &again).int(), 1);
}

fn bench(cr: &mut Criterion) {
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    for p in ["n{q}:", "l{q}:"] {
        for lane in 0..100 {
            let l = format!("l{lane}");
            let (a, b) = (format!("JOB-{l}-a"), format!("JOB-{l}-b"));
            c.ok(&["EMQ.ENQUEUE", p, &l, &a, "x", &b, "y"]);
        }
    }
    let mut group = cr.benchmark_group("claim, complete, enqueue round trip, 100 lanes");
    for verb in ["claim", "wclaim"] {
        for (native, p, side) in [(true, b"n{q}:", "native"), (false, b"l{q}:", "lua")] {
            group.bench_function(format!("{side} {verb}"), |b| {
                b.iter(|| claim_and_give_back(&mut c, &twins, native, p, verb))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
