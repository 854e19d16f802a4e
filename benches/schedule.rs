//! The pure scheduling logic, without a server: what a turn costs to decide.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use emq::args::parse_i64;
use emq::schedule::{head_turn, leaves_after, ring_change, serve_count, take_heads, Head, Lane};

fn bench(c: &mut Criterion) {
    let lane = Lane {
        depth: 40,
        active: 3,
        limit: Some(8),
        paused: false,
    };
    let head = Head {
        name_empty: false,
        depth: Some(40),
        weight: Ok(Some(5)),
        limit: Ok(Some(8)),
        active: Ok(Some(3)),
        paused: false,
    };
    c.bench_function("serve_count", |b| {
        b.iter(|| serve_count(black_box(5), black_box(40), black_box(Some(8)), black_box(3)))
    });
    c.bench_function("head_turn", |b| {
        b.iter(|| head_turn(black_box(&head), black_box(1000)))
    });
    c.bench_function("take_heads", |b| {
        b.iter(|| take_heads(black_box(5), black_box([false, true, false, false, false, false])))
    });
    c.bench_function("leaves_after", |b| {
        b.iter(|| leaves_after(black_box(&lane), black_box(5), black_box(5)))
    });
    let after = Lane { active: 8, ..lane };
    c.bench_function("ring_change", |b| {
        b.iter(|| ring_change(black_box(&lane), black_box(&after)))
    });
    c.bench_function("parse_i64", |b| b.iter(|| parse_i64(black_box(b"1796210284783"))));
}

criterion_group!(benches, bench);
criterion_main!(benches);
