//! The pure scheduling logic, without a server: what a turn costs to decide.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use emq::model::grammar::parse_i64;
use emq::model::rate::Rate;
use emq::model::row::{head_fate, RowView};
use emq::model::schedule::{head_turn, leaves_after, ring_change, serve_count, ClaimKind, Head, Lane};

fn bench(c: &mut Criterion) {
    let lane = Lane {
        depth: 40,
        active: 3,
        limit: Some(8),
        paused: false,
        throttled: false,
    };
    let head = Head {
        name_empty: false,
        depth: Some(40),
        weight: Ok(Some(5)),
        limit: Ok(Some(8)),
        active: Ok(Some(3)),
        paused: false,
        rate: Ok(None),
        now_us: 1_796_210_284_783_000,
        time: None,
    };
    let rated = Head {
        rate: Ok(Some((
            Rate::new(20, 1000, 5).unwrap(),
            Some(1_796_210_284_700_000),
        ))),
        ..head
    };
    let row = RowView {
        exists: true,
        state: Some(b"pending"),
        group: Some(b"tenant-a"),
        attempts: Some(b"2"),
    };
    c.bench_function("serve_count", |b| {
        b.iter(|| serve_count(black_box(5), black_box(40), black_box(Some(8)), black_box(3)))
    });
    c.bench_function("head_turn", |b| {
        b.iter(|| head_turn(black_box(&head), black_box(ClaimKind::Weighted), black_box(1000)))
    });
    c.bench_function("head_turn_rated", |b| {
        b.iter(|| head_turn(black_box(&rated), black_box(ClaimKind::Weighted), black_box(1000)))
    });
    c.bench_function("head_fate", |b| {
        b.iter(|| head_fate(black_box(b"tenant-a"), black_box(&row)))
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
