//! What a run prints and writes: the table on stdout, `bench/report.json`
//! and the chart `bench/report.svg`.

use plotters::prelude::*;
use serde::Serialize;

use super::drive::{Tally, DEPTH};
use super::throughput::Throughput;

/// One scenario's result: native against its twin (or against the core
/// commands doing the same writes, `floor`).
#[derive(Serialize)]
pub struct Row {
    pub name: String,
    pub native: Tally,
    pub lua: Tally,
    /// µs per job of the core commands doing the same writes, when measured.
    pub floor_usec_per_job: Option<f64>,
    /// Bytes (`MEMORY USAGE` summed) native and Lua hold after the workload.
    pub memory_bytes: Option<(u64, u64)>,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.lua.per_job() / self.native.per_job().max(1e-9)
    }
}

/// Workers waiting for a steady arrival of jobs.
#[derive(Serialize)]
pub struct Waiting {
    pub mode: String,
    pub jobs: usize,
    pub server_cpu_s: f64,
    pub claim_calls: u64,
    pub pickup_ms_p50: f64,
    pub pickup_ms_p99: f64,
}

#[derive(Serialize)]
struct Report<'a> {
    server: &'a str,
    pipeline_depth: usize,
    scenarios: Vec<Scenario<'a>>,
    waiting_workers: &'a [Waiting],
    throughput: &'a [Throughput],
}

#[derive(Serialize)]
struct Scenario<'a> {
    #[serde(flatten)]
    row: &'a Row,
    native_usec_per_job: f64,
    lua_usec_per_job: f64,
    ratio_per_job: f64,
}

pub fn print_table(rows: &[Row], waits: &[Waiting], flows: &[Throughput], version: &str, rounds: usize) {
    println!("server {version}, pipeline depth {DEPTH}, {rounds} alternating native/Lua block pairs per scenario\n");
    println!(
        "{:<66} {:>11} {:>11} {:>10} {:>10} {:>7} {:>10} {:>15}",
        "scenario",
        "native µs/c",
        "lua µs/call",
        "native/job",
        "lua/job",
        "ratio",
        "floor/job",
        "memory KiB n/l"
    );
    for r in rows {
        println!(
            "{:<66} {:>11.2} {:>11.2} {:>10.2} {:>10.2} {:>6.1}x {:>10} {:>15}",
            r.name,
            r.native.per_call(),
            r.lua.per_call(),
            r.native.per_job(),
            r.lua.per_job(),
            r.ratio(),
            r.floor_usec_per_job
                .map_or("-".to_string(), |f| format!("{f:.2}")),
            r.memory_bytes
                .map_or("-".to_string(), |(n, l)| format!("{}/{}", n / 1024, l / 1024)),
        );
    }
    if !waits.is_empty() {
        println!("\nworkers waiting for jobs that arrive one at a time:");
        println!(
            "{:<22} {:>8} {:>14} {:>12} {:>12} {:>12}",
            "workers waiting", "jobs", "server CPU s", "claim calls", "pickup p50", "pickup p99"
        );
        for w in waits {
            println!(
                "{:<22} {:>8} {:>14.3} {:>12} {:>9.2} ms {:>9.2} ms",
                w.mode, w.jobs, w.server_cpu_s, w.claim_calls, w.pickup_ms_p50, w.pickup_ms_p99
            );
        }
    }
    if !flows.is_empty() {
        println!("\nthroughput end to end: a producer and workers completing no-op jobs:");
        println!(
            "{:<8} {:>8} {:>8} {:>10} {:>10} {:>16}",
            "side", "workers", "jobs", "seconds", "jobs/s", "server CPU µs/job"
        );
        for f in flows {
            println!(
                "{:<8} {:>8} {:>8} {:>10.2} {:>10.0} {:>16.2}",
                f.side, f.workers, f.jobs, f.seconds, f.jobs_per_second, f.server_cpu_us_per_job
            );
        }
    }
}

pub fn json(rows: &[Row], waits: &[Waiting], flows: &[Throughput], version: &str) -> String {
    let report = Report {
        server: version,
        pipeline_depth: DEPTH,
        scenarios: rows
            .iter()
            .map(|row| Scenario {
                row,
                native_usec_per_job: row.native.per_job(),
                lua_usec_per_job: row.lua.per_job(),
                ratio_per_job: row.ratio(),
            })
            .collect(),
        waiting_workers: waits,
        throughput: flows,
    };
    serde_json::to_string_pretty(&report).expect("the report serialises") + "\n"
}

/// Horizontal bars: server µs per job, native and Lua, per scenario, on a
/// log scale.
pub fn chart(rows: &[Row], version: &str, path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let height = 90 + rows.len() as u32 * 34;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let max = rows
        .iter()
        .map(|r| r.lua.per_job().max(r.native.per_job()))
        .fold(1.0, f64::max)
        * 2.0;
    let bars = rows.len() as i32 * 2;
    let names: Vec<String> = rows
        .iter()
        .map(|r| r.name.replace(", emq.replicate command", " [command]"))
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("emq: server µs per job, native vs Lua ({version})"),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(430)
        .build_cartesian_2d((0.1f64..max).log_scale(), bars..0)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows.len() * 2)
        .y_label_formatter(&|y| {
            let y = *y;
            if y % 2 == 1 && y > 0 {
                names[(y / 2) as usize].clone()
            } else {
                String::new()
            }
        })
        .x_desc("µs per job (log scale)")
        .draw()?;
    let native = RGBColor(43, 123, 185);
    let lua = RGBColor(232, 131, 58);
    for (i, r) in rows.iter().enumerate() {
        let top = i as i32 * 2;
        for (j, (v, color)) in [(r.native.per_job(), native), (r.lua.per_job(), lua)]
            .into_iter()
            .enumerate()
        {
            let y = top + j as i32;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.1, y), (v.max(0.1), y + 1)],
                color.filled(),
            )))?;
        }
    }
    chart
        .draw_series(std::iter::empty::<Rectangle<(f64, i32)>>())?
        .label("native")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], native.filled()));
    chart
        .draw_series(std::iter::empty::<Rectangle<(f64, i32)>>())?
        .label("Lua twin")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], lua.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
