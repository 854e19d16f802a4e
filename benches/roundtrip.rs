//! A live-server round trip: claim one job and give it back (NACK), native
//! commands vs the Lua twins, on one server this bench starts. The state is
//! the same after every iteration, so the two stay comparable.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Server, Twins, Value};
use criterion::{criterion_group, criterion_main, Criterion};

/// Builds the NACK of a claimed job from its token and id.
type Nack<'a> = &'a dyn Fn(i64, &[u8]) -> Vec<Vec<u8>>;

fn claim_and_nack(c: &mut redis::Connection, claim: &[Vec<u8>], nack: Nack) {
    let reply = common::call(c, &common::refs(claim));
    let Value::Array(v) = reply.value() else {
        panic!("{reply:?}")
    };
    let (Value::Int(token), Value::BulkString(job)) = (&v[1], &v[2]) else {
        panic!("{v:?}")
    };
    let back = nack(*token, job);
    assert_eq!(
        common::call(c, &common::refs(&back)),
        common::Reply::Ok(Value::Int(1))
    );
}

fn bench(cr: &mut Criterion) {
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    for p in ["n{q}:", "l{q}:"] {
        for lane in 0..100 {
            let l = format!("l{lane}");
            common::cmd(
                &mut c,
                &["EMQ.ENQUEUE", p, &l, "1", &format!("{l}a"), "2", &format!("{l}b")],
            );
        }
    }
    let mut group = cr.benchmark_group("claim+nack round trip, 100 lanes");
    for verb in ["claim", "wclaim"] {
        let native_claim = common::native_command(verb, &[b"n{q}:", b"60000"]);
        group.bench_function(format!("native {verb}"), |b| {
            b.iter(|| {
                claim_and_nack(&mut c, &native_claim, &|t, job| {
                    common::native_command("nack", &[b"n{q}:", t.to_string().as_bytes(), job])
                })
            })
        });
        let lua_claim = twins.command(verb, &[b"l{q}:", b"60000"]);
        group.bench_function(format!("lua {verb}"), |b| {
            b.iter(|| {
                claim_and_nack(&mut c, &lua_claim, &|t, job| {
                    twins.command("nack", &[b"l{q}:", t.to_string().as_bytes(), job])
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
