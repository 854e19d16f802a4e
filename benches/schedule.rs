//! The pure scheduling logic, without a server: what a turn costs to decide.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use emq::args::parse_i64;
use emq::schedule::{claim_turn, effective_weight, ring_change, serve_count, Lane};

fn bench(c: &mut Criterion) {
    let lane = Lane {
        depth: 40,
        active: 3,
        limit: Some(8),
        paused: false,
    };
    c.bench_function("serve_count", |b| {
        b.iter(|| serve_count(black_box(5), black_box(40), black_box(Some(8)), black_box(3)))
    });
    c.bench_function("claim_turn", |b| {
        b.iter(|| claim_turn(effective_weight(black_box(Some(5))), black_box(&lane)))
    });
    let after = Lane { active: 8, ..lane };
    c.bench_function("ring_change", |b| {
        b.iter(|| ring_change(black_box(&lane), black_box(&after)))
    });
    c.bench_function("parse_i64", |b| b.iter(|| parse_i64(black_box(b"1796210284783"))));
}

criterion_group!(benches, bench);
criterion_main!(benches);
