//! The table agrees with itself: arity with the documented arguments, flags
//! with the key specs, names with the module's prefix.

use super::*;

/// The words an argument takes at least (its token included; none when it
/// is optional), and whether it may take more.
fn words(a: &ArgDoc) -> (usize, bool) {
    let (value, more) = match a.kind {
        ArgKind::Token => (0, false),
        ArgKind::Block(subs) => subs
            .iter()
            .map(words)
            .fold((0, false), |(n, m), (w, more)| (n + w, m || more)),
        ArgKind::OneOf(subs) => {
            let spans: Vec<(usize, bool)> = subs.iter().map(words).collect();
            let min = spans.iter().map(|s| s.0).min().unwrap_or(0);
            let max = spans.iter().map(|s| s.0).max().unwrap_or(0);
            (min, max > min || spans.iter().any(|s| s.1))
        }
        _ => (1, false),
    };
    match a.optional {
        true => (0, true),
        false => (value + usize::from(a.token.is_some()), more || a.multiple),
    }
}

/// The arity the documented arguments give (name included).
pub fn documented_arity(args: &[ArgDoc]) -> i32 {
    let spans: Vec<(usize, bool)> = args.iter().map(words).collect();
    let min = 1 + spans.iter().map(|s| s.0).sum::<usize>();
    let variadic = spans.iter().any(|s| s.1);
    if variadic {
        -(min as i32)
    } else {
        min as i32
    }
}

#[test]
fn arity_agrees_with_the_documented_arguments() {
    for c in COMMANDS {
        let s = &c.spec;
        assert_eq!(s.arity, documented_arity(s.args), "{}", s.name);
        assert!(
            matches!(s.args[0].kind, ArgKind::Key),
            "{}: the prefix is the first argument",
            s.name
        );
        assert!(
            s.flags.contains(if s.readonly { "readonly" } else { "write" }),
            "{}",
            s.name
        );
    }
}

#[test]
fn names_are_unique_and_lower_case() {
    let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.spec.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), COMMANDS.len());
    assert!(names
        .iter()
        .all(|n| n.starts_with("emq.") && n.to_lowercase() == *n));
}

#[test]
fn only_what_adds_data_is_refused_when_memory_is_full() {
    let adds = [
        "emq.enqueue",
        "emq.qenqueue",
        "emq.qschedule",
        "emq.setdata",
        "emq.progress",
        "emq.log",
    ];
    for c in COMMANDS {
        assert_eq!(
            c.spec.flags.contains("deny-oom"),
            adds.contains(&c.spec.name),
            "{}",
            c.spec.name
        );
    }
}

/// docs/commands.md's table, as (name, arity, flags).
fn documented_table() -> Vec<(String, i32, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md");
    let doc = std::fs::read_to_string(path).expect("docs/commands.md");
    doc.lines()
        .filter(|l| l.starts_with("| `EMQ."))
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').map(str::trim).collect();
            let arity = cells[1]
                .parse()
                .unwrap_or_else(|_| panic!("arity of {}", cells[0]));
            (
                cells[0].trim_matches('`').to_lowercase(),
                arity,
                cells[2].trim_matches('`').to_string(),
            )
        })
        .collect()
}

#[test]
fn docs_commands_md_lists_the_table_with_its_arities_and_flags() {
    let table: Vec<(String, i32, String)> = COMMANDS
        .iter()
        .map(|c| (c.spec.name.to_string(), c.spec.arity, c.spec.flags.to_string()))
        .collect();
    assert_eq!(
        documented_table(),
        table,
        "docs/commands.md's table and catalog.rs"
    );
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md")).unwrap();
    for c in COMMANDS {
        let heading = format!("### {}", c.spec.name.to_uppercase());
        assert!(
            doc.contains(&heading),
            "docs/commands.md has no section {heading}"
        );
    }
}
